//! What a Talos machine configuration says, read from its YAML: the v1alpha1 document (or a
//! strategic-merge patch of it, which has the same shape), the newer documents
//! (`Layer2VIPConfig`, `KubePrismConfig`, `KubeAPIServerConfig`, `HostnameConfig`,
//! `LinkConfig`, `KubeProxyConfig`, ...) and RFC 6902 JSON patches (`op`/`path`/`value`).
//! Every fact keeps the place that wrote it and the nodes it applies to.

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Schema, Value};

use crate::{Cluster, Fact, KubePrism, Manifest, Scope, Val};

/// Turns a scalar into a value: talconfig substitutes `${VAR}`, a plain machine config only
/// marks template expressions (`{{ }}`) unknown.
pub(crate) type Resolve<'a> = &'a dyn Fn(&Node) -> Option<Val>;

pub(crate) struct Reader<'a> {
    pub cluster: &'a mut Cluster,
    pub scope: Scope,
    pub resolve: Resolve<'a>,
}

/// An address without its prefix length (`10.0.0.5/24` -> `10.0.0.5`).
pub(crate) fn strip_prefix_len(v: &mut Val) {
    if let Some((ip, len)) = v.text.split_once('/')
        && len.chars().all(|c| c.is_ascii_digit())
    {
        v.text = ip.to_string();
    }
}

