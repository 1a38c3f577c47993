//! Credentials for private sources, read from where the user's other tools keep them: a
//! Docker `config.json` for OCI registries (`auths.<host>.auth`, or `username`/`password`, or
//! a credential helper named by `credHelpers.<host>` or `credsStore`), a `netrc` for HTTP
//! repositories and git over HTTP. Never from the cluster's Secrets, and never printed: the
//! `Debug` form shows only the hosts.
//!
//! A credential helper is run as Docker and Helm run it: `docker-credential-<name> get` with
//! the registry's server address on stdin, answering `{"Username": …, "Secret": …}` on stdout.
//! It is run only by `fetch`, only when a registry asks for authentication, at most once per
//! host, and with a time limit. Its output is never shown, not even when it fails (only its
//! exit status is).

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;

/// A user name and a password (or token).
#[derive(Clone)]
pub struct Login {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Login(<redacted>)")
    }
}

impl Login {
    /// The `Authorization: Basic …` value.
    pub(crate) fn basic(&self) -> String {
        let raw = format!("{}:{}", self.user, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }
}

/// How long a credential helper may take (one that prompts would otherwise hang `fetch`).
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(30);

/// A helper's answer for a host: a login, none (it holds nothing for the host), or why it
/// failed (no secret in it).
type HelperAnswer = Result<Option<Login>, String>;

/// Logins by host (`host` or `host:port`).
#[derive(Clone, Default)]
pub struct Credentials {
    docker: BTreeMap<String, Login>,
    /// `credHelpers`: host to helper name.
    helpers: BTreeMap<String, String>,
    /// `credsStore`: the helper for every other host.
    store: Option<String>,
    /// What each helper said, by host (asked once per fetch).
    asked: Arc<Mutex<BTreeMap<String, HelperAnswer>>>,
    netrc: BTreeMap<String, Login>,
    netrc_default: Option<Login>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("docker_hosts", &self.docker.keys().collect::<Vec<_>>())
            .field("helpers", &self.helpers)
            .field("store", &self.store)
            .field("netrc_hosts", &self.netrc.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// No credentials: every request is anonymous.
    #[must_use]
    pub fn none() -> Credentials {
        Credentials::default()
    }

    /// `$DOCKER_CONFIG/config.json` (else `~/.docker/config.json`) and `$NETRC` (else
    /// `~/.netrc`); files that are missing or unreadable give no logins.
    #[must_use]
    pub fn from_env() -> Credentials {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let docker = std::env::var_os("DOCKER_CONFIG")
            .map(|d| PathBuf::from(d).join("config.json"))
            .or_else(|| home.as_ref().map(|h| h.join(".docker").join("config.json")));
        let netrc = std::env::var_os("NETRC")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".netrc")));
        Credentials::from_files(docker.as_deref(), netrc.as_deref())
    }

    /// The logins of a Docker config and a netrc file.
    #[must_use]
    pub fn from_files(docker: Option<&Path>, netrc: Option<&Path>) -> Credentials {
        let read = |p: Option<&Path>| p.and_then(|p| std::fs::read_to_string(p).ok());
        let mut creds = Credentials::default();
        if let Some(text) = read(docker) {
            creds.docker = parse_docker_config(&text);
            (creds.helpers, creds.store) = parse_docker_helpers(&text);
        }
        if let Some(text) = read(netrc) {
            let (hosts, default) = parse_netrc(&text);
            creds.netrc = hosts;
            creds.netrc_default = default;
        }
        creds
    }

    /// The login for an OCI registry at `host` (`host:port`), as Docker picks it: the host's
    /// `credHelpers` entry, else the `credsStore` helper (falling back to `auths` when it holds
    /// nothing for the host), else `auths`, else the netrc. Running a helper can fail: the
    /// message names the helper and shows none of its output.
    pub fn registry(&self, host: &str) -> Result<Option<Login>, String> {
        let fixed = || {
            self.docker
                .get(host)
                .or_else(|| self.netrc.get(host))
                .cloned()
        };
        let helper = self.helpers.get(host).or(self.store.as_ref());
        let Some(helper) = helper else {
            return Ok(fixed());
        };
        let answer = {
            let mut asked = self
                .asked
                .lock()
                .map_err(|_| "credential helper state poisoned".to_string())?;
            asked
                .entry(host.to_string())
                .or_insert_with(|| run_helper(helper, &server_address(host), HELPER_TIMEOUT))
                .clone()
        };
        match answer {
            Ok(Some(login)) => Ok(Some(login)),
            // Only the store falls back: a host's own helper is the one Docker would ask.
            Ok(None) if !self.helpers.contains_key(host) => Ok(fixed()),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The login for an HTTP repository at `host` (without the port, as netrc names machines).
    #[must_use]
    pub fn http(&self, host: &str) -> Option<&Login> {
        let bare = host.rsplit_once(':').map_or(host, |(h, _)| h);
        self.netrc
            .get(host)
            .or_else(|| self.netrc.get(bare))
            .or(self.netrc_default.as_ref())
    }
}

/// `auths` of a Docker config; keys are reduced to `host[:port]` (`https://index.docker.io/v1/`
/// is `index.docker.io`).
fn parse_docker_config(text: &str) -> BTreeMap<String, Login> {
    let mut out = BTreeMap::new();
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return out;
    };
    let Some(auths) = json.get("auths").and_then(|a| a.as_object()) else {
        return out;
    };
    for (key, entry) in auths {
        let host = key
            .split_once("://")
            .map_or(key.as_str(), |(_, rest)| rest)
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let from_auth = entry
            .get("auth")
            .and_then(|a| a.as_str())
            .and_then(|a| base64::engine::general_purpose::STANDARD.decode(a).ok())
            .and_then(|raw| String::from_utf8(raw).ok())
            .and_then(|pair| {
                pair.split_once(':').map(|(u, p)| Login {
                    user: u.to_string(),
                    password: p.to_string(),
                })
            });
        let from_fields = || {
            let field = |k: &str| entry.get(k).and_then(|v| v.as_str()).map(str::to_string);
            Some(Login {
                user: field("username")?,
                password: field("password")?,
            })
        };
        if let Some(login) = from_auth.or_else(from_fields) {
            out.insert(host, login);
        }
    }
    out
}

