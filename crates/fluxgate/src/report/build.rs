//! Fills a [`Report`] from a run of the gate: the findings with their source lines, and per
//! environment what the model knows of its shape. Every text that reaches the page is masked
//! here, with the run's redactor, before the page escapes it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fluxgate_diagnostics::redact::{Redactor, mask_encrypted_line};
use fluxgate_diagnostics::{Diagnostic, Location, Severity};
use fluxgate_model::endpoints::{bootstrap_renders, containers, topology, vips_of};
use fluxgate_model::{Environment, object_id};
use fluxgate_rules::rules::rollout::rollout_blast_radius as rollout;
use fluxgate_yaml::Node as Yaml;

use super::{
    ChartRow, CoverageRow, DaemonSetRow, Domains, EdgeKind, EnvReport, Finding, Graph, HostRow,
    ImageRow, KillRow, Kills, Node, NodeKind, Report, Shown,
};

/// What [`report`] reads of a run.
pub struct Inputs<'a> {
    pub envs: &'a [Environment],
    pub diagnostics: &'a [Diagnostic],
    pub redactor: &'a Redactor,
    /// The text of a repository file with its Secrets' values masked (the text format's).
    pub sources: &'a dyn Fn(&str) -> Option<Arc<str>>,
    pub config: &'a fluxgate_model::config::Config,
    pub passed: bool,
    pub layers: Vec<(String, String)>,
    pub conformance: Option<String>,
    pub coverage: Option<&'a fluxgate_mutate::coverage::Coverage>,
    pub mutants: Option<&'a fluxgate_mutate::Run>,
}

/// Where a Cilium release sets its agent's rollout.
const MAX_UNAVAILABLE: &str = "updateStrategy.rollingUpdate.maxUnavailable";

/// How many objects an image row names before it says `and N more`.
const USED_BY_SHOWN: usize = 3;

/// The report of a run.
#[must_use]
pub fn report(inp: &Inputs<'_>) -> Report {
    let m = |s: &str| inp.redactor.redact(s).into_owned();
    let count = |sev| inp.diagnostics.iter().filter(|d| d.severity == sev).count();
    Report {
        passed: inp.passed,
        environments: inp.envs.iter().map(|e| m(e.name())).collect(),
        layers: inp.layers.clone(),
        errors: count(Severity::Error),
        warnings: count(Severity::Warning),
        notes: count(Severity::Note),
        conformance: inp.conformance.as_deref().map(m),
        findings: inp.diagnostics.iter().map(|d| finding(inp, d)).collect(),
        envs: inp.envs.iter().map(|e| environment(inp, e)).collect(),
        coverage: inp.coverage.map(|c| coverage_rows(c, &m)),
        kills: inp.mutants.map(|r| kills(r, &m)),
    }
}

fn finding(inp: &Inputs<'_>, d: &Diagnostic) -> Finding {
    let m = |s: &str| inp.redactor.redact(s).into_owned();
    let shown = |loc: &Location, label: Option<&str>| {
        let source = (loc.line > 0)
            .then(|| (inp.sources)(&loc.file))
            .flatten()
            .and_then(|t| {
                t.lines()
                    .nth(loc.line as usize - 1)
                    .map(|l| mask_encrypted_line(l).into_owned())
            })
            .map(|l| m(&l));
        Shown {
            file: m(&loc.file),
            line: loc.line,
            column: loc.column,
            label: label.map(m),
            source,
        }
    };
    let mut locations: Vec<Shown> = d.location.iter().map(|l| shown(l, None)).collect();
    locations.extend(
        d.related
            .iter()
            .map(|r| shown(&r.location, Some(&r.message))),
    );
    let environments = if d.environments.is_empty() {
        d.environment.iter().map(|e| m(e)).collect()
    } else {
        d.environments.iter().map(|e| m(e)).collect()
    };
    Finding {
        rule: m(&d.rule),
        severity: d.severity.to_string(),
        environments,
        message: m(&d.message),
        locations,
        notes: d.notes.iter().map(|n| m(n)).collect(),
        help: d.help.as_deref().map(m),
        requirements: d.requirements.iter().map(|r| m(r)).collect(),
    }
}

/// The findings of `env` that fail or warn, with the files and lines they point at.
fn env_findings<'d>(inp: &'d Inputs<'_>, env: &str) -> Vec<&'d Diagnostic> {
    inp.diagnostics
        .iter()
        .filter(|d| d.severity >= Severity::Warning)
        .filter(|d| {
            d.environment.as_deref() == Some(env) || d.environments.iter().any(|e| e == env)
        })
        .collect()
}

