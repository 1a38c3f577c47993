//! Pulling a Helm chart from an OCI registry (the distribution API): tags, the manifest by tag
//! or digest, the chart layer (`application/vnd.cncf.helm.chart.content.v1.tar+gzip`) by its
//! digest, verified. Anonymous pulls go through the registry's token flow (a 401 with
//! `WWW-Authenticate: Bearer realm=…,service=…,scope=…` is answered by fetching a token
//! from the realm); a Docker config login is sent to the realm, or as Basic auth.

use std::sync::Mutex;

use crate::cache::Digest;
use crate::creds::{Credentials, Login};
use crate::error::{Error, display_url};
use crate::http::{Http, Response, status_message};

pub const HELM_CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";
const MAX_MANIFEST: u64 = 4 * 1024 * 1024;
const MAX_TAGS_BODY: u64 = 16 * 1024 * 1024;
const MAX_TAG_PAGES: usize = 50;
/// The largest chart archive fetched.
pub const MAX_CHART_BYTES: u64 = 100 * 1024 * 1024;

/// `oci://host[:port]/path` split into its registry and repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub host: String,
    pub repository: String,
}

impl Reference {
    pub fn parse(url: &str) -> Result<Reference, Error> {
        let bad = || Error::Oci {
            source_url: display_url(url),
            message: "not an oci://host/repository URL".into(),
        };
        let rest = url.strip_prefix("oci://").ok_or_else(bad)?;
        let (host, repository) = rest.split_once('/').ok_or_else(bad)?;
        let repository = repository.trim_matches('/');
        let host_ok = !host.is_empty() && !host.contains('@');
        let repo_ok = !repository.is_empty()
            && repository.split('/').all(|p| {
                !p.is_empty()
                    && p != ".."
                    && p.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)
                    })
            });
        if !(host_ok && repo_ok) {
            return Err(bad());
        }
        Ok(Reference {
            host: host.to_string(),
            repository: repository.to_string(),
        })
    }

    /// `http` for loopback registries (as Docker treats `localhost`) and `insecure` sources,
    /// else `https`.
    fn base(&self, insecure: bool) -> String {
        let name = self
            .host
            .rsplit_once(':')
            .map_or(self.host.as_str(), |(h, p)| {
                if p.bytes().all(|b| b.is_ascii_digit()) {
                    h
                } else {
                    self.host.as_str()
                }
            });
        let loopback = name == "localhost" || name.starts_with("127.") || name == "[::1]";
        let scheme = if insecure || loopback {
            "http"
        } else {
            "https"
        };
        format!("{scheme}://{}", self.host)
    }
}

/// A client for one repository of one registry, remembering its token.
pub struct Registry<'a> {
    http: &'a Http,
    reference: Reference,
    base: String,
    source: String,
    creds: &'a Credentials,
    secret_ref: Option<&'a str>,
    auth: Mutex<Option<String>>,
}

