//! Docker credential helpers, end to end: a private registry imitation on loopback hands out a
//! pull token only for the login `robot` / `helper-secret-XYZ`, which only a fake
//! `docker-credential-fgtest` (a shell script the test puts on PATH) knows. `fetch` runs it
//! (with the registry host on stdin) and succeeds; a missing helper, a failing one and one that
//! knows nothing are clear errors; no secret appears in any output; a warm cache, `check` and
//! `render` never run it.

use std::path::Path;
use std::process::{Command, Output};

use base64::Engine as _;
use fluxgate_testkit::server::{Route, Server};

use super::{TempRepo, chart, hex, text};

const SECRET: &str = "helper-secret-XYZ";

/// `charts/demo` 1.0.0 behind a Bearer token that `/token` gives to `robot:<SECRET>`.
fn private_registry(server: &Server) {
    let challenge = format!(
        r#"Bearer realm="{}/token",service="test-registry",scope="repository:charts/demo:pull""#,
        server.url()
    );
    let guarded = |body: Vec<u8>| Route::Auth {
        expect: "Bearer t0k-from-helper".into(),
        challenge: challenge.clone(),
        body,
    };
    let bytes = chart("1.0.0");
    let digest = hex(&bytes);
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
        "config":{{"mediaType":"application/vnd.cncf.helm.config.v1+json","digest":"sha256:{digest}","size":2}},
        "layers":[{{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","digest":"sha256:{digest}","size":{}}}]}}"#,
        bytes.len()
    );
    server.route(
        "/v2/charts/demo/manifests/1.0.0",
        guarded(manifest.into_bytes()),
    );
    server.route(
        &format!("/v2/charts/demo/blobs/sha256:{digest}"),
        guarded(bytes),
    );
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("robot:{SECRET}"));
    server.route(
        "/token",
        Route::Auth {
            expect: format!("Basic {basic}"),
            challenge: r#"Basic realm="token""#.into(),
            body: br#"{"token":"t0k-from-helper"}"#.to_vec(),
        },
    );
}

/// An executable shell script `dir/name`.
fn script(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
    let mut perms = std::fs::metadata(&path).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms).expect("chmod");
}

#[test]
fn docker_credential_helpers() {
    let server = Server::start();
    private_registry(&server);
    let repo = TempRepo::new("cred-helper");
    let host = format!("127.0.0.1:{}", server.port);
    repo.write(
        "fluxgate.yaml",
        "environments:\n  dev:\n    flux: clusters/dev\n",
    );
    repo.write(
        "clusters/dev/source.yaml",
        &format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {{name: demo, namespace: flux-system}}\nspec: {{url: 'oci://{host}/charts/demo', interval: 1h, ref: {{tag: 1.0.0}}, secretRef: {{name: registry-auth}}}}\n"
        ),
    );
    repo.write(
        "clusters/dev/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: demo, namespace: apps}\nspec:\n  interval: 1h\n  chartRef: {kind: OCIRepository, name: demo, namespace: flux-system}\n",
    );
    let bin = repo.0.join("bin");
    let docker = repo.0.join("docker");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::create_dir_all(&docker).expect("mkdir");
    let asked = repo.0.join("asked");
    // The helper records what it was asked, and answers only `get` for our registry.
    script(
        &bin,
        "docker-credential-fgtest",
        &format!(
            "[ \"$1\" = get ] || exit 3\nhost=$(cat)\nprintf '%s' \"$host\" >> '{}'\n[ \"$host\" = '{host}' ] || {{ echo 'credentials not found in native keychain'; exit 1; }}\nprintf '{{\"ServerURL\":\"%s\",\"Username\":\"robot\",\"Secret\":\"{SECRET}\"}}' \"$host\"",
            asked.display()
        ),
    );
    // Fails, and prints the secret on both streams on its way out.
    script(
        &bin,
        "docker-credential-broken",
        &format!("echo 'keychain locked {SECRET}' >&2\necho '{SECRET}'\nexit 7"),
    );
    script(
        &bin,
        "docker-credential-empty",
        "cat >/dev/null\necho 'credentials not found in native keychain'\nexit 1",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let cache = repo.path("cache");
    let root = repo.path("");
    let run = |args: &[&str], config: &str| -> Output {
        std::fs::write(docker.join("config.json"), config).expect("config");
        Command::new(env!("CARGO_BIN_EXE_fluxgate"))
            .args(args)
            .env("PATH", &path)
            .env("DOCKER_CONFIG", &docker)
            .env("NETRC", repo.0.join("no-netrc"))
            .env("FLUXGATE_CACHE", &cache)
            .env("CI", "true")
            .output()
            .expect("the fluxgate binary runs")
    };
    let no_secret = |out: &Output| {
        let all = format!("{}{:?}", text(out), out);
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("robot:{SECRET}"));
        assert!(
            !all.contains(SECRET) && !all.contains(&basic),
            "a secret in the output: {all}"
        );
    };
    let fetch = ["fetch", root.as_str()];

    // A helper that is missing: a clear error naming it, exit 2.
    let out = run(&fetch, r#"{"credsStore": "absent"}"#);
    no_secret(&out);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "error: oci://{host}/charts/demo: Docker credential helper `docker-credential-absent` (credsStore/credHelpers of the Docker config) is not on PATH"
        )),
        "{}",
        text(&out)
    );

    // A helper that fails: its exit status, none of its output.
    let out = run(
        &fetch,
        &format!(r#"{{"credHelpers": {{"{host}": "broken"}}}}"#),
    );
    no_secret(&out);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("Docker credential helper `docker-credential-broken` (credsStore/credHelpers of the Docker config) failed (exit status: 7)"),
        "{}",
        text(&out)
    );

    // A helper that knows nothing of the host: anonymous, refused, and the source's secretRef
    // is named.
    let out = run(&fetch, r#"{"credsStore": "empty"}"#);
    no_secret(&out);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "error: oci://{host}/charts/demo: needs credentials"
        )),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("`registry-auth`"), "{}", text(&out));

    // The helper with the login: it is asked for the registry host, the chart is fetched.
    let config = format!(r#"{{"credHelpers": {{"{host}": "fgtest"}}, "credsStore": "broken"}}"#);
    let out = run(&fetch, &config);
    no_secret(&out);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("1 chart: 1 downloaded"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&asked).expect("the helper was asked"),
        host,
        "asked once, for the host"
    );
    let lock = std::fs::read_to_string(repo.0.join("fluxgate.lock")).expect("lock");
    assert!(
        lock.contains(&format!("oci://{host}/charts/demo demo 1.0.0 sha256:")),
        "{lock}"
    );

    // A warm cache needs no login: the helper is not run; nor by check or render.
    std::fs::remove_file(&asked).expect("rm");
    let out = run(&["fetch", root.as_str(), "--locked"], &config);
    no_secret(&out);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for args in [
        vec!["check", root.as_str()],
        vec!["render", root.as_str(), "--env", "dev"],
    ] {
        let out = run(&args, &config);
        no_secret(&out);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{args:?}: {}",
            text(&out)
        );
    }
    assert!(!asked.exists(), "the helper ran without need");
}
