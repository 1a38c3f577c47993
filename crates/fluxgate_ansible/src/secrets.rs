//! Which values of a project are secret (issue 26 §2): the taint follows the value, not the
//! name alone.
//!
//! A variable is secret when its name says so ([`is_secret_name`]), when a `vault*` file
//! defines it, when a task that must not log (`no_log`) or that writes a Kubernetes Secret
//! reads it, and when its definition reads a secret variable, through any filter
//! (`db_url: "postgres://u:{{ db_password | urlencode }}@db"`): the last rule is applied
//! until nothing changes. What a template or a task argument computes from a secret variable
//! inline (`{{ db_password | b64encode }}`, `{{ api_token[:8] }}`) is secret too: each such
//! expression is evaluated for the host and its result joins the values.

use std::collections::{BTreeSet, HashMap, HashSet};

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Value as Y};

use crate::playbook::Task;
use crate::resolve::{self, Scope};
use crate::{Project, is_secret_name, string_nodes};

impl Project {
    /// The values that are secret on `hosts`: every string leaf of a secret variable's
    /// value, and the result of every expression of a task argument or a template that
    /// reads a secret variable. Vault ciphertext is opaque already and gives nothing.
    #[must_use]
    pub fn secret_values(&self, hosts: &[String]) -> Vec<String> {
        // A poisoned memo still holds only whole entries.
        let found = self
            .secrets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(hosts)
            .cloned();
        if let Some(values) = found {
            return values.to_vec();
        }
        let values = std::sync::Arc::new(self.compute_secret_values(hosts));
        self.secrets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(hosts.to_vec(), values.clone());
        values.to_vec()
    }

    fn compute_secret_values(&self, hosts: &[String]) -> Vec<String> {
        let mut out = BTreeSet::new();
        let sinks = self.secret_sinks();
        let uses = self.expression_uses();
        // What each definition reads, by where it is written: the tables of a host's scopes
        // share most definitions.
        let mut reads_of: HashMap<Location, Vec<String>> = HashMap::new();
        // Hosts without variables of their own see what their groups give them: one host
        // per set of groups is enough (10,000 hosts of one range are one table, not 10,000).
        let mut seen_groups = HashSet::new();
        for host in hosts {
            let own = self
                .data
                .inventory
                .hosts
                .get(host)
                .is_some_and(|h| !h.vars.is_empty())
                || self.data.host_vars_inv.contains_key(host)
                || self.data.host_vars_play.contains_key(host);
            if !own && !seen_groups.insert(self.data.inventory.sorted_host_groups(host)) {
                continue;
            }
            let mut names_of: HashMap<Scope, HashSet<String>> = HashMap::new();
            let secret = self.secret_names(&Scope::Host, host, &sinks, &mut reads_of);
            for name in &secret {
                if let Ok(r) = self.resolve(host, name)
                    && !r.opaque
                {
                    string_leaves(&r.value, &mut out);
                }
            }
            names_of.insert(Scope::Host, secret);
            for (scope, expr) in &uses {
                let names = names_of
                    .entry(scope.clone())
                    .or_insert_with(|| self.secret_names(scope, host, &sinks, &mut reads_of));
                if !identifiers(expr).any(|id| names.contains(id)) {
                    continue;
                }
                let text = format!("{{{{ {expr} }}}}");
                let before = resolve::opaque_probe_start();
                let value = resolve::render_value(&self.data, scope, host, &text, &[]);
                let opaque = resolve::opaque_probe_end(before);
                if let (Ok(v), false) = (value, opaque) {
                    let text = match v.as_str() {
                        Some(s) => s.to_string(),
                        None if v.is_undefined() || v.is_none() => continue,
                        None => v.to_string(),
                    };
                    // What reads a vault value gets its placeholder, not a secret.
                    if !text.contains(crate::values::OPAQUE) {
                        out.insert(text);
                    }
                }
            }
        }
        out.into_iter().collect()
    }