impl<'a> Registry<'a> {
    pub fn new(
        http: &'a Http,
        creds: &'a Credentials,
        source: &str,
        insecure: bool,
        secret_ref: Option<&'a str>,
    ) -> Result<Registry<'a>, Error> {
        let reference = Reference::parse(source)?;
        let base = reference.base(insecure);
        Ok(Registry {
            http,
            base,
            creds,
            secret_ref,
            source: source.to_string(),
            reference,
            auth: Mutex::new(None),
        })
    }

    fn fail(&self, message: String) -> Error {
        Error::Oci {
            source_url: display_url(&self.source),
            message,
        }
    }

    /// GET under `/v2/<repository>/`, answering one authentication challenge.
    fn get(&self, path: &str, accept: &str, limit: u64) -> Result<Response, Error> {
        let url = format!("{}/v2/{}/{path}", self.base, self.reference.repository);
        let current = self.auth.lock().map(|a| a.clone()).unwrap_or_default();
        let first = self.send(&url, accept, current.as_deref(), limit)?;
        if first.status != 401 {
            return Ok(first);
        }
        let challenge = first.www_authenticate.clone().unwrap_or_default();
        let auth = self.authenticate(&challenge)?;
        if let Ok(mut slot) = self.auth.lock() {
            *slot = Some(auth.clone());
        }
        let second = self.send(&url, accept, Some(&auth), limit)?;
        if matches!(second.status, 401 | 403) {
            return Err(self.denied(second.status));
        }
        Ok(second)
    }

    fn send(
        &self,
        url: &str,
        accept: &str,
        auth: Option<&str>,
        limit: u64,
    ) -> Result<Response, Error> {
        let mut headers = vec![("Accept", accept)];
        if let Some(a) = auth {
            headers.push(("Authorization", a));
        }
        self.http.get(url, &headers, limit, &self.source)
    }

    /// The login for the registry, asked only when the registry wants authentication (a
    /// credential helper runs then, not for anonymous pulls).
    fn login(&self) -> Result<Option<Login>, Error> {
        self.creds
            .registry(&self.reference.host)
            .map_err(|message| self.fail(message))
    }

    fn denied(&self, status: u16) -> Error {
        let login = match self.login() {
            Ok(login) => login,
            Err(e) => return e,
        };
        match (self.secret_ref, login) {
            (Some(secret), None) => Error::NeedsCredentials {
                source_url: display_url(&self.source),
                message: format!(
                    "the source's secretRef names Secret `{secret}`, and no Docker config login \
                     for {} was found",
                    self.reference.host
                ),
            },
            _ => self.fail(format!("access denied (HTTP {status})")),
        }
    }

    /// The `Authorization` value a challenge asks for.
    fn authenticate(&self, challenge: &str) -> Result<String, Error> {
        let (scheme, params) = challenge.trim().split_once(' ').unwrap_or((challenge, ""));
        if scheme.eq_ignore_ascii_case("basic") {
            return self
                .login()?
                .as_ref()
                .map(Login::basic)
                .ok_or_else(|| self.denied(401));
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(self.fail(format!("unsupported authentication scheme `{scheme}`")));
        }
        let params = challenge_params(params);
        let param = |k: &str| {
            params
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.as_str())
        };
        let realm =
            param("realm").ok_or_else(|| self.fail("a Bearer challenge without a realm".into()))?;
        if !(realm.starts_with("https://") || realm.starts_with("http://")) {
            return Err(self.fail("the token realm is not an http(s) URL".into()));
        }
        let mut query = Vec::new();
        if let Some(service) = param("service") {
            query.push(format!("service={}", encode(service)));
        }
        let scope = param("scope").map_or_else(
            || format!("repository:{}:pull", self.reference.repository),
            str::to_string,
        );
        query.push(format!("scope={}", encode(&scope)));
        let sep = if realm.contains('?') { '&' } else { '?' };
        let url = format!("{realm}{sep}{}", query.join("&"));
        let basic = self.login()?.as_ref().map(Login::basic);
        let mut headers = vec![("Accept", "application/json")];
        if let Some(b) = basic.as_deref() {
            headers.push(("Authorization", b));
        }
        let response = self.http.get(&url, &headers, MAX_MANIFEST, &self.source)?;
        if response.status != 200 {
            return Err(if matches!(response.status, 401 | 403) {
                self.denied(response.status)
            } else {
                self.fail(format!(
                    "token request: {}",
                    status_message(response.status, realm)
                ))
            });
        }
        let json: serde_json::Value = serde_json::from_slice(&response.body)
            .map_err(|_| self.fail("the token response is not JSON".into()))?;
        let token = json
            .get("token")
            .or_else(|| json.get("access_token"))
            .and_then(|t| t.as_str())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| self.fail("the token response holds no token".into()))?;
        Ok(format!("Bearer {token}"))
    }

    /// Every tag of the repository (following `Link` pages, bounded).
    pub fn tags(&self) -> Result<Vec<String>, Error> {
        let mut tags = Vec::new();
        let mut path = "tags/list".to_string();
        for _ in 0..MAX_TAG_PAGES {
            let r = self.get(&path, "application/json", MAX_TAGS_BODY)?;
            if r.status != 200 {
                return Err(self.fail(format!(
                    "listing tags: {}",
                    status_message(r.status, &self.source)
                )));
            }
            let json: serde_json::Value = serde_json::from_slice(&r.body)
                .map_err(|_| self.fail("the tag list is not JSON".into()))?;
            tags.extend(
                json.get("tags")
                    .and_then(|t| t.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str().map(str::to_string)),
            );
            // `Link: </v2/<repo>/tags/list?n=..&last=..>; rel="next"`
            let Some(next) = r.link.as_deref().and_then(next_page) else {
                return Ok(tags);
            };
            let prefix = format!("/v2/{}/", self.reference.repository);
            let Some(rest) = next.strip_prefix(&prefix) else {
                return Ok(tags);
            };
            path = rest.to_string();
        }
        Ok(tags)
    }

    /// The chart archive `reference` (a tag or a `sha256:` digest) points at, verified against
    /// the layer digest (and a digest reference against the manifest's own digest).
    pub fn pull_chart(&self, reference: &str) -> Result<(Vec<u8>, Digest), Error> {
        let r = self.get(
            &format!("manifests/{reference}"),
            MANIFEST_ACCEPT,
            MAX_MANIFEST,
        )?;
        if r.status != 200 {
            return Err(self.fail(status_message(
                r.status,
                &format!("{}:{reference}", self.source),
            )));
        }
        if reference.starts_with("sha256:") {
            let actual = Digest::of(&r.body);
            if Some(&actual) != Digest::parse(reference).as_ref() {
                return Err(self.fail(format!(
                    "manifest digest mismatch: asked for {reference}, got {actual}"
                )));
            }
        }
        let manifest: serde_json::Value = serde_json::from_slice(&r.body)
            .map_err(|_| self.fail(format!("the manifest of {reference} is not JSON")))?;
        let config_type = manifest
            .pointer("/config/mediaType")
            .and_then(|m| m.as_str());
        let layers = manifest
            .get("layers")
            .and_then(|l| l.as_array())
            .cloned()
            .unwrap_or_default();
        let layer = layers
            .iter()
            .find(|l| l.get("mediaType").and_then(|m| m.as_str()) == Some(HELM_CHART_LAYER))
            .ok_or_else(|| {
                self.fail(format!(
                    "{reference} is not a Helm chart (no {HELM_CHART_LAYER} layer{})",
                    if config_type == Some(HELM_CONFIG) {
                        ""
                    } else {
                        "; its config is not Helm's either"
                    }
                ))
            })?;
        let digest = layer
            .get("digest")
            .and_then(|d| d.as_str())
            .and_then(Digest::parse)
            .ok_or_else(|| self.fail("the chart layer has no sha256 digest".into()))?;
        let size = layer
            .get("size")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        if size > MAX_CHART_BYTES {
            return Err(self.fail(format!(
                "the chart layer is larger than {MAX_CHART_BYTES} bytes"
            )));
        }
        let blob = self.get(&format!("blobs/{digest}"), "*/*", MAX_CHART_BYTES)?;
        if blob.status != 200 {
            return Err(self.fail(status_message(
                blob.status,
                &format!("{}@{digest}", self.source),
            )));
        }
        let actual = Digest::of(&blob.body);
        if actual != digest {
            return Err(self.fail(format!(
                "chart layer digest mismatch: expected {digest}, got {actual}"
            )));
        }
        Ok((blob.body, digest))
    }
}

