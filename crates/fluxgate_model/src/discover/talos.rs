//! Discovery of the Talos layer: every talhelper `talconfig.yaml`, and every `talos/`
//! folder of machine configs (`.yaml`, `.yaml.j2`) without one, each attached to the
//! environment it builds. In this order: the environment named by its `clusterName`; the
//! one whose name is a folder of its path (`clusters/prod/talos`); the only environment
//! without an Ansible inventory; else the one whose own folder mentions KubePrism's port or
//! Talos (a Cilium that dials `localhost:7445`). A layer that fits none is left out, and the
//! reason of each environment says what was attached and why.

use std::path::Path;

use crate::config::EnvConfig;
use crate::index::RepoIndex;

/// A Talos layer found in the repository.
struct Layer {
    /// talconfig.yaml, or the folder of machine configs.
    path: String,
    cluster_name: Option<String>,
}

fn rel(index: &RepoIndex, p: &Path) -> String {
    p.strip_prefix(index.root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

fn hidden(path: &str) -> bool {
    path.split('/').any(|c| c.starts_with('.'))
}

/// Whether a file's text holds a Talos machine config document.
fn is_machine_config(text: &str) -> bool {
    text.lines().any(|l| {
        l.starts_with("machine:")
            || (l.starts_with("cluster:") && text.contains("controlPlane"))
            || l.starts_with("apiVersion: v1alpha1")
    })
}

fn layers(index: &RepoIndex) -> Vec<Layer> {
    let root = index.root();
    let mut out: Vec<Layer> = Vec::new();
    for file in index.paths_where(root, |n| n == "talconfig.yaml" || n == "talconfig.yml") {
        let path = rel(index, &file);
        if hidden(&path) {
            continue;
        }
        let cluster_name = index.read(&path).ok().and_then(|f| {
            f.docs()
                .iter()
                .find_map(|d| d.str_at(&["clusterName"]).map(str::to_string))
        });
        out.push(Layer { path, cluster_name });
    }
    let talconfig_dirs: Vec<String> = out
        .iter()
        .map(|l| l.path.rsplit_once('/').map_or("", |(d, _)| d).to_string())
        .collect();
    let mut folders: Vec<String> = Vec::new();
    let config_name = |n: &str| {
        let n = n.to_ascii_lowercase();
        [".yaml", ".yml", ".yaml.j2"].iter().any(|s| n.ends_with(s))
    };
    for file in index.paths_where(root, config_name) {
        let path = rel(index, &file);
        if hidden(&path) {
            continue;
        }
        // The `talos` folder above the file.
        let parts: Vec<&str> = path.split('/').collect();
        let Some(i) = parts.iter().position(|c| *c == "talos") else {
            continue;
        };
        let folder = parts[..=i].join("/");
        if folders.contains(&folder)
            || talconfig_dirs.iter().any(|d| {
                folder == *d
                    || folder.starts_with(&format!("{d}/"))
                    || d.starts_with(&format!("{folder}/"))
            })
        {
            continue;
        }
        let Ok(text) = index.fs().read(&file) else {
            continue;
        };
        if is_machine_config(&text) {
            folders.push(folder);
        }
    }
    for folder in folders {
        let cluster_name = index
            .paths_where(&index.root().join(&folder), |_| true)
            .iter()
            .filter_map(|f| index.fs().read(f).ok())
            .find_map(|t| {
                t.lines()
                    .find_map(|l| l.trim().strip_prefix("clusterName:"))
                    .map(|n| n.trim().trim_matches('"').to_string())
            });
        out.push(Layer {
            path: folder,
            cluster_name,
        });
    }
    out
}

/// The folder of an environment's own: its Flux root, widened while no other root is below.
fn own_folder(env: &EnvConfig, envs: &[EnvConfig]) -> Option<String> {
    let mut dir = env.flux.clone()?;
    loop {
        let Some((parent, _)) = dir.rsplit_once('/') else {
            return Some(dir);
        };
        let shared = envs.iter().filter(|e| e.name != env.name).any(|e| {
            e.flux
                .as_deref()
                .is_some_and(|f| f.starts_with(&format!("{parent}/")))
        });
        if shared {
            return Some(dir);
        }
        dir = parent.to_string();
    }
}

/// How strongly the files of `folder` say Talos: KubePrism's port, Talos itself.
fn talos_evidence(index: &RepoIndex, folder: &str) -> usize {
    index
        .files()
        .iter()
        .filter(|f| f.path.starts_with(&format!("{folder}/")))
        .filter(|f| {
            f.text.contains("7445") || f.text.contains("siderolabs") || f.text.contains("talos")
        })
        .count()
}

/// Attaches the Talos layers of the repository to the discovered environments.
pub(crate) fn attach(index: &RepoIndex, envs: &mut [EnvConfig]) {
    for layer in layers(index) {
        let by_name = layer
            .cluster_name
            .as_ref()
            .and_then(|n| envs.iter().position(|e| e.name == *n && e.talos.is_none()));
        let by_path = || {
            envs.iter()
                .position(|e| e.talos.is_none() && layer.path.split('/').any(|c| c == e.name))
        };
        let free: Vec<usize> = (0..envs.len())
            .filter(|i| envs[*i].talos.is_none() && envs[*i].ansible.is_none())
            .collect();
        let only = || (free.len() == 1).then(|| free[0]);
        let by_evidence = || {
            let scored: Vec<(usize, usize)> = free
                .iter()
                .map(|i| {
                    let score =
                        own_folder(&envs[*i], envs).map_or(0, |f| talos_evidence(index, &f));
                    (*i, score)
                })
                .collect();
            let best = scored.iter().map(|(_, s)| *s).max().unwrap_or(0);
            let top: Vec<usize> = scored
                .iter()
                .filter(|(_, s)| *s == best && best > 0)
                .map(|(i, _)| *i)
                .collect();
            (top.len() == 1).then(|| top[0])
        };
        let found = by_name
            .map(|i| (i, "its clusterName"))
            .or_else(|| by_path().map(|i| (i, "its folder names the environment")))
            .or_else(|| only().map(|i| (i, "the only environment without Ansible")))
            .or_else(|| {
                by_evidence().map(|i| (i, "the environment's folder mentions KubePrism or Talos"))
            });
        if let Some((i, why)) = found {
            let env = &mut envs[i];
            env.reason = format!("{}; Talos: {} ({why})", env.reason, layer.path);
            env.talos = Some(layer.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::discover::{load, temp_repo};

    fn cluster(name: &str) -> (String, String) {
        (
            format!("kubernetes/{name}/flux/config/cluster.yaml"),
            format!(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: cluster}}\nspec:\n  path: ./kubernetes/{name}/flux\n"
            ),
        )
    }

    fn talos_of(files: &[(&str, &str)], tag: &str) -> Vec<(String, Option<String>)> {
        let dir = temp_repo(tag, files);
        let (cfg, _) = load(&dir).expect("discovery");
        let _ = std::fs::remove_dir_all(&dir);
        cfg.environments
            .into_iter()
            .map(|e| (e.name, e.talos))
            .collect()
    }

    #[test]
    fn by_cluster_name_then_by_evidence() {
        let (a, at) = cluster("main");
        let (b, bt) = cluster("other");
        // clusterName names the environment.
        let got = talos_of(
            &[
                (&a, &at),
                (&b, &bt),
                ("infra/talos/talconfig.yaml", "clusterName: main\n"),
            ],
            "talos-name",
        );
        assert_eq!(
            got,
            vec![
                ("main".into(), Some("infra/talos/talconfig.yaml".into())),
                ("other".into(), None)
            ]
        );
        // No name matches: the environment whose folder dials KubePrism.
        let values = "k8sServiceHost: localhost\nk8sServicePort: 7445\n";
        let got = talos_of(
            &[
                (&a, &at),
                (&b, &bt),
                ("kubernetes/other/apps/cilium/values.yaml", values),
                ("talos/talconfig.yaml", "clusterName: home\n"),
            ],
            "talos-evidence",
        );
        assert_eq!(got[0].1, None);
        assert_eq!(got[1].1.as_deref(), Some("talos/talconfig.yaml"));
    }

    #[test]
    fn a_folder_of_machine_configs() {
        let (a, at) = cluster("main");
        let got = talos_of(
            &[
                (&a, &at),
                (
                    "kubernetes/talos/controlplane.yaml.j2",
                    "machine:\n  type: controlplane\n",
                ),
                ("kubernetes/talos/schematic.yaml", "customization: {}\n"),
                ("docs/talos/notes.yaml", "title: not a machine config\n"),
            ],
            "talos-folder",
        );
        assert_eq!(got, vec![("main".into(), Some("kubernetes/talos".into()))]);
    }
}
