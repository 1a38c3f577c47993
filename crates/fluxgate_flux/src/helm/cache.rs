//! The chart cache: `<chart>-<version>.tgz` archives or unpacked chart directories
//! (`<chart>-<version>/` or `<chart>/`) under one folder of the repository, and after it the
//! charts `fluxgate fetch` pinned in `fluxgate.lock` ([`ChartCache::with_fetched`]), each
//! verified against its locked digest before it is read. Only `Chart.yaml` and `values.yaml`
//! are read; templates are never rendered.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use fluxgate_diagnostics::{Annotate as _, Location};
use fluxgate_fetch::FetchedCharts;
use fluxgate_kustomize::{Fs, RealFs, normalize};
use fluxgate_yaml::{Node, Schema, parse_one, parse_one_shared};

use crate::problem::{Problem, ProblemKind};

/// Where charts are looked up. `ChartCache::none()` finds nothing. Every read goes through a
/// [`Fs`] (mutation testing overlays charts), and each lookup is done once.
#[derive(Clone, Default)]
pub struct ChartCache<'a> {
    files: Option<Files<'a>>,
    /// The repository root, normalised (nothing outside it is read).
    root: PathBuf,
    /// The cache folder, relative to the root, as written in locations.
    dir: String,
    /// Lookups done so far, by chart name and requested version.
    found: Arc<Mutex<Lookups>>,
    /// The charts `fluxgate fetch` locked, looked up when the folder lacks a chart.
    fetched: Option<Arc<FetchedCharts>>,
}

type Lookups = HashMap<(String, Option<String>), Option<Arc<Chart>>>;

#[derive(Clone)]
enum Files<'a> {
    Real(RealFs),
    Borrowed(&'a dyn Fs),
}

impl fmt::Debug for ChartCache<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChartCache")
            .field("root", &self.root)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// A chart found in the cache.
#[derive(Clone, Debug)]
pub struct Chart {
    pub name: String,
    pub version: String,
    /// `values.yaml`, located at `<cache file>/<member>` lines; `None` when the chart has none.
    pub values: Option<Node>,
    /// What was opened, for messages (`charts/cilium-1.20.1.tgz`).
    pub source: String,
    /// The archive itself when it does not live in the repository (a fetched chart, verified
    /// against its lock entry): what a renderer reads instead of `source`.
    pub archive: Option<Arc<[u8]>>,
    pub problems: Vec<Problem>,
}

/// Upper bound on an archive member that fluxgate reads (a values.yaml or Chart.yaml).
const MAX_MEMBER: u64 = 16 * 1024 * 1024;

