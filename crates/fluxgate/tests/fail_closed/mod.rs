//! Fail closed (the trust issue, §1): a run that could not check something never says PASS
//! about it. Each case is a small repository written to a temporary folder; each assertion
//! failed on the behaviour before it was fixed (exit 0 and `MERGE GATE: PASS`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::fluxgate;

/// A temporary repository from `(path, text)` pairs; removed when dropped.
struct Repo(PathBuf);

impl Repo {
    fn new(case: &str, files: &[(&str, &str)]) -> Repo {
        let dir = std::env::temp_dir().join(format!("fluxgate-fc-{case}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
            std::fs::write(&p, text).expect("write");
        }
        std::fs::create_dir_all(&dir).expect("mkdir");
        Repo(dir)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 path")
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n";

#[test]
fn a_repository_without_environments_exits_2() {
    let repo = Repo::new("none", &[("README.md", "nothing here\n")]);
    let out = fluxgate(&["check", repo.path()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("discovery found no environment"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("PASS"));

    let repo = Repo::new("empty-config", &[("fluxgate.yaml", "environments: {}\n")]);
    let out = fluxgate(&["check", repo.path()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn a_missing_outside_or_empty_flux_folder_is_never_checked_as_empty() {
    let repo = Repo::new(
        "bad-flux",
        &[
            (
                "fluxgate.yaml",
                "environments:\n  prod:\n    flux: clusters/prd\n",
            ),
            ("clusters/prod/cm.yaml", CM),
        ],
    );
    let out = fluxgate(&["check", repo.path()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("fluxgate.yaml:3:11: flux `clusters/prd` does not exist"),
        "{}",
        text(&out)
    );
    for (case, flux) in [("outside", "../"), ("empty", "empty")] {
        let repo = Repo::new(
            case,
            &[
                (
                    "fluxgate.yaml",
                    &format!("environments:\n  prod:\n    flux: {flux}\n"),
                ),
                ("empty/.keep", ""),
            ],
        );
        let out = fluxgate(&["check", repo.path()]);
        assert_eq!(out.status.code(), Some(2), "{case}: {}", text(&out));
    }
    // One bad environment among good ones: an error finding at the config line, FAIL.
    let repo = Repo::new(
        "one-bad",
        &[
            (
                "fluxgate.yaml",
                "environments:\n  prod:\n    flux: clusters/prod\n  dev:\n    flux: clusters/dve\n",
            ),
            ("clusters/prod/cm.yaml", CM),
        ],
    );
    let out = fluxgate(&["check", repo.path(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["decision"], "fail");
    let d = &v["diagnostics"][0];
    assert_eq!(
        (d["rule"].as_str(), d["line"].as_u64()),
        (Some("config"), Some(5))
    );
}

#[test]
fn config_values_are_typed_and_rule_keys_checked() {
    let repo = Repo::new(
        "types",
        &[
            (
                "fluxgate.yaml",
                "environments:\n  prod:\n    flux: clusters/prod\n    vip: not_an_ip!\ncharts: 42\ncontracts: \"x\"\nrules:\n  render: {enabeld: false}\n",
            ),
            ("clusters/prod/cm.yaml", CM),
        ],
    );
    let out = fluxgate(&["check", repo.path()]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    for needle in [
        "vip `not_an_ip!` is neither an IP address nor a DNS name",
        "charts must be a string",
        "contracts must be a list",
        "unknown key `enabeld` in rules.render (did you mean `enabled`?)",
    ] {
        assert!(t.contains(needle), "missing {needle:?} in\n{t}");
    }
}

#[test]
fn a_broken_bootstrap_template_fails_the_gate() {
    let repo = Repo::new(
        "template",
        &[
            (
                "fluxgate.yaml",
                "environments:\n  prod:\n    flux: clusters/prod\n    ansible:\n      inventory: ansible/hosts.yml\n      playbook: ansible/site.yml\n",
            ),
            ("clusters/prod/cm.yaml", CM),
            (
                "ansible/hosts.yml",
                "all:\n  hosts:\n    node-1: {ansible_host: 10.0.0.1}\n    node-2: {ansible_host: 10.0.0.2}\n",
            ),
            (
                "ansible/site.yml",
                "- hosts: all\n  tasks:\n    - name: config\n      ansible.builtin.template:\n        src: templates/config.yaml.j2\n        dest: /etc/x.yaml\n    - name: other\n      ansible.builtin.template:\n        src: templates/broken.j2\n        dest: /etc/y\n",
            ),
            (
                "ansible/templates/config.yaml.j2",
                "server: {{ ansible_host }}\ntoken: {{ never_defined }}\n",
            ),
            ("ansible/templates/broken.j2", "a: 1\n{% if %}\n"),
        ],
    );
    let out = fluxgate(&["check", repo.path()]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("ansible/templates/config.yaml.j2:2:"), "{t}");
    assert!(t.contains("ansible/templates/broken.j2:2:"), "{t}");
    assert!(t.contains("the same error on 2 hosts"), "{t}");
    assert!(t.contains("MERGE GATE: FAIL"), "{t}");
}

#[test]
fn render_filters_that_match_nothing_say_so() {
    let out = fluxgate(&[
        "render",
        "examples/homelab",
        "--env",
        "prod",
        "--kind",
        "NoSuchKind",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no object of environment prod matches kind NoSuchKind"));
}

#[test]
fn a_closed_pipe_keeps_the_gate_code() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .args(["check", "examples/homelab-broken"])
        .current_dir(workspace)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // The reader goes away before the gate prints (`check | head -0`).
    drop(child.stdout.take());
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(1));
}
