//! What the HA rules share: an environment's nodes (servers and agents), its HA endpoints
//! (the VIP, from `vip:` or found), the endpoints of the other environments, and the
//! components that dial the API server (the consumers), each with the place its value was
//! set and the place it is consumed.

use std::collections::BTreeSet;
use std::net::IpAddr;

use crate::Environment;
use crate::environment::Bootstrap;
use fluxgate_ansible::{Project, RenderedTemplate};
use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Schema, Value, parse_stream};

/// Ansible variables that hold the HA endpoint (SPEC §5.1).
pub const VIP_VARS: &[&str] = &[
    "kube_vip_address",
    "apiserver_endpoint",
    "k3s_registration_address",
    "control_plane_endpoint",
];

/// Variables that hold one node's own address: a consumer derived straight from one of them
/// is located at the template line that reads it, not at the inventory.
const NODE_ADDRESS_VARS: &[&str] = &["k3s_node_ip", "ansible_host", "node_ip"];

/// One node of the environment.
#[derive(Clone, Debug)]
pub struct Host {
    pub name: String,
    pub address: Option<String>,
    pub server: bool,
    /// Where the node's address is written, when a bootstrap layer says (a Talos config).
    pub loc: Option<Location>,
}

/// The nodes of an environment.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub hosts: Vec<Host>,
    /// Control-plane nodes (from the inventory, else `nodes:`).
    pub control_planes: usize,
    /// The hosts are representatives of an inventory's groups (it defines no host).
    pub representative: bool,
    /// Host name -> server, built on first use, so that a lookup per host stays linear over
    /// an inventory of 10,000 hosts.
    index: std::sync::OnceLock<std::collections::HashMap<String, bool>>,
}

/// How many servers a representative topology stands for unless `nodes:` says: a template
/// repository is made for any number of nodes, so it is checked as an HA control plane.
const REPRESENTATIVE_SERVERS: usize = 3;

impl Topology {
    pub fn servers(&self) -> impl Iterator<Item = &Host> {
        self.hosts.iter().filter(|h| h.server)
    }

    fn index(&self) -> &std::collections::HashMap<String, bool> {
        self.index.get_or_init(|| {
            let mut m = std::collections::HashMap::new();
            for h in &self.hosts {
                m.entry(h.name.clone()).or_insert(h.server);
            }
            m
        })
    }

    pub fn is_agent(&self, host: &str) -> bool {
        self.index().get(host).is_some_and(|server| !server)
    }

    pub fn contains(&self, host: &str) -> bool {
        self.index().contains_key(host)
    }

    /// The first server (the founder), else the first host.
    pub fn primary(&self) -> Option<&str> {
        self.servers()
            .next()
            .or_else(|| self.hosts.first())
            .map(|h| h.name.as_str())
    }
}

/// Groups whose hosts are agents (workers) rather than servers.
fn is_agent_group(group: &str) -> bool {
    let g = group.to_ascii_lowercase();
    matches!(g.as_str(), "node" | "nodes") || g.contains("agent") || g.contains("worker")
}

/// A host's own address: `k3s_node_ip`, else `ansible_host`, else its name when that is an IP.
pub fn host_address(project: &Project, host: &str) -> Option<String> {
    for var in ["k3s_node_ip", "ansible_host"] {
        if let Ok(r) = project.resolve(host, var)
            && !r.opaque
            && let Some(s) = r.value.scalar_text()
            && !s.is_empty()
            && !s.contains("{{")
        {
            return Some(normalize_host(&s));
        }
    }
    host.parse::<IpAddr>().ok().map(|_| host.to_string())
}

