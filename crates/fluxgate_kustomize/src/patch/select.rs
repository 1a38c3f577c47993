//! kustomize's patch `target:` selector.
//!
//! `group`, `version`, `kind`, `name` and `namespace` are regular expressions anchored at both
//! ends (`^(?:…)$`); an empty or missing one matches anything. `labelSelector` and
//! `annotationSelector` use the Kubernetes label-selector syntax: requirements separated by
//! commas, each `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists) or `!k`.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use fluxgate_yaml::Node;
use regex::Regex;

use crate::Error;

/// Whether `obj` is selected by `selector`. Errors name an invalid regex or label selector.
pub fn selector_matches(obj: &Node, selector: &Node) -> Result<bool, Error> {
    Selector::compile(selector).matches(obj)
}

/// A `target:` compiled once (regexes, label selectors) to be matched against many objects.
/// A field that does not compile is an error only when matching reaches it, in the order
/// group, version, kind, name, namespace, labelSelector, annotationSelector, as when each
/// match compiled it anew.
#[derive(Debug)]
pub struct Selector {
    /// group, version, kind, name, namespace.
    ids: [Option<Result<Pattern, Error>>; 5],
    /// labelSelector, annotationSelector.
    meta: [Option<Result<Vec<Requirement>, Error>>; 2],
}

const ID_FIELDS: [&str; 5] = ["group", "version", "kind", "name", "namespace"];
const META_FIELDS: [(&str, &str); 2] = [
    ("labelSelector", "labels"),
    ("annotationSelector", "annotations"),
];

/// Target regexes compiled so far: the same targets recur in every Kustomization that uses a
/// component, so each is compiled once per process (a `Regex` clone shares the program).
static COMPILED: LazyLock<Mutex<HashMap<String, Regex>>> = LazyLock::new(Mutex::default);

/// One id field's pattern: a plain name compares as text, anything else is an anchored regex.
#[derive(Debug)]
enum Pattern {
    Literal(String),
    Regex(Regex),
}

impl Pattern {
    fn new(field: &'static str, pattern: String) -> Result<Pattern, Error> {
        if pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | ':'))
        {
            return Ok(Pattern::Literal(pattern));
        }
        let mut compiled = COMPILED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(re) = compiled.get(&pattern) {
            return Ok(Pattern::Regex(re.clone()));
        }
        let re = match Regex::new(&format!("^(?:{pattern})$")) {
            Ok(re) => re,
            Err(reason) => {
                return Err(Error::InvalidRegex {
                    field,
                    pattern,
                    reason,
                });
            }
        };
        compiled.insert(pattern, re.clone());
        Ok(Pattern::Regex(re))
    }

    fn is_match(&self, value: &str) -> bool {
        match self {
            Pattern::Literal(text) => text == value,
            Pattern::Regex(re) => re.is_match(value),
        }
    }
}

impl Selector {
    #[must_use]
    pub fn compile(selector: &Node) -> Selector {
        let ids = ID_FIELDS.map(|field| {
            selector_text(selector, field)
                .transpose()
                .map(|text| text.and_then(|t| Pattern::new(field, t)))
        });
        let meta = META_FIELDS.map(|(field, _)| {
            selector_text(selector, field).transpose().map(|text| {
                text.and_then(|t| {
                    parse_label_selector(&t).map_err(|e| Error::InvalidLabelSelector {
                        field,
                        reason: Box::new(e),
                    })
                })
            })
        });
        Selector { ids, meta }
    }

    /// Whether `obj` is selected. Errors name an invalid regex or label selector.
    pub fn matches(&self, obj: &Node) -> Result<bool, Error> {
        let name = obj.str_at(&["metadata", "name"]).unwrap_or("");
        let namespace = obj.str_at(&["metadata", "namespace"]).unwrap_or("");
        self.matches_as(obj, name, namespace)
    }

