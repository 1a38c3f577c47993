//! `fetch`: every [`ChartRequest`] into the cache and the lock, a few at a time.
//!
//! A request the lock already satisfies (a locked version the constraint admits, the same tag
//! or digest) whose archive the cache holds intact needs no network at all, so a warm cache
//! makes `fetch` a no-op. A locked version the cache lacks is downloaded again and must hash
//! to the locked digest. Only a request the lock does not satisfy is resolved anew (the
//! highest version the constraint admits, as Helm and Flux pick), which `--locked` refuses.
//! Every archive is checked by [`crate::extract::check_tgz`] before it is stored.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::cache::{Cache, Digest};
use crate::constraint::{Constraint, highest, parse_version};
use crate::creds::Credentials;
use crate::error::{Error, display_url};
use crate::extract::{Limits, check_tgz};
use crate::http::{Http, status_message};
use crate::index::{Index, MAX_INDEX_BYTES, chart_url};
use crate::lock::{Lock, LockEntry};
use crate::oci::{MAX_CHART_BYTES, Registry, tag_version};
use crate::sources::{ChartRequest, Protocol, Want};

/// How to fetch.
#[derive(Clone, Debug)]
pub struct Options {
    /// Refuse to change the lock: every request must be satisfied by a locked entry, and every
    /// entry must still be used.
    pub locked: bool,
    /// Downloads at once (at least 1).
    pub jobs: usize,
    pub credentials: Credentials,
    /// How long a connection or a read may stall.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            locked: false,
            jobs: 4,
            credentials: Credentials::none(),
            timeout: Duration::from_secs(30),
        }
    }
}

/// What a fetch did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The lock to write (the old one when nothing changed).
    pub lock: Lock,
    /// Archives downloaded (a warm cache downloads none).
    pub downloaded: Vec<LockEntry>,
    /// Requests the lock and the cache satisfied without the network.
    pub reused: usize,
    /// Each failure, naming its source. The lock still records what succeeded.
    pub errors: Vec<Error>,
}

impl Outcome {
    /// Whether the lock differs from `old`.
    #[must_use]
    pub fn changed(&self, old: &Lock) -> bool {
        &self.lock != old
    }
}

/// One request's result: the entry it uses, and whether it was downloaded.
type Done = Result<(LockEntry, bool), Error>;

