//! The CLI integration binary: runs `fluxgate` on the example repositories and checks output
//! and exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

mod charts;
mod diff;
mod fail_closed;
mod fetch_cli;
mod formats;
mod hostile;
mod html;
mod policy_test;
mod secrets;
mod template_cli;
mod trust;

/// Held by the tests that measure time (the hostile inputs' time limit) and by those that
/// keep the cores busy for minutes (every corpus repository's HTML page): run side by side on
/// two cores, the first would time out for the second's sake.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`HEAVY`], whatever a test that panicked while holding it left behind.
fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The JSON a command printed, after asserting it exited 0 (its stderr is the message).
fn json_ok(args: &[&str]) -> serde_json::Value {
    json_exit(args, 0)
}

/// The JSON a command printed, after asserting it exited with `code` (its stderr is the
/// message).
fn json_exit(args: &[&str], code: i32) -> serde_json::Value {
    let out = fluxgate(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn fluxgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .args(args)
        .current_dir(workspace())
        .output()
        .expect("the fluxgate binary runs")
}

#[test]
fn envs_json_lists_the_example_environments() {
    let v = json_ok(&["envs", "examples/homelab", "--format", "json"]);
    let names: Vec<&str> = v
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["dev", "prod"]);
    assert_eq!(v[1]["flux"], "clusters/prod");
    assert_eq!(v[1]["ansible"]["group"], "k3s_prod");
    assert_eq!(v[1]["vip"], "192.168.2.9");
    assert_eq!(
        v[1]["why"],
        "declared in fluxgate.yaml (fluxgate.yaml:14:5)"
    );
}

