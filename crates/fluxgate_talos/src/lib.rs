//! The Talos layer of a repository, read offline: talhelper's `talconfig.yaml` (with its
//! `talenv.yaml` substitution and its patches) or a folder of Talos machine configs. What it
//! yields is what the cross-layer rules compare with the Flux side: the cluster endpoint,
//! the VIPs Talos announces (`vip.ip`, `Layer2VIPConfig`), KubePrism (the node-local API
//! proxy on `localhost:7445`), the API server's certSANs, `cni: none`, `proxy.disabled`, the
//! nodes with their addresses and roles, and the inline and extra manifests. Every value
//! carries the file and line that wrote it.
//!
//! Nothing is decrypted: a value that comes from a SOPS file (talenv.sops.yaml, or any file
//! whose content is SOPS-encrypted) is unknown, kept as its `${VAR}` reference.
//!
//! ```
//! use fluxgate_fs::MemFs;
//! use std::path::Path;
//!
//! let mut fs = MemFs::new();
//! fs.insert("/r/talos/talenv.yaml", "VIP: 10.0.0.9\n");
//! fs.insert(
//!     "/r/talos/talconfig.yaml",
//!     "clusterName: home\nendpoint: https://${VIP}:6443\nnodes:\n  - hostname: cp1\n    ipAddress: 10.0.0.11\n    controlPlane: true\n    networkInterfaces:\n      - interface: eth0\n        vip:\n          ip: ${VIP}\n",
//! );
//! let cluster = fluxgate_talos::load(&fs, Path::new("/r"), "talos/talconfig.yaml");
//! assert_eq!(cluster.endpoint().unwrap().text, "https://10.0.0.9:6443");
//! assert_eq!(cluster.vips[0].value.text, "10.0.0.9");
//! assert_eq!(cluster.control_planes().count(), 1);
//! ```

mod env;
mod folder;
mod machine;
mod talconfig;

use std::path::Path;

use fluxgate_diagnostics::Location;
use fluxgate_fs::Fs;
use fluxgate_yaml::{Node, Schema, Value, parse_stream};

pub use env::{Env, Substituted, Var, is_encrypted, substitute};

/// KubePrism's port when the config enables it without one.
pub const KUBE_PRISM_PORT: u16 = 7445;

/// A scalar of the Talos layer after substitution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Val {
    /// The text; a reference whose value is unknown is kept as written (`${VAR}`).
    pub text: String,
    /// False when part of it is not known offline (an encrypted variable, a template).
    pub known: bool,
    /// Where it was written (for a substituted value: the line that uses the variable).
    pub loc: Location,
}

/// Which nodes a fact applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    All,
    ControlPlane,
    Worker,
    /// One node, by hostname.
    Node(String),
}

/// A fact of the Talos layer: the value, where it was written, the nodes it applies to.
#[derive(Clone, Debug)]
pub struct Fact<T> {
    pub value: T,
    pub loc: Location,
    pub scope: Scope,
}

/// KubePrism as configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KubePrism {
    pub enabled: bool,
    pub port: u16,
    /// Not written anywhere: what Talos generates for the version (enabled from v1.6).
    pub default: bool,
}

/// An inline manifest (`cluster.inlineManifests`): what Talos applies at bootstrap.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub name: String,
    /// Its objects, located in the file that embeds them.
    pub docs: Vec<Node>,
    pub known: bool,
}

/// One node of the cluster.
#[derive(Clone, Debug)]
pub struct TalosNode {
    pub hostname: String,
    /// Its address: talconfig's `ipAddress`, else its first interface address.
    pub address: Option<Val>,
    pub control_plane: bool,
    /// Where it is declared.
    pub loc: Location,
}