fn short(d: &Diagnostic) -> String {
    let mut s = format!("{}[{}]: {}", d.severity, d.rule, d.message);
    if s.chars().count() > 200 {
        s = s.chars().take(199).collect::<String>() + "…";
    }
    s
}

fn environment(inp: &Inputs<'_>, env: &Environment) -> EnvReport {
    let m = |s: &str| inp.redactor.redact(s).into_owned();
    let findings = env_findings(inp, env.name());
    let mut flux = flux_graph(env, &findings);
    let mut bootstrap = bootstrap_graph(env, &findings);
    for g in [&mut flux, &mut bootstrap] {
        for n in &mut g.nodes {
            n.id = m(&n.id);
            n.group = m(&n.group);
            n.detail = m(&n.detail);
            for f in &mut n.failures {
                *f = m(f);
            }
        }
    }
    let mut domains = domains(inp, env);
    for h in &mut domains.hosts {
        h.name = m(&h.name);
        h.address = m(&h.address);
    }
    for v in &mut domains.vips {
        v.0 = m(&v.0);
        v.1 = m(&v.1);
    }
    for d in &mut domains.daemonsets {
        d.id = m(&d.id);
        d.source = m(&d.source);
        d.max_unavailable = m(&d.max_unavailable);
    }
    let mut images = images(env);
    for i in &mut images {
        i.image = m(&i.image);
        for u in &mut i.used_by {
            *u = m(u);
        }
    }
    let mut charts = charts(env);
    for c in &mut charts {
        c.release = m(&c.release);
        c.chart = m(&c.chart);
        c.version = m(&c.version);
    }
    EnvReport {
        name: m(env.name()),
        flux,
        bootstrap,
        domains,
        images,
        charts,
    }
}

fn is_flux_kind(obj: &Yaml, kind: &str, group: &str) -> bool {
    obj.str_at(&["kind"]) == Some(kind)
        && obj
            .str_at(&["apiVersion"])
            .is_some_and(|a| a.starts_with(group))
}