    /// Whether `obj` is selected when its name and namespace are `name` and `namespace` (an
    /// empty namespace is the object written without one).
    pub fn matches_as(&self, obj: &Node, name: &str, namespace: &str) -> Result<bool, Error> {
        let api_version = obj.str_at(&["apiVersion"]).unwrap_or("");
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let kind = obj.str_at(&["kind"]).unwrap_or("");
        let namespace = effective_namespace(namespace, group, version, kind);
        let values = [group, version, kind, name, namespace];
        for (pattern, value) in self.ids.iter().zip(values) {
            match pattern {
                Some(Err(e)) => return Err(e.clone()),
                Some(Ok(p)) if !p.is_match(value) => return Ok(false),
                _ => {}
            }
        }
        for (reqs, (_, meta)) in self.meta.iter().zip(META_FIELDS) {
            let reqs = match reqs {
                None => continue,
                Some(Err(e)) => return Err(e.clone()),
                Some(Ok(reqs)) => reqs,
            };
            let values = obj.path(&["metadata", meta]);
            let lookup = |k: &str| values.and_then(|m| m.get(k)).and_then(Node::scalar_text);
            if !reqs.iter().all(|r| r.matches(&lookup)) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The namespace kustomize compares against: `default` for a namespaced object written
/// without one, none for cluster-scoped kinds (by the same schema rule the namespace
/// transformer uses, so the two never disagree).
fn effective_namespace<'a>(namespace: &'a str, group: &str, version: &str, kind: &str) -> &'a str {
    match namespace {
        ns if !ns.is_empty() => ns,
        _ if crate::resource::is_cluster_scoped(group, version, kind) => "",
        _ => "default",
    }
}

fn selector_text(selector: &Node, field: &'static str) -> Result<Option<String>, Error> {
    match selector.get(field) {
        None => Ok(None),
        Some(n) if n.is_null() => Ok(None),
        Some(n) => match n.scalar_text() {
            Some(t) if t.is_empty() => Ok(None),
            Some(t) => Ok(Some(t)),
            None => Err(Error::SelectorNotString { field }),
        },
    }
}

#[derive(Debug, PartialEq)]
enum Op {
    Exists,
    NotExists,
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Greater(i64),
    Less(i64),
}

#[derive(Debug, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
}

impl Requirement {
    fn matches(&self, lookup: &dyn Fn(&str) -> Option<String>) -> bool {
        let v = lookup(&self.key);
        match &self.op {
            Op::Exists => v.is_some(),
            Op::NotExists => v.is_none(),
            Op::Equals(want) => v.as_deref() == Some(want),
            Op::NotEquals(want) => v.as_deref() != Some(want),
            Op::In(set) => v.is_some_and(|v| set.contains(&v)),
            Op::NotIn(set) => v.is_none_or(|v| !set.contains(&v)),
            Op::Greater(n) => v
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Op::Less(n) => v
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }
}

/// Splits on commas that are not inside `( )`.
fn split_requirements(text: &str) -> Result<Vec<&str>, Error> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1).ok_or(Error::UnbalancedClose)?,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(Error::UnbalancedOpen);
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn parse_label_selector(text: &str) -> Result<Vec<Requirement>, Error> {
    let mut reqs = Vec::new();
    for part in split_requirements(text)? {
        let part = part.trim();
        if part.is_empty() {
            return Err(Error::EmptyRequirement {
                selector: text.to_string(),
            });
        }
        reqs.push(parse_requirement(part)?);
    }
    Ok(reqs)
}

