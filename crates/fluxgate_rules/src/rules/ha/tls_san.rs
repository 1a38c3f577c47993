//! `tls-san`: the API server's certificate covers every address consumers dial (SPEC §5.2).

use fluxgate_diagnostics::Annotate;
use std::sync::LazyLock;

use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_yaml::{Node, Value};
use regex::Regex;

use super::vips;
use crate::RuleContext;
use crate::support::setting_strings;
use fluxgate_model::consumers::consumers;
use fluxgate_model::endpoints::{Render, bootstrap_renders, is_loopback, normalize_host, topology};

crate::declare_rule! {
    /// ## What it checks
    /// Every address the consumers dial — the VIP, a DNS endpoint — is among the API server's
    /// serving-certificate SANs, per environment. The SAN list is read from the Ansible
    /// variables `k3s_tls_sans`, `tls_san`, `tls_sans`, from `tls-san` in a rendered k3s
    /// config, and from `--tls-san` in server arguments. k3s adds the node's own addresses and
    /// 127.0.0.1 by itself, so those are never demanded. On a Talos cluster the SAN list is
    /// `cluster.apiServer.certSANs` (talhelper's `additionalApiServerCertSans`, the
    /// `KubeAPIServerConfig` document's `certExtraSANs`) plus the cluster endpoint's host,
    /// which Talos adds itself; a Talos VIP that is not the endpoint must be listed. No
    /// finding when no SAN list can be found, or when a SAN is not known offline (an
    /// encrypted talenv variable).
    ///
    /// ## Why it matters
    /// A client that dials the VIP verifies the certificate against the VIP: without the SAN,
    /// every TLS handshake through the HA endpoint fails, on the day a node is lost.
    ///
    /// ## Example
    /// ```yaml
    /// # group_vars/all.yml
    /// kube_vip_address: 192.168.2.9
    /// k3s_tls_sans: ["{{ k3s_api_host }}"]   # the VIP is missing
    /// ```
    ///
    /// ## How to fix
    /// Add the VIP (and any DNS endpoint) to the SAN list; derive it from the VIP variable so
    /// that both move together.
    pub static TLS_SAN = {
        name: "tls-san",
        severity: Error,
        scope: Environment,
        check: check,
        settings: ["agent_groups", "san_vars", "vip_vars"],
    }
}

/// The Ansible variables that hold a SAN list (mutation testing removes the VIP from them).
pub const SAN_VARS: &[&str] = &["k3s_tls_sans", "tls_san", "tls_sans", "k3s_tls_san"];

/// A SAN list and where it was written.
struct Sans {
    hosts: Vec<String>,
    loc: Location,
}

fn push_node(node: &Node, out: &mut Vec<String>) {
    match &node.value {
        Value::Seq(items) => items.iter().for_each(|i| push_node(i, out)),
        _ => {
            if let Some(s) = node.scalar_text() {
                out.extend(
                    s.split([',', ' ', '\n'])
                        .filter(|p| !p.is_empty())
                        .map(normalize_host),
                );
            }
        }
    }
}

fn san_lists(ctx: &RuleContext<'_>, host: Option<&str>, renders: &[Render]) -> Vec<Sans> {
    static FLAG: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"--tls-san[= ]+["']?([^\s"']+)"#).expect("static regex"));
    let mut out = Vec::new();
    if let Some(talos) = &ctx.env.talos {
        out.extend(talos_sans(talos));
    }
    let Some(boot) = &ctx.env.bootstrap else {
        return out;
    };
    let flag = &*FLAG;
    if let Some(host) = host {
        for var in SAN_VARS
            .iter()
            .map(|s| (*s).to_string())
            .chain(setting_strings(ctx.settings, "san_vars"))
        {
            if let Ok(r) = boot.project.resolve(host, &var) {
                let mut hosts = Vec::new();
                push_node(&r.value, &mut hosts);
                if let Some(o) = r.origin.first() {
                    out.push(Sans {
                        hosts,
                        loc: o.location.clone(),
                    });
                }
            }
        }
        for var in ["extra_server_args", "server_args", "k3s_server_args"] {
            if let Ok(r) = boot.project.resolve(host, var)
                && let Some(text) = r.value.scalar_text()
            {
                let hosts: Vec<String> = flag
                    .captures_iter(&text)
                    .map(|c| normalize_host(&c[1]))
                    .collect();
                if let (false, Some(o)) = (hosts.is_empty(), r.origin.first()) {
                    out.push(Sans {
                        hosts,
                        loc: o.location.clone(),
                    });
                }
            }
        }
    }
    for r in renders.iter().filter(|r| Some(r.host.as_str()) == host) {
        for doc in &r.docs {
            if let Some(list) = doc.get("tls-san") {
                let mut hosts = Vec::new();
                push_node(list, &mut hosts);
                let loc = r.line_of(&["tls-san"]).unwrap_or_else(|| list.loc.clone());
                out.push(Sans { hosts, loc });
            }
        }
        let hosts: Vec<String> = flag
            .captures_iter(&r.rendered.text)
            .map(|c| normalize_host(&c[1]))
            .collect();
        if !hosts.is_empty() {
            let loc = r
                .line_of(&["tls-san"])
                .unwrap_or_else(|| r.task_loc.clone());
            out.push(Sans { hosts, loc });
        }
    }
    out
}