/// A problem of the Talos layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// The file does not parse, or a patch file it names is missing: talhelper fails.
    Invalid,
    /// A `${VAR}` that no env file defines (talhelper fails unless the caller's environment
    /// sets it), or that is defined empty.
    UndefinedVariable,
    /// Values the checks need (endpoint, VIPs, SANs, node addresses) that are not known
    /// offline (from an encrypted file, a template): what depends on them is not judged.
    Unknown,
}

pub type Problem = fluxgate_diagnostics::Problem<ProblemKind>;

/// The Talos layer of one cluster.
#[derive(Clone, Debug, Default)]
pub struct Cluster {
    /// The talconfig.yaml or folder it was read from (repository-relative).
    pub source: String,
    pub name: Option<String>,
    pub talos_version: Option<Fact<String>>,
    pub nodes: Vec<TalosNode>,
    /// Every `cluster.controlPlane.endpoint` (talconfig `endpoint`), in reading order.
    pub endpoints: Vec<Fact<Val>>,
    pub vips: Vec<Fact<Val>>,
    pub kube_prism: Vec<Fact<KubePrism>>,
    /// The API server's extra SANs (`cluster.apiServer.certSANs`,
    /// `additionalApiServerCertSans`, `certExtraSANs`).
    pub cert_sans: Vec<Fact<Val>>,
    /// `machine.certSANs`, `additionalMachineCertSans`: Talos API (apid) SANs.
    pub machine_cert_sans: Vec<Fact<Val>>,
    /// `cluster.network.cni.name` (`none`: the CNI comes from elsewhere).
    pub cni: Vec<Fact<String>>,
    pub proxy_disabled: Vec<Fact<bool>>,
    /// Interface addresses (prefix length dropped).
    pub addresses: Vec<Fact<Val>>,
    pub hostnames: Vec<Fact<Val>>,
    /// `machine.type` values.
    pub types: Vec<Fact<String>>,
    pub inline_manifests: Vec<Fact<Manifest>>,
    pub extra_manifests: Vec<Fact<Val>>,
    pub problems: Vec<Problem>,
}

impl Scope {
    /// Whether a fact of this scope applies to `node`.
    pub fn covers(&self, node: &TalosNode) -> bool {
        match self {
            Scope::All => true,
            Scope::ControlPlane => node.control_plane,
            Scope::Worker => !node.control_plane,
            Scope::Node(n) => *n == node.hostname,
        }
    }
}

impl Cluster {
    pub fn control_planes(&self) -> impl Iterator<Item = &TalosNode> {
        self.nodes.iter().filter(|n| n.control_plane)
    }

    pub fn workers(&self) -> impl Iterator<Item = &TalosNode> {
        self.nodes.iter().filter(|n| !n.control_plane)
    }

    /// The cluster endpoint (the last one written wins, as patches apply in order).
    pub fn endpoint(&self) -> Option<&Val> {
        self.endpoints.last().map(|f| &f.value)
    }

    /// The last fact of `facts` that applies to `node`.
    pub fn effective<'a, T>(facts: &'a [Fact<T>], node: &TalosNode) -> Option<&'a Fact<T>> {
        facts.iter().rev().find(|f| f.scope.covers(node))
    }

    /// KubePrism on `node`, as the last fact that applies says.
    pub fn kube_prism_on(&self, node: &TalosNode) -> Option<&Fact<KubePrism>> {
        Self::effective(&self.kube_prism, node)
    }

    /// Whether kube-proxy is disabled on the cluster (a control-plane setting).
    pub fn proxy_disabled(&self) -> Option<&Fact<bool>> {
        self.proxy_disabled.last()
    }

    /// The addresses of `node`: its own `address` and every interface address of its scope.
    pub fn addresses_of<'a>(&'a self, node: &'a TalosNode) -> Vec<&'a Val> {
        let mut out: Vec<&Val> = node.address.iter().collect();
        for f in &self.addresses {
            if matches!(&f.scope, Scope::Node(n) if *n == node.hostname)
                && !out.iter().any(|v| v.text == f.value.text)
            {
                out.push(&f.value);
            }
        }
        out
    }
}

