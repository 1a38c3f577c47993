//! Charts from a remote GitRepository, fetched shallow with gix from real git servers the test
//! starts on loopback: `git daemon` (git://) and `git http-backend` behind a small CGI HTTP
//! server of the test's own (smart HTTP). Cases: a branch, a tag, a semver range over tags, a
//! commit pin, a missing ref, a server that is down, a chart with a symlink or a `..` entry
//! (refused), a private repository (anonymous refused, a netrc login accepted) and `ssh://`,
//! which needs the secretRef's key fluxgate never reads.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{TempDir, files_under, write};
use fluxgate_fetch::creds::Credentials;
use fluxgate_fetch::fetch::{Options, Outcome, fetch};
use fluxgate_fetch::sources::{ChartRequest, Protocol, Want};
use fluxgate_fetch::{Cache, FetchedCharts, Lock, split_git_version};

const TEST: &str = "git_remote";

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    common::git(TEST, dir, args)
}

fn chart_yaml(version: &str) -> String {
    format!("apiVersion: v2\nname: demo\nversion: {version}\n")
}

fn request(url: &str, want: Want) -> ChartRequest {
    ChartRequest {
        protocol: Protocol::Git,
        source: url.to_string(),
        chart: "charts/demo".to_string(),
        want,
        secret_ref: None,
        insecure: false,
        source_object: "GitRepository flux-system/charts".into(),
    }
}

fn rev(r: &str) -> Want {
    Want::GitRev(r.to_string())
}

fn options() -> Options {
    Options {
        timeout: Duration::from_secs(10),
        ..Options::default()
    }
}

fn run(requests: &[ChartRequest], lock: &Lock, cache: &Cache, opts: &Options) -> Outcome {
    fetch(requests, lock, cache, opts, &|_| {})
}