impl<'a> ChartCache<'a> {
    #[must_use]
    pub fn none() -> ChartCache<'a> {
        ChartCache::default()
    }

    /// The cache at `dir` (relative to `repo_root`), read from the real file system (a
    /// symlink out of the repository is not followed).
    #[must_use]
    pub fn new(repo_root: &Path, dir: &str) -> ChartCache<'a> {
        ChartCache::with_files(Files::Real(RealFs::new(repo_root)), repo_root, dir)
    }

    /// The cache at `dir` (relative to `repo_root`), read through `fs`.
    #[must_use]
    pub fn with_fs(fs: &'a dyn Fs, repo_root: &Path, dir: &str) -> ChartCache<'a> {
        ChartCache::with_files(Files::Borrowed(fs), repo_root, dir)
    }

    fn with_files(files: Files<'a>, repo_root: &Path, dir: &str) -> ChartCache<'a> {
        ChartCache {
            files: Some(files),
            root: normalize(repo_root),
            dir: dir.trim_matches('/').to_string(),
            found: Arc::default(),
            fetched: None,
        }
    }

    /// Only the charts `fluxgate fetch` locked (a repository without a `charts:` folder).
    #[must_use]
    pub fn fetched(fetched: Arc<FetchedCharts>) -> ChartCache<'a> {
        ChartCache::none().with_fetched(fetched)
    }

    /// This cache, falling back to the charts `fluxgate fetch` locked
    /// ([`FetchedCharts::open`]) for a chart the folder does not hold. Each such chart is
    /// verified against its locked digest before it is read; one that fails (missing from the
    /// cache, changed since it was locked) is found with no values and an error naming its
    /// source, never taken for a chart without defaults.
    #[must_use]
    pub fn with_fetched(mut self, fetched: Arc<FetchedCharts>) -> ChartCache<'a> {
        self.fetched = Some(fetched);
        self.found = Arc::default();
        self
    }

    fn fs(&self) -> Option<&dyn Fs> {
        match self.files.as_ref()? {
            Files::Real(fs) => Some(fs),
            Files::Borrowed(fs) => Some(*fs),
        }
    }

    /// The absolute path of `rel` when it stays inside the root (the file system refuses
    /// symlinks that leave it).
    fn abs(&self, rel: &str) -> Option<PathBuf> {
        let p = normalize(&self.root.join(rel));
        p.starts_with(&self.root).then_some(p)
    }

    fn rel(&self, name: &str) -> String {
        if self.dir.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.dir)
        }
    }

    /// Finds `chart` at `version` (an exact version; a range, `*` or no version takes the
    /// highest version in the cache).
    #[must_use]
    pub fn lookup(&self, chart: &str, version: Option<&str>) -> Option<Arc<Chart>> {
        let key = (chart.to_string(), version.map(str::to_string));
        // A poisoned memo still holds only finished lookups.
        let memo = || self.found.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(done) = memo().get(&key) {
            return done.clone();
        }
        // The folder first; the fetched charts when it lacks the chart, or holds only versions
        // the requested range does not admit.
        let done = match self.find(chart, version) {
            Some(c) if admits(version, &c.version) => Some(c),
            other => self.find_fetched(chart, version).or(other),
        }
        .map(Arc::new);
        memo().insert(key, done.clone());
        done
    }

    /// `chart` among the fetched charts, verified.
    fn find_fetched(&self, chart: &str, version: Option<&str>) -> Option<Chart> {
        match self.fetched.as_ref()?.chart(chart, version)? {
            Ok(verified) => {
                let e = &verified.entry;
                // A GitRepository chart's version is `<ref>@<commit>`: it is named by its commit.
                let version = fluxgate_fetch::split_git_version(&e.version).1;
                let rel = format!("{}/{}-{version}.tgz", e.source, e.chart);
                let mut chart =
                    chart_from_archive(rel, read_tgz(&verified.bytes), (&e.chart, version));
                chart.archive = Some(Arc::from(verified.bytes));
                Some(chart)
            }
            Err(err) => Some(Chart {
                name: chart.to_string(),
                version: version.unwrap_or_default().to_string(),
                values: None,
                source: format!("{LOCK_NAME}: {chart}"),
                archive: None,
                problems: vec![Problem::new(
                    ProblemKind::Invalid,
                    format!("the fetched chart cannot be used: {err}"),
                    Some(Location::file(LOCK_NAME)),
                )
                .help("run `fluxgate fetch` to download it again (a changed digest means the cache or the lock was altered)")],
            }),
        }
    }

    fn find(&self, chart: &str, version: Option<&str>) -> Option<Chart> {
        let fs = self.fs()?;
        let dir = self.abs(if self.dir.is_empty() { "." } else { &self.dir })?;
        if !fs.is_dir(&dir) {
            return None;
        }
        let exact = version
            .filter(|v| is_exact(v))
            .map(|v| v.trim_start_matches('v'));
        if let Some(v) = exact {
            let tgz = format!("{chart}-{v}.tgz");
            if fs.is_file(&dir.join(&tgz)) {
                return self.open_tgz(&tgz);
            }
            let unpacked = format!("{chart}-{v}");
            if let Some(c) = self.open_dir(&unpacked).filter(|c| c.version == v) {
                return Some(c);
            }
            return self.open_dir(chart).filter(|c| c.version == v);
        }
        // No exact version: the highest one present.
        let mut found: Vec<Chart> = Vec::new();
        for entry in fs.list_dir(&dir).ok()? {
            let Some(name) = entry.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                continue;
            };
            let Some(rest) = name.strip_prefix(chart) else {
                continue;
            };
            let is_dir = fs.is_dir(&entry);
            let candidate = if rest.is_empty() && is_dir {
                self.open_dir(&name)
            } else if let Some(v) = rest.strip_prefix('-') {
                // Helm writes the archive suffix in lower case; that is what the cache holds.
                let is_tgz = Path::new(v)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("tgz"));
                if is_tgz && starts_with_digit(v) {
                    self.open_tgz(&name)
                } else if is_dir && starts_with_digit(v) {
                    self.open_dir(&name)
                } else {
                    None
                }
            } else {
                None
            };
            found.extend(candidate.filter(|c| c.name == chart));
        }
        found
            .into_iter()
            .max_by(|a, b| compare_versions(&a.version, &b.version))
    }

    fn open_dir(&self, name: &str) -> Option<Chart> {
        let fs = self.fs()?;
        let rel = self.rel(name);
        let dir = self.abs(&rel)?;
        let meta_text = fs.read(&dir.join("Chart.yaml")).ok()?;
        let mut diagnostics = Vec::new();
        let (meta, d) = parse_one(&format!("{rel}/Chart.yaml"), &meta_text, Schema::Kube);
        diagnostics.extend(d.into_iter().map(crate::problem::from_yaml));
        let meta = meta?;
        let values = match fs.read(&dir.join("values.yaml")) {
            Ok(text) => {
                let (v, d) = parse_one_shared(&format!("{rel}/values.yaml"), &text, Schema::Kube);
                diagnostics.extend(d.into_iter().map(crate::problem::from_yaml));
                v
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // A values.yaml that cannot be read (a symlink that leaves the repository is
            // refused, never followed): said, not taken for a chart without defaults.
            Err(e) => {
                let why = if e.kind() == std::io::ErrorKind::PermissionDenied {
                    "it leaves the repository (a symlink out of it is never followed)".to_string()
                } else {
                    e.kind().to_string()
                };
                diagnostics.push(Problem::new(
                    ProblemKind::Invalid,
                    format!(
                        "{rel}/values.yaml cannot be read: {why}; the chart's default values \
                         are unknown"
                    ),
                    Some(Location::file(format!("{rel}/values.yaml"))),
                ));
                None
            }
        };
        Some(Chart {
            name: meta.str_at(&["name"]).unwrap_or(name).to_string(),
            version: meta_version(&meta),
            values,
            source: rel,
            archive: None,
            problems: diagnostics,
        })
    }

    fn open_tgz(&self, file: &str) -> Option<Chart> {
        let fs = self.fs()?;
        let rel = self.rel(file);
        let path = self.abs(&rel)?;
        if !fs.is_file(&path) {
            return None;
        }
        let stem = file.trim_end_matches(".tgz");
        let guess = stem.rsplit_once('-').unwrap_or((stem, ""));
        let read = fs.read_bytes(&path).and_then(|bytes| read_tgz(&bytes));
        Some(chart_from_archive(rel, read, guess))
    }
}

