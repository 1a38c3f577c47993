//! Every `check` format on the two example repositories, as insta snapshots of stdout and the
//! exit code: a change in any renderer (or in what a rule says) shows up as a reviewed diff.
//!
//! The output is deterministic by construction (paths are relative to the repository, findings
//! are sorted, no timings). The one value that changes on its own is the crate version in
//! SARIF's `tool.driver.version`; it is replaced by `[version]`.

use std::process::Command;

use super::workspace;

const FORMATS: [&str; 6] = ["text", "json", "sarif", "junit", "github", "markdown"];

/// `fluxgate check REPO --format FORMAT` with colour settings cleared: stdout is a pipe, so
/// the text is plain whatever the caller's environment says.
fn check(repo: &str, format: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .args(["check", repo, "--format", format])
        .current_dir(workspace())
        .env_remove("CLICOLOR_FORCE")
        .env_remove("FORCE_COLOR")
        .output()
        .expect("the fluxgate binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).replace(
        &format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION")),
        "\"version\": \"[version]\"",
    );
    let code = out
        .status
        .code()
        .map_or_else(|| "none".to_string(), |c| c.to_string());
    format!("exit code: {code}\n---\n{stdout}")
}

fn snapshot_every_format(example: &str) {
    for format in FORMATS {
        let out = check(&format!("examples/{example}"), format);
        insta::assert_snapshot!(format!("{example}-{format}"), out);
    }
}

#[test]
fn check_homelab_broken_in_every_format() {
    snapshot_every_format("homelab-broken");
}

#[test]
fn check_homelab_in_every_format() {
    snapshot_every_format("homelab");
}
