//! `fluxgate diff` and `check --base` on small git repositories built here with the git CLI
//! (fixed dates and author, so commit ids and snapshots are stable): a value changed through
//! an overlay patch, a substitution variable changed in a ConfigMap, a chart version bump, a
//! new defect next to an old one, a moved file, a shared base reaching two environments, a
//! Secret that changed, and the bad inputs (no git, no such revision, a shallow clone, a base
//! that cannot be read).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A git repository in a temporary folder, removed when dropped.
struct Repo {
    dir: PathBuf,
}

impl Repo {
    fn new(name: &str) -> Repo {
        let dir = std::env::temp_dir().join(format!("fluxgate-diff-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let repo = Repo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn git(&self, args: &[&str]) -> Output {
        let out = Command::new("git")
            .args(args)
            .current_dir(&self.dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.org")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.org")
            .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &self.dir)
            .output()
            .expect("the git CLI runs (the tests build their repositories with it)");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn write(&self, path: &str, text: &str) {
        let p = self.dir.join(path);
        std::fs::create_dir_all(p.parent().expect("a folder")).expect("folder");
        std::fs::write(p, text).expect("write");
    }

    fn commit(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", msg]);
    }

    fn fluxgate(&self, args: &[&str]) -> Output {
        fluxgate_in(&self.dir, args)
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.fluxgate(args);
        assert!(
            out.status.code().is_some_and(|c| c < 2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fluxgate_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the fluxgate binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Two environments, prod and dev: each a Flux Kustomization of `apps/<env>` substituting
/// from its `cluster-vars` ConfigMap; both overlays build `apps/base`, prod patches replicas.
fn platform(name: &str) -> Repo {
    let r = Repo::new(name);
    r.write(
        "fluxgate.yaml",
        "environments:\n  prod:\n    flux: clusters/prod\n  dev:\n    flux: clusters/dev\n",
    );
    for env in ["prod", "dev"] {
        r.write(
            &format!("clusters/{env}/apps.yaml"),
            &format!(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps/{env}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: flux-system\ndata:\n  DOMAIN: {env}.example.org\n"
            ),
        );
    }
    r.write(
        "apps/base/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n        - name: web\n          image: ghcr.io/acme/web:1.0.0\n          env:\n            - name: HOST\n              value: web.${DOMAIN}\n  selector:\n    matchLabels:\n      app: web\n",
    );
    r.write("apps/base/kustomization.yaml", "resources: [deploy.yaml]\n");
    r.write(
        "apps/prod/kustomization.yaml",
        "resources: [../base]\npatches:\n  - path: replicas.yaml\n",
    );
    r.write(
        "apps/prod/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 2\n",
    );
    r.write("apps/dev/kustomization.yaml", "resources: [../base]\n");
    r.commit("base");
    r
}

fn env<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["environments"]
        .as_array()
        .expect("environments")
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("environment {name} in {report}"))
}

fn object<'a>(env: &'a Value, kind: &str, name: &str) -> &'a Value {
    env["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .find(|o| o["kind"] == kind && o["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name} in {env}"))
}

fn field<'a>(obj: &'a Value, path: &str) -> &'a Value {
    obj["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("field {path} in {obj}"))
}

#[test]
fn a_value_changed_through_an_overlay_patch_names_the_patch() {
    let r = platform("overlay");
    r.write(
        "apps/prod/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 3\n",
    );
    let report = r.json(&["diff", "--format", "json"]);
    let prod = env(&report, "prod");
    let f = field(object(prod, "Deployment", "web"), "spec.replicas");
    assert_eq!(f["old"], "2");
    assert_eq!(f["new"], "3");
    assert_eq!(f["origin"]["file"], "apps/prod/replicas.yaml");
    assert_eq!(f["origin"]["line"], 7);
    assert_eq!(f["base_origin"]["file"], "apps/prod/replicas.yaml");
    // dev does not patch replicas: the change does not reach it.
    assert_eq!(env(&report, "dev")["changed"], false);
    assert_eq!(
        report["reach"],
        serde_json::json!([{"file": "apps/prod/replicas.yaml", "environments": ["prod"]}])
    );
    let text = stdout(&r.fluxgate(&["diff"]));
    insta::assert_snapshot!("diff_overlay_patch_text", text);
}

#[test]
fn a_substitution_variable_changed_in_a_configmap_is_traced_to_it() {
    let r = platform("subst");
    let path = "clusters/prod/apps.yaml";
    let text = std::fs::read_to_string(r.dir.join(path)).expect("read");
    r.write(path, &text.replace("prod.example.org", "prod.acme.org"));
    let report = r.json(&["diff", "--format", "json"]);
    let prod = env(&report, "prod");
    let f = field(
        object(prod, "Deployment", "web"),
        "spec.template.spec.containers[name=web].env[name=HOST].value",
    );
    assert_eq!(f["old"], "web.prod.example.org");
    assert_eq!(f["new"], "web.prod.acme.org");
    // The head origin: where `${DOMAIN}` is written, through the variable's definition.
    assert_eq!(f["origin"]["file"], "apps/base/deploy.yaml");
    assert_eq!(f["origin"]["line"], 15);
    assert_eq!(
        f["origin"]["via"],
        "${DOMAIN} set at clusters/prod/apps.yaml:24"
    );
    let cm = field(object(prod, "ConfigMap", "cluster-vars"), "data.DOMAIN");
    assert_eq!(cm["new"], "prod.acme.org");
    assert_eq!(env(&report, "dev")["changed"], false);
}

#[test]
fn a_shared_base_change_reaches_both_environments() {
    let r = platform("shared");
    let path = "apps/base/deploy.yaml";
    let text = std::fs::read_to_string(r.dir.join(path)).expect("read");
    r.write(path, &text.replace("web:1.0.0", "web:1.1.0"));
    let report = r.json(&["diff", "--format", "json"]);
    for name in ["dev", "prod"] {
        let images = &env(&report, name)["images"];
        assert_eq!(
            images,
            &serde_json::json!([{"object": "Deployment default/web", "container": "web",
                "old": "ghcr.io/acme/web:1.0.0", "new": "ghcr.io/acme/web:1.1.0"}]),
            "{name}"
        );
    }
    assert_eq!(
        report["reach"],
        serde_json::json!([{"file": "apps/base/deploy.yaml", "environments": ["dev", "prod"]}])
    );
    let md = stdout(&r.fluxgate(&["diff", "--format", "markdown"]));
    assert!(
        md.contains("**Shared changes**") && md.contains("`apps/base/deploy.yaml` → dev, prod"),
        "{md}"
    );
    insta::assert_snapshot!("diff_shared_base_markdown", md);
}

#[test]
fn a_chart_version_bump_and_its_values_are_shown_leaf_by_leaf() {
    let r = platform("chart");
    let release = |version: &str, replicas: u32| {
        format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: default\nspec:\n  interval: 10m\n  chart:\n    spec:\n      chart: podinfo\n      version: {version}\n      sourceRef:\n        kind: HelmRepository\n        name: podinfo\n  values:\n    replicaCount: {replicas}\n    ui:\n      color: blue\n"
        )
    };
    r.write("apps/base/release.yaml", &release("6.5.0", 1));
    r.write(
        "apps/base/kustomization.yaml",
        "resources: [deploy.yaml, release.yaml]\n",
    );
    r.commit("a release");
    r.write("apps/base/release.yaml", &release("6.6.0", 2));
    let report = r.json(&["diff", "--format", "json"]);
    for name in ["dev", "prod"] {
        let rel = &env(&report, name)["releases"][0];
        assert_eq!(rel["id"], "default/podinfo");
        assert_eq!(rel["chart"], "podinfo");
        assert_eq!(
            rel["version"],
            serde_json::json!({"old": "6.5.0", "new": "6.6.0"})
        );
        let values = rel["values"].as_array().expect("values");
        assert_eq!(values.len(), 1, "{values:?}");
        assert_eq!(values[0]["path"], "replicaCount");
        assert_eq!(values[0]["old"], "1");
        assert_eq!(values[0]["new"], "2");
        assert_eq!(values[0]["origin"]["file"], "apps/base/release.yaml");
        // The HelmRelease object's own change is the chart version; its values are above.
        let obj = object(env(&report, name), "HelmRelease", "podinfo");
        let paths: Vec<&str> = obj["fields"]
            .as_array()
            .expect("fields")
            .iter()
            .filter_map(|f| f["path"].as_str())
            .collect();
        assert_eq!(paths, ["spec.chart.spec.version"]);
    }
}

