//! Environments without `fluxgate.yaml` (SPEC §2): every self-reconciling root is one
//! environment. A root is a Flux `Kustomization` whose `spec.path` contains the file that
//! declares it (what `flux bootstrap` writes), a `FluxInstance`'s `spec.sync.path` (also one a
//! Flux Operator `ResourceSet` makes), or the `instance.sync.path` of a flux-instance
//! HelmRelease. A self-reconciling Kustomization inside another root's folder (an app's own
//! `ks.yaml`) is part of that environment. A root that reconciles from an OCI artifact or an
//! ExternalArtifact built from a folder of this repository is mapped to that folder
//! ([`roots`]). Ansible is found through `ansible.cfg` (its `inventory`), else through a
//! conventional inventory, and split between the environments ([`ansible`]); a repository
//! with an inventory and no Flux root is one bootstrap-only environment.

mod ansible;
mod flux_version;
mod helmfile;
mod roots;
mod seeded;
mod talos;

pub use seeded::Seeded;

use std::collections::BTreeSet;
use std::path::Path;

use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_yaml::{Schema, parse_one};
use indexmap::IndexMap;
use rayon::prelude::*;

use crate::RepoIndex;
use crate::config::{Config, EnvConfig, parse_config_in};
use roots::{Context, Root, instance_values_roots, roots_of};

/// Reads `fluxgate.yaml` when there is one, else discovers. A `fluxgate.yaml` without
/// `environments:` keeps its other settings and has its environments discovered, its
/// `sources:` winning over the folders discovery maps artifact sources to. `Err` only when
/// the config file exists but cannot be read.
pub fn load(root: &Path) -> Result<(Config, Vec<Diagnostic>), crate::Error> {
    load_in(&RepoIndex::new(root))
}

/// [`load`], discovering in a repository index that the run shares (its walk and its files
/// serve the rules too).
pub fn load_in(index: &RepoIndex) -> Result<(Config, Vec<Diagnostic>), crate::Error> {
    let root = index.root();
    let path = root.join("fluxgate.yaml");
    let fs = &**index.fs();
    if fs.is_file(&path) {
        let text = fs.read(&path).map_err(|source| crate::Error::ReadConfig {
            path: path.clone(),
            source,
        })?;
        let (mut cfg, diags) = parse_config_in(fs, root, "fluxgate.yaml", &text);
        let declares = parse_one("fluxgate.yaml", &text, Schema::Kube)
            .0
            .is_some_and(|n| n.get("environments").is_some());
        if !declares {
            let found = discover_in(index, &cfg.sources);
            cfg.environments = found.environments;
            talos::attach(index, &mut cfg.environments);
            cfg.repo_prefix = found.repo_prefix;
            for (name, dir) in found.sources {
                cfg.sources.entry(name).or_insert(dir);
            }
        }
        read_flux_versions(index, &mut cfg.environments);
        cfg.argo_cd = argo_cd(index, &cfg.environments);
        cfg.seeded = seeded::seeded(index);
        return Ok((cfg, diags));
    }
    let mut found = discover_in(index, &IndexMap::new());
    talos::attach(index, &mut found.environments);
    let mut cfg = Config {
        environments: found.environments,
        sources: found.sources,
        repo_prefix: found.repo_prefix,
        ..Config::default()
    };
    read_flux_versions(index, &mut cfg.environments);
    cfg.argo_cd = argo_cd(index, &cfg.environments);
    cfg.seeded = seeded::seeded(index);
    Ok((cfg, Vec::new()))
}

/// The first Argo CD `Application` or `ApplicationSet` of the repository, when no
/// environment has a Flux root (see [`Config::argo_cd`]).
fn argo_cd(index: &RepoIndex, envs: &[EnvConfig]) -> Option<Location> {
    if envs.iter().any(|e| e.flux.is_some()) {
        return None;
    }
    index
        .files()
        .iter()
        .filter(|f| f.text.contains("argoproj.io/"))
        .find_map(|f| {
            f.docs().iter().find_map(|d| {
                let argo = d
                    .str_at(&["apiVersion"])
                    .is_some_and(|a| a.starts_with("argoproj.io/"))
                    && matches!(d.str_at(&["kind"]), Some("Application" | "ApplicationSet"));
                argo.then(|| d.loc.clone())
            })
        })
}

