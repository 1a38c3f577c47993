//! talhelper's `talconfig.yaml`: the cluster's fields, its nodes, and the patches it applies
//! (global `patches`, then `controlPlane`/`worker` ones, then each node's own), after `${VAR}`
//! substitution from the env files beside it.

use std::path::Path;

use fluxgate_diagnostics::{Annotate, Location};
use fluxgate_fs::Fs;
use fluxgate_yaml::{Node, Schema, Value, parse_stream};

use crate::env::{Env, substitute};
use crate::machine::{Reader, strip_prefix_len};
use crate::{Cluster, Fact, KubePrism, Problem, ProblemKind, Scope, TalosNode, Val};

/// The env files talhelper reads by default, beside talconfig.yaml.
const ENV_FILES: &[&str] = &[
    "talenv.yaml",
    "talenv.yml",
    "talenv.sops.yaml",
    "talenv.sops.yml",
];

/// Talos generates KubePrism (enabled, port 7445) into machine configs from v1.6 on.
const KUBE_PRISM_DEFAULT_FROM: (u32, u32) = (1, 6);

fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

fn join(dir: &str, name: &str) -> String {
    let name = name.trim_start_matches("./");
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

pub(crate) fn load(fs: &dyn Fs, root: &Path, rel: &str) -> Cluster {
    let mut cluster = Cluster {
        source: rel.to_string(),
        ..Cluster::default()
    };
    let text = match fs.read(&root.join(rel)) {
        Ok(t) => t,
        Err(e) => {
            cluster.problems.push(Problem::new(
                ProblemKind::Invalid,
                format!("{rel}: cannot be read: {e}"),
                Some(Location::file(rel)),
            ));
            return cluster;
        }
    };
    let dir = dir_of(rel);
    let mut env = Env::default();
    for name in ENV_FILES {
        let path = join(dir, name);
        if let Ok(t) = fs.read(&root.join(&path)) {
            env.add_file(&path, &t);
        }
    }
    let stream = parse_stream(rel, &text, Schema::Kube);
    if stream.has_errors() {
        cluster.problems.push(Problem::new(
            ProblemKind::Invalid,
            format!("{rel} is not valid YAML: talhelper cannot read it"),
            stream.diagnostics.first().and_then(|d| d.location.clone()),
        ));
    }
    let Some(doc) = stream.docs.into_iter().find(|d| d.as_map().is_some()) else {
        return cluster;
    };
    undefined_variables(&doc, &env, &mut cluster.problems);
    let resolve = |n: &Node| resolve(n, &env);
    cluster.name = doc.str_at(&["clusterName"]).map(str::to_string);
    if let Some(v) = doc.get("talosVersion").and_then(&resolve) {
        cluster.talos_version = Some(Fact {
            value: v.text,
            loc: v.loc,
            scope: Scope::All,
        });
    }
    // KubePrism as Talos generates it for the version; patches below may change it.
    let version = cluster.talos_version.as_ref().map(|f| f.value.as_str());
    if version.is_none_or(|v| version_at_least(v, KUBE_PRISM_DEFAULT_FROM)) {
        cluster.kube_prism.push(Fact {
            value: KubePrism {
                enabled: true,
                port: crate::KUBE_PRISM_PORT,
                default: true,
            },
            loc: cluster
                .talos_version
                .as_ref()
                .map_or_else(|| Location::new(rel, 1, 1), |f| f.loc.clone()),
            scope: Scope::All,
        });
    }
    if let Some(e) = doc.get("endpoint").and_then(&resolve) {
        let loc = e.loc.clone();
        cluster.endpoints.push(Fact {
            value: e,
            loc,
            scope: Scope::All,
        });
    }
    for (key, api) in [
        ("additionalApiServerCertSans", true),
        ("additionalMachineCertSans", false),
    ] {
        for s in doc
            .get(key)
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter_map(&resolve)
        {
            let fact = Fact {
                loc: s.loc.clone(),
                value: s,
                scope: Scope::All,
            };
            if api {
                cluster.cert_sans.push(fact);
            } else {
                cluster.machine_cert_sans.push(fact);
            }
        }
    }
    if let Some(n) = doc.path(&["cniConfig", "name"])
        && let Some(v) = resolve(n)
    {
        cluster.cni.push(Fact {
            value: v.text,
            loc: n.loc.clone(),
            scope: Scope::All,
        });
    }
    // The nodes first, so that role-scoped facts know which nodes they cover.
    let nodes = doc.get("nodes").and_then(Node::as_seq).unwrap_or_default();
    for n in nodes {
        let hostname = n
            .get("hostname")
            .and_then(&resolve)
            .map(|v| v.text)
            .unwrap_or_default();
        let control_plane = n.get("controlPlane").and_then(Node::as_bool) == Some(true);
        let mut address = n.get("ipAddress").and_then(&resolve).map(|mut v| {
            // `ipAddress` may list several, comma-separated; the first is the node's.
            if let Some((first, _)) = v.text.split_once(',') {
                v.text = first.trim().to_string();
            }
            v
        });
        let mut reader = Reader {
            cluster: &mut cluster,
            scope: Scope::Node(hostname.clone()),
            resolve: &resolve,
        };
        for iface in n
            .get("networkInterfaces")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            let doc = wrap_interface(iface);
            reader.document(&doc);
        }
        if address.is_none() {
            address = cluster
                .addresses
                .iter()
                .find(|f| f.scope == Scope::Node(hostname.clone()))
                .map(|f| f.value.clone());
        }
        if let Some(a) = &mut address {
            strip_prefix_len(a);
        }
        cluster.nodes.push(TalosNode {
            hostname,
            address,
            control_plane,
            loc: n.loc.clone(),
        });
    }
    // Patches in talhelper's order: global, the role's, the node's.
    patches(
        fs,
        root,
        dir,
        doc.get("patches"),
        &Scope::All,
        &env,
        &mut cluster,
    );
    for (key, scope) in [
        ("controlPlane", Scope::ControlPlane),
        ("worker", Scope::Worker),
    ] {
        if let Some(section) = doc.get(key) {
            role_section(fs, root, dir, section, &scope, &env, &mut cluster);
        }
    }
    for n in nodes {
        let hostname = n
            .get("hostname")
            .and_then(&resolve)
            .map(|v| v.text)
            .unwrap_or_default();
        role_section(fs, root, dir, n, &Scope::Node(hostname), &env, &mut cluster);
    }
    cluster
}

