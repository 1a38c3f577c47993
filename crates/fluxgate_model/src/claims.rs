//! The addresses an environment claims (SPEC §5.9), each with the line that set it: the VIP,
//! the nodes, the LoadBalancer Services (objects and HelmRelease values) and the pools the
//! LB IPAM hands out. A value substituted from an encrypted Secret, or one that is not an IP
//! (a DNS name, a `${VAR}` left as text), is unknown offline and claims nothing.

use std::net::IpAddr;

use crate::{Environment, object_id};
use fluxgate_diagnostics::Location;
use fluxgate_flux::lookup::ObjectIndex;
use fluxgate_flux::substitute::Substituted;
use fluxgate_flux::vars::{Vars, builtin_creators};
use fluxgate_yaml::{Node, Value};
use ipnet::IpNet;

use crate::endpoints::{Topology, normalize_host, vips_of};

/// What claims an address, in the order claimants are taken: a node's address is its own
/// first, so a VIP or a Service on it is the second claimant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Node,
    Vip,
    /// An Ansible endpoint variable whose name does not say VIP (`apiserver_endpoint`,
    /// `k3s_registration_address`): the VIP, unless it names a node (a single-server
    /// cluster registers with its server; no one announces that address a second time).
    Endpoint,
    Service,
    Pool,
}

/// One claim: a single address, or a pool's inclusive range (one address family).
#[derive(Clone, Debug)]
pub struct Claim {
    pub kind: Kind,
    /// `the VIP (Ansible `kube_vip_address`)`, `node k3s-prod-1`, `Service default/web`.
    pub who: String,
    pub first: IpAddr,
    pub last: IpAddr,
    /// The range as written (pools).
    pub written: String,
    pub loc: Location,
    /// A Service's sharing annotation, `key=value`: equal keys share one address on purpose.
    pub share: Option<String>,
}

impl Claim {
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.first <= ip && ip <= self.last
    }
}

/// Annotations that ask the LB IPAM for addresses (comma-separated lists).
const LB_ANNOTATIONS: &[&str] = &[
    "io.cilium/lb-ipam-ips",
    "lbipam.cilium.io/ips",
    "metallb.universe.tf/loadBalancerIPs",
    "metallb.io/loadBalancerIPs",
    "kube-vip.io/loadbalancerIPs",
];

/// Annotations under which Services share one address on purpose.
const SHARE_ANNOTATIONS: &[&str] = &[
    "lbipam.cilium.io/sharing-key",
    "metallb.universe.tf/allow-shared-ip",
    "metallb.io/allow-shared-ip",
];

/// `a-b`, a CIDR, or one address.
pub fn parse_range(text: &str) -> Option<(IpAddr, IpAddr)> {
    let t = text.trim();
    if let Some((a, b)) = t.split_once('-') {
        let (a, b): (IpAddr, IpAddr) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        return (a.is_ipv4() == b.is_ipv4() && a <= b).then_some((a, b));
    }
    if t.contains('/') {
        let net: IpNet = t.parse().ok()?;
        return Some((net.network(), net.broadcast()));
    }
    let ip: IpAddr = t.parse().ok()?;
    Some((ip, ip))
}

/// A Flux variable whose name says it holds a VIP (`KUBE_VIP_ADDR`, `CLUSTER_VIP`).
fn says_vip(name: &str) -> bool {
    name.to_ascii_uppercase()
        .split('_')
        .any(|w| w.starts_with("VIP") || w.ends_with("VIP"))
}

/// Where a rendered scalar `whole` under `key` of an object in `file` was set. Substitution
/// already locates a value at its variable's definition; when the variable wrote only a part
/// (`${PREFIX}.50`), the line that composed it is where this address was chosen.
fn set_at(
    subs: &[Substituted],
    vars: Option<&Vars>,
    file: &str,
    key: &str,
    loc: &Location,
    whole: &str,
) -> Location {
    let key = key.replace('.', "\\.");
    subs.iter()
        .filter(|s| s.definition == *loc && &*s.consumer.file == file && s.path.ends_with(&key))
        .find(|s| {
            vars.and_then(|v| v.get(&s.var))
                .is_some_and(|d| normalize_range(&d.value) != normalize_range(whole))
        })
        .map_or_else(|| loc.clone(), |s| s.consumer.clone())
}

