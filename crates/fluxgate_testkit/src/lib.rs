//! What fluxgate's differential and corpus tests share: where the corpus is
//! (`FLUXGATE_CORPUS`), and how a test that lacks its corpus or oracle skips. Outside CI it
//! skips *visibly*: the message goes straight to the terminal's stderr, past the test
//! harness's output capture, so `cargo test` shows it. Under `CI=true` a missing corpus or
//! oracle is a failure, never a silent pass.
//!
//! ```
//! // In a test: `let Some(corpus) = fluxgate_testkit::corpus() else { return };`
//! assert!(!fluxgate_testkit::under_ci() || std::env::var("CI").as_deref() == Ok("true"));
//! ```

pub mod server;

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// What helm printed as its error, from its stderr: the text after `Error: ` (warnings may come
/// before it), without the hint helm adds after a blank line.
#[must_use]
pub fn helm_error(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let msg = text
        .find("Error: ")
        .map_or(text.as_ref(), |i| &text[i + "Error: ".len()..]);
    msg.split("\n\nUse --debug")
        .next()
        .unwrap_or(msg)
        .trim_end()
        .to_string()
}

/// Whether the tests run in CI (`CI=true`), where nothing they need may be missing.
#[must_use]
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Reports that a test cannot run because `what` is missing: a panic under CI, else a line
/// on stderr that the harness does not capture.
///
/// # Panics
/// Under `CI=true`: the test must not pass without what it needs.
pub fn missing(test: &str, what: &str) {
    assert!(
        !under_ci(),
        "{test}: {what} (CI=true: a missing corpus or oracle is a failure)"
    );
    let _ = writeln!(std::io::stderr(), "skipping {test}: {what}");
}

/// Why a test cannot have what it needs: the reason [`missing`] reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("FLUXGATE_CORPUS is not set")]
    CorpusUnset,
    #[error("FLUXGATE_CORPUS={} has no gitops/ folder", .0.display())]
    CorpusWithoutGitops(PathBuf),
    #[error("the Go toolchain (go) is not on the PATH nor at /usr/local/go/bin")]
    NoGo,
    #[error("{} holds no Go oracle", .0.display())]
    NoOracleSources(PathBuf),
    /// `go` could not be started.
    #[error("running {}: {source}", go.display())]
    Spawn { go: PathBuf, source: std::io::Error },
    /// `go build` or `go install` ran and failed (offline, a bad module).
    #[error("{doing} the Go oracle {what} failed: {stderr}")]
    Build {
        doing: &'static str,
        what: String,
        stderr: String,
    },
    /// The private build output could not be renamed into the cache, and no other test's is
    /// there.
    #[error("the Go oracle was {done} but could not be moved in place")]
    NotMoved { done: &'static str },
}

/// `Ok`, or `None` after [`missing`] reported the error.
fn or_missing(test: &str, found: Result<PathBuf, Error>) -> Option<PathBuf> {
    found.map_err(|e| missing(test, &e.to_string())).ok()
}

/// The corpus folder from `FLUXGATE_CORPUS`, or `None` after [`missing`] said why.
#[must_use]
pub fn corpus(test: &str) -> Option<PathBuf> {
    or_missing(test, corpus_dir())
}

fn corpus_dir() -> Result<PathBuf, Error> {
    let dir = std::env::var_os("FLUXGATE_CORPUS")
        .map(PathBuf::from)
        .ok_or(Error::CorpusUnset)?;
    if dir.join("gitops").is_dir() {
        Ok(dir)
    } else {
        Err(Error::CorpusWithoutGitops(dir))
    }
}

/// The files below `dir` (symlinks not followed) whose extension `keep` accepts, in path
/// order.
#[must_use]
pub fn files_below(dir: &Path, keep: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_symlink() {
            continue;
        }
        if p.is_dir() {
            out.extend(files_below(&p, keep));
        } else if p.extension().and_then(|e| e.to_str()).is_some_and(keep) {
            out.push(p);
        }
    }
    out
}

/// Whether `kubectl` (the kustomize oracle) runs; [`missing`] is called when it does not.
#[must_use]
pub fn kubectl(test: &str) -> bool {
    let ok = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        missing(test, "kubectl is not on the PATH");
    }
    ok
}

/// `ENV FILE:LINE` for each environment a finding was seen in (one finding lists them all; `-`
/// for no environment or no location): the form of the rule fixtures' `expected.txt`.
#[must_use]
pub fn finding_keys(d: &fluxgate_diagnostics::Diagnostic) -> Vec<String> {
    let envs: Vec<&str> = if d.environments.is_empty() {
        vec![d.environment.as_deref().unwrap_or("-")]
    } else {
        d.environments.iter().map(String::as_str).collect()
    };
    envs.into_iter()
        .map(|env| match &d.location {
            Some(l) => format!("{env} {}:{}", l.file, l.line),
            None => format!("{env} -"),
        })
        .collect()
}

/// The Go toolchain for the oracles written in Go: `$GO`, else `go` on the PATH, else
/// `/usr/local/go/bin/go`; `None` after [`missing`] said why.
#[must_use]
pub fn go(test: &str) -> Option<PathBuf> {
    or_missing(test, find_go())
}