/// Sets each environment's [`EnvConfig::flux_version`] from what installs Flux in the
/// repository ([`flux_version`]), and says so in its reason.
fn read_flux_versions(index: &RepoIndex, envs: &mut [EnvConfig]) {
    let evidence = flux_version::evidence(index);
    if evidence.is_empty() {
        return;
    }
    let dirs: Vec<String> = envs.iter().filter_map(|e| e.flux.clone()).collect();
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    for env in envs {
        let Some(root) = env.flux.as_deref() else {
            continue;
        };
        if let Some((version, what)) = flux_version::for_root(&evidence, root, &dirs) {
            env.flux_version = version;
            env.reason = format!(
                "{}; runs Flux {} ({what})",
                env.reason,
                version.map_or_else(
                    || "2 (the newest)".to_string(),
                    |v| format!("{}.{}", v.major, v.minor)
                )
            );
        }
    }
}

/// What discovery finds: the environments, and the folders of this repository that the
/// artifact sources of their roots were built from (source name -> folder).
#[derive(Clone, Debug, Default)]
pub struct Discovery {
    pub environments: Vec<EnvConfig>,
    pub sources: IndexMap<String, String>,
    /// The folder of the Git repository this checkout is, when the roots say so (see
    /// [`Config::repo_prefix`]).
    pub repo_prefix: Option<String>,
}

/// Finds the environments of a repository without configuration.
#[must_use]
pub fn discover(root: &Path) -> Vec<EnvConfig> {
    discover_with(root, &IndexMap::new()).environments
}

/// [`discover`], with the artifact sources that `fluxgate.yaml` maps to folders.
#[must_use]
pub fn discover_with(root: &Path, sources: &IndexMap<String, String>) -> Discovery {
    discover_in(&RepoIndex::new(root), sources)
}