fn parse_requirement(part: &str) -> Result<Requirement, Error> {
    let valid_key = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
    };
    let req = |key: &str, op: Op| -> Result<Requirement, Error> {
        let key = key.trim();
        if valid_key(key) {
            Ok(Requirement {
                key: key.to_string(),
                op,
            })
        } else {
            Err(Error::InvalidKey {
                key: key.to_string(),
                requirement: part.to_string(),
            })
        }
    };
    if let Some(key) = part.strip_prefix('!') {
        return req(key, Op::NotExists);
    }
    for (sym, make) in [
        ("==", Op::Equals as fn(String) -> Op),
        ("!=", Op::NotEquals),
        ("=", Op::Equals),
    ] {
        if let Some((k, v)) = part.split_once(sym) {
            return req(k, make(v.trim().to_string()));
        }
    }
    for (sym, greater) in [(">", true), ("<", false)] {
        if let Some((k, v)) = part.split_once(sym) {
            let n: i64 = v.trim().parse().map_err(|_| Error::NotAnInteger {
                value: v.trim().to_string(),
                requirement: part.to_string(),
            })?;
            return req(k, if greater { Op::Greater(n) } else { Op::Less(n) });
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if let [key, rest] = words[..] {
        let rest = rest.trim_start();
        for (word, not) in [("notin", true), ("in", false)] {
            if let Some(set) = rest.strip_prefix(word) {
                let set = set.trim();
                let inner = set
                    .strip_prefix('(')
                    .and_then(|s| s.strip_suffix(')'))
                    .ok_or_else(|| Error::ExpectedValues {
                        word,
                        requirement: part.to_string(),
                    })?;
                let values: Vec<String> = inner
                    .split(',')
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                    .collect();
                return req(
                    key,
                    if not {
                        Op::NotIn(values)
                    } else {
                        Op::In(values)
                    },
                );
            }
        }
        return Err(Error::BadRequirement {
            requirement: part.to_string(),
        });
    }
    req(part, Op::Exists)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_stream};

    fn yaml(text: &str) -> Node {
        parse_stream("t.yaml", text, Schema::Kube).docs.remove(0)
    }

    const DEPLOY: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-frontend
  labels: {app: web, tier: frontend, replicas: '3'}
  annotations: {team: blue}
";

    #[test]
    fn selectors() {
        let cluster_role =
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n";
        let in_ns = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: prod}\n";
        let cases: &[(&str, &str, bool)] = &[
            (DEPLOY, "{}", true),
            (DEPLOY, "{kind: Deployment}", true),
            (DEPLOY, "{kind: Deploy}", false),
            (DEPLOY, "{kind: 'Deploy.*'}", true),
            (DEPLOY, "{kind: 'Deployment|StatefulSet'}", true),
            (DEPLOY, "{name: web}", false),
            (DEPLOY, "{name: 'web-.*'}", true),
            (DEPLOY, "{name: '.*front.*', kind: Deployment}", true),
            (DEPLOY, "{group: apps, version: v1}", true),
            (DEPLOY, "{group: ''}", true),
            (DEPLOY, "{group: core}", false),
            (DEPLOY, "{version: v1beta1}", false),
            (DEPLOY, "{namespace: default}", true),
            (DEPLOY, "{namespace: prod}", false),
            (in_ns, "{namespace: prod}", true),
            (in_ns, "{namespace: 'pr.*'}", true),
            (in_ns, "{version: v1, group: ''}", true),
            (cluster_role, "{namespace: default}", false),
            (DEPLOY, "{labelSelector: app=web}", true),
            (DEPLOY, "{labelSelector: app==web}", true),
            (DEPLOY, "{labelSelector: 'app=web,tier=frontend'}", true),
            (DEPLOY, "{labelSelector: 'app=web,tier=backend'}", false),
            (DEPLOY, "{labelSelector: app!=web}", false),
            (DEPLOY, "{labelSelector: missing!=x}", true),
            (
                DEPLOY,
                "{labelSelector: 'tier in (frontend, backend)'}",
                true,
            ),
            (DEPLOY, "{labelSelector: 'tier notin (frontend)'}", false),
            (DEPLOY, "{labelSelector: 'missing notin (a)'}", true),
            (DEPLOY, "{labelSelector: tier}", true),
            (DEPLOY, "{labelSelector: '!tier'}", false),
            (DEPLOY, "{labelSelector: '!missing'}", true),
            (DEPLOY, "{labelSelector: 'replicas>2'}", true),
            (DEPLOY, "{labelSelector: 'replicas<2'}", false),
            (DEPLOY, "{annotationSelector: team=blue}", true),
            (DEPLOY, "{annotationSelector: team=red}", false),
            (in_ns, "{labelSelector: app}", false),
        ];
        for (obj, sel, want) in cases {
            let got =
                selector_matches(&yaml(obj), &yaml(sel)).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(got, *want, "{sel} on {obj}");
        }
    }

    #[test]
    fn bad_selectors_are_errors() {
        for sel in [
            "{name: '('}",
            "{labelSelector: 'a in b'}",
            "{labelSelector: 'a,,b'}",
            "{labelSelector: 'a in (b'}",
            "{labelSelector: 'x y z'}",
            "{labelSelector: 'n>x'}",
            "{kind: [a]}",
        ] {
            assert!(
                selector_matches(&yaml(DEPLOY), &yaml(sel)).is_err(),
                "{sel}"
            );
        }
    }

    #[test]
    fn requirement_parsing() {
        assert_eq!(
            parse_label_selector("a in (x,y), !b").expect("parses"),
            vec![
                Requirement {
                    key: "a".into(),
                    op: Op::In(vec!["x".into(), "y".into()])
                },
                Requirement {
                    key: "b".into(),
                    op: Op::NotExists
                },
            ]
        );
    }
}
