//! `address-conflict`: no address of an environment has two claimants (SPEC §5.9).

use fluxgate_diagnostics::Annotate;
use std::collections::HashMap;
use std::net::IpAddr;

use fluxgate_diagnostics::Diagnostic;

use crate::RuleContext;
use crate::support::setting_strings;
use fluxgate_model::claims::{Claim, Kind, claims};
use fluxgate_model::endpoints::topology;

crate::declare_rule! {
    /// ## What it checks
    /// Per environment, every address the platform claims has one claimant. The claimants are
    /// the VIP (`vip:` in fluxgate.yaml, the Ansible variables `ha-endpoint` reads, a kube-vip
    /// manifest's `address`, a Flux post-build variable whose name says VIP such as
    /// `KUBE_VIP_ADDR`, a Talos `vip.ip`), each node's own address (`k3s_node_ip`, else
    /// `ansible_host`; on a Talos cluster talconfig's `ipAddress` and the interface
    /// `addresses`), and
    /// every LoadBalancer Service's address (`spec.loadBalancerIP` and the annotations
    /// `io.cilium/lb-ipam-ips`, `metallb.universe.tf/loadBalancerIPs`,
    /// `kube-vip.io/loadbalancerIPs`, in Service objects and in HelmRelease values). The
    /// pools an LB IPAM hands out (CiliumLoadBalancerIPPool `blocks`/`cidrs`, MetalLB
    /// IPAddressPool `addresses`, the `cidr-*`/`range-*` keys of kube-vip's `kubevip`
    /// ConfigMap) must not contain the VIP or a node's address.
    ///
    /// An Ansible endpoint variable whose name does not say VIP (`apiserver_endpoint`,
    /// `k3s_registration_address`, `control_plane_endpoint`) and that names a node is that
    /// node's address, not a second claimant: a single-server cluster registers with its
    /// server (whether an HA cluster should is `ha-endpoint`'s question).
    ///
    /// Services that share an address on purpose, with equal `lbipam.cilium.io/sharing-key`
    /// or `metallb.universe.tf/allow-shared-ip` annotations, are one claimant. Addresses that
    /// are unknown offline (substituted from a SOPS-encrypted Secret) or not IPs (a DNS name,
    /// `${VAR}` left as text) are skipped. IPv4 and IPv6 alike.
    ///
    /// Settings: `agent_groups` and `vip_vars`, as for `ha-endpoint`.
    ///
    /// ## Why it matters
    /// Two hosts answering ARP or BGP for one address split its traffic at random: the API
    /// server behind the VIP becomes unreachable from half the network, or a Service answers
    /// for a node. An LB IPAM hands out any free address of its pool, and it does not know
    /// that kube-vip holds the VIP: the next LoadBalancer Service takes it, and the control
    /// plane drops off the network at an unrelated deploy.
    ///
    /// ## Example
    /// ```yaml
    /// # the VIP is 192.168.2.9 (kube_vip_address)
    /// apiVersion: cilium.io/v2alpha1
    /// kind: CiliumLoadBalancerIPPool
    /// metadata: {name: lb-pool}
    /// spec:
    ///   blocks:
    ///     - cidr: 192.168.2.0/28   # hands out .0-.15: the VIP and the nodes .10-.12
    /// ```
    ///
    /// ## How to fix
    /// Give each claimant its own address: carve the VIP and the node addresses out of the
    /// pools (a range that starts past them), pick a free VIP, and give each Service its own
    /// address, or let Services share one on purpose with equal sharing annotations.
    pub static ADDRESS_CONFLICT = {
        name: "address-conflict",
        severity: Error,
        scope: Environment,
        check: check,
        settings: ["agent_groups", "vip_vars"],
    }
}

/// Whether the later point claim `b` collides with the earlier `a`.
fn collides(a: &Claim, b: &Claim) -> bool {
    a.first == b.first
        && a.who != b.who
        // A Flux variable that names a VIP and that a Service reads names that Service's
        // address: one line, one claimant.
        && !(a.loc == b.loc && (is_vip(a) || is_vip(b)))
        // The VIP found in several places is one claimant.
        && !(is_vip(a) && is_vip(b))
        && !(a.kind == Kind::Node && b.kind == Kind::Endpoint)
        && !(a.share.is_some() && a.share == b.share)
}