/// The environment's nodes. Agents are hosts in an agent-like group (`agent`, `node`,
/// `workers`...) or in the groups named by the `agent_groups` setting; every other host of the
/// environment is a server.
pub fn topology(env: &Environment, agent_groups: &[String]) -> Topology {
    if env.bootstrap.is_none()
        && let Some(talos) = &env.talos
        && !talos.nodes.is_empty()
    {
        return talos_topology(talos);
    }
    let Some(boot) = &env.bootstrap else {
        let n = env.config.nodes.unwrap_or(0) as usize;
        return Topology {
            hosts: Vec::new(),
            control_planes: n,
            representative: false,
            index: std::sync::OnceLock::new(),
        };
    };
    let inv = boot.project.inventory();
    let hosts: Vec<Host> = boot
        .hosts
        .iter()
        .map(|h| {
            let groups = inv.host_groups(h);
            let agent = groups
                .iter()
                .any(|g| is_agent_group(g) || agent_groups.iter().any(|a| a == g));
            // A representative host's own address is whatever `ansible_host` will be.
            let address = host_address(&boot.project, h).or_else(|| {
                boot.project
                    .is_representative(h)
                    .then(|| fluxgate_ansible::symbolic("ansible_host"))
            });
            Host {
                name: h.clone(),
                address,
                server: !agent,
                loc: None,
            }
        })
        .collect();
    let representative = boot.hosts.iter().any(|h| boot.project.is_representative(h));
    let control_planes = if representative {
        env.config
            .nodes
            .map_or(REPRESENTATIVE_SERVERS, |n| n as usize)
    } else {
        hosts.iter().filter(|h| h.server).count()
    };
    Topology {
        hosts,
        control_planes,
        representative,
        index: std::sync::OnceLock::new(),
    }
}

/// The nodes of a Talos cluster: control-plane nodes are servers, the others agents. A node
/// whose address is unknown (an encrypted variable) has none.
fn talos_topology(talos: &fluxgate_talos::Cluster) -> Topology {
    let hosts: Vec<Host> = talos
        .nodes
        .iter()
        .map(|n| {
            let known = n.address.as_ref().filter(|a| a.known);
            Host {
                name: n.hostname.clone(),
                address: known.map(|a| normalize_host(&a.text)),
                server: n.control_plane,
                loc: Some(known.map_or_else(|| n.loc.clone(), |a| a.loc.clone())),
            }
        })
        .collect();
    Topology {
        control_planes: talos.control_planes().count(),
        hosts,
        representative: false,
        index: std::sync::OnceLock::new(),
    }
}

/// The HA endpoints a Talos layer declares: the VIPs (`vip.ip`, `Layer2VIPConfig`) and the
/// cluster endpoint, unless the endpoint is one node's own address (a single-node
/// endpoint is no HA endpoint). Values not known offline are left out.
pub fn talos_vips(talos: &fluxgate_talos::Cluster) -> Vec<Vip> {
    let mut out = Vec::new();
    for v in talos.vips.iter().filter(|v| v.value.known) {
        out.push(Vip {
            host: normalize_host(&v.value.text),
            loc: Some(v.loc.clone()),
            source: "Talos `vip.ip`".into(),
        });
    }
    if let Some(f) = talos.endpoints.last().filter(|f| f.value.known) {
        let host = normalize_host(&f.value.text);
        let is_node = talos.nodes.iter().any(|n| {
            talos
                .addresses_of(n)
                .iter()
                .any(|a| a.known && normalize_host(&a.text) == host)
        });
        if !host.is_empty() && !is_node {
            out.push(Vip {
                host,
                loc: Some(f.loc.clone()),
                source: "Talos cluster endpoint".into(),
            });
        }
    }
    out
}

/// An HA endpoint of an environment.
#[derive(Clone, Debug)]
pub struct Vip {
    /// The host part, normalised.
    pub host: String,
    pub loc: Option<Location>,
    /// Where it was found: `vip: in fluxgate.yaml`, `kube_vip_address`, `kube-vip manifest`.
    pub source: String,
}