struct Collector<'a> {
    out: Vec<Claim>,
    /// The substitutions and variables of the Kustomization that rendered the object at hand,
    /// and the object's file.
    subs: &'a [Substituted],
    vars: Option<&'a Vars>,
    file: String,
}

impl Collector<'_> {
    /// Claims `text`, set at `loc`.
    fn push(&mut self, kind: Kind, who: String, text: &str, loc: Location, share: Option<String>) {
        let Some((first, last)) = parse_range(&normalize_range(text)) else {
            return;
        };
        if first.is_loopback() || (kind != Kind::Pool && first != last) {
            return;
        }
        if self
            .out
            .iter()
            .any(|c| c.first == first && c.last == last && c.loc == loc && c.who == who)
        {
            return;
        }
        let written = text.trim().to_string();
        self.out.push(Claim {
            kind,
            who,
            first,
            last,
            written,
            loc,
            share,
        });
    }

    /// Every comma-separated address of the scalar `v` under `key` of the object at hand.
    fn scalar(&mut self, kind: Kind, who: &str, key: &str, v: &Node, share: Option<&String>) {
        let whole = v.scalar_text().unwrap_or_default();
        let loc = set_at(self.subs, self.vars, &self.file, key, &v.loc, &whole);
        for part in whole.split(',') {
            self.push(kind, who.to_string(), part, loc.clone(), share.cloned());
        }
    }

    /// A LoadBalancer Service: `svc` holds `type` and `loadBalancerIP`, `annotations` the
    /// annotations (and the sharing key).
    fn service(&mut self, who: &str, svc: &Node, annotations: Option<&Node>, ips: bool) {
        if svc.str_at(&["type"]).is_some_and(|t| t != "LoadBalancer") {
            return;
        }
        let share = annotations.and_then(|a| {
            SHARE_ANNOTATIONS.iter().find_map(|k| {
                let v = a.get(k)?.scalar_text()?;
                Some(format!("{k}={v}"))
            })
        });
        if ips && let Some(v) = svc.get("loadBalancerIP") {
            self.scalar(Kind::Service, who, "loadBalancerIP", v, share.as_ref());
        }
        for key in LB_ANNOTATIONS {
            if let Some(v) = annotations.and_then(|a| a.get(key)) {
                self.scalar(Kind::Service, who, key, v, share.as_ref());
            }
        }
    }

    fn object(&mut self, obj: &Node) {
        self.file = obj.loc.file.to_string();
        let kind = obj.str_at(&["kind"]).unwrap_or_default();
        let name = obj.str_at(&["metadata", "name"]).unwrap_or_default();
        if kind == "ConfigMap" {
            return self.kube_vip_config(obj);
        }
        let Some(spec) = obj.get("spec") else {
            return;
        };
        match kind {
            "Service" if spec.str_at(&["type"]) == Some("LoadBalancer") => {
                let who = format!("Service {}", object_id(obj));
                self.service(&who, spec, obj.path(&["metadata", "annotations"]), true);
            }
            "CiliumLoadBalancerIPPool"
                if spec.get("disabled").and_then(Node::as_bool) != Some(true) =>
            {
                let who = format!("CiliumLoadBalancerIPPool {name}");
                for block in ["blocks", "cidrs"]
                    .iter()
                    .filter_map(|k| spec.get(k)?.as_seq())
                    .flatten()
                {
                    if let Some(cidr) = block.get("cidr") {
                        self.scalar(Kind::Pool, &who, "cidr", cidr, None);
                    } else if let Some(start) = block.get("start") {
                        let a = start.scalar_text().unwrap_or_default();
                        let b = block
                            .get("stop")
                            .and_then(Node::scalar_text)
                            .unwrap_or_else(|| a.clone());
                        let loc = set_at(self.subs, self.vars, &self.file, "start", &start.loc, &a);
                        self.push(Kind::Pool, who.clone(), &format!("{a}-{b}"), loc, None);
                    }
                }
            }
            "IPAddressPool" => {
                let who = format!("IPAddressPool {}", object_id(obj));
                let addresses = spec.get("addresses").and_then(Node::as_seq);
                for (i, a) in addresses.unwrap_or_default().iter().enumerate() {
                    self.scalar(Kind::Pool, &who, &format!("addresses[{i}]"), a, None);
                }
            }
            _ => {}
        }
    }

    /// kube-vip's cloud provider ConfigMap: `cidr-<ns>`, `range-<ns>`, `cidr-global`, ...
    fn kube_vip_config(&mut self, obj: &Node) {
        if obj.str_at(&["metadata", "name"]) != Some("kubevip") {
            return;
        }
        let Some(data) = obj.get("data").and_then(Node::as_map) else {
            return;
        };
        for (key, v) in data
            .iter()
            .filter(|(k, _)| k.starts_with("cidr-") || k.starts_with("range-"))
        {
            let who = format!("kube-vip ConfigMap {} `{key}`", object_id(obj));
            self.scalar(Kind::Pool, &who, key, v, None);
        }
    }

    /// Services a HelmRelease's values describe: a map with `loadBalancerIP`, or one holding
    /// the LB annotations (its parent is the Service's map).
    fn values(&mut self, id: &str, node: &Node, path: &str, parent: Option<(&Node, &str)>) {
        match &node.value {
            // Scalars describe nothing: only collections are walked (and given a path).
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate().filter(|(_, x)| is_collection(x)) {
                    self.values(id, item, &format!("{path}[{i}]"), None);
                }
            }
            Value::Map(m) => {
                if LB_ANNOTATIONS.iter().any(|k| m.contains_key(*k)) {
                    let (svc, at) = parent.unwrap_or((node, path));
                    self.service(&release_part(id, at), svc, Some(node), false);
                }
                if m.contains_key("loadBalancerIP") {
                    let who = release_part(id, path);
                    self.service(&who, node, node.get("annotations"), true);
                }
                for (k, v) in m.iter().filter(|(_, v)| is_collection(v)) {
                    let child = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    self.values(id, v, &child, Some((node, path)));
                }
            }
            _ => {}
        }
    }
}

