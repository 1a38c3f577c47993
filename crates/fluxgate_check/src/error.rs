//! The one error type of this crate: why a run could not be made at all. Problems in the
//! repository are findings in the [`crate::Report`], never an `Err`.

use std::path::PathBuf;

/// Why fluxgate could not check a repository.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The repository folder does not exist or cannot be resolved.
    #[error("cannot open repository {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    /// The model could not be loaded (`fluxgate.yaml` unreadable).
    #[error(transparent)]
    Model(#[from] fluxgate_model::Error),
    /// `--env NAME` names no environment.
    #[error("no environment `{name}`; this repository has: {known}")]
    UnknownEnvironment { name: String, known: String },
    /// An Argo CD repository: fluxgate checks Flux (and Ansible) repositories.
    #[error(
        "nothing to check in {}: the repository is managed by Argo CD (an Argo CD Application \
         at {at}) and has no Flux root; fluxgate checks Flux (and Ansible) repositories",
        root.display()
    )]
    ArgoCd { root: PathBuf, at: String },
    /// Fail closed: no environment to check, so the gate can say nothing about the change.
    #[error("nothing to check in {}: {how}{why}", root.display())]
    NothingToCheck {
        root: PathBuf,
        how: &'static str,
        /// The configuration errors that explain it, one per line.
        why: String,
    },
}