#[test]
fn a_secret_that_changed_shows_the_key_never_the_values() {
    let r = platform("secret");
    let secret = |v: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: default\nstringData:\n  password: {v}\n"
        )
    };
    r.write("apps/base/secret.yaml", &secret("hunter2-old-value"));
    r.write(
        "apps/base/kustomization.yaml",
        "resources: [deploy.yaml, secret.yaml]\n",
    );
    r.commit("a secret");
    r.write("apps/base/secret.yaml", &secret("hunter2-new-value"));
    for format in ["text", "markdown", "json"] {
        let out = r.fluxgate(&["diff", "--format", format]);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(
            !all.contains("hunter2"),
            "a secret value in the {format} diff:\n{all}"
        );
    }
    let report = r.json(&["diff", "--format", "json"]);
    let f = field(
        object(env(&report, "prod"), "Secret", "creds"),
        "stringData.password",
    );
    assert_eq!(f["secret"], true);
    assert_eq!(f["status"], "changed");
    assert!(f["old"].is_null() && f["new"].is_null());
    assert!(stdout(&r.fluxgate(&["diff"])).contains("stringData.password: (secret value changed)"));
}

/// An app whose ConfigMap uses a variable nobody defines: a `substitution-undefined` error.
fn with_defect(name: &str) -> Repo {
    let r = platform(name);
    r.write(
        "apps/base/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  host: ${HOTS}\n",
    );
    r.write(
        "apps/base/kustomization.yaml",
        "resources: [deploy.yaml, settings.yaml]\n",
    );
    r.commit("an old defect");
    r
}

