//! The Flux each environment runs, read from what installs it (issue 20, class 3: strict
//! post-build substitution is the default from Flux 2.9; before it an unset variable renders
//! empty, so the grade of an undefined variable follows the version):
//!
//! - `gotk-components.yaml`'s header, `# Flux Version: v2.1.0` (what `flux bootstrap` writes);
//! - a `FluxInstance`'s `spec.distribution.version` (`2.8.8`; `2.x` is the newest);
//! - a flux-instance HelmRelease's `values.instance.distribution.version`;
//! - an `OCIRepository` of `oci://ghcr.io/fluxcd/flux-manifests` and its `ref.tag`;
//! - a kustomization resource `github.com/fluxcd/flux2/manifests/install?ref=v2.4.0`.
//!
//! Each finding belongs to the environment whose Flux root shares the longest leading folders
//! with the file that holds it (every environment when the file is outside them all).

use fluxgate_yaml::Node;

use crate::RepoIndex;
use crate::config::FluxVersion;

/// One place that says which Flux runs.
#[derive(Clone, Debug)]
pub(crate) struct Evidence {
    /// `None` for a version range that means the newest (`2.x`).
    pub version: Option<FluxVersion>,
    pub file: String,
    /// What was read, for the environment's reason.
    pub what: String,
}

/// Parses `v2.4.0`, `2.8.8`, `2.8.x`, `2.x` (`None` inside: the newest of a major).
#[allow(clippy::option_option)] // outer: is it a version at all; inner: a range meaning the newest
fn version(text: &str) -> Option<Option<FluxVersion>> {
    let t = text.trim().trim_matches('"').trim_start_matches('v');
    let t = t.trim_end_matches(".x").trim_end_matches(".*");
    if !t.contains('.') {
        // `2.x`: the newest 2.
        return t.parse::<u32>().ok().map(|_| None);
    }
    let mut parts = t.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    Some(Some(FluxVersion { major, minor }))
}

/// Every place of the repository that says which Flux runs.
pub(crate) fn evidence(index: &RepoIndex) -> Vec<Evidence> {
    let mut out = Vec::new();
    for f in index.files() {
        // A chart's files (a vendored flux-instance chart's templates) are not what runs.
        if index.chart_root(&f.path).is_some() {
            continue;
        }
        let text = &f.text;
        if let Some(at) = text.find("# Flux Version:") {
            let line = text[at + "# Flux Version:".len()..]
                .lines()
                .next()
                .unwrap_or_default();
            if let Some(v) = version(line) {
                out.push(Evidence {
                    version: v,
                    file: f.path.clone(),
                    what: format!("`# Flux Version: {}` in {}", line.trim(), f.path),
                });
            }
        }
        let interesting = text.contains("FluxInstance")
            || text.contains("flux-instance")
            || text.contains("fluxcd/flux-manifests")
            || text.contains("fluxcd/flux2/manifests/install");
        if !interesting {
            continue;
        }
        for doc in f.docs() {
            if let Some((v, what)) = of_doc(doc) {
                out.push(Evidence {
                    version: v,
                    file: f.path.clone(),
                    what: format!("{what} in {}", f.path),
                });
            }
        }
    }
    out
}

fn of_doc(doc: &Node) -> Option<(Option<FluxVersion>, String)> {
    let kind = doc.str_at(&["kind"]).unwrap_or_default();
    let api = doc.str_at(&["apiVersion"]).unwrap_or_default();
    let read = |path: &[&str], what: &str| {
        let text = doc.str_at(path)?;
        version(text).map(|v| (v, format!("{what} `{text}`")))
    };
    match kind {
        "FluxInstance" => read(
            &["spec", "distribution", "version"],
            "FluxInstance spec.distribution.version",
        ),
        "HelmRelease" => read(
            &["spec", "values", "instance", "distribution", "version"],
            "flux-instance HelmRelease values instance.distribution.version",
        ),
        "OCIRepository"
            if doc
                .str_at(&["spec", "url"])
                .is_some_and(|u| u.ends_with("fluxcd/flux-manifests")) =>
        {
            read(&["spec", "ref", "tag"], "OCIRepository flux-manifests tag")
        }
        "Kustomization" if api.starts_with("kustomize.config.k8s.io/") || api.is_empty() => doc
            .get("resources")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter_map(Node::as_str)
            .find_map(|r| {
                let (_, rest) = r.split_once("fluxcd/flux2/manifests/install?ref=")?;
                version(rest).map(|v| (v, format!("resource `{r}`")))
            }),
        _ => None,
    }
}

