//! The components that keep dialling the API server after bootstrap (SPEC §5.1): Cilium's
//! `k8sServiceHost` (HelmRelease effective values, k3s HelmChart `valuesContent`, Ansible-
//! rendered values and `--set` flags), `KUBERNETES_SERVICE_HOST` on CNI pods, and the server
//! URL of k3s agents. The cold-boot join of secondary servers is deliberately not one.

use std::sync::LazyLock;

use crate::Environment;
use fluxgate_ansible::Project;
use fluxgate_diagnostics::Location;
use fluxgate_yaml::Node;
use regex::Regex;

use crate::endpoints::{
    Render, Topology, ansible_origin, containers, env_value, helmchart_values, is_cni_workload,
    jinja_var, line_text, normalize_host,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Cilium's `k8sServiceHost` in the steady state (Flux).
    CiliumFlux,
    /// Cilium's `k8sServiceHost` as the bootstrap installs it.
    CiliumBootstrap,
    /// `KUBERNETES_SERVICE_HOST` on a CNI pod (either side).
    CniEnv,
    /// A k3s agent's server URL.
    AgentServer,
}

/// One consumer of the API endpoint.
#[derive(Clone, Debug)]
pub struct Consumer {
    pub kind: Kind,
    pub what: String,
    /// The value as rendered (may be empty).
    pub value: String,
    /// Its host part, normalised.
    pub host: String,
    /// False when the value is unknown offline (an encrypted Secret, an unresolved template).
    pub judgeable: bool,
    /// Where the value was set.
    pub set_at: Location,
    /// Where it is consumed.
    pub consumed_at: Option<Location>,
    pub bootstrap: bool,
}

impl Consumer {
    fn new(kind: Kind, what: String, value: String, set_at: Location) -> Consumer {
        let host = normalize_host(&value);
        let judgeable =
            !value.contains("${") && !value.contains("{{") && !value.contains("$ANSIBLE_VAULT");
        Consumer {
            bootstrap: matches!(kind, Kind::CiliumBootstrap | Kind::AgentServer),
            kind,
            what,
            value,
            host,
            judgeable,
            set_at,
            consumed_at: None,
        }
    }
}