/// Two discovered clusters sharing one inventory folder, a hosts file each: each gets its
/// own file and its own VIP, and a VIP that only an encrypted file holds is never printed.
#[test]
fn envs_json_maps_each_cluster_to_its_own_hosts() {
    let dir = std::env::temp_dir().join(format!("fluxgate-cli-envs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = [
        ("kubernetes/kyak/flux/config/cluster.yaml", "kyak"),
        ("kubernetes/sol/flux/config/cluster.yaml", "sol"),
        ("kubernetes/lab/flux/config/cluster.yaml", "lab"),
    ];
    for (file, name) in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("temp dir");
        std::fs::write(
            path,
            format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: cluster}}\nspec:\n  path: ./kubernetes/{name}/flux\n"),
        )
        .expect("write");
    }
    let inv = dir.join("ansible/inventory");
    std::fs::create_dir_all(inv.join("host_vars/l1")).expect("temp dir");
    std::fs::write(
        dir.join("ansible/ansible.cfg"),
        "[defaults]\ninventory = inventory\n",
    )
    .expect("write");
    std::fs::write(
        inv.join("kyak-hosts.yaml"),
        "k3s:\n  hosts:\n    k1:\n  vars: {kube_vip_address: 10.0.1.9}\n",
    )
    .expect("write");
    std::fs::write(
        inv.join("sol-hosts.yaml"),
        "k3s:\n  hosts:\n    s1:\n  vars: {kube_vip_address: 10.0.2.9}\n",
    )
    .expect("write");
    std::fs::write(inv.join("lab-hosts.yaml"), "k3s:\n  hosts:\n    l1:\n").expect("write");
    std::fs::write(
        inv.join("host_vars/l1/vip.sops.yaml"),
        "kube_vip_address: 10.6.6.6\nsops: {version: 3.8.1}\n",
    )
    .expect("write");
    let out = fluxgate(&[
        "envs",
        dir.to_str().expect("utf-8 path"),
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows: Vec<(String, String, String)> = v
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap_or("").to_string(),
                e["ansible"]["inventory"].as_str().unwrap_or("").to_string(),
                e["vip"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "kyak".into(),
                "ansible/inventory/kyak-hosts.yaml".into(),
                "\"10.0.1.9\"".into()
            ),
            (
                "lab".into(),
                "ansible/inventory/lab-hosts.yaml".into(),
                "null".into()
            ),
            (
                "sol".into(),
                "ansible/inventory/sol-hosts.yaml".into(),
                "\"10.0.2.9\"".into()
            ),
        ]
    );
    assert!(
        v[0]["why"]
            .as_str()
            .is_some_and(|w| w.contains("its name names `kyak`")),
        "{}",
        v[0]["why"]
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("10.6.6.6"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreadable_repository_exits_2() {
    let out = fluxgate(&["envs", "does/not/exist"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open repository"));
}

#[test]
fn bad_config_is_a_finding_with_its_line() {
    let dir = std::env::temp_dir().join(format!("fluxgate-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("fluxgate.yaml"),
        "environments:\n  prod:\n    flux: clusters/prod\n    vpi: 1.2.3.4\n",
    )
    .expect("write");
    let out = fluxgate(&["envs", dir.to_str().expect("utf-8 path")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text.contains("fluxgate.yaml:4:") && text.contains("did you mean `vip`"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- fluxgate check, rules, explain ----

const CHECK_FORMATS: [&str; 7] = [
    "text", "json", "sarif", "junit", "github", "markdown", "html",
];

fn check(repo: &str, format: &str) -> (Option<i32>, String) {
    let out = fluxgate(&["check", repo, "--format", format]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Each format is well formed: JSON parses with the SPEC §4 shape, SARIF is 2.1.0 with
/// results, JUnit is XML, text ends with the decision.
fn assert_well_formed(format: &str, out: &str, passed: bool) {
    let decision = if passed { "PASS" } else { "FAIL" };
    match format {
        "text" => assert!(
            out.trim_end().ends_with(&format!("MERGE GATE: {decision}")),
            "{out}"
        ),
        "json" => {
            let v: serde_json::Value = serde_json::from_str(out).expect("check JSON");
            assert_eq!(v["decision"], if passed { "pass" } else { "fail" });
            assert_eq!(v["layers"]["L0"], "ran");
            assert_eq!(v["layers"]["L1"], "ran");
            assert_eq!(v["layers"]["L2"], "skipped: no cluster");
            assert_eq!(v["layers"]["L3"], "skipped: no cluster");
            assert_eq!(v["environments"], serde_json::json!(["dev", "prod"]));
            assert!(v["summary"]["errors"].is_u64() && v["summary"]["warnings"].is_u64());
            for d in v["diagnostics"].as_array().expect("diagnostics") {
                for k in [
                    "rule",
                    "severity",
                    "environment",
                    "file",
                    "line",
                    "column",
                    "message",
                    "requirements",
                    "related",
                ] {
                    assert!(d.get(k).is_some(), "{k} missing in {d}");
                }
                let file = d["file"].as_str().unwrap_or("");
                assert!(!file.starts_with('/'), "absolute path {file}");
            }
        }
        "sarif" => {
            let v: serde_json::Value = serde_json::from_str(out).expect("SARIF JSON");
            assert_eq!(v["version"], "2.1.0");
            assert!(v["runs"][0]["results"].is_array(), "{out}");
            // Every rule a result names is listed in tool.driver.rules.
            let listed: Vec<&str> = v["runs"][0]["tool"]["driver"]["rules"]
                .as_array()
                .expect("SARIF rules")
                .iter()
                .filter_map(|r| r["id"].as_str())
                .collect();
            for r in v["runs"][0]["results"].as_array().expect("results") {
                let id = r["ruleId"].as_str().unwrap_or_default();
                assert!(listed.contains(&id), "{id} is not in {listed:?}");
            }
        }
        "junit" => {
            assert!(out.starts_with("<?xml"), "{out}");
            assert!(out.contains("<testsuites") && out.trim_end().ends_with("</testsuites>"));
            assert_eq!(
                out.matches("<testsuite ").count(),
                out.matches("</testsuite>").count()
            );
        }
        "github" | "markdown" => assert!(out.contains(decision), "{out}"),
        "html" => {
            assert!(out.starts_with("<!DOCTYPE html>"), "{out}");
            assert!(out.contains(&format!("MERGE GATE: {decision}")));
            assert!(out.trim_end().ends_with("</html>"));
        }
        _ => unreachable!(),
    }
}

#[test]
fn check_passes_the_example_in_every_format() {
    for format in CHECK_FORMATS {
        let (code, out) = check("examples/homelab", format);
        assert_eq!(code, Some(0), "homelab --format {format}:\n{out}");
        assert_well_formed(format, &out, true);
    }
}

#[test]
fn check_fails_the_broken_example_in_every_format_naming_each_rule() {
    for format in CHECK_FORMATS {
        let (code, out) = check("examples/homelab-broken", format);
        assert_eq!(code, Some(1), "homelab-broken --format {format}:\n{out}");
        assert_well_formed(format, &out, false);
    }
    let (_, out) = check("examples/homelab-broken", "json");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let rules: Vec<&str> = v["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["rule"].as_str())
        .collect();
    // Every registered rule fires on the broken example, and its contract too.
    let listed = fluxgate(&["rules", "--format", "json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("rules JSON");
    let registered: Vec<&str> = listed
        .as_array()
        .expect("a list of rules")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(registered.len() >= 9, "{registered:?}");
    // `config` is a mistake in fluxgate.yaml, which the broken example does not make; a
    // contract's findings are `contract:<id>`.
    for rule in registered.iter().copied().filter(|r| *r != "config") {
        let fired = rules.iter().any(|r| {
            *r == rule
                || (rule == "contract" && r.starts_with("contract:"))
                || (rule == "policy" && r.starts_with("policy:"))
        });
        assert!(fired, "{rule} did not fire: {rules:?}");
    }
    assert!(rules.contains(&"contract:cni-dials-vip"), "{rules:?}");
    // Values of secrets are never printed.
    assert!(!out.contains("glsa_fake"), "a secret value leaked");
}

#[test]
fn check_exit_codes_and_environment_selection() {
    let out = fluxgate(&["check", "examples/homelab-broken", "--env", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let out = fluxgate(&["check", "examples/does-not-exist"]);
    assert_eq!(out.status.code(), Some(2));
    let out = fluxgate(&["check", "examples/homelab-broken", "--format", "yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let out = fluxgate(&[
        "check",
        "examples/homelab-broken",
        "--env",
        "prod",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["environments"], serde_json::json!(["prod"]));
    assert!(
        v["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .all(|d| d["environment"] != "dev")
    );
}

#[test]
fn rules_and_explain() {
    let out = fluxgate(&["rules", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let names: Vec<&str> = v
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    for name in names {
        let out = fluxgate(&["explain", name]);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        for h in [
            "## What it checks",
            "## Why it matters",
            "## Example",
            "## How to fix",
        ] {
            assert!(text.contains(h), "{name}: {h}");
        }
    }
    // A contract's findings name `contract:<id>`; explain describes contracts for any id.
    let out = fluxgate(&["explain", "contract:cni-dials-vip"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("contract (error, per environment)"));
    for name in ["config", "render", "contract"] {
        assert_eq!(
            fluxgate(&["explain", name]).status.code(),
            Some(0),
            "{name}"
        );
    }
    assert_eq!(
        fluxgate(&["explain", "no-such-rule"]).status.code(),
        Some(2)
    );
}

// ---- fluxgate render --kustomization ----

/// kubectl's load restrictor, whatever the current directory: a file above DIR is refused,
/// inside a git repository and outside one, from the repository's root or from elsewhere.
#[test]
fn render_kustomization_refuses_files_above_dir() {
    let tmp = std::env::temp_dir().join(format!("fluxgate-restrict-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    for repo in ["plain", "git"] {
        let root = tmp.join(repo);
        std::fs::create_dir_all(root.join("app")).expect("temp dir");
        std::fs::create_dir_all(root.join("base")).expect("temp dir");
        if repo == "git" {
            std::fs::create_dir_all(root.join(".git")).expect("temp dir");
        }
        let cm =
            |name: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n");
        std::fs::write(root.join("outside.yaml"), cm("outside")).expect("write");
        std::fs::write(root.join("app/inside.yaml"), cm("inside")).expect("write");
        std::fs::write(root.join("base/base.yaml"), cm("base")).expect("write");
        std::fs::write(
            root.join("base/kustomization.yaml"),
            "resources: [base.yaml]\n",
        )
        .expect("write");
        std::fs::write(
            root.join("app/kustomization.yaml"),
            "resources:\n  - ../outside.yaml\n  - ../base\n  - inside.yaml\n",
        )
        .expect("write");
        for cwd in [root.clone(), root.join("app"), PathBuf::from("/")] {
            let dir = root.join("app");
            let out = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
                .args([
                    "render",
                    "--kustomization",
                    dir.to_str().expect("utf-8 path"),
                ])
                .current_dir(&cwd)
                .output()
                .expect("the fluxgate binary runs");
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            let at = format!("{repo} repository, from {}", cwd.display());
            assert_eq!(out.status.code(), Some(1), "{at}: {stderr}");
            // Outside any repository, with DIR as the current directory, DIR is also the
            // repository root: the file is refused as outside it.
            let refused = stderr
                .contains("kustomization.yaml:2: error: resource \"../outside.yaml\": security; file")
                || (repo == "plain"
                    && cwd == root.join("app")
                    && stderr.contains(
                        "kustomization.yaml:2: error: resource \"../outside.yaml\" is outside the repository root",
                    ));
            assert!(refused, "{at}: {stderr}");
            assert!(!stdout.contains("name: outside"), "{at}: {stdout}");
            assert!(stdout.contains("name: inside"), "{at}: {stdout}");
            if repo == "git" || cwd == root {
                // The base is inside the repository (or the current directory): read, as kubectl does.
                assert!(stdout.contains("name: base"), "{at}: {stdout}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A value's origin is its whole history, made by the renderers: the variable definition an
/// overlay patch set, the `${VAR}` that consumed it, and the base value the patch replaced.
#[test]
fn values_json_gives_the_whole_origin_chain() {
    let v = json_ok(&[
        "values",
        "examples/homelab",
        "--env",
        "prod",
        "kube-system/cilium",
        "--format",
        "json",
    ]);
    let chain: Vec<String> = v["origins"]["k8sServiceHost"]
        .as_array()
        .expect("a chain")
        .iter()
        .map(|o| {
            format!(
                "{}:{} {}",
                o["file"].as_str().unwrap_or(""),
                o["line"],
                o["via"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        chain,
        [
            "clusters/prod/cluster-vars-patch.yaml:12 substituted from variable K3S_API_HOST",
            "platform/cilium/helmrelease.yaml:46 inline values",
            "clusters/base/cluster-vars.yaml:14 the base value, replaced by a kustomize patch",
        ]
    );
}