/// `spec.dependsOn` of a Flux object as ids (`namespace/name`, the namespace defaulting to
/// the object's).
fn depends_on(obj: &Yaml, namespace: &str) -> Vec<String> {
    obj.path(&["spec", "dependsOn"])
        .and_then(Yaml::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(|d| {
            let name = d.str_at(&["name"])?;
            let ns = d.str_at(&["namespace"]).unwrap_or(namespace);
            Some(format!("{ns}/{name}"))
        })
        .collect()
}

/// Whether `file` lies in the folder `dir` (both relative to the repository).
fn under(file: &str, dir: &str) -> bool {
    let dir = dir.trim_start_matches("./").trim_end_matches('/');
    dir.is_empty() || dir == "." || file.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

/// The first `depth` folders of a path.
fn folder(path: &str, depth: usize) -> String {
    let path = path.trim_start_matches("./");
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    parts[..parts.len().min(depth)].join("/")
}

/// Every Flux Kustomization and HelmRelease of `env`: an edge from each dependency to its
/// dependent, and from each Kustomization to the Flux objects it renders.
pub fn flux_graph(env: &Environment, findings: &[&Diagnostic]) -> Graph {
    let mut g = Graph::default();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let not_applied = env.tree.not_applied();
    let mut by_namespace: Vec<String> = Vec::new();
    let mut by_folder: Vec<String> = Vec::new();
    for (k, why) in env.tree.kustomizations.iter().zip(&not_applied) {
        let id = k.id();
        if index.contains_key(&id) {
            continue;
        }
        index.insert(id.clone(), g.nodes.len());
        let target = k
            .object
            .str_at(&["spec", "targetNamespace"])
            .unwrap_or(&k.namespace);
        by_namespace.push(target.to_string());
        by_folder.push(folder(&k.path, 3));
        g.nodes.push(Node {
            id,
            kind: Some(NodeKind::Kustomization),
            group: String::new(),
            failures: why
                .iter()
                .map(|w| format!("Flux applies nothing of it: {w}"))
                .collect(),
            detail: format!("path: {}", k.path),
        });
    }
    for r in env.releases.values() {
        if index.contains_key(&r.id) {
            continue;
        }
        index.insert(r.id.clone(), g.nodes.len());
        let ns = r.id.split('/').next().unwrap_or_default().to_string();
        by_namespace.push(ns);
        let declared_in = r.object.loc.file.rsplit_once('/').map_or("", |(d, _)| d);
        by_folder.push(folder(declared_in, 3));
        let chart = r.values.chart.as_ref().map_or_else(
            || "chart unknown".to_string(),
            |c| {
                let v = c
                    .found_version
                    .as_deref()
                    .or(c.version.as_deref())
                    .unwrap_or("any version");
                format!("chart: {} {v}", c.name)
            },
        );
        g.nodes.push(Node {
            id: r.id.clone(),
            kind: Some(NodeKind::HelmRelease),
            group: String::new(),
            failures: Vec::new(),
            detail: chart,
        });
    }
    // Collapse by namespace, unless (past a screenful) nearly everything shares one: then by
    // folder.
    let groups = |keys: &[String]| keys.iter().collect::<BTreeSet<_>>().len();
    let largest = |keys: &[String]| {
        let mut c: BTreeMap<&String, usize> = BTreeMap::new();
        for k in keys {
            *c.entry(k).or_default() += 1;
        }
        c.values().copied().max().unwrap_or(0)
    };
    let n = g.nodes.len();
    let use_folder = n > 40 && (groups(&by_namespace) < 2 || largest(&by_namespace) * 10 > n * 6);
    for (node, (ns, dir)) in g.nodes.iter_mut().zip(by_namespace.iter().zip(&by_folder)) {
        node.group = if use_folder { dir.clone() } else { ns.clone() };
    }

    let mut edges: BTreeSet<(usize, usize, u8)> = BTreeSet::new();
    let add = |edges: &mut BTreeSet<(usize, usize, u8)>, dep: &str, of: &str, kind: u8| {
        if let (Some(&a), Some(&b)) = (index.get(dep), index.get(of))
            && a != b
        {
            edges.insert((a, b, kind));
        }
    };
    for k in &env.tree.kustomizations {
        let id = k.id();
        for dep in depends_on(&k.object, &k.namespace) {
            add(&mut edges, &dep, &id, 0);
        }
        for obj in &k.objects {
            if is_flux_kind(obj, "Kustomization", "kustomize.toolkit.fluxcd.io/")
                || is_flux_kind(obj, "HelmRelease", "helm.toolkit.fluxcd.io/")
            {
                add(&mut edges, &id, &object_id(obj), 1);
            }
        }
    }
    for r in env.releases.values() {
        let ns = r.id.split('/').next().unwrap_or_default();
        for dep in depends_on(&r.object, ns) {
            add(&mut edges, &dep, &r.id, 0);
        }
    }
    // A dependsOn edge says more than the declaration along the same pair: one arrow each.
    let ordered: BTreeSet<(usize, usize)> = edges
        .iter()
        .filter(|e| e.2 == 0)
        .map(|e| (e.0, e.1))
        .collect();
    g.edges = edges
        .into_iter()
        .filter(|(a, b, k)| *k == 0 || !ordered.contains(&(*a, *b)))
        .map(|(a, b, k)| {
            (
                a,
                b,
                if k == 0 {
                    EdgeKind::Order
                } else {
                    EdgeKind::Declares
                },
            )
        })
        .collect();

    // A finding marks the deepest Kustomization whose folder holds a file it points at, the
    // HelmRelease declared in that file, and any node its message names.
    let ks: Vec<(usize, &str)> = env
        .tree
        .kustomizations
        .iter()
        .filter_map(|k| index.get(&k.id()).map(|&i| (i, k.path.as_str())))
        .collect();
    let hr_files: Vec<(usize, &str)> = env
        .releases
        .values()
        .filter_map(|r| index.get(&r.id).map(|&i| (i, &*r.object.loc.file)))
        .collect();
    for d in findings {
        let mut hit: BTreeSet<usize> = BTreeSet::new();
        let files = d
            .location
            .iter()
            .chain(d.related.iter().map(|r| &r.location))
            .map(|l| &*l.file);
        for file in files {
            if let Some((i, _)) = ks
                .iter()
                .filter(|(_, p)| under(file, p))
                .max_by_key(|(_, p)| p.trim_end_matches('/').len())
            {
                hit.insert(*i);
            }
            hit.extend(hr_files.iter().filter(|(_, f)| *f == file).map(|(i, _)| *i));
        }
        for (id, &i) in &index {
            if names(&d.message, id) {
                hit.insert(i);
            }
        }
        for i in hit {
            g.nodes[i].failures.push(short(d));
        }
    }
    g
}

/// Whether `text` names `id` as a whole (not inside a longer name).
fn names(text: &str, id: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/');
    text.match_indices(id).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + id.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(|c| word(c) && c != '.')
    })
}

