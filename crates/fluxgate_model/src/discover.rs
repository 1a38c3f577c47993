//! Environments without `fluxgate.yaml` (SPEC §2): every self-reconciling root is one
//! environment. A root is a Flux `Kustomization` whose `spec.path` contains the file that
//! declares it (what `flux bootstrap` writes), a `FluxInstance`'s `spec.sync.path`, or the
//! `instance.sync.path` of a flux-instance HelmRelease. Ansible is found through `ansible.cfg`
//! (its `inventory`), else through a conventional inventory (`inventory/<name>/hosts.ini`,
//! `inventory*.yml`, `hosts.yml`); a repository with an inventory and no Flux root is one
//! bootstrap-only environment.

use std::path::Path;

use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_yaml::{Node, Schema, parse_stream};

use crate::config::{AnsibleConfig, Config, EnvConfig, parse_config_in};
use crate::walk::{files_where, yaml_files};

/// Reads `fluxgate.yaml` when there is one, else discovers. `Err` only when the config file
/// exists but cannot be read.
pub fn load(root: &Path) -> std::io::Result<(Config, Vec<Diagnostic>)> {
    let path = root.join("fluxgate.yaml");
    if path.is_file() {
        let text = std::fs::read_to_string(&path)?;
        return Ok(parse_config_in(root, "fluxgate.yaml", &text));
    }
    let cfg = Config {
        environments: discover(root),
        ..Config::default()
    };
    Ok((cfg, Vec::new()))
}

struct Root {
    path: String,
    loc: Location,
    reason: String,
}

/// Finds the environments of a repository without configuration.
#[must_use]
pub fn discover(root: &Path) -> Vec<EnvConfig> {
    let mut roots: Vec<Root> = Vec::new();
    for file in yaml_files(root) {
        let Ok(rel) = file.strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if !(text.contains("kind: Kustomization")
            || text.contains("FluxInstance")
            || text.contains("flux-instance"))
        {
            continue;
        }
        for doc in parse_stream(&rel, &text, Schema::Kube).docs {
            if let Some(r) = root_of(&doc, &rel).or_else(|| instance_values_root(root, &doc, &rel))
                && !roots.iter().any(|x| x.path == r.path)
            {
                roots.push(r);
            }
        }
    }
    roots.sort_by(|a, b| a.path.cmp(&b.path));
    let names = names_for(&roots.iter().map(|r| r.path.as_str()).collect::<Vec<_>>());
    let ansible = find_ansible(root);
    if roots.is_empty() {
        return ansible
            .map(|a| EnvConfig {
                name: "default".to_string(),
                flux: None,
                vip: None,
                vip_loc: None,
                nodes: None,
                loc: Location::file(a.inventory.clone()),
                reason: format!("no Flux root; Ansible inventory {}", a.inventory),
                ansible: Some(a),
            })
            .into_iter()
            .collect();
    }
    roots
        .into_iter()
        .zip(names)
        .map(|(r, name)| EnvConfig {
            name,
            flux: Some(r.path),
            vip: None,
            vip_loc: None,
            nodes: None,
            ansible: ansible.clone(),
            loc: r.loc,
            reason: r.reason,
        })
        .collect()
}

fn clean(path: &str) -> String {
    let p = path.trim().trim_start_matches("./").trim_end_matches('/');
    if p == "." {
        String::new()
    } else {
        p.to_string()
    }
}

fn root_of(doc: &Node, file: &str) -> Option<Root> {
    let api = doc.str_at(&["apiVersion"]).unwrap_or_default();
    let kind = doc.str_at(&["kind"]).unwrap_or_default();
    if kind == "Kustomization" && api.starts_with("kustomize.toolkit.fluxcd.io/") {
        let node = doc.path(&["spec", "path"])?;
        let path = clean(node.as_str()?);
        let contains = path.is_empty() || file.starts_with(&format!("{path}/"));
        let own_source = doc.str_at(&["spec", "sourceRef", "kind"]) != Some("OCIRepository");
        if contains && own_source {
            let name = doc.str_at(&["metadata", "name"]).unwrap_or("?");
            return Some(Root {
                path,
                loc: node.loc.clone(),
                reason: format!("Kustomization `{name}` reconciles the directory that declares it"),
            });
        }
        return None;
    }
    if kind == "FluxInstance" {
        let node = doc.path(&["spec", "sync", "path"])?;
        return Some(Root {
            path: clean(node.as_str()?),
            loc: node.loc.clone(),
            reason: "FluxInstance spec.sync.path".to_string(),
        });
    }
    if kind == "HelmRelease" {
        let node = doc.path(&["spec", "values", "instance", "sync", "path"])?;
        return Some(Root {
            path: clean(node.as_str()?),
            loc: node.loc.clone(),
            reason: "flux-instance HelmRelease values instance.sync.path".to_string(),
        });
    }
    None
}

