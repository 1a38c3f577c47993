//! `fetch` against the CNCF distribution registry (Debian's `docker-registry`) started on a
//! loopback port by the test, with charts pushed by the Helm oracle (`helm push`). Without
//! the registry or Helm the test skips visibly; under `CI=true` it fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{TempDir, chart, files_under};
use fluxgate_fetch::fetch::{Options, Outcome, fetch};
use fluxgate_fetch::sources::{ChartRequest, Protocol, Want};
use fluxgate_fetch::{Cache, Digest, FetchedCharts, Lock};

const TEST: &str = "oci_registry";

/// A registry process of this test, killed (by its own handle) when dropped.
struct Registry {
    child: Child,
    port: u16,
    storage: PathBuf,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn registry_binary() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("FLUXGATE_REGISTRY").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/docker-registry")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn start_registry(dir: &Path) -> Option<Registry> {
    let Some(bin) = registry_binary() else {
        fluxgate_testkit::missing(
            TEST,
            "the distribution registry is not installed (apt-get install docker-registry)",
        );
        return None;
    };
    let storage = dir.join("registry");
    let port = free_port();
    let config = dir.join("registry.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog: {{level: error}}\nstorage: {{filesystem: {{rootdirectory: {}}}, delete: {{enabled: true}}}}\nhttp: {{addr: 127.0.0.1:{port}}}\n",
            storage.display()
        ),
    )
    .expect("registry config");
    let child = Command::new(bin)
        .arg("serve")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the registry starts");
    let registry = Registry {
        child,
        port,
        storage,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(registry);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the registry did not listen on 127.0.0.1:{port} within 20 s");
}

fn helm(dir: &Path) -> Option<(PathBuf, Vec<(String, PathBuf)>)> {
    let bin = fluxgate_testkit::go_install_oracle(TEST, "helm", "helm.sh/helm/v4/cmd/helm@v4.3.2")?;
    // Helm's own state stays inside the test folder.
    let env = ["HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"]
        .iter()
        .map(|k| (k.to_string(), dir.join("helm").join(k)))
        .chain([(
            "HELM_REGISTRY_CONFIG".to_string(),
            dir.join("helm").join("registry.json"),
        )])
        .collect();
    Some((bin, env))
}

fn push(
    helm: &(PathBuf, Vec<(String, PathBuf)>),
    dir: &Path,
    port: u16,
    name: &str,
    version: &str,
) {
    let file = dir.join(format!("{name}-{version}.tgz"));
    std::fs::write(&file, chart(name, version, &format!("pushed: {version}\n"))).expect("chart");
    let out = Command::new(&helm.0)
        .arg("push")
        .arg(&file)
        .arg(format!("oci://127.0.0.1:{port}/charts"))
        .arg("--plain-http")
        .envs(helm.1.iter().map(|(k, v)| (k.as_str(), v.as_os_str())))
        .output()
        .expect("helm runs");
    assert!(
        out.status.success(),
        "helm push {name} {version}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn request(port: u16, want: Want) -> ChartRequest {
    ChartRequest {
        protocol: Protocol::Oci,
        source: format!("oci://127.0.0.1:{port}/charts/demo"),
        chart: "demo".into(),
        want,
        secret_ref: None,
        insecure: false,
        source_object: "OCIRepository apps/demo".into(),
    }
}

fn run(requests: &[ChartRequest], lock: &Lock, cache: &Cache) -> Outcome {
    let opts = Options {
        timeout: Duration::from_secs(5),
        ..Options::default()
    };
    fetch(requests, lock, cache, &opts, &|_| {})
}

fn errors(o: &Outcome) -> String {
    o.errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn charts_from_the_distribution_registry() {
    let dir = TempDir::new("oci");
    let Some(helm) = helm(&dir.0) else { return };
    let Some(registry) = start_registry(&dir.0) else {
        return;
    };
    let port = registry.port;
    for v in ["1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1"] {
        push(&helm, &dir.0, port, "demo", v);
    }
    let cache = Cache::open(&dir.0.join("cache"));

    // The manifest digest of 1.0.0, as a digest reference would pin it.
    let http = fluxgate_fetch::http::Http::new(Duration::from_secs(5));
    let manifest = http
        .get(
            &format!("http://127.0.0.1:{port}/v2/charts/demo/manifests/1.0.0"),
            &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
            1 << 20,
            "test",
        )
        .expect("manifest");
    assert_eq!(manifest.status, 200);
    let manifest_digest = Digest::of(&manifest.body).to_string();

    let requests = vec![
        request(port, Want::Semver(">=1.0.0 <2".into())),
        request(port, Want::Tag("1.2.0".into())),
        request(port, Want::Digest(manifest_digest.clone())),
    ];
    let first = run(&requests, &Lock::default(), &cache);
    assert!(first.errors.is_empty(), "{}", errors(&first));
    let versions: Vec<&str> = first
        .lock
        .entries()
        .iter()
        .map(|e| e.version.as_str())
        .collect();
    // 1.10.0 is the highest in range (2.0.0-rc.1 is a prerelease); the tag and the digest as
    // asked.
    assert_eq!(versions, ["1.10.0", "1.2.0", manifest_digest.as_str()]);

    // The chart layer's bytes are the archive helm pushed.
    let fetched = FetchedCharts::new(first.lock.clone(), cache.clone());
    let chart = fetched
        .chart("demo", Some("1.10.0"))
        .expect("locked")
        .expect("verified");
    let pushed = std::fs::read(dir.0.join("demo-1.10.0.tgz")).expect("pushed file");
    assert_eq!(chart.bytes, pushed);

    // An exact version is pulled by its tag.
    let exact = run(
        &[request(port, Want::Semver("1.0.0".into()))],
        &Lock::default(),
        &cache,
    );
    assert!(exact.errors.is_empty(), "{}", errors(&exact));
    assert_eq!(exact.lock.entries()[0].version, "1.0.0");

    // A missing tag: an error naming the source.
    let err = errors(&run(
        &[request(port, Want::Tag("9.9.9".into()))],
        &Lock::default(),
        &cache,
    ));
    assert!(
        err.starts_with(&format!("oci://127.0.0.1:{port}/charts/demo: "))
            && err.contains("not found (HTTP 404)"),
        "{err}"
    );

    // The registry serves damaged bytes for a blob: the layer digest check refuses them.
    let pushed_120 = std::fs::read(dir.0.join("demo-1.2.0.tgz")).expect("pushed file");
    let blob_digest = Digest::of(&pushed_120);
    let blob = registry
        .storage
        .join("docker/registry/v2/blobs/sha256")
        .join(&blob_digest.hex()[..2])
        .join(blob_digest.hex())
        .join("data");
    std::fs::write(&blob, b"damaged on the server").expect("damage the blob");
    let empty_cache = Cache::open(&dir.0.join("cache2"));
    let err = errors(&run(
        &[request(port, Want::Tag("1.2.0".into()))],
        &Lock::default(),
        &empty_cache,
    ));
    assert!(err.contains("chart layer digest mismatch"), "{err}");
    assert!(files_under(&dir.0.join("cache2")).is_empty());

    // Registry stopped: the warm cache needs no network; a cold one names the source.
    drop(registry);
    let again = run(&requests, &first.lock, &cache);
    assert!(again.errors.is_empty(), "{}", errors(&again));
    assert_eq!((again.downloaded.len(), again.reused), (0, 3));
    let err = errors(&run(&requests[..1], &Lock::default(), &empty_cache));
    assert!(err.contains("cannot connect"), "{err}");
}