    /// The secret variables of one (scope, host): the seeds (name, vault file, `sinks`),
    /// then every variable whose definition reads one of them, until nothing changes.
    fn secret_names(
        &self,
        scope: &Scope,
        host: &str,
        sinks: &HashSet<String>,
        reads_of: &mut HashMap<Location, Vec<String>>,
    ) -> HashSet<String> {
        let table = self.data.table(scope, host);
        let mut secret: HashSet<String> = table
            .iter()
            .filter(|(name, def)| {
                is_secret_name(name)
                    || sinks.contains(name.as_str())
                    || def
                        .node
                        .loc
                        .file
                        .rsplit('/')
                        .next()
                        .is_some_and(|f| f.to_ascii_lowercase().starts_with("vault"))
            })
            .map(|(name, _)| name.clone())
            .collect();
        for (_, def) in table.iter() {
            reads_of.entry(def.node.loc.clone()).or_insert_with(|| {
                let mut ids: Vec<String> = template_texts(&def.node)
                    .into_iter()
                    .flat_map(expressions)
                    .flat_map(identifiers)
                    .map(str::to_string)
                    .collect();
                ids.sort();
                ids.dedup();
                ids
            });
        }
        let reads: Vec<(&String, &Vec<String>)> = table
            .iter()
            .filter(|(name, _)| !secret.contains(name.as_str()))
            .filter_map(|(name, def)| {
                reads_of
                    .get(&def.node.loc)
                    .filter(|ids| !ids.is_empty())
                    .map(|ids| (name, ids))
            })
            .collect();
        loop {
            let newly: Vec<&String> = reads
                .iter()
                .filter(|(name, ids)| {
                    !secret.contains(name.as_str()) && ids.iter().any(|id| secret.contains(id))
                })
                .map(|(name, _)| *name)
                .collect();
            if newly.is_empty() {
                break;
            }
            secret.extend(newly.into_iter().cloned());
        }
        secret
    }

    /// The names that tasks hand only to places that hide or keep secrets: the arguments of
    /// a `no_log` task, of a task whose arguments describe a Kubernetes Secret, and of a
    /// template task whose template writes one, except where a value goes (`dest`, `path`,
    /// ...), and except names that a task without either also reads.
    fn secret_sinks(&self) -> HashSet<String> {
        let mut hidden = HashSet::new();
        let mut shown = HashSet::new();
        for po in self.order() {
            for task in &po.play.tasks {
                // Where a value goes (a path, an owner) is not what the task hides.
                let mut strings = Vec::new();
                match &task.args.value {
                    Y::Map(m) => m
                        .iter()
                        .filter(|(k, _)| !PLACE_ARGS.contains(&k.as_str()))
                        .for_each(|(_, v)| string_nodes(v, &mut strings)),
                    _ => string_nodes(&task.args, &mut strings),
                }
                let mut texts: Vec<String> = strings
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect();
                let template = task
                    .template
                    .as_ref()
                    .and_then(|t| t.resolved.as_deref())
                    .and_then(|p| self.read_source(p));
                let writes_secret = texts
                    .iter()
                    .chain(template.as_ref())
                    .any(|t| describes_secret(t))
                    || describes_secret_node(&task.args);
                texts.extend(template);
                let into = if no_log(task) || writes_secret {
                    &mut hidden
                } else {
                    &mut shown
                };
                for text in &texts {
                    for expr in expressions(text) {
                        into.extend(identifiers(expr).map(str::to_string));
                    }
                }
            }
        }
        // A variable that a task also shows (a message, a file it writes unhidden) is not
        // one the project keeps secret: the VIP a no_log task writes into a kubeconfig is
        // also in the assertion that names it.
        hidden.retain(|name| !shown.contains(name));
        hidden
    }

    /// Every `{{ expression }}` of the tasks' arguments and of their templates, with the scope
    /// it is evaluated in, once each.
    fn expression_uses(&self) -> Vec<(Scope, String)> {
        let mut out: Vec<(Scope, String)> = Vec::new();
        let mut seen = HashSet::new();
        for po in self.order() {
            for task in &po.play.tasks {
                let scope = match &task.role {
                    Some(role) => Scope::Role(po.index, role.clone()),
                    None => Scope::Play(po.index),
                };
                let mut texts: Vec<String> = Vec::new();
                let mut strings = Vec::new();
                string_nodes(&task.args, &mut strings);
                texts.extend(
                    strings
                        .iter()
                        .filter_map(|n| n.as_str().map(str::to_string)),
                );
                if let Some(t) = task
                    .template
                    .as_ref()
                    .and_then(|t| t.resolved.as_deref())
                    .and_then(|p| self.read_source(p))
                {
                    texts.push(t);
                }
                for text in &texts {
                    for expr in expressions(text) {
                        // `{% set name = EXPR %}`: what the template prints later is EXPR's.
                        let expr = expr
                            .strip_prefix("set ")
                            .and_then(|s| s.split_once('=').map(|(_, v)| v.trim()))
                            .unwrap_or(expr);
                        let key = (scope.clone(), expr.to_string());
                        if seen.insert(key.clone()) {
                            out.push(key);
                        }
                    }
                }
            }
        }
        out
    }
}