fn is_collection(node: &Node) -> bool {
    matches!(node.value, Value::Map(_) | Value::Seq(_))
}

/// A Service a HelmRelease's values describe at `path`.
fn release_part(id: &str, path: &str) -> String {
    if path.is_empty() {
        format!("HelmRelease {id}")
    } else {
        format!("HelmRelease {id} (values {path})")
    }
}

/// A range as written may have spaces around its dash (`a - b`) or quotes.
fn normalize_range(text: &str) -> String {
    text.trim()
        .trim_matches(|c| c == '"' || c == '\'')
        .to_string()
}

/// Every address the environment claims.
pub fn claims(env: &Environment, topo: &Topology, vip_vars: &[String]) -> Vec<Claim> {
    let sources: Vec<Node> = env
        .objects()
        .filter(|o| matches!(o.str_at(&["kind"]), Some("ConfigMap" | "Secret")))
        .cloned()
        .collect();
    // Indexed once: a scan of every source per Kustomization grew with the square of the size.
    let sources = ObjectIndex::new(sources, &builtin_creators());
    let vars: Vec<Vars> = env
        .tree
        .kustomizations
        .iter()
        .map(|k| Vars::for_kustomization_in(&k.object, &sources).0)
        .collect();
    let mut c = Collector {
        out: Vec::new(),
        subs: &[],
        vars: None,
        file: String::new(),
    };
    for v in vips_of(env, topo, &[], vip_vars) {
        let endpoint = (v.source.starts_with("Ansible") && !v.source.contains("vip"))
            || v.source == "Talos cluster endpoint";
        let kind = if endpoint { Kind::Endpoint } else { Kind::Vip };
        if let Some(loc) = v.loc {
            c.push(kind, format!("the VIP ({})", v.source), &v.host, loc, None);
        }
    }
    for (name, def) in vars.iter().flat_map(Vars::iter) {
        if says_vip(name) && !def.opaque {
            let who = format!("the VIP (Flux variable `{name}`)");
            c.push(Kind::Vip, who, &def.value, def.definition.clone(), None);
        }
    }
    if env.bootstrap.is_none()
        && let Some(talos) = &env.talos
    {
        for n in &talos.nodes {
            for a in talos.addresses_of(n).into_iter().filter(|a| a.known) {
                c.push(
                    Kind::Node,
                    format!("node {}", n.hostname),
                    &a.text,
                    a.loc.clone(),
                    None,
                );
            }
        }
    }
    if let Some(boot) = &env.bootstrap {
        for host in &boot.hosts {
            if let Some((ip, loc)) = node_address(&boot.project, host) {
                c.push(Kind::Node, format!("node {host}"), &ip, loc, None);
            }
        }
    }
    for obj in &env.tree.entry_objects {
        c.object(obj);
    }
    for (k, vars) in env.tree.kustomizations.iter().zip(&vars) {
        c.subs = &k.substituted;
        c.vars = Some(vars);
        for obj in &k.objects {
            c.object(obj);
            if obj.str_at(&["kind"]) == Some("HelmRelease")
                && let Some(rel) = env.releases.get(&object_id(obj))
            {
                c.file = obj.loc.file.to_string();
                let before = c.out.len();
                c.values(&rel.id, &rel.values.tree, "", None);
                // What the chart installs: an address the release's values already claim is
                // that value rendered (one claimant); any other is the chart's own.
                if let Some(installed) = &rel.installed {
                    let from_values: Vec<IpAddr> =
                        c.out[before..].iter().map(|claim| claim.first).collect();
                    let mut chart = Collector {
                        out: Vec::new(),
                        subs: &[],
                        vars: None,
                        file: String::new(),
                    };
                    for o in &installed.objects {
                        chart.object(o);
                    }
                    c.out.extend(
                        chart
                            .out
                            .into_iter()
                            .filter(|claim| !from_values.contains(&claim.first))
                            .map(|mut claim| {
                                claim.who =
                                    format!("{} (chart of HelmRelease {})", claim.who, rel.id);
                                claim
                            }),
                    );
                }
            }
        }
    }
    c.out
}

