//! The helmfiles that bootstrap a repository's clusters: a state file (`helmfile.yaml`,
//! `helmfile.yaml.gotmpl`), a `helmfile.d` folder, or a folder named `helmfile` of state files
//! (`bootstrap/helmfile/apps.yaml`, the layout onedr0p's template spread). Each is given to
//! the environment it belongs to: the one whose cluster folder its values come from (a
//! values file or a HelmRelease its templates read), else the one whose Flux root shares the
//! longest folder prefix with it, else the only environment.

use std::collections::BTreeMap;

use fluxgate_diagnostics::Location;

use crate::RepoIndex;
use crate::config::{EnvConfig, HelmfileConfig};

/// Finds the repository's helmfiles and attaches each to an environment.
pub(super) fn attach(index: &RepoIndex, envs: &mut [EnvConfig]) {
    if envs.is_empty() {
        return;
    }
    for path in candidates(index) {
        let hf = fluxgate_helmfile::load(
            &fluxgate_helmfile::Options::new(index.root(), path.as_str())
                .with_fs(index.fs().clone()),
        );
        if hf.releases().next().is_none() {
            continue;
        }
        // Where its values come from: the files of its values and of their origins.
        let mut sources: Vec<String> = Vec::new();
        for r in hf.releases() {
            sources.extend(r.values_files.iter().filter_map(|v| v.path.clone()));
            if let Some(m) = r.values.as_map() {
                sources.extend(m.values().map(|n| n.loc.file.to_string()));
            }
        }
        let Some(i) = owner(envs, &path, &sources) else {
            continue;
        };
        let env = &mut envs[i];
        env.reason = format!("{}; bootstrapped by the helmfile {path}", env.reason);
        env.helmfile.push(HelmfileConfig {
            path: path.clone(),
            environment: None,
            env: BTreeMap::new(),
            loc: Location::file(path),
        });
    }
}

/// The helmfile paths of the repository, in path order: state files by name, `helmfile.d`
/// folders, and folders named `helmfile` that hold a state file with `releases:`.
#[allow(clippy::case_sensitive_file_extension_comparisons)] // helmfile reads `.yaml`/`.yml` case-sensitively
fn candidates(index: &RepoIndex) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let root = index.root();
    for f in index.paths_where(root, |n| {
        fluxgate_helmfile::is_helmfile_name(n)
            || n.ends_with(".yaml")
            || n.ends_with(".yml")
            || n.ends_with(".gotmpl")
    }) {
        let rel = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        let parent = rel.rsplit_once('/').map_or("", |(p, _)| p);
        let folder = parent.rsplit('/').next().unwrap_or(parent);
        let path = if fluxgate_helmfile::is_helmfile_name(name) {
            rel.clone()
        } else if folder == "helmfile.d" || folder == "helmfile" {
            parent.to_string()
        } else {
            continue;
        };
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The environment a helmfile at `path` belongs to, by the folders its values come from,
/// then by its own folder.
fn owner(envs: &[EnvConfig], path: &str, sources: &[String]) -> Option<usize> {
    if envs.len() == 1 {
        return Some(0);
    }
    let score = |a: &str, b: &str| {
        a.split('/')
            .zip(b.split('/'))
            .take_while(|(x, y)| x == y)
            .count()
    };
    let best = |of: &dyn Fn(&str) -> usize| -> Option<usize> {
        let scores: Vec<usize> = envs
            .iter()
            .map(|e| e.flux.as_deref().map_or(0, of))
            .collect();
        let max = *scores.iter().max()?;
        let winners: Vec<usize> = (0..envs.len()).filter(|i| scores[*i] == max).collect();
        (max > 0 && winners.len() == 1).then(|| winners[0])
    };
    best(&|root: &str| sources.iter().map(|s| score(s, root)).max().unwrap_or(0))
        .or_else(|| best(&|root: &str| score(path, root)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str, flux: &str) -> EnvConfig {
        EnvConfig {
            name: name.into(),
            flux: Some(flux.into()),
            vip: None,
            vip_loc: None,
            nodes: None,
            ansible: None,
            loc: Location::file("x"),
            reason: String::new(),
            flux_version: None,
            helmfile: Vec::new(),
            talos: None,
        }
    }

    #[test]
    fn the_cluster_its_values_come_from_owns_a_helmfile() {
        let envs = [
            env("main", "kubernetes/main/flux"),
            env("storage", "kubernetes/storage/flux"),
        ];
        let sources = ["kubernetes/main/apps/kube-system/cilium/app/values.yaml".to_string()];
        assert_eq!(
            owner(
                &envs,
                "infrastructure/talos/bootstrap/helmfile.yaml",
                &sources
            ),
            Some(0)
        );
        // Nothing ties it to either: no owner.
        assert_eq!(owner(&envs, "bootstrap/helmfile.yaml", &[]), None);
        assert_eq!(
            owner(&envs, "kubernetes/storage/bootstrap/helmfile.yaml", &[]),
            Some(1)
        );
    }
}
