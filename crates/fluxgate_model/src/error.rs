//! The one error type of this crate. Problems in the repository (a bad key, a missing folder)
//! are diagnostics; `Error` means the model could not be built at all.

use std::path::PathBuf;

/// Why the repository model could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `fluxgate.yaml` exists but could not be read (permissions, not UTF-8, an I/O error).
    #[error("cannot read {}", path.display())]
    ReadConfig {
        /// The config file's full path.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
