//! `vars:`, kustomize's legacy `$(VAR)` references, resolved once at the end of the build
//! (after name references, so a var sees the final names).
//!
//! As kustomize v5.5.0 does it: the vars of every kustomization in the build count (a name
//! declared twice is an error); each var's `objref` must match exactly one object on any of
//! its ids, group, version, kind and name compared exactly (an `objref` without `apiVersion`
//! matches no built-in object) and the namespace when given; `fieldref.fieldpath` defaults
//! to `metadata.name`. `$(VAR)` is replaced only in kustomize's var-reference fields
//! (container command, args, env values and mount paths, Ingress hosts, Service ports, NFS
//! servers, labels and annotations), with Kubernetes' expansion rules: `$$` is a literal `$`,
//! an unknown var stays as written, and a field that is exactly one reference takes the
//! var's value with its type.

use std::collections::HashMap;

use fluxgate_diagnostics::Location;

use crate::problem::{Problem, ProblemKind};
use fluxgate_yaml::{Node, Value};

use crate::Error;
use crate::build::stringify_metadata_maps;
use crate::fieldspec::FieldSpec;
use crate::resource::{ResId, Resource};

/// Where kustomize's default configuration lets `$(VAR)` appear.
fn var_reference_specs() -> Vec<FieldSpec> {
    const CONTAINER_FIELDS: &[&str] = &[
        "containers/args",
        "containers/command",
        "containers/env/value",
        "containers/volumeMounts/mountPath",
        "initContainers/args",
        "initContainers/command",
        "initContainers/env/value",
        "initContainers/volumeMounts/mountPath",
        "volumes/nfs/server",
    ];
    let pod_specs: &[(&str, &str)] = &[
        ("CronJob", "spec/jobTemplate/spec/template/spec/"),
        ("DaemonSet", "spec/template/spec/"),
        ("Deployment", "spec/template/spec/"),
        ("Job", "spec/template/spec/"),
        ("Pod", "spec/"),
        ("ReplicaSet", "spec/template/spec/"),
        ("StatefulSet", "spec/template/spec/"),
    ];
    let mut specs = Vec::new();
    for (kind, prefix) in pod_specs {
        for field in CONTAINER_FIELDS {
            // A StatefulSet's NFS server is read from its claim templates instead.
            if *kind == "StatefulSet" && *field == "volumes/nfs/server" {
                continue;
            }
            specs.push(FieldSpec::new("", kind, &format!("{prefix}{field}"), false));
        }
    }
    for (kind, path) in [
        ("StatefulSet", "spec/volumeClaimTemplates/spec/nfs/server"),
        ("Ingress", "spec/rules/host"),
        ("Ingress", "spec/tls/hosts"),
        ("Ingress", "spec/tls/secretName"),
        ("Service", "spec/ports/port"),
        ("Service", "spec/ports/targetPort"),
        ("PersistentVolume", "spec/nfs/server"),
        ("", "metadata/labels"),
        ("", "metadata/annotations"),
    ] {
        specs.push(FieldSpec::new("", kind, path, false));
    }
    specs
}

/// Resolves every var and replaces the references in `resources`.
pub fn resolve(
    vars: &[Node],
    extra_specs: &[FieldSpec],
    resources: &mut [Resource],
    diags: &mut Vec<Problem>,
) {
    if vars.is_empty() {
        return;
    }
    let mut values: HashMap<String, Node> = HashMap::new();
    for var in vars {
        let Some(name) = var.str_at(&["name"]) else {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                "vars: a var needs a name",
                Some(var.loc.clone()),
            ));
            continue;
        };
        if values.contains_key(name) {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("vars: var {name:?} is declared more than once"),
                Some(var.loc.clone()),
            ));
            continue;
        }
        match value_of(var, resources) {
            Ok(v) => {
                values.insert(name.to_string(), v);
            }
            Err(msg) => diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("vars: var {name:?} {msg}"),
                Some(var.loc.clone()),
            )),
        }
    }
    let mut specs = var_reference_specs();
    specs.extend(extra_specs.iter().cloned());
    for r in resources.iter_mut() {
        let id = r.id();
        let loc = r.node.loc.clone();
        for spec in specs.iter().filter(|s| s.applies_to(&id)) {
            spec.visit(&mut r.node, &loc, &mut |n| replace_in(n, &values));
        }
        stringify_metadata_maps(&mut r.node);
    }
}

fn replace_in(node: &mut Node, values: &HashMap<String, Node>) {
    match &mut node.value {
        Value::String(s) => {
            if let Some(new) = expand(s, values, &node.loc) {
                *node = new;
            }
        }
        Value::Seq(items) => {
            for item in items {
                if matches!(item.value, Value::String(_)) {
                    replace_in(item, values);
                }
            }
        }
        Value::Map(m) => {
            for v in m.values_mut() {
                if matches!(v.value, Value::String(_)) {
                    replace_in(v, values);
                }
            }
        }
        _ => {}
    }
}

