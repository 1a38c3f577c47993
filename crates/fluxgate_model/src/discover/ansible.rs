//! The Ansible side of discovered environments: the inventory (through `ansible.cfg`, else
//! by convention), and which of its hosts belong to which environment, so that one
//! cluster's VIP is never judged against another cluster's nodes.

use std::path::{Path, PathBuf};

use fluxgate_ansible::{Options, Project};

use crate::RepoIndex;
use crate::config::AnsibleConfig;

/// The environment's share of the inventory, and how it was decided.
#[derive(Clone, Debug)]
pub(crate) struct Mapping {
    pub ansible: Option<AnsibleConfig>,
    pub why: String,
}

/// Splits an inventory between environments. One environment gets it all; several each get
/// the inventory file, or the group, named after them, or the hosts whose `*cluster*`
/// variable names them; when every other environment is a Talos cluster (a `talconfig.yaml`
/// names it), the one left gets the hosts that run Kubernetes. The rest get none.
pub(crate) fn map_inventory(
    index: &RepoIndex,
    found: &AnsibleConfig,
    envs: &[String],
) -> Vec<Mapping> {
    if envs.len() < 2 {
        return envs
            .iter()
            .map(|_| Mapping {
                // One environment keeps the inventory and its reason as they were.
                ansible: Some(found.clone()),
                why: String::new(),
            })
            .collect();
    }
    let project = load(index, found);
    let mut out: Vec<Option<Mapping>> = envs
        .iter()
        .map(|env| {
            by_file(index, found, env)
                .or_else(|| by_group(&project, found, env))
                .or_else(|| by_variable(&project, found, env))
        })
        .collect();
    let talos = talos_clusters(index);
    let is_talos = |env: &str| talos.iter().find(|(name, _)| name == env);
    let unclaimed = out.iter().all(Option::is_none);
    let left: Vec<usize> = (0..envs.len())
        .filter(|i| is_talos(&envs[*i]).is_none())
        .collect();
    if unclaimed && let [only] = left.as_slice() {
        let others: Vec<String> = envs
            .iter()
            .filter_map(|e| is_talos(e).map(|(n, f)| format!("`{n}` (clusterName in {f})")))
            .collect();
        let (group, hosts) = kubernetes_group(&project);
        out[*only] = Some(Mapping {
            ansible: Some(AnsibleConfig {
                group: group.clone(),
                ..found.clone()
            }),
            why: format!(
                "Ansible inventory {}{}: every other environment is a Talos cluster: {}",
                found.inventory,
                group.map_or_else(String::new, |g| format!(
                    ", group {g} (the hosts with Kubernetes variables: {hosts})"
                )),
                others.join(", ")
            ),
        });
    }
    out.into_iter()
        .zip(envs)
        .map(|(m, env)| {
            m.unwrap_or_else(|| Mapping {
                ansible: None,
                why: match is_talos(env) {
                    Some((_, file)) => format!(
                        "no Ansible: a Talos cluster ({file} clusterName {env}), not one of \
                         the hosts of {}",
                        found.inventory
                    ),
                    None => format!(
                        "no Ansible: no hosts of {} are `{env}`'s (no inventory file or group \
                         is named after it, no host variable names it)",
                        found.inventory
                    ),
                },
            })
        })
        .collect()
}

fn load(index: &RepoIndex, a: &AnsibleConfig) -> Project {
    Project::load(&Options {
        root: index.root().to_path_buf(),
        fs: Some(index.fs().clone()),
        inventory: vec![PathBuf::from(&a.inventory)],
        config: a.config.as_ref().map(PathBuf::from),
        ..Options::default()
    })
}

/// Whether `name` (a file stem or a group name) names `env`: equal, or `env` as one of its
/// `-`/`_`/`.`-separated parts (`kyak-hosts`, `k3s_kyak`).
fn names(name: &str, env: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let env = env.to_ascii_lowercase();
    if name == env {
        return true;
    }
    let sep = |c: char| matches!(c, '-' | '_' | '.');
    name.match_indices(&env).any(|(i, _)| {
        let before = name[..i].chars().next_back().is_none_or(sep);
        let after = name[i + env.len()..].chars().next().is_none_or(sep);
        before && after
    })
}