/// Every consumer of the environment, steady state first, then the bootstrap.
pub fn consumers(env: &Environment, topo: &Topology, renders: &[Render]) -> Vec<Consumer> {
    let mut out = Vec::new();
    flux_consumers(env, &mut out);
    if let Some(boot) = &env.bootstrap {
        bootstrap_consumers(&boot.project, topo, renders, &mut out);
        task_consumers(env, &boot.project, topo, &mut out);
    }
    // What Talos applies at bootstrap (`cluster.inlineManifests`): a Cilium installed there
    // dials what its manifests say. A manifest built from unknown values is not judged.
    if let Some(talos) = &env.talos {
        for m in talos.inline_manifests.iter().filter(|m| m.value.known) {
            for obj in &m.value.docs {
                object_consumers(obj, true, &mut out);
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|c| seen.insert((c.set_at.clone(), c.consumed_at.clone(), c.value.clone())));
    out
}

fn release_chart(object: &Node) -> String {
    object
        .str_at(&["spec", "chart", "spec", "chart"])
        .or_else(|| object.str_at(&["spec", "chartRef", "name"]))
        .unwrap_or_default()
        .to_string()
}

fn flux_consumers(env: &Environment, out: &mut Vec<Consumer>) {
    let subs: Vec<_> = env
        .tree
        .kustomizations
        .iter()
        .flat_map(|k| k.substituted.iter())
        .collect();
    for (id, rel) in &env.releases {
        let chart = rel
            .values
            .chart
            .as_ref()
            .map_or_else(|| release_chart(&rel.object), |c| c.name.clone());
        if !chart.contains("cilium") {
            continue;
        }
        // A `null` (what `${VAR:=}` renders to) deletes the key from the effective values:
        // the inline line that wrote it is still the value's origin.
        let inline = rel.object.path(&["spec", "values", "k8sServiceHost"]);
        let Some(v) = rel.values.tree.get("k8sServiceHost").or(inline) else {
            continue;
        };
        let value = if v.is_null() {
            String::new()
        } else {
            v.scalar_text().unwrap_or_default()
        };
        let set_at = rel
            .values
            .origins
            .get("k8sServiceHost")
            .and_then(|o| o.first())
            .map_or_else(|| v.loc.clone(), |o| o.location.clone());
        let mut c = Consumer::new(
            Kind::CiliumFlux,
            format!("Cilium k8sServiceHost (HelmRelease {id})"),
            value,
            set_at.clone(),
        );
        let sub = subs
            .iter()
            .find(|s| s.definition == set_at && s.path.ends_with("k8sServiceHost"))
            .or_else(|| subs.iter().find(|s| s.consumer == set_at));
        if let Some(s) = sub {
            c.judgeable &= !s.opaque;
            c.consumed_at = Some(s.consumer.clone());
            c.what = format!(
                "Cilium k8sServiceHost (HelmRelease {id}, via ${{{}}})",
                s.var
            );
        } else if rel.object.loc != set_at {
            c.consumed_at = Some(rel.object.loc.clone());
        }
        out.push(c);
    }
    for obj in env.tree.objects() {
        object_consumers(obj, false, out);
    }
    // What a release's chart installs: a consumer that dials the host the release's values
    // already give Cilium is that value rendered, reported once at the values; one that dials
    // another host is the chart's own.
    for (id, rel) in &env.releases {
        let Some(installed) = &rel.installed else {
            continue;
        };
        let from_values: Vec<String> = out
            .iter()
            .filter(|c| c.kind == Kind::CiliumFlux && c.what.contains(&format!("HelmRelease {id}")))
            .map(|c| c.host.clone())
            .collect();
        let mut found = Vec::new();
        for obj in &installed.objects {
            object_consumers(obj, false, &mut found);
        }
        out.extend(
            found
                .into_iter()
                .filter(|c| !from_values.contains(&c.host))
                .map(|mut c| {
                    c.what = format!("{} (chart of HelmRelease {id})", c.what);
                    c
                }),
        );
    }
}

/// Consumers inside one object (steady state or rendered by the bootstrap).
fn object_consumers(obj: &Node, bootstrap: bool, out: &mut Vec<Consumer>) {
    let name = obj.str_at(&["metadata", "name"]).unwrap_or_default();
    let kind = obj.str_at(&["kind"]).unwrap_or_default();
    if let Some((chart, values)) = helmchart_values(obj)
        && chart.contains("cilium")
        && let Some(v) = values.get("k8sServiceHost")
    {
        let mut c = Consumer::new(
            if bootstrap {
                Kind::CiliumBootstrap
            } else {
                Kind::CiliumFlux
            },
            format!("Cilium k8sServiceHost (HelmChart {name})"),
            v.scalar_text().unwrap_or_default(),
            v.loc.clone(),
        );
        c.bootstrap = bootstrap;
        out.push(c);
    }
    if kind == "ConfigMap"
        && name == "kubernetes-services-endpoint"
        && let Some(v) = obj.path(&["data", "KUBERNETES_SERVICE_HOST"])
    {
        let mut c = Consumer::new(
            Kind::CniEnv,
            "KUBERNETES_SERVICE_HOST of the CNI (ConfigMap kubernetes-services-endpoint)".into(),
            v.scalar_text().unwrap_or_default(),
            v.loc.clone(),
        );
        c.bootstrap = bootstrap;
        out.push(c);
    }
    // Cilium's own configuration (`cilium-config`) names the API host it dials.
    if kind == "ConfigMap"
        && let Some(v) = obj.path(&["data", "k8s-service-host"])
    {
        let mut c = Consumer::new(
            Kind::CniEnv,
            format!("k8s-service-host of ConfigMap {name}"),
            v.scalar_text().unwrap_or_default(),
            v.loc.clone(),
        );
        c.bootstrap = bootstrap;
        out.push(c);
    }
    if is_cni_workload(obj) {
        for ctr in containers(obj) {
            // `--k8s-api-server=https://host:6443` (or the value as the next argument).
            let args = ctr.get("args").and_then(Node::as_seq).unwrap_or_default();
            for (i, a) in args.iter().enumerate() {
                let Some(text) = a.as_str() else {
                    continue;
                };
                let value = match text.strip_prefix("--k8s-api-server") {
                    Some(rest) if rest.starts_with('=') => Some((rest[1..].to_string(), a)),
                    Some("") => args
                        .get(i + 1)
                        .and_then(|n| Some((n.as_str()?.to_string(), n))),
                    _ => None,
                };
                if let Some((value, at)) = value {
                    let mut c = Consumer::new(
                        Kind::CniEnv,
                        format!("--k8s-api-server of {kind} {name}"),
                        value,
                        at.loc.clone(),
                    );
                    c.bootstrap = bootstrap;
                    out.push(c);
                }
            }
            if let Some(v) = env_value(ctr, "KUBERNETES_SERVICE_HOST") {
                let mut c = Consumer::new(
                    Kind::CniEnv,
                    format!("KUBERNETES_SERVICE_HOST of {kind} {name}"),
                    v.scalar_text().unwrap_or_default(),
                    v.loc.clone(),
                );
                c.bootstrap = bootstrap;
                out.push(c);
            }
        }
    }
}

/// Consumers in the bootstrap's rendered templates, located at the Ansible variable that set
/// the value (through its origin chain) and consumed at the template line.
fn bootstrap_consumers(
    project: &Project,
    topo: &Topology,
    renders: &[Render],
    out: &mut Vec<Consumer>,
) {
    static SERVER_URL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?:--server[= ]+|\bserver:\s*|K3S_URL=)["']?((?:https?://)?[^\s"'\\]+)"#)
            .expect("static regex")
    });
    let server_url = &*SERVER_URL;
    for r in renders {
        if topo.is_agent(&r.host) {
            if let Some(cap) = server_url.captures(&r.rendered.text) {
                let value = cap[1].to_string();
                let tl = r
                    .line_of(&["server", "K3S_URL"])
                    .unwrap_or_else(|| r.task_loc.clone());
                let (set_at, _) =
                    ansible_origin(project, &r.host, line_text(&r.source, tl.line), &tl);
                let mut c = Consumer::new(
                    Kind::AgentServer,
                    format!(
                        "the k3s agent server URL ({} on {})",
                        r.rendered.path, r.host
                    ),
                    value,
                    set_at,
                );
                c.consumed_at = Some(tl);
                out.push(c);
            }
            continue;
        }
        let mut found = Vec::new();
        for doc in &r.docs {
            if let Some(v) = doc.get("k8sServiceHost")
                && doc.get("kind").is_none()
            {
                found.push(Consumer::new(
                    Kind::CiliumBootstrap,
                    format!(
                        "Cilium k8sServiceHost (bootstrap values {})",
                        r.rendered.path
                    ),
                    v.scalar_text().unwrap_or_default(),
                    v.loc.clone(),
                ));
            }
            object_consumers(doc, true, &mut found);
        }
        for mut c in found {
            let key = if c.kind == Kind::CniEnv {
                "KUBERNETES_SERVICE_HOST"
            } else {
                "k8sServiceHost"
            };
            if let Some(tl) = r.line_of(&[key]) {
                let (set_at, _) =
                    ansible_origin(project, &r.host, line_text(&r.source, tl.line), &tl);
                c.set_at = set_at;
                c.consumed_at = Some(tl);
            }
            c.bootstrap = true;
            out.push(c);
        }
    }
}