/// The `instance.sync.path` of a flux-instance HelmRelease whose values come from a ConfigMap
/// that the kustomization beside it generates from a file (`configMapGenerator` with
/// `files: [values.yaml=./helm-values.yaml]`), the layout that keeps the Flux sync path only in
/// that file.
fn instance_values_root(root: &Path, doc: &Node, file: &str) -> Option<Root> {
    if doc.str_at(&["kind"]) != Some("HelmRelease") {
        return None;
    }
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    let kustomization = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
        .iter()
        .map(|k| dir.join(k))
        .find(|k| root.join(k).is_file())?;
    let ktext = std::fs::read_to_string(root.join(&kustomization)).ok()?;
    let krel = kustomization.to_string_lossy().replace('\\', "/");
    let kdoc = parse_stream(&krel, &ktext, Schema::Kube)
        .docs
        .into_iter()
        .next()?;
    let generators = kdoc.get("configMapGenerator").and_then(Node::as_seq)?;
    for from in doc.path(&["spec", "valuesFrom"]).and_then(Node::as_seq)? {
        if from.str_at(&["kind"]) != Some("ConfigMap") || from.get("targetPath").is_some() {
            continue;
        }
        let name = from.str_at(&["name"])?;
        let key = from.str_at(&["valuesKey"]).unwrap_or("values.yaml");
        let Some(generator) = generators
            .iter()
            .find(|g| g.str_at(&["name"]) == Some(name))
        else {
            continue;
        };
        for f in generator
            .get("files")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            let Some(spec) = f.as_str() else { continue };
            let (k, path) = spec
                .split_once('=')
                .unwrap_or((spec.rsplit('/').next().unwrap_or(spec), spec));
            if k != key {
                continue;
            }
            let values_rel = dir.join(path.trim_start_matches("./"));
            let values_file = values_rel.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(root.join(&values_rel)).ok()?;
            let values = parse_stream(&values_file, &text, Schema::Kube)
                .docs
                .into_iter()
                .next()?;
            let node = values.path(&["instance", "sync", "path"])?;
            return Some(Root {
                path: clean(node.as_str()?),
                loc: node.loc.clone(),
                reason: format!(
                    "flux-instance HelmRelease values instance.sync.path, from ConfigMap {name} \
                     generated from {values_file}"
                ),
            });
        }
    }
    None
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

fn find_ansible(root: &Path) -> Option<AnsibleConfig> {
    let rel = |p: &Path| {
        p.strip_prefix(root)
            .ok()
            .map(|r| r.to_string_lossy().replace('\\', "/"))
    };
    let mut cfgs: Vec<_> = walk_named(root, &["ansible.cfg"]);
    cfgs.sort();
    let cfg = cfgs.first();
    let from_cfg = cfg.and_then(|cfg| {
        let text = std::fs::read_to_string(cfg).ok()?;
        let inventory = text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "inventory")
                .then(|| v.trim().split(',').next().unwrap_or("").trim().to_string())
        })?;
        let path = cfg.parent()?.join(inventory);
        path.exists().then_some(path)
    });
    let inventory = from_cfg.or_else(|| conventional_inventory(root))?;
    let base = cfg.and_then(|c| c.parent()).unwrap_or(root);
    let playbook = [
        "site.yml",
        "site.yaml",
        "playbooks/site.yml",
        "playbooks/site.yaml",
        "playbook/site.yml",
    ]
    .iter()
    .flat_map(|p| [base.join(p), root.join(p)])
    .find(|p| p.is_file())
    .and_then(|p| rel(&p));
    Some(AnsibleConfig {
        inventory: rel(&inventory)?,
        group: None,
        playbook,
        config: cfg.and_then(|c| rel(c)),
    })
}

/// The first inventory by convention: `inventory/<name>/hosts.{ini,yml,yaml}`, then
/// `inventory*.yml`/`hosts.yml`/`hosts.ini` files, outside test and molecule folders.
fn conventional_inventory(root: &Path) -> Option<std::path::PathBuf> {
    let names = [
        "hosts.ini",
        "hosts.yml",
        "hosts.yaml",
        "hosts",
        "inventory.yml",
        "inventory.yaml",
        "inventory-sample.yml",
        "inventory.ini",
    ];
    let mut found: Vec<_> = walk_named(root, &names)
        .into_iter()
        .filter(|p| {
            let r = p
                .strip_prefix(root)
                .unwrap_or(p)
                .to_string_lossy()
                .to_string();
            ![
                "molecule/",
                "tests/",
                "test/",
                "example/",
                "examples/",
                "vagrant/",
            ]
            .iter()
            .any(|d| r.starts_with(d) || r.contains(&format!("/{d}")))
        })
        .collect();
    found.sort_by_key(|p| (p.components().count(), p.clone()));
    found.into_iter().next()
}

fn walk_named(dir: &Path, names: &[&str]) -> Vec<std::path::PathBuf> {
    files_where(dir, |name| names.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let doc = parse_stream(
            "clusters/prod/flux-system/gotk-sync.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system}\nspec:\n  path: ./clusters/prod\n",
            Schema::Kube,
        );
        let r = root_of(&doc.docs[0], "clusters/prod/flux-system/gotk-sync.yaml").expect("a root");
        assert_eq!(r.path, "clusters/prod");
        assert!(root_of(&doc.docs[0], "platform/ks.yaml").is_none());
    }
}