/// Fetches `requests` into `cache` against `lock`. `on_done` is called once per request as it
/// finishes (for a progress bar), from the worker threads.
pub fn fetch(
    requests: &[ChartRequest],
    lock: &Lock,
    cache: &Cache,
    opts: &Options,
    on_done: &(dyn Fn(&ChartRequest) + Sync),
) -> Outcome {
    let http = Http::new(opts.timeout);
    // One unit per HTTP repository (its index is read once) and one per OCI chart.
    let mut units: BTreeMap<(Protocol, String, usize), Vec<&ChartRequest>> = BTreeMap::new();
    for (i, r) in requests.iter().enumerate() {
        let key = match r.protocol {
            Protocol::HelmHttp => (r.protocol.clone(), r.source.clone(), 0),
            Protocol::Oci | Protocol::Git => (r.protocol.clone(), r.source.clone(), i),
        };
        units.entry(key).or_default().push(r);
    }
    let units: Vec<Vec<&ChartRequest>> = units.into_values().collect();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(&ChartRequest, Done)>> = Mutex::new(Vec::new());
    let ctx = Ctx {
        http: &http,
        cache,
        lock,
        opts,
    };
    std::thread::scope(|scope| {
        for _ in 0..opts.jobs.clamp(1, 16).min(units.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(unit) = units.get(i) else {
                        break;
                    };
                    let mut index = None;
                    for r in unit {
                        let done = ctx.one(r, &mut index);
                        on_done(r);
                        if let Ok(mut all) = results.lock() {
                            all.push((*r, done));
                        }
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by(|a, b| a.0.cmp(b.0));

    let mut outcome = Outcome {
        lock: lock.clone(),
        ..Outcome::default()
    };
    let mut used: BTreeSet<LockEntry> = BTreeSet::new();
    for (_, done) in results {
        match done {
            Ok((entry, downloaded)) => {
                if downloaded {
                    outcome.downloaded.push(entry.clone());
                } else {
                    outcome.reused += 1;
                }
                outcome.lock.insert(entry.clone());
                used.insert(entry);
            }
            Err(e) => outcome.errors.push(e),
        }
    }
    // What the requests would use, fetched or not (a request that failed still needs its
    // entry: it is not stale).
    let wanted: BTreeSet<&LockEntry> = requests
        .iter()
        .filter_map(|r| locked_entry(r, lock))
        .collect();
    let stale: Vec<String> = lock
        .entries()
        .iter()
        .filter(|e| !used.contains(*e) && !wanted.contains(e))
        .map(|e| {
            format!(
                "  {} {} {} is locked but no release uses it",
                display_url(&e.source),
                e.chart,
                e.version
            )
        })
        .collect();
    if opts.locked {
        let mut outdated: Vec<String> = Vec::new();
        let mut others = Vec::new();
        for e in std::mem::take(&mut outcome.errors) {
            match e {
                Error::LockOutdated(lines) => outdated.extend(lines),
                other => others.push(other),
            }
        }
        outdated.extend(stale);
        outcome.errors = others;
        if !outdated.is_empty() {
            outcome.errors.push(Error::LockOutdated(outdated));
        }
        outcome.lock = lock.clone();
    } else if outcome.errors.is_empty() {
        // Entries no release uses any more leave the lock, only after a fetch that saw every
        // source (a failed one may still need its old entry).
        outcome.lock.retain(|e| used.contains(e));
    }
    outcome
}

struct Ctx<'a> {
    http: &'a Http,
    cache: &'a Cache,
    lock: &'a Lock,
    opts: &'a Options,
}

impl Ctx<'_> {
    fn one(&self, r: &ChartRequest, index: &mut Option<Result<Index, Error>>) -> Done {
        if let Some(entry) = locked_entry(r, self.lock) {
            match self.cache.read_verified(&entry.digest) {
                Ok(Some(_)) => return Ok((entry.clone(), false)),
                // Missing or damaged in the cache: download the locked version again.
                Ok(None) | Err(Error::DigestMismatch { .. }) => {}
                Err(e) => return Err(e),
            }
            let bytes = self.download(r, &entry.version, index)?.0;
            let actual = Digest::of(&bytes);
            if actual != entry.digest {
                return Err(Error::DigestMismatch {
                    source_url: display_url(&r.source),
                    chart: r.chart.clone(),
                    version: entry.version.clone(),
                    expected: format!("{} (fluxgate.lock)", entry.digest),
                    actual: format!("{actual} (the server's archive changed since it was locked)"),
                });
            }
            self.keep(r, &entry.version, &bytes)?;
            return Ok((entry.clone(), true));
        }
        if self.opts.locked {
            return Err(Error::LockOutdated(vec![format!(
                "  {} {} {} is not satisfied by fluxgate.lock ({})",
                display_url(&r.source),
                r.chart,
                want_text(&r.want),
                r.source_object
            )]));
        }
        let (version, bytes) = if r.protocol == Protocol::Git {
            // One shallow fetch both resolves the ref and reads the chart.
            let (commit, bytes) = self.git(r, &r.want)?;
            (crate::lock::git_version(&r.want, &commit), bytes)
        } else {
            let version = self.resolve(r, index)?;
            let (bytes, _) = self.download(r, &version, index)?;
            (version, bytes)
        };
        let digest = self.keep(r, &version, &bytes)?;
        Ok((
            LockEntry {
                source: r.source.clone(),
                chart: r.chart.clone(),
                version,
                digest,
            },
            true,
        ))
    }

    /// Checks the archive and stores it.
    fn keep(&self, r: &ChartRequest, version: &str, bytes: &[u8]) -> Result<Digest, Error> {
        check_tgz(
            bytes,
            &format!("{} {} {version}", display_url(&r.source), r.chart),
            Limits::default(),
        )?;
        self.cache.store(bytes)
    }

    /// The version (or tag, or digest) to fetch for a request the lock does not satisfy.
    fn resolve(
        &self,
        r: &ChartRequest,
        index: &mut Option<Result<Index, Error>>,
    ) -> Result<String, Error> {
        match (&r.protocol, &r.want) {
            (Protocol::Git, want) => self
                .git(r, want)
                .map(|(commit, _)| crate::lock::git_version(want, &commit)),
            (_, Want::GitRev(_)) => Err(Error::Unsupported {
                source_url: display_url(&r.source),
                message: "a git revision is asked of a source that is not a GitRepository".into(),
            }),
            (Protocol::Oci, Want::Tag(t) | Want::Digest(t)) => Ok(t.clone()),
            // An exact version is its tag, as Helm pulls it: no tag listing needed.
            (Protocol::Oci, Want::Semver(c)) if is_exact(c) => Ok(c.trim().to_string()),
            (Protocol::Oci, Want::Semver(c)) => {
                let constraint = Constraint::parse(c)?;
                let registry = self.registry(r)?;
                let tags = registry.tags()?;
                let versions: Vec<String> = tags.iter().map(|t| tag_version(t)).collect();
                let picked = highest(&constraint, versions.iter().map(String::as_str));
                picked
                    .map(str::to_string)
                    .ok_or_else(|| no_match(r, c, &versions))
            }
            (Protocol::HelmHttp, want) => {
                let c = match want {
                    Want::Semver(c) | Want::Tag(c) | Want::Digest(c) | Want::GitRev(c) => c,
                };
                let constraint = Constraint::parse(c)?;
                let index = self.index(r, index)?;
                let versions = index.versions(&r.chart).ok_or_else(|| Error::NoSuchChart {
                    source_url: display_url(&r.source),
                    chart: r.chart.clone(),
                })?;
                let texts: Vec<String> = versions.iter().map(|v| v.version.clone()).collect();
                highest(&constraint, versions.iter().map(|v| v.version.as_str()))
                    .map(str::to_string)
                    .ok_or_else(|| no_match(r, c, &texts))
            }
        }
    }

    /// The commit `want` names in a GitRepository and its chart folder packed.
    fn git(&self, r: &ChartRequest, want: &Want) -> Result<(String, Vec<u8>), Error> {
        let scratch = self.cache.dir().join("tmp");
        let remote = crate::git::Remote {
            agent: self.http.agent(),
            login: self.opts.credentials.http(host_of(&r.source)),
            scratch: &scratch,
            timeout: self.opts.timeout,
            secret_ref: r.secret_ref.as_deref(),
        };
        crate::git::chart_at(&r.source, &r.chart, want, &remote)
    }

    fn registry<'s>(&'s self, r: &'s ChartRequest) -> Result<Registry<'s>, Error> {
        Registry::new(
            self.http,
            &self.opts.credentials,
            &r.source,
            r.insecure,
            r.secret_ref.as_deref(),
        )
    }

    /// The archive of `version`, verified against what the source states (the OCI layer
    /// digest; the index's digest when it gives one).
    fn download(
        &self,
        r: &ChartRequest,
        version: &str,
        index: &mut Option<Result<Index, Error>>,
    ) -> Result<(Vec<u8>, Digest), Error> {
        match r.protocol {
            Protocol::Git => {
                let commit = crate::lock::split_git_version(version).1;
                let (_, bytes) = self.git(r, &Want::GitRev(commit.to_string()))?;
                let digest = Digest::of(&bytes);
                Ok((bytes, digest))
            }
            Protocol::Oci => {
                let tag = if version.starts_with("sha256:") {
                    version.to_string()
                } else {
                    version.replace('+', "_")
                };
                self.registry(r)?.pull_chart(&tag)
            }
            Protocol::HelmHttp => {
                let index = self.index(r, index)?;
                let entry = index
                    .versions(&r.chart)
                    .unwrap_or_default()
                    .iter()
                    .find(|v| v.version == version)
                    .ok_or_else(|| Error::NoMatchingVersion {
                        source_url: display_url(&r.source),
                        chart: r.chart.clone(),
                        constraint: version.to_string(),
                        available: "; the index no longer lists it".into(),
                    })?;
                let url = entry.urls.first().ok_or_else(|| Error::Index {
                    source_url: display_url(&r.source),
                    message: format!("{} {version} has no urls", r.chart),
                })?;
                let url = chart_url(&r.source, url);
                let response = self.http_get(r, &url, MAX_CHART_BYTES)?;
                let actual = Digest::of(&response);
                if let Some(expected) = &entry.digest
                    && *expected != actual
                {
                    return Err(Error::DigestMismatch {
                        source_url: display_url(&r.source),
                        chart: r.chart.clone(),
                        version: version.to_string(),
                        expected: format!("{expected} (index.yaml)"),
                        actual: actual.to_string(),
                    });
                }
                Ok((response, actual))
            }
        }
    }

    /// GET with the netrc login of the repository's host (sent only to that host).
    fn http_get(&self, r: &ChartRequest, url: &str, limit: u64) -> Result<Vec<u8>, Error> {
        let repo_host = host_of(&r.source);
        let login = self
            .opts
            .credentials
            .http(repo_host)
            .filter(|_| host_of(url) == repo_host)
            .map(crate::creds::Login::basic);
        let mut headers = Vec::new();
        if let Some(l) = login.as_deref() {
            headers.push(("Authorization", l));
        }
        let response = self.http.get(url, &headers, limit, &r.source)?;
        match response.status {
            200 => Ok(response.body),
            401 | 403 if r.secret_ref.is_some() && login.is_none() => {
                Err(Error::NeedsCredentials {
                    source_url: display_url(&r.source),
                    message: format!(
                        "the source's secretRef names Secret `{}`, and no netrc login for {repo_host} \
                     was found",
                        r.secret_ref.as_deref().unwrap_or_default()
                    ),
                })
            }
            s => Err(Error::Http {
                source_url: display_url(&r.source),
                message: status_message(s, url),
            }),
        }
    }

    /// The repository's index, read once per unit (the error too: it is not retried).
    fn index<'i>(
        &self,
        r: &ChartRequest,
        slot: &'i mut Option<Result<Index, Error>>,
    ) -> Result<&'i Index, Error> {
        let read = || {
            let url = format!("{}/index.yaml", r.source.trim_end_matches('/'));
            self.http_get(r, &url, MAX_INDEX_BYTES)
                .and_then(|bytes| {
                    String::from_utf8(bytes).map_err(|_| Error::Index {
                        source_url: display_url(&r.source),
                        message: "not UTF-8 text".into(),
                    })
                })
                .and_then(|text| Index::parse(&text, &r.source))
        };
        match slot.get_or_insert_with(read) {
            Ok(index) => Ok(index),
            Err(e) => {
                let message = e.to_string();
                Err(Error::Http {
                    source_url: display_url(&r.source),
                    message: message
                        .strip_prefix(&format!("{}: ", display_url(&r.source)))
                        .unwrap_or(&message)
                        .to_string(),
                })
            }
        }
    }
}

