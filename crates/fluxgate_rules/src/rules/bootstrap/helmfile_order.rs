//! `bootstrap-order` over a helmfile's `needs:`: helmfile installs a release only after every
//! release it needs is installed (and, with `wait`, ready). A `needs` cycle or a `needs` that
//! names no release fails helmfile before anything is installed; a CNI that (transitively)
//! needs a release whose pods wait for pod networking never gets installed: the bootstrap
//! hangs until helm's timeout.

use fluxgate_diagnostics::{Annotate, Diagnostic};
use fluxgate_model::endpoints::is_cni_name;
use fluxgate_model::helmfile::{Release, State};

use crate::RuleContext;

pub(crate) fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    for hf in &ctx.env.helmfiles {
        for state in &hf.states {
            undefined(ctx, state, out);
            cycles(ctx, state, out);
            if !state.crds_only() {
                cni_waits(ctx, state, out);
            }
        }
    }
}

fn undefined(ctx: &RuleContext<'_>, state: &State, out: &mut Vec<Diagnostic>) {
    for r in &state.releases {
        for n in r.needs.iter().filter(|n| n.target.is_none()) {
            out.push(
                ctx.finding(format!(
                    "release {} needs `{}`, which no release of {} is: helmfile fails before \
                     installing anything",
                    r.id(),
                    n.raw,
                    state.file
                ))
                .at(n.loc.clone())
                .help("name a release of this helmfile as `namespace/name`"),
            );
        }
    }
}

/// Each `needs` cycle once, at the need of its first release (in file order) that closes it.
fn cycles(ctx: &RuleContext<'_>, state: &State, out: &mut Vec<Diagnostic>) {
    let mut reported: Vec<Vec<usize>> = Vec::new();
    for start in 0..state.releases.len() {
        let Some(path) = path_back(state, start) else {
            continue;
        };
        let mut members = path.clone();
        members.sort_unstable();
        members.dedup();
        if reported.contains(&members) {
            continue;
        }
        reported.push(members);
        let chain: Vec<String> = path
            .iter()
            .chain(std::iter::once(&start))
            .map(|i| state.releases[*i].id())
            .collect();
        let first = &state.releases[start];
        let need = first
            .needs
            .iter()
            .find(|n| n.target == path.get(1).copied().or(Some(start)))
            .or(first.needs.first());
        let mut d = ctx
            .finding(format!(
                "helmfile `needs` cycle: {}: helmfile cannot order these releases and fails \
                 before installing anything",
                chain.join(" needs ")
            ))
            .at(need.map_or_else(|| first.loc.clone(), |n| n.loc.clone()));
        for i in path.iter().skip(1) {
            let r = &state.releases[*i];
            if let Some(n) = r
                .needs
                .iter()
                .find(|n| n.target.is_some_and(|t| path.contains(&t) || t == start))
            {
                d = d.related(n.loc.clone(), format!("{} needs {}", r.id(), n.raw));
            }
        }
        out.push(d.help("remove one `needs` entry of the cycle"));
    }
}

/// A cycle through `start`: the releases from `start` along `needs` back to it.
fn path_back(state: &State, start: usize) -> Option<Vec<usize>> {
    let mut stack: Vec<(usize, Vec<usize>)> = vec![(start, vec![start])];
    let mut seen = vec![false; state.releases.len()];
    while let Some((at, path)) = stack.pop() {
        for n in &state.releases[at].needs {
            let Some(t) = n.target else { continue };
            if t == start {
                return Some(path);
            }
            if !seen[t] {
                seen[t] = true;
                let mut p = path.clone();
                p.push(t);
                stack.push((t, p));
            }
        }
    }
    None
}

/// Whether a release's pods need pod networking. When its chart rendered (the chart cache
/// holds it): it installs a workload whose pods are not on the host network. Otherwise by
/// name: every release but the CNI, a CRD-only chart and a host-network VIP provider.
fn needs_networking(ctx: &RuleContext<'_>, state: &State, r: &Release) -> bool {
    if !r.installed {
        return false;
    }
    let id = r.id();
    if let Some(i) = ctx
        .env
        .helmfile_installs
        .iter()
        .find(|i| i.state == state.file && i.release == id)
    {
        return i.installed.objects.iter().any(pod_network_workload);
    }
    let chart = r.chart_name().to_ascii_lowercase();
    !(is_cni_name(&chart)
        || chart.ends_with("crds")
        || chart.ends_with("-crd")
        || chart.contains("kube-vip"))
}

/// A workload whose pods use the pod network (not `hostNetwork: true`).
fn pod_network_workload(obj: &fluxgate_yaml::Node) -> bool {
    let spec = match obj.str_at(&["kind"]) {
        Some("Pod") => obj.get("spec"),
        Some("Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job") => {
            obj.path(&["spec", "template", "spec"])
        }
        Some("CronJob") => obj.path(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    };
    spec.is_some_and(|s| s.get("hostNetwork").and_then(fluxgate_yaml::Node::as_bool) != Some(true))
}

/// The CNI (transitively) needs a release that waits for pod networking.
fn cni_waits(ctx: &RuleContext<'_>, state: &State, out: &mut Vec<Diagnostic>) {
    for (ci, cni) in state.releases.iter().enumerate() {
        if !cni.installed || !is_cni_name(cni.chart_name()) {
            continue;
        }
        // Breadth-first along `needs`, keeping the path to each release.
        let mut paths: Vec<Option<Vec<usize>>> = vec![None; state.releases.len()];
        paths[ci] = Some(vec![ci]);
        let mut queue = std::collections::VecDeque::from([ci]);
        let mut found = None;
        while let Some(at) = queue.pop_front() {
            let here = paths[at].clone().unwrap_or_default();
            for n in &state.releases[at].needs {
                let Some(t) = n.target else { continue };
                if paths[t].is_some() {
                    continue;
                }
                let mut p = here.clone();
                p.push(t);
                let r = &state.releases[t];
                if needs_networking(ctx, state, r) && r.wait {
                    found = Some(p);
                    break;
                }
                paths[t] = Some(p);
                queue.push_back(t);
            }
            if found.is_some() {
                break;
            }
        }
        let Some(path) = found else { continue };
        let blocker = &state.releases[path[path.len() - 1]];
        let chain: Vec<String> = path.iter().map(|i| state.releases[*i].id()).collect();
        let first_need = cni
            .needs
            .iter()
            .find(|n| n.target == path.get(1).copied())
            .map_or_else(|| cni.loc.clone(), |n| n.loc.clone());
        let mut d = ctx
            .finding(format!(
                "bootstrap deadlock: the CNI {} (chart {}) waits for {} ({}); {} runs pods \
                 that need pod networking, which only the CNI brings, and helm waits for them \
                 to be ready: helmfile never installs the CNI",
                cni.id(),
                cni.chart_name(),
                blocker.id(),
                chain.join(" needs "),
                blocker.id()
            ))
            .at(first_need)
            .related(
                blocker.loc.clone(),
                format!("{} is installed here", blocker.id()),
            );
        for w in path.windows(2).skip(1) {
            let r = &state.releases[w[0]];
            if let Some(n) = r.needs.iter().find(|n| n.target == Some(w[1])) {
                d = d.related(n.loc.clone(), format!("{} needs {}", r.id(), n.raw));
            }
        }
        out.push(d.help(
            "install the CNI first: drop this `needs` (CRD-only releases may stay), and let \
             the other releases need the CNI",
        ));
    }
}
