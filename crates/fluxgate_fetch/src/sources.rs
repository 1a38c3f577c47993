//! What to fetch: the charts the rendered objects of a repository's environments ask for.
//! Each HelmRelease's `spec.chart.spec` (with its `sourceRef`) or `spec.chartRef` (an
//! OCIRepository, or a HelmChart and its HelmRepository) becomes one [`ChartRequest`] naming
//! the source URL, the chart and the version constraint, tag or digest. Sources fetch cannot
//! read (Bucket charts) and references to sources that are not rendered are errors naming the
//! release, never a silent skip. A chart from a GitRepository is its folder at the commit the
//! source's `ref` names (`file://`, `https://`, `http://`, `git://`; `ssh://` needs a key
//! fluxgate does not read, which `fetch` says).

use std::collections::{BTreeMap, BTreeSet};

use fluxgate_yaml::Node;

use crate::error::Error;

/// How a chart is fetched.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// A classic Helm repository: `<url>/index.yaml`, then the archive it lists.
    HelmHttp,
    /// An OCI registry: `<url>` is `oci://host/repository` of the chart itself.
    Oci,
    /// A GitRepository: the chart folder at a commit, packed (fetched shallow unless `file://`).
    Git,
}

/// Which version of the chart.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Want {
    /// A Masterminds constraint (an exact version is a constraint too); `*` when unset. For a
    /// GitRepository, `ref.semver` over its tags.
    Semver(String),
    /// An OCI tag, taken as it is.
    Tag(String),
    /// An OCI manifest digest (`sha256:…`).
    Digest(String),
    /// A git revision: a commit id, `refs/tags/<tag>` or `refs/heads/<branch>`. A branch or a
    /// tag is satisfied by the commit the lock pins until the lock is updated.
    GitRev(String),
}

/// One chart to fetch.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChartRequest {
    pub protocol: Protocol,
    /// The URL as the lock records it (no trailing `/`).
    pub source: String,
    pub chart: String,
    pub want: Want,
    /// The source object's `spec.secretRef` names a Secret: credentials are needed.
    pub secret_ref: Option<String>,
    /// `spec.insecure`: plain HTTP to the registry.
    pub insecure: bool,
    /// `kind namespace/name` of the source object, for messages.
    pub source_object: String,
}

/// Every chart request the HelmReleases among `objects` make, sorted and without duplicates,
/// and an error for each release whose chart cannot be fetched.
pub fn chart_requests<'a>(
    objects: impl IntoIterator<Item = &'a Node>,
) -> (Vec<ChartRequest>, Vec<Error>) {
    let objects: Vec<&Node> = objects.into_iter().collect();
    let mut by_key: BTreeMap<(String, String, String), &Node> = BTreeMap::new();
    for obj in &objects {
        let (Some(kind), Some(name)) = (obj.str_at(&["kind"]), obj.str_at(&["metadata", "name"]))
        else {
            continue;
        };
        let ns = obj.str_at(&["metadata", "namespace"]).unwrap_or("default");
        by_key.insert((kind.to_string(), ns.to_string(), name.to_string()), obj);
    }
    let mut requests = BTreeSet::new();
    let mut errors = Vec::new();
    for obj in &objects {
        let is_release = obj.str_at(&["kind"]) == Some("HelmRelease")
            && obj
                .str_at(&["apiVersion"])
                .is_some_and(|a| a.starts_with("helm.toolkit.fluxcd.io/"));
        if !is_release {
            continue;
        }
        match release_request(obj, &by_key) {
            Ok(Some(r)) => {
                requests.insert(r);
            }
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    (requests.into_iter().collect(), errors)
}

type Index<'a> = BTreeMap<(String, String, String), &'a Node>;

fn release_request<'a>(
    release: &'a Node,
    objects: &Index<'a>,
) -> Result<Option<ChartRequest>, Error> {
    let ns = release
        .str_at(&["metadata", "namespace"])
        .unwrap_or("default");
    let id = format!(
        "HelmRelease {ns}/{}",
        release.str_at(&["metadata", "name"]).unwrap_or("")
    );
    let find = |field: &'a Node| find_source(field, ns, objects, &id);
    if let Some(spec) = release.path(&["spec", "chart", "spec"]) {
        let chart = spec.str_at(&["chart"]).unwrap_or_default();
        let version = spec.get("version").and_then(Node::scalar_text);
        let Some(source_ref) = spec.get("sourceRef") else {
            return Ok(None);
        };
        let (kind, source) = find(source_ref)?;
        return from_chart_source(kind, source, chart, version, &id).map(Some);
    }
    let Some(chart_ref) = release.path(&["spec", "chartRef"]) else {
        return Ok(None);
    };
    let (kind, source) = find(chart_ref)?;
    match kind {
        "OCIRepository" => oci_repository(source).map(Some),
        "HelmChart" => {
            let chart = source.str_at(&["spec", "chart"]).unwrap_or_default();
            let version = source
                .get("spec")
                .and_then(|s| s.get("version"))
                .and_then(Node::scalar_text);
            let Some(source_ref) = source.path(&["spec", "sourceRef"]) else {
                return Ok(None);
            };
            let (kind, repo) = find(source_ref)?;
            from_chart_source(kind, repo, chart, version, &id).map(Some)
        }
        other => Err(Error::Unsupported {
            source_url: id,
            message: format!(
                "chartRef kind `{other}` is not one Flux accepts (OCIRepository, HelmChart)"
            ),
        }),
    }
}

/// The object a `sourceRef` or `chartRef` names (its namespace defaults to the release's).
fn find_source<'a>(
    field: &'a Node,
    ns: &str,
    objects: &Index<'a>,
    id: &str,
) -> Result<(&'a str, &'a Node), Error> {
    let kind = field.str_at(&["kind"]).unwrap_or_default();
    let name = field.str_at(&["name"]).unwrap_or_default();
    let src_ns = field.str_at(&["namespace"]).unwrap_or(ns);
    objects
        .get(&(kind.to_string(), src_ns.to_string(), name.to_string()))
        .map(|o| (kind, *o))
        .ok_or_else(|| Error::Unsupported {
            source_url: format!("{kind} {src_ns}/{name}"),
            message: format!(
                "{id} names it as its chart source but no environment renders it, so there is \
                 nothing to fetch"
            ),
        })
}

