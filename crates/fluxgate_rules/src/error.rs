//! The one error type of this crate. Rules report findings, never errors; an [`Error`] is a
//! value a contract's assertion could not get, and it becomes part of the finding that says
//! the contract could not be evaluated.

/// Why a contract's `template("path")` has no value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The environment has no Ansible bootstrap (or no host) to render templates for.
    #[error("the environment has no Ansible bootstrap")]
    NoBootstrap,
    /// The template rendered, but not to a YAML document.
    #[error("{path} does not render to YAML")]
    TemplateNotYaml {
        /// The template's path, as the assertion names it.
        path: String,
    },
    /// The load did not render the template for the host (a path the load did not find in
    /// the assertion).
    #[error("{path} was not rendered for {host}")]
    NotRendered { path: String, host: String },
    /// The template could not be rendered; `message` is the renderer's problem.
    #[error("{message}")]
    TemplateRender {
        /// The template's path, as the assertion names it.
        path: String,
        /// The Ansible renderer's message.
        message: String,
    },
}
