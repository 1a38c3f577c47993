//! `ha-endpoint`: components that keep running dial an HA endpoint (SPEC §5.1).

use fluxgate_diagnostics::Annotate;
use fluxgate_diagnostics::Diagnostic;
use fluxgate_model::ansible::symbolic_var;

use super::vips;
use crate::RuleContext;
use crate::support::setting_strings;
use fluxgate_model::consumers::{Consumer, Kind, consumers};
use fluxgate_model::endpoints::{Topology, Vip, bootstrap_renders, is_loopback, topology, vips_of};

crate::declare_rule! {
    /// ## What it checks
    /// In an environment with two or more control-plane nodes, every component that keeps
    /// running after bootstrap and dials the API server dials an HA endpoint: the VIP (`vip:`
    /// in fluxgate.yaml, or found: the Ansible variables `kube_vip_address`,
    /// `apiserver_endpoint`, `k3s_registration_address`, `control_plane_endpoint`, a kube-vip
    /// manifest's `address`; on a Talos cluster its `vip.ip` and its cluster endpoint unless
    /// that is one node's address), a DNS name declared as `vip:`, or a loopback address (the
    /// node-local API proxy: k3s on 6444, Talos KubePrism on 7445). The consumers are Cilium's
    /// `k8sServiceHost` (HelmRelease effective values, k3s HelmChart `valuesContent`, the
    /// Ansible-rendered bootstrap values and `--set` flags), `KUBERNETES_SERVICE_HOST` on CNI
    /// pods, the server URL of k3s agents, and the same in Talos `inlineManifests`. On a Talos
    /// cluster the nodes and their roles come from talconfig.yaml or the machine configs, and
    /// a finding names the line that gives the node the address dialled. The cold-boot join of secondary servers is not
    /// a consumer: it must use the founder, because the VIP does not exist yet.
    ///
    /// In every environment, single-server too, the endpoint the bootstrap gives Cilium and
    /// the one Flux's HelmRelease gives it must be the same; and on a Talos cluster a Cilium
    /// that dials `localhost:<port>` needs KubePrism enabled on that port on every node (a
    /// control-plane node also answers on 6443), as the talconfig.yaml defaults for its
    /// `talosVersion` and its patches leave it per node.
    ///
    /// Settings: `agent_groups` (inventory groups of agents, besides `agent`, `node`,
    /// `worker*`), `vip_vars` (more Ansible variables that hold the VIP).
    ///
    /// ## Why it matters
    /// A CNI that dials one node's address loses its control-plane path with that node, on a
    /// cluster built to survive it (silently: the datapath runs on from cache). An empty value
    /// makes the Cilium agent fall back to the API ClusterIP, which only the agent itself can
    /// route: a rollout deadlocks. Two different endpoints in the bootstrap and in Flux mean
    /// that Flux's adoption of the CNI changes what it dials.
    ///
    /// ## Example
    /// ```yaml
    /// # clusters/prod/cluster-vars-patch.yaml: K3S_API_HOST feeds k8sServiceHost
    /// data:
    ///   K3S_API_HOST: "192.168.2.10"   # k3s-prod-1's own address; the VIP is 192.168.2.9
    /// ```
    ///
    /// ## How to fix
    /// Set the value at the line shown to the environment's VIP (or to the node-local API
    /// proxy, 127.0.0.1), in the bootstrap and in the steady state alike. Keep the join of
    /// secondary servers on the founder.
    pub static HA_ENDPOINT = {
        name: "ha-endpoint",
        severity: Error,
        scope: Environment,
        check: check,
        settings: ["agent_groups", "vip_vars"],
    }
}

/// What a consumer dials, judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Ha,
    Empty,
    /// One node of this environment.
    Node(String),
    /// An endpoint of another environment: (environment, what).
    OtherEnv(String, String),
    Unknown,
    /// Not known offline.
    Skip,
}

/// Endpoints of the other environments: (host, environment, what it is there).
pub(crate) type Others = Vec<(String, String, String)>;

