//! What rendering the Flux tree and HelmRelease values found wrong, typed. The kind carries
//! what the rules need (the object that is missing, the variable that is undefined); which rule
//! reports it and how serious it is, the rules layer decides.

use fluxgate_diagnostics::{Diagnostic, Severity};

/// A problem of the Flux layer.
pub type Problem = fluxgate_diagnostics::Problem<ProblemKind>;

/// The kinds of problem the Flux layer reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// A problem of the kustomize build of a Kustomization's folder.
    Kustomize(fluxgate_kustomize::ProblemKind),
    /// From the YAML parser (`recovered`: it read past the defect).
    Yaml { recovered: bool },
    /// Input Flux rejects: the Kustomization or HelmRelease fails (defined twice, a
    /// `dependsOn` on nothing or in a cycle, a bad `valuesFrom` key, invalid base64, ...).
    Invalid,
    /// A path Flux does not find in the source: `spec.path`, or the entry folder left out by
    /// the ignore rules.
    MissingPath { path: String },
    /// A `substituteFrom` or `valuesFrom` (`field`) object that no rendered object defines
    /// and no operator of the environment creates.
    MissingObject {
        field: String,
        kind: String,
        namespace: String,
        name: String,
    },
    /// A `substituteFrom` or `valuesFrom` object that an operator creates in the cluster: its
    /// keys are unknown offline.
    CreatedAtRuntime {
        field: String,
        kind: String,
        name: String,
    },
    /// A `${VAR}` without a default that no variable of the Kustomization defines. `strict`:
    /// the Flux that runs fails the Kustomization for it (2.9 and later); else it substitutes
    /// the empty string and applies the resource.
    UndefinedVariable { name: String, strict: bool },
    /// A `${...}` form post-build substitution cannot parse: Flux rejects the resource.
    SubstitutionSyntax,
    /// A value that is a bare `$NAME` naming a variable of the Kustomization: Flux
    /// substitutes only `${NAME}`, so the literal text reaches the consumer.
    Unbraced { name: String },
    /// What only the cluster knows: a Kustomization of another source, a chart that is not
    /// rendered, SOPS-encrypted values. Rendering went on without it.
    Offline,
}

impl ProblemKind {
    /// Whether the cluster ends up other than the render shows: Flux fails the Kustomization,
    /// the resource or the release (or, for an undefined variable under non-strict
    /// substitution, applies an empty value). False for what is only unknown offline and for
    /// input that is read past.
    #[must_use]
    pub fn fails(&self) -> bool {
        match self {
            ProblemKind::Kustomize(k) => k.fails_build(),
            ProblemKind::Yaml { recovered } => !recovered,
            ProblemKind::Invalid
            | ProblemKind::MissingPath { .. }
            | ProblemKind::MissingObject { .. }
            | ProblemKind::UndefinedVariable { .. }
            | ProblemKind::SubstitutionSyntax
            | ProblemKind::Unbraced { .. } => true,
            ProblemKind::CreatedAtRuntime { .. } | ProblemKind::Offline => false,
        }
    }

    /// Whether only the running cluster knows (another source, an operator's Secret,
    /// encrypted values): information, not a defect.
    #[must_use]
    pub fn is_offline_unknown(&self) -> bool {
        matches!(
            self,
            ProblemKind::CreatedAtRuntime { .. } | ProblemKind::Offline
        )
    }
}

impl From<fluxgate_kustomize::ProblemKind> for ProblemKind {
    fn from(kind: fluxgate_kustomize::ProblemKind) -> Self {
        ProblemKind::Kustomize(kind)
    }
}

/// A finding of the YAML parser as a Flux problem.
#[must_use]
pub fn from_yaml(d: Diagnostic) -> Problem {
    let recovered = d.severity < Severity::Error;
    Problem::from_diagnostic(ProblemKind::Yaml { recovered }, d)
}