/// A version that names one release (`1.2.3`, `v1.2.3-rc.1+b`), not a range.
fn is_exact(c: &str) -> bool {
    let c = c.trim();
    let digits = c.strip_prefix('v').unwrap_or(c);
    digits.starts_with(|ch: char| ch.is_ascii_digit())
        && c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-+".contains(&b))
        && !c.contains(['x', 'X'])
        && parse_version(c).is_some()
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or_default();
    authority.rsplit_once('@').map_or(authority, |(_, h)| h)
}

fn want_text(want: &Want) -> String {
    match want {
        Want::Semver(c) => format!("`{c}`"),
        Want::Tag(t) => format!("tag {t}"),
        Want::Digest(d) => d.clone(),
        Want::GitRev(rev) => rev.clone(),
    }
}

fn no_match(r: &ChartRequest, constraint: &str, versions: &[String]) -> Error {
    let mut shown: Vec<&str> = versions.iter().map(String::as_str).take(10).collect();
    if versions.len() > 10 {
        shown.push("…");
    }
    Error::NoMatchingVersion {
        source_url: display_url(&r.source),
        chart: r.chart.clone(),
        constraint: constraint.to_string(),
        available: if shown.is_empty() {
            String::new()
        } else {
            format!("; the source has: {}", shown.join(", "))
        },
    }
}