/// The host part of an endpoint: no scheme, port, path, quotes or brackets; lower case.
pub fn normalize_host(raw: &str) -> String {
    let mut s = raw.trim().trim_matches(|c| c == '"' || c == '\'').trim();
    for scheme in ["https://", "http://", "tcp://"] {
        if let Some(rest) = s.strip_prefix(scheme) {
            s = rest;
        }
    }
    let s = s.split('/').next().unwrap_or_default();
    let host = if let Some(rest) = s.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else if s.matches(':').count() == 1 {
        s.split(':').next().unwrap_or_default()
    } else {
        s
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// A loopback address: the node-local API proxy (k3s 6444, Talos KubePrism 7445).
pub fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The first `{{ name ... }}` variable of a line of Jinja.
pub fn jinja_var(text: &str) -> Option<String> {
    let start = text.find("{{")? + 2;
    let expr = text[start..].trim_start();
    let name: String = expr
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let rest = expr[name.len()..].trim_start();
    (!name.is_empty() && (rest.starts_with("}}") || rest.starts_with('|'))).then_some(name)
}

/// The HA endpoints of an environment: the value of `vip:` in fluxgate.yaml (an IP, a DNS
/// name, or `{{ var }}` resolved on the environment's first server) and the variables of
/// [`VIP_VARS`] and `extra_vars`, then kube-vip manifests in the steady state and in the
/// bootstrap's `renders` (none to skip them).
pub fn vips_of(
    env: &Environment,
    topo: &Topology,
    renders: &[Render],
    extra_vars: &[String],
) -> Vec<Vip> {
    let mut out: Vec<Vip> = Vec::new();
    let push = |out: &mut Vec<Vip>, raw: &str, loc: Option<Location>, source: String| {
        let host = normalize_host(raw);
        if host.is_empty() || host.contains("{{") || host.contains("${") {
            return;
        }
        if !out.iter().any(|v| v.host == host) {
            out.push(Vip { host, loc, source });
        }
    };
    let primary = topo.primary().map(str::to_string);
    if let Some(raw) = &env.config.vip {
        let loc = Some(env.config.vip_loc.clone().unwrap_or(env.config.loc.clone()));
        match (jinja_var(raw), &env.bootstrap, &primary) {
            (Some(var), Some(boot), Some(host)) => {
                if let Ok(r) = boot.project.resolve(host, &var)
                    && let Some(s) = r.value.scalar_text()
                {
                    push(&mut out, &s, loc, format!("vip: in fluxgate.yaml ({var})"));
                }
            }
            (None, _, _) => push(&mut out, raw, loc, "vip: in fluxgate.yaml".into()),
            _ => {}
        }
    }
    if let (Some(boot), Some(host)) = (&env.bootstrap, &primary) {
        for var in VIP_VARS
            .iter()
            .copied()
            .chain(extra_vars.iter().map(String::as_str))
        {
            if let Ok(r) = boot.project.resolve(host, var)
                && !r.opaque
                && let Some(s) = r.value.scalar_text()
            {
                let loc = r.origin.first().map(|o| o.location.clone());
                push(&mut out, &s, loc, format!("Ansible `{var}`"));
            }
        }
    }
    if let Some(talos) = &env.talos {
        for v in talos_vips(talos) {
            push(&mut out, &v.host, v.loc, v.source);
        }
    }
    for obj in env.objects() {
        for (addr, loc) in kube_vip_addresses(obj) {
            push(&mut out, &addr, Some(loc), "kube-vip manifest".into());
        }
        for (name, value) in flux_vip_variables(obj) {
            push(
                &mut out,
                value.as_str().unwrap_or_default(),
                Some(value.loc.clone()),
                format!("Flux variable `{name}`"),
            );
        }
    }
    for r in renders {
        for doc in &r.docs {
            for (addr, _) in kube_vip_addresses(doc) {
                let loc = r.line_of(&["address", "vip_address"]);
                push(&mut out, &addr, loc, "kube-vip manifest".into());
            }
        }
    }
    out
}

/// The containers of a workload (Pod, DaemonSet, Deployment, ...).
pub fn containers(obj: &Node) -> Vec<&Node> {
    let spec = match obj.str_at(&["kind"]) {
        Some("Pod") => obj.get("spec"),
        _ => obj.path(&["spec", "template", "spec"]),
    };
    let Some(spec) = spec else {
        return Vec::new();
    };
    ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.get(k).and_then(Node::as_seq))
        .flatten()
        .collect()
}

/// The value of env var `name` of a container.
pub fn env_value<'n>(container: &'n Node, name: &str) -> Option<&'n Node> {
    container
        .get("env")?
        .as_seq()?
        .iter()
        .find(|e| e.str_at(&["name"]) == Some(name))
        .and_then(|e| e.get("value"))
}

/// Whether an object is a kube-vip workload.
pub fn is_kube_vip(obj: &Node) -> bool {
    containers(obj)
        .iter()
        .any(|c| c.str_at(&["image"]).is_some_and(|i| i.contains("kube-vip")))
}