/// Consumers written into task arguments: `--set k8sServiceHost=...` on a Cilium install, and
/// `--server https://...` / `K3S_URL` in the environment of an agent install.
fn task_consumers(env: &Environment, project: &Project, topo: &Topology, out: &mut Vec<Consumer>) {
    static SET_FLAG: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"--(?:helm-)?set[= ]k8sServiceHost=["']?((?:\{\{[^}]*\}\}|[^\s"'])*)"#)
            .expect("static regex")
    });
    static SERVER_FLAG: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?:--server[= ]+|K3S_URL=)["']?((?:\{\{[^}]*\}\}|[^\s"'])+)"#)
            .expect("static regex")
    });
    let _ = env;
    let set_flag = &*SET_FLAG;
    let server_flag = &*SERVER_FLAG;
    for po in project.order() {
        let server = po
            .hosts
            .iter()
            .find(|h| topo.contains(h) && !topo.is_agent(h));
        let agent = po.hosts.iter().find(|h| topo.is_agent(h));
        for task in &po.play.tasks {
            let module = task.short_module();
            if !matches!(module, "command" | "shell" | "raw" | "script") && agent.is_none() {
                continue;
            }
            let mut text = String::new();
            node_text(&task.args, &mut text);
            if let Some(envs) = task.keywords.get("environment") {
                node_text(envs, &mut text);
            }
            if let Some(host) = server
                && let Some(cap) = set_flag.captures(&text)
            {
                out.push(task_consumer(
                    project,
                    host,
                    &cap[1],
                    Kind::CiliumBootstrap,
                    "Cilium k8sServiceHost (--set on the install command)",
                    &task.loc,
                ));
            }
            if let Some(host) = agent
                && let Some(cap) = server_flag.captures(&text)
            {
                out.push(task_consumer(
                    project,
                    host,
                    &cap[1],
                    Kind::AgentServer,
                    "the k3s agent server URL (install task)",
                    &task.loc,
                ));
            }
        }
    }
}

fn task_consumer(
    project: &Project,
    host: &str,
    raw: &str,
    kind: Kind,
    what: &str,
    task_loc: &Location,
) -> Consumer {
    let (value, set_at) = match jinja_var(raw) {
        Some(var) => match project.resolve(host, &var) {
            Ok(r) => (
                r.value.scalar_text().unwrap_or_default(),
                r.origin
                    .first()
                    .map_or_else(|| task_loc.clone(), |o| o.location.clone()),
            ),
            Err(_) => (raw.to_string(), task_loc.clone()),
        },
        None => (raw.to_string(), task_loc.clone()),
    };
    let mut c = Consumer::new(kind, what.to_string(), value, set_at);
    c.consumed_at = Some(task_loc.clone());
    c
}

/// Every scalar of a node, one per line.
fn node_text(node: &Node, out: &mut String) {
    match &node.value {
        fluxgate_yaml::Value::Map(m) => {
            for (k, v) in m.iter() {
                out.push_str(k);
                out.push('=');
                node_text(v, out);
            }
        }
        fluxgate_yaml::Value::Seq(s) => s.iter().for_each(|v| node_text(v, out)),
        _ => {
            out.push_str(&node.scalar_text().unwrap_or_default());
            out.push(' ');
        }
    }
}