impl Reader<'_> {
    fn fact<T>(&self, value: T, loc: Location) -> Fact<T> {
        Fact {
            value,
            loc,
            scope: self.scope.clone(),
        }
    }

    fn val(&self, node: &Node) -> Option<Val> {
        if matches!(node.value, Value::Map(_) | Value::Seq(_) | Value::Null) {
            return None;
        }
        (self.resolve)(node)
    }

    fn vals(&self, node: Option<&Node>) -> Vec<Val> {
        node.and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter_map(|n| self.val(n))
            .collect()
    }

    /// One YAML document of a machine config or patch: v1alpha1 (or partial), a newer
    /// document, or a JSON patch.
    pub fn document(&mut self, doc: &Node) {
        if let Some(ops) = doc.as_seq() {
            return self.json_patch(ops);
        }
        if doc.get("kind").is_some() && doc.get("apiVersion").is_some() {
            return self.new_document(doc);
        }
        self.v1alpha1(doc);
    }

    fn interface(&mut self, iface: &Node) {
        for a in self.vals(iface.get("addresses")) {
            let mut a = a;
            strip_prefix_len(&mut a);
            let loc = a.loc.clone();
            self.cluster.addresses.push(self.fact(a, loc));
        }
        if let Some(ip) = iface.path(&["vip", "ip"]).and_then(|n| self.val(n)) {
            let loc = ip.loc.clone();
            self.cluster.vips.push(self.fact(ip, loc));
        }
        for vlan in iface
            .get("vlans")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            self.interface(vlan);
        }
    }

    fn v1alpha1(&mut self, doc: &Node) {
        if let Some(machine) = doc.get("machine") {
            if let Some(t) = machine.str_at(&["type"]) {
                self.cluster
                    .types
                    .push(self.fact(t.to_string(), machine.loc.clone()));
            }
            if let Some(h) = machine
                .path(&["network", "hostname"])
                .and_then(|n| self.val(n))
            {
                let loc = h.loc.clone();
                self.cluster.hostnames.push(self.fact(h, loc));
            }
            for iface in machine
                .path(&["network", "interfaces"])
                .and_then(Node::as_seq)
                .unwrap_or_default()
            {
                self.interface(iface);
            }
            if let Some(kp) = machine.path(&["features", "kubePrism"]) {
                self.kube_prism(kp, kp.get("enabled").and_then(Node::as_bool));
            }
            for s in self.vals(machine.get("certSANs")) {
                let loc = s.loc.clone();
                self.cluster.machine_cert_sans.push(self.fact(s, loc));
            }
        }
        if let Some(cluster) = doc.get("cluster") {
            if let Some(e) = cluster
                .path(&["controlPlane", "endpoint"])
                .and_then(|n| self.val(n))
            {
                let loc = e.loc.clone();
                self.cluster.endpoints.push(self.fact(e, loc));
            }
            if let Some(n) = cluster.str_at(&["clusterName"]) {
                self.cluster.name.get_or_insert_with(|| n.to_string());
            }
            for s in self.vals(cluster.path(&["apiServer", "certSANs"])) {
                let loc = s.loc.clone();
                self.cluster.cert_sans.push(self.fact(s, loc));
            }
            if let Some(n) = cluster.path(&["network", "cni", "name"])
                && let Some(v) = self.val(n)
            {
                self.cluster.cni.push(self.fact(v.text, n.loc.clone()));
            }
            if let Some(d) = cluster.path(&["proxy", "disabled"])
                && let Some(b) = d.as_bool()
            {
                self.cluster
                    .proxy_disabled
                    .push(self.fact(b, d.loc.clone()));
            }
            for m in cluster
                .get("inlineManifests")
                .and_then(Node::as_seq)
                .unwrap_or_default()
            {
                self.inline_manifest(m);
            }
            for u in self.vals(cluster.get("extraManifests")) {
                let loc = u.loc.clone();
                self.cluster.extra_manifests.push(self.fact(u, loc));
            }
        }
    }

    fn kube_prism(&mut self, kp: &Node, enabled: Option<bool>) {
        let port = kp
            .get("port")
            .and_then(Node::as_i64)
            .and_then(|p| u16::try_from(p).ok());
        let loc = kp
            .get("enabled")
            .map_or_else(|| kp.loc.clone(), |n| n.loc.clone());
        if let Some(enabled) = enabled {
            self.cluster.kube_prism.push(self.fact(
                KubePrism {
                    enabled,
                    port: port.unwrap_or(crate::KUBE_PRISM_PORT),
                    default: false,
                },
                loc,
            ));
        }
    }

    fn inline_manifest(&mut self, m: &Node) {
        let name = m.str_at(&["name"]).unwrap_or_default().to_string();
        let Some(contents) = m.get("contents") else {
            return;
        };
        let text = contents.scalar_text().unwrap_or_default();
        let docs = crate::parse_embedded(contents, &text, Schema::Kube);
        self.cluster.inline_manifests.push(self.fact(
            Manifest {
                name,
                docs,
                known: !text.contains("${") && !text.contains("{{"),
            },
            m.loc.clone(),
        ));
    }

    fn new_document(&mut self, doc: &Node) {
        let kind = doc.str_at(&["kind"]).unwrap_or_default();
        match kind {
            "Layer2VIPConfig" => {
                if let Some(ip) = doc.get("name").and_then(|n| self.val(n)) {
                    let loc = ip.loc.clone();
                    self.cluster.vips.push(self.fact(ip, loc));
                }
            }
            "HostnameConfig" => {
                if let Some(h) = doc.get("hostname").and_then(|n| self.val(n)) {
                    let loc = h.loc.clone();
                    self.cluster.hostnames.push(self.fact(h, loc));
                }
            }
            "LinkConfig" | "BondConfig" | "VLANConfig" | "BridgeConfig" | "DummyLinkConfig" => {
                for a in doc
                    .get("addresses")
                    .and_then(Node::as_seq)
                    .unwrap_or_default()
                {
                    if let Some(mut v) = a.get("address").and_then(|n| self.val(n)) {
                        strip_prefix_len(&mut v);
                        let loc = v.loc.clone();
                        self.cluster.addresses.push(self.fact(v, loc));
                    }
                }
            }
            "KubePrismConfig" => {
                let enabled = doc.get("enabled").and_then(Node::as_bool).unwrap_or(true);
                self.kube_prism(doc, Some(enabled));
            }
            "KubeAPIServerConfig" => {
                for s in self.vals(doc.get("certExtraSANs")) {
                    let loc = s.loc.clone();
                    self.cluster.cert_sans.push(self.fact(s, loc));
                }
            }
            "KubeProxyConfig" => {
                if let Some(e) = doc.get("enabled")
                    && let Some(b) = e.as_bool()
                {
                    self.cluster
                        .proxy_disabled
                        .push(self.fact(!b, e.loc.clone()));
                }
            }
            _ => {}
        }
    }

    /// RFC 6902 operations on the v1alpha1 document: an `add` or `replace` is read as the
    /// partial document its path and value make; a `remove` of a fact's path takes it back.
    fn json_patch(&mut self, ops: &[Node]) {
        for op in ops {
            let (Some(kind), Some(path)) = (op.str_at(&["op"]), op.str_at(&["path"])) else {
                continue;
            };
            let keys: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            match kind {
                "add" | "replace" => {
                    let Some(value) = op.get("value") else {
                        continue;
                    };
                    let doc = nest(&keys, value.clone(), &op.loc);
                    self.v1alpha1(&doc);
                }
                "remove" => self.remove(&keys, &op.loc),
                _ => {}
            }
        }
    }

    fn remove(&mut self, keys: &[&str], loc: &Location) {
        match keys {
            ["cluster", "proxy"] | ["cluster", "proxy", "disabled"] => {
                self.cluster
                    .proxy_disabled
                    .push(self.fact(false, loc.clone()));
            }
            ["machine", "features", "kubePrism"]
            | ["machine", "features", "kubePrism", "enabled"] => {
                self.cluster.kube_prism.push(self.fact(
                    KubePrism {
                        enabled: false,
                        port: crate::KUBE_PRISM_PORT,
                        default: false,
                    },
                    loc.clone(),
                ));
            }
            _ => {}
        }
    }
}

