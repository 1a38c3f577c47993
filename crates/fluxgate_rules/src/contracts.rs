//! Contracts (SPEC §6): the user's own CEL assertions, evaluated per environment. Findings have
//! rule `contract:<id>`; an assertion that cannot be evaluated (a missing key, a type error) is
//! a finding that says why, never a crash.
//!
//! Variables: `env`; `nodes` (`[{name, address, groups, vars}]`, `address` = `k3s_node_ip`
//! or `ansible_host`); `vars` (the first host's resolved Ansible variables); `hosts` (name ->
//! vars); `objects` (rendered objects); `releases` (`"ns/name"` -> effective values);
//! `playbook` (the file names the site playbook imports, in order); and `template(path)`, the
//! template rendered with the first host's variables and parsed as YAML.
//!
//! The runtime is `kube_cel::cel` (cel 0.13, with the Kubernetes string, list, regex, IP and
//! quantity libraries); the optional-field syntax `.?` is not available in it.

use fluxgate_diagnostics::Annotate;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use fluxgate_diagnostics::{Diagnostic, Location, Severity};
use fluxgate_model::Environment;
use fluxgate_model::config::{Config, Contract};
use fluxgate_yaml::{Node, Value as Y};
use kube_cel::KubeCelExt;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, ExecutionError, Program, Value};
use regex::Regex;

use crate::Error;

/// The rule name of a contract's findings.
pub fn rule_name(c: &Contract) -> String {
    format!("contract:{}", c.id)
}

/// A YAML node as a CEL value.
pub(crate) fn to_cel(node: &Node) -> Value {
    match &node.value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Int(i) => Value::Int(*i),
        Y::Float(f) => Value::Float(*f),
        Y::String(s) => Value::String(Arc::new(s.clone())),
        Y::Seq(items) => Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Y::Map(m) => map(m.iter().map(|(k, v)| (k.clone(), to_cel(v)))),
    }
}

fn map(entries: impl Iterator<Item = (String, Value)>) -> Value {
    let m: HashMap<Key, Value> = entries
        .map(|(k, v)| (Key::String(Arc::new(k)), v))
        .collect();
    Value::Map(Map { map: Arc::new(m) })
}

fn string(s: &str) -> Value {
    Value::String(Arc::new(s.to_string()))
}