fn is_vip(c: &Claim) -> bool {
    matches!(c.kind, Kind::Vip | Kind::Endpoint)
}

fn help(a: &Claim, b: &Claim) -> &'static str {
    match (a.kind, b.kind) {
        (Kind::Node, Kind::Vip) => "the VIP must be an address no node has: pick a free one",
        (Kind::Node, Kind::Node) => "each node needs its own address",
        (Kind::Service, Kind::Service) => {
            "give each Service its own address, or let them share it on purpose with equal \
             `lbipam.cilium.io/sharing-key` (Cilium) or `metallb.universe.tf/allow-shared-ip` \
             (MetalLB) annotations"
        }
        _ => "a LoadBalancer Service must not take the VIP or a node's address: pick a free one",
    }
}

fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    let topo = topology(ctx.env, &setting_strings(ctx.settings, "agent_groups"));
    let mut all = claims(ctx.env, &topo, &setting_strings(ctx.settings, "vip_vars"));
    all.sort_by(|a, b| {
        (a.kind, &a.loc.file, a.loc.line, a.loc.column).cmp(&(
            b.kind,
            &b.loc.file,
            b.loc.line,
            b.loc.column,
        ))
    });
    let (pools, points): (Vec<Claim>, Vec<Claim>) =
        all.into_iter().partition(|c| c.kind == Kind::Pool);
    // Only claims of the same address can collide: each claim is compared with the earlier
    // claims of its address (in order), not with every earlier claim (quadratic when a
    // platform repeats its addresses across many apps).
    let mut earlier: HashMap<IpAddr, Vec<&Claim>> = HashMap::new();
    for b in &points {
        let same = earlier.entry(b.first).or_default();
        let found = same.iter().copied().find(|a| collides(a, b));
        same.push(b);
        let Some(a) = found else {
            continue;
        };
        let ip = b.first;
        out.push(
            ctx.finding(format!(
                "{} claims {ip}, which {} already claims",
                b.who, a.who
            ))
            .at(b.loc.clone())
            .related(a.loc.clone(), format!("{} claims {ip} here", a.who))
            .help(help(a, b)),
        );
    }
    // One pool overlapping several claimed addresses (eight node addresses) is one defect:
    // one finding that lists them, each claim a related location.
    for p in &pools {
        let inside: Vec<&Claim> = points
            .iter()
            .filter(|c| c.kind != Kind::Service && p.contains(c.first))
            .filter(|c| {
                c.kind != Kind::Endpoint
                    || !points
                        .iter()
                        .any(|n| n.kind == Kind::Node && n.first == c.first)
            })
            .collect();
        let Some(first) = inside.first() else {
            continue;
        };
        let message = if let [c] = inside.as_slice() {
            format!(
                "{} hands out {}, which includes {}, claimed by {}: the next LoadBalancer \
                 Service can take it",
                p.who, p.written, c.first, c.who
            )
        } else {
            let listed: Vec<String> = inside
                .iter()
                .map(|c| format!("{} ({})", c.first, c.who))
                .collect();
            format!(
                "{} hands out {}, which includes {} claimed addresses: {}; the next \
                 LoadBalancer Services can take them",
                p.who,
                p.written,
                inside.len(),
                listed.join(", ")
            )
        };
        let help = if inside.len() == 1 {
            format!(
                "keep {} out of the pool: shrink the range or start it past {}",
                first.first, first.first
            )
        } else {
            "keep the claimed addresses out of the pool: shrink the range or move it past them"
                .to_string()
        };
        let mut d = ctx.finding(message).at(p.loc.clone());
        for c in &inside {
            d = d.related(c.loc.clone(), format!("{} claims {} here", c.who, c.first));
        }
        out.push(d.help(help));
    }
}