fn find_go() -> Result<PathBuf, Error> {
    let candidates = [
        std::env::var_os("GO").map(PathBuf::from),
        Some(PathBuf::from("go")),
        Some(PathBuf::from("/usr/local/go/bin/go")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|go| {
            std::process::Command::new(go)
                .arg("version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .ok_or(Error::NoGo)
}

/// The workspace root (where `oracles/` and `target/` are).
#[must_use]
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .nth(2)
        .map_or_else(|| here.clone(), std::path::Path::to_path_buf)
}

/// Builds the Go oracle `oracles/<name>` (its own `go.mod`, `go.sum`, `*.go`) with the
/// machine's Go and the Go module proxy, once per source: the binary is cached in
/// `target/oracles/<name>-<hash of the sources and the Go version>`. `None` after [`missing`]
/// said why (no Go; a build that fails, e.g. offline, is a failure under CI too).
///
/// # Panics
/// Under `CI=true`, when Go is missing or the build fails.
#[must_use]
pub fn go_oracle(test: &str, name: &str) -> Option<PathBuf> {
    or_missing(test, build_oracle(test, name))
}

fn build_oracle(test: &str, name: &str) -> Result<PathBuf, Error> {
    let go = find_go()?;
    let src = workspace_root().join("oracles").join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&src)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.extension().is_some_and(|e| e == "go")
            || p.file_name()
                .is_some_and(|n| n == "go.mod" || n == "go.sum")
    });
    files.sort();
    if files.is_empty() {
        return Err(Error::NoOracleSources(src));
    }
    let version = std::process::Command::new(&go)
        .arg("version")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let mut hash = Fnv::default();
    hash.write(&version);
    for f in &files {
        hash.write(
            f.file_name()
                .map(std::ffi::OsStr::as_encoded_bytes)
                .unwrap_or_default(),
        );
        hash.write(&std::fs::read(f).unwrap_or_default());
    }
    let out_dir = workspace_root().join("target").join("oracles");
    let bin = out_dir.join(format!("{name}-{:016x}", hash.0));
    if bin.is_file() {
        return Ok(bin);
    }
    let _ = std::fs::create_dir_all(&out_dir);
    // Built under a private name and renamed, so that tests building at once never run a
    // half-written binary.
    let tmp = out_dir.join(format!("{name}.{}.tmp", std::process::id()));
    let _ = writeln!(
        std::io::stderr(),
        "{test}: building the Go oracle {name} (first run: a few minutes)"
    );
    let built = std::process::Command::new(&go)
        .args(["build", "-mod=readonly", "-trimpath", "-o"])
        .arg(&tmp)
        .arg(".")
        .current_dir(&src)
        .output();
    settle(
        &go,
        built,
        (&tmp, &bin),
        bin.clone(),
        ("built", "building", name),
    )
}

/// Installs a Go command from the module proxy (`go install PACKAGE@VERSION`, e.g.
/// `helm.sh/helm/v4/cmd/helm@v4.3.2`) once per Go version: the binary is cached in
/// `target/oracles/<name>-<hash of the package and the Go version>/`. `None` after
/// [`missing`] said why.
///
/// # Panics
/// Under `CI=true`, when Go is missing or the install fails.
#[must_use]
pub fn go_install_oracle(test: &str, name: &str, package: &str) -> Option<PathBuf> {
    or_missing(test, install_oracle(test, name, package))
}

fn install_oracle(test: &str, name: &str, package: &str) -> Result<PathBuf, Error> {
    let go = find_go()?;
    let version = std::process::Command::new(&go)
        .arg("version")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let mut hash = Fnv::default();
    hash.write(&version);
    hash.write(package.as_bytes());
    let dir = workspace_root()
        .join("target")
        .join("oracles")
        .join(format!("{name}-{:016x}", hash.0));
    let bin = dir.join(name);
    if bin.is_file() {
        return Ok(bin);
    }
    // Installed into a private folder and renamed, so that tests installing at once never
    // run a half-written binary.
    let tmp = dir.with_extension(format!("{}.tmp", std::process::id()));
    let _ = std::fs::create_dir_all(&tmp);
    let _ = writeln!(
        std::io::stderr(),
        "{test}: installing the Go oracle {package} (first run: several minutes)"
    );
    let built = std::process::Command::new(&go)
        .args(["install", package])
        .env("GOBIN", &tmp)
        .output();
    settle(
        &go,
        built,
        (&tmp, &dir),
        bin,
        ("installed", "installing", package),
    )
}

/// The end of a Go build or install into the private `tmp`: renamed to `dest` (a rename
/// another test won is fine when `bin` is there). `how`: the past and the gerund of what Go
/// did, and what it did it to.
fn settle(
    go: &Path,
    built: std::io::Result<std::process::Output>,
    (tmp, dest): (&Path, &Path),
    bin: PathBuf,
    (done, doing, what): (&'static str, &'static str, &str),
) -> Result<PathBuf, Error> {
    let output = built.map_err(|source| Error::Spawn {
        go: go.to_path_buf(),
        source,
    })?;
    if !output.status.success() {
        return Err(Error::Build {
            doing,
            what: what.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    if std::fs::rename(tmp, dest).is_err() && !bin.is_file() {
        return Err(Error::NotMoved { done });
    }
    Ok(bin)
}

/// FNV-1a, 64 bits: a stable hash for cache names (not for security).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// CPU time (user + system) of this process so far, in seconds, from `/proc/self/stat`
/// (clock ticks of 10 ms); 0 where that file does not exist. For the benchmark examples,
/// which report CPU beside wall time on a shared machine.
#[must_use]
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime: fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}
