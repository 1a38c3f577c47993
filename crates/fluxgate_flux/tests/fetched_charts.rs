//! A HelmRelease's effective values over a chart that only `fluxgate fetch` has (no `charts:`
//! folder): the chart defaults shine through with their origin in the fetched archive, and a
//! cache entry changed since it was locked gives no defaults and an error naming the source.

use std::sync::Arc;

use fluxgate_fetch::{Cache, FetchedCharts, Lock, LockEntry};
use fluxgate_flux::helm::{ChartCache, effective_values};
use fluxgate_yaml::{Schema, parse_one};

fn archive() -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (path, body) in [
        (
            "podinfo/Chart.yaml",
            "apiVersion: v2\nname: podinfo\nversion: 6.7.1\n",
        ),
        (
            "podinfo/values.yaml",
            "replicaCount: 1\nimage:\n  tag: 6.7.1\n",
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

#[test]
fn release_values_over_a_fetched_chart() {
    let dir = std::env::temp_dir().join(format!("fluxgate-flux-fetched-it-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = Cache::open(&dir);
    let digest = cache.store(&archive()).expect("stored");
    let mut lock = Lock::default();
    lock.insert(LockEntry {
        source: "https://stefanprodan.github.io/podinfo".into(),
        chart: "podinfo".into(),
        version: "6.7.1".into(),
        digest: digest.clone(),
    });
    let charts = ChartCache::fetched(Arc::new(FetchedCharts::new(lock, cache.clone())));
    let (release, _) = parse_one(
        "apps/podinfo.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo, namespace: apps}\nspec:\n  chart:\n    spec: {chart: podinfo, version: '6.x'}\n  values:\n    replicaCount: 3\n",
        Schema::Kube,
    );
    let release = release.expect("a release");
    let values = effective_values(&release, &[], &charts);
    assert!(values.problems.is_empty(), "{:?}", values.problems);
    assert_eq!(
        values
            .tree
            .path(&["replicaCount"])
            .and_then(fluxgate_yaml::Node::as_i64),
        Some(3)
    );
    assert!(values.is_chart_default("image.tag"));
    let origin = &values.origins["image.tag"][0];
    assert_eq!(
        origin.location.file.as_ref(),
        "https://stefanprodan.github.io/podinfo/podinfo-6.7.1.tgz/podinfo/values.yaml"
    );
    let chart = values.chart.as_ref().expect("chart");
    assert_eq!(chart.found_version.as_deref(), Some("6.7.1"));

    // Changed in the cache since it was locked: no defaults, an error naming the source.
    std::fs::write(cache.path(&digest), b"changed").expect("tamper");
    let charts = ChartCache::fetched(Arc::new(FetchedCharts::new(
        {
            let mut l = Lock::default();
            l.insert(LockEntry {
                source: "https://stefanprodan.github.io/podinfo".into(),
                chart: "podinfo".into(),
                version: "6.7.1".into(),
                digest,
            });
            l
        },
        cache,
    )));
    let values = effective_values(&release, &[], &charts);
    assert!(!values.is_chart_default("image.tag"));
    let messages: Vec<&str> = values.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(
        messages.iter().any(|m| m.contains(
            "https://stefanprodan.github.io/podinfo: chart podinfo 6.7.1: digest mismatch"
        )),
        "{messages:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
