//! Credentials for private sources, read from where the user's other tools keep them: a
//! Docker `config.json` (`auths.<host>.auth`, or `username`/`password`) for OCI registries, a
//! `netrc` for HTTP repositories. Never from the cluster's Secrets, and never printed: the
//! `Debug` form shows only the hosts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// Logins by host (`host` or `host:port`).
#[derive(Clone, Default)]
pub struct Credentials {
    docker: BTreeMap<String, Login>,
    netrc: BTreeMap<String, Login>,
    netrc_default: Option<Login>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("docker_hosts", &self.docker.keys().collect::<Vec<_>>())
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
        }
        if let Some(text) = read(netrc) {
            let (hosts, default) = parse_netrc(&text);
            creds.netrc = hosts;
            creds.netrc_default = default;
        }
        creds
    }

    /// The login for an OCI registry at `host` (`host:port`).
    #[must_use]
    pub fn registry(&self, host: &str) -> Option<&Login> {
        self.docker.get(host).or_else(|| self.netrc.get(host))
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
            netrc_default: None,
        };
        assert!(creds.http("charts.example.com:8443").is_some());
        let shown = format!("{creds:?} {:?}", creds.registry("ghcr.io"));
        assert!(
            !shown.contains("tok") && !shown.contains("s3cret") && !shown.contains("pw"),
            "{shown}"
        );
    }
}