/// `credHelpers` and `credsStore` of a Docker config (host keys reduced like `auths`' keys).
fn parse_docker_helpers(text: &str) -> (BTreeMap<String, String>, Option<String>) {
    let mut helpers = BTreeMap::new();
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return (helpers, None);
    };
    if let Some(map) = json.get("credHelpers").and_then(|h| h.as_object()) {
        for (key, name) in map {
            if let Some(name) = name.as_str().filter(|n| !n.is_empty()) {
                helpers.insert(host_key(key), name.to_string());
            }
        }
    }
    let store = json
        .get("credsStore")
        .and_then(|s| s.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    (helpers, store)
}

fn host_key(key: &str) -> String {
    key.split_once("://")
        .map_or(key, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// What a helper is asked for `host`: Docker Hub's logins are stored under its v1 URL.
fn server_address(host: &str) -> String {
    match host {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => {
            "https://index.docker.io/v1/".to_string()
        }
        other => other.to_string(),
    }
}

/// Runs `docker-credential-<name> get` for `server`. `Ok(None)` when it holds no credentials
/// for it; an error (without any of its output) when it fails.
fn run_helper(name: &str, server: &str, timeout: Duration) -> HelperAnswer {
    let program = format!("docker-credential-{name}");
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        || name.starts_with('.')
    {
        return Err(format!(
            "the Docker config names credential helper `{program}`, which is not a plain program name"
        ));
    }
    let what = format!(
        "Docker credential helper `{program}` (credsStore/credHelpers of the Docker config)"
    );
    let mut child = Command::new(&program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Never shown (a failing helper may still print a secret), so not even read.
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!("{what} is not on PATH")
            } else {
                format!("{what} could not be started: {e}")
            }
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A helper that exits without reading its input is judged by its exit status below.
        let _ = stdin.write_all(server.as_bytes());
    }
    // Read aside, so a helper that writes much cannot block on a full pipe while we wait.
    let pipe = child.stdout.take();
    let stdout = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(p) = pipe {
            let _ = p.take(1 << 20).read_to_end(&mut out);
        }
        out
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{what} did not answer within {}s",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("{what} failed: {e}")),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    if !status.success() {
        // docker-credential-helpers' "credentials not found in native keychain".
        if String::from_utf8_lossy(&stdout).contains("credentials not found") {
            return Ok(None);
        }
        // Its output is not shown: a helper that fails may still have printed a secret.
        return Err(format!(
            "{what} failed ({status}); run `{program} get` with the registry host on stdin to see why"
        ));
    }
    let json: serde_json::Value = serde_json::from_slice(&stdout)
        .map_err(|_| format!("{what} answered something that is not JSON"))?;
    let field = |k: &str| json.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    let (user, secret) = (field("Username"), field("Secret"));
    if secret.is_empty() {
        return Ok(None);
    }
    if user == "<token>" {
        return Err(format!(
            "{what} answered an identity token, which fluxgate does not exchange; log in with a user name and password or token"
        ));
    }
    Ok(Some(Login {
        user: user.to_string(),
        password: secret.to_string(),
    }))
}