/// An inventory file (or folder) of the inventory folder named after the environment
/// (`kyak-hosts.yaml`, `inventory/kyak/`): the inventory is that file.
fn by_file(index: &RepoIndex, found: &AnsibleConfig, env: &str) -> Option<Mapping> {
    let (root, fs) = (index.root(), index.fs());
    let inventory = root.join(&found.inventory);
    let dir = if fs.is_dir(&inventory) {
        inventory
    } else {
        inventory.parent()?.to_path_buf()
    };
    let mut hits: Vec<PathBuf> = fs
        .list_dir_kinds(&dir)
        .ok()?
        .into_iter()
        .filter(|(p, is_dir)| {
            let name = p.file_name().map(|n| n.to_string_lossy().to_string());
            let Some(name) = name else { return false };
            if name.starts_with('.') || name == "group_vars" || name == "host_vars" {
                return false;
            }
            let stem = if *is_dir {
                name.as_str()
            } else {
                match name.rsplit_once('.') {
                    Some((stem, "yml" | "yaml" | "ini" | "json")) => stem,
                    Some(_) => return false,
                    None => name.as_str(),
                }
            };
            names(stem, env)
        })
        .map(|(p, _)| p)
        .collect();
    hits.sort();
    let [one] = hits.as_slice() else {
        return None;
    };
    let rel: Vec<String> = one
        .strip_prefix(root)
        .ok()?
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    let rel = rel.join("/");
    Some(Mapping {
        why: format!("Ansible inventory {rel}: its name names `{env}`"),
        ansible: Some(AnsibleConfig {
            inventory: rel,
            group: None,
            ..found.clone()
        }),
    })
}

/// The inventory group named after the environment (`kyak`, `k3s_kyak`); of several, the
/// one named exactly so, else the one the others descend from.
fn by_group(project: &Project, found: &AnsibleConfig, env: &str) -> Option<Mapping> {
    let inv = project.inventory();
    let hits: Vec<&str> = inv
        .groups
        .keys()
        .map(String::as_str)
        .filter(|g| *g != "all" && *g != "ungrouped" && names(g, env))
        .filter(|g| !project.group_hosts(g).is_empty())
        .collect();
    let group = hits
        .iter()
        .find(|g| g.eq_ignore_ascii_case(env))
        .or_else(|| {
            hits.iter().find(|g| {
                let hosts = project.group_hosts(g);
                hits.iter()
                    .all(|o| project.group_hosts(o).iter().all(|h| hosts.contains(h)))
            })
        })?;
    Some(Mapping {
        why: format!(
            "Ansible inventory {}, group {group}: its name names `{env}`",
            found.inventory
        ),
        ansible: Some(AnsibleConfig {
            group: Some((*group).to_string()),
            ..found.clone()
        }),
    })
}

/// The hosts whose variable with `cluster` in its name (`cluster_name`, `k3s_cluster`) is
/// the environment's name, as the group that holds exactly them.
fn by_variable(project: &Project, found: &AnsibleConfig, env: &str) -> Option<Mapping> {
    let mut hosts: Vec<String> = Vec::new();
    let mut var = String::new();
    for host in project.hosts() {
        for name in project.var_names(&host) {
            if !name.to_ascii_lowercase().contains("cluster") {
                continue;
            }
            let Ok(r) = project.resolve(&host, &name) else {
                continue;
            };
            if !r.opaque
                && r.value
                    .scalar_text()
                    .is_some_and(|v| v.eq_ignore_ascii_case(env))
            {
                hosts.push(host.clone());
                var = name;
                break;
            }
        }
    }
    if hosts.is_empty() {
        return None;
    }
    let group = match group_of(project, &hosts)? {
        Hosts::All => None,
        Hosts::Group(g) => Some(g),
    };
    Some(Mapping {
        why: format!(
            "Ansible inventory {}{}: the hosts whose `{var}` is `{env}`",
            found.inventory,
            group
                .as_deref()
                .map(|g| format!(", group {g}"))
                .unwrap_or_default()
        ),
        ansible: Some(AnsibleConfig {
            group,
            ..found.clone()
        }),
    })
}

/// Which hosts of the inventory an environment has.
enum Hosts {
    All,
    Group(String),
}

/// The group that holds exactly `hosts` (the shallowest of several), or all of them.
fn group_of(project: &Project, hosts: &[String]) -> Option<Hosts> {
    let mut want = hosts.to_vec();
    want.sort();
    let mut all = project.hosts();
    all.sort();
    if all == want {
        return Some(Hosts::All);
    }
    let inv = project.inventory();
    inv.groups
        .keys()
        .filter(|g| {
            let mut h = project.group_hosts(g);
            h.sort();
            h == want
        })
        .min_by_key(|g| inv.depth(g))
        .map(|g| Hosts::Group(g.clone()))
}

