//! `parity`: configured groups of sources must agree per environment (SPEC §5.5).

use fluxgate_diagnostics::Annotate;
use std::collections::BTreeSet;

use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_model::config::{ParityGroup, ParityKeys, ParitySource};
use fluxgate_model::parity::{KeyPath, Loaded, SourceError, at_path, dotted, leaves};
use fluxgate_yaml::Node;

use crate::RuleContext;

crate::declare_rule! {
    /// ## What it checks
    /// Each group of `parity:` in fluxgate.yaml, in every environment: the sources —
    /// `helmrelease: NS/NAME` (its effective values in the environment), `template: PATH`
    /// (an Ansible template rendered with the variables of `host:`, `primary` meaning the
    /// environment's first host) and `file: PATH` (a plain YAML mirror; when it contains
    /// `${VAR}` it is read with the environment's Flux post-build variables, those of the
    /// Kustomization that renders the group's HelmRelease) — must hold equal values at the
    /// compared keys. `keys: tagged` compares every key marked by a `# [parity]` comment on
    /// its line or on the comment lines right above it, in any source (a tag on a mapping
    /// covers its subtree); `keys: [a.b, c]` lists dotted paths. Values compare with their
    /// types (`"6443"` is not `6443`). When the HelmRelease's chart is in the chart cache, a
    /// key a source leaves unset compares as the chart's default. Sources that do not exist
    /// in an environment (no such release, no Ansible bootstrap) are left out there, and
    /// values derived from vault-encrypted variables are never compared.
    ///
    /// Without any configured group, a built-in one applies wherever the bootstrap installs a
    /// chart (a k3s `HelmChart` from a template task or from the auto-deploy templates of
    /// `k3s_server_manifests_templates`) that a Flux HelmRelease of the same chart adopts: the
    /// chart version, and for
    /// - `cilium`: k8sServicePort, kubeProxyReplacement, routingMode, tunnelProtocol, tunnel,
    ///   ipam.mode, cluster.name, cluster.id, bpf.masquerade, enableIPv4Masquerade,
    ///   autoDirectNodeRoutes, ipv4NativeRoutingCIDR, devices (k8sServiceHost is
    ///   `ha-endpoint`'s);
    /// - `tigera-operator` (Calico): installation.kubernetesProvider, installation.cni.type,
    ///   installation.calicoNetwork.bgp, installation.calicoNetwork.ipPools;
    /// - `kube-vip`: config.address, env.vip_interface, env.cp_enable, env.svc_enable;
    /// - `coredns`: service.clusterIP, servers.
    ///
    /// A key set on one side only is not compared (its default is unknown offline).
    ///
    /// ## Why it matters
    /// The bootstrap installs a component (the CNI) before Flux can run, and Flux then adopts
    /// it. If the two disagree, the adoption silently changes the running component on the
    /// first reconcile — a different API endpoint, IPAM mode or rollout strategy — on every
    /// node at once, at a time nobody chose.
    ///
    /// ## Example
    /// ```yaml
    /// # infra/ansible/roles/cilium/templates/cilium-values.yaml.j2
    /// # [parity]
    /// k8sServiceHost: "{{ k3s_apiserver_endpoint }}"    # the VIP
    /// # platform/cilium/helmrelease.yaml
    /// values:
    ///   k8sServiceHost: 192.168.2.10                      # [parity] one node's IP
    /// ```
    ///
    /// ## How to fix
    /// Make the sources agree at the place shown as where the value was set (an overlay
    /// patch, a post-build variable, an Ansible variable), usually by deriving both from the
    /// same variable. Change all sources in the same commit.
    pub static PARITY = {
        name: "parity",
        severity: Error,
        scope: Environment,
        check: check,
    }
}

fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    if ctx.config.parity.is_empty() {
        super::builtin::check(ctx, out);
    }
    for (group, sources) in ctx.config.parity.iter().zip(&ctx.env.parity) {
        check_group(ctx, group, sources, out);
    }
}

/// A value as a source holds it (or the chart default standing in for it).
struct Held<'a> {
    source: &'a Loaded,
    value: Option<Node>,
    chart_default: bool,
}

