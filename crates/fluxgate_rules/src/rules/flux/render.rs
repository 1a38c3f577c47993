//! `render`: everything that could not be rendered (SPEC §5.9).

use fluxgate_diagnostics::{Diagnostic, Severity};
use fluxgate_model::ProblemKind;
use fluxgate_model::problem::FluxKind;

use crate::RuleContext;
use crate::problems::classify;

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
    /// error when something else makes it: an operator's object rendered in the environment
    /// creates it at run time (an `ExternalSecret`'s `spec.target.name`, a `SealedSecret`, a
    /// cert-manager `Certificate`'s `spec.secretName`, the `generators:` of fluxgate.yaml; no
    /// finding), and a Secret written in a repository file that Flux does not apply (a
    /// bootstrap folder) is created outside Flux (a note).
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

/// Every problem of the environment's renderers that [`classify`] gives to this rule. A
/// `substituteFrom` or `valuesFrom` Secret that no rendered object defines is no finding when
/// an operator of the environment creates it, and a note when the repository defines it
/// outside the Flux tree.
fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    // One missing object is one defect: the first reference is the finding, the others are
    // its related locations (five `valuesFrom` entries naming one absent Secret).
    let mut missing_at: std::collections::HashMap<(String, String, String, Severity), usize> =
        std::collections::HashMap::new();
    for p in &ctx.env.problems {
        let (rule, mut severity) = classify(&p.kind);
        if rule.name != RENDER.name {
            continue;
        }
        let mut message = None;
        if let ProblemKind::Flux(FluxKind::MissingObject {
            kind,
            namespace,
            name,
            ..
        }) = &p.kind
            && let Some(why) = made_elsewhere(ctx, kind, namespace, name)
        {
            if why.is_empty() {
                continue;
            }
            severity = Severity::Note;
            message = Some(format!("{} ({why})", p.message));
        }
        if let ProblemKind::Flux(FluxKind::MissingObject {
            kind,
            namespace,
            name,
            ..
        }) = &p.kind
        {
            let key = (kind.clone(), namespace.clone(), name.clone(), severity);
            if let Some(&i) = missing_at.get(&key) {
                if let Some(loc) = &p.location {
                    out[i].related.push(fluxgate_diagnostics::Related {
                        location: loc.clone(),
                        message: format!("{kind}/{name} is also referenced here"),
                    });
                }
                continue;
            }
            missing_at.insert(key, out.len());
        }
        let mut d = p.clone().into_diagnostic(RENDER.name, severity);
        if let Some(m) = message {
            d.message = m;
        }
        out.push(d.in_env(ctx.env.name()));
    }
}

/// Why a Secret no rendered object defines exists anyway: `Some("")` when an operator of the
/// environment creates it (the runtime creators of the environment, with the
/// `generators:` of fluxgate.yaml), `Some(reason)` when the repository defines it outside the
/// Flux tree, `None` when nothing does.
fn made_elsewhere(
    ctx: &RuleContext<'_>,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Option<String> {
    if let Some(s) = ctx.config.seeded.iter().find(|s| {
        s.kind == kind && s.name == name && s.namespace.as_deref().is_none_or(|n| n == namespace)
    }) {
        return Some(format!(
            "the bootstrap template {} creates it before Flux runs",
            s.loc
        ));
    }
    if kind != "Secret" {
        return None;
    }
    if ctx.env.created_by("Secret", namespace, name).is_some() {
        return Some(String::new());
    }
    crate::support::repository_secret(ctx.repo, name).map(|file| {
        format!("it is defined in {file}, which Flux does not apply: created outside Flux, such as by the bootstrap")
    })
}
