//! The example platform with the real Cilium chart in its `charts:` cache (issue 22's "done
//! when"): the agent DaemonSet the chart installs carries the chart's default
//! `maxUnavailable: 2`, and the finding names the chart's values.yaml line that set it.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{json_exit, workspace};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy's folder");
    for entry in std::fs::read_dir(from).expect("read the folder to copy") {
        let entry = entry.expect("a folder entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// examples/homelab with `charts/` holding the corpus's cilium 1.17.18 and the release pinned
/// to it, its own `updateStrategy` removed; `None` (said) without the corpus.
fn homelab_with_real_cilium(name: &str) -> Option<PathBuf> {
    let corpus = fluxgate_testkit::corpus("homelab_with_real_cilium")?;
    let chart = corpus.join("helm-charts/cilium-1.17.18");
    assert!(
        chart.is_dir(),
        "the corpus has no helm-charts/cilium-1.17.18"
    );
    let dir = std::env::temp_dir().join(format!("fluxgate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&workspace().join("examples/homelab"), &dir);
    std::fs::remove_dir_all(dir.join("charts")).expect("remove the stub chart");
    copy_dir(&chart, &dir.join("charts/cilium-1.17.18"));
    let hr = dir.join("platform/cilium/helmrelease.yaml");
    let text = std::fs::read_to_string(&hr).expect("the example's Cilium release");
    let mut out = String::new();
    let mut skipping = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(at) = skipping {
            if line.trim().is_empty() || indent > at {
                continue;
            }
            skipping = None;
        }
        if line.trim_start().starts_with("updateStrategy:") {
            skipping = Some(indent);
            continue;
        }
        out.push_str(&line.replace("version: \"1.16.5\"", "version: \"1.17.18\""));
        out.push('\n');
    }
    assert!(
        out.contains("1.17.18"),
        "the release pins its chart version"
    );
    std::fs::write(&hr, out).expect("write the release");
    Some(dir)
}

#[test]
fn the_agent_daemonset_carries_the_charts_default_at_its_values_line() {
    let Some(repo) = homelab_with_real_cilium("cilium-default") else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .args(["check", "--format", "json", "--env", "dev"])
        .arg(&repo)
        .output()
        .expect("fluxgate runs");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let findings = report["diagnostics"].as_array().expect("diagnostics");
    let blast: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|d| d["rule"] == "rollout-blast-radius")
        .collect();
    assert_eq!(blast.len(), 1, "{findings:#?}");
    let d = blast[0];
    assert!(
        d["message"].as_str().is_some_and(
            |m| m.contains("DaemonSet kube-system/cilium ") && m.contains("maxUnavailable 2")
        ),
        "{d:#}"
    );
    // The fix goes into the release; the chart's values.yaml line that set 2 is beside it.
    assert_eq!(d["file"], "platform/cilium/helmrelease.yaml", "{d:#}");
    let related = d["related"].as_array().expect("related");
    assert!(
        related
            .iter()
            .any(|r| r["file"] == "charts/cilium-1.17.18/values.yaml" && r["line"] == 380),
        "{d:#}"
    );
    // The bootstrap's values and the mirror file still say 1: parity names the chart default
    // the release now leaves in place. Nothing else the chart installs is an error here.
    let errors: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|d| d["severity"] == "error" && d["rule"] != "rollout-blast-radius")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["rule"], "parity");
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("updateStrategy.rollingUpdate.maxUnavailable")),
        "{errors:#?}"
    );
    // `render` prints what the chart installs, with origins.
    let render = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .args([
            "render",
            "--env",
            "dev",
            "--kind",
            "DaemonSet",
            "--name",
            "kube-system/cilium",
            "--origins",
        ])
        .arg(&repo)
        .output()
        .expect("fluxgate runs");
    let text = String::from_utf8_lossy(&render.stdout);
    assert!(
        text.contains("maxUnavailable: 2 # charts/cilium-1.17.18/values.yaml:380"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&repo);
}

/// A chart whose template renders text that is not YAML: Helm fails the release (`YAML parse
/// error on <template>`), so `check` fails with a render finding at the release instead of
/// installing the rest of the chart without that document. A character YAML cannot carry
/// (DEL here; go-yaml refuses the stream) is such text too, and so is YAML whose value is
/// not an object.
#[test]
fn a_template_that_renders_no_yaml_fails_the_release() {
    a_broken_template_fails_the_release(
        "kind: ConfigMap\ndata: [\n",
        "line 3 of the rendered document: invalid YAML: while parsing a node, did not find expected node content",
    );
    a_broken_template_fails_the_release(
        "kind: ConfigMap\ndata:\n  k: \"a\u{7f}b\"\n",
        "control characters are not allowed (U+007F at line 3, column 8)",
    );
    // YAML, but no object: Helm cannot read its kind.
    a_broken_template_fails_the_release(
        "- kind: ConfigMap\n",
        "cannot unmarshal array into Go value of type util.SimpleHead",
    );
}

fn a_broken_template_fails_the_release(template: &str, says: &str) {
    let repo = std::env::temp_dir().join(format!(
        "fluxgate-broken-yaml-{}-{}",
        std::process::id(),
        template.len()
    ));
    let _ = std::fs::remove_dir_all(&repo);
    copy_dir(&workspace().join("examples/homelab"), &repo);
    std::fs::write(
        repo.join("charts/cilium-1.16.5/templates/broken.yaml"),
        template,
    )
    .expect("write the broken template");
    let repo_arg = repo.to_str().expect("utf-8 path");
    let report = json_exit(&["check", "--format", "json", "--env", "dev", repo_arg], 1);
    let findings = report["diagnostics"].as_array().expect("diagnostics");
    let broken: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|d| {
            d["severity"] == "error"
                && d["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("YAML parse error on cilium/templates/broken.yaml"))
        })
        .collect();
    assert_eq!(broken.len(), 1, "{findings:#?}");
    let message = broken[0]["message"].as_str().unwrap_or_default();
    assert!(says == "syntax" || message.contains(says), "{message}");
    assert_eq!(broken[0]["rule"], "render", "{:#}", broken[0]);
    assert_eq!(
        broken[0]["file"], "platform/cilium/helmrelease.yaml",
        "{:#}",
        broken[0]
    );
    let _ = std::fs::remove_dir_all(&repo);
}
