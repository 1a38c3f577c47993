//! Issue 20's classes of false alarms, junk or missing environments and fidelity gaps, each a
//! minimal repository under `tests/fixtures/trust/<case>/` shaped like the real repository it
//! was seen on, and the whole output of one command on it as an insta snapshot (exit code,
//! stdout, stderr). The rule classes have their fixtures with the rule
//! (`fluxgate_rules/tests/fixtures/<rule>/`).

use std::process::Command;

use super::workspace;

/// `(case, command and arguments before the repository, arguments after it)`; one command
/// per case and command (the snapshot is named after both).
const CASES: &[(&str, &[&str], &[&str])] = &[
    // 1: Secrets an operator creates from a custom resource of the render (a PostgresUser's
    // `secretName`, an OIDC client's `clientSecretName`), learned from the resources: a note
    // naming the resource, no error.
    ("operator-created-secret", &["check"], &[]),
    // 7: an app's ks.yaml that reconciles its own folder, wired in by the cluster's apps
    // Kustomization, is no cluster: one environment, `main`.
    ("junk-app-root", &["envs"], &[]),
    // 8: roots applied by hand (`kubectl apply -k clusters/NAME` creates the root
    // Kustomization, which reconciles `kubernetes/NAME`): two environments.
    ("hand-applied-root", &["envs"], &[]),
    // 8: one cluster found through a legacy root Kustomization and a FluxInstance whose sync
    // path lies inside it: one environment, whose reason names both.
    ("legacy-and-instance", &["envs"], &[]),
    // 8: a shared flux-instance release whose values each cluster's overlay (applied by
    // hand) generates from its own file, in another folder than the release: one environment
    // per overlay, each at its sync path.
    ("instance-values-overlay", &["envs"], &[]),
    // 8: a folder of a larger Git repository checked on its own (`spec.path:
    // ./infra/clusters/prod` for `clusters/prod` here, as flux-local's test data is kept): the
    // environment is found and its tree renders, the spec.ignore read the same way.
    ("monorepo-subfolder", &["envs"], &[]),
    (
        "monorepo-subfolder",
        &["render"],
        &["--env", "prod", "--kind", "ConfigMap"],
    ),
    // 8: a repository that Argo CD manages (with an Ansible inventory for its nodes): said so,
    // exit 2, never a Flux PASS.
    ("argo-cd-repo", &["check"], &[]),
    ("argo-cd-repo", &["envs"], &[]),
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
    let canonical = std::fs::canonicalize(workspace().join(&repo)).expect("the fixture exists");
    let clean = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .replace(&canonical.display().to_string(), "[repo]")
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
        let name = format!("trust-{case}-{}", before.join("-"));
        insta::assert_snapshot!(name, run(case, before, after));
    }
}