/// The cold-bootstrap order of `env`: each play of the site playbook that targets its hosts,
/// in order, with the manifests k3s applies from its auto-deploy folder hanging off the play
/// that writes them (or installs k3s), then the helmfile releases in their `needs` order,
/// then Flux.
pub fn bootstrap_graph(env: &Environment, findings: &[&Diagnostic]) -> Graph {
    let mut g = Graph::default();
    let mut last: Option<usize> = None;
    if let Some(b) = &env.bootstrap {
        let order = b.project.order();
        let mut k3s_play: Option<usize> = None;
        for po in order
            .iter()
            .filter(|po| po.hosts.iter().any(|h| b.hosts.contains(h)))
        {
            let name = po.play.name.clone().unwrap_or_else(|| po.play.file.clone());
            let i = g.nodes.len();
            let mut failures = Vec::new();
            for d in findings {
                let at = d
                    .location
                    .iter()
                    .chain(d.related.iter().map(|r| &r.location));
                let mut here = false;
                for l in at {
                    let role_file = po
                        .play
                        .roles
                        .iter()
                        .any(|r| l.file.contains(&format!("roles/{r}/")));
                    let import = po
                        .play
                        .imported_via
                        .iter()
                        .any(|v| v.file == l.file && v.line == l.line);
                    if *l.file == *po.play.file || role_file || import {
                        here = true;
                    }
                }
                if here {
                    failures.push(short(d));
                }
            }
            let roles = if po.play.roles.is_empty() {
                String::new()
            } else {
                format!("; roles: {}", po.play.roles.join(", "))
            };
            g.nodes.push(Node {
                id: format!("{}. {name}", po.index + 1),
                kind: Some(NodeKind::Play),
                group: po.play.file.clone(),
                failures,
                detail: format!("{}; hosts: {}{roles}", po.play.file, po.play.hosts),
            });
            if let Some(p) = last {
                g.edges.push((p, i, EdgeKind::Order));
            }
            last = Some(i);
            if k3s_play.is_none()
                && po
                    .play
                    .roles
                    .iter()
                    .any(|r| r.to_ascii_lowercase().contains("k3s"))
            {
                k3s_play = Some(i);
            }
            // Template tasks that write into k3s' auto-deploy folder.
            for t in po.play.tasks.iter().filter_map(|t| t.template.as_ref()) {
                if t.dest
                    .as_deref()
                    .is_some_and(|d| d.contains("server/manifests"))
                {
                    let a = g.nodes.len();
                    g.nodes.push(Node {
                        id: format!("{} (auto-deploy)", t.src),
                        kind: Some(NodeKind::AutoDeploy),
                        group: po.play.file.clone(),
                        failures: Vec::new(),
                        detail: format!("written to {}", t.dest.as_deref().unwrap_or_default()),
                    });
                    g.edges.push((i, a, EdgeKind::Declares));
                }
            }
        }
        // The templates an external k3s role deploys (`k3s_server_manifests_templates`).
        if let Some(server) = b.hosts.first() {
            let from = k3s_play.or(g.nodes.iter().position(|n| n.kind == Some(NodeKind::Play)));
            for path in fluxgate_model::templates::auto_deploy_templates(&b.project, server) {
                let a = g.nodes.len();
                g.nodes.push(Node {
                    id: format!("{path} (auto-deploy)"),
                    kind: Some(NodeKind::AutoDeploy),
                    group: String::from("k3s auto-deploy"),
                    failures: Vec::new(),
                    detail: "applied by k3s from its auto-deploy folder".to_string(),
                });
                if let Some(p) = from {
                    g.edges.push((p, a, EdgeKind::Declares));
                }
            }
        }
    }
    // The helmfile layer: each installed release after the plays, ordered by its `needs`
    // (a release that needs nothing follows the plays), and Flux after the releases that
    // nothing needs.
    let mut helmfile_leaves: Vec<usize> = Vec::new();
    for hf in &env.helmfiles {
        for state in &hf.states {
            let first = g.nodes.len();
            for r in &state.releases {
                let failures = findings
                    .iter()
                    .filter(|d| {
                        d.location
                            .iter()
                            .chain(d.related.iter().map(|r| &r.location))
                            .any(|l| {
                                std::iter::once(&r.loc)
                                    .chain(r.needs.iter().map(|n| &n.loc))
                                    .chain(r.hooks.iter().map(|h| &h.loc))
                                    .any(|at| at.file == l.file && at.line == l.line)
                            })
                    })
                    .map(|d| short(d))
                    .collect();
                let version = r
                    .version
                    .as_deref()
                    .map_or(String::new(), |v| format!(" {v}"));
                g.nodes.push(Node {
                    id: format!("{}/{}", r.namespace, r.name),
                    kind: Some(NodeKind::Helmfile),
                    group: state.file.clone(),
                    failures,
                    detail: format!(
                        "{}{version}; {}:{}{}",
                        r.chart,
                        r.loc.file,
                        r.loc.line,
                        if r.installed {
                            ""
                        } else {
                            "; installed: false"
                        }
                    ),
                });
            }
            let mut needed = vec![false; state.releases.len()];
            for (k, r) in state.releases.iter().enumerate() {
                let targets: Vec<usize> = r.needs.iter().filter_map(|n| n.target).collect();
                if targets.is_empty()
                    && let Some(p) = last
                {
                    g.edges.push((p, first + k, EdgeKind::Order));
                }
                let count = needed.len();
                for t in targets.into_iter().filter(|&t| t < count) {
                    needed[t] = true;
                    g.edges.push((first + t, first + k, EdgeKind::Order));
                }
            }
            helmfile_leaves.extend(
                needed
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| !**n)
                    .map(|(k, _)| first + k),
            );
        }
    }
    if let Some(entry) = env.config.flux.as_deref() {
        let i = g.nodes.len();
        g.nodes.push(Node {
            id: format!("Flux reconciles {entry}"),
            kind: Some(NodeKind::Flux),
            group: String::from("flux"),
            failures: Vec::new(),
            detail: format!(
                "{} Kustomizations, {} HelmReleases",
                env.tree.kustomizations.len(),
                env.releases.len()
            ),
        });
        match last {
            _ if !helmfile_leaves.is_empty() => {
                for &h in &helmfile_leaves {
                    g.edges.push((h, i, EdgeKind::Order));
                }
            }
            Some(p) => g.edges.push((p, i, EdgeKind::Order)),
            // No play to order them: what k3s deploys by itself still comes before Flux.
            None => {
                for (a, n) in g.nodes.iter().enumerate() {
                    if n.kind == Some(NodeKind::AutoDeploy) {
                        g.edges.push((a, i, EdgeKind::Order));
                    }
                }
            }
        }
    }
    g
}