fn check_group(
    ctx: &RuleContext<'_>,
    group: &ParityGroup,
    sources: &[Result<Option<Loaded>, SourceError>],
    out: &mut Vec<Diagnostic>,
) {
    let env = ctx.env;
    let mut loaded = Vec::new();
    for s in sources {
        match s {
            Ok(Some(l)) => loaded.push(l),
            Ok(None) => {}
            Err(SourceError::Render(p)) => {
                out.push(crate::problems::finding(p.as_ref()).in_env(env.name()));
            }
            Err(SourceError::Unreadable(d)) => out.push((**d).clone().in_env(env.name())),
        }
    }
    if loaded.len() < 2 {
        return;
    }
    let defaults = chart_defaults(ctx, group);

    let prefixes: Vec<KeyPath> = match &group.keys {
        ParityKeys::Tagged => {
            let mut all: Vec<KeyPath> = loaded.iter().flat_map(|l| l.tagged.clone()).collect();
            all.sort();
            all.dedup();
            all
        }
        ParityKeys::Paths(paths) => paths
            .iter()
            .map(|p| p.split('.').map(str::to_string).collect())
            .collect(),
    };
    let mut keys = BTreeSet::new();
    for p in &prefixes {
        for l in &loaded {
            leaves(&l.tree, p, &mut keys);
        }
        if let Some(d) = &defaults {
            leaves(d, p, &mut keys);
        }
    }

    for key in &keys {
        let held: Vec<Held<'_>> = loaded
            .iter()
            .filter(|l| !l.opaque)
            .map(|l| match at_path(&l.tree, key) {
                Some(v) => Held {
                    source: l,
                    value: Some(v.clone()),
                    chart_default: false,
                },
                None => Held {
                    source: l,
                    value: defaults.as_ref().and_then(|d| at_path(d, key)).cloned(),
                    chart_default: true,
                },
            })
            .collect();
        if held.len() < 2 || held.iter().all(|h| h.value.is_none()) {
            continue;
        }
        if held.iter().all(|h| h.value == held[0].value) {
            continue;
        }
        out.push(finding(ctx, group, key, &held));
    }
}

fn finding(
    ctx: &RuleContext<'_>,
    group: &ParityGroup,
    key: &KeyPath,
    held: &[Held<'_>],
) -> Diagnostic {
    // The odd one out: the first source whose value is not the most common one (on a tie,
    // the first source's value is taken as the reference).
    let mut counts: Vec<(Option<&Node>, usize)> = Vec::new();
    for h in held {
        match counts.iter_mut().find(|(v, _)| *v == h.value.as_ref()) {
            Some((_, n)) => *n += 1,
            None => counts.push((h.value.as_ref(), 1)),
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let reference = counts
        .iter()
        .find(|(_, n)| *n == best)
        .and_then(|(v, _)| *v)
        .cloned();
    let odd = held.iter().position(|h| h.value != reference).unwrap_or(0);

    let describe = |h: &Held<'_>| {
        let v = h.value.as_ref().map_or_else(|| "unset".to_string(), show);
        if h.chart_default && h.value.is_some() {
            format!("{} has {v} (chart default)", h.source.label)
        } else {
            format!("{} has {v}", h.source.label)
        }
    };
    let parts: Vec<String> = held.iter().map(describe).collect();
    let place = |h: &Held<'_>| -> (Location, Option<Location>) {
        match &h.value {
            Some(v) if !h.chart_default => h.source.set_at(ctx.env, key, v),
            Some(v) => (v.loc.clone(), None),
            None => (h.source.tree.loc.clone(), None),
        }
    };
    let (primary, consumed) = place(&held[odd]);
    let mut d = ctx
        .finding(format!(
            "parity group `{}`: `{}` differs: {}",
            group.name,
            dotted(key),
            parts.join(", ")
        ))
        .at(primary);
    if let Some(c) = consumed {
        let label = if held[odd].source.label.starts_with("helmrelease") {
            "the chart default it leaves in place".to_string()
        } else {
            format!("{} uses it here", held[odd].source.label)
        };
        d = d.related(c, label);
    }
    for (i, h) in held.iter().enumerate() {
        if i == odd {
            continue;
        }
        let (at, consumed) = place(h);
        d = d.related(consumed.unwrap_or(at), describe(h));
    }
    d.requirements.extend(group.requirements.iter().cloned());
    d.help("make the sources agree, ideally by deriving them from one variable")
}

/// A value as the message shows it: JSON, so that types are visible (`"6443"` vs `6443`).
pub(super) fn show(n: &Node) -> String {
    let s = n.to_json().to_string();
    if s.len() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}

/// The default values of the group's HelmRelease chart, when the chart is in the cache.
fn chart_defaults<'e>(ctx: &RuleContext<'e>, group: &ParityGroup) -> Option<&'e Node> {
    group.sources.iter().find_map(|s| {
        let ParitySource::HelmRelease { release, .. } = s else {
            return None;
        };
        ctx.env.releases.get(release)?.chart_defaults.as_deref()
    })
}
