//! A chart from a remote GitRepository, end to end: `git daemon` on loopback serves a
//! repository whose `charts/demo` folder is the chart; `fluxgate fetch` locks its commit; with
//! the daemon stopped, `render` renders the chart from the cache.

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
    std::fs::write(
        work.join("charts/demo/Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.3.0\n",
    )
    .expect("write");
    std::fs::write(work.join("charts/demo/values.yaml"), "replicas: 3\n").expect("write");
    std::fs::write(
        work.join("charts/demo/templates/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicas }}\n",
    )
    .expect("write");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "chart"]);
    let commit = git(&work, &["rev-parse", "HEAD"]);
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
    repo.write(
        "clusters/dev/source.yaml",
        &format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: charts, namespace: flux-system}}\nspec: {{url: '{url}', interval: 1h, ref: {{branch: main}}}}\n"),
    );
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
    let out = run(&["fetch", root.as_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lock = std::fs::read_to_string(repo.0.join("fluxgate.lock")).expect("lock");
    assert!(
        lock.lines()
            .any(|l| l.starts_with(&format!("{url} charts/demo {commit} sha256:"))),
        "{lock}"
    );

    drop(daemon);
    let out = run(&["fetch", root.as_str(), "--locked"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("0 downloaded, 1 already in the cache"),
        "{}",
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
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("replicas: 3"),
        "{}",
        text(&out)
    );
}
