//! Problems to findings: the one place that decides which rule reports what a renderer could
//! not render, and how serious it is. Renderers report typed problems
//! ([`fluxgate_model::ProblemKind`] and the kinds it wraps); the `render` and
//! `substitution-undefined` rules report them through [`classify`], and so do the commands that
//! print a renderer's problems directly (`fluxgate render`, `values`, `ansible`).
//!
//! The severities: what makes Flux, kustomize or ansible-core fail is an error; what they read
//! past (an unknown field, a duplicate key outside a Kubernetes manifest, a remote base that
//! is not fetched, a template fluxgate cannot judge offline) is a warning; what only the
//! running cluster knows (an operator's Secret, another source, an uncached chart) is a note.

use fluxgate_diagnostics::{Diagnostic, Problem, Severity};
use fluxgate_model::ProblemKind;
use fluxgate_model::problem::{AnsibleKind, FluxKind};

use crate::registry::Rule;
use crate::rules::flux::render::RENDER;
use crate::rules::flux::substitution_undefined::SUBSTITUTION_UNDEFINED;

/// The rule that reports a problem of this kind, and its severity.
#[must_use]
pub fn classify(kind: &ProblemKind) -> (&'static Rule, Severity) {
    let severity = |fails: bool, informs: bool| {
        if fails {
            Severity::Error
        } else if informs {
            Severity::Note
        } else {
            Severity::Warning
        }
    };
    match kind {
        // Under Flux before 2.9 an unset variable renders empty and the resource is applied:
        // a warning (a rule that guards the value judges the empty value itself).
        ProblemKind::Flux(FluxKind::UndefinedVariable { strict: false, .. }) => {
            (&SUBSTITUTION_UNDEFINED, Severity::Warning)
        }
        ProblemKind::Flux(
            FluxKind::UndefinedVariable { .. }
            | FluxKind::SubstitutionSyntax
            | FluxKind::Unbraced { .. },
        ) => (&SUBSTITUTION_UNDEFINED, Severity::Error),
        ProblemKind::Flux(k) => (&RENDER, severity(k.fails(), k.is_offline_unknown())),
        ProblemKind::Ansible(k) => (&RENDER, severity(k.fails(), *k == AnsibleKind::Skipped)),
        ProblemKind::ChartsNotCached | ProblemKind::ChartSchemaUnchecked => {
            (&RENDER, Severity::Note)
        }
        // A Talos patch file that is not there fails talhelper.
        ProblemKind::ChartRender | ProblemKind::Talos(fluxgate_talos::ProblemKind::Invalid) => {
            (&RENDER, Severity::Error)
        }
        // A variable no talenv file defines may come from the shell talhelper runs in: its
        // value is unknown here.
        ProblemKind::TemplateUnchecked(_)
        | ProblemKind::Talos(fluxgate_talos::ProblemKind::UndefinedVariable) => {
            (&RENDER, Severity::Warning)
        }
        ProblemKind::Talos(fluxgate_talos::ProblemKind::Unknown) => (&RENDER, Severity::Note),
        // helmfile fails on what is invalid; what fluxgate does not evaluate (a program,
        // an environment variable outside the set) is a warning; what it does not read, a
        // note.
        ProblemKind::Helmfile(k) => (
            &RENDER,
            match k {
                fluxgate_model::problem::HelmfileKind::Invalid => Severity::Error,
                fluxgate_model::problem::HelmfileKind::Unevaluated => Severity::Warning,
                fluxgate_model::problem::HelmfileKind::Unsupported => Severity::Note,
            },
        ),
    }
}

/// The finding a problem of any renderer's kind is reported as.
#[must_use]
pub fn finding<K: Clone + Into<ProblemKind>>(p: &Problem<K>) -> Diagnostic {
    let p = p.clone().map_kind(Into::into);
    let (rule, severity) = classify(&p.kind);
    p.into_diagnostic(rule.name, severity)
}