/// Task arguments that say where a value goes rather than what it is.
const PLACE_ARGS: [&str; 10] = [
    "dest", "path", "src", "owner", "group", "mode", "state", "creates", "removes", "chdir",
];

/// Whether a task must not log: `no_log` set to anything but a false literal (a templated
/// `no_log` counts: it is meant to hide something).
fn no_log(task: &Task) -> bool {
    task.keywords.get("no_log").is_some_and(|n| match &n.value {
        Y::Bool(b) => *b,
        Y::Null => false,
        _ => !n.scalar_text().is_some_and(|t| {
            matches!(
                t.to_ascii_lowercase().as_str(),
                "false" | "no" | "off" | "0"
            )
        }),
    })
}

/// A manifest text of a Kubernetes Secret (`kind: Secret` on a line of its own).
fn describes_secret(text: &str) -> bool {
    text.lines().any(|l| {
        l.trim()
            .strip_prefix("kind:")
            .is_some_and(|k| k.trim().trim_matches(['"', '\'']) == "Secret")
    })
}

/// A task argument tree holding `kind: Secret` (`kubernetes.core.k8s`'s `definition:`).
fn describes_secret_node(n: &Node) -> bool {
    match &n.value {
        Y::Map(m) => {
            m.get("kind").and_then(Node::as_str) == Some("Secret")
                || m.values().any(describes_secret_node)
        }
        Y::Seq(s) => s.iter().any(describes_secret_node),
        _ => false,
    }
}

/// The strings of a definition that Jinja templates.
fn template_texts(n: &Node) -> Vec<&str> {
    let mut strings = Vec::new();
    string_nodes(n, &mut strings);
    strings
        .into_iter()
        .filter_map(|s| s.as_str())
        .filter(|s| s.contains("{{") || s.contains("{%"))
        .collect()
}

/// The bodies of the `{{ ... }}` and `{% ... %}` of a template text.
fn expressions(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        loop {
            let open = rest.find("{{").into_iter().chain(rest.find("{%")).min()?;
            let close = if rest[open..].starts_with("{{") {
                "}}"
            } else {
                "%}"
            };
            let body_start = open + 2;
            let Some(len) = rest[body_start..].find(close) else {
                rest = "";
                return None;
            };
            let body = rest[body_start..body_start + len].trim_matches('-').trim();
            rest = &rest[body_start + len + 2..];
            if !body.is_empty() {
                return Some(body);
            }
        }
    })
}

/// The names an expression may read (string literals included: a false name only matters
/// when a secret variable has it).
fn identifiers(expr: &str) -> impl Iterator<Item = &str> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

fn string_leaves(n: &Node, out: &mut BTreeSet<String>) {
    match &n.value {
        Y::Map(m) => m.values().for_each(|v| string_leaves(v, out)),
        Y::Seq(s) => s.iter().for_each(|v| string_leaves(v, out)),
        Y::String(s) => {
            out.insert(s.clone());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_and_the_names_they_read() {
        let text =
            "a={{ db_password | b64encode }} {%- if x %}{{ 'lit' ~ api_token[:8] -}}{% endif %}";
        let exprs: Vec<&str> = expressions(text).collect();
        assert_eq!(
            exprs,
            [
                "db_password | b64encode",
                "if x",
                "'lit' ~ api_token[:8]",
                "endif"
            ]
        );
        let ids: Vec<&str> = identifiers(exprs[2]).collect();
        assert_eq!(ids, ["lit", "api_token"]);
        assert_eq!(expressions("{{ unclosed").count(), 0);
    }

    #[test]
    fn secret_manifests() {
        assert!(describes_secret("apiVersion: v1\nkind: \"Secret\"\n"));
        assert!(!describes_secret("kind: SecretStore\n"));
    }
}