fn baselines(report: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            (
                d["baseline"].as_str().unwrap_or("?").to_string(),
                d["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_new_defect_next_to_an_old_one_is_the_only_new_finding() {
    let r = with_defect("newdefect");
    // The old defect stays, a second one is written beside it.
    r.write(
        "apps/base/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  host: ${HOTS}\n  port: ${PORTT}\n",
    );
    let report = r.json(&["check", "--base", "HEAD", "--format", "json"]);
    let b = baselines(&report);
    assert_eq!(b.len(), 4, "{b:?}"); // two defects, each in two environments
    assert!(
        b.iter()
            .filter(|(k, _)| k == "new")
            .all(|(_, m)| m.contains("PORTT")),
        "{b:?}"
    );
    assert!(
        b.iter()
            .filter(|(k, _)| k == "existing")
            .all(|(_, m)| m.contains("HOTS")),
        "{b:?}"
    );
    assert_eq!(b.iter().filter(|(k, _)| k == "new").count(), 2, "{b:?}");
    // The two old errors and the schema layer's note on the kinds it has no schema for.
    assert_eq!(report["baseline"]["existing"], 3);
    assert_eq!(report["baseline"]["fixed"], 0);
    // A new error fails the gate even with --new-only.
    let out = r.fluxgate(&["check", "--base", "HEAD", "--new-only"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("existing findings (3), already in the base"),
        "{text}"
    );
    assert!(text.contains("new findings (2):"), "{text}");
    assert!(text.contains(": 2 new, 3 existing, 0 fixed"), "{text}");
    // SARIF carries the fingerprint, the same one JSON shows.
    let sarif: Value = serde_json::from_slice(
        &r.fluxgate(&["check", "--base", "HEAD", "--format", "sarif"])
            .stdout,
    )
    .expect("SARIF");
    let prints: Vec<&str> = sarif["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|x| x["partialFingerprints"]["fluxgate/v1"].as_str())
        .collect();
    let json_prints: Vec<&str> = report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["fingerprint"].as_str())
        .collect();
    assert_eq!(prints, json_prints);
    assert!(!prints.is_empty());
    // The diff lists the delta too.
    let md = stdout(&r.fluxgate(&["diff", "--base", "HEAD", "--format", "markdown"]));
    assert!(
        md.contains("### Findings: 2 new, 2 existing, 0 fixed"),
        "{md}"
    );
}

#[test]
fn only_existing_findings_pass_with_new_only_and_fail_without() {
    let r = with_defect("existing");
    let path = "apps/prod/replicas.yaml";
    let text = std::fs::read_to_string(r.dir.join(path)).expect("read");
    r.write(path, &text.replace("replicas: 2", "replicas: 4"));
    let gate = r.fluxgate(&["check", "--base", "HEAD", "--new-only"]);
    assert_eq!(gate.status.code(), Some(0), "{}", stdout(&gate));
    assert!(stdout(&gate).ends_with("MERGE GATE: PASS\n"));
    let plain = r.fluxgate(&["check", "--base", "HEAD"]);
    assert_eq!(plain.status.code(), Some(1), "{}", stdout(&plain));
    // The HTML page decides as the gate does, says what the baseline found, and still shows
    // the existing findings.
    let html = r.fluxgate(&["check", "--base", "HEAD", "--new-only", "--format", "html"]);
    assert_eq!(html.status.code(), Some(0));
    let page = stdout(&html);
    assert!(page.contains("MERGE GATE: PASS"), "{page}");
    assert!(page.contains("baseline HEAD"), "{page}");
    assert!(page.contains("<article class=\"finding error\""), "{page}");
}

#[test]
fn a_moved_and_reformatted_file_keeps_its_findings_existing() {
    let r = with_defect("moved");
    r.git(&[
        "mv",
        "apps/base/settings.yaml",
        "apps/base/settings-cm.yaml",
    ]);
    // Moved, shifted by a comment and two blank lines, and re-indented.
    r.write(
        "apps/base/settings-cm.yaml",
        "# settings of the app\n\napiVersion: v1\nkind: ConfigMap\nmetadata:\n    name: settings\n    namespace: default\n\ndata:\n    host: ${HOTS}\n",
    );
    r.write(
        "apps/base/kustomization.yaml",
        "resources: [deploy.yaml, settings-cm.yaml]\n",
    );
    let report = r.json(&["check", "--base", "HEAD", "--format", "json"]);
    let b = baselines(&report);
    assert_eq!(b.len(), 2, "{b:?}");
    assert!(b.iter().all(|(k, _)| k == "existing"), "{b:?}");
    let gate = r.fluxgate(&["check", "--base", "HEAD", "--new-only"]);
    assert_eq!(gate.status.code(), Some(0), "{}", stdout(&gate));
}

#[test]
fn a_folder_that_is_not_git_can_only_be_compared_with_base_path() {
    let r = platform("nogit-head");
    let plain = std::env::temp_dir().join(format!("fluxgate-diff-plain-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&plain);
    std::fs::create_dir_all(&plain).expect("temp dir");
    for f in [
        "fluxgate.yaml",
        "clusters/prod/apps.yaml",
        "clusters/dev/apps.yaml",
        "apps/base/deploy.yaml",
        "apps/base/kustomization.yaml",
        "apps/prod/kustomization.yaml",
        "apps/prod/replicas.yaml",
        "apps/dev/kustomization.yaml",
    ] {
        let to = plain.join(f);
        std::fs::create_dir_all(to.parent().expect("folder")).expect("folder");
        std::fs::copy(r.dir.join(f), to).expect("copy");
    }
    let out = fluxgate_in(&plain, &["diff"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not inside a git repository"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--base-path"), "{}", stderr(&out));
    let out = fluxgate_in(&plain, &["check", "--base", "main"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // The same folder as the base of the git head: no change.
    let text = plain.to_string_lossy().into_owned();
    let out = r.fluxgate(&["diff", "--base-path", &text]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("environment prod: no change"),
        "{}",
        stdout(&out)
    );
    let _ = std::fs::remove_dir_all(&plain);
}

#[test]
fn a_revision_that_does_not_exist_is_exit_2() {
    let r = platform("norev");
    for args in [
        &["diff", "--base", "no-such-branch"][..],
        &["check", "--base", "no-such-branch"][..],
    ] {
        let out = r.fluxgate(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains("the base revision `no-such-branch` does not exist"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn a_shallow_clone_without_the_base_says_to_fetch_more() {
    let r = platform("shallow-origin");
    let path = "apps/prod/replicas.yaml";
    let text = std::fs::read_to_string(r.dir.join(path)).expect("read");
    r.write(path, &text.replace("replicas: 2", "replicas: 5"));
    r.commit("second");
    let clone = std::env::temp_dir().join(format!("fluxgate-diff-shallow-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&clone);
    let url = format!("file://{}", r.dir.display());
    let clone_s = clone.to_string_lossy().into_owned();
    r.git(&["clone", "-q", "--depth", "1", &url, &clone_s]);
    let out = fluxgate_in(&clone, &["diff", "--base", "HEAD~1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("shallow clone"), "{}", stderr(&out));
    assert!(stderr(&out).contains("fetch-depth: 0"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&clone);
}

#[test]
fn a_base_that_cannot_be_read_is_said_and_the_head_is_still_checked() {
    let r = Repo::new("badbase");
    // The base's fluxgate.yaml is not text: fluxgate cannot read that side.
    std::fs::write(r.dir.join("fluxgate.yaml"), b"\xff\xfe not utf-8\n").expect("write");
    r.commit("broken config");
    let good = with_defect("badbase-head");
    for f in [
        "fluxgate.yaml",
        "clusters/prod/apps.yaml",
        "clusters/dev/apps.yaml",
        "apps/base/deploy.yaml",
        "apps/base/settings.yaml",
        "apps/base/kustomization.yaml",
        "apps/prod/kustomization.yaml",
        "apps/prod/replicas.yaml",
        "apps/dev/kustomization.yaml",
    ] {
        let text = std::fs::read_to_string(good.dir.join(f)).expect("read");
        r.write(f, &text);
    }
    let out = r.fluxgate(&["check", "--base", "HEAD", "--new-only", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("could not be rendered"),
        "{}",
        stderr(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(baselines(&report).iter().all(|(k, _)| k == "new"));
    assert!(
        report["baseline"]["problem"]
            .as_str()
            .is_some_and(|p| p.contains("every finding counts as new"))
    );
    let out = r.fluxgate(&["diff", "--base", "HEAD"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("could not be read"),
        "{}",
        stderr(&out)
    );
}

/// The shipped example platform in a git repository: Ansible inventories with Vault files,
/// cached charts, two environments.
fn homelab(name: &str) -> Repo {
    let r = Repo::new(name);
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab/.");
    let status = Command::new("cp")
        .arg("-r")
        .arg(&example)
        .arg(&r.dir)
        .status()
        .expect("cp runs");
    assert!(status.success());
    r.commit("the example");
    r
}

#[test]
fn an_ansible_variable_changed_for_prod_is_shown_per_host_and_gates_as_new() {
    let r = homelab("ansible");
    let path = "infra/ansible/inventory/group_vars/k3s_prod/vars.yml";
    let text = std::fs::read_to_string(r.dir.join(path)).expect("read");
    r.write(path, &text.replace("\"192.168.2.9\"", "\"192.168.2.19\""));
    let report = r.json(&["diff", "--format", "json"]);
    let prod = env(&report, "prod");
    let hosts = prod["hosts"].as_array().expect("hosts");
    assert!(!hosts.is_empty(), "{prod}");
    for h in hosts {
        let vars = h["vars"].as_array().expect("vars");
        let vip = vars
            .iter()
            .find(|v| v["path"] == "kube_vip_address")
            .unwrap_or_else(|| panic!("kube_vip_address of {h}"));
        assert_eq!(vip["old"], "192.168.2.9");
        assert_eq!(vip["new"], "192.168.2.19");
        assert_eq!(vip["origin"]["file"], path);
        assert_eq!(vip["origin"]["line"], 11);
        assert!(
            vars.iter()
                .all(|v| v["secret"] == false || v["old"].is_null())
        );
    }
    assert!(
        env(&report, "dev")["hosts"]
            .as_array()
            .expect("hosts")
            .is_empty()
    );
    // Prod's Flux side still dials the old VIP: the change introduces findings, and only
    // those are new.
    let out = r.fluxgate(&["check", "--base", "HEAD", "--new-only", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let check: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        check["baseline"]["new"].as_u64().is_some_and(|n| n > 0),
        "{}",
        check["baseline"]
    );
    // Nothing was written to the repository: only the edited file differs from HEAD.
    let status = r.git(&["status", "--porcelain"]);
    assert_eq!(
        String::from_utf8_lossy(&status.stdout).trim(),
        format!("M {path}")
    );
}
