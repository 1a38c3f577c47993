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

use std::io::Write as _;
use std::path::PathBuf;

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

/// The corpus folder from `FLUXGATE_CORPUS`, or `None` after [`missing`] said why.
#[must_use]
pub fn corpus(test: &str) -> Option<PathBuf> {
    match std::env::var_os("FLUXGATE_CORPUS").map(PathBuf::from) {
        Some(dir) if dir.join("gitops").is_dir() => Some(dir),
        Some(dir) => {
            missing(
                test,
                &format!("FLUXGATE_CORPUS={} has no gitops/ folder", dir.display()),
            );
            None
        }
        None => {
            missing(test, "FLUXGATE_CORPUS is not set");
            None
        }
    }
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