/// A scalar of a plain machine config: a template expression (`{{ }}`) or a `${VAR}` left
/// in it makes it unknown.
pub(crate) fn plain_val(node: &Node) -> Option<Val> {
    let text = node.scalar_text()?;
    let known = !text.contains("{{") && !text.contains("${");
    Some(Val {
        text,
        known,
        loc: node.loc.clone(),
    })
}

/// The documents of YAML embedded in a string scalar (an inline patch, a manifest's
/// `contents`), located in the file that embeds them: a block scalar starts on the line after
/// its indicator, indented by the scalar's column.
pub(crate) fn parse_embedded(scalar: &Node, text: &str, schema: Schema) -> Vec<Node> {
    let stream = parse_stream(&scalar.loc.file, text, schema);
    let block = text.contains('\n');
    let line_by = scalar.loc.line.saturating_sub(1);
    let col_by = if block {
        scalar.loc.column.saturating_sub(1)
    } else {
        0
    };
    let mut docs = stream.docs;
    for d in &mut docs {
        shift(d, line_by, col_by);
    }
    docs
}

fn shift(node: &mut Node, lines: u32, cols: u32) {
    node.loc.line += lines;
    node.loc.column += cols;
    match &mut node.value {
        Value::Map(m) => m.values_mut().for_each(|v| shift(v, lines, cols)),
        Value::Seq(s) => s.iter_mut().for_each(|v| shift(v, lines, cols)),
        _ => {}
    }
}

/// Reads the Talos layer at `path` (relative to `root`): a talhelper `talconfig.yaml`, or a
/// folder (one holding a talconfig.yaml is read as talhelper's; any other as machine
/// configs and patches). Problems are in the result; a path that is not there is one.
pub fn load(fs: &dyn Fs, root: &Path, path: &str) -> Cluster {
    let rel = path.trim_start_matches("./").trim_end_matches('/');
    let abs = root.join(rel);
    let mut cluster = 'read: {
        if fs.is_dir(&abs) {
            for name in ["talconfig.yaml", "talconfig.yml"] {
                if fs.is_file(&abs.join(name)) {
                    break 'read talconfig::load(fs, root, &format!("{rel}/{name}"));
                }
            }
            break 'read folder::load(fs, root, rel);
        }
        talconfig::load(fs, root, rel)
    };
    if let Some(note) = unknown_note(&cluster) {
        cluster.problems.push(note);
    }
    cluster
}

/// One note naming the values the cross-layer checks need that are not known offline, so a
/// check that skips them is never a silent pass.
fn unknown_note(c: &Cluster) -> Option<Problem> {
    let mut unknown: Vec<(&str, &Val)> = Vec::new();
    unknown.extend(c.endpoints.iter().map(|f| ("the endpoint", &f.value)));
    unknown.extend(c.vips.iter().map(|f| ("a VIP", &f.value)));
    unknown.extend(c.cert_sans.iter().map(|f| ("a certSAN", &f.value)));
    unknown.extend(
        c.nodes
            .iter()
            .filter_map(|n| n.address.as_ref())
            .map(|v| ("a node address", v)),
    );
    unknown.retain(|(_, v)| !v.known);
    let (_, first) = unknown.first()?;
    let mut what: Vec<&str> = unknown.iter().map(|(w, _)| *w).collect();
    what.dedup();
    Some(Problem::new(
        ProblemKind::Unknown,
        format!(
            "{} value{} of the Talos layer ({}) {} not known offline (an encrypted file or a template), so ha-endpoint, tls-san and address-conflict do not judge what depends on {}",
            unknown.len(),
            if unknown.len() == 1 { "" } else { "s" },
            what.join(", "),
            if unknown.len() == 1 { "is" } else { "are" },
            if unknown.len() == 1 { "it" } else { "them" },
        ),
        Some(first.loc.clone()),
    ))
}
