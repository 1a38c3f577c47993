//! The Talos half of `ha-endpoint`: a Cilium that dials the node-local API proxy
//! (`localhost:7445`) needs KubePrism listening there on every node it runs on. Talos
//! generates KubePrism enabled on port 7445 from v1.6; a patch may disable it or move it,
//! per role or per node. On a control-plane node the API server itself answers on
//! `localhost:6443`; a worker has only KubePrism.

use fluxgate_diagnostics::{Annotate, Diagnostic, Location};
use fluxgate_model::endpoints::{is_loopback, normalize_host};
use fluxgate_talos::{Cluster, TalosNode};
use fluxgate_yaml::Node;

use crate::RuleContext;

/// The API server's own port on a control-plane node.
const API_SERVER_PORT: u16 = 6443;

fn port_of(v: &Node) -> Option<u16> {
    match v.as_i64() {
        Some(p) => u16::try_from(p).ok(),
        None => v.as_str()?.trim().parse().ok(),
    }
}

/// Why nothing listens on `localhost:port` on `node`, with the line that decides it.
fn gap(talos: &Cluster, node: &TalosNode, port: u16) -> Option<(String, Location)> {
    if node.control_plane && port == API_SERVER_PORT {
        return None;
    }
    let kp = talos.kube_prism_on(node);
    match kp {
        Some(f) if f.value.enabled && f.value.port == port => None,
        Some(f) if f.value.enabled => Some((
            format!("KubePrism listens on {}", f.value.port),
            f.loc.clone(),
        )),
        Some(f) => Some(("KubePrism is disabled".into(), f.loc.clone())),
        // Nothing enables it: the talosVersion (before v1.6) is what decides.
        None => Some((
            "KubePrism is not enabled (Talos before v1.6 does not enable it by default)".into(),
            talos
                .talos_version
                .as_ref()
                .map_or_else(|| node.loc.clone(), |f| f.loc.clone()),
        )),
    }
}

/// Findings for the Cilium releases of a Talos environment that dial a loopback address.
pub(crate) fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(talos) = &ctx.env.talos else {
        return;
    };
    if talos.nodes.is_empty() {
        return;
    }
    for rel in ctx.env.releases.values() {
        let chart = rel.values.chart.as_ref().map(|c| c.name.as_str());
        if !chart.is_some_and(|c| c.contains("cilium")) {
            continue;
        }
        let host = rel
            .values
            .tree
            .get("k8sServiceHost")
            .and_then(Node::scalar_text)
            .map(|h| normalize_host(&h));
        if !host.as_deref().is_some_and(is_loopback) {
            continue;
        }
        let Some(pv) = rel.values.tree.get("k8sServicePort") else {
            continue;
        };
        let Some(port) = port_of(pv) else {
            continue;
        };
        let set_at = rel
            .values
            .origins
            .get("k8sServicePort")
            .and_then(|o| o.first())
            .map_or_else(|| pv.loc.clone(), |o| o.location.clone());
        let gaps: Vec<(&TalosNode, (String, Location))> = talos
            .nodes
            .iter()
            .filter_map(|n| gap(talos, n, port).map(|g| (n, g)))
            .collect();
        let Some((first, (why, at))) = gaps.first() else {
            continue;
        };
        let names: Vec<&str> = gaps.iter().map(|(n, _)| n.hostname.as_str()).collect();
        let mut d = ctx
            .finding(format!(
                "Cilium k8sServiceHost (HelmRelease {}) dials localhost:{port}, but on {} of the \
                 {} Talos nodes ({}) nothing listens there: on {}, {why}",
                rel.id,
                gaps.len(),
                talos.nodes.len(),
                names.join(", "),
                first.hostname,
            ))
            .at(set_at.clone())
            .related(
                at.clone(),
                format!("decides KubePrism on {}", first.hostname),
            );
        if rel.object.loc != set_at {
            d = d.related(rel.object.loc.clone(), "consumed here");
        }
        out.push(d.help(format!(
            "enable KubePrism on every node (machine.features.kubePrism: {{enabled: true, port: \
             {port}}}), or dial the cluster endpoint"
        )));
    }
}