/// The chart an archive read by [`read_tgz`] holds; `rel` names the archive in locations,
/// `guess` is the name and version to assume when Chart.yaml does not say.
fn chart_from_archive(
    rel: String,
    read: std::io::Result<(Member, Member)>,
    (name_guess, version_guess): (&str, &str),
) -> Chart {
    let mut diagnostics = Vec::new();
    let (meta, values) = match read {
        Ok(m) => m,
        Err(e) => {
            diagnostics.push(Problem::new(
                ProblemKind::Invalid,
                format!("cannot read chart archive: {e}"),
                Some(Location::file(rel.clone())),
            ));
            (None, None)
        }
    };
    let meta_node = meta.and_then(|(member, text)| {
        let (n, d) = parse_one(&format!("{rel}/{member}"), &text, Schema::Kube);
        diagnostics.extend(d.into_iter().map(crate::problem::from_yaml));
        n
    });
    let values = values.and_then(|(member, text)| {
        let (n, d) = parse_one_shared(&format!("{rel}/{member}"), &text, Schema::Kube);
        diagnostics.extend(d.into_iter().map(crate::problem::from_yaml));
        n
    });
    Chart {
        name: meta_node
            .as_ref()
            .and_then(|m| m.str_at(&["name"]))
            .unwrap_or(name_guess)
            .to_string(),
        version: meta_node
            .as_ref()
            .map_or_else(|| version_guess.to_string(), meta_version),
        values,
        source: rel,
        archive: None,
        problems: diagnostics,
    }
}

/// Where fetched charts are pinned, as locations name it.
const LOCK_NAME: &str = fluxgate_fetch::LOCK_FILE;

type Member = Option<(String, String)>;