/// The API server's SANs on a Talos cluster: the extra certSANs and the cluster endpoint's
/// host, which Talos always adds (with `localhost`, 127.0.0.1, the node's addresses and
/// hostname: the rule never demands those). `None` hosts when a SAN is not known offline
/// (an encrypted variable): then nothing can be said to be missing.
fn talos_sans(talos: &fluxgate_talos::Cluster) -> Option<Sans> {
    let api: Vec<&fluxgate_talos::Fact<fluxgate_talos::Val>> = talos
        .cert_sans
        .iter()
        .filter(|f| f.scope != fluxgate_talos::Scope::Worker)
        .collect();
    let endpoint = talos.endpoints.last();
    if api.iter().any(|f| !f.value.known) || endpoint.is_some_and(|e| !e.value.known) {
        return None;
    }
    let mut hosts: Vec<String> = api.iter().map(|f| normalize_host(&f.value.text)).collect();
    hosts.extend(endpoint.map(|e| normalize_host(&e.value.text)));
    let loc = api
        .first()
        .map(|f| f.loc.clone())
        .or_else(|| endpoint.map(|e| e.loc.clone()))
        .unwrap_or_else(|| Location::file(talos.source.as_str()));
    Some(Sans { hosts, loc })
}

fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    let topo = topology(ctx.env, &setting_strings(ctx.settings, "agent_groups"));
    let renders = bootstrap_renders(ctx.env, &topo);
    let primary = topo.primary().map(str::to_string);
    let lists = san_lists(ctx, primary.as_deref(), &renders);
    if lists.is_empty() {
        return;
    }
    let node_addrs: Vec<&str> = topo
        .hosts
        .iter()
        .filter_map(|h| h.address.as_deref())
        .collect();
    let mut dialled: Vec<(String, Option<Location>, String)> = vips(ctx, &topo, &renders)
        .into_iter()
        .map(|v| (v.host, v.loc, v.source))
        .collect();
    for c in consumers(ctx.env, &topo, &renders) {
        // A DNS endpoint consumers dial: a name, not an address.
        if c.judgeable
            && !c.host.is_empty()
            && c.host.parse::<std::net::IpAddr>().is_err()
            && !is_loopback(&c.host)
        {
            dialled.push((c.host.clone(), Some(c.set_at.clone()), c.what.clone()));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (host, loc, source) in dialled {
        if !seen.insert(host.clone())
            || is_loopback(&host)
            || node_addrs.contains(&host.as_str())
            || topo.hosts.iter().any(|h| h.name == host)
            || lists.iter().any(|l| l.hosts.contains(&host))
        {
            continue;
        }
        let first = &lists[0];
        let mut d = ctx
            .finding(format!(
                "{host} ({source}) is not in the API server's certificate SANs: TLS through it \
                 fails verification"
            ))
            .at(first.loc.clone());
        if let Some(l) = loc {
            d = d.related(l, format!("{host} is dialled as the HA endpoint"));
        }
        for l in &lists[1..] {
            d = d.related(l.loc.clone(), "another SAN list");
        }
        out.push(d.help(format!("add {host} to the SAN list")));
    }
}
