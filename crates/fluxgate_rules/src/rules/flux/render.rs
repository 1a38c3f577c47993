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
        d.rule = RENDER.name.to_string();
        if d.environment.is_none() {
            d.environment = Some(ctx.env.name().to_string());
        }
        out.push(d);
    }
}
