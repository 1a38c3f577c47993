//! Charts from a `file://` GitRepository: the repository is made by the test with the `git`
//! command (fluxgate itself reads it in process with gix). The chart folder at a branch, a tag
//! or a commit is packed the same way every time, locked by commit, and a branch that moves on
//! stays at the locked commit until the lock is updated.

mod common;

use std::path::Path;

use common::{TempDir, files_under, write};
use fluxgate_fetch::fetch::{Options, Outcome, fetch};
use fluxgate_fetch::sources::{ChartRequest, Protocol, Want};
use fluxgate_fetch::{Cache, FetchedCharts, Lock};

const TEST: &str = "git_repository";

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    common::git(TEST, dir, args)
}

fn request(url: &str, chart: &str, rev: &str) -> ChartRequest {
    ChartRequest {
        protocol: Protocol::Git,
        source: url.to_string(),
        chart: chart.to_string(),
        want: Want::GitRev(rev.to_string()),
        secret_ref: None,
        insecure: false,
        source_object: "GitRepository flux-system/charts".into(),
    }
}

fn run(requests: &[ChartRequest], lock: &Lock, cache: &Cache) -> Outcome {
    fetch(requests, lock, cache, &Options::default(), &|_| {})
}

fn errors(o: &Outcome) -> String {
    o.errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn charts_from_a_local_git_repository() {
    let dir = TempDir::new("git");
    let repo = dir.0.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    if git(&repo, &["init", "-q"]).is_none() {
        return;
    }
    write(
        &repo,
        "charts/demo/Chart.yaml",
        "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    );
    write(&repo, "charts/demo/values.yaml", "replicas: 1\n");
    write(&repo, "charts/demo/templates/cm.yaml", "kind: ConfigMap\n");
    write(&repo, "README.md", "not part of the chart\n");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);
    git(&repo, &["tag", "v1"]);
    let first = git(&repo, &["rev-parse", "HEAD"]).expect("commit");
    let url = format!("file://{}", repo.display());

    let cache = Cache::open(&dir.0.join("cache"));
    let requests = [
        request(&url, "charts/demo", "refs/heads/main"),
        request(&url, "charts/demo", "refs/tags/v1"),
    ];
    let out = run(&requests[..1], &Lock::default(), &cache);
    assert!(out.errors.is_empty(), "{}", errors(&out));
    let entry = out.lock.entries()[0].clone();
    assert_eq!(
        (entry.chart.as_str(), entry.version.as_str()),
        ("charts/demo", format!("refs/heads/main@{first}").as_str())
    );

    // Packed the same way every time: another cache gets the same digest.
    let other = Cache::open(&dir.0.join("other"));
    let again = run(&requests[1..], &Lock::default(), &other);
    assert!(again.errors.is_empty(), "{}", errors(&again));
    assert_eq!(again.lock.entries()[0].digest, entry.digest);

    // The archive holds the chart folder only, as `demo/…`.
    let charts = FetchedCharts::new(out.lock.clone(), cache.clone());
    let chart = charts
        .chart("demo", None)
        .expect("by its last segment")
        .expect("verified");
    let unpacked = dir.0.join("cache").join("unpacked").join("demo");
    fluxgate_fetch::extract::extract_tgz(
        &chart.bytes,
        &unpacked,
        "demo",
        fluxgate_fetch::extract::Limits::default(),
    )
    .expect("unpacks");
    assert_eq!(
        files_under(&unpacked),
        [
            "demo/Chart.yaml",
            "demo/templates/cm.yaml",
            "demo/values.yaml"
        ]
    );

    // The branch moves on: the lock keeps its commit (no download) until it is updated.
    write(&repo, "charts/demo/values.yaml", "replicas: 2\n");
    git(&repo, &["commit", "-qam", "two"]);
    let warm = run(&requests[..1], &out.lock, &cache);
    assert!(warm.errors.is_empty(), "{}", errors(&warm));
    assert_eq!((warm.downloaded.len(), warm.reused), (0, 1));
    let moved = run(&requests[..1], &Lock::default(), &cache);
    assert_ne!(moved.lock.entries()[0].version, entry.version);

    // A commit pins exactly; a missing path, a missing ref and a symlink are errors.
    let pinned = run(
        &[request(&url, "charts/demo", &first)],
        &Lock::default(),
        &cache,
    );
    assert_eq!(pinned.lock.entries()[0].digest, entry.digest);
    let err = errors(&run(
        &[request(&url, "charts/none", "refs/heads/main")],
        &Lock::default(),
        &cache,
    ));
    assert!(
        err.starts_with(&format!("{url}: no chart at `charts/none`")),
        "{err}"
    );
    let err = errors(&run(
        &[request(&url, "charts/demo", "refs/heads/nope")],
        &Lock::default(),
        &cache,
    ));
    assert!(err.starts_with(&format!("{url}: ")), "{err}");
    std::os::unix::fs::symlink("/etc/passwd", repo.join("charts/demo/evil")).expect("symlink");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "link"]);
    let err = errors(&run(&requests[..1], &Lock::default(), &cache));
    assert!(err.contains("is a symlink (refused"), "{err}");
}
