//! What a build found wrong with its input, typed. The kind says what happened; which rule
//! reports it and how serious it is, the rules layer decides.

use fluxgate_diagnostics::{Diagnostic, Severity};

/// A problem of a kustomize build.
pub type Problem = fluxgate_diagnostics::Problem<ProblemKind>;

/// The kinds of problem a kustomize build reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// From the YAML parser. `recovered`: the parser read past it (a duplicate key in a file
    /// that is not a Kubernetes manifest, a complex key, a second document where one is read);
    /// otherwise the document could not be read.
    Yaml { recovered: bool },
    /// Input kustomize refuses: `kubectl kustomize` fails on it.
    Invalid,
    /// A file or folder a kustomization names that is not there or cannot be read.
    MissingFile { path: String },
    /// A path that leaves the repository root: never read.
    OutsideRoot { path: String },
    /// A remote resource, base or file: Flux fetches it, fluxgate works offline, so what it
    /// holds is not checked.
    RemoteSkipped { target: String },
    /// What kustomize does but fluxgate does not (Helm chart inflation, plugins).
    Unsupported,
    /// Input the build reads past without applying it (an unknown kustomization field, a
    /// patch whose target may be in a remote resource that was not fetched).
    Ignored,
}

impl ProblemKind {
    /// Whether `kubectl kustomize` fails on it: the build's output is not what Flux applies.
    #[must_use]
    pub fn fails_build(&self) -> bool {
        match self {
            ProblemKind::Yaml { recovered } => !recovered,
            ProblemKind::Invalid
            | ProblemKind::MissingFile { .. }
            | ProblemKind::OutsideRoot { .. }
            | ProblemKind::Unsupported => true,
            ProblemKind::RemoteSkipped { .. } | ProblemKind::Ignored => false,
        }
    }
}

/// A finding of the YAML parser as a build problem.
#[must_use]
pub fn from_yaml(d: Diagnostic) -> Problem {
    let recovered = d.severity < Severity::Error;
    Problem::from_diagnostic(ProblemKind::Yaml { recovered }, d)
}
