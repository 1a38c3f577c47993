//! `bootstrap-order`: a cold bootstrap can complete in the site playbook's order (SPEC §5.3).

use fluxgate_diagnostics::Annotate;
use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_model::Environment;
use fluxgate_model::ansible::{PlayOrder, Project};

use crate::RuleContext;
use crate::rules::ha::vips;
use crate::support::setting_strings;
use fluxgate_model::consumers::{Kind, consumers};
use fluxgate_model::endpoints::{
    Render, Topology, bootstrap_renders, containers, env_value, helmchart_values, is_cni_name,
    is_cni_workload, is_kube_vip, is_loopback, topology,
};

crate::declare_rule! {
    /// ## What it checks
    /// In the site playbook's flattened order (`import_playbook` tree, plays, roles, tasks):
    /// the k3s install precedes a VIP provider that needs the cluster (kube-vip as a DaemonSet
    /// or auto-deploy manifest; a static pod is fine anywhere); the VIP provider precedes the
    /// CNI install when the CNI's bootstrap values dial the VIP; the CNI precedes Flux. When the
    /// CNI dials the VIP but the VIP's only provider is deployed by Flux, or by nothing, or is
    /// an in-cluster kube-vip that reaches the API through the Service ClusterIP on a cluster
    /// without kube-proxy, that is a cycle, and each link is named.
    ///
    /// Roles are recognised by name (kube-vip/kube_vip/kubevip/keepalived, cilium/calico/
    /// flannel, k3s*/rke2*, flux*) and by what they render or run; the settings `k3s`, `vip`,
    /// `cni` and `flux` may name more roles.
    ///
    /// A helmfile that bootstraps the environment is ordered by its releases' `needs:`: a
    /// cycle, or a need that names no release of the state, fails helmfile before it installs
    /// anything; a CNI release (by chart name) that transitively needs a release that helm
    /// waits for (`wait`) and whose pods need pod networking (anything but a CRD chart or a
    /// host-network VIP provider) is never installed. Each is reported at the `needs` line,
    /// with the chain.
    ///
    /// ## Why it matters
    /// A cold bootstrap runs once, under pressure, after a disaster. A CNI pointed at a VIP that
    /// nothing announces yet never becomes ready; Flux without pod networking never starts. The
    /// steady state hides both: on a running cluster every piece already exists.
    ///
    /// ## Example
    /// ```yaml
    /// # site.yml: Cilium dials the VIP, but kube-vip comes up after it
    /// - import_playbook: k3s.yml
    /// - import_playbook: cilium.yml
    /// - import_playbook: kube-vip.yml
    /// ```
    ///
    /// ## How to fix
    /// Reorder the imports: k3s, then the VIP provider, then the CNI, then Flux. Break a cycle
    /// by giving kube-vip `KUBERNETES_SERVICE_HOST=127.0.0.1` with hostNetwork, or by letting
    /// the CNI dial the node-local API proxy (127.0.0.1) during bootstrap.
    pub static BOOTSTRAP_ORDER = {
        name: "bootstrap-order",
        severity: Error,
        scope: Environment,
        check: check,
        settings: ["agent_groups", "cni", "flux", "k3s", "vip", "vip_vars"],
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Component {
    K3s,
    Vip,
    Cni,
    Flux,
}

impl Component {
    fn label(self) -> &'static str {
        match self {
            Component::K3s => "k3s",
            Component::Vip => "the VIP provider",
            Component::Cni => "the CNI",
            Component::Flux => "Flux",
        }
    }

    fn by_role_name(self, role: &str) -> bool {
        let r = role.to_ascii_lowercase();
        match self {
            Component::K3s => r.starts_with("k3s") || r.starts_with("rke2"),
            Component::Vip => ["kube-vip", "kube_vip", "kubevip", "keepalived"]
                .iter()
                .any(|k| r.contains(k)),
            Component::Cni => ["cilium", "calico", "flannel"]
                .iter()
                .any(|k| r.contains(k)),
            Component::Flux => r.starts_with("flux"),
        }
    }

    fn setting(self) -> &'static str {
        match self {
            Component::K3s => "k3s",
            Component::Vip => "vip",
            Component::Cni => "cni",
            Component::Flux => "flux",
        }
    }
}

/// Where a component is installed in the flattened order.
#[derive(Clone, Debug)]
struct Step {
    pos: (usize, usize),
    /// The site-level import (or the play) that brings it.
    loc: Location,
    what: String,
    /// For the VIP provider: a static pod (needs no cluster).
    static_pod: bool,
    /// For kube-vip: reaches the API through loopback, not the Service ClusterIP.
    loopback_api: bool,
}

fn import_loc(po: &PlayOrder<'_>) -> Location {
    po.play
        .imported_via
        .first()
        .cloned()
        .unwrap_or_else(|| po.play.loc.clone())
}

fn play_name(po: &PlayOrder<'_>) -> String {
    po.play.name.clone().unwrap_or_else(|| po.play.file.clone())
}

