//! `fluxgate.lock`: what `fetch` resolved, one line per chart, sorted, so that a version bump
//! is a one-line change in a diff.
//!
//! ```text
//! # fluxgate.lock: written by `fluxgate fetch`. ...
//! lock 1
//! https://charts.example.com podinfo 6.5.4 sha256:5c3e...
//! oci://ghcr.io/stefanprodan/charts/podinfo podinfo 6.7.0 sha256:9f1d...
//! ```
//!
//! Fields are separated by one space: the source URL (as the source object writes it, without
//! a trailing `/`), the chart name, the resolved version and the sha256 of the chart archive.
//! One source may pin several versions of one chart (environments that pin differently).
//!
//! A GitRepository chart's version is the ref the source asks for and the commit it resolved
//! to, `<ref>@<commit>` ([`git_version`]): `refs/heads/main@<commit>`,
//! `refs/tags/v1.2.0@<commit>`, `semver:>=1.0.0%20<2.0.0@<commit>` (`%` and whitespace
//! percent-encoded so the line keeps four fields), or the bare commit for `ref.commit`. An
//! edited ref no longer matches its old line, so the chart is resolved again (or refused).

use std::fmt::Write as _;
use std::path::Path;

use crate::cache::Digest;
use crate::error::Error;

/// The file name, at the repository root.
pub const LOCK_FILE: &str = "fluxgate.lock";

const HEADER: &str =
    "# fluxgate.lock: the charts `fluxgate fetch` resolved (source, chart, version, sha256).
# Every other command reads them from the cache and checks each digest before use. Sorted;
# written by fluxgate, not by hand.
";
const MAGIC: &str = "lock 1";

/// One pinned chart.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockEntry {
    /// The source URL (`https://…`, `oci://…`), without a trailing `/`.
    pub source: String,
    pub chart: String,
    /// The version that was resolved (never a range).
    pub version: String,
    pub digest: Digest,
}

/// The lock: entries sorted by (source, chart, version), unique.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lock {
    entries: Vec<LockEntry>,
}