/// `patches`, `inlinePatch` and `configPatches` of a role section or a node.
fn role_section(
    fs: &dyn Fs,
    root: &Path,
    dir: &str,
    section: &Node,
    scope: &Scope,
    env: &Env,
    cluster: &mut Cluster,
) {
    patches(fs, root, dir, section.get("patches"), scope, env, cluster);
    let resolve = |n: &Node| resolve(n, env);
    let mut reader = Reader {
        cluster,
        scope: scope.clone(),
        resolve: &resolve,
    };
    if let Some(p) = section.get("inlinePatch") {
        reader.document(p);
    }
    if let Some(p) = section.get("configPatches") {
        reader.document(p);
    }
}

/// A talconfig `networkInterfaces` item as the machine config document it becomes.
fn wrap_interface(iface: &Node) -> Node {
    let loc = iface.loc.clone();
    let mut network = fluxgate_yaml::Map::default();
    network.insert(
        "interfaces".into(),
        Node::new(Value::Seq(vec![iface.clone()]), loc.clone()),
    );
    let mut machine = fluxgate_yaml::Map::default();
    machine.insert(
        "network".into(),
        Node::new(Value::Map(Box::new(network)), loc.clone()),
    );
    let mut doc = fluxgate_yaml::Map::default();
    doc.insert(
        "machine".into(),
        Node::new(Value::Map(Box::new(machine)), loc.clone()),
    );
    Node::new(Value::Map(Box::new(doc)), loc)
}

/// A list of talhelper patches: inline YAML text (strategic merge or RFC 6902), or
/// `@path` naming a file relative to talconfig.yaml.
fn patches(
    fs: &dyn Fs,
    root: &Path,
    dir: &str,
    list: Option<&Node>,
    scope: &Scope,
    env: &Env,
    cluster: &mut Cluster,
) {
    let resolve = |n: &Node| resolve(n, env);
    for p in list.and_then(Node::as_seq).unwrap_or_default() {
        let Some(text) = p.as_str() else {
            // A patch written as YAML rather than text.
            Reader {
                cluster: &mut *cluster,
                scope: scope.clone(),
                resolve: &resolve,
            }
            .document(p);
            continue;
        };
        let docs = if let Some(file) = text.trim().strip_prefix('@') {
            let path = join(dir, file.trim());
            let Ok(content) = fs.read(&root.join(&path)) else {
                cluster.problems.push(
                    Problem::new(
                        ProblemKind::Invalid,
                        format!("patch file {path} does not exist: talhelper genconfig fails"),
                        Some(p.loc.clone()),
                    )
                    .help("fix the path (it is relative to talconfig.yaml) or add the file"),
                );
                continue;
            };
            let stream = parse_stream(&path, &content, Schema::Kube);
            undefined_in_docs(&stream.docs, env, &mut cluster.problems);
            stream.docs
        } else {
            crate::parse_embedded(p, text, Schema::Kube)
        };
        let mut reader = Reader {
            cluster: &mut *cluster,
            scope: scope.clone(),
            resolve: &resolve,
        };
        for d in &docs {
            reader.document(d);
        }
    }
}