/// The control-plane addresses a kube-vip workload announces.
fn kube_vip_addresses(obj: &Node) -> Vec<(String, Location)> {
    let mut out = Vec::new();
    for c in containers(obj) {
        if !c.str_at(&["image"]).is_some_and(|i| i.contains("kube-vip")) {
            continue;
        }
        let cp = env_value(c, "cp_enable").and_then(Node::scalar_text);
        if cp.as_deref() == Some("false") {
            continue;
        }
        for name in ["address", "vip_address"] {
            if let Some(v) = env_value(c, name)
                && let Some(s) = v.scalar_text()
            {
                out.push((s, v.loc.clone()));
            }
        }
    }
    out
}

/// A bootstrap template rendered for one host of the environment.
pub struct Render {
    pub play: usize,
    /// The task's position in its play.
    pub task: usize,
    pub task_loc: Location,
    pub host: String,
    pub rendered: RenderedTemplate,
    /// Every YAML document of the rendered text.
    pub docs: Vec<Node>,
    /// The template's source text, to locate a value at the line that writes it.
    pub source: String,
}

impl Render {
    /// The first template line holding one of `keys` (as a YAML key or an env var name),
    /// with the line that carries its value when the value is on the next line.
    pub fn line_of(&self, keys: &[&str]) -> Option<Location> {
        source_line(&self.source, keys).map(|l| {
            let text = self.source.lines().nth(l as usize - 1).unwrap_or_default();
            Location::new(self.rendered.path.clone(), l, value_column(text))
        })
    }
}

/// 1-based column where the value of a template line starts: its first `{{`, else the text
/// after the first `: `, else `=`, else `--` (the line's first character when none is found).
pub fn value_column(line: &str) -> u32 {
    let at = line.find("{{").or_else(|| {
        let t = line.trim_end();
        let after = [": ", "=", "--"]
            .iter()
            .find_map(|sep| t.find(sep).map(|i| i + sep.len()))?;
        let rest = &t[after..];
        let skip = rest.len() - rest.trim_start().len();
        (after + skip < t.len()).then_some(after + skip)
    });
    at.map_or(1, |i| line[..i].chars().count() as u32 + 1)
}

/// 1-based line of the first line of `src` naming one of `keys`, moved to the `value:` line
/// that follows an env var `name:` line.
pub fn source_line(src: &str, keys: &[&str]) -> Option<u32> {
    let lines: Vec<&str> = src.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start().trim_start_matches("- ");
        let hit = keys.iter().any(|k| {
            t.starts_with(&format!("{k}:"))
                || t.starts_with(&format!("\"{k}\":"))
                || t.contains(&format!("name: {k}"))
                || t.contains(&format!("name: \"{k}\""))
                || t.contains(&format!("--{k}"))
                || t.contains(&format!("{k}="))
        });
        if !hit {
            continue;
        }
        if t.contains("name:") && !t.contains("value:") {
            for (j, next) in lines.iter().enumerate().skip(i + 1).take(2) {
                if next.trim_start().starts_with("value:") {
                    return Some(j as u32 + 1);
                }
            }
        }
        return Some(i as u32 + 1);
    }
    None
}

/// Every template task of the plays that target the environment, rendered for the first
/// server and the first agent the play targets.
pub fn bootstrap_renders(env: &Environment, topo: &Topology) -> Vec<Render> {
    let Some(boot) = &env.bootstrap else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for po in boot.project.order() {
        let server = po
            .hosts
            .iter()
            .find(|h| topo.contains(h) && !topo.is_agent(h));
        let agent = po.hosts.iter().find(|h| topo.is_agent(h));
        for (ti, task) in po.play.tasks.iter().enumerate() {
            let Some(path) = task.template.as_ref().and_then(|t| t.resolved.clone()) else {
                continue;
            };
            for host in [server, agent].into_iter().flatten() {
                if !seen.insert((po.index, ti, host.clone())) {
                    continue;
                }
                if let Some(r) = render(boot, &path, host, po.index, ti, &task.loc) {
                    out.push(r);
                }
            }
        }
    }
    out.extend(auto_deploy_renders(env, topo));
    out
}

