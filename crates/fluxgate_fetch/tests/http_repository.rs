//! `fetch` against a classic Helm repository served on loopback by the test itself: version
//! resolution, the lock and the warm cache, and every way the server or its content can be
//! wrong (digest mismatch, truncation, 404, down, stalled, redirects, index bombs, hostile
//! archives). Nothing is ever written outside the cache folder.

mod common;

use std::time::Duration;

use common::{TempDir, chart, files_under, index_yaml, sha256_hex, tgz};
use fluxgate_fetch::fetch::{Options, Outcome, fetch};
use fluxgate_fetch::sources::{ChartRequest, Protocol, Want};
use fluxgate_fetch::{Cache, FetchedCharts, Lock};
use fluxgate_testkit::server::{Route, Server};

fn request(server: &Server, chart: &str, constraint: &str) -> ChartRequest {
    ChartRequest {
        protocol: Protocol::HelmHttp,
        source: server.url(),
        chart: chart.to_string(),
        want: Want::Semver(constraint.to_string()),
        secret_ref: None,
        insecure: false,
        source_object: "HelmRepository flux-system/test".to_string(),
    }
}

fn opts() -> Options {
    Options {
        timeout: Duration::from_secs(2),
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

/// A repository with demo 1.0.0, 1.4.0, 1.10.0, 2.0.0 and 1.11.0-rc.1.
fn demo_repository(server: &Server) {
    let mut entries = Vec::new();
    let versions = ["1.0.0", "1.4.0", "1.10.0", "2.0.0", "1.11.0-rc.1"];
    let archives: Vec<(String, Vec<u8>)> = versions
        .iter()
        .map(|v| {
            (
                format!("demo-{v}.tgz"),
                chart("demo", v, &format!("version: {v}\n")),
            )
        })
        .collect();
    let digests: Vec<String> = archives.iter().map(|(_, b)| sha256_hex(b)).collect();
    for (i, v) in versions.iter().enumerate() {
        entries.push(("demo", *v, archives[i].0.as_str(), digests[i].as_str()));
    }
    server.route(
        "/index.yaml",
        Route::File(index_yaml(&entries).into_bytes()),
    );
    for (file, bytes) in archives {
        server.route(&format!("/{file}"), Route::File(bytes));
    }
}

#[test]
fn a_range_resolves_to_the_highest_admitted_version_and_a_warm_cache_needs_no_server() {
    let server = Server::start();
    demo_repository(&server);
    let dir = TempDir::new("range");
    let cache = Cache::open(&dir.0.join("cache"));
    let requests = vec![
        request(&server, "demo", ">=1.0 <2"),
        request(&server, "demo", "~1.4"),
    ];
    let first = run(&requests, &Lock::default(), &cache, &opts());
    assert!(first.errors.is_empty(), "{}", errors(&first));
    let locked: Vec<&str> = first
        .lock
        .entries()
        .iter()
        .map(|e| e.version.as_str())
        .collect();
    // 1.11.0-rc.1 is a prerelease and 2.0.0 is out of range; 1.10.0 sorts above 1.4.0.
    assert_eq!(locked, ["1.10.0", "1.4.0"]);
    assert_eq!(first.downloaded.len(), 2);
    let lock_path = dir.0.join("fluxgate.lock");
    first.lock.write(&lock_path).expect("lock written");

    // Offline: the server is gone; the lock and the cache are enough.
    let url = server.url();
    server.stop();
    let lock = Lock::read(&lock_path).expect("lock read");
    let again = run(&requests, &lock, &cache, &opts());
    assert!(again.errors.is_empty(), "{}", errors(&again));
    assert_eq!((again.downloaded.len(), again.reused), (0, 2));
    assert!(!again.changed(&lock));
    let charts = FetchedCharts::new(lock, cache.clone());
    let got = charts.chart_from(&url, "demo", "1.10.0").expect("verified");
    assert!(!got.bytes.is_empty());

    // A tampered cache file fails the offline lookup, naming the source.
    std::fs::write(&got.path, b"tampered").expect("tamper");
    let err = charts
        .chart("demo", Some(">=1.0 <2"))
        .expect("locked")
        .expect_err("tampered")
        .to_string();
    assert!(
        err.starts_with(&format!(
            "{url}: chart demo 1.10.0: digest mismatch: expected sha256:"
        )),
        "{err}"
    );
}

#[test]
fn a_damaged_cache_entry_is_downloaded_again_and_must_match_the_lock() {
    let server = Server::start();
    demo_repository(&server);
    let dir = TempDir::new("repair");
    let cache = Cache::open(&dir.0.join("cache"));
    let requests = vec![request(&server, "demo", "1.0.0")];
    let first = run(&requests, &Lock::default(), &cache, &opts());
    assert!(first.errors.is_empty(), "{}", errors(&first));
    let entry = first.lock.entries()[0].clone();
    std::fs::write(cache.path(&entry.digest), b"bad").expect("damage");
    let repaired = run(&requests, &first.lock, &cache, &opts());
    assert!(repaired.errors.is_empty(), "{}", errors(&repaired));
    assert_eq!(repaired.downloaded.len(), 1);
    assert!(cache.read_verified(&entry.digest).expect("read").is_some());

    // The server now serves other bytes under the locked version: refused.
    std::fs::remove_file(cache.path(&entry.digest)).expect("removed");
    let other = chart("demo", "1.0.0", "changed: true\n");
    server.route(
        "/index.yaml",
        Route::File(
            index_yaml(&[("demo", "1.0.0", "demo-1.0.0.tgz", &sha256_hex(&other))]).into_bytes(),
        ),
    );
    server.route("/demo-1.0.0.tgz", Route::File(other));
    let changed = run(&requests, &first.lock, &cache, &opts());
    let err = errors(&changed);
    assert!(err.contains("chart demo 1.0.0: digest mismatch"), "{err}");
    assert!(err.contains("the server's archive changed"), "{err}");
}

#[test]
fn a_digest_mismatch_with_the_index_stores_nothing() {
    let server = Server::start();
    let bytes = chart("demo", "1.0.0", "");
    server.route(
        "/index.yaml",
        Route::File(
            index_yaml(&[("demo", "1.0.0", "demo-1.0.0.tgz", &sha256_hex(b"other"))]).into_bytes(),
        ),
    );
    server.route("/demo-1.0.0.tgz", Route::File(bytes));
    let dir = TempDir::new("mismatch");
    let cache = Cache::open(&dir.0.join("cache"));
    let out = run(
        &[request(&server, "demo", "*")],
        &Lock::default(),
        &cache,
        &opts(),
    );
    let err = errors(&out);
    assert!(
        err.starts_with(&format!(
            "{}: chart demo 1.0.0: digest mismatch",
            server.url()
        )),
        "{err}"
    );
    assert!(out.lock.is_empty());
    assert!(files_under(&dir.0).is_empty(), "{:?}", files_under(&dir.0));
}

#[test]
fn truncation_404_down_stall_and_redirects() {
    let server = Server::start();
    let bytes = chart("demo", "1.0.0", "");
    let digest = sha256_hex(&bytes);
    server.route(
        "/index.yaml",
        Route::File(index_yaml(&[("demo", "1.0.0", "demo-1.0.0.tgz", &digest)]).into_bytes()),
    );
    server.route("/demo-1.0.0.tgz", Route::Truncated(bytes.clone(), 40));
    let dir = TempDir::new("broken");
    let cache = Cache::open(&dir.0.join("cache"));
    let fetch_one = |r: ChartRequest| errors(&run(&[r], &Lock::default(), &cache, &opts()));

    let err = fetch_one(request(&server, "demo", "*"));
    assert!(
        err.contains("broke off") || err.contains("truncated"),
        "truncated: {err}"
    );

    server.route("/demo-1.0.0.tgz", Route::Status(404));
    let err = fetch_one(request(&server, "demo", "*"));
    assert!(
        err.starts_with(&server.url()) && err.contains("demo-1.0.0.tgz: not found (HTTP 404)"),
        "404: {err}"
    );

    let err = fetch_one(request(&server, "absent", "*"));
    assert!(
        err.contains("chart absent is not in the repository's index"),
        "{err}"
    );

    // The index behind two redirects, the chart behind one: fine.
    server.route(
        "/index.yaml",
        Route::Redirect(302, "/moved/index.yaml".into()),
    );
    server.route(
        "/moved/index.yaml",
        Route::Redirect(301, format!("{}/real/index.yaml", server.url())),
    );
    server.route(
        "/real/index.yaml",
        Route::File(
            index_yaml(&[(
                "demo",
                "1.0.0",
                &format!("{}/demo-1.0.0.tgz", server.url()),
                &digest,
            )])
            .into_bytes(),
        ),
    );
    server.route(
        "/demo-1.0.0.tgz",
        Route::Redirect(307, "/files/demo.tgz".into()),
    );
    server.route("/files/demo.tgz", Route::File(bytes.clone()));
    let ok = run(
        &[request(&server, "demo", "*")],
        &Lock::default(),
        &cache,
        &opts(),
    );
    assert!(ok.errors.is_empty(), "redirects: {}", errors(&ok));

    // A redirect loop ends.
    server.route("/index.yaml", Route::Redirect(302, "/index.yaml".into()));
    let err = fetch_one(request(&server, "demo", "*"));
    assert!(err.contains("redirect"), "loop: {err}");

    // A server that stalls past the timeout.
    server.route(
        "/index.yaml",
        Route::Stall(Duration::from_secs(4), b"entries: {}\n".to_vec()),
    );
    let err = fetch_one(request(&server, "demo", "*"));
    assert!(err.contains("timed out"), "stall: {err}");

    // A server that is down.
    let down = request(&server, "demo", "*");
    let url = server.url();
    server.stop();
    let err = fetch_one(down);
    assert!(
        err.starts_with(&format!("{url}: ")) && err.contains("cannot connect"),
        "down: {err}"
    );
    // Nothing half-written stays in the cache.
    assert!(
        files_under(&dir.0.join("cache"))
            .iter()
            .all(|f| f.starts_with("sha256/")),
        "{:?}",
        files_under(&dir.0)
    );
}

#[test]
fn index_bombs_are_refused() {
    let server = Server::start();
    let dir = TempDir::new("bomb");
    let cache = Cache::open(&dir.0.join("cache"));
    let deep = format!(
        "apiVersion: v1\nentries: {}{}\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    server.route("/index.yaml", Route::File(deep.into_bytes()));
    let err = errors(&run(
        &[request(&server, "demo", "*")],
        &Lock::default(),
        &cache,
        &opts(),
    ));
    assert!(err.contains("index.yaml refused"), "deep: {err}");

    let mut laughs = String::from(
        "apiVersion: v1\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..10 {
        let p = i - 1;
        laughs.push_str(&format!(
            "l{i}: &l{i} [*l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}]\n"
        ));
    }
    laughs.push_str("entries: {demo: *l9}\n");
    server.route("/index.yaml", Route::File(laughs.into_bytes()));
    let err = errors(&run(
        &[request(&server, "demo", "*")],
        &Lock::default(),
        &cache,
        &opts(),
    ));
    assert!(err.contains("index.yaml refused"), "laughs: {err}");
    assert!(files_under(&dir.0).is_empty());
}

#[test]
fn hostile_archives_are_refused_and_nothing_lands_outside_the_cache() {
    let server = Server::start();
    let dir = TempDir::new("hostile");
    let cache_dir = dir.0.join("cache");
    let cache = Cache::open(&cache_dir);
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "climb",
            tgz(&[
                ("climb/Chart.yaml", 'f', "name: climb\n"),
                ("../../escaped", 'f', "x"),
            ]),
            "climbs out",
        ),
        (
            "link",
            tgz(&[
                ("link/Chart.yaml", 'f', "name: link\n"),
                ("link/values.yaml", 'l', "/etc/passwd"),
            ]),
            "symlink",
        ),
        (
            "abs",
            tgz(&[("/tmp/escaped-abs", 'f', "x")]),
            "absolute path",
        ),
    ];
    let mut entries = Vec::new();
    let digests: Vec<String> = cases.iter().map(|c| sha256_hex(&c.1)).collect();
    let files: Vec<String> = cases.iter().map(|c| format!("{}-1.0.0.tgz", c.0)).collect();
    for (i, (name, bytes, _)) in cases.iter().enumerate() {
        entries.push((*name, "1.0.0", files[i].as_str(), digests[i].as_str()));
        server.route(&format!("/{}", files[i]), Route::File(bytes.clone()));
    }
    server.route(
        "/index.yaml",
        Route::File(index_yaml(&entries).into_bytes()),
    );
    for (name, _, why) in &cases {
        let out = run(
            &[request(&server, name, "*")],
            &Lock::default(),
            &cache,
            &opts(),
        );
        let err = errors(&out);
        assert!(
            err.contains("archive refused") && err.contains(why),
            "{name}: {err}"
        );
        assert!(out.lock.is_empty());
    }
    assert!(files_under(&dir.0).is_empty(), "{:?}", files_under(&dir.0));
    assert!(!dir.0.join("escaped").exists() && !std::path::Path::new("/tmp/escaped-abs").exists());
}

#[test]
fn locked_refuses_a_lock_that_does_not_match() {
    let server = Server::start();
    demo_repository(&server);
    let dir = TempDir::new("locked");
    let cache = Cache::open(&dir.0.join("cache"));
    let locked = Options {
        locked: true,
        ..opts()
    };
    let out = run(
        &[request(&server, "demo", "^1")],
        &Lock::default(),
        &cache,
        &locked,
    );
    let err = errors(&out);
    assert!(
        err.starts_with("fluxgate.lock does not match the repository's sources (--locked):"),
        "{err}"
    );
    assert!(
        err.contains("demo `^1` is not satisfied by fluxgate.lock"),
        "{err}"
    );

    let fetched = run(
        &[
            request(&server, "demo", "^1"),
            request(&server, "demo", "2.0.0"),
        ],
        &Lock::default(),
        &cache,
        &opts(),
    );
    assert!(fetched.errors.is_empty(), "{}", errors(&fetched));
    // The 2.0.0 release went away: its entry is stale, which --locked refuses.
    let out = run(
        &[request(&server, "demo", "^1")],
        &fetched.lock,
        &cache,
        &locked,
    );
    let err = errors(&out);
    assert!(
        err.contains("demo 2.0.0 is locked but no release uses it"),
        "{err}"
    );
    // Without --locked the stale entry simply leaves the lock.
    let out = run(
        &[request(&server, "demo", "^1")],
        &fetched.lock,
        &cache,
        &opts(),
    );
    assert!(
        out.errors.is_empty() && out.lock.entries().len() == 1,
        "{}",
        errors(&out)
    );
}

#[test]
fn a_secret_ref_source_says_it_needs_credentials() {
    let server = Server::start();
    server.route("/index.yaml", Route::Status(401));
    let dir = TempDir::new("secret");
    let cache = Cache::open(&dir.0.join("cache"));
    let mut r = request(&server, "demo", "*");
    r.secret_ref = Some("repo-auth".into());
    let err = errors(&run(&[r], &Lock::default(), &cache, &opts()));
    assert!(
        err.contains("needs credentials") && err.contains("`repo-auth`"),
        "{err}"
    );
}