fn object_label(kind: &str, obj: &Node) -> String {
    format!(
        "{kind} {}/{}",
        obj.str_at(&["metadata", "namespace"]).unwrap_or("default"),
        obj.str_at(&["metadata", "name"]).unwrap_or("")
    )
}

/// Whether the source allows plain HTTP to its registry (`spec.insecure: true`).
fn insecure(source: &Node) -> bool {
    source.path(&["spec", "insecure"]).and_then(Node::as_bool) == Some(true)
}

fn secret_ref(obj: &Node) -> Option<String> {
    obj.str_at(&["spec", "secretRef", "name"])
        .map(str::to_string)
}

/// A chart named by `spec.chart.spec` (or a HelmChart) from a HelmRepository, GitRepository
/// or Bucket.
fn from_chart_source(
    kind: &str,
    source: &Node,
    chart: &str,
    version: Option<String>,
    id: &str,
) -> Result<ChartRequest, Error> {
    let label = object_label(kind, source);
    let url = crate::lock::source_key(source.str_at(&["spec", "url"]).unwrap_or_default());
    match kind {
        "HelmRepository" => {
            if url.is_empty() {
                return Err(Error::Unsupported {
                    source_url: label,
                    message: "it has no spec.url".into(),
                });
            }
            let want = Want::Semver(version.unwrap_or_else(|| "*".to_string()));
            let oci = source.str_at(&["spec", "type"]) == Some("oci") || url.starts_with("oci://");
            Ok(ChartRequest {
                protocol: if oci {
                    Protocol::Oci
                } else {
                    Protocol::HelmHttp
                },
                source: if oci { format!("{url}/{chart}") } else { url },
                chart: chart.to_string(),
                want,
                secret_ref: secret_ref(source),
                insecure: insecure(source),
                source_object: label,
            })
        }
        "GitRepository" if !url.is_empty() => git_request(source, &url, chart, id, label),
        _ => Err(Error::Unsupported {
            source_url: if url.is_empty() {
                label
            } else {
                crate::display_url(&url)
            },
            message: format!(
                "{id} takes chart `{chart}` from a {kind}: fetching charts from a {kind} is not \
                 supported yet (put the chart into the `charts:` folder instead)"
            ),
        }),
    }
}