/// The first step of `comp` among the plays that target the environment.
fn find(
    comp: Component,
    project: &Project,
    topo: &Topology,
    renders: &[Render],
    extra_roles: &[String],
) -> Option<Step> {
    let mut best: Option<Step> = None;
    let mut consider = |s: Step| {
        if best.as_ref().is_none_or(|b| s.pos < b.pos) {
            best = Some(s);
        }
    };
    for po in project.order() {
        if !po.hosts.iter().any(|h| topo.contains(h)) {
            continue;
        }
        // A role recognised by name counts even when its tasks could not be read.
        if let Some(role) = po.play.roles.iter().find(|r| {
            (comp.by_role_name(r) || extra_roles.contains(r))
                && !po
                    .play
                    .tasks
                    .iter()
                    .any(|t| t.role.as_deref() == Some(r.as_str()))
        }) {
            consider(Step {
                pos: (po.index, po.play.tasks.len()),
                loc: import_loc(&po),
                what: format!("play `{}` (role {role})", play_name(&po)),
                static_pod: false,
                loopback_api: true,
            });
        }
        for (ti, task) in po.play.tasks.iter().enumerate() {
            let role = task.role.as_deref().unwrap_or_default();
            let named = !role.is_empty()
                && (comp.by_role_name(role) || extra_roles.iter().any(|r| r == role));
            let text = task_text(task);
            let runs = match comp {
                Component::K3s => {
                    text.contains("get.k3s.io")
                        || text.contains("k3s-install")
                        || text.contains("INSTALL_K3S")
                }
                Component::Vip => false,
                Component::Cni => {
                    (text.contains("helm") && text.contains("cilium"))
                        || text.contains("cilium install")
                        || text.contains("cilium upgrade")
                }
                Component::Flux => text.contains("flux bootstrap") || text.contains("flux install"),
            };
            if named || runs {
                consider(Step {
                    pos: (po.index, ti),
                    loc: import_loc(&po),
                    what: format!(
                        "play `{}` ({})",
                        play_name(&po),
                        if named {
                            format!("role {role}")
                        } else {
                            format!("task at {}", task.loc)
                        }
                    ),
                    static_pod: false,
                    loopback_api: true,
                });
                break;
            }
        }
    }
    let order = project.order();
    let mut rendered = Vec::new();
    for r in renders {
        let Some(po) = order.get(r.play) else {
            continue;
        };
        for doc in &r.docs {
            let hit = match comp {
                Component::Vip => is_kube_vip(doc),
                Component::Cni => {
                    is_cni_workload(doc)
                        || helmchart_values(doc).is_some_and(|(c, _)| is_cni_name(&c))
                        || (doc.get("k8sServiceHost").is_some() && doc.get("kind").is_none())
                }
                _ => false,
            };
            if hit {
                let loopback_api = containers(doc).iter().any(|c| {
                    env_value(c, "KUBERNETES_SERVICE_HOST")
                        .and_then(fluxgate_yaml::Node::scalar_text)
                        .is_some_and(|v| is_loopback(&v))
                });
                rendered.push(Step {
                    pos: (r.play, r.task),
                    loc: import_loc(po),
                    what: format!("play `{}` (renders {})", play_name(po), r.rendered.path),
                    static_pod: doc.str_at(&["kind"]) == Some("Pod"),
                    loopback_api,
                });
            }
        }
    }
    for s in &rendered {
        consider(s.clone());
    }
    // A role recognised by name takes what it renders from the same play.
    if let Some(b) = best.as_mut()
        && let Some(s) = rendered.iter().find(|s| s.pos.0 == b.pos.0)
    {
        b.static_pod = s.static_pod;
        b.loopback_api = s.loopback_api;
    }
    best
}

fn task_text(task: &fluxgate_model::ansible::Task) -> String {
    let mut s = String::new();
    collect(&task.args, &mut s);
    if let Some(e) = task.keywords.get("environment") {
        collect(e, &mut s);
    }
    s
}

fn collect(node: &fluxgate_yaml::Node, out: &mut String) {
    match &node.value {
        fluxgate_yaml::Value::Map(m) => m.iter().for_each(|(k, v)| {
            out.push_str(k);
            out.push('=');
            collect(v, out);
        }),
        fluxgate_yaml::Value::Seq(s) => s.iter().for_each(|v| collect(v, out)),
        _ => {
            out.push_str(&node.scalar_text().unwrap_or_default());
            out.push(' ');
        }
    }
}

/// Whether k3s runs without kube-proxy (rendered config or server arguments).
fn kube_proxy_disabled(env: &Environment, renders: &[Render], topo: &Topology) -> bool {
    let in_renders = renders.iter().any(|r| {
        r.docs.iter().any(|d| {
            d.get("disable-kube-proxy")
                .and_then(fluxgate_yaml::Node::as_bool)
                == Some(true)
        }) || r.rendered.text.contains("--disable-kube-proxy")
    });
    let in_args = env.bootstrap.as_ref().is_some_and(|b| {
        topo.primary().is_some_and(|h| {
            ["extra_server_args", "server_args", "k3s_server_args"]
                .iter()
                .any(|v| {
                    b.project
                        .resolve(h, v)
                        .ok()
                        .and_then(|r| r.value.scalar_text())
                        .is_some_and(|t| t.contains("disable-kube-proxy"))
                })
        })
    });
    in_renders || in_args
}

fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    super::helmfile_order::check(ctx, out);
    let Some(boot) = &ctx.env.bootstrap else {
        return;
    };
    let topo = topology(ctx.env, &setting_strings(ctx.settings, "agent_groups"));
    let renders = bootstrap_renders(ctx.env, &topo);
    let step = |c: Component| {
        find(
            c,
            &boot.project,
            &topo,
            &renders,
            &setting_strings(ctx.settings, c.setting()),
        )
    };
    let (k3s, vip, cni, flux) = (
        step(Component::K3s),
        step(Component::Vip),
        step(Component::Cni),
        step(Component::Flux),
    );

    if let (Some(k), Some(v)) = (&k3s, &vip)
        && !v.static_pod
        && v.pos < k.pos
    {
        out.push(misplaced(
            ctx,
            v,
            Component::Vip,
            k,
            Component::K3s,
            "kube-vip as a DaemonSet or auto-deploy manifest needs a running cluster",
        ));
    }
    if let (Some(c), Some(f)) = (&cni, &flux)
        && f.pos < c.pos
    {
        out.push(misplaced(
            ctx,
            f,
            Component::Flux,
            c,
            Component::Cni,
            "Flux's controllers need pod networking",
        ));
    }

    // Does the CNI's bootstrap configuration dial the VIP?
    let vip_list = vips(ctx, &topo, &renders);
    let dial = consumers(ctx.env, &topo, &renders).into_iter().find(|c| {
        c.bootstrap
            && matches!(c.kind, Kind::CiliumBootstrap | Kind::CniEnv)
            && vip_list.iter().any(|v| v.host == c.host)
    });
    let (Some(dial), Some(c)) = (dial, &cni) else {
        return;
    };
    let link_dial = format!("{} ({}) dials the VIP {}", c.what, dial.what, dial.host);
    match &vip {
        // A cycle whatever the order (both may be k3s auto-deploy manifests, which k3s applies
        // together): reordering cannot break it, so it is reported as the cycle.
        Some(v)
            if !v.static_pod
                && !v.loopback_api
                && kube_proxy_disabled(ctx.env, &renders, &topo) =>
        {
            let order = if v.pos > c.pos {
                " (and it comes after the CNI: no order breaks this cycle)"
            } else {
                ""
            };
            out.push(
                ctx.finding(format!(
                    "bootstrap cycle: {link_dial}; the VIP comes from {}{order}, an in-cluster \
                     kube-vip that reaches the API through the Service ClusterIP; with \
                     kube-proxy disabled only the CNI routes the ClusterIP",
                    v.what
                ))
                .at(v.loc.clone())
                .related(c.loc.clone(), "the CNI install")
                .related(dial.set_at.clone(), format!("the CNI dials {}", dial.host))
                .help("give kube-vip hostNetwork and KUBERNETES_SERVICE_HOST=127.0.0.1"),
            );
        }
        Some(v) if v.pos > c.pos => {
            let mut d = misplaced(
                ctx,
                c,
                Component::Cni,
                v,
                Component::Vip,
                "the CNI dials the VIP, which nothing announces yet",
            );
            d = d.related(dial.set_at.clone(), format!("the CNI dials {}", dial.host));
            out.push(d);
        }
        Some(_) => {}
        None => {
            let flux_vip = ctx
                .env
                .objects()
                .find(|o| is_kube_vip(o))
                .map(|o| o.loc.clone());
            let (link, related) = match &flux_vip {
                Some(loc) => (
                    "its only provider, kube-vip, is deployed by Flux, which cannot run before the CNI".to_string(),
                    Some((loc.clone(), "kube-vip, deployed by Flux")),
                ),
                None => ("nothing in the bootstrap or in Flux provides the VIP".to_string(), None),
            };
            let mut d = ctx
                .finding(format!("bootstrap cycle: {link_dial}; {link}"))
                .at(c.loc.clone())
                .related(dial.set_at.clone(), format!("the CNI dials {}", dial.host));
            if let Some((loc, msg)) = related {
                d = d.related(loc, msg);
            }
            if let Some(f) = &flux {
                d = d.related(f.loc.clone(), "Flux is installed here, after the CNI");
            }
            out.push(d.help("install the VIP provider in the bootstrap, before the CNI, or let the CNI dial 127.0.0.1 during bootstrap"));
        }
    }
}

fn misplaced(
    ctx: &RuleContext<'_>,
    at: &Step,
    what: Component,
    before: &Step,
    other: Component,
    why: &str,
) -> Diagnostic {
    ctx.finding(format!(
        "{} ({}) runs before {} ({}): {why}",
        what.label(),
        at.what,
        other.label(),
        before.what
    ))
    .at(at.loc.clone())
    .related(
        before.loc.clone(),
        format!("{} is installed here", other.label()),
    )
    .help(format!("move this import after {}", other.label()))
}