/// `machine HOST login USER password PASS` entries and the `default` one.
fn parse_netrc(text: &str) -> (BTreeMap<String, Login>, Option<Login>) {
    let mut hosts = BTreeMap::new();
    let mut default = None;
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let mut i = 0;
    while i < tokens.len() {
        let machine = match tokens[i] {
            "machine" => {
                i += 1;
                tokens.get(i).map(|h| Some((*h).to_string()))
            }
            "default" => Some(None),
            _ => None,
        };
        i += 1;
        let Some(machine) = machine else {
            continue;
        };
        let (mut user, mut password) = (String::new(), String::new());
        while i < tokens.len() && !matches!(tokens[i], "machine" | "default") {
            match (tokens[i], tokens.get(i + 1)) {
                ("login", Some(v)) => user = (*v).to_string(),
                ("password", Some(v)) => password = (*v).to_string(),
                _ => {
                    i += 1;
                    continue;
                }
            }
            i += 2;
        }
        let login = Login { user, password };
        match machine {
            Some(host) => {
                hosts.insert(host, login);
            }
            None => default = Some(login),
        }
    }
    (hosts, default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_config_and_netrc() {
        let docker = parse_docker_config(
            r#"{"auths": {"https://index.docker.io/v1/": {"auth": "Ym9iOnMzY3JldA=="},
                "ghcr.io": {"username": "ann", "password": "tok"}, "bad": {}}}"#,
        );
        assert_eq!(
            docker.keys().collect::<Vec<_>>(),
            ["ghcr.io", "index.docker.io"]
        );
        assert_eq!(docker["index.docker.io"].password, "s3cret");
        let (hosts, default) = parse_netrc(
            "machine charts.example.com login bob password pw\n default login anon password x\n",
        );
        assert_eq!(hosts["charts.example.com"].user, "bob");
        assert_eq!(default.map(|d| d.user).as_deref(), Some("anon"));
        let creds = Credentials {
            docker,
            netrc: hosts,
            ..Credentials::default()
        };
        assert!(creds.http("charts.example.com:8443").is_some());
        let shown = format!("{creds:?} {:?}", creds.registry("ghcr.io"));
        assert!(matches!(creds.registry("ghcr.io"), Ok(Some(_))));
        assert!(
            !shown.contains("tok") && !shown.contains("s3cret") && !shown.contains("pw"),
            "{shown}"
        );
    }

    #[test]
    fn docker_helpers_are_read_and_chosen_per_host() {
        let (helpers, store) = parse_docker_helpers(
            r#"{"credHelpers": {"https://ghcr.io": "gh", "r.example:5000": "ecr", "x": ""},
                "credsStore": "desktop"}"#,
        );
        assert_eq!(
            helpers.into_iter().collect::<Vec<_>>(),
            [
                ("ghcr.io".to_string(), "gh".to_string()),
                ("r.example:5000".to_string(), "ecr".to_string())
            ]
        );
        assert_eq!(store.as_deref(), Some("desktop"));
        assert_eq!(server_address("docker.io"), "https://index.docker.io/v1/");
        assert_eq!(server_address("ghcr.io"), "ghcr.io");
        // A name that is not a plain program name is never run.
        let err = run_helper("../../bin/sh", "ghcr.io", HELPER_TIMEOUT).unwrap_err();
        assert!(err.contains("not a plain program name"), "{err}");
        let missing = run_helper("fluxgate-test-no-such-helper", "ghcr.io", HELPER_TIMEOUT);
        assert!(missing.unwrap_err().ends_with("is not on PATH"));
    }
}
