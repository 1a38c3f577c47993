//! The one error type of this crate: why a mutation run could not start, or why a value
//! has no mutant (the latter is reported as a skipped mutant, not as a failure).

/// Why mutation testing, or the mutation of one value, could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The worker threads of `--jobs` could not be started.
    #[error("cannot start {jobs} worker threads")]
    ThreadPool {
        /// The number of threads asked for.
        jobs: usize,
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
    /// The requirements file fluxgate.yaml names cannot be read.
    #[error("cannot read the requirements file {file}")]
    ReadRequirements {
        /// The file, as fluxgate.yaml names it.
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// A scalar that is a Jinja expression: the variables it reads are mutated instead.
    #[error(
        "the value is a Jinja expression; the variables it reads are mutated where they are defined"
    )]
    JinjaExpression,
    /// A scalar that is a `${var}` reference: the variable's definition is mutated instead.
    #[error(
        "the value is a post-build substitution reference; the variable's definition is mutated instead"
    )]
    SubstitutionReference,
    /// A SOPS or Ansible Vault value: its plain text is unknown.
    #[error("the value is encrypted")]
    Encrypted,
    /// An empty or null scalar: there is no realistic wrong value for nothing.
    #[error("the value is empty")]
    Empty,
}