/// The variables of one environment, built once for all its contracts.
struct Bindings {
    values: Vec<(&'static str, Value)>,
    first_host: Option<String>,
}

/// `objects` (every object of the environment, charts' included) is converted only when a
/// contract reads it.
fn bindings(env: &Environment, with_objects: bool) -> Bindings {
    let mut values = vec![("env", string(env.name()))];
    if with_objects {
        let objects: Vec<Value> = env.objects().map(to_cel).collect();
        values.push(("objects", Value::List(Arc::new(objects))));
    }
    values.push((
        "releases",
        map(env
            .releases
            .iter()
            .map(|(id, r)| (id.clone(), to_cel(&r.values.tree)))),
    ));
    let mut nodes = Vec::new();
    let mut hosts = Vec::new();
    let mut first_vars = map(std::iter::empty());
    let mut playbook = Vec::new();
    let mut first_host = None;
    if let Some(boot) = &env.bootstrap {
        let inv = boot.project.inventory();
        for (i, h) in boot.hosts.iter().enumerate() {
            let resolved = boot.project.host_vars(h);
            let vars = map(resolved
                .vars
                .iter()
                .map(|(k, r)| (k.clone(), to_cel(&r.value))));
            let address = fluxgate_model::endpoints::host_address(&boot.project, h)
                .map_or(Value::Null, |a| string(&a));
            let groups = Value::List(Arc::new(
                inv.host_groups(h).iter().map(|g| string(g)).collect(),
            ));
            nodes.push(map([
                ("name".to_string(), string(h)),
                ("address".to_string(), address),
                ("groups".to_string(), groups),
                ("vars".to_string(), vars.clone()),
            ]
            .into_iter()));
            if i == 0 {
                first_vars = vars.clone();
                first_host = Some(h.clone());
            }
            hosts.push((h.clone(), vars));
        }
        let files = boot.project.playbook_files();
        playbook = files
            .iter()
            .skip(1)
            .map(|f| string(f.rsplit('/').next().unwrap_or(f)))
            .collect();
    }
    values.push(("nodes", Value::List(Arc::new(nodes))));
    values.push(("hosts", map(hosts.into_iter())));
    values.push(("vars", first_vars));
    values.push(("playbook", Value::List(Arc::new(playbook))));
    Bindings { values, first_host }
}

/// Evaluates every contract over every environment it applies to.
#[must_use]
pub fn check(config: &Config, envs: &[Environment]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if config.contracts.is_empty() {
        return out;
    }
    let mut compiled = Vec::new();
    for c in &config.contracts {
        match Program::compile(&c.assert) {
            Ok(p) => compiled.push((c, p)),
            Err(e) => out.push(
                finding(c, format!("contract `{}` does not parse: {e}", c.id)).at(c.loc.clone()),
            ),
        }
    }
    for env in envs {
        let applies: Vec<_> = compiled
            .iter()
            .filter(|(c, _)| {
                c.environments
                    .as_ref()
                    .is_none_or(|names| names.iter().any(|n| n == env.name()))
            })
            .collect();
        if applies.is_empty() {
            continue;
        }
        let reads_objects = applies
            .iter()
            .any(|(_, p)| p.references().has_variable("objects"));
        let b = bindings(env, reads_objects);
        for (c, program) in applies {
            if let Some(d) = evaluate(c, program, env, &b) {
                out.push(d.in_env(env.name()));
            }
        }
    }
    out
}

fn finding(c: &Contract, message: String) -> Diagnostic {
    let mut d = Diagnostic::new(rule_name(c), Severity::Error, message);
    d.requirements.clone_from(&c.requirements);
    d
}

fn evaluate(
    c: &Contract,
    program: &Program,
    env: &Environment,
    b: &Bindings,
) -> Option<Diagnostic> {
    let mut ctx = Context::default().with_all();
    // cel copies each variable whole into its own representation: only what the contract
    // reads (the objects of an environment with charts are most of its values).
    let reads = program.references();
    for (name, v) in &b.values {
        if reads.has_variable(name) {
            ctx.add_variable_from_value(*name, v.clone());
        }
    }
    let mut templates: HashMap<String, Result<Value, Error>> = HashMap::new();
    for path in c.template_paths() {
        let rendered = match (&env.bootstrap, &b.first_host) {
            (Some(boot), Some(host)) => match boot.template(&path, host) {
                Some(Ok(t)) => t
                    .value
                    .as_ref()
                    .map(to_cel)
                    .ok_or_else(|| Error::TemplateNotYaml { path: path.clone() }),
                Some(Err(d)) => Err(Error::TemplateRender {
                    path: path.clone(),
                    message: d.message.clone(),
                }),
                None => Err(Error::NotRendered {
                    path: path.clone(),
                    host: host.clone(),
                }),
            },
            _ => Err(Error::NoBootstrap),
        };
        templates.insert(path, rendered);
    }
    let templates = Arc::new(templates);
    ctx.add_function(
        "template",
        move |path: Arc<String>| -> Result<Value, ExecutionError> {
            match templates.get(path.as_str()) {
                Some(Ok(v)) => Ok(v.clone()),
                Some(Err(e)) => Err(ExecutionError::function_error("template", e)),
                None => Err(ExecutionError::function_error(
                    "template",
                    "the path must be a string literal",
                )),
            }
        },
    );
    let what = c.description.as_deref().unwrap_or(&c.id).trim().to_string();
    let d = match program.execute(&ctx) {
        Ok(Value::Bool(true)) => return None,
        Ok(Value::Bool(false)) => finding(c, format!("contract `{}` failed: {what}", c.id)),
        Ok(other) => finding(
            c,
            format!("contract `{}` must evaluate to a bool, got {other:?}", c.id),
        ),
        Err(e) => finding(
            c,
            format!("contract `{}` could not be evaluated: {e} ({what})", c.id),
        ),
    };
    let mut d = d.at(c.loc.clone());
    for (loc, label) in read_locations(&c.assert, env, b) {
        d = d.related(loc, label);
    }
    Some(d)
}

/// Where the values an assertion reads were set: `releases["ns/name"].a.b` through the
/// release's value origins, `vars.x` through the first host's origin chain.
fn read_locations(assert: &str, env: &Environment, b: &Bindings) -> Vec<(Location, String)> {
    static REL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"releases\[\s*["']([^"']+)["']\s*\]((?:\.[A-Za-z_][A-Za-z0-9_]*)+)"#)
            .expect("static regex")
    });
    static VAR: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\bvars\.([A-Za-z_][A-Za-z0-9_]*)").expect("static regex"));
    let mut out: Vec<(Location, String)> = Vec::new();
    let rel = &*REL;
    for cap in rel.captures_iter(assert) {
        let id = &cap[1];
        let path = cap[2].trim_start_matches('.');
        if let Some(loc) = env
            .releases
            .get(id)
            .and_then(|r| r.values.origins.get(path))
            .and_then(|o| o.first())
            .map(|o| o.location.clone())
        {
            out.push((loc, format!("{id} {path}")));
        }
    }
    let var = &*VAR;
    if let (Some(boot), Some(host)) = (&env.bootstrap, &b.first_host) {
        for cap in var.captures_iter(assert) {
            if let Ok(r) = boot.project.resolve(host, &cap[1])
                && let Some(o) = r.origin.first()
            {
                out.push((o.location.clone(), format!("{} on {host}", &cap[1])));
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|(l, _)| seen.insert(l.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expr: &str, vars: &[(&'static str, Value)]) -> Result<Value, ExecutionError> {
        let program = Program::compile(expr).expect("compiles");
        let mut ctx = Context::default().with_all();
        for (n, v) in vars {
            ctx.add_variable_from_value(*n, v.clone());
        }
        program.execute(&ctx)
    }

    #[test]
    fn macros_membership_and_strings() {
        let nodes = Value::List(Arc::new(vec![
            map([("address".to_string(), string("10.0.0.1"))].into_iter()),
            map([("address".to_string(), string("10.0.0.2"))].into_iter()),
        ]));
        let vars = [("nodes", nodes), ("vip", string("10.0.0.9"))];
        assert_eq!(
            eval("!(vip in nodes.map(n, n.address))", &vars).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            eval("has(nodes[0].address)", &vars).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            eval("vip.startsWith('10.') && vip.split('.').size() == 4", &vars).unwrap(),
            Value::Bool(true)
        );
        assert!(eval("nodes[0].missing == 1", &vars).is_err());
    }
}
