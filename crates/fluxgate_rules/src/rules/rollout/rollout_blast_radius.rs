//! `rollout-blast-radius`: a critical DaemonSet may replace at most a minority of the nodes at
//! once (SPEC §5.4).

use fluxgate_diagnostics::Annotate;
use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_model::Release;
use fluxgate_yaml::{Node, Value};

use crate::support::setting_strings;
use crate::{RuleContext, Severity};

/// The environment's node count and where it came from, as this rule counts them (the HTML
/// report shows the same figures).
pub use crate::support::node_count;

crate::declare_rule! {
    /// ## What it checks
    /// A critical DaemonSet may replace at most max(1, floor((N-1)/2)) of the environment's N
    /// nodes at once. Critical: the CNI agent (cilium, calico-node, kube-flannel), kube-vip,
    /// storage node agents (longhorn-manager), and the DaemonSet names listed in
    /// `rules.rollout-blast-radius.settings.daemonsets`. N is the number of hosts of the
    /// environment's Ansible group, else its Talos nodes, else `nodes:` in fluxgate.yaml;
    /// without any the rule does not run. `updateStrategy.rollingUpdate.maxUnavailable` is read from rendered
    /// DaemonSets, DaemonSets in the Ansible bootstrap's templates (rendered for the first
    /// host of the environment the play targets), and the effective values of Cilium
    /// HelmReleases, chart defaults included: a release that leaves the value unset gets the
    /// chart's default (2 for Cilium). Percentages round up, as the DaemonSet controller
    /// rounds them. When the chart is not in the chart cache and the release leaves the value
    /// unset, a warning says the value is unknown, unless Cilium's documented default of 2
    /// is within the limit (five nodes or more). On a Talos cluster N is the number of
    /// nodes of its talconfig.yaml or machine configs (control plane and workers).
    ///
    /// ## Why it matters
    /// A DaemonSet rollout replaces up to maxUnavailable agents before it waits for one to
    /// become ready. A bad render of the CNI agent (an empty `k8sServiceHost` after a failed
    /// substitution) with Cilium's default of 2 took two of three nodes' networking down at
    /// once: the majority of the cluster, etcd quorum with it. At 1 the rollout stops on the
    /// first agent that does not come up.
    ///
    /// ## Example
    /// ```yaml
    /// # 3 nodes: at most 1 at a time
    /// kind: HelmRelease
    /// spec:
    ///   chart: {spec: {chart: cilium, version: 1.16.5}}
    ///   values:
    ///     kubeProxyReplacement: true     # updateStrategy unset: the chart's 2 applies
    /// ```
    ///
    /// ## How to fix
    /// Set `updateStrategy.rollingUpdate.maxUnavailable` explicitly, at most the limit shown
    /// (1 on three nodes), in the HelmRelease values or the DaemonSet. Put the chart into the
    /// `charts:` cache so that its defaults are known.
    pub static ROLLOUT_BLAST_RADIUS = {
        name: "rollout-blast-radius",
        severity: Error,
        scope: Environment,
        check: check,
        settings: ["daemonsets"],
    }
}

const VALUES_PATH: &str = "updateStrategy.rollingUpdate.maxUnavailable";

/// Whether the DaemonSet `name` is critical under the rule's `settings` (the built-in names
/// and `settings.daemonsets`).
#[must_use]
pub fn is_critical_daemonset(name: &str, settings: &fluxgate_model::config::RuleConfig) -> bool {
    is_critical(name, &setting_strings(settings, "daemonsets"))
}

/// Names of DaemonSets that every node's networking, API endpoint or storage depends on.
fn is_critical(name: &str, extra: &[String]) -> bool {
    matches!(
        name,
        "cilium" | "calico-node" | "kube-flannel" | "kube-flannel-ds" | "longhorn-manager"
    ) || name.contains("kube-vip")
        || extra.iter().any(|e| e == name)
}

/// max(1, floor((N-1)/2)).
#[must_use]
pub fn limit(nodes: usize) -> usize {
    (nodes.saturating_sub(1) / 2).max(1)
}