fn domains(inp: &Inputs<'_>, env: &Environment) -> Domains {
    let topo = topology(env, &[]);
    let renders = bootstrap_renders(env, &topo);
    let vips = vips_of(env, &topo, &renders, &[])
        .into_iter()
        .map(|v| (v.host, v.source))
        .collect();
    let hosts = topo
        .hosts
        .iter()
        .map(|h| HostRow {
            name: h.name.clone(),
            address: h.address.clone().unwrap_or_default(),
            role: if h.server { "server" } else { "agent" }.to_string(),
        })
        .collect();
    let node_count = rollout::node_count(env);
    let n = node_count.as_ref().map(|(n, _)| *n);
    let limit = n.map(rollout::limit);
    let settings = inp
        .config
        .rules
        .get("rollout-blast-radius")
        .cloned()
        .unwrap_or_default();
    let mut rows: BTreeMap<String, DaemonSetRow> = BTreeMap::new();
    let mut consider = |obj: &Yaml, source: &str| {
        if obj.str_at(&["kind"]) != Some("DaemonSet") {
            return;
        }
        let name = obj.str_at(&["metadata", "name"]).unwrap_or_default();
        if !rollout::is_critical_daemonset(name, &settings) {
            return;
        }
        let id = format!(
            "{}/{name}",
            obj.str_at(&["metadata", "namespace"]).unwrap_or("default")
        );
        let strategy = obj.path(&["spec", "updateStrategy"]);
        let (shown, at_once) = if strategy.and_then(|s| s.str_at(&["type"])) == Some("OnDelete") {
            ("OnDelete".to_string(), None)
        } else {
            match strategy.and_then(|s| s.path(&["rollingUpdate", "maxUnavailable"])) {
                Some(v) => (
                    v.scalar_text().unwrap_or_default(),
                    n.and_then(|n| rollout::nodes_at_once(v, n)),
                ),
                None => ("unset (1)".to_string(), Some(1)),
            }
        };
        rows.entry(id.clone()).or_insert(DaemonSetRow {
            id,
            source: source.to_string(),
            max_unavailable: shown,
            at_once: at_once.map(|a| n.map_or(a, |n| a.min(n))),
            over: matches!((at_once, limit), (Some(a), Some(l)) if a.min(n.unwrap_or(a)) > l),
        });
    };
    for obj in env.tree.objects() {
        consider(obj, "Flux");
    }
    for r in env.releases.values() {
        if let Some(i) = r.installed.as_ref().filter(|i| !i.objects.is_empty()) {
            for obj in &i.objects {
                consider(obj, &format!("HelmRelease {} ({})", r.id, i.chart));
            }
        }
    }
    for r in &renders {
        for doc in &r.docs {
            consider(doc, &format!("bootstrap template {}", r.rendered.path));
        }
    }
    // A Cilium release whose chart did not render (not in the cache, or values only): its
    // values say what the agent gets, as the rule reads them.
    for r in env
        .releases
        .values()
        .filter(|r| r.installed.as_ref().is_none_or(|i| i.objects.is_empty()))
    {
        if r.values.chart.as_ref().is_none_or(|c| c.name != "cilium") {
            continue;
        }
        let id = format!("{}/cilium", r.id.split('/').next().unwrap_or_default());
        let v = r
            .values
            .tree
            .path(&["updateStrategy", "rollingUpdate", "maxUnavailable"]);
        let (shown, at_once) = match v {
            Some(v) if r.values.is_chart_default(MAX_UNAVAILABLE) => (
                format!("{} (chart default)", v.scalar_text().unwrap_or_default()),
                n.and_then(|n| rollout::nodes_at_once(v, n)),
            ),
            Some(v) => (
                v.scalar_text().unwrap_or_default(),
                n.and_then(|n| rollout::nodes_at_once(v, n)),
            ),
            None => ("unknown (the chart's default is 2)".to_string(), None),
        };
        rows.entry(id.clone()).or_insert(DaemonSetRow {
            id,
            source: format!("HelmRelease {} values", r.id),
            max_unavailable: shown,
            at_once,
            over: matches!((at_once, limit), (Some(a), Some(l)) if a > l),
        });
    }
    Domains {
        hosts,
        node_count,
        limit,
        vips,
        daemonsets: rows.into_values().collect(),
    }
}