/// Variables that only a host running Kubernetes has.
fn is_kubernetes_var(name: &str) -> bool {
    [
        "k3s_",
        "rke2_",
        "kube_",
        "kubernetes_",
        "apiserver_endpoint",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// The group of the hosts that have Kubernetes variables, and their names.
fn kubernetes_group(project: &Project) -> (Option<String>, String) {
    let hosts: Vec<String> = project
        .hosts()
        .into_iter()
        .filter(|h| project.var_names(h).iter().any(|v| is_kubernetes_var(v)))
        .collect();
    let group = if hosts.is_empty() {
        None
    } else {
        match group_of(project, &hosts) {
            Some(Hosts::Group(g)) => Some(g),
            _ => None,
        }
    };
    (group, hosts.join(", "))
}

/// `(clusterName, file)` of every `talconfig.yaml` (talhelper's) in the repository.
fn talos_clusters(index: &RepoIndex) -> Vec<(String, String)> {
    let root = index.root();
    let mut out = Vec::new();
    for file in index.paths_where(root, |n| n == "talconfig.yaml" || n == "talconfig.yml") {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let Ok(f) = index.read(&rel) else {
            continue;
        };
        for doc in f.docs() {
            if let Some(name) = doc.str_at(&["clusterName"]) {
                out.push((name.to_string(), rel.clone()));
            }
        }
    }
    out
}

pub(crate) fn find_ansible(index: &RepoIndex) -> Option<AnsibleConfig> {
    let root = index.root();
    let rel = |p: &Path| {
        p.strip_prefix(root)
            .ok()
            .map(|r| r.to_string_lossy().replace('\\', "/"))
    };
    let mut cfgs: Vec<_> = walk_named(index, &["ansible.cfg"]);
    cfgs.sort();
    let cfg = cfgs.first();
    let from_cfg = cfg.and_then(|cfg| {
        let text = index.fs().read(cfg).ok()?;
        let inventory = text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "inventory")
                .then(|| v.trim().split(',').next().unwrap_or("").trim().to_string())
        })?;
        let path = fluxgate_kustomize::normalize(&cfg.parent()?.join(inventory));
        (index.fs().is_file(&path) || index.fs().is_dir(&path)).then_some(path)
    });
    let inventory = from_cfg.or_else(|| conventional_inventory(index))?;
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
    .find(|p| index.fs().is_file(p))
    .or_else(|| installation_playbook(index, &[base, root, inventory.parent().unwrap_or(root)]))
    .and_then(|p| rel(&p));
    Some(AnsibleConfig {
        inventory: rel(&inventory)?,
        group: None,
        playbook,
        config: cfg.and_then(|c| rel(c)),
    })
}

/// Without a `site.yml`, the playbook that installs the cluster: the first (by name) YAML
/// file of a `playbooks/` folder beside the inventory (or at the root) whose name says it
/// installs or bootstraps (`cluster-installation.yml`, `bootstrap.yml`, `install.yaml`).
fn installation_playbook(index: &RepoIndex, bases: &[&Path]) -> Option<PathBuf> {
    let installs = |name: &str| {
        let stem = name
            .strip_suffix(".yml")
            .or_else(|| name.strip_suffix(".yaml"));
        stem.is_some_and(|s| s.contains("install") || s.contains("bootstrap"))
    };
    bases.iter().find_map(|base| {
        [base.join("playbooks"), base.join("playbook")]
            .into_iter()
            .find_map(|dir| {
                // The walk lists files in path order: the first direct child is the one.
                index
                    .paths_where(&dir, installs)
                    .into_iter()
                    .find(|p| p.parent() == Some(dir.as_path()))
            })
    })
}

