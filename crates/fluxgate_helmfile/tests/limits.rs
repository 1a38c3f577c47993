//! What fluxgate's helmfile never does: read the caller's environment, read outside the
//! repository, run a program. Each limit is a warning that says what was not evaluated.

use std::sync::Arc;

use fluxgate_fs::MemFs;
use fluxgate_helmfile::{Helmfile, Options, ProblemKind, load};

fn run(files: &[(&str, &str)], env: &[(&str, &str)]) -> Helmfile {
    let mut fs = MemFs::new();
    for (p, t) in files {
        fs.insert(format!("/repo/{p}"), *t);
    }
    let mut opts = Options::new("/repo", "helmfile.yaml.gotmpl").with_fs(Arc::new(fs));
    for (k, v) in env {
        opts.env.insert((*k).to_string(), (*v).to_string());
    }
    load(&opts)
}

const STATE: &str = "releases:\n  - name: app\n    namespace: apps\n    chart: repo/app\n    version: {{ requiredEnv \"APP_VERSION\" }}\n";

#[test]
fn required_env_reads_only_the_given_set() {
    let hf = run(&[("helmfile.yaml.gotmpl", STATE)], &[]);
    assert!(hf.states.iter().all(|s| s.releases.is_empty()));
    let p = &hf.problems[0];
    assert_eq!(p.kind, ProblemKind::Unevaluated, "{}", p.message);
    assert!(p.message.contains("APP_VERSION"), "{}", p.message);

    let hf = run(
        &[("helmfile.yaml.gotmpl", STATE)],
        &[("APP_VERSION", "1.2.3")],
    );
    assert_eq!(hf.states[0].releases[0].version.as_deref(), Some("1.2.3"));
    assert!(hf.problems.is_empty());
}

#[test]
fn env_of_the_process_is_not_seen() {
    let state =
        "releases:\n  - name: app\n    chart: repo/app\n    version: \"{{ env \"PATH\" }}\"\n";
    let hf = run(&[("helmfile.yaml.gotmpl", state)], &[]);
    assert_eq!(hf.states[0].releases[0].version, None);
}

#[test]
fn exec_runs_nothing_and_says_so() {
    let state = "releases:\n  - name: app\n    chart: repo/app\n    values: [values.yaml.gotmpl]\n";
    let values = "token: {{ exec \"sh\" (list \"-c\" \"touch /tmp/fluxgate-ran\") }}\n";
    let hf = run(
        &[
            ("helmfile.yaml.gotmpl", state),
            ("values.yaml.gotmpl", values),
        ],
        &[],
    );
    let r = &hf.states[0].releases[0];
    assert!(!r.unevaluated.is_empty());
    let p = &hf.problems[0];
    assert_eq!(p.kind, ProblemKind::Unevaluated);
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("exec `sh -c touch /tmp/fluxgate-ran` was not run")),
        "{:?}",
        p.notes
    );
}

#[test]
fn read_file_stays_in_the_repository() {
    let state = "releases:\n  - name: app\n    chart: repo/app\n    values: [values.yaml.gotmpl]\n";
    let values = "x: {{ readFile \"../../etc/hostname\" | quote }}\n";
    let hf = run(
        &[
            ("helmfile.yaml.gotmpl", state),
            ("values.yaml.gotmpl", values),
        ],
        &[],
    );
    let p = hf
        .problems
        .iter()
        .find(|p| p.message.contains("outside the repository"))
        .expect("the read is refused");
    assert_eq!(p.kind, ProblemKind::Unevaluated);
}

#[test]
fn hooks_are_read_never_run() {
    // A `.gotmpl` state escapes the hook's own template (helmfile renders it at the event).
    let state = "releases:\n  - name: app\n    chart: repo/app\n    hooks:\n      - events: [presync]\n        command: sh\n        args: [scripts/missing.sh, '{{ \"{{\" }} .Release.Name }}']\n      - events: [postsync]\n        command: bash\n        args: [-c, \"exit 1\"]\n";
    let hf = run(&[("helmfile.yaml.gotmpl", state)], &[]);
    let hooks = &hf.states[0].releases[0].hooks;
    assert_eq!(hooks[0].args, ["scripts/missing.sh", "app"]);
    assert_eq!(hooks[0].paths.len(), 1);
    assert!(!hooks[0].paths[0].exists);
    assert_eq!(hooks[0].paths[0].resolved, "scripts/missing.sh");
    // Inline shell text names no file.
    assert!(hooks[1].paths.is_empty());
}

#[test]
fn a_needs_cycle_is_read_as_written() {
    let state = "releases:\n  - name: a\n    chart: r/a\n    needs: [b]\n  - name: b\n    chart: r/b\n    needs: [a]\n";
    let hf = run(&[("helmfile.yaml.gotmpl", state)], &[]);
    let rs = &hf.states[0].releases;
    assert_eq!(rs[0].needs[0].target, Some(1));
    assert_eq!(rs[1].needs[0].target, Some(0));
}
