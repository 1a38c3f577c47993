//! Chart sources into a verified, content-addressed cache (SPEC §3.5).
//!
//! `fluxgate fetch` resolves the charts a repository's environments use (HelmRepository over
//! HTTP or OCI, OCIRepository, HelmRelease `chart.spec` and `chartRef`), stores each archive
//! in the [`Cache`] under its sha256 and pins it in [`Lock`] (`fluxgate.lock`). Every other
//! command stays offline and reads charts through [`FetchedCharts`], which hands out only
//! bytes that hash to the digest the lock pins: a chart the lock lacks, one the cache lacks
//! and one whose bytes changed are errors naming the source.
//!
//! The offline half (lock, cache, verification, [`extract`], [`constraint`]) has no network
//! code; the `network` feature adds [`fetch`](crate::fetch::fetch) and its HTTP and OCI clients.
//!
//! ```
//! use fluxgate_fetch::{Cache, FetchedCharts, Lock, LockEntry};
//! let dir = std::env::temp_dir().join(format!("fluxgate-fetch-doc-{}", std::process::id()));
//! let cache = Cache::open(&dir);
//! let digest = cache.store(b"a chart archive")?;
//! let mut lock = Lock::default();
//! lock.insert(LockEntry {
//!     source: "https://charts.example.com".into(),
//!     chart: "demo".into(),
//!     version: "1.2.3".into(),
//!     digest,
//! });
//! let charts = FetchedCharts::new(lock, cache);
//! let chart = charts.chart_from("https://charts.example.com", "demo", "1.2.3")?;
//! assert_eq!(chart.bytes, b"a chart archive");
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), fluxgate_fetch::Error>(())
//! ```

mod cache;
pub mod constraint;
#[cfg(feature = "network")]
pub mod creds;
mod error;
pub mod extract;
#[cfg(feature = "network")]
pub mod fetch;
#[cfg(feature = "network")]
pub mod git;
#[cfg(feature = "network")]
mod git_http;
#[cfg(feature = "network")]
pub mod http;
#[cfg(feature = "network")]
pub mod index;
mod lock;
#[cfg(feature = "network")]
pub mod oci;
pub mod sources;
mod verify;

pub use cache::{Cache, Digest, cache_dir};
pub use error::{Error, display_url};
pub use lock::{
    LOCK_FILE, Lock, LockEntry, git_entry_matches, git_ref_text, git_version, source_key,
    split_git_version,
};
pub use verify::{FetchedCharts, VerifiedChart, verified_chart};
