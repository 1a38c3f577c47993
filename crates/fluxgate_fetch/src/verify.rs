//! Verify before use: the offline side of the cache. Every chart handed out here was read
//! from the cache and hashed to the digest the lock pins; a chart the lock does not pin, one
//! the cache lacks, and one whose bytes changed are errors naming the source (fail closed).

use std::path::{Path, PathBuf};

use crate::cache::{Cache, cache_dir};
use crate::constraint::{Constraint, parse_version};
use crate::error::Error;
use crate::lock::{LOCK_FILE, Lock, LockEntry};

/// A chart read from the cache whose bytes match the lock.
#[derive(Clone, Debug)]
pub struct VerifiedChart {
    pub entry: LockEntry,
    /// The archive (a chart `.tgz`).
    pub bytes: Vec<u8>,
    /// Where the cache holds it.
    pub path: PathBuf,
}

/// The bytes of `chart` `version` from `source`, verified against `lock`. A missing lock entry,
/// a missing cache file and a digest mismatch are errors naming the source.
pub fn verified_chart(
    lock: &Lock,
    cache: &Cache,
    source: &str,
    chart: &str,
    version: &str,
) -> Result<VerifiedChart, Error> {
    let entry = lock
        .find(source, chart, version)
        .ok_or_else(|| Error::NotLocked {
            source_url: crate::display_url(source),
            chart: chart.to_string(),
            version: version.to_string(),
        })?;
    verify_entry(cache, entry)
}

fn verify_entry(cache: &Cache, entry: &LockEntry) -> Result<VerifiedChart, Error> {
    let named = |e: Error| match e {
        Error::DigestMismatch {
            expected, actual, ..
        } => Error::DigestMismatch {
            source_url: crate::display_url(&entry.source),
            chart: entry.chart.clone(),
            version: entry.version.clone(),
            expected,
            actual,
        },
        other => other,
    };
    match cache.read_verified(&entry.digest).map_err(named)? {
        Some(bytes) => Ok(VerifiedChart {
            entry: entry.clone(),
            bytes,
            path: cache.path(&entry.digest),
        }),
        None => Err(Error::NotCached {
            source_url: crate::display_url(&entry.source),
            chart: entry.chart.clone(),
            version: entry.version.clone(),
            digest: entry.digest.to_string(),
            cache: cache.dir().to_path_buf(),
        }),
    }
}