/// The lock entry that satisfies `r` (see [`Lock::satisfying`]).
#[must_use]
pub fn locked_entry<'l>(r: &ChartRequest, lock: &'l Lock) -> Option<&'l LockEntry> {
    lock.satisfying(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_satisfies_what_it_admits() {
        let mut lock = Lock::default();
        for v in ["1.0.0", "1.4.0", "2.0.0"] {
            lock.insert(LockEntry {
                source: "https://c.example".into(),
                chart: "demo".into(),
                version: v.into(),
                digest: Digest::of(v.as_bytes()),
            });
        }
        let request = |want: Want| ChartRequest {
            protocol: Protocol::HelmHttp,
            source: "https://c.example".into(),
            chart: "demo".into(),
            want,
            secret_ref: None,
            insecure: false,
            source_object: "HelmRepository x/y".into(),
        };
        let pick = |c: &str| {
            locked_entry(&request(Want::Semver(c.into())), &lock).map(|e| e.version.clone())
        };
        assert_eq!(pick("^1.0").as_deref(), Some("1.4.0"));
        assert_eq!(pick("*").as_deref(), Some("2.0.0"));
        assert_eq!(pick("1.0.0").as_deref(), Some("1.0.0"));
        assert_eq!(pick(">=3"), None);
        assert_eq!(host_of("https://u:p@h.example:8080/x"), "h.example:8080");
        assert!(is_exact("1.2.3") && is_exact("v1.2.3-rc.1+b.2"));
        assert!(!is_exact("1.x") && !is_exact(">=1") && !is_exact("~1.2") && !is_exact("*"));
    }
}