/// Manifests that k3s deploys from its auto-deploy folder, rendered from the templates listed
/// in [`crate::templates::MANIFEST_TEMPLATES_VARS`] for the environment's first server:
/// bootstrap-installed objects (a Cilium `HelmChart`, a kube-vip DaemonSet) without a
/// `template` task of the repository's own. They count as installed by the play that installs
/// k3s on that host.
fn auto_deploy_renders(env: &Environment, topo: &Topology) -> Vec<Render> {
    let Some(boot) = &env.bootstrap else {
        return Vec::new();
    };
    let Some(server) = boot
        .hosts
        .iter()
        .find(|h| topo.contains(h) && !topo.is_agent(h))
    else {
        return Vec::new();
    };
    let order = boot.project.order();
    let plays: Vec<_> = order
        .iter()
        .filter(|po| po.hosts.contains(server))
        .collect();
    // Without a site playbook there is no order to place them in: the first play stands.
    let play = plays
        .iter()
        .find(|po| po.play.roles.iter().any(|r| r.contains("k3s")))
        .or(plays.first())
        .map_or(0, |po| po.index);
    let mut out = Vec::new();
    for var in crate::templates::MANIFEST_TEMPLATES_VARS {
        let Ok(list) = boot.project.resolve(server, var) else {
            continue;
        };
        let set_at = list
            .origin
            .first()
            .map_or_else(|| Location::file(""), |o| o.location.clone());
        for item in list.value.as_seq().unwrap_or_default() {
            let Some(name) = item.as_str() else { continue };
            let Some(path) = boot.project.find_template(name) else {
                continue;
            };
            if let Some(r) = render(boot, &path, server, play, 0, &set_at) {
                out.push(r);
            }
        }
    }
    out
}

/// A render the load made (never a new one), with its template's text.
fn render(
    boot: &Bootstrap,
    path: &str,
    host: &str,
    play: usize,
    ti: usize,
    task_loc: &Location,
) -> Option<Render> {
    let rendered = boot.template(path, host)?.as_ref().ok()?.clone();
    let source = boot
        .templates
        .source(&rendered.path)
        .unwrap_or_default()
        .to_string();
    // Located at the template lines that wrote them, by the renderer.
    let docs = rendered.docs.clone();
    Some(Render {
        play,
        task: ti,
        task_loc: task_loc.clone(),
        host: host.to_string(),
        rendered,
        docs,
        source,
    })
}