/// How many nodes a maxUnavailable value lets go at once on `nodes` nodes (percentages round
/// up); `None` when it is not a number or percentage.
#[must_use]
pub fn nodes_at_once(v: &Node, nodes: usize) -> Option<usize> {
    match &v.value {
        Value::Int(i) => usize::try_from(*i).ok(),
        Value::String(s) => {
            let s = s.trim();
            if let Some(p) = s.strip_suffix('%') {
                let p: usize = p.trim().parse().ok()?;
                Some((nodes * p).div_ceil(100))
            } else {
                s.parse().ok()
            }
        }
        _ => None,
    }
}

fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some((n, why)) = node_count(ctx.env) else {
        return;
    };
    let max = limit(n);
    let extra = setting_strings(ctx.settings, "daemonsets");
    let judge =
        |value: &Node, what: &str, related: Vec<(Location, String)>| -> Option<Diagnostic> {
            let at_once = nodes_at_once(value, n)?;
            if at_once.min(n) <= max {
                return None;
            }
            let shown = value.scalar_text().unwrap_or_default();
            let mut d = ctx
                .finding(format!(
                    "{what} rolls out maxUnavailable {shown} = {at_once} of {n} nodes at once; at \
                 most {max} may be replaced at a time ({n} nodes from {why})"
                ))
                .at(value.loc.clone())
                .help(format!(
                    "set updateStrategy.rollingUpdate.maxUnavailable to {max} or less"
                ));
            for (loc, label) in related {
                d = d.related(loc, label);
            }
            Some(d)
        };

    for obj in ctx.env.tree.objects() {
        daemonset(obj, &extra, None, &judge, out);
    }
    if let Some(b) = &ctx.env.bootstrap {
        for play in b.project.order() {
            let Some(host) = b.hosts.iter().find(|h| play.hosts.contains(h)) else {
                continue;
            };
            for task in &play.play.tasks {
                let Some(path) = task.template.as_ref().and_then(|t| t.resolved.as_deref()) else {
                    continue;
                };
                let Some(Ok(t)) = b.template(path, host) else {
                    continue;
                };
                for doc in &t.docs {
                    daemonset(doc, &extra, None, &judge, out);
                }
            }
        }
    }
    for release in ctx.env.releases.values() {
        match &release.installed {
            // What the chart installs is the truth: its DaemonSets as rendered.
            Some(installed) if !installed.objects.is_empty() => {
                let owner = Owner {
                    release,
                    chart: &installed.chart,
                };
                for obj in &installed.objects {
                    daemonset(obj, &extra, Some(&owner), &judge, out);
                }
            }
            _ => cilium_release(ctx, release, &judge, out),
        }
    }
}

type Judge<'a> = dyn Fn(&Node, &str, Vec<(Location, String)>) -> Option<Diagnostic> + 'a;

/// The release whose chart installed a DaemonSet.
struct Owner<'a> {
    release: &'a Release,
    /// The chart's place in the cache (`charts/cilium-1.17.18.tgz`).
    chart: &'a str,
}

fn daemonset(
    obj: &Node,
    extra: &[String],
    owner: Option<&Owner<'_>>,
    judge: &Judge<'_>,
    out: &mut Vec<Diagnostic>,
) {
    if obj.str_at(&["kind"]) != Some("DaemonSet") {
        return;
    }
    let name = obj.str_at(&["metadata", "name"]).unwrap_or_default();
    if !is_critical(name, extra) {
        return;
    }
    let strategy = obj.path(&["spec", "updateStrategy"]);
    if strategy.and_then(|s| s.str_at(&["type"])) == Some("OnDelete") {
        return;
    }
    // Unset: the DaemonSet default, 1.
    let Some(v) = strategy.and_then(|s| s.path(&["rollingUpdate", "maxUnavailable"])) else {
        return;
    };
    let ns = obj.str_at(&["metadata", "namespace"]).unwrap_or("default");
    let what = format!("DaemonSet {ns}/{name}");
    let Some(owner) = owner else {
        let related = vec![(obj.loc.clone(), what.clone())];
        out.extend(judge(v, &what, related));
        return;
    };
    let release = owner.release;
    let what = format!("{what} of HelmRelease {}", release.id);
    if v.loc.file.starts_with(owner.chart) {
        // The chart wrote it (a default in its values.yaml, a literal in a template): the fix
        // goes into the release's values, so that is the finding's place.
        let mut at_release = v.clone();
        at_release.loc = release
            .object
            .path(&["spec", "values"])
            .map_or_else(|| release.object.loc.clone(), |n| n.loc.clone());
        let related = vec![(
            v.loc.clone(),
            format!("set by the chart: {}", v.scalar_text().unwrap_or_default()),
        )];
        out.extend(judge(
            &at_release,
            &format!("{what} (value unset: the chart's applies)"),
            related,
        ));
    } else {
        let related = vec![(
            release.object.loc.clone(),
            format!("HelmRelease {}", release.id),
        )];
        out.extend(judge(v, &what, related));
    }
}