fn errors(o: &Outcome) -> String {
    o.errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A free loopback port (bound, then released for the server to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn wait_for(port: u16) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the server on port {port} did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The served repositories: `<root>/charts.git` (tags v1.0.0, v1.2.0, v2.0.0-rc.1 and
/// v2.0.0 on one commit, and `main`), `<root>/link.git` (a chart with a symlink), `<root>/dotdot.git` (a chart whose
/// tree has a `..` entry).
struct Served {
    dir: TempDir,
    root: PathBuf,
    /// Commits of charts.git: v1.0.0, v1.2.0, main.
    commits: [String; 3],
}

fn make_repositories() -> Option<Served> {
    let dir = TempDir::new("git-remote");
    let work = dir.0.join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    git(&work, &["init", "-q"])?;
    write(&work, "charts/demo/Chart.yaml", &chart_yaml("1.0.0"));
    write(&work, "charts/demo/values.yaml", "replicas: 1\n");
    write(&work, "charts/demo/templates/cm.yaml", "kind: ConfigMap\n");
    write(&work, "README.md", "not part of the chart\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "one"]);
    git(&work, &["tag", "v1.0.0"]);
    let c1 = git(&work, &["rev-parse", "HEAD"])?;
    write(&work, "charts/demo/Chart.yaml", &chart_yaml("1.2.0"));
    git(&work, &["commit", "-qam", "two"]);
    // An annotated tag: peeled to its commit.
    git(&work, &["tag", "-a", "-m", "release", "v1.2.0"]);
    let c2 = git(&work, &["rev-parse", "HEAD"])?;
    write(&work, "charts/demo/Chart.yaml", &chart_yaml("2.0.0-rc.1"));
    git(&work, &["commit", "-qam", "three"]);
    git(&work, &["tag", "v2.0.0-rc.1"]);
    git(&work, &["tag", "v2.0.0"]);
    git(&work, &["tag", "not-a-version"]);
    let c3 = git(&work, &["rev-parse", "HEAD"])?;
    let root = dir.0.join("served");
    std::fs::create_dir_all(&root).expect("mkdir");
    git(
        &root,
        &["clone", "-q", "--bare", work.to_str()?, "charts.git"],
    )?;

    // A chart with a symlink to a file outside it.
    let link = dir.0.join("link");
    std::fs::create_dir_all(&link).expect("mkdir");
    git(&link, &["init", "-q"])?;
    write(&link, "charts/demo/Chart.yaml", &chart_yaml("1.0.0"));
    std::os::unix::fs::symlink("/etc/passwd", link.join("charts/demo/values.yaml"))
        .expect("symlink");
    git(&link, &["add", "-A"]);
    git(&link, &["commit", "-qm", "link"]);
    git(
        &root,
        &["clone", "-q", "--bare", link.to_str()?, "link.git"],
    )?;

    // A chart whose tree names a `..` folder (git itself never writes one; a hostile server can).
    let bad = root.join("dotdot.git");
    git(&root, &["init", "-q", "--bare", "dotdot.git"])?;
    let blob = hash_object(&bad, "blob", b"kind: Secret\n")?;
    let chart_blob = hash_object(&bad, "blob", chart_yaml("1.0.0").as_bytes())?;
    let inner = hash_object(&bad, "tree", &tree(&[("100644", "evil.yaml", &blob)]))?;
    let demo = hash_object(
        &bad,
        "tree",
        &tree(&[
            ("40000", "..", &inner),
            ("100644", "Chart.yaml", &chart_blob),
        ]),
    )?;
    let charts = hash_object(&bad, "tree", &tree(&[("40000", "demo", &demo)]))?;
    let top = hash_object(&bad, "tree", &tree(&[("40000", "charts", &charts)]))?;
    let commit = git(&bad, &["commit-tree", &top, "-m", "dotdot"])?;
    git(&bad, &["update-ref", "refs/heads/main", &commit])?;
    Some(Served {
        root,
        dir,
        commits: [c1, c2, c3],
    })
}

/// A git tree object's bytes: entries `(mode, name, hex id)`, in the order given.
fn tree(entries: &[(&str, &str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (mode, name, hex) in entries {
        out.extend_from_slice(format!("{mode} {name}\0").as_bytes());
        for i in (0..hex.len()).step_by(2) {
            out.push(u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"));
        }
    }
    out
}

fn hash_object(repo: &Path, kind: &str, bytes: &[u8]) -> Option<String> {
    let mut child = Command::new("git")
        .args(["hash-object", "--literally", "-t", kind, "-w", "--stdin"])
        .current_dir(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(bytes).ok()?;
    let out = child.wait_with_output().ok()?;
    assert!(out.status.success(), "git hash-object failed");
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `git daemon` serving `root` on a loopback port; stopped when dropped.
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    fn start(root: &Path) -> Daemon {
        let port = free_port();
        // git-daemon itself, not `git daemon` (a wrapper process that would outlive a kill).
        let exec_path = Command::new("git")
            .arg("--exec-path")
            .output()
            .expect("git --exec-path");
        let exec_path = PathBuf::from(String::from_utf8_lossy(&exec_path.stdout).trim());
        let child = Command::new(exec_path.join("git-daemon"))
            .args([
                "--reuseaddr",
                "--export-all",
                "--informative-errors",
                "--listen=127.0.0.1",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", root.display()))
            .arg(root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon");
        wait_for(port);
        Daemon { child, port }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback HTTP/1.1 server that runs `git http-backend` as a CGI program for each request
/// (smart HTTP), optionally only for a Basic login. One request per connection.
struct HttpBackend {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpBackend {
    fn start(root: &Path, basic: Option<&str>) -> HttpBackend {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let (root, basic, flag) = (root.to_path_buf(), basic.map(str::to_string), stop.clone());
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        let (root, basic) = (root.clone(), basic.clone());
                        std::thread::spawn(move || cgi(stream, &root, basic.as_deref()));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        HttpBackend {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for HttpBackend {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn cgi(stream: TcpStream, root: &Path, basic: Option<&str>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or_default().to_string(),
        parts.next().unwrap_or_default().to_string(),
    );
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let mut out = stream;
    if let Some(expected) = basic
        && header("authorization").as_deref() != Some(expected)
    {
        let _ = out.write_all(
            b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    }
    let length: usize = header("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let mut cmd = Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_LENGTH", length.to_string())
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(t) = header("content-type") {
        cmd.env("CONTENT_TYPE", t);
    }
    if let Some(p) = header("git-protocol") {
        cmd.env("GIT_PROTOCOL", p);
    }
    let Ok(mut child) = cmd.spawn() else {
        return;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&body);
    }
    let Ok(output) = child.wait_with_output() else {
        return;
    };
    let raw = output.stdout;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| raw.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let Some((end, sep)) = split else {
        let _ = out.write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let content = &raw[end + sep..];
    let mut status = "200 OK".to_string();
    let mut response = String::new();
    for h in head.lines() {
        match h.split_once(':') {
            Some((k, v)) if k.eq_ignore_ascii_case("status") => status = v.trim().to_string(),
            Some(_) => response.push_str(&format!("{}\r\n", h.trim_end())),
            None => {}
        }
    }
    let _ = out.write_all(
        format!(
            "HTTP/1.1 {status}\r\n{response}Content-Length: {}\r\nConnection: close\r\n\r\n",
            content.len()
        )
        .as_bytes(),
    );
    let _ = out.write_all(content);
}

/// The chart `fetch` stored for the single entry of `out`, unpacked: its file list and its
/// Chart.yaml.
fn unpacked(out: &Outcome, cache: &Cache, dir: &Path) -> (Vec<String>, String) {
    let charts = FetchedCharts::new(out.lock.clone(), cache.clone());
    let chart = charts
        .chart("demo", None)
        .expect("by its last segment")
        .expect("verified");
    let commit = fluxgate_fetch::split_git_version(&out.lock.entries()[0].version).1;
    let to = dir.join(format!("unpacked-{commit}"));
    let _ = std::fs::remove_dir_all(&to);
    fluxgate_fetch::extract::extract_tgz(
        &chart.bytes,
        &to,
        "demo",
        fluxgate_fetch::extract::Limits::default(),
    )
    .expect("unpacks");
    let text = std::fs::read_to_string(to.join("demo/Chart.yaml")).expect("Chart.yaml");
    (files_under(&to), text)
}

/// Every case against one server URL prefix (`git://127.0.0.1:PORT` or `http://…`).
fn cases(base: &str, served: &Served, scratch: &Path) {
    let url = format!("{base}/charts.git");
    let cache = Cache::open(&scratch.join(format!("cache-{}", base.replace([':', '/'], "_"))));
    let [c1, c2, c3] = &served.commits;

    // A branch: its tip, the chart folder only, packed as `demo/…`.
    let out = run(
        &[request(&url, rev("refs/heads/main"))],
        &Lock::default(),
        &cache,
        &options(),
    );
    assert!(out.errors.is_empty(), "{base}: {}", errors(&out));
    let entry = out.lock.entries()[0].clone();
    assert_eq!(
        entry.version,
        format!("refs/heads/main@{c3}"),
        "{base}: the branch's tip, under the ref that asked for it"
    );
    let (files, text) = unpacked(&out, &cache, scratch);
    assert_eq!(
        files,
        [
            "demo/Chart.yaml",
            "demo/templates/cm.yaml",
            "demo/values.yaml"
        ],
        "{base}"
    );
    assert!(text.contains("version: 2.0.0-rc.1"), "{base}: {text}");

    // Nothing is left in the cache's tmp/ (the scratch repository is removed).
    let tmp = scratch
        .join(format!("cache-{}", base.replace([':', '/'], "_")))
        .join("tmp");
    assert!(
        files_under(&tmp).is_empty(),
        "{base}: left in tmp/: {:?}",
        files_under(&tmp)
    );

    // The same bytes as a file:// fetch of the same commit: the digest does not depend on
    // the transport.
    let local = format!("file://{}", served.dir.0.join("work").display());
    let via_file = run(
        &[request(&local, rev(c3))],
        &Lock::default(),
        &cache,
        &options(),
    );
    assert!(via_file.errors.is_empty(), "{}", errors(&via_file));
    assert_eq!(via_file.lock.entries()[0].digest, entry.digest, "{base}");
    // A semver range over a file:// repository's tags picks as over the network.
    let file_semver = run(
        &[request(&local, Want::Semver("^1.0".into()))],
        &Lock::default(),
        &cache,
        &options(),
    );
    assert!(file_semver.errors.is_empty(), "{}", errors(&file_semver));
    assert_eq!(
        file_semver.lock.entries()[0].version,
        format!("semver:^1.0@{c2}"),
        "file:// ^1.0"
    );

    // A lightweight tag and an annotated one (peeled to its commit).
    for (tag, commit) in [("v1.0.0", c1), ("v1.2.0", c2)] {
        let out = run(
            &[request(&url, rev(&format!("refs/tags/{tag}")))],
            &Lock::default(),
            &cache,
            &options(),
        );
        assert!(out.errors.is_empty(), "{base} {tag}: {}", errors(&out));
        assert_eq!(
            out.lock.entries()[0].version,
            format!("refs/tags/{tag}@{commit}"),
            "{base} {tag}"
        );
    }

    // A semver range over the tags: the highest it admits (a prerelease only when asked).
    for (range, commit) in [("^1.0", c2), ("~1.0.0", c1), (">=2.0.0-0", c3)] {
        let out = run(
            &[request(&url, Want::Semver(range.to_string()))],
            &Lock::default(),
            &cache,
            &options(),
        );
        assert!(out.errors.is_empty(), "{base} {range}: {}", errors(&out));
        assert_eq!(
            split_git_version(&out.lock.entries()[0].version),
            (Some(format!("semver:{range}").as_str()), commit.as_str()),
            "{base} {range}"
        );
    }
    let none = errors(&run(
        &[request(&url, Want::Semver(">=3".into()))],
        &Lock::default(),
        &cache,
        &options(),
    ));
    assert!(
        none.starts_with(&format!(
            "{url}: no tag matches semver `>=3`; the repository has: "
        )),
        "{base}: {none}"
    );

    // A commit pin: exactly that commit, and the warm cache needs no server afterwards.
    let pinned = run(
        &[request(&url, rev(c1))],
        &Lock::default(),
        &cache,
        &options(),
    );
    assert!(pinned.errors.is_empty(), "{base}: {}", errors(&pinned));
    // A commit is its own ref: the lock line holds the bare commit.
    assert_eq!(pinned.lock.entries()[0].version, *c1);
    let (_, text) = unpacked(&pinned, &cache, scratch);
    assert!(text.contains("version: 1.0.0"), "{base}: {text}");

    // A missing branch: an error naming the source and the ref.
    let missing = errors(&run(
        &[request(&url, rev("refs/heads/nope"))],
        &Lock::default(),
        &cache,
        &options(),
    ));
    assert!(
        missing == format!("{url}: ref `refs/heads/nope`: the remote has no such ref"),
        "{base}: {missing}"
    );
    // A missing repository.
    let gone = errors(&run(
        &[request(
            &format!("{base}/nothing.git"),
            rev("refs/heads/main"),
        )],
        &Lock::default(),
        &cache,
        &options(),
    ));
    assert!(
        gone.starts_with(&format!("{base}/nothing.git: ref `refs/heads/main`: ")),
        "{base}: {gone}"
    );

    // A symlink in the chart, and a `..` entry: refused, nothing stored.
    let before = files_under(cache.dir()).len();
    let link = errors(&run(
        &[request(&format!("{base}/link.git"), rev("refs/heads/main"))],
        &Lock::default(),
        &cache,
        &options(),
    ));
    assert!(link.contains("is a symlink (refused"), "{base}: {link}");
    let dotdot = errors(&run(
        &[request(
            &format!("{base}/dotdot.git"),
            rev("refs/heads/main"),
        )],
        &Lock::default(),
        &cache,
        &options(),
    ));
    assert!(
        dotdot.contains("is not a plain path (refused"),
        "{base}: {dotdot}"
    );
    assert_eq!(
        files_under(cache.dir()).len(),
        before,
        "{base}: nothing stored"
    );

    ref_edits(&url, &cache, served);
}

/// A GitRepository whose `ref` is edited after the lock was written: the old line no longer
/// satisfies it, so `--locked` refuses naming the source and a plain fetch resolves the new ref
/// (and drops the old line).
fn ref_edits(url: &str, cache: &Cache, served: &Served) {
    let [_, c2, c3] = &served.commits;
    let locked = Options {
        locked: true,
        ..options()
    };
    for (before, after, old_commit, new_version) in [
        (
            Want::Semver(">=1.0.0 <2.0.0".into()),
            Want::Semver(">=2.0.0".into()),
            c2,
            format!("semver:>=2.0.0@{c3}"),
        ),
        (
            rev("refs/heads/main"),
            rev("refs/tags/v1.2.0"),
            c3,
            format!("refs/tags/v1.2.0@{c2}"),
        ),
    ] {
        let first = run(
            &[request(url, before.clone())],
            &Lock::default(),
            cache,
            &options(),
        );
        assert!(
            first.errors.is_empty(),
            "{url} {before:?}: {}",
            errors(&first)
        );
        let old = first.lock.entries()[0].clone();
        assert_eq!(
            split_git_version(&old.version).1,
            old_commit.as_str(),
            "{before:?}"
        );
        // The lock's text keeps four fields a line (a range's spaces are encoded).
        let text = first.lock.to_text();
        let parsed = Lock::parse(&text, "fluxgate.lock").expect("parses");
        assert_eq!(parsed, first.lock, "{text}");
        if let Want::Semver(_) = before {
            assert!(
                text.contains(&format!(
                    "{url} charts/demo semver:>=1.0.0%20<2.0.0@{c2} sha256:"
                )),
                "{text}"
            );
        }

        // Unchanged: the lock holds, offline.
        let same = run(&[request(url, before.clone())], &first.lock, cache, &locked);
        assert!(same.errors.is_empty(), "{before:?}: {}", errors(&same));
        assert_eq!((same.downloaded.len(), same.reused), (0, 1));

        // Edited: `--locked` refuses, naming the source and the new ref; the lock is kept.
        let refused = run(&[request(url, after.clone())], &first.lock, cache, &locked);
        let message = errors(&refused);
        assert!(
            message.contains(&format!("{url} charts/demo"))
                && message.contains(
                    "is not satisfied by fluxgate.lock (GitRepository flux-system/charts)"
                )
                && message.contains("is locked but no release uses it"),
            "{before:?} -> {after:?}: {message}"
        );
        assert_eq!(refused.lock, first.lock);

        // A plain fetch resolves the new ref; the old line leaves the lock.
        let moved = run(
            &[request(url, after.clone())],
            &first.lock,
            cache,
            &options(),
        );
        assert!(moved.errors.is_empty(), "{after:?}: {}", errors(&moved));
        let versions: Vec<&str> = moved
            .lock
            .entries()
            .iter()
            .map(|e| e.version.as_str())
            .collect();
        assert_eq!(versions, [new_version.as_str()], "{before:?} -> {after:?}");

        // The offline side agrees: charts restricted to what the sources now ask for find no
        // chart under the old lock (fail closed), and find the new one under the new lock.
        let stale = FetchedCharts::new(first.lock.clone(), cache.clone())
            .restricted_to(&[request(url, after.clone())]);
        assert!(
            stale.chart("demo", None).is_none(),
            "{before:?} -> {after:?}"
        );
        let fresh = FetchedCharts::new(moved.lock.clone(), cache.clone())
            .restricted_to(&[request(url, after.clone())]);
        assert!(
            fresh.chart("demo", None).is_some_and(|c| c.is_ok()),
            "{after:?}"
        );
    }
}

#[test]
fn charts_from_git_daemon() {
    let Some(served) = make_repositories() else {
        return;
    };
    let daemon = Daemon::start(&served.root);
    let scratch = TempDir::new("git-daemon-cache");
    cases(
        &format!("git://127.0.0.1:{}", daemon.port),
        &served,
        &scratch.0,
    );

    // The lock holds; with the server stopped a warm cache still satisfies it, and a cold one
    // fails naming the source.
    let url = format!("git://127.0.0.1:{}/charts.git", daemon.port);
    let cache = Cache::open(&scratch.0.join("warm"));
    let first = run(
        &[request(&url, rev("refs/heads/main"))],
        &Lock::default(),
        &cache,
        &options(),
    );
    assert!(first.errors.is_empty(), "{}", errors(&first));
    drop(daemon);
    let warm = run(
        &[request(&url, rev("refs/heads/main"))],
        &first.lock,
        &cache,
        &options(),
    );
    assert!(warm.errors.is_empty(), "{}", errors(&warm));
    assert_eq!((warm.downloaded.len(), warm.reused), (0, 1));
    let cold = Cache::open(&scratch.0.join("cold"));
    let down = errors(&run(
        &[request(&url, rev("refs/heads/main"))],
        &first.lock,
        &cold,
        &options(),
    ));
    assert!(
        down.starts_with(&format!(
            "{url}: commit {}: cannot connect (",
            served.commits[2]
        )),
        "{down}"
    );
}

#[test]
fn charts_from_smart_http() {
    let Some(served) = make_repositories() else {
        return;
    };
    let server = HttpBackend::start(&served.root, None);
    let scratch = TempDir::new("git-http-cache");
    cases(
        &format!("http://127.0.0.1:{}", server.port),
        &served,
        &scratch.0,
    );

    // Server down.
    let url = format!("http://127.0.0.1:{}/charts.git", server.port);
    drop(server);
    let cache = Cache::open(&scratch.0.join("down"));
    let down = errors(&run(
        &[request(&url, rev("refs/heads/main"))],
        &Lock::default(),
        &cache,
        &options(),
    ));
    assert!(
        down.starts_with(&format!("{url}: ")) && down.contains("cannot connect"),
        "{down}"
    );
}

#[test]
fn private_smart_http_needs_a_login() {
    let Some(served) = make_repositories() else {
        return;
    };
    // bob:s3cret-git-token
    let server = HttpBackend::start(&served.root, Some("Basic Ym9iOnMzY3JldC1naXQtdG9rZW4="));
    let scratch = TempDir::new("git-http-private");
    let url = format!("http://127.0.0.1:{}/charts.git", server.port);
    let cache = Cache::open(&scratch.0.join("cache"));
    let mut req = request(&url, rev("refs/heads/main"));
    req.secret_ref = Some("git-auth".into());

    let anonymous = errors(&run(
        std::slice::from_ref(&req),
        &Lock::default(),
        &cache,
        &options(),
    ));
    assert!(
        anonymous.starts_with(&format!("{url}: needs credentials (the server refused anonymous access; the source's secretRef is `git-auth`)")),
        "{anonymous}"
    );
    let netrc = scratch.0.join("netrc");
    std::fs::write(
        &netrc,
        "machine 127.0.0.1 login bob password s3cret-git-token\n",
    )
    .expect("netrc");
    let opts = Options {
        credentials: Credentials::from_files(None, Some(&netrc)),
        ..options()
    };
    let out = run(std::slice::from_ref(&req), &Lock::default(), &cache, &opts);
    assert!(out.errors.is_empty(), "{}", errors(&out));
    assert_eq!(
        out.lock.entries()[0].version,
        format!("refs/heads/main@{}", served.commits[2])
    );

    // A wrong password: refused, and the password is in no message.
    std::fs::write(
        &netrc,
        "machine 127.0.0.1 login bob password wrong-pass-123\n",
    )
    .expect("netrc");
    let opts = Options {
        credentials: Credentials::from_files(None, Some(&netrc)),
        ..options()
    };
    let wrong = errors(&run(
        std::slice::from_ref(&req),
        &Lock::default(),
        &Cache::open(&scratch.0.join("c2")),
        &opts,
    ));
    assert!(wrong.contains("refused the login (netrc"), "{wrong}");
    assert!(
        !wrong.contains("wrong-pass-123") && !wrong.contains("s3cret"),
        "{wrong}"
    );

    // A user:password in the URL is a login too, and never shown.
    let with_login = |password: &str, repo: &str| {
        let mut r = req.clone();
        r.source = format!("http://bob:{password}@127.0.0.1:{}/{repo}", server.port);
        r
    };
    let out = run(
        &[with_login("s3cret-git-token", "charts.git")],
        &Lock::default(),
        &Cache::open(&scratch.0.join("c3")),
        &options(),
    );
    assert!(out.errors.is_empty(), "{}", errors(&out));
    for repo in ["charts.git", "nothing.git"] {
        let out = run(
            &[with_login("wrong-pass-123", repo)],
            &Lock::default(),
            &Cache::open(&scratch.0.join("c4")),
            &options(),
        );
        let shown = format!("{} {:?}", errors(&out), out.errors);
        assert!(!out.errors.is_empty(), "{repo}");
        assert!(
            !shown.contains("wrong-pass-123") && !shown.contains("bob:"),
            "{shown}"
        );
    }
}

#[test]
fn ssh_needs_the_secret_ref_key() {
    let scratch = TempDir::new("git-ssh");
    let cache = Cache::open(&scratch.0.join("cache"));
    let mut req = request(
        "ssh://git@127.0.0.1:1/org/charts.git",
        rev("refs/heads/main"),
    );
    req.secret_ref = Some("deploy-key".into());
    let err = errors(&run(&[req], &Lock::default(), &cache, &options()));
    assert!(
        err.starts_with("ssh://127.0.0.1:1/org/charts.git: needs credentials (an ssh:// GitRepository authenticates with the SSH identity of its secretRef `deploy-key`"),
        "{err}"
    );
}