/// A chart folder of a GitRepository at the revision its `ref` names.
fn git_request(
    source: &Node,
    url: &str,
    chart: &str,
    id: &str,
    label: String,
) -> Result<ChartRequest, Error> {
    let path = chart.trim_start_matches("./").trim_matches('/');
    if path.is_empty() || path.split('/').any(|p| p == ".." || p.is_empty()) {
        return Err(Error::Unsupported {
            source_url: crate::display_url(url),
            message: format!(
                "{id} names chart path `{chart}`, which is not a folder of the repository"
            ),
        });
    }
    let r = |k: &str| source.path(&["spec", "ref", k]).and_then(Node::scalar_text);
    // Flux's precedence: commit, name, semver, tag, branch; no ref is `master`.
    let want = if let Some(c) = r("commit") {
        Want::GitRev(c)
    } else if let Some(n) = r("name") {
        Want::GitRev(n)
    } else if let Some(range) = r("semver") {
        Want::Semver(range)
    } else if let Some(t) = r("tag") {
        Want::GitRev(format!("refs/tags/{t}"))
    } else {
        Want::GitRev(format!(
            "refs/heads/{}",
            r("branch").unwrap_or_else(|| "master".to_string())
        ))
    };
    Ok(ChartRequest {
        protocol: Protocol::Git,
        source: url.to_string(),
        chart: path.to_string(),
        want,
        secret_ref: secret_ref(source),
        insecure: false,
        source_object: label,
    })
}

fn oci_repository(source: &Node) -> Result<ChartRequest, Error> {
    let label = object_label("OCIRepository", source);
    let url = crate::lock::source_key(source.str_at(&["spec", "url"]).unwrap_or_default());
    if !url.starts_with("oci://") {
        return Err(Error::Unsupported {
            source_url: label,
            message: "spec.url must start with oci://".into(),
        });
    }
    let chart = url.rsplit('/').next().unwrap_or_default().to_string();
    let r = |k: &str| source.path(&["spec", "ref", k]).and_then(Node::scalar_text);
    // Flux's precedence: digest, then semver, then tag; no ref is `latest`.
    let want = if let Some(d) = r("digest") {
        Want::Digest(d)
    } else if let Some(s) = r("semver") {
        Want::Semver(s)
    } else {
        Want::Tag(r("tag").unwrap_or_else(|| "latest".to_string()))
    };
    Ok(ChartRequest {
        protocol: Protocol::Oci,
        source: url,
        chart,
        want,
        secret_ref: secret_ref(source),
        insecure: insecure(source),
        source_object: label,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(text: &str) -> Vec<Node> {
        fluxgate_yaml::parse_stream("objects.yaml", text, fluxgate_yaml::Schema::Kube)
            .docs
            .into_iter()
            .collect()
    }

    #[test]
    fn releases_become_requests() {
        let objs = objects(
            r"
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: stable, namespace: flux-system}
spec: {url: https://charts.example.com/}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: ghcr, namespace: flux-system}
spec: {url: oci://ghcr.io/org/charts, type: oci, secretRef: {name: ghcr-auth}}
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata: {name: podinfo, namespace: apps}
spec: {url: oci://registry.example/charts/podinfo, ref: {semver: '>=6.0'}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: repo, namespace: flux-system}
spec: {url: https://git.example/repo, ref: {semver: '>=1.0'}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: a, namespace: apps}
spec: {chart: {spec: {chart: demo, version: 1.x, sourceRef: {kind: HelmRepository, name: stable, namespace: flux-system}}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: b, namespace: apps}
spec: {chart: {spec: {chart: tool, version: 2.0.0, sourceRef: {kind: HelmRepository, name: ghcr, namespace: flux-system}}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: c, namespace: apps}
spec: {chartRef: {kind: OCIRepository, name: podinfo}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: d, namespace: apps}
spec: {chart: {spec: {chart: ./charts/x, sourceRef: {kind: GitRepository, name: repo, namespace: flux-system}}}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: local, namespace: flux-system}
spec: {url: 'file:///srv/charts', ref: {tag: v2}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: f, namespace: apps}
spec: {chart: {spec: {chart: ./charts/z/, sourceRef: {kind: GitRepository, name: local, namespace: flux-system}}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: e, namespace: apps}
spec: {chart: {spec: {chart: y, sourceRef: {kind: HelmRepository, name: nowhere}}}}
",
        );
        let (requests, errors) = chart_requests(&objs);
        let got: Vec<String> = requests
            .iter()
            .map(|r| {
                format!(
                    "{:?} {} {} {:?} {:?}",
                    r.protocol, r.source, r.chart, r.want, r.secret_ref
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                r#"HelmHttp https://charts.example.com demo Semver("1.x") None"#,
                r#"Oci oci://ghcr.io/org/charts/tool tool Semver("2.0.0") Some("ghcr-auth")"#,
                r#"Oci oci://registry.example/charts/podinfo podinfo Semver(">=6.0") None"#,
                r#"Git file:///srv/charts charts/z GitRev("refs/tags/v2") None"#,
                r#"Git https://git.example/repo charts/x Semver(">=1.0") None"#,
            ]
        );
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("HelmRepository apps/nowhere: HelmRelease apps/e names it"),
            "{}",
            errors[0]
        );
    }
}