/// How many leading folders `file` shares with `dir`.
fn shared(file: &str, dir: &str) -> usize {
    file.split('/')
        .zip(dir.split('/'))
        .take_while(|(a, b)| a == b)
        .count()
}

/// The Flux version of the environment rooted at `root` (`flux_dirs` are every environment's
/// root), with the reason: the evidence nearest to it. Evidence of both strict and lax Flux
/// at the same distance: the older (what makes a value blank rather than fail is a warning,
/// and where both run, the rule says which in its message).
pub(crate) fn for_root(
    evidence: &[Evidence],
    root: &str,
    flux_dirs: &[&str],
) -> Option<(Option<FluxVersion>, String)> {
    let mine: Vec<(usize, &Evidence)> = evidence
        .iter()
        .filter_map(|e| {
            let here = shared(&e.file, root);
            let best = flux_dirs
                .iter()
                .map(|d| shared(&e.file, d))
                .max()
                .unwrap_or(0);
            (here == best).then_some((here, e))
        })
        .collect();
    let nearest = mine.iter().map(|(d, _)| *d).max()?;
    mine.iter()
        .filter(|(d, _)| *d == nearest)
        .map(|(_, e)| e)
        .min_by_key(|e| {
            e.version
                .map_or((u32::MAX, u32::MAX), |v| (v.major, v.minor))
        })
        .map(|e| (e.version, e.what.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_ranges() {
        assert_eq!(
            version("v2.4.0"),
            Some(Some(FluxVersion { major: 2, minor: 4 }))
        );
        assert_eq!(
            version("\"2.8.x\""),
            Some(Some(FluxVersion { major: 2, minor: 8 }))
        );
        assert_eq!(version("2.x"), Some(None));
        assert_eq!(version("latest"), None);
    }

    /// A chart's files are not what runs: a vendored flux-instance chart's values or
    /// templates say nothing about the cluster's Flux.
    #[test]
    fn chart_files_are_no_evidence() {
        let instance = "kind: FluxInstance\nspec:\n  distribution:\n    version: 2.6.x\n";
        let index = crate::index::RepoIndex::in_memory(&[
            ("charts/flux-instance/Chart.yaml", "name: flux-instance\n"),
            ("charts/flux-instance/ci/values.yaml", instance),
            ("clusters/main/flux.yaml", instance),
        ]);
        let found: Vec<String> = evidence(&index).into_iter().map(|e| e.file).collect();
        assert_eq!(found, ["clusters/main/flux.yaml"]);
    }

    #[test]
    fn nearest_evidence_wins() {
        let e = |v: u32, file: &str| Evidence {
            version: Some(FluxVersion { major: 2, minor: v }),
            file: file.to_string(),
            what: file.to_string(),
        };
        let all = [
            e(8, "clusters/test/config/flux.yaml"),
            e(9, "clusters/prod/config/flux.yaml"),
        ];
        let dirs = ["clusters/test", "clusters/prod"];
        let test = for_root(&all, "clusters/test", &dirs).and_then(|(v, _)| v);
        assert_eq!(test, Some(FluxVersion { major: 2, minor: 8 }));
        let prod = for_root(&all, "clusters/prod", &dirs).and_then(|(v, _)| v);
        assert_eq!(prod, Some(FluxVersion { major: 2, minor: 9 }));
    }
}