/// `realm="…",service="…",scope="…"` as pairs.
fn challenge_params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some((name, after)) = rest.split_once('=') else {
            break;
        };
        let name = name.trim().trim_start_matches(',').trim().to_string();
        let after = after.trim_start();
        let (value, next) = if let Some(q) = after.strip_prefix('"') {
            let end = q.find('"').unwrap_or(q.len());
            (q[..end].to_string(), q.get(end + 1..).unwrap_or(""))
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        out.push((name, value));
        rest = next.trim_start().trim_start_matches(',').trim_start();
    }
    out
}

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn next_page(link: &str) -> Option<String> {
    link.split(',')
        .find(|l| l.contains("rel=\"next\""))
        .and_then(|l| {
            let start = l.find('<')? + 1;
            let end = l.find('>')?;
            l.get(start..end).map(str::to_string)
        })
}

/// A chart tag back into a version: Helm pushes `1.0.0+build` as the tag `1.0.0_build`.
#[must_use]
pub fn tag_version(tag: &str) -> String {
    tag.replace('_', "+")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        let r = Reference::parse("oci://127.0.0.1:5000/charts/demo").expect("parses");
        assert_eq!(
            (r.host.as_str(), r.repository.as_str()),
            ("127.0.0.1:5000", "charts/demo")
        );
        assert_eq!(r.base(false), "http://127.0.0.1:5000");
        let r = Reference::parse("oci://ghcr.io/org/demo").expect("parses");
        assert_eq!(r.base(false), "https://ghcr.io");
        for bad in [
            "https://x/y",
            "oci://host",
            "oci://h/../x",
            "oci://u:p@h/x",
            "oci://h/UPPER",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn challenges() {
        let p = challenge_params(
            r#"realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull""#,
        );
        assert_eq!(p[0], ("realm".into(), "https://auth.example/token".into()));
        assert_eq!(p[2], ("scope".into(), "repository:a/b:pull".into()));
        assert_eq!(encode("repository:a/b:pull"), "repository%3Aa%2Fb%3Apull");
        assert_eq!(
            next_page(r#"</v2/a/tags/list?n=2&last=b>; rel="next""#).as_deref(),
            Some("/v2/a/tags/list?n=2&last=b")
        );
        assert_eq!(tag_version("1.0.0_build.1"), "1.0.0+build.1");
    }
}