/// Whether `requested` (a version or a Masterminds range) admits `found`; a request that does
/// not parse admits anything (the folder's old rule: the highest version present).
fn admits(requested: Option<&str>, found: &str) -> bool {
    use fluxgate_fetch::constraint::{Constraint, parse_version};
    let Some(c) = requested.and_then(|r| Constraint::parse(r).ok()) else {
        return true;
    };
    parse_version(found).is_none_or(|v| c.matches(&v))
}

/// Reads the top-level chart's `Chart.yaml` and `values.yaml` (`<chart>/<file>` members).
fn read_tgz(bytes: &[u8]) -> std::io::Result<(Member, Member)> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let (mut meta, mut values) = (None, None);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let member = entry.path()?.to_string_lossy().into_owned();
        let parts: Vec<&str> = member.split('/').filter(|p| !p.is_empty()).collect();
        let [_, leaf] = parts.as_slice() else {
            continue;
        };
        let slot = match *leaf {
            "Chart.yaml" => &mut meta,
            "values.yaml" => &mut values,
            _ => continue,
        };
        let mut text = String::new();
        entry.by_ref().take(MAX_MEMBER).read_to_string(&mut text)?;
        *slot = Some((parts.join("/"), text));
        if meta.is_some() && values.is_some() {
            break;
        }
    }
    Ok((meta, values))
}

fn meta_version(meta: &Node) -> String {
    meta.get("version")
        .and_then(Node::scalar_text)
        .unwrap_or_default()
}

fn starts_with_digit(s: &str) -> bool {
    s.trim_start_matches('v')
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit())
}

/// A version that names one release (`1.20.1`, `v1.2.3-rc.1`), not a range.
fn is_exact(v: &str) -> bool {
    let v = v.trim();
    !v.is_empty()
        && starts_with_digit(v)
        && !v.contains(['*', 'x', 'X', '>', '<', '~', '^', ' ', '|', ','])
}

/// A chart version as Helm reads it (Masterminds semver): a leading `v` is allowed, and a
/// missing minor or patch counts as 0 (`1.2` is `1.2.0`).
fn chart_version(v: &str) -> Option<semver::Version> {
    let v = v.trim().trim_start_matches('v');
    if let Ok(parsed) = semver::Version::parse(v) {
        return Some(parsed);
    }
    let split = v.find(['-', '+']).unwrap_or(v.len());
    let (core, rest) = v.split_at(split);
    let padded = match core.split('.').count() {
        1 => format!("{core}.0.0{rest}"),
        2 => format!("{core}.0{rest}"),
        _ => return None,
    };
    semver::Version::parse(&padded).ok()
}

