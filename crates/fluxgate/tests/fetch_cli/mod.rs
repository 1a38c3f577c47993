//! `fluxgate fetch` end to end: a small repository whose HelmRelease takes its chart from a
//! classic Helm repository served on loopback by the test. The first fetch downloads and
//! locks; with the server stopped a `--locked` fetch is a no-op; a changed range fails
//! `--locked` (exit 1); a damaged cache entry with the server gone fails naming the source.

use std::path::{Path, PathBuf};
use std::process::Output;

use fluxgate_testkit::server::{Route, Server};
use sha2::Digest as _;

use super::fluxgate;

struct TempRepo(PathBuf);

impl TempRepo {
    fn new(case: &str) -> TempRepo {
        let dir =
            std::env::temp_dir().join(format!("fluxgate-fetch-cli-{case}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        TempRepo(dir)
    }

    fn write(&self, path: &str, text: &str) {
        let p = self.0.join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    fn path(&self, rel: &str) -> String {
        self.0.join(rel).to_str().expect("utf-8 path").to_string()
    }
}

impl Drop for TempRepo {
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

fn chart(version: &str) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (path, body) in [
        (
            "demo/Chart.yaml",
            format!("apiVersion: v2\nname: demo\nversion: {version}\n"),
        ),
        ("demo/values.yaml", "replicas: 2\n".to_string()),
        (
            "demo/templates/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicas }}\n".to_string(),
        ),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, path, body.as_bytes())
            .expect("append");
    }
    tar.into_inner().expect("tar").finish().expect("gzip")
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn release(version: &str) -> String {
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: demo, namespace: apps}}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: demo\n      version: '{version}'\n      sourceRef: {{kind: HelmRepository, name: charts, namespace: flux-system}}\n"
    )
}

#[test]
fn fetch_locks_then_stays_offline_and_fails_closed() {
    let server = Server::start();
    let mut index = String::from("apiVersion: v1\nentries:\n  demo:\n");
    for v in ["1.2.0", "1.2.5", "1.3.0"] {
        let bytes = chart(v);
        index.push_str(&format!(
            "  - name: demo\n    version: {v}\n    digest: {}\n    urls: [demo-{v}.tgz]\n",
            hex(&bytes)
        ));
        server.route(&format!("/demo-{v}.tgz"), Route::File(bytes));
    }
    server.route("/index.yaml", Route::File(index.into_bytes()));

    let repo = TempRepo::new("e2e");
    repo.write(
        "fluxgate.yaml",
        "environments:\n  dev:\n    flux: clusters/dev\n",
    );
    repo.write(
        "clusters/dev/repository.yaml",
        &format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {{name: charts, namespace: flux-system}}\nspec: {{url: {}, interval: 1h}}\n",
            server.url()
        ),
    );
    repo.write("clusters/dev/release.yaml", &release("~1.2"));
    let cache = repo.path("cache");
    let root = repo.path("");
    let fetch = |extra: &[&str]| {
        let mut args = vec!["fetch", root.as_str(), "--cache", cache.as_str()];
        args.extend_from_slice(extra);
        fluxgate(&args)
    };

    let out = fetch(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("1 chart: 1 downloaded, 0 already in the cache"),
        "{}",
        text(&out)
    );
    let lock = std::fs::read_to_string(repo.0.join("fluxgate.lock")).expect("the lock");
    let line = format!(
        "{} demo 1.2.5 sha256:{}",
        server.url(),
        hex(&chart("1.2.5"))
    );
    assert!(lock.lines().any(|l| l == line), "{lock}");

    // The server is gone: the lock and the cache are enough.
    let url = server.url();
    server.stop();
    let out = fetch(&["--locked"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("0 downloaded, 1 already in the cache"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("fluxgate.lock unchanged"),
        "{}",
        text(&out)
    );

    // Offline, the release renders its fetched chart: the Deployment it installs, its
    // replicas at the chart's values.yaml line in the fetched archive.
    let offline = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_fluxgate"))
            .args(args)
            .env("FLUXGATE_CACHE", &cache)
            .output()
            .expect("the fluxgate binary runs")
    };
    let out = offline(&[
        "render",
        root.as_str(),
        "--env",
        "dev",
        "--kind",
        "Deployment",
        "--origins",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!(
            "replicas: 2 # {url}/demo-1.2.5.tgz/demo/values.yaml:1"
        )),
        "{}",
        text(&out)
    );

    // A range the lock does not satisfy: --locked fails the gate.
    repo.write("clusters/dev/release.yaml", &release("~1.3"));
    let out = fetch(&["--locked"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("fluxgate.lock does not match the repository's sources"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(repo.0.join("fluxgate.lock")).expect("lock"),
        lock
    );

    // A damaged cache entry and no server: an error naming the source, exit 2.
    repo.write("clusters/dev/release.yaml", &release("~1.2"));
    let blob = Path::new(&cache).join("sha256").join(hex(&chart("1.2.5")));
    std::fs::write(&blob, b"damaged").expect("damage");
    let out = fetch(&["--locked"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("error: {url}: ")),
        "{}",
        text(&out)
    );
    // The gate itself reads the damaged entry: it fails, naming the lock and the chart.
    let out = offline(&["check", root.as_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("MERGE GATE: FAIL"), "{}", text(&out));
    assert!(
        text(&out).contains("the fetched chart cannot be used"),
        "{}",
        text(&out)
    );
}

#[test]
fn an_ssh_git_repository_needs_credentials() {
    let repo = TempRepo::new("git-ssh");
    repo.write(
        "fluxgate.yaml",
        "environments:\n  dev:\n    flux: clusters/dev\n",
    );
    repo.write(
        "clusters/dev/source.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: charts, namespace: flux-system}\nspec: {url: 'ssh://git@git.example/org/charts', interval: 1h, ref: {branch: main}, secretRef: {name: charts-deploy-key}}\n",
    );
    repo.write(
        "clusters/dev/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: demo, namespace: apps}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/demo\n      sourceRef: {kind: GitRepository, name: charts, namespace: flux-system}\n",
    );
    let cache = repo.path("cache");
    let out = fluxgate(&["fetch", &repo.path(""), "--cache", &cache]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("error: ssh://git.example/org/charts: needs credentials (an ssh:// GitRepository authenticates with the SSH identity of its secretRef `charts-deploy-key`, which fluxgate does not read"),
        "{}",
        text(&out)
    );
}

mod credential_helper;
mod git_daemon;