fn cilium_release(
    ctx: &RuleContext<'_>,
    release: &Release,
    judge: &Judge<'_>,
    out: &mut Vec<Diagnostic>,
) {
    let Some(chart) = &release.values.chart else {
        return;
    };
    if chart.name != "cilium" {
        return;
    }
    let what = format!("the Cilium agent DaemonSet of HelmRelease {}", release.id);
    if release
        .values
        .tree
        .path(&["updateStrategy", "type"])
        .and_then(Node::as_str)
        == Some("OnDelete")
    {
        return;
    }
    let value = release
        .values
        .tree
        .path(&["updateStrategy", "rollingUpdate", "maxUnavailable"]);
    let release_loc = release
        .object
        .path(&["spec", "values"])
        .map_or_else(|| release.object.loc.clone(), |v| v.loc.clone());
    match value {
        Some(v) if release.values.is_chart_default(VALUES_PATH) => {
            // The chart set it: the fix goes into the release, so that is the primary place.
            let mut at_release = v.clone();
            at_release.loc = release_loc;
            let related = vec![(
                v.loc.clone(),
                format!("chart default {}", v.scalar_text().unwrap_or_default()),
            )];
            out.extend(judge(
                &at_release,
                &format!("{what} (value unset: the chart default applies)"),
                related,
            ));
        }
        Some(v) => {
            let related = vec![(
                release.object.loc.clone(),
                format!("HelmRelease {}", release.id),
            )];
            out.extend(judge(v, &what, related));
        }
        None => {
            // Cilium's documented default (2) within the limit on this many nodes: whatever
            // the uncached chart says, only a default above 2 could break it, and none has.
            let documented = Node::new(Value::Int(2), release_loc.clone());
            if judge(&documented, &what, Vec::new()).is_none() {
                return;
            }
            let cached = chart.found.is_some();
            let why = if cached {
                "neither the release nor the cached chart sets it"
            } else {
                "the release leaves it unset and the chart is not in the chart cache"
            };
            out.push(
                Diagnostic::new(
                    ctx.rule.name,
                    Severity::Warning,
                    format!(
                        "{what}: maxUnavailable is unknown ({why}); Cilium's chart defaults to 2"
                    ),
                )
                .in_env(ctx.env.name())
                .at(release_loc)
                .help(format!(
                    "set {VALUES_PATH} explicitly, or put the chart into the `charts:` cache"
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(limit(1), 1);
        assert_eq!(limit(2), 1);
        assert_eq!(limit(3), 1);
        assert_eq!(limit(5), 2);
        assert_eq!(limit(6), 2);
        assert_eq!(limit(7), 3);
    }

    #[test]
    fn percentages_round_up() {
        let l = Location::file("x");
        let v = |s: &str| Node::string(s, l.clone());
        assert_eq!(nodes_at_once(&v("10%"), 3), Some(1));
        assert_eq!(nodes_at_once(&v("34%"), 3), Some(2));
        assert_eq!(nodes_at_once(&v("50%"), 4), Some(2));
        assert_eq!(
            nodes_at_once(&Node::new(Value::Int(2), l.clone()), 3),
            Some(2)
        );
        assert_eq!(nodes_at_once(&v("x"), 3), None);
    }

    #[test]
    fn critical_names() {
        assert!(is_critical("cilium", &[]));
        assert!(is_critical("kube-vip-ds", &[]));
        assert!(!is_critical("cilium-envoy", &[]));
        assert!(is_critical("node-exporter", &["node-exporter".into()]));
    }
}
