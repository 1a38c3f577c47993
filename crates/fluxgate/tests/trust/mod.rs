//! Issue 20's classes of false alarms, junk or missing environments and fidelity gaps, each a
//! minimal repository under `tests/fixtures/trust/<case>/` shaped like the real repository it
//! was seen on, and the whole output of one command on it as an insta snapshot (exit code,
//! stdout, stderr). The rule classes have their fixtures with the rule
//! (`fluxgate_rules/tests/fixtures/<rule>/`).

use std::process::Command;

use super::workspace;

/// `(case, command and arguments before the repository, arguments after it)`.
const CASES: &[(&str, &[&str], &[&str])] = &[
    // 1: Secrets an operator creates from a custom resource of the render (a PostgresUser's
    // `secretName`, an OIDC client's `clientSecretName`), learned from the resources: a note
    // naming the resource, no error.
    ("operator-created-secret", &["check"], &[]),
    // 7: an app's ks.yaml that reconciles its own folder, wired in by the cluster's apps
    // Kustomization, is no cluster: one environment, `main`.
    ("junk-app-root", &["envs"], &[]),
    // 9: the Kustomization that fails substitution applies nothing: only `web` is printed.
    (
        "failed-ks-applies-nothing",
        &["render"],
        &["--env", "main", "--kind", "ConfigMap"],
    ),
];

fn run(case: &str, before: &[&str], after: &[&str]) -> String {
    let repo = format!("crates/fluxgate/tests/fixtures/trust/{case}");
    let out = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .args(before)
        .arg(&repo)
        .args(after)
        .current_dir(workspace())
        .env_remove("CLICOLOR_FORCE")
        .env_remove("FORCE_COLOR")
        .output()
        .expect("the fluxgate binary runs");
    let code = out
        .status
        .code()
        .map_or_else(|| "none".to_string(), |c| c.to_string());
    let prefix = format!("{}/", workspace().join(&repo).display());
    let clean = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .replace(&prefix, "")
            .replace(&format!("{repo}/"), "")
    };
    format!(
        "exit code: {code}\n--- stdout\n{}--- stderr\n{}",
        clean(&out.stdout),
        clean(&out.stderr)
    )
}

#[test]
fn trust_classes() {
    for (case, before, after) in CASES {
        insta::assert_snapshot!(format!("trust-{case}"), run(case, before, after));
    }
}