/// The partial document a JSON pointer and its value make (`/machine/network/interfaces/0`
/// with a value: the value is the first interface). `-` and indexes become a one-item list.
fn nest(keys: &[&str], value: Node, loc: &Location) -> Node {
    let mut node = value;
    for key in keys.iter().rev() {
        let key = key.replace("~1", "/").replace("~0", "~");
        node = if key == "-" || key.chars().all(|c| c.is_ascii_digit()) && !key.is_empty() {
            Node::new(Value::Seq(vec![node]), loc.clone())
        } else {
            let mut m = fluxgate_yaml::Map::default();
            m.insert(key, node);
            Node::new(Value::Map(Box::new(m)), loc.clone())
        };
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::parse_stream;

    fn read(text: &str) -> Cluster {
        let mut c = Cluster::default();
        let stream = parse_stream("cp.yaml", text, Schema::Kube);
        let resolve = |n: &Node| crate::plain_val(n);
        let mut r = Reader {
            cluster: &mut c,
            scope: Scope::All,
            resolve: &resolve,
        };
        for d in &stream.docs {
            r.document(d);
        }
        c
    }

    #[test]
    fn v1alpha1_facts_with_their_lines() {
        let c = read(
            "version: v1alpha1\nmachine:\n  type: controlplane\n  certSANs: [10.0.0.9]\n  network:\n    hostname: cp1\n    interfaces:\n      - interface: eth0\n        addresses: [10.0.0.11/24]\n        vip:\n          ip: 10.0.0.9\n  features:\n    kubePrism:\n      enabled: true\n      port: 7445\ncluster:\n  controlPlane:\n    endpoint: https://10.0.0.9:6443\n  apiServer:\n    certSANs: [k8s.example.com]\n  network:\n    cni:\n      name: none\n  proxy:\n    disabled: true\n",
        );
        assert_eq!(c.vips[0].value.text, "10.0.0.9");
        assert_eq!(c.vips[0].loc.line, 11);
        assert_eq!(c.addresses[0].value.text, "10.0.0.11");
        assert_eq!(c.hostnames[0].value.text, "cp1");
        assert_eq!(c.types[0].value, "controlplane");
        assert_eq!(c.endpoints[0].value.text, "https://10.0.0.9:6443");
        assert_eq!(c.endpoints[0].loc.line, 18);
        assert_eq!(c.cert_sans[0].value.text, "k8s.example.com");
        assert_eq!(c.machine_cert_sans[0].value.text, "10.0.0.9");
        assert_eq!(c.cni[0].value, "none");
        assert!(c.proxy_disabled[0].value);
        assert_eq!(c.kube_prism[0].value.port, 7445);
        assert!(c.kube_prism[0].value.enabled);
        assert_eq!(c.kube_prism[0].loc.line, 14);
    }

    #[test]
    fn newer_documents() {
        let c = read(
            "apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 10.1.1.5\nlink: eth0\n---\napiVersion: v1alpha1\nkind: KubePrismConfig\nport: 7446\n---\napiVersion: v1alpha1\nkind: KubeAPIServerConfig\ncertExtraSANs:\n  - 127.0.0.1\n  - k8s.internal\n---\napiVersion: v1alpha1\nkind: KubeProxyConfig\nenabled: false\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: delta\n---\napiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\naddresses:\n  - address: 10.1.1.20/24\n",
        );
        assert_eq!(c.vips[0].value.text, "10.1.1.5");
        assert_eq!(c.kube_prism[0].value.port, 7446);
        assert_eq!(c.cert_sans.len(), 2);
        assert!(c.proxy_disabled[0].value);
        assert_eq!(c.hostnames[0].value.text, "delta");
        assert_eq!(c.addresses[0].value.text, "10.1.1.20");
    }

    #[test]
    fn json_patches() {
        let c = read(
            "- op: add\n  path: /machine/features/kubePrism\n  value:\n    enabled: true\n    port: 7445\n- op: add\n  path: /cluster/proxy\n  value:\n    disabled: true\n- op: add\n  path: /machine/network/interfaces/0/vip\n  value:\n    ip: 10.0.0.9\n- op: remove\n  path: /cluster/apiServer/admissionControl\n",
        );
        assert!(c.kube_prism[0].value.enabled);
        assert_eq!(c.kube_prism[0].loc.line, 4);
        assert!(c.proxy_disabled[0].value);
        assert_eq!(c.vips[0].value.text, "10.0.0.9");
        assert_eq!(c.vips[0].loc.line, 13);
    }
}