/// The first inventory by convention: `inventory/<name>/hosts.{ini,yml,yaml}`, then
/// `inventory*.yml`/`hosts.yml`/`hosts.ini` files, outside test and molecule folders.
fn conventional_inventory(index: &RepoIndex) -> Option<PathBuf> {
    let root = index.root();
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
    let mut found: Vec<_> = walk_named(index, &names)
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

/// The files of the repository's walk with one of `names`.
fn walk_named(index: &RepoIndex, names: &[&str]) -> Vec<PathBuf> {
    index.paths_where(index.root(), |name| names.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::{discover, temp_repo};

    const CFG: &str = "[defaults]\ninventory = ./inventory\n";

    fn cluster(name: &str) -> (String, String) {
        (
            format!("kubernetes/{name}/flux/config/cluster.yaml"),
            format!(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: cluster}}\nspec:\n  path: ./kubernetes/{name}/flux\n"
            ),
        )
    }

    fn repo(tag: &str, extra: &[(&str, &str)]) -> PathBuf {
        let (a, at) = cluster("kyak");
        let (b, bt) = cluster("sol");
        let mut files: Vec<(&str, &str)> = vec![(&a, &at), (&b, &bt), ("ansible/ansible.cfg", CFG)];
        files.extend_from_slice(extra);
        temp_repo(tag, &files)
    }

    fn summary(root: &Path) -> Vec<(String, Option<String>, Option<String>, String)> {
        discover(root)
            .into_iter()
            .map(|e| {
                let a = e.ansible;
                (
                    e.name,
                    a.as_ref().map(|a| a.inventory.clone()),
                    a.and_then(|a| a.group),
                    e.reason,
                )
            })
            .collect()
    }

    #[test]
    fn names_match_whole_parts() {
        assert!(names("kyak-hosts", "kyak"));
        assert!(names("k3s_kyak", "kyak"));
        assert!(names("SOL", "sol"));
        assert!(!names("solar", "sol"));
        assert!(!names("console", "sol"));
    }

    #[test]
    fn an_inventory_file_per_cluster() {
        let dir = repo(
            "inv-files",
            &[
                (
                    "ansible/inventory/kyak-hosts.yaml",
                    "k3s:\n  hosts:\n    k1: {ansible_host: 10.0.1.1}\n",
                ),
                (
                    "ansible/inventory/sol-hosts.yaml",
                    "k3s:\n  hosts:\n    s1: {ansible_host: 10.0.2.1}\n",
                ),
            ],
        );
        let s = summary(&dir);
        assert_eq!(s[0].1.as_deref(), Some("ansible/inventory/kyak-hosts.yaml"));
        assert_eq!(s[1].1.as_deref(), Some("ansible/inventory/sol-hosts.yaml"));
        assert!(s[0].3.contains("its name names `kyak`"), "{}", s[0].3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_group_per_cluster() {
        let dir = repo(
            "inv-groups",
            &[(
                "ansible/inventory/hosts.yaml",
                "k3s_kyak:\n  hosts:\n    k1:\nsol:\n  hosts:\n    s1:\nnas:\n  hosts:\n    n1:\n",
            )],
        );
        let s = summary(&dir);
        assert_eq!(s[0].2.as_deref(), Some("k3s_kyak"));
        assert_eq!(s[1].2.as_deref(), Some("sol"));
        assert!(
            s[1].3.contains("group sol: its name names `sol`"),
            "{}",
            s[1].3
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_cluster_the_hosts_variables_name() {
        let dir = repo(
            "inv-vars",
            &[
                (
                    "ansible/inventory/hosts.yaml",
                    "site_a:\n  hosts:\n    a1:\n    a2:\nsite_b:\n  hosts:\n    b1:\n",
                ),
                (
                    "ansible/inventory/group_vars/site_a.yaml",
                    "cluster_name: kyak\n",
                ),
                (
                    "ansible/inventory/group_vars/site_b.yaml",
                    "k3s_cluster: sol\n",
                ),
            ],
        );
        let s = summary(&dir);
        assert_eq!(s[0].2.as_deref(), Some("site_a"));
        assert_eq!(s[1].2.as_deref(), Some("site_b"));
        assert!(s[1].3.contains("`k3s_cluster` is `sol`"), "{}", s[1].3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn no_matching_hosts_no_inventory() {
        let dir = repo(
            "inv-none",
            &[(
                "ansible/inventory/hosts.yml",
                "vault:\n  children:\n    master:\n      hosts:\n        venus:\n",
            )],
        );
        for (name, inventory, _, why) in summary(&dir) {
            assert_eq!(inventory, None, "{name}");
            assert!(
                why.contains(&format!("no hosts of ansible/inventory are `{name}`'s")),
                "{why}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_one_cluster_that_is_not_talos_gets_the_kubernetes_hosts() {
        let (a, at) = cluster("main");
        let (b, bt) = cluster("storage");
        let dir = temp_repo(
            "inv-talos",
            &[
                (&a, &at),
                (&b, &bt),
                ("infrastructure/talos/talconfig.yaml", "clusterName: main\n"),
                ("infrastructure/ansible/ansible.cfg", CFG),
                (
                    "infrastructure/ansible/inventory/hosts.yaml",
                    "metal:\n  hosts:\n    atlas:\niot:\n  hosts:\n    zwave:\n",
                ),
                (
                    "infrastructure/ansible/inventory/group_vars/metal/k3s.yaml",
                    "k3s_registration_address: 192.168.20.2\n",
                ),
            ],
        );
        let s = summary(&dir);
        assert_eq!((s[0].0.as_str(), s[0].1.as_deref()), ("main", None));
        assert!(
            s[0].3
                .contains("a Talos cluster (infrastructure/talos/talconfig.yaml"),
            "{}",
            s[0].3
        );
        assert_eq!(s[1].2.as_deref(), Some("metal"));
        assert!(
            s[1].3
                .contains("every other environment is a Talos cluster"),
            "{}",
            s[1].3
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
