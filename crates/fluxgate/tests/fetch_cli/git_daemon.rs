//! A chart from a remote GitRepository, end to end: `git daemon` on loopback serves a
//! repository whose `charts/demo` folder is the chart; `fluxgate fetch` locks the ref and its
//! commit; an edited ref (a semver range, a branch turned tag) is refused by `--locked`, fails
//! `check` closed and is resolved anew by `fetch`; with the daemon stopped, `render` renders
//! the chart from the cache.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{TempRepo, text};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git (installed by .ci/run)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_chart_from_git_daemon_renders_offline() {
    let repo = TempRepo::new("git-daemon");
    let work = repo.0.join("work");
    std::fs::create_dir_all(work.join("charts/demo/templates")).expect("mkdir");
    git(&work, &["init", "-q"]);
    let commit_chart = |version: &str, replicas: u32| {
        std::fs::write(
            work.join("charts/demo/Chart.yaml"),
            format!("apiVersion: v2\nname: demo\nversion: {version}\n"),
        )
        .expect("write");
        std::fs::write(
            work.join("charts/demo/values.yaml"),
            format!("replicas: {replicas}\n"),
        )
        .expect("write");
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-qm", version]);
        git(&work, &["tag", &format!("v{version}")]);
        git(&work, &["rev-parse", "HEAD"])
    };
    std::fs::write(
        work.join("charts/demo/templates/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: demo}}\n  template:\n    metadata: {labels: {app: demo}}\n    spec: {containers: [{name: demo, image: 'registry.example/demo:1.0'}]}\n",
    )
    .expect("write");
    // v1.0.0 (3 replicas), then v2.0.0 (5 replicas) at the tip of `main`.
    let c1 = commit_chart("1.0.0", 3);
    let c2 = commit_chart("2.0.0", 5);
    let served = repo.0.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    git(
        &served,
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().expect("utf-8"),
            "charts.git",
        ],
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let exec_path = PathBuf::from(git(&work, &["--exec-path"]));
    let daemon = Daemon(
        Command::new(exec_path.join("git-daemon"))
            .args(["--reuseaddr", "--export-all", "--listen=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", served.display()))
            .arg(&served)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon"),
    );
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "git daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let url = format!("git://127.0.0.1:{port}/charts.git");
    repo.write(
        "fluxgate.yaml",
        "environments:\n  dev:\n    flux: clusters/dev\n",
    );
    let source = |git_ref: &str| {
        repo.write(
            "clusters/dev/source.yaml",
            &format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: charts, namespace: flux-system}}\nspec: {{url: '{url}', interval: 1h, ref: {{{git_ref}}}}}\n"),
        );
    };
    repo.write(
        "clusters/dev/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: demo, namespace: apps}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/demo\n      sourceRef: {kind: GitRepository, name: charts, namespace: flux-system}\n",
    );
    let cache = repo.path("cache");
    let root = repo.path("");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fluxgate"))
            .args(args)
            .env("FLUXGATE_CACHE", &cache)
            .env("CI", "true")
            .output()
            .expect("the fluxgate binary runs")
    };
    let read_lock = || std::fs::read_to_string(repo.0.join("fluxgate.lock")).expect("lock");
    let locked_line = |version: &str| {
        let lock = read_lock();
        assert!(
            lock.lines()
                .any(|l| l.starts_with(&format!("{url} charts/demo {version} sha256:"))),
            "{version}:\n{lock}"
        );
    };
    let rendered = |replicas: u32| {
        let out = run(&[
            "render",
            root.as_str(),
            "--env",
            "dev",
            "--kind",
            "Deployment",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!("replicas: {replicas}")),
            "replicas {replicas}: {}",
            text(&out)
        );
    };

    // Each ref, then its edit: `--locked` refuses naming the source and leaves the lock as it
    // was; the gate fails closed (the old commit is not rendered); a plain fetch resolves the
    // new ref and the release renders the chart it names.
    for (before, before_version, before_replicas, after, after_version, after_replicas) in [
        (
            "semver: '>=1.0.0 <2.0.0'",
            format!("semver:>=1.0.0%20<2.0.0@{c1}"),
            3,
            "semver: '>=2.0.0'",
            format!("semver:>=2.0.0@{c2}"),
            5,
        ),
        (
            "branch: main",
            format!("refs/heads/main@{c2}"),
            5,
            "tag: v1.0.0",
            format!("refs/tags/v1.0.0@{c1}"),
            3,
        ),
    ] {
        source(before);
        let out = run(&["fetch", root.as_str()]);
        assert_eq!(out.status.code(), Some(0), "{before}: {}", text(&out));
        locked_line(&before_version);
        let out = run(&["check", root.as_str()]);
        assert_eq!(out.status.code(), Some(0), "{before}: {}", text(&out));
        rendered(before_replicas);

        source(after);
        let lock = read_lock();
        let out = run(&["fetch", root.as_str(), "--locked"]);
        assert_eq!(out.status.code(), Some(1), "{after}: {}", text(&out));
        assert!(
            text(&out).contains("fluxgate.lock does not match the repository's sources")
                && text(&out).contains(&format!(
                    "{url} charts/demo {before_version} is locked but no release uses it"
                ))
                && text(&out).contains(
                    "is not satisfied by fluxgate.lock (GitRepository flux-system/charts)"
                ),
            "{after}: {}",
            text(&out)
        );
        assert_eq!(read_lock(), lock, "{after}: --locked changed the lock");
        let out = run(&["check", root.as_str()]);
        assert_eq!(out.status.code(), Some(1), "{after}: {}", text(&out));
        assert!(
            text(&out).contains("MERGE GATE: FAIL")
                && text(&out).contains(&format!(
                    "{url}: chart charts/demo is pinned in fluxgate.lock, but not for what GitRepository flux-system/charts asks now"
                ))
                && text(&out).contains("the lock does not match the repository's sources"),
            "{after}: {}",
            text(&out)
        );
        let out = run(&[
            "render",
            root.as_str(),
            "--env",
            "dev",
            "--kind",
            "Deployment",
        ]);
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains(&format!("replicas: {before_replicas}")),
            "{after}: the old commit rendered: {}",
            text(&out)
        );

        let out = run(&["fetch", root.as_str()]);
        assert_eq!(out.status.code(), Some(0), "{after}: {}", text(&out));
        locked_line(&after_version);
        assert!(
            !read_lock().contains(&before_version),
            "{after}: the old line stays:\n{}",
            read_lock()
        );
        let out = run(&["check", root.as_str()]);
        assert_eq!(out.status.code(), Some(0), "{after}: {}", text(&out));
        rendered(after_replicas);
    }

    // Offline: the lock holds and the chart renders from the cache.
    drop(daemon);
    let out = run(&["fetch", root.as_str(), "--locked"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("0 downloaded, 1 already in the cache"),
        "{}",
        text(&out)
    );
    rendered(3);
}