/// A full commit id: the version a GitRepository chart is locked at.
fn is_commit_id(version: &str) -> bool {
    version.len() == 40 && version.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The lock of a repository and the cache it points into: what the offline commands read
/// charts from. Cheap to share (`Arc`) between renderers.
#[derive(Clone, Debug)]
pub struct FetchedCharts {
    lock: Lock,
    cache: Cache,
}

impl FetchedCharts {
    #[must_use]
    pub fn new(lock: Lock, cache: Cache) -> FetchedCharts {
        FetchedCharts { lock, cache }
    }

    /// `<repo_root>/fluxgate.lock` over the cache `cache_flag` names (`--cache`), else
    /// `FLUXGATE_CACHE`, else the platform cache folder. `Ok(None)` when the repository has no
    /// lock (nothing was fetched; charts come only from the `charts:` folder).
    pub fn open(
        repo_root: &Path,
        cache_flag: Option<&Path>,
    ) -> Result<Option<FetchedCharts>, Error> {
        let path = repo_root.join(LOCK_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let lock = Lock::read(&path)?;
        let cache = Cache::open(&cache_dir(cache_flag)?);
        Ok(Some(FetchedCharts { lock, cache }))
    }

    #[must_use]
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    #[must_use]
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// These charts without the GitRepository entries no request among `requests` (what the
    /// repository's sources ask for now) resolves to: a GitRepository whose `ref` was edited
    /// since `fetch` no longer finds its old commit, so its chart is missing, not stale (fail
    /// closed). Entries of other sources are kept (their lookups match versions already).
    #[must_use]
    pub fn restricted_to(mut self, requests: &[crate::sources::ChartRequest]) -> FetchedCharts {
        use crate::sources::Protocol;
        let git_sources: Vec<&crate::sources::ChartRequest> = requests
            .iter()
            .filter(|r| r.protocol == Protocol::Git)
            .collect();
        let git_urls: std::collections::BTreeSet<String> = git_sources
            .iter()
            .map(|r| crate::lock::source_key(&r.source))
            .collect();
        self.lock.retain(|e| {
            let (_, commit) = crate::lock::split_git_version(&e.version);
            let is_git = git_urls.contains(&e.source) || is_commit_id(commit);
            !is_git
                || git_sources.iter().any(|r| {
                    crate::lock::source_key(&r.source) == e.source
                        && r.chart == e.chart
                        && crate::lock::git_entry_matches(&r.want, &e.version)
                })
        });
        self
    }

    /// The requests among `requests` whose source and chart the lock pins, but not for what
    /// they ask now (a range, tag or GitRepository `ref` edited since `fetch`): the lock no
    /// longer matches the repository's sources, and their charts must not be taken from it.
    #[must_use]
    pub fn outdated<'r>(
        &self,
        requests: &'r [crate::sources::ChartRequest],
    ) -> Vec<&'r crate::sources::ChartRequest> {
        requests
            .iter()
            .filter(|r| {
                !self.lock.versions(&r.source, &r.chart).is_empty()
                    && self.lock.satisfying(r).is_none()
            })
            .collect()
    }

    /// `chart` `version` from `source`, verified (see [`verified_chart`]).
    pub fn chart_from(
        &self,
        source: &str,
        chart: &str,
        version: &str,
    ) -> Result<VerifiedChart, Error> {
        verified_chart(&self.lock, &self.cache, source, chart, version)
    }

    /// The chart named `chart` whatever its source, for a renderer that knows only a release's
    /// chart name and requested version: an exact version, or the highest locked version a
    /// range (or no version) admits. `None` when the lock pins no such chart; `Some(Err)` when
    /// it does but the cache lacks it or its bytes changed, or when two sources pin that
    /// version with different digests.
    #[must_use]
    pub fn chart(
        &self,
        chart: &str,
        version: Option<&str>,
    ) -> Option<Result<VerifiedChart, Error>> {
        let constraint = version.and_then(|v| Constraint::parse(v).ok());
        // A chart from a GitRepository is locked by its path (`charts/demo`); a release names
        // that path (`./charts/demo`, `charts/demo/`) or, through the chart, its last segment.
        let path = chart.trim_start_matches("./").trim_matches('/');
        let candidates: Vec<&LockEntry> = self
            .lock
            .entries()
            .iter()
            .filter(|e| {
                e.chart == chart || e.chart == path || e.chart.rsplit('/').next() == Some(chart)
            })
            .filter(|e| match (version, &constraint) {
                (None, _) => true,
                // A GitRepository chart is locked by commit; Flux ignores a release's version
                // for it (the chart's own Chart.yaml says it), so any version asked is its.
                (Some(_), _) if is_commit_id(crate::lock::split_git_version(&e.version).1) => true,
                (Some(v), _)
                    if e.version.trim_start_matches('v') == v.trim().trim_start_matches('v') =>
                {
                    true
                }
                (Some(_), Some(c)) => parse_version(&e.version).is_some_and(|pv| c.matches(&pv)),
                (Some(_), None) => false,
            })
            .collect();
        let best = candidates.iter().copied().max_by(|a, b| {
            match (parse_version(&a.version), parse_version(&b.version)) {
                (Some(x), Some(y)) => x.cmp_precedence(&y),
                _ => a.version.cmp(&b.version),
            }
        })?;
        let rivals: Vec<&LockEntry> = candidates
            .iter()
            .copied()
            .filter(|e| e.version == best.version && e.digest != best.digest)
            .collect();
        if let Some(other) = rivals.first() {
            return Some(Err(Error::DigestMismatch {
                source_url: format!(
                    "{} and {}",
                    crate::display_url(&best.source),
                    crate::display_url(&other.source)
                ),
                chart: chart.to_string(),
                version: best.version.clone(),
                expected: best.digest.to_string(),
                actual: format!(
                    "{} (two sources pin different charts under one name)",
                    other.digest
                ),
            }));
        }
        Some(verify_entry(&self.cache, best))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Digest;

    fn setup(name: &str) -> (PathBuf, FetchedCharts) {
        let dir = crate::cache::tests::tempdir(name);
        let cache = Cache::open(&dir);
        let mut lock = Lock::default();
        for (source, version) in [
            ("https://a.example", "1.0.0"),
            ("https://a.example", "1.2.0"),
        ] {
            let digest = cache
                .store(format!("demo {version}").as_bytes())
                .expect("stored");
            lock.insert(LockEntry {
                source: source.into(),
                chart: "demo".into(),
                version: version.into(),
                digest,
            });
        }
        (dir, FetchedCharts::new(lock, cache))
    }

    #[test]
    fn lookups_verify_and_fail_closed() {
        let (dir, fetched) = setup("verify");
        let got = fetched
            .chart_from("https://a.example/", "demo", "1.0.0")
            .expect("verified");
        assert_eq!(got.bytes, b"demo 1.0.0");
        let missing = fetched
            .chart_from("https://a.example", "demo", "9.9.9")
            .expect_err("not locked")
            .to_string();
        assert!(
            missing.contains("https://a.example: chart demo 9.9.9 is not in fluxgate.lock"),
            "{missing}"
        );

        // By name: a range takes the highest locked version it admits.
        let by_name =
            |v: Option<&str>| fetched.chart("demo", v).map(|r| r.map(|c| c.entry.version));
        assert_eq!(by_name(None).and_then(Result::ok).as_deref(), Some("1.2.0"));
        assert_eq!(
            by_name(Some("~1.0")).and_then(Result::ok).as_deref(),
            Some("1.0.0")
        );
        assert_eq!(
            by_name(Some("v1.2.0")).and_then(Result::ok).as_deref(),
            Some("1.2.0")
        );
        assert!(by_name(Some("2.0.0")).is_none());
        assert!(fetched.chart("other", None).is_none());

        // A tampered cache file: an error naming the source, never the bytes.
        let path = fetched.cache().path(&Digest::of(b"demo 1.2.0"));
        std::fs::write(&path, b"evil").expect("tamper");
        let err = fetched
            .chart("demo", None)
            .expect("locked")
            .expect_err("tampered")
            .to_string();
        assert!(
            err.starts_with("https://a.example: chart demo 1.2.0: digest mismatch"),
            "{err}"
        );
        std::fs::remove_file(&path).expect("removed");
        let err = fetched
            .chart("demo", None)
            .expect("locked")
            .expect_err("gone")
            .to_string();
        assert!(err.contains("is not in the cache"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_repository_without_a_lock_has_no_fetched_charts() {
        let dir = crate::cache::tests::tempdir("nolock");
        assert!(
            FetchedCharts::open(&dir, Some(&dir))
                .expect("no error")
                .is_none()
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