#[cfg(test)]
mod tests {
    use fluxgate_diagnostics::Annotate;
    use fluxgate_diagnostics::Location;
    use fluxgate_model::problem::KustomizeKind;

    use super::*;

    fn rule_and_severity(kind: impl Into<ProblemKind>) -> (&'static str, Severity) {
        let (rule, severity) = classify(&kind.into());
        (rule.name, severity)
    }

    #[test]
    fn substitution_problems_are_substitution_undefined_errors() {
        let undefined = FluxKind::UndefinedVariable {
            name: "X".into(),
            strict: true,
        };
        assert_eq!(
            rule_and_severity(undefined),
            ("substitution-undefined", Severity::Error)
        );
        let lax = FluxKind::UndefinedVariable {
            name: "X".into(),
            strict: false,
        };
        assert_eq!(
            rule_and_severity(lax),
            ("substitution-undefined", Severity::Warning)
        );
        assert_eq!(
            rule_and_severity(FluxKind::SubstitutionSyntax),
            ("substitution-undefined", Severity::Error)
        );
    }

    #[test]
    fn what_fails_is_a_render_error() {
        let missing = FluxKind::MissingObject {
            field: "valuesFrom".into(),
            kind: "Secret".into(),
            namespace: "apps".into(),
            name: "db".into(),
        };
        for kind in [
            ProblemKind::Flux(missing),
            ProblemKind::Flux(FluxKind::Invalid),
            ProblemKind::Flux(FluxKind::MissingPath { path: "./x".into() }),
            ProblemKind::Flux(FluxKind::Yaml { recovered: false }),
            KustomizeKind::MissingFile {
                path: "a.yaml".into(),
            }
            .into(),
            KustomizeKind::OutsideRoot {
                path: "../x".into(),
            }
            .into(),
            KustomizeKind::Unsupported.into(),
            AnsibleKind::Invalid.into(),
            AnsibleKind::TemplateSyntax.into(),
            AnsibleKind::TemplateUndefined.into(),
        ] {
            assert_eq!(
                rule_and_severity(kind.clone()),
                ("render", Severity::Error),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn what_is_read_past_warns_and_what_only_the_cluster_knows_informs() {
        for kind in [
            KustomizeKind::RemoteSkipped {
                target: "https://x".into(),
            }
            .into(),
            KustomizeKind::Ignored.into(),
            KustomizeKind::Yaml { recovered: true }.into(),
            AnsibleKind::Yaml { recovered: true }.into(),
            ProblemKind::TemplateUnchecked(AnsibleKind::TemplateUndefined),
        ] {
            assert_eq!(
                rule_and_severity(kind.clone()),
                ("render", Severity::Warning),
                "{kind:?}"
            );
        }
        let runtime = FluxKind::CreatedAtRuntime {
            field: "valuesFrom".into(),
            kind: "Secret".into(),
            name: "db".into(),
        };
        for kind in [
            ProblemKind::Flux(runtime),
            ProblemKind::Flux(FluxKind::Offline),
            AnsibleKind::Skipped.into(),
            ProblemKind::ChartsNotCached,
        ] {
            assert_eq!(
                rule_and_severity(kind.clone()),
                ("render", Severity::Note),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_finding_keeps_what_the_renderer_said() {
        let p = fluxgate_diagnostics::Problem::<KustomizeKind>::new(
            KustomizeKind::MissingFile {
                path: "missing.yaml".into(),
            },
            "resource \"missing.yaml\" not found",
            Some(Location::new("apps/kustomization.yaml", 3, 5)),
        )
        .help("fix the path");
        let d = finding(&p);
        assert_eq!((d.rule.as_str(), d.severity), ("render", Severity::Error));
        assert_eq!(d.message, "resource \"missing.yaml\" not found");
        assert_eq!(d.location.as_ref().map(|l| l.line), Some(3));
        assert_eq!(d.help.as_deref(), Some("fix the path"));
        assert!(d.environment.is_none());
    }
}
