//! What loading an Ansible project or rendering its templates found wrong, typed. Which rule
//! reports it and how serious it is, the rules layer decides.

use fluxgate_diagnostics::{Diagnostic, Severity};

/// A problem of the Ansible layer.
pub type Problem = fluxgate_diagnostics::Problem<ProblemKind>;

/// The kinds of problem the Ansible layer reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// From the YAML parser (`recovered`: it read past the defect).
    Yaml { recovered: bool },
    /// Input ansible-core rejects or cannot find: an inventory, a playbook, a role, a vars
    /// file, a variable that cannot be resolved.
    Invalid,
    /// A template with a Jinja syntax error.
    TemplateSyntax,
    /// A template that reads a variable its scope does not define.
    TemplateUndefined,
    /// A template that cannot be rendered for another reason (a filter error, a missing
    /// template file, output too large).
    Template,
    /// What the repository does not hold, so fluxgate cannot check it: a role installed by
    /// ansible-galaxy from a requirements file.
    External,
    /// An inventory that defines groups but no host, checked with one representative host
    /// per group.
    Representative,
    /// Input ansible-core skips with a warning (a `vars_files` name that cannot be templated
    /// for a host, an `include_vars` that is not run statically).
    Skipped,
}

impl ProblemKind {
    /// Whether ansible-core fails on it.
    #[must_use]
    pub fn fails(&self) -> bool {
        match self {
            ProblemKind::Yaml { recovered } => !recovered,
            ProblemKind::Skipped | ProblemKind::External | ProblemKind::Representative => false,
            ProblemKind::Invalid
            | ProblemKind::TemplateSyntax
            | ProblemKind::TemplateUndefined
            | ProblemKind::Template => true,
        }
    }

    /// The kind of a template failure, from the engine's message.
    pub(crate) fn of_template_error(e: &crate::ResolveError) -> ProblemKind {
        match &e.reason {
            crate::Error::Template { reason } if reason.contains("syntax error") => {
                ProblemKind::TemplateSyntax
            }
            _ if e.is_undefined() => ProblemKind::TemplateUndefined,
            _ => ProblemKind::Template,
        }
    }
}

/// A finding of the YAML parser as an Ansible problem.
#[must_use]
pub fn from_yaml(d: Diagnostic) -> Problem {
    let recovered = d.severity < Severity::Error;
    Problem::from_diagnostic(ProblemKind::Yaml { recovered }, d)
}
