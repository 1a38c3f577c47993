//! `render`: everything that could not be rendered (SPEC §5.9).

use fluxgate_diagnostics::Diagnostic;
use fluxgate_flux::substitute::RULE_UNDEFINED;

use crate::RuleContext;
use crate::rules::flux::substitution_undefined::is_substitution_parse_error;

crate::declare_rule! {
    /// ## What it checks
    /// Anything in an environment that could not be rendered: YAML syntax, a missing file or
    /// folder, a kustomize error (an unknown patch target, a remote resource, `helmCharts`), a
    /// Flux Kustomization whose `spec.path` does not exist or that is defined twice, a
    /// `dependsOn` cycle, a Jinja error or undefined variable in an Ansible template, a
    /// `valuesFrom` that does not exist. Notes (a chart not in the chart cache, a source
    /// that is not this repository) are shown too; they never fail the gate.
    ///
    ///
    /// A `valuesFrom` or `substituteFrom` Secret that no rendered object defines is not an
    /// error when something else makes it: an `ExternalSecret` (its `spec.target.name`) or a
    /// `SealedSecret` rendered in the environment creates it at run time (no finding), and a
    /// Secret written in a repository file that Flux does not apply (a bootstrap folder) is
    /// created outside Flux (a note).
    ///
    /// ## Why it matters
    /// What fluxgate cannot render it cannot check: every other rule is blind where rendering
    /// stopped, and the real controllers will fail on the same input (kustomize-controller
    /// marks the Kustomization not ready and nothing below it is applied).
    ///
    /// ## Example
    /// ```yaml
    /// # clusters/prod/kustomization.yaml
    /// resources:
    ///   - ../base
    ///   - platfrom.yaml        # typo: the file is platform.yaml
    /// ```
    ///
    /// ## How to fix
    /// Fix the input at the line shown: the path, the YAML, the patch target. Run
    /// `fluxgate render REPO --env NAME` to see what renders, and `kubectl kustomize DIR` to
    /// compare with the reference.
    pub static RENDER = {
        name: "render",
        severity: Error,
        scope: Environment,
        check: check,
    }
}

/// Every diagnostic the environment's renderers produced that belongs to no other rule.
/// Post-build substitution parse errors are reported by `substitution-undefined`.
fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    for d in &ctx.env.diagnostics {
        if d.rule == RULE_UNDEFINED || is_substitution_parse_error(d) {
            continue;
        }
        if d.rule != "render" && crate::registry::find(&d.rule).is_some() {
            continue;
        }
        let mut d = d.clone();
        if let Some(name) = missing_secret(&d)
            && let Some(why) = made_elsewhere(ctx, &name)
        {
            if why.is_empty() {
                continue;
            }
            d.severity = fluxgate_diagnostics::Severity::Note;
            d.message = format!("{} ({why})", d.message);
        }
        d.rule = RENDER.name.to_string();
        if d.environment.is_none() {
            d.environment = Some(ctx.env.name().to_string());
        }
        out.push(d);
    }
}

/// The Secret a "does not exist" render finding names.
fn missing_secret(d: &Diagnostic) -> Option<String> {
    let rest = d.message.split("Secret/").nth(1)?;
    let (name, tail) = rest.split_once(' ')?;
    tail.starts_with("does not exist").then(|| name.to_string())
}

/// Why a Secret no rendered object defines exists anyway: `Some("")` when an operator of the
/// environment creates it, `Some(reason)` when the repository defines it outside the Flux
/// tree, `None` when nothing does.
fn made_elsewhere(ctx: &RuleContext<'_>, name: &str) -> Option<String> {
    let operator_made = ctx.env.objects().any(|o| {
        let kind = o.str_at(&["kind"]);
        let target = o
            .str_at(&["spec", "target", "name"])
            .or_else(|| o.str_at(&["metadata", "name"]));
        matches!(
            kind,
            Some("ExternalSecret" | "SealedSecret" | "OnePasswordItem")
        ) && target == Some(name)
    });
    if operator_made {
        return Some(String::new());
    }
    crate::support::repository_secret(ctx.repo, name).map(|file| {
        format!("it is defined in {file}, which Flux does not apply: created outside Flux, such as by the bootstrap")
    })
}