/// The form a source URL takes in the lock.
#[must_use]
pub fn source_key(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

impl Lock {
    /// Reads the lock at `path`; a file that does not exist is an empty lock (which verifies
    /// nothing: every lookup through it fails closed).
    pub fn read(path: &Path) -> Result<Lock, Error> {
        match std::fs::read_to_string(path) {
            Ok(text) => Lock::parse(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Lock::default()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Parses the text of a lock; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Lock, Error> {
        let bad = |line: usize, message: String| Error::LockSyntax {
            file: file.to_string(),
            line,
            message,
        };
        let mut lock = Lock::default();
        let mut seen_magic = false;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if !seen_magic {
                if line != MAGIC {
                    return Err(bad(
                        i + 1,
                        format!("expected `{MAGIC}` (a lock of another format or version)"),
                    ));
                }
                seen_magic = true;
                continue;
            }
            let fields: Vec<&str> = line.split_ascii_whitespace().collect();
            let [source, chart, version, digest] = fields.as_slice() else {
                return Err(bad(
                    i + 1,
                    format!(
                        "expected 4 fields (source chart version sha256:…), found {}",
                        fields.len()
                    ),
                ));
            };
            let digest = Digest::parse(digest)
                .filter(|_| digest.starts_with("sha256:"))
                .ok_or_else(|| bad(i + 1, format!("`{digest}` is not a sha256:<hex> digest")))?;
            lock.insert(LockEntry {
                source: source_key(source),
                chart: (*chart).to_string(),
                version: (*version).to_string(),
                digest,
            });
        }
        if !seen_magic && !lock.entries.is_empty() {
            return Err(bad(1, format!("missing `{MAGIC}`")));
        }
        Ok(lock)
    }

    /// The text of the lock: the header, then the entries in order.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut out = String::from(HEADER);
        out.push_str(MAGIC);
        out.push('\n');
        for e in &self.entries {
            let _ = writeln!(out, "{} {} {} {}", e.source, e.chart, e.version, e.digest);
        }
        out
    }

    /// Writes the lock to `path` (through a temporary file beside it and a rename, so a
    /// reader never sees half a lock). An unchanged lock is not rewritten.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let text = self.to_text();
        if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
            return Ok(());
        }
        let tmp = path.with_extension(format!("lock.{}.tmp", std::process::id()));
        std::fs::write(&tmp, &text).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::io(path, e)
        })
    }

    /// Adds `entry`, replacing one of the same source, chart and version.
    pub fn insert(&mut self, entry: LockEntry) {
        let key = |e: &LockEntry| (e.source.clone(), e.chart.clone(), e.version.clone());
        match self.entries.binary_search_by_key(&key(&entry), key) {
            Ok(i) => self.entries[i] = entry,
            Err(i) => self.entries.insert(i, entry),
        }
    }

    /// Keeps only the entries `keep` accepts (after a fetch: the ones still used).
    pub fn retain(&mut self, keep: impl FnMut(&LockEntry) -> bool) {
        self.entries.retain(keep);
    }

    /// The entry of `chart` at exactly `version` from `source`.
    #[must_use]
    pub fn find(&self, source: &str, chart: &str, version: &str) -> Option<&LockEntry> {
        let source = source_key(source);
        self.entries
            .iter()
            .find(|e| e.source == source && e.chart == chart && same_version(&e.version, version))
    }

    /// Every entry of `chart` from `source`.
    #[must_use]
    pub fn versions(&self, source: &str, chart: &str) -> Vec<&LockEntry> {
        let source = source_key(source);
        self.entries
            .iter()
            .filter(|e| e.source == source && e.chart == chart)
            .collect()
    }

    /// The entry that satisfies `r`: for a constraint, the highest locked version it admits;
    /// for a GitRepository, the line locked for the same ref.
    #[must_use]
    pub fn satisfying(&self, r: &crate::sources::ChartRequest) -> Option<&LockEntry> {
        use crate::constraint::{Constraint, highest, parse_version};
        use crate::sources::{Protocol, Want};
        let mut candidates = self.versions(&r.source, &r.chart).into_iter();
        match &r.want {
            Want::Tag(t) | Want::Digest(t) => candidates.find(|e| &e.version == t),
            // A branch, tag or semver range stays at the locked commit until the lock is updated,
            // or until the ref is edited: the lock records the ref it resolved.
            want if r.protocol == Protocol::Git => {
                candidates.find(|e| git_entry_matches(want, &e.version))
            }
            Want::GitRev(_) => None,
            Want::Semver(c) => {
                let constraint = Constraint::parse(c).ok()?;
                let matching: Vec<&LockEntry> = candidates
                    .filter(|e| {
                        e.version == *c
                            || parse_version(&e.version).is_some_and(|v| constraint.matches(&v))
                    })
                    .collect();
                let versions: Vec<&str> = matching.iter().map(|e| e.version.as_str()).collect();
                let best = highest(&constraint, versions.iter().copied())?;
                matching.into_iter().find(|e| e.version == best)
            }
        }
    }

    /// Every entry, in order.
    #[must_use]
    pub fn entries(&self) -> &[LockEntry] {
        &self.entries
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The lock version of a GitRepository chart that `want` (its `ref`) resolved to `commit`.
#[must_use]
pub fn git_version(want: &crate::sources::Want, commit: &str) -> String {
    match git_ref_text(want) {
        Some(r) => format!("{r}@{commit}"),
        None => commit.to_string(),
    }
}

/// How a GitRepository `ref` is written in the lock; `None` for a commit (its own version).
#[must_use]
pub fn git_ref_text(want: &crate::sources::Want) -> Option<String> {
    use crate::sources::Want;
    let encode = |s: &str| {
        let mut out = String::new();
        for ch in s.chars() {
            match ch {
                '%' => out.push_str("%25"),
                c if c.is_whitespace() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        let _ = write!(out, "%{b:02X}");
                    }
                }
                c => out.push(c),
            }
        }
        out
    };
    match want {
        Want::GitRev(rev) if is_commit(rev) => None,
        Want::GitRev(rev) => Some(encode(rev.trim())),
        Want::Semver(range) => Some(format!("semver:{}", encode(range.trim()))),
        Want::Tag(t) => Some(format!("tag:{}", encode(t.trim()))),
        Want::Digest(d) => Some(format!("digest:{}", encode(d.trim()))),
    }
}

/// The ref and the commit of a GitRepository chart's lock version (`<ref>@<commit>`, or a
/// bare commit, whose ref is `None`).
#[must_use]
pub fn split_git_version(version: &str) -> (Option<&str>, &str) {
    match version.rsplit_once('@') {
        Some((r, commit)) => (Some(r), commit),
        None => (None, version),
    }
}

/// Whether the lock version of a GitRepository chart was resolved for `want` (the same ref;
/// for a commit, that commit).
#[must_use]
pub fn git_entry_matches(want: &crate::sources::Want, version: &str) -> bool {
    let (_, commit) = split_git_version(version);
    is_commit(commit) && git_version(want, commit) == version
}

