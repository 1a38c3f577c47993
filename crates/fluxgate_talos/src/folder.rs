//! A folder of Talos machine configs and patches (no talhelper): `talosctl gen config`
//! output (`controlplane.yaml`, `worker.yaml`), or a base with role and node patches
//! (`cluster.yaml`, `controlplane.yaml`, `nodes/<role>/<host>.yaml`), templated ones
//! (`.yaml.j2`) included: a value holding a template expression is unknown.
//!
//! A file is a node's when it names a hostname (`machine.network.hostname`, a
//! `HostnameConfig`) or sits under a `nodes/` folder; its role is its `machine.type`, else
//! the folder or file name (`controlplane`, `worker`). Any other file applies to the role its
//! `machine.type` or name says, else to every node.

use std::path::Path;

use fluxgate_diagnostics::Location;
use fluxgate_fs::Fs;
use fluxgate_yaml::{Node, Schema, parse_stream};

use crate::machine::Reader;
use crate::{Cluster, Problem, ProblemKind, Scope, TalosNode};

fn is_config_file(name: &str) -> bool {
    [".yaml", ".yml", ".yaml.j2", ".yml.j2"]
        .iter()
        .any(|s| name.ends_with(s))
}

fn files(fs: &dyn Fs, root: &Path, rel: &str, out: &mut Vec<String>, depth: usize) {
    if depth > 4 {
        return;
    }
    let Ok(mut entries) = fs.list_dir_kinds(&root.join(rel)) else {
        return;
    };
    entries.sort();
    for (path, is_dir) in entries {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let child = if rel.is_empty() {
            name.to_string()
        } else {
            format!("{rel}/{name}")
        };
        if is_dir {
            if !name.starts_with('.') {
                files(fs, root, &child, out, depth + 1);
            }
        } else if is_config_file(name) && !name.starts_with('.') {
            out.push(child);
        }
    }
}

/// `controlplane` or `worker` from a `machine.type` or a path.
fn role_of(types: &[String], path: &str) -> Option<bool> {
    if let Some(t) = types.last() {
        return Some(matches!(t.as_str(), "controlplane" | "init"));
    }
    let p = path.to_ascii_lowercase();
    if p.contains("controlplane") || p.contains("control-plane") || p.contains("controller") {
        Some(true)
    } else if p.contains("worker") {
        Some(false)
    } else {
        None
    }
}

pub(crate) fn load(fs: &dyn Fs, root: &Path, rel: &str) -> Cluster {
    let mut cluster = Cluster {
        source: rel.to_string(),
        ..Cluster::default()
    };
    let mut all = Vec::new();
    files(fs, root, rel, &mut all, 0);
    let resolve = |n: &Node| crate::plain_val(n);
    for file in all {
        let Ok(text) = fs.read(&root.join(&file)) else {
            continue;
        };
        let stream = parse_stream(&file, &text, Schema::Kube);
        // Only Talos documents count: a v1alpha1 (`machine`/`cluster`), a Talos document
        // (`apiVersion: v1alpha1` with a kind), or a JSON patch of one.
        let talos: Vec<&Node> = stream
            .docs
            .iter()
            .filter(|d| {
                d.get("machine").is_some()
                    || d.get("cluster").is_some()
                    || d.str_at(&["apiVersion"]) == Some("v1alpha1")
                    || d.as_seq().is_some_and(|ops| {
                        ops.iter().any(|o| {
                            o.str_at(&["path"]).is_some_and(|p| {
                                p.starts_with("/machine") || p.starts_with("/cluster")
                            })
                        })
                    })
            })
            .collect();
        if talos.is_empty() {
            continue;
        }
        if stream.has_errors() {
            cluster.problems.push(Problem::new(
                ProblemKind::Invalid,
                format!("{file} is not valid YAML: Talos cannot read it"),
                stream.diagnostics.first().and_then(|d| d.location.clone()),
            ));
        }
        // Read once unscoped to learn the file's hostname and type.
        let mut probe = Cluster::default();
        {
            let mut r = Reader {
                cluster: &mut probe,
                scope: Scope::All,
                resolve: &resolve,
            };
            for d in &talos {
                r.document(d);
            }
        }
        let types: Vec<String> = probe.types.iter().map(|f| f.value.clone()).collect();
        let role = role_of(&types, &file);
        let hostname = probe.hostnames.last().map(|f| f.value.text.clone());
        let in_nodes = file.split('/').any(|p| p == "nodes");
        let scope = if hostname.is_some() || in_nodes {
            let name = hostname.clone().unwrap_or_else(|| {
                let base = file.rsplit('/').next().unwrap_or(&file);
                base.split('.').next().unwrap_or(base).to_string()
            });
            let address = probe.addresses.first().map(|f| f.value.clone());
            cluster.nodes.push(TalosNode {
                hostname: name.clone(),
                address,
                control_plane: role.unwrap_or(false),
                loc: probe
                    .hostnames
                    .last()
                    .map_or_else(|| Location::new(file.as_str(), 1, 1), |f| f.loc.clone()),
            });
            Scope::Node(name)
        } else {
            match role {
                Some(true) => Scope::ControlPlane,
                Some(false) => Scope::Worker,
                None => Scope::All,
            }
        };
        let mut r = Reader {
            cluster: &mut cluster,
            scope,
            resolve: &resolve,
        };
        for d in &talos {
            r.document(d);
        }
    }
    cluster
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_fs::MemFs;

    /// Shaped like bjw-s-labs__home-ops/kubernetes/talos: a base, a control-plane patch
    /// and one node, all Jinja templates with newer documents.
    #[test]
    fn base_role_and_node_files() {
        let mut fs = MemFs::new();
        fs.insert(
            "/r/talos/cluster.yaml.j2",
            "---\nversion: v1alpha1\ncluster:\n  clusterName: home-ops\n  controlPlane:\n    endpoint: https://k8s.example.internal:6443\n---\napiVersion: v1alpha1\nkind: KubePrismConfig\nport: 7445\n---\napiVersion: v1alpha1\nkind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:{{ k8s_version }}\n",
        );
        fs.insert(
            "/r/talos/controlplane.yaml.j2",
            "machine:\n  type: controlplane\n---\napiVersion: v1alpha1\nkind: KubeAPIServerConfig\ncertExtraSANs:\n  - 127.0.0.1\n  - k8s.example.internal\n---\napiVersion: v1alpha1\nkind: KubeProxyConfig\nenabled: false\n",
        );
        fs.insert(
            "/r/talos/nodes/controlplane/delta.yaml.j2",
            "machine:\n  type: controlplane\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: delta\n",
        );
        fs.insert("/r/talos/schematic.yaml", "customization: {}\n");
        let c = crate::load(&fs, Path::new("/r"), "talos");
        assert_eq!(c.name.as_deref(), Some("home-ops"));
        assert_eq!(
            c.endpoint().unwrap().text,
            "https://k8s.example.internal:6443"
        );
        assert_eq!(c.nodes.len(), 1);
        assert_eq!(c.nodes[0].hostname, "delta");
        assert!(c.nodes[0].control_plane);
        assert_eq!(c.cert_sans.len(), 2);
        assert_eq!(c.cert_sans[0].scope, Scope::ControlPlane);
        assert!(c.proxy_disabled().unwrap().value);
        let kp = c.kube_prism_on(&c.nodes[0]).unwrap();
        assert_eq!(kp.value.port, 7445);
        assert_eq!(&*kp.loc.file, "talos/cluster.yaml.j2");
    }
}