pub(crate) fn other_endpoints(ctx: &RuleContext<'_>, agent_groups: &[String]) -> Others {
    let mut out = Others::new();
    let me = ctx.env.name();
    for e in ctx.envs.iter().filter(|e| e.name() != me) {
        let topo = topology(e, agent_groups);
        // A variable nobody defines is only known to equal itself inside one environment.
        for v in vips_of(e, &topo, &[], &setting_strings(ctx.settings, "vip_vars")) {
            if symbolic_var(&v.host).is_none() {
                out.push((v.host, e.name().to_string(), "the VIP".into()));
            }
        }
        for h in topo.hosts {
            if let Some(a) = h.address.filter(|a| symbolic_var(a).is_none()) {
                out.push((a, e.name().to_string(), format!("node {}", h.name)));
            }
        }
    }
    for e in ctx.config.environments.iter().filter(|e| e.name != me) {
        if let Some(v) = &e.vip
            && !v.contains("{{")
        {
            let host = fluxgate_model::endpoints::normalize_host(v);
            out.push((host, e.name.clone(), "the VIP".into()));
        }
    }
    // Hosts of a shared inventory outside this environment's group.
    if let Some(boot) = &ctx.env.bootstrap {
        for h in boot.project.hosts() {
            if boot.hosts.contains(&h) {
                continue;
            }
            if let Some(a) = fluxgate_model::endpoints::host_address(&boot.project, &h)
                && !out.iter().any(|(x, _, _)| *x == a)
            {
                out.push((a, "another environment".into(), format!("node {h}")));
            }
        }
    }
    out
}

pub(crate) fn classify(c: &Consumer, vips: &[Vip], topo: &Topology, others: &Others) -> Verdict {
    if !c.judgeable {
        return Verdict::Skip;
    }
    if c.host.is_empty() {
        return Verdict::Empty;
    }
    if is_loopback(&c.host) || vips.iter().any(|v| v.host == c.host) {
        return Verdict::Ha;
    }
    if let Some(h) = topo
        .hosts
        .iter()
        .find(|h| h.address.as_deref() == Some(c.host.as_str()) || h.name == c.host)
    {
        return Verdict::Node(h.name.clone());
    }
    if let Some((_, env, what)) = others.iter().find(|(h, _, _)| *h == c.host) {
        return Verdict::OtherEnv(env.clone(), what.clone());
    }
    // An undefined variable that is neither the VIP's nor a node's: its value is not known.
    if symbolic_var(&c.host).is_some() {
        return Verdict::Skip;
    }
    Verdict::Unknown
}