/// SemVer 2.0 precedence (pre-release identifiers compared numerically, so `rc.10` is after
/// `rc.9`); a version that does not parse sorts before every one that does, then as text.
fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    match (chart_version(a), chart_version(b)) {
        (Some(x), Some(y)) => x.cmp_precedence(&y).then_with(|| x.cmp(&y)),
        (Some(_), None) => std::cmp::Ordering::Greater,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(is_exact("1.20.1"));
        assert!(is_exact("v1.2.3-rc.1"));
        assert!(!is_exact(">=1.0.0 <2.0.0"));
        assert!(!is_exact("1.x"));
        assert!(!is_exact("*"));
        assert_eq!(
            compare_versions("1.10.0", "1.9.3"),
            std::cmp::Ordering::Greater
        );
        assert_eq!(
            compare_versions("1.0.0", "1.0.0-rc.1"),
            std::cmp::Ordering::Greater
        );
        // Pre-release identifiers are numbers, not text: rc.10 is newer than rc.9.
        assert_eq!(
            compare_versions("1.0.0-rc.10", "1.0.0-rc.9"),
            std::cmp::Ordering::Greater
        );
        assert_eq!(
            compare_versions("v1.2", "1.1.9"),
            std::cmp::Ordering::Greater
        );
        assert_eq!(
            compare_versions("1.0.0", "not-a-version"),
            std::cmp::Ordering::Greater
        );
    }

    fn tgz(members: &[(&str, &str)]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        for (path, text) in members {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, path, text.as_bytes())
                .expect("appended");
        }
        tar.into_inner().expect("tar").finish().expect("gzip")
    }

    #[test]
    fn charts_are_read_through_the_file_system() {
        let mut fs = fluxgate_kustomize::MemFs::new();
        fs.insert(
            "/r/charts/demo-1.0.0/Chart.yaml",
            "name: demo\nversion: 1.0.0\n",
        );
        fs.insert("/r/charts/demo-1.0.0/values.yaml", "replicas: 1\n");
        fs.insert_bytes(
            "/r/charts/demo-1.2.0.tgz",
            tgz(&[
                ("demo/Chart.yaml", "name: demo\nversion: 1.2.0\n"),
                ("demo/values.yaml", "replicas: 3\n"),
                ("demo/charts/sub/values.yaml", "replicas: 9\n"),
            ]),
        );
        let cache = ChartCache::with_fs(&fs, Path::new("/r"), "charts");
        let exact = cache.lookup("demo", Some("1.0.0")).expect("unpacked chart");
        assert_eq!(exact.source, "charts/demo-1.0.0");
        let replicas = |c: &Chart| c.values.as_ref().and_then(|v| v.get("replicas")?.as_i64());
        assert_eq!(replicas(&exact), Some(1));
        // No exact version: the highest, here the archive; asked twice, answered the same.
        for _ in 0..2 {
            let latest = cache.lookup("demo", None).expect("archived chart");
            assert_eq!(
                (latest.source.as_str(), latest.version.as_str()),
                ("charts/demo-1.2.0.tgz", "1.2.0")
            );
            assert_eq!(replicas(&latest), Some(3));
        }
        assert!(cache.lookup("demo", Some("2.0.0")).is_none());
        assert!(
            ChartCache::with_fs(&fs, Path::new("/r"), "../outside")
                .lookup("demo", None)
                .is_none()
        );
    }

    #[test]
    fn fetched_charts_are_verified_before_they_are_read() {
        use fluxgate_fetch::{Cache, FetchedCharts, Lock, LockEntry};
        let dir =
            std::env::temp_dir().join(format!("fluxgate-flux-fetched-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = Cache::open(&dir);
        let archive = tgz(&[
            ("demo/Chart.yaml", "name: demo\nversion: 2.1.0\n"),
            ("demo/values.yaml", "replicas: 5\n"),
        ]);
        let digest = cache.store(&archive).expect("stored");
        let mut lock = Lock::default();
        lock.insert(LockEntry {
            source: "https://charts.example.com".into(),
            chart: "demo".into(),
            version: "2.1.0".into(),
            digest: digest.clone(),
        });
        let fetched = Arc::new(FetchedCharts::new(lock, cache.clone()));
        // The folder holds demo 1.0.0 only; 2.x comes from the fetch cache.
        let mut fs = fluxgate_kustomize::MemFs::new();
        fs.insert(
            "/r/charts/demo-1.0.0/Chart.yaml",
            "name: demo\nversion: 1.0.0\n",
        );
        let charts =
            ChartCache::with_fs(&fs, Path::new("/r"), "charts").with_fetched(fetched.clone());
        assert_eq!(
            charts
                .lookup("demo", Some("1.0.0"))
                .map(|c| c.source.clone()),
            Some("charts/demo-1.0.0".to_string())
        );
        let c = charts.lookup("demo", Some("^2")).expect("fetched chart");
        assert_eq!(
            (c.version.as_str(), c.source.as_str()),
            ("2.1.0", "https://charts.example.com/demo-2.1.0.tgz")
        );
        assert_eq!(
            c.values.as_ref().and_then(|v| v.get("replicas")?.as_i64()),
            Some(5)
        );
        assert!(c.problems.is_empty());
        assert!(
            ChartCache::fetched(fetched.clone())
                .lookup("other", None)
                .is_none()
        );

        // Tampered in the cache: found, with no values and an error naming the source.
        std::fs::write(cache.path(&digest), b"tampered").expect("tamper");
        let c = ChartCache::fetched(fetched)
            .lookup("demo", Some("2.1.0"))
            .expect("locked");
        assert!(c.values.is_none());
        let message = &c.problems.first().expect("an error").message;
        assert!(
            message.contains("https://charts.example.com: chart demo 2.1.0: digest mismatch"),
            "{message}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn missing_cache_finds_nothing() {
        assert!(
            ChartCache::none()
                .lookup("cilium", Some("1.20.1"))
                .is_none()
        );
    }
}
