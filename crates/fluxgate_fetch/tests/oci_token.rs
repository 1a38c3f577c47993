//! The registry token flow, against a registry imitation on loopback (the distribution
//! registry of `oci_registry.rs` runs without authentication): a 401 with a Bearer challenge,
//! an anonymous token or one obtained with a Docker config login, then the manifest and the
//! chart layer with that token. Credentials never appear in an error.

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::{TempDir, chart, sha256_hex};
use fluxgate_fetch::creds::Credentials;
use fluxgate_fetch::fetch::{Options, fetch};
use fluxgate_fetch::sources::{ChartRequest, Protocol, Want};
use fluxgate_fetch::{Cache, Lock};
use fluxgate_testkit::server::{Route, Server};

/// A registry whose repository `charts/demo` holds demo 1.0.0 and 1.1.0, readable with the
/// bearer token `t0k`, which `/token` hands out to requests authorised as `token_auth`.
fn registry(server: &Server, token_auth: Option<&str>) {
    let challenge = format!(
        r#"Bearer realm="{}/token",service="test-registry",scope="repository:charts/demo:pull""#,
        server.url()
    );
    let guarded = |body: Vec<u8>| Route::Auth {
        expect: "Bearer t0k".into(),
        challenge: challenge.clone(),
        body,
    };
    server.route(
        "/v2/charts/demo/tags/list",
        guarded(br#"{"name":"charts/demo","tags":["1.0.0","1.1.0","latest"]}"#.to_vec()),
    );
    for v in ["1.0.0", "1.1.0"] {
        let bytes = chart("demo", v, "");
        let digest = sha256_hex(&bytes);
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
            "config":{{"mediaType":"application/vnd.cncf.helm.config.v1+json","digest":"sha256:{digest}","size":2}},
            "layers":[{{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","digest":"sha256:{digest}","size":{}}}]}}"#,
            bytes.len()
        );
        server.route(
            &format!("/v2/charts/demo/manifests/{v}"),
            guarded(manifest.into_bytes()),
        );
        server.route(
            &format!("/v2/charts/demo/blobs/sha256:{digest}"),
            guarded(bytes),
        );
    }
    let token = br#"{"token":"t0k"}"#.to_vec();
    server.route(
        "/token",
        match token_auth {
            None => Route::File(token),
            Some(expect) => Route::Auth {
                expect: expect.into(),
                challenge: r#"Basic realm="token""#.into(),
                body: token,
            },
        },
    );
}

fn request(server: &Server, secret: Option<&str>) -> ChartRequest {
    ChartRequest {
        protocol: Protocol::Oci,
        source: format!("oci://127.0.0.1:{}/charts/demo", server.port),
        chart: "demo".into(),
        want: Want::Semver("^1".into()),
        secret_ref: secret.map(str::to_string),
        insecure: false,
        source_object: "OCIRepository apps/demo".into(),
    }
}

fn run(r: ChartRequest, cache: &Cache, credentials: Credentials) -> fluxgate_fetch::fetch::Outcome {
    let opts = Options {
        timeout: Duration::from_secs(5),
        credentials,
        ..Options::default()
    };
    fetch(&[r], &Lock::default(), cache, &opts, &|_| {})
}

#[test]
fn an_anonymous_token_pulls_the_chart() {
    let server = Server::start();
    registry(&server, None);
    let dir = TempDir::new("token");
    let cache = Cache::open(&dir.0.join("cache"));
    let out = run(request(&server, None), &cache, Credentials::none());
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.lock.entries()[0].version, "1.1.0");
}

#[test]
fn a_docker_config_login_gets_the_token_and_is_never_printed() {
    let server = Server::start();
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("robot:hunter2-secret")
    );
    registry(&server, Some(&basic));
    let dir = TempDir::new("login");
    let cache = Cache::open(&dir.0.join("cache"));

    // Anonymous, with a secretRef: the source says it needs credentials.
    let out = run(
        request(&server, Some("registry-auth")),
        &cache,
        Credentials::none(),
    );
    let err = out
        .errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        err.contains("needs credentials") && err.contains("`registry-auth`"),
        "{err}"
    );

    let config = dir.0.join("config.json");
    let write_login = |password: &str| {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("robot:{password}"));
        std::fs::write(
            &config,
            format!(
                r#"{{"auths": {{"127.0.0.1:{}": {{"auth": "{auth}"}}}}}}"#,
                server.port
            ),
        )
        .expect("docker config");
    };
    write_login("hunter2-secret");
    let creds = Credentials::from_files(Some(&config), None);
    let out = run(request(&server, Some("registry-auth")), &cache, creds);
    assert!(out.errors.is_empty(), "{:?}", out.errors);

    // A wrong password: denied, and neither password appears anywhere in the error.
    write_login("wrong-pass-123");
    let creds = Credentials::from_files(Some(&config), None);
    let empty = Cache::open(&dir.0.join("cache2"));
    let out = run(
        request(&server, Some("registry-auth")),
        &empty,
        creds.clone(),
    );
    let shown = format!(
        "{:?} {} {creds:?}",
        out.errors,
        out.errors
            .iter()
            .map(ToString::to_string)
            .collect::<String>()
    );
    assert!(!out.errors.is_empty());
    assert!(
        !shown.contains("wrong-pass-123") && !shown.contains("hunter2"),
        "{shown}"
    );
    assert!(
        !shown.contains(&base64::engine::general_purpose::STANDARD.encode("robot:wrong-pass-123"))
    );
}