fn vip_list(vips: &[Vip]) -> String {
    if vips.is_empty() {
        "none is known: declare it as `vip:` in fluxgate.yaml".into()
    } else {
        vips.iter()
            .map(|v| v.host.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    let agent_groups = setting_strings(ctx.settings, "agent_groups");
    let topo = topology(ctx.env, &agent_groups);
    let renders = bootstrap_renders(ctx.env, &topo);
    let vips = vips(ctx, &topo, &renders);
    let all = consumers(ctx.env, &topo, &renders);
    // In an HA environment a side that dials a wrong endpoint is reported on its own; the
    // bootstrap/Flux comparison then only adds the case of two HA endpoints that differ.
    let mut wrong = Vec::new();
    // A VIP where the node count is unknown (no inventory, no `nodes:`) says the control
    // plane is HA by intent: a literal address that is not it is judged as on a known HA
    // cluster.
    let ha_by_vip = topo.control_planes == 0 && !vips.is_empty();
    if topo.control_planes >= 2 || ha_by_vip {
        let others = other_endpoints(ctx, &agent_groups);
        // A Talos VIP or endpoint from an encrypted talenv file may be the very address a
        // consumer dials: an address that is no node's is then not judged.
        let hidden_vip = ctx.env.talos.as_ref().is_some_and(|t| {
            t.vips.iter().any(|v| !v.value.known) || t.endpoints.iter().any(|e| !e.value.known)
        });
        for (i, c) in all.iter().enumerate() {
            let mut verdict = classify(c, &vips, &topo, &others);
            if hidden_vip && matches!(verdict, Verdict::Unknown | Verdict::OtherEnv(..)) {
                verdict = Verdict::Skip;
            }
            if let Some(d) = ha_finding(ctx, c, &verdict, &vips, &topo) {
                out.push(d);
                wrong.push(i);
            }
        }
    }
    parity(ctx, &all, &wrong, out);
    // On any node count: a worker reaches the API only through KubePrism.
    super::kube_prism::check(ctx, out);
}

fn ha_finding(
    ctx: &RuleContext<'_>,
    c: &Consumer,
    verdict: &Verdict,
    vips: &[Vip],
    topo: &Topology,
) -> Option<Diagnostic> {
    let n = topo.control_planes;
    let message = match verdict {
        Verdict::Ha | Verdict::Skip => return None,
        Verdict::Empty => format!(
            "{} is empty: the agent falls back to the in-cluster API ClusterIP, which only the CNI \
             itself can route, and a rollout deadlocks",
            c.what
        ),
        Verdict::Node(_) if topo.representative => format!(
            "{} dials {}, the address of the node it runs on: losing that node cuts it off the \
             API server on an HA control plane",
            c.what, c.host
        ),
        Verdict::Node(node) => format!(
            "{} dials {}, node {node}'s own address: on this {n}-server cluster, losing {node} \
             cuts it off the API server",
            c.what, c.host
        ),
        Verdict::OtherEnv(env, what) => {
            format!("{} dials {}, {what} of environment {env}", c.what, c.host)
        }
        Verdict::Unknown if n == 0 => format!(
            "{} dials {}, which is not the VIP of this environment: the environment has a VIP, \
             so its control plane is meant to be HA, and one address other than the VIP is a \
             single point of failure",
            c.what, c.host
        ),
        Verdict::Unknown => format!(
            "{} dials {}, which is not an HA endpoint of this {n}-server environment",
            c.what, c.host
        ),
    };
    let mut d = ctx.finding(message).at(c.set_at.clone());
    if let Some(at) = &c.consumed_at
        && *at != c.set_at
    {
        d = d.related(at.clone(), "consumed here");
    }
    if let Verdict::Node(node) = verdict
        && let Some(loc) = topo
            .hosts
            .iter()
            .find(|h| h.name == *node)
            .and_then(|h| h.loc.as_ref())
    {
        d = d.related(loc.clone(), format!("node {node}'s own address"));
    }
    for v in vips.iter().filter(|v| v.loc.is_some()).take(1) {
        if let Some(loc) = &v.loc {
            d = d.related(loc.clone(), format!("the VIP {} ({})", v.host, v.source));
        }
    }
    let proxy = if ctx.env.talos.is_some() {
        "Talos KubePrism on localhost:7445"
    } else {
        "a loopback API proxy (127.0.0.1)"
    };
    d = d.note(format!(
        "HA endpoints of {}: {}; or {proxy}",
        ctx.env.name(),
        vip_list(vips)
    ));
    if ctx.env.talos.is_some() {
        d = d.help(
            "dial the cluster endpoint or the Talos VIP, or KubePrism (k8sServiceHost: localhost, \
             k8sServicePort: 7445)",
        );
    } else if c.kind == Kind::AgentServer {
        d = d.help("point the agents at the VIP; only the cold-boot join of secondary servers uses the founder");
    } else {
        d = d.help("dial the environment's VIP, or the node-local API proxy on 127.0.0.1");
    }
    Some(d)
}

/// The bootstrap and Flux give Cilium the same endpoint, in every environment.
fn parity(ctx: &RuleContext<'_>, all: &[Consumer], wrong: &[usize], out: &mut Vec<Diagnostic>) {
    let pick = |kind: Kind| -> Vec<&Consumer> {
        all.iter()
            .enumerate()
            .filter(|(i, c)| c.kind == kind && c.judgeable && !wrong.contains(i))
            .map(|(_, c)| c)
            .collect()
    };
    let flux = pick(Kind::CiliumFlux);
    let boot = pick(Kind::CiliumBootstrap);
    for f in &flux {
        for b in &boot {
            if f.host == b.host {
                continue;
            }
            let shown = |c: &Consumer| {
                if c.host.is_empty() {
                    "\"\"".to_string()
                } else {
                    c.host.clone()
                }
            };
            let mut d = ctx
                .finding(format!(
                    "the bootstrap installs Cilium dialling {} but Flux's {} dials {}: adopting the \
                     release changes what the CNI dials",
                    shown(b),
                    f.what,
                    shown(f)
                ))
                .at(f.set_at.clone())
                .related(b.set_at.clone(), format!("the bootstrap sets {}", shown(b)));
            if let Some(at) = &f.consumed_at {
                d = d.related(at.clone(), "consumed here (Flux)");
            }
            if let Some(at) = &b.consumed_at {
                d = d.related(at.clone(), "consumed here (bootstrap)");
            }
            out.push(d.help("give both the same endpoint: the environment's VIP or 127.0.0.1"));
        }
    }
}