fn is_commit(rev: &str) -> bool {
    rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether two written versions name the same release (`v1.2.3` is `1.2.3`, as Helm reads it).
fn same_version(a: &str, b: &str) -> bool {
    a.trim_start_matches('v') == b.trim_start_matches('v')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(source: &str, chart: &str, version: &str) -> LockEntry {
        LockEntry {
            source: source.to_string(),
            chart: chart.to_string(),
            version: version.to_string(),
            digest: Digest::of(format!("{source}{chart}{version}").as_bytes()),
        }
    }

    #[test]
    fn round_trip_sorted_and_unique() {
        let mut lock = Lock::default();
        lock.insert(entry("oci://r.example/charts/b", "b", "2.0.0"));
        lock.insert(entry("https://charts.example.com", "a", "1.1.0"));
        lock.insert(entry("https://charts.example.com", "a", "1.0.0"));
        lock.insert(entry("https://charts.example.com", "a", "1.0.0"));
        let text = lock.to_text();
        let body: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_once(" sha256:").map_or(l, |(head, _)| head))
            .collect();
        assert_eq!(
            body,
            [
                "lock 1",
                "https://charts.example.com a 1.0.0",
                "https://charts.example.com a 1.1.0",
                "oci://r.example/charts/b b 2.0.0",
            ]
        );
        assert_eq!(Lock::parse(&text, "fluxgate.lock").expect("parses"), lock);
        assert!(
            lock.find("https://charts.example.com/", "a", "v1.1.0")
                .is_some()
        );
        assert!(
            lock.find("https://charts.example.com", "a", "1.2.0")
                .is_none()
        );
        assert_eq!(lock.versions("https://charts.example.com", "a").len(), 2);
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let err = |text: &str| {
            Lock::parse(text, "fluxgate.lock")
                .expect_err("refused")
                .to_string()
        };
        assert!(err("lock 2\n").contains("fluxgate.lock:1:"));
        assert!(err("lock 1\nhttps://x a 1.0.0\n").contains("fluxgate.lock:2: expected 4 fields"));
        assert!(err("lock 1\nhttps://x a 1.0.0 md5:abc\n").contains("not a sha256"));
        assert!(err("# c\nhttps://x a 1.0.0 sha256:abc\n").contains("expected `lock 1`"));
        assert!(Lock::parse("# only comments\n", "l").is_ok_and(|l| l.is_empty()));
    }

    #[test]
    fn read_and_write_files() {
        let dir = crate::cache::tests::tempdir("lock");
        let path = dir.join(LOCK_FILE);
        assert_eq!(Lock::read(&path).expect("absent is empty"), Lock::default());
        let mut lock = Lock::default();
        lock.insert(entry("https://c.example", "x", "0.1.0"));
        lock.write(&path).expect("written");
        assert_eq!(Lock::read(&path).expect("read"), lock);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn git_lines_record_the_ref() {
        use crate::sources::Want;
        let c = "0123456789abcdef0123456789abcdef01234567";
        let range = Want::Semver(">=1.0.0 <2.0.0".into());
        let v = git_version(&range, c);
        assert_eq!(v, format!("semver:>=1.0.0%20<2.0.0@{c}"));
        assert_eq!(split_git_version(&v), (Some("semver:>=1.0.0%20<2.0.0"), c));
        assert!(git_entry_matches(&range, &v));
        assert!(!git_entry_matches(&Want::Semver(">=2.0.0".into()), &v));
        let branch = Want::GitRev("refs/heads/main".into());
        let tag = Want::GitRev("refs/tags/v1".into());
        let on_branch = git_version(&branch, c);
        assert_eq!(on_branch, format!("refs/heads/main@{c}"));
        assert!(git_entry_matches(&branch, &on_branch) && !git_entry_matches(&tag, &on_branch));
        // A commit ref is the bare commit; a bare commit (an old lock) matches no branch.
        let pin = Want::GitRev(c.into());
        assert_eq!(git_version(&pin, c), c);
        assert!(git_entry_matches(&pin, c) && !git_entry_matches(&branch, c));
        assert_eq!(
            git_version(&Want::Semver("%x".into()), c),
            format!("semver:%25x@{c}")
        );
        // The line parses back into the same four fields.
        let mut lock = Lock::default();
        lock.insert(LockEntry {
            source: "https://git.example/charts".into(),
            chart: "charts/demo".into(),
            version: v,
            digest: Digest::of(b"x"),
        });
        assert_eq!(Lock::parse(&lock.to_text(), "t").expect("parses"), lock);
    }
}