/// A scalar of talconfig after substitution.
fn resolve(node: &Node, env: &Env) -> Option<Val> {
    let text = node.scalar_text()?;
    let s = substitute(&text, env);
    let known = s.known && !s.text.contains("{{");
    Some(Val {
        text: s.text,
        known,
        loc: node.loc.clone(),
    })
}

/// `1.6`, `v1.13.7` at least `min`.
fn version_at_least(v: &str, min: (u32, u32)) -> bool {
    let mut parts = v.trim().trim_start_matches('v').split('.');
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts
        .next()
        .and_then(|p| p.split('-').next()?.parse::<u32>().ok());
    match (major, minor) {
        (Some(a), Some(b)) => (a, b) >= min,
        // A version that is not a number (a variable): assume the newest.
        _ => true,
    }
}

/// `${VAR}` references that talhelper's restricted substitution fails on, in every scalar
/// of the file (comments are stripped before substitution, so those never count).
fn undefined_variables(doc: &Node, env: &Env, out: &mut Vec<Problem>) {
    undefined_in_docs(std::slice::from_ref(doc), env, out);
}

fn undefined_in_docs(docs: &[Node], env: &Env, out: &mut Vec<Problem>) {
    fn walk(node: &Node, env: &Env, out: &mut Vec<Problem>) {
        match &node.value {
            Value::Map(m) => m.values().for_each(|v| walk(v, env, out)),
            Value::Seq(s) => s.iter().for_each(|v| walk(v, env, out)),
            Value::String(text) if text.contains('$') => {
                let s = substitute(text, env);
                for name in &s.undefined {
                    out.push(
                        Problem::new(
                            ProblemKind::UndefinedVariable,
                            format!(
                                "${{{name}}} is defined in no env file ({}): talhelper genconfig \
                                 fails unless the environment it runs in sets it, and the value \
                                 is unknown here",
                                if env.files.is_empty() {
                                    "there is none".to_string()
                                } else {
                                    env.files.join(", ")
                                }
                            ),
                            Some(node.loc.clone()),
                        )
                        .help(format!("define {name} in talenv.yaml")),
                    );
                }
                for name in &s.empty {
                    out.push(Problem::new(
                        ProblemKind::UndefinedVariable,
                        format!(
                            "${{{name}}} is empty: talhelper's substitution fails on an empty \
                             variable without a default"
                        ),
                        Some(node.loc.clone()),
                    ));
                }
            }
            _ => {}
        }
    }
    for d in docs {
        walk(d, env, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_fs::MemFs;

    fn fs(files: &[(&str, &str)]) -> MemFs {
        let mut fs = MemFs::new();
        for (p, t) in files {
            fs.insert(format!("/r/{p}"), *t);
        }
        fs
    }

    /// Shaped like ahinko__home-ops/infrastructure/talos: the VIP comes from an encrypted
    /// talenv.yaml, KubePrism and `proxy.disabled` from control-plane patches.
    #[test]
    fn encrypted_vip_stays_unknown() {
        let fs = fs(&[
            (
                "talos/talenv.yaml",
                "CLUSTER_ENDPOINT_IP: ENC[AES256_GCM,data:+NP4,iv:x,tag:y,type:str]\nsops:\n    version: 3.8.1\n",
            ),
            (
                "talos/talconfig.yaml",
                "clusterName: main\nendpoint: https://${CLUSTER_ENDPOINT_IP}:6443\ntalosVersion: v1.8.0\nadditionalApiServerCertSans: &sans\n  - ${CLUSTER_ENDPOINT_IP}\n  - 127.0.0.1 # KubePrism\nadditionalMachineCertSans: *sans\ncniConfig:\n  name: none\nnodes:\n  - hostname: cp01\n    ipAddress: 192.168.20.31\n    controlPlane: true\n    networkInterfaces:\n      - addresses:\n          - 192.168.20.31/24\n        vip:\n          ip: ${CLUSTER_ENDPOINT_IP}\n  - hostname: w01\n    ipAddress: 192.168.20.34\n    controlPlane: false\ncontrolPlane:\n  patches:\n    - |-\n      machine:\n        features:\n          kubePrism:\n            enabled: true\n            port: 7445\n    - |-\n      cluster:\n        proxy:\n          disabled: true\n",
            ),
        ]);
        let c = crate::load(&fs, Path::new("/r"), "talos");
        assert_eq!(c.source, "talos/talconfig.yaml");
        assert_eq!(c.name.as_deref(), Some("main"));
        let e = c.endpoint().expect("endpoint");
        assert!(!e.known);
        assert_eq!(e.text, "https://${CLUSTER_ENDPOINT_IP}:6443");
        assert_eq!(c.vips.len(), 1);
        assert!(!c.vips[0].value.known);
        assert_eq!(c.vips[0].loc.line, 18);
        assert_eq!(c.vips[0].scope, Scope::Node("cp01".into()));
        assert_eq!(c.control_planes().count(), 1);
        assert_eq!(c.workers().count(), 1);
        assert_eq!(c.nodes[0].address.as_ref().unwrap().text, "192.168.20.31");
        assert_eq!(c.cni[0].value, "none");
        assert_eq!(c.cert_sans.len(), 2);
        assert_eq!(c.machine_cert_sans.len(), 2);
        // The control-plane patch, at its line inside the block scalar.
        let kp = c.kube_prism_on(&c.nodes[0]).unwrap();
        assert!(!kp.value.default);
        assert_eq!(kp.loc.line, 28);
        // The worker keeps what Talos v1.8 generates.
        assert!(c.kube_prism_on(&c.nodes[1]).unwrap().value.default);
        let p = c.proxy_disabled().unwrap();
        assert!(p.value);
        assert_eq!(p.loc.line, 33);
        // The encrypted VIP is said to be unknown, once, at its line: no check skips it silently.
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert_eq!(c.problems[0].kind, ProblemKind::Unknown);
        assert!(
            c.problems[0].message.contains("a VIP"),
            "{}",
            c.problems[0].message
        );
        // Nothing encrypted reaches the result.
        assert!(!format!("{c:?}").contains("NP4"));
    }

    /// Shaped like mirceanton__home-ops/talos: `@./patches/...` files.
    #[test]
    fn patch_files_and_missing_ones() {
        let fs = fs(&[
            (
                "talos/talconfig.yaml",
                "clusterName: home-ops\nendpoint: \"https://home-ops.example.com:6443\"\ntalosVersion: v1.5.0\nnodes:\n  - hostname: home-ops\n    ipAddress: 10.0.0.15\n    controlPlane: true\ncontrolPlane:\n  patches:\n    - \"@./patches/kubeprism.yaml\"\n    - \"@./patches/missing.yaml\"\n",
            ),
            (
                "talos/patches/kubeprism.yaml",
                "machine:\n  features:\n    kubePrism:\n      enabled: true\n      port: 7445\n",
            ),
        ]);
        let c = crate::load(&fs, Path::new("/r"), "talos/talconfig.yaml");
        // v1.5: no default KubePrism, the patch file enables it.
        assert_eq!(c.kube_prism.len(), 1);
        assert_eq!(&*c.kube_prism[0].loc.file, "talos/patches/kubeprism.yaml");
        assert_eq!(c.kube_prism[0].loc.line, 4);
        assert_eq!(c.problems.len(), 1);
        assert_eq!(c.problems[0].location.as_ref().unwrap().line, 11);
        assert!(c.problems[0].message.contains("talos/patches/missing.yaml"));
    }

    #[test]
    fn substitution_and_undefined_variables() {
        let fs = fs(&[
            ("talos/talenv.yaml", "VIP: 10.0.0.9\n"),
            (
                "talos/talconfig.yaml",
                "clusterName: c\nendpoint: https://${VIP}:6443\n# ${IN_A_COMMENT}\nclusterPodNets: [\"${POD_CIDR}\"]\nnodes:\n  - hostname: a\n    ipAddress: 10.0.0.1, 10.0.0.101\n    controlPlane: true\n    networkInterfaces:\n      - interface: eth0\n        vip:\n          ip: ${VIP}\n",
            ),
        ]);
        let c = crate::load(&fs, Path::new("/r"), "talos/talconfig.yaml");
        assert_eq!(c.endpoint().unwrap().text, "https://10.0.0.9:6443");
        assert!(c.vips[0].value.known);
        assert_eq!(c.vips[0].value.text, "10.0.0.9");
        assert_eq!(c.nodes[0].address.as_ref().unwrap().text, "10.0.0.1");
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert_eq!(c.problems[0].kind, ProblemKind::UndefinedVariable);
        assert!(c.problems[0].message.contains("${POD_CIDR}"));
        assert_eq!(c.problems[0].location.as_ref().unwrap().line, 4);
    }

    #[test]
    fn versions() {
        assert!(version_at_least("v1.6.2", (1, 6)));
        assert!(version_at_least("v1.13.7", (1, 6)));
        assert!(!version_at_least("v1.5.5", (1, 6)));
        assert!(version_at_least("${TALOS_VERSION}", (1, 6)));
    }
}
