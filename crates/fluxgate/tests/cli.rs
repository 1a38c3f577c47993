//! The CLI integration binary: runs `fluxgate` on the example repositories and checks output
//! and exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
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
    let out = fluxgate(&["envs", "examples/homelab", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let names: Vec<&str> = v
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["dev", "prod"]);
    assert_eq!(v[1]["flux"], "clusters/prod");
    assert_eq!(v[1]["ansible"]["group"], "k3s_prod");
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