/// Post-build variables whose name says they are the VIP (`KUBE_VIP_ADDR`, `CLUSTER_VIP`) and
/// whose value is an IP address: a ConfigMap's `data` (a `substituteFrom` source) or a Flux
/// Kustomization's inline `postBuild.substitute`. Secrets are left out (their values are never
/// shown, and SOPS ones are unknown).
pub fn flux_vip_variables(obj: &Node) -> Vec<(String, Node)> {
    let map = match obj.str_at(&["kind"]) {
        Some("ConfigMap") => obj.get("data"),
        Some("Kustomization")
            if obj
                .str_at(&["apiVersion"])
                .is_some_and(|a| a.starts_with("kustomize.toolkit.fluxcd.io/")) =>
        {
            obj.path(&["spec", "postBuild", "substitute"])
        }
        _ => None,
    };
    map.and_then(Node::as_map)
        .into_iter()
        .flatten()
        .filter(|(k, v)| {
            k.split('_').any(|part| part.eq_ignore_ascii_case("vip"))
                && v.as_str()
                    .is_some_and(|s| s.trim().parse::<std::net::IpAddr>().is_ok())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Cilium values embedded in a k3s `HelmChart` (`spec.valuesContent`), parsed, with lines
/// shifted to the file that holds the HelmChart.
pub fn helmchart_values(obj: &Node) -> Option<(String, Node)> {
    if obj.str_at(&["kind"]) != Some("HelmChart") {
        return None;
    }
    let chart = obj.str_at(&["spec", "chart"])?.to_string();
    let content = obj.path(&["spec", "valuesContent"])?;
    let text = content.as_str()?;
    let stream = parse_stream(&content.loc.file, text, Schema::Yaml11);
    let mut doc = stream.docs.into_iter().next()?;
    // A block scalar (`valuesContent: |`) is located at its first content line, which is
    // line 1 of the parsed values.
    let by = if text.contains('\n') {
        content.loc.line.saturating_sub(1)
    } else {
        content.loc.line
    };
    shift_lines(&mut doc, by);
    Some((chart, doc))
}

fn shift_lines(node: &mut Node, by: u32) {
    node.loc.line += by;
    match &mut node.value {
        Value::Map(m) => m.values_mut().for_each(|v| shift_lines(v, by)),
        Value::Seq(s) => s.iter_mut().for_each(|v| shift_lines(v, by)),
        _ => {}
    }
}

/// Whether a name or label marks a CNI component.
pub fn is_cni_name(s: &str) -> bool {
    let s = s.to_ascii_lowercase();
    [
        "cilium", "calico", "flannel", "canal", "tigera", "antrea", "weave",
    ]
    .iter()
    .any(|c| s.contains(c))
}

/// Whether an object is a CNI workload.
pub fn is_cni_workload(obj: &Node) -> bool {
    let name = obj.str_at(&["metadata", "name"]).unwrap_or_default();
    let ns = obj.str_at(&["metadata", "namespace"]).unwrap_or_default();
    let images = containers(obj)
        .iter()
        .any(|c| c.str_at(&["image"]).is_some_and(is_cni_name));
    images || is_cni_name(name) || (ns == "calico-system" || ns == "tigera-operator")
}

/// Where a consumer's value was set: follows an Ansible variable's origin chain from the
/// template line that reads it. A value taken straight from a node-address variable is
/// located at the template line: that is where the wrong variable was chosen.
pub fn ansible_origin(
    project: &Project,
    host: &str,
    line_text: &str,
    template_line: &Location,
) -> (Location, Option<String>) {
    if let Some(var) = jinja_var(line_text)
        && let Ok(r) = project.resolve(host, &var)
        && let Some(first) = r.origin.first()
        && !NODE_ADDRESS_VARS.contains(&first.var_name())
    {
        return (first.location.clone(), Some(var));
    }
    (template_line.clone(), jinja_var(line_text))
}

/// The text of 1-based `line` of `src`.
pub fn line_text(src: &str, line: u32) -> &str {
    src.lines()
        .nth(line.saturating_sub(1) as usize)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_normalised() {
        assert_eq!(normalize_host("https://192.168.2.9:6443"), "192.168.2.9");
        assert_eq!(
            normalize_host("\"k8s.example.com:6443\""),
            "k8s.example.com"
        );
        assert_eq!(normalize_host("[fd00::1]:6443"), "fd00::1");
        assert_eq!(normalize_host("fd00::1"), "fd00::1");
        assert_eq!(normalize_host(""), "");
    }

    #[test]
    fn loopback() {
        assert!(is_loopback("127.0.0.1"));
        assert!(is_loopback("localhost"));
        assert!(is_loopback("::1"));
        assert!(!is_loopback("192.168.2.9"));
    }

    #[test]
    fn jinja_vars() {
        assert_eq!(
            jinja_var("k8sServiceHost: \"{{ k3s_apiserver_endpoint }}\"").as_deref(),
            Some("k3s_apiserver_endpoint")
        );
        assert_eq!(
            jinja_var("--server https://{{ api | ipwrap }}:6443").as_deref(),
            Some("api")
        );
        assert_eq!(jinja_var("x: {{ hostvars[a]['b'] }}"), None);
        assert_eq!(jinja_var("x: 1"), None);
    }

    #[test]
    fn source_lines() {
        let src = "a: 1\nenv:\n  - name: KUBERNETES_SERVICE_HOST\n    value: \"127.0.0.1\"\nk8sServiceHost: x\n";
        assert_eq!(source_line(src, &["KUBERNETES_SERVICE_HOST"]), Some(4));
        assert_eq!(source_line(src, &["k8sServiceHost"]), Some(5));
        assert_eq!(source_line(src, &["nothing"]), None);
        assert_eq!(
            value_column("    k8sServiceHost: \"{{ ansible_host }}\""),
            22
        );
        assert_eq!(value_column("          value: \"10.0.0.5\""), 18);
        assert_eq!(value_column("server: https://10.0.0.1:6443"), 9);
        assert_eq!(value_column("  - --tls-san=1.2.3.4"), 15);
        assert_eq!(value_column("tls-san:"), 1);
    }

    #[test]
    fn agent_groups() {
        assert!(is_agent_group("node"));
        assert!(is_agent_group("k3s_agents"));
        assert!(is_agent_group("workers"));
        assert!(!is_agent_group("master"));
        assert!(!is_agent_group("k3s_prod"));
    }
}