/// Kubernetes' `$(VAR)` expansion; `None` when the text is unchanged.
fn expand(s: &str, values: &HashMap<String, Node>, own: &Location) -> Option<Node> {
    if !s.contains('$') {
        return None;
    }
    // A field that is one reference and nothing else takes the var's typed value.
    if let Some(name) = s.strip_prefix("$(").and_then(|r| r.strip_suffix(')'))
        && !name.contains(')')
        && let Some(v) = values.get(name)
    {
        return Some(v.clone());
    }
    let mut out = String::with_capacity(s.len());
    let mut loc = None;
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match after.chars().next() {
            Some('$') => {
                out.push('$');
                rest = &after[1..];
            }
            Some('(') => {
                if let Some(end) = after.find(')') {
                    let name = &after[1..end];
                    if let Some(v) = values.get(name) {
                        out.push_str(&v.scalar_text().unwrap_or_default());
                        loc = Some(v.loc.clone());
                    } else {
                        out.push_str("$(");
                        out.push_str(name);
                        out.push(')');
                    }
                    rest = &after[end + 1..];
                } else {
                    out.push_str("$(");
                    rest = &after[1..];
                }
            }
            Some(c) => {
                out.push('$');
                out.push(c);
                rest = &after[c.len_utf8()..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    // The text came from the var's source field when a var was used.
    (out != s).then(|| Node::string(out, loc.unwrap_or_else(|| own.clone())))
}

fn value_of(var: &Node, resources: &[Resource]) -> Result<Node, Error> {
    let objref = var.get("objref").ok_or(Error::NoObjref)?;
    let s = |k: &str| objref.str_at(&[k]).unwrap_or("").to_string();
    let (group, version) = match objref.str_at(&["apiVersion"]).filter(|a| !a.is_empty()) {
        Some(api) => match api.rsplit_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api.to_string()),
        },
        None => (s("group"), s("version")),
    };
    let want = ResId {
        group,
        version,
        kind: s("kind"),
        name: s("name"),
        namespace: s("namespace"),
    };
    let matches = |id: &ResId| {
        id.group == want.group
            && id.version == want.version
            && id.kind == want.kind
            && id.name == want.name
            && (want.namespace.is_empty() || id.ns_equals(&want))
    };
    let found: Vec<&Resource> = resources
        .iter()
        .filter(|r| r.all_ids().iter().any(matches))
        .collect();
    let res = match found.as_slice() {
        [one] => *one,
        [] => return Err(Error::VarUnmapped),
        many => {
            return Err(Error::VarAmbiguous { count: many.len() });
        }
    };
    let path = var
        .path(&["fieldref", "fieldpath"])
        .and_then(Node::as_str)
        .filter(|p| !p.is_empty())
        .unwrap_or("metadata.name");
    let value = lookup(&res.node, path).ok_or_else(|| Error::VarFieldNotFound {
        path: path.to_string(),
    })?;
    match value.value {
        Value::Map(_) | Value::Seq(_) => Err(Error::VarFieldNotScalar {
            path: path.to_string(),
        }),
        _ => Ok(value.clone()),
    }
}

/// A dotted field path with `[n]` indexes and `[key=value]` list selectors.
fn lookup<'a>(node: &'a Node, path: &str) -> Option<&'a Node> {
    let mut cur = node;
    for part in path.split('.') {
        let (field, brackets) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        for sel in brackets.split('[').filter(|s| !s.is_empty()) {
            let sel = sel.strip_suffix(']')?;
            let items = cur.as_seq()?;
            cur = match sel.split_once('=') {
                Some((k, v)) => items
                    .iter()
                    .find(|el| el.get(k).and_then(Node::scalar_text).as_deref() == Some(v))?,
                None => items.get(sel.parse::<usize>().ok()?)?,
            };
        }
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals() -> HashMap<String, Node> {
        let loc = Location::file("s.yaml");
        HashMap::from([
            ("NAME".to_string(), Node::string("dev-db", loc.clone())),
            ("PORT".to_string(), Node::new(Value::Int(5432), loc)),
        ])
    }

    #[test]
    fn expansion_follows_kubernetes_rules() {
        let v = vals();
        let own = Location::file("d.yaml");
        let text = |s: &str| expand(s, &v, &own).map(|n| n.scalar_text().unwrap_or_default());
        assert_eq!(
            text("--db=$(NAME):$(PORT)").as_deref(),
            Some("--db=dev-db:5432")
        );
        assert_eq!(text("$$(NAME)").as_deref(), Some("$(NAME)"));
        assert_eq!(text("$(UNDEFINED)"), None);
        assert_eq!(text("cost $5"), None);
        assert_eq!(text("$(NAME"), None);
        assert_eq!(
            expand("$(PORT)", &v, &own).map(|n| n.value),
            Some(Value::Int(5432))
        );
    }

    #[test]
    fn field_paths_with_indexes() {
        let n = fluxgate_yaml::parse_stream(
            "t.yaml",
            "spec:\n  ports:\n  - name: a\n    port: 1\n  - name: b\n    port: 2\n",
            fluxgate_yaml::Schema::Kube,
        )
        .docs
        .remove(0);
        assert_eq!(
            lookup(&n, "spec.ports[1].port").and_then(Node::as_i64),
            Some(2)
        );
        assert_eq!(
            lookup(&n, "spec.ports[name=a].port").and_then(Node::as_i64),
            Some(1)
        );
    }
}