/// A node's own address (`k3s_node_ip`, else `ansible_host`, else its name when that is an
/// IP) and the line that wrote it (the end of the variable chain, else the inventory entry).
fn node_address(project: &fluxgate_ansible::Project, host: &str) -> Option<(String, Location)> {
    let declared = project.inventory().hosts.get(host).map(|h| h.loc.clone());
    ["k3s_node_ip", "ansible_host"]
        .iter()
        .find_map(|var| {
            let r = project.resolve(host, var).ok().filter(|r| !r.opaque)?;
            let ip = normalize_host(&r.value.scalar_text()?);
            ip.parse::<IpAddr>().ok()?;
            let loc = r
                .origin
                .last()
                .map(|o| o.location.clone())
                .or(declared.clone())?;
            Some((ip, loc))
        })
        .or_else(|| Some((host.parse::<IpAddr>().ok()?.to_string(), declared?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("a test address")
    }

    #[test]
    fn ranges() {
        assert_eq!(
            parse_range("10.0.0.0/30"),
            Some((ip("10.0.0.0"), ip("10.0.0.3")))
        );
        assert_eq!(
            parse_range("10.0.0.5 - 10.0.0.9"),
            Some((ip("10.0.0.5"), ip("10.0.0.9")))
        );
        assert_eq!(
            parse_range("fd00::/126"),
            Some((ip("fd00::"), ip("fd00::3")))
        );
        assert_eq!(
            parse_range("192.168.1.7"),
            Some((ip("192.168.1.7"), ip("192.168.1.7")))
        );
        assert_eq!(parse_range("10.0.0.9-10.0.0.5"), None);
        assert_eq!(parse_range("10.0.0.1-fd00::1"), None);
        assert_eq!(parse_range("k8s.example.com"), None);
        assert_eq!(parse_range("${LB_POOL}"), None);
    }

    #[test]
    fn vip_names() {
        assert!(says_vip("KUBE_VIP_ADDR"));
        assert!(says_vip("CLUSTER_VIP"));
        assert!(says_vip("KUBEVIP_ADDRESS"));
        assert!(!says_vip("K3S_API_HOST"));
        assert!(!says_vip("SVC_PLEX_ADDR"));
    }
}