/// The workloads' pod spec, CronJobs' included.
fn pod_containers(obj: &Yaml) -> Vec<&Yaml> {
    if obj.str_at(&["kind"]) == Some("CronJob") {
        let spec = obj.path(&["spec", "jobTemplate", "spec", "template", "spec"]);
        return ["initContainers", "containers"]
            .iter()
            .filter_map(|k| spec.and_then(|s| s.get(k)).and_then(Yaml::as_seq))
            .flatten()
            .collect();
    }
    containers(obj)
}

fn images(env: &Environment) -> Vec<ImageRow> {
    let mut by_image: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for obj in env.objects() {
        let cs = pod_containers(obj);
        if cs.is_empty() {
            continue;
        }
        let who = format!(
            "{} {}",
            obj.str_at(&["kind"]).unwrap_or_default(),
            object_id(obj)
        );
        for c in cs {
            if let Some(image) = c.str_at(&["image"]) {
                by_image
                    .entry(image.to_string())
                    .or_default()
                    .insert(who.clone());
            }
        }
    }
    by_image
        .into_iter()
        .map(|(image, users)| {
            let total = users.len();
            let mut used_by: Vec<String> = users.into_iter().take(USED_BY_SHOWN).collect();
            if total > USED_BY_SHOWN {
                used_by.push(format!("and {} more", total - USED_BY_SHOWN));
            }
            ImageRow { image, used_by }
        })
        .collect()
}