/// [`discover_with`] over a repository index.
#[must_use]
#[allow(clippy::case_sensitive_file_extension_comparisons)] // as yaml_files: Flux reads `.yaml`/`.yml` case-sensitively
pub fn discover_in(index: &RepoIndex, sources: &IndexMap<String, String>) -> Discovery {
    let root = index.root();
    let rels: Vec<String> = index
        .paths_where(root, |n| n.ends_with(".yaml") || n.ends_with(".yml"))
        .iter()
        .map(|f| {
            f.strip_prefix(root)
                .unwrap_or(f)
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    let dirs = folders(&rels);
    let cx = Context {
        dirs: &dirs,
        sources,
    };
    // Each file that may declare a root is parsed and read on its own core (the parse is most
    // of discovery); the roots are then taken in path order.
    // Beside the roots, every folder some Flux Kustomization reconciles (with the file that
    // declares it): a self-reconciling Kustomization that another one reaches is an app's own
    // `ks.yaml`, not a cluster.
    let per_file: Vec<(Vec<Root>, Vec<Reach>)> = index
        .files()
        .par_iter()
        .filter(|f| {
            let text = f.text.as_bytes();
            ["kind: Kustomization", "FluxInstance", "flux-instance"]
                .iter()
                .any(|word| memchr::memmem::find(text, word.as_bytes()).is_some())
        })
        .map(|f| {
            let mut found = Vec::new();
            let mut reach = Vec::new();
            for doc in f.docs() {
                let mut of_doc = roots_of(doc, &f.path, &cx);
                if of_doc.is_empty() {
                    of_doc.extend(instance_values_roots(index, doc, &f.path));
                }
                found.extend(of_doc);
                if let Some(dir) = roots::reach_of(doc, &cx) {
                    reach.push(Reach {
                        file: f.path.clone(),
                        dir,
                        name: doc
                            .str_at(&["metadata", "name"])
                            .unwrap_or_default()
                            .to_string(),
                        loc: doc
                            .path(&["spec", "path"])
                            .map_or_else(|| doc.loc.clone(), |n| n.loc.clone()),
                    });
                }
            }
            (found, reach)
        })
        .collect();
    let mut roots: Vec<Root> = Vec::new();
    let mut reaches: Vec<Reach> = Vec::new();
    for (found, reach) in per_file {
        reaches.extend(reach);
        for r in found {
            if !roots.iter().any(|x| x.path == r.path) {
                roots.push(r);
            }
        }
    }
    // Paths written from the top of a larger Git repository name folders of this one with
    // that prefix taken off.
    if let Some(prefix) = roots.iter().find_map(|r| r.prefix.clone()) {
        for r in &mut reaches {
            if let Some(rest) = r.dir.strip_prefix(&format!("{prefix}/")) {
                r.dir = rest.to_string();
            } else if r.dir == prefix {
                r.dir = String::new();
            }
        }
    }
    let mut roots = drop_reached(roots, &reaches);
    for r in hand_applied(index, &roots, &reaches, &dirs) {
        if !roots.iter().any(|x| x.path == r.path) {
            roots.push(r);
        }
    }
    roots.sort_by(|a, b| a.path.cmp(&b.path));
    let roots = merge_same_cluster(absorb_nested(roots));
    let mut out = Discovery {
        repo_prefix: roots.iter().find_map(|r| r.prefix.clone()),
        ..Discovery::default()
    };
    for r in &roots {
        if let Some((name, dir)) = &r.source {
            out.sources
                .entry(name.clone())
                .or_insert_with(|| dir.clone());
        }
    }
    let names = names_for(&roots.iter().map(|r| r.path.as_str()).collect::<Vec<_>>());
    let found = ansible::find_ansible(index);
    if roots.is_empty() {
        out.environments = found
            .map(|a| EnvConfig {
                name: "default".to_string(),
                flux: None,
                vip: None,
                vip_loc: None,
                nodes: None,
                talos: None,
                loc: Location::file(a.inventory.clone()),
                reason: format!("no Flux root; Ansible inventory {}", a.inventory),
                ansible: Some(a),
                flux_version: None,
                helmfile: Vec::new(),
            })
            .into_iter()
            .collect();
        return out;
    }
    let mappings = found
        .as_ref()
        .map(|a| ansible::map_inventory(index, a, &names));
    out.environments = roots
        .into_iter()
        .zip(names)
        .enumerate()
        .map(|(i, (r, name))| {
            let mapping = mappings.as_ref().map(|m| m[i].clone());
            let reason = match &mapping {
                Some(m) if !m.why.is_empty() => format!("{}; {}", r.reason, m.why),
                _ => r.reason,
            };
            EnvConfig {
                name,
                flux: Some(r.path),
                vip: None,
                vip_loc: None,
                nodes: None,
                talos: None,
                ansible: mapping.and_then(|m| m.ansible),
                loc: r.loc,
                reason,
                flux_version: None,
                helmfile: Vec::new(),
            }
        })
        .collect();
    helmfile::attach(index, &mut out.environments);
    out
}

/// Every folder that holds a YAML file, and the folders above them.
fn folders(files: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in files {
        let mut dir = f.as_str();
        while let Some((parent, _)) = dir.rsplit_once('/') {
            if !out.insert(parent.to_string()) {
                break;
            }
            dir = parent;
        }
    }
    out
}

/// Drops the self-reconciling Kustomizations that another Flux Kustomization of the
/// repository reaches (its `spec.path` holds their file) and that are no bootstrap entry on
/// their face: an app folder whose `ks.yaml` reconciles its own folder, wired in by the
/// cluster's apps Kustomization, is part of that cluster, not a cluster of its own. (Those
/// inside another root's own folder are absorbed by [`absorb_nested`], which says so.)
/// A Flux Kustomization of the repository: the file that declares it, the folder it
/// reconciles, its name and the line of its `spec.path`.
struct Reach {
    file: String,
    dir: String,
    name: String,
    loc: Location,
}

/// Roots applied by hand (`kubectl apply -k clusters/NAME`): a folder whose
/// `kustomization.yaml` lists a file declaring a Flux Kustomization that reconciles another
/// folder of the repository, where nothing else reaches that file (no other Kustomization's
/// folder, no root's) and the folder it reconciles is no root's. The environment's entry is
/// the folder applied by hand.
fn hand_applied(
    index: &RepoIndex,
    roots: &[Root],
    reaches: &[Reach],
    dirs: &BTreeSet<String>,
) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    // The files declaring a Kustomization, by the folder it reconciles: whether another
    // Kustomization's folder holds a file is a lookup per parent folder of the file, not a
    // scan of every Kustomization (1443 of them square to two million pairs).
    let mut by_dir: std::collections::HashMap<&str, Vec<&str>> = std::collections::HashMap::new();
    for o in reaches.iter().filter(|o| !o.dir.is_empty()) {
        by_dir
            .entry(o.dir.as_str())
            .or_default()
            .push(o.file.as_str());
    }
    let reached_by_other = |file: &str| {
        file.match_indices('/').any(|(at, _)| {
            by_dir
                .get(&file[..at])
                .is_some_and(|files| files.iter().any(|f| *f != file))
        })
    };
    for k in reaches {
        let folder = k.file.rsplit_once('/').map_or("", |(d, _)| d);
        let file_name = &k.file[folder.len()..].trim_start_matches('/');
        let self_reconciling = roots::lies_in(&k.file, &k.dir);
        let reached = reached_by_other(&k.file)
            || roots.iter().any(|r| roots::lies_in(&k.file, &r.path))
            || roots
                .iter()
                .any(|r| k.dir == r.path || roots::lies_in(&k.dir, &r.path));
        if self_reconciling || reached || folder.is_empty() || !dirs.contains(&k.dir) {
            continue;
        }
        let listed = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
            .iter()
            .find_map(|n| index.read(&format!("{folder}/{n}")).ok())
            .is_some_and(|kf| {
                kf.docs().first().is_some_and(|d| {
                    d.get("resources")
                        .and_then(fluxgate_yaml::Node::as_seq)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(fluxgate_yaml::Node::as_str)
                        .any(|r| r.trim_start_matches("./") == *file_name)
                })
            });
        if !listed || out.iter().any(|o| o.path == folder) {
            continue;
        }
        out.push(Root {
            path: folder.to_string(),
            loc: k.loc.clone(),
            reason: format!(
                "applied by hand (`kubectl apply -k {folder}`): its kustomization lists \
                 {file_name}, whose Kustomization `{}` reconciles {}, and no other \
                 Kustomization reaches it",
                k.name, k.dir
            ),
            file: k.file.clone(),
            kustomization: false,
            source: None,
            name: k.name.clone(),
            prefix: None,
        });
    }
    out
}

fn drop_reached(roots: Vec<Root>, reaches: &[Reach]) -> Vec<Root> {
    let paths: Vec<String> = roots.iter().map(|r| r.path.clone()).collect();
    roots
        .into_iter()
        .filter(|r| {
            let in_another_root = paths
                .iter()
                .any(|p| p != &r.path && roots::lies_in(&r.path, p));
            !r.kustomization
                || in_another_root
                || roots::bootstrap_entry(r)
                || !reaches.iter().any(|Reach { file, dir, .. }| {
                    // Reached by another Kustomization, declared in another file, that
                    // reconciles a folder above this root's file.
                    // A Kustomization of the whole repository (`./`) may be one of another
                    // source's; roots inside a root's own folder are absorbed below.
                    !dir.is_empty()
                        && dir != &r.path
                        && file != &r.file
                        && roots::lies_in(&r.file, dir)
                })
        })
        .collect()
}

/// Drops the self-reconciling Kustomizations that lie inside another root's folder (an app
/// folder whose own `ks.yaml` points at itself): Flux reaches them from that root, so they are
/// part of its environment, which says so. `roots` is sorted by path.
fn absorb_nested(roots: Vec<Root>) -> Vec<Root> {
    let mut kept: Vec<Root> = Vec::new();
    let mut parts: Vec<Vec<String>> = Vec::new();
    for r in roots {
        let outer = kept.iter().position(|o| {
            o.path != r.path && (o.path.is_empty() || r.path.starts_with(&format!("{}/", o.path)))
        });
        match outer {
            Some(i) if r.kustomization => parts[i].push(format!("{} ({})", r.path, r.file)),
            _ => {
                kept.push(r);
                parts.push(Vec::new());
            }
        }
    }
    for (r, inner) in kept.iter_mut().zip(parts) {
        if let Some(first) = inner.first() {
            r.reason = format!(
                "{}; the self-reconciling Kustomization{} inside it ({first}{}) belong{} to it",
                r.reason,
                if inner.len() > 1 { "s" } else { "" },
                if inner.len() > 1 {
                    format!(" and {} more", inner.len() - 1)
                } else {
                    String::new()
                },
                if inner.len() > 1 { "" } else { "s" },
            );
        }
    }
    kept
}

/// The cluster a root's path names: its last folder that is not [`GENERIC`].
fn cluster_name(path: &str) -> Option<&str> {
    path.split('/')
        .rev()
        .find(|c| !c.is_empty() && !GENERIC.contains(c))
}

/// One cluster found twice, through a legacy root Kustomization and a Flux Operator instance
/// (a repository half-way through its move to the operator): the two roots name the same
/// cluster (the last folder of their paths that is not [`GENERIC`]), or the instance's path
/// lies inside the legacy root's. One environment: the instance's, whose reason names the
/// legacy root.
fn merge_same_cluster(roots: Vec<Root>) -> Vec<Root> {
    let instances: Vec<usize> = (0..roots.len())
        .filter(|&i| !roots[i].kustomization)
        .collect();
    let mut legacy_of: Vec<Option<usize>> = vec![None; roots.len()];
    for (i, r) in roots.iter().enumerate() {
        if !r.kustomization {
            continue;
        }
        let same: Vec<usize> = instances
            .iter()
            .copied()
            .filter(|&j| {
                let inst = &roots[j];
                roots::lies_in(&inst.path, &r.path) && inst.path != r.path
                    || cluster_name(&inst.path).is_some()
                        && cluster_name(&inst.path) == cluster_name(&r.path)
            })
            .collect();
        // Only an unambiguous pair is one cluster.
        if let [j] = same.as_slice() {
            legacy_of[i] = Some(*j);
        }
    }
    let mut notes: Vec<Vec<String>> = vec![Vec::new(); roots.len()];
    for (i, j) in legacy_of.iter().enumerate() {
        if let Some(j) = j {
            notes[*j].push(format!(
                "the legacy root {} ({}) is the same cluster: one environment",
                roots[i].path, roots[i].file
            ));
        }
    }
    roots
        .into_iter()
        .zip(notes)
        .zip(legacy_of)
        .filter(|(_, legacy)| legacy.is_none())
        .map(|((mut r, notes), _)| {
            for n in notes {
                r.reason = format!("{}; {n}", r.reason);
            }
            r
        })
        .collect()
}

/// Directories that say nothing about which cluster a path belongs to.
const GENERIC: &[&str] = &[
    "flux",
    "flux-system",
    "cluster",
    "clusters",
    "config",
    "kubernetes",
    "k8s",
    "setup",
    "gitops",
];

/// Names each root after the path component that tells it apart from the others
/// (`clusters/prod` -> `prod`, `kubernetes/main/flux` -> `main`).
fn names_for(paths: &[&str]) -> Vec<String> {
    let split: Vec<Vec<&str>> = paths
        .iter()
        .map(|p| p.split('/').filter(|c| !c.is_empty()).collect())
        .collect();
    let mut names: Vec<String> = split
        .iter()
        .map(|parts| {
            let distinct = parts.iter().enumerate().find(|(i, c)| {
                split.len() > 1 && split.iter().filter(|o| o.get(*i) == Some(c)).count() == 1
            });
            match distinct {
                Some((_, c)) => (*c).to_string(),
                None => parts
                    .iter()
                    .rev()
                    .find(|c| !GENERIC.contains(c))
                    .map_or_else(|| "default".to_string(), |c| (*c).to_string()),
            }
        })
        .collect();
    // Two roots with the same name (deeper differences): fall back to the whole path.
    for i in 0..names.len() {
        if names.iter().filter(|n| **n == names[i]).count() > 1 {
            names[i] = paths[i].replace('/', "-");
        }
    }
    names
}

/// Repositories written to a temporary folder, for the tests of discovery.
#[cfg(test)]
pub(crate) fn temp_repo(tag: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fg-discover-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a file has a folder")).expect("temp dir");
        std::fs::write(path, text).expect("write");
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(name: &str, path: &str) -> String {
        format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}}}\nspec:\n  path: {path}\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n"
        )
    }

    #[test]
    fn names_tell_roots_apart() {
        assert_eq!(
            names_for(&["clusters/dev", "clusters/prod"]),
            vec!["dev", "prod"]
        );
        assert_eq!(
            names_for(&["kubernetes/main/flux", "kubernetes/staging/flux"]),
            vec!["main", "staging"]
        );
        assert_eq!(names_for(&["clusters/homelab"]), vec!["homelab"]);
        assert_eq!(names_for(&["kubernetes/flux/cluster"]), vec!["default"]);
    }

    #[test]
    fn self_reconciling_kustomization_is_a_root() {
        let dirs = BTreeSet::new();
        let sources = IndexMap::new();
        let cx = Context {
            dirs: &dirs,
            sources: &sources,
        };
        let doc = fluxgate_yaml::parse_stream(
            "clusters/prod/flux-system/gotk-sync.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system}\nspec:\n  path: ./clusters/prod\n",
            Schema::Kube,
        );
        let r = roots_of(
            &doc.docs[0],
            "clusters/prod/flux-system/gotk-sync.yaml",
            &cx,
        );
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].path, "clusters/prod");
        assert!(roots_of(&doc.docs[0], "platform/ks.yaml", &cx).is_empty());
    }

    #[test]
    fn app_kustomization_inside_a_root_belongs_to_its_environment() {
        let dir = temp_repo(
            "nested",
            &[
                (
                    "clusters/prod/flux-system/gotk-sync.yaml",
                    &sync("flux-system", "./clusters/prod"),
                ),
                (
                    "clusters/prod/apps/grafana/ks.yaml",
                    &sync("grafana", "./clusters/prod/apps/grafana"),
                ),
                (
                    "clusters/dev/flux-system/gotk-sync.yaml",
                    &sync("flux-system", "./clusters/dev"),
                ),
            ],
        );
        let envs = discover(&dir);
        let names: Vec<&str> = envs.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["dev", "prod"]);
        assert_eq!(envs[1].flux.as_deref(), Some("clusters/prod"));
        assert!(
            envs[1].reason.contains("clusters/prod/apps/grafana")
                && envs[1].reason.contains("belongs to it"),
            "{}",
            envs[1].reason
        );
        assert!(!envs[0].reason.contains("belongs"), "{}", envs[0].reason);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn app_kustomization_reached_by_another_is_no_cluster() {
        let dir = temp_repo(
            "reached",
            &[
                (
                    "clusters/main/flux-system/gotk-sync.yaml",
                    &sync("flux-system", "./clusters/main"),
                ),
                ("clusters/main/apps.yaml", &sync("apps", "./apps")),
                ("apps/echo/ks.yaml", &sync("echo", "./apps/echo")),
                // Not reached by any other Kustomization: still a root of its own.
                ("lab/ks.yaml", &sync("lab", "./lab")),
            ],
        );
        let envs = discover(&dir);
        let roots: Vec<Option<&str>> = envs.iter().map(|e| e.flux.as_deref()).collect();
        assert_eq!(roots, [Some("clusters/main"), Some("lab")]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn oci_sync(path: &str) -> String {
        format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: flux-system}}\nspec:\n  path: {path}\n  sourceRef: {{kind: OCIRepository, name: cluster}}\n"
        )
    }

    #[test]
    fn artifact_root_maps_to_the_one_subfolder_that_holds_its_path() {
        let dir = temp_repo(
            "oci",
            &[(
                "kubernetes/clusters/x/flux-system/sync.yaml",
                &oci_sync("./clusters/x"),
            )],
        );
        let found = discover_with(&dir, &IndexMap::new());
        assert_eq!(found.environments.len(), 1);
        let env = &found.environments[0];
        assert_eq!(env.flux.as_deref(), Some("kubernetes/clusters/x"));
        assert!(
            env.reason.contains("taken as built from `kubernetes`"),
            "{}",
            env.reason
        );
        assert_eq!(
            found.sources.get("cluster").map(String::as_str),
            Some("kubernetes")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn artifact_root_below_two_subfolders_needs_sources_in_fluxgate_yaml() {
        let files = [
            (
                "kubernetes/clusters/x/flux-system/sync.yaml",
                oci_sync("./clusters/x"),
            ),
            (
                "legacy/clusters/x/flux-system/sync.yaml",
                oci_sync("./clusters/x"),
            ),
        ];
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let dir = temp_repo("oci-two", &files);
        assert!(discover(&dir).is_empty(), "ambiguous: no environment");
        std::fs::write(
            dir.join("fluxgate.yaml"),
            "sources:\n  cluster: legacy\ncharts: legacy\n",
        )
        .expect("write");
        let (cfg, diags) = load(&dir).expect("readable");
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(cfg.environments.len(), 1);
        assert_eq!(
            cfg.environments[0].flux.as_deref(),
            Some("legacy/clusters/x")
        );
        assert!(
            cfg.environments[0]
                .reason
                .contains("by `sources:` in fluxgate.yaml"),
            "{}",
            cfg.environments[0].reason
        );
        assert_eq!(
            cfg.sources.get("cluster").map(String::as_str),
            Some("legacy")
        );
        assert_eq!(cfg.charts.as_deref(), Some("legacy"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn declared_environments_are_not_discovered() {
        let dir = temp_repo(
            "declared",
            &[
                (
                    "clusters/prod/flux-system/gotk-sync.yaml",
                    &sync("flux-system", "./clusters/prod"),
                ),
                (
                    "fluxgate.yaml",
                    "environments:\n  live:\n    flux: clusters/prod\n",
                ),
            ],
        );
        let (cfg, _) = load(&dir).expect("readable");
        let names: Vec<&str> = cfg.environments.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["live"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
