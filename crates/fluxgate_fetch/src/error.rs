//! The one error type of the crate. Every variant that concerns a source names it (its URL
//! with any user:password removed), so a failed fetch or a failed verification says which
//! HelmRepository, OCIRepository or GitRepository to look at.

use std::path::PathBuf;

/// Why a fetch or a verified lookup could not be done.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "no cache folder: pass --cache DIR or set FLUXGATE_CACHE (neither HOME nor a platform \
         cache folder is set)"
    )]
    NoCacheDir,
    #[error("{file}:{line}: {message}")]
    LockSyntax {
        file: String,
        line: usize,
        message: String,
    },
    /// Fail closed: a chart that the lock does not pin is never used.
    #[error("{source_url}: chart {chart} {version} is not in fluxgate.lock; run `fluxgate fetch`")]
    NotLocked {
        source_url: String,
        chart: String,
        version: String,
    },
    /// The lock pins it but the cache does not hold it.
    #[error(
        "{source_url}: chart {chart} {version} ({digest}) is not in the cache at {}; run \
         `fluxgate fetch`",
        cache.display()
    )]
    NotCached {
        source_url: String,
        chart: String,
        version: String,
        digest: String,
        cache: PathBuf,
    },
    /// The bytes are not the ones the lock (or the server's index or manifest) pinned.
    #[error(
        "{source_url}: chart {chart} {version}: digest mismatch: expected {expected}, got {actual}"
    )]
    DigestMismatch {
        source_url: String,
        chart: String,
        version: String,
        expected: String,
        actual: String,
    },
    #[error("{source_url}: no version of chart {chart} matches `{constraint}`{available}")]
    NoMatchingVersion {
        source_url: String,
        chart: String,
        constraint: String,
        /// `` or `; the source has: 1.0.0, 1.1.0, ...`.
        available: String,
    },
    #[error("{source_url}: chart {chart} is not in the repository's index")]
    NoSuchChart { source_url: String, chart: String },
    #[error("`{constraint}` is not a version constraint: {message}")]
    BadConstraint { constraint: String, message: String },
    #[error("{source_url}: {message}")]
    Http { source_url: String, message: String },
    #[error("{source_url}: index.yaml refused: {message}")]
    Index { source_url: String, message: String },
    #[error("{source_url}: {message}")]
    Oci { source_url: String, message: String },
    /// An archive that would write outside its folder, or is too large: nothing is written.
    #[error("{what}: archive refused: {message}")]
    UnsafeArchive { what: String, message: String },
    #[error("{source_url}: {message}")]
    Git { source_url: String, message: String },
    #[error("{source_url}: {message}")]
    Unsupported { source_url: String, message: String },
    #[error(
        "{source_url}: needs credentials ({message}); fluxgate reads them from a Docker config.json or a netrc, never from the cluster's Secret"
    )]
    NeedsCredentials { source_url: String, message: String },
    /// `--locked`: the lock does not match the repository's sources.
    #[error("fluxgate.lock does not match the repository's sources (--locked):\n{}", .0.join("\n"))]
    LockOutdated(Vec<String>),
    /// Several failures of one fetch, each naming its source.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Many(Vec<Error>),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// `url` fit to print: any `user:password@` is dropped, and so is a query (tokens hide there).
#[must_use]
pub fn display_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = rest
        .find('/')
        .map_or((rest, ""), |i| (&rest[..i], &rest[i..]));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    if scheme.is_empty() {
        format!("{host}{path}")
    } else {
        format!("{scheme}://{host}{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(
            display_url("https://bob:hunter2@charts.example.com/stable?token=abc"),
            "https://charts.example.com/stable"
        );
        assert_eq!(
            display_url("oci://ghcr.io/org/chart"),
            "oci://ghcr.io/org/chart"
        );
        assert_eq!(display_url("weird"), "weird");
    }
}