fn charts(env: &Environment) -> Vec<ChartRow> {
    let mut out: Vec<ChartRow> = env
        .releases
        .values()
        .map(|r| {
            let c = r.values.chart.as_ref();
            ChartRow {
                release: r.id.clone(),
                chart: c.map_or_else(|| "unknown".to_string(), |c| c.name.clone()),
                version: c
                    .and_then(|c| c.found_version.clone().or(c.version.clone()))
                    .unwrap_or_else(|| "any".to_string()),
                cached: c.is_some_and(|c| c.found.is_some()),
            }
        })
        .collect();
    out.sort();
    out
}

fn coverage_rows(
    c: &fluxgate_mutate::coverage::Coverage,
    m: &dyn Fn(&str) -> String,
) -> Vec<CoverageRow> {
    c.requirements
        .iter()
        .map(|r| CoverageRow {
            id: m(&r.requirement.id),
            title: m(&r.requirement.title),
            safety_critical: r.requirement.safety_critical,
            status: r.status.as_str().to_string(),
            checks: r.checks.iter().map(|c| m(c)).collect(),
            why: r.why.as_deref().map(m),
        })
        .collect()
}

fn kills(run: &fluxgate_mutate::Run, m: &dyn Fn(&str) -> String) -> Kills {
    let rules: Vec<String> = run
        .outcomes
        .iter()
        .flat_map(|o| o.killed_by.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let matrix = fluxgate_mutate::report::per_operator(run)
        .into_iter()
        .filter(|(_, n)| n.iter().any(|&k| k > 0))
        .map(|(op, n)| {
            let by_rule = rules
                .iter()
                .map(|r| {
                    run.outcomes
                        .iter()
                        .filter(|o| o.mutant.operator == op && o.killed_by.contains(r))
                        .count()
                })
                .collect();
            (op.to_string(), by_rule, [n[1], n[2], n[3]])
        })
        .collect();
    Kills {
        score: m(&fluxgate_mutate::report::score_line(run)),
        rules: rules.iter().map(|r| m(r)).collect(),
        matrix,
        mutants: run
            .outcomes
            .iter()
            .map(|o| KillRow {
                operator: o.mutant.operator.to_string(),
                file: m(&o.mutant.file),
                line: o.mutant.line,
                what: m(&o.mutant.what),
                status: o.status.as_str().to_string(),
                killed_by: o.killed_by.iter().map(|k| m(k)).collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_diagnostics::Annotate;

    #[test]
    fn secrets_are_masked_before_the_page_escapes_them() {
        // A value with `<` and `&`: escaped first, the redactor could no longer find it.
        let secret = "p<ss&w0rd-4417";
        let mut redactor = Redactor::default();
        redactor.add(secret);
        let redactor = redactor.finish();
        let d = Diagnostic::new("render", Severity::Error, format!("bad value {secret}"))
            .at(Location::new("a.yaml", 1, 7))
            .related(Location::new("a.yaml", 2, 1), format!("was {secret}"))
            .in_env("prod");
        let text = format!("token: {secret}\nother: {secret}\n");
        let sources = move |_: &str| Some(Arc::<str>::from(text.as_str()));
        let config = fluxgate_model::config::Config::default();
        let inputs = Inputs {
            envs: &[],
            diagnostics: std::slice::from_ref(&d),
            redactor: &redactor,
            sources: &sources,
            config: &config,
            passed: false,
            layers: Vec::new(),
            conformance: None,
            coverage: None,
            mutants: None,
        };
        let page = crate::report::html::page(&report(&inputs), "0");
        let escaped = crate::report::html::esc(secret);
        assert!(!page.contains(secret) && !page.contains(&escaped), "{page}");
        assert!(page.contains("bad value ********"), "{page}");
        assert!(page.contains("token: ********"), "{page}");
    }

    #[test]
    fn names_matches_whole_ids_only() {
        assert!(names(
            "HelmRelease kube-system/cilium dials",
            "kube-system/cilium"
        ));
        assert!(names("(kube-system/cilium).", "kube-system/cilium"));
        assert!(!names("kube-system/cilium-agent", "kube-system/cilium"));
        assert!(!names("xkube-system/cilium", "kube-system/cilium"));
    }

    #[test]
    fn under_and_folder() {
        assert!(under("apps/x/a.yaml", "./apps"));
        assert!(!under("appsx/a.yaml", "apps"));
        assert_eq!(
            folder("./kubernetes/apps/media/plex", 3),
            "kubernetes/apps/media"
        );
        assert_eq!(folder("apps", 3), "apps");
    }
}
