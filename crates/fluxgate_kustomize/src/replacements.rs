//! `replacements:`, kustomize's ReplacementTransformer: copy one field of a source object
//! (optionally one part of it, split at a delimiter) into fields of the selected targets.
//!
//! As in kustomize v5.5.0: the source must be exactly one object, selected on any of its ids
//! (current or earlier); `fieldPath` defaults to `metadata.name`; target paths are dotted,
//! with `[key=value]` list selectors, numeric list indexes and `*` for every list element;
//! a missing target field is an error unless `options.create`; a scalar target keeps its
//! type (`replicas: 1` stays an integer) and a created one reads the text as plain YAML.

use std::path::Path;

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Map, Node, Schema, Value, parse_stream, resolve_plain};

use crate::Error;
use crate::build::{Builder, seq, stringify_metadata_maps};
use crate::patch;
use crate::resource::{ResId, Resource};

/// Runs every replacement of a kustomization, in order, over `acc`.
pub fn run(b: &mut Builder<'_>, dir: &Path, kust: &Node, acc: &mut [Resource]) {
    for entry in seq(kust.get("replacements")).to_vec() {
        for r in load(b, dir, &entry) {
            if let Err(msg) = apply(&r, acc) {
                b.error(format!("replacements: {msg}"), Some(r.loc.clone()));
            }
        }
    }
}

/// One replacement with the location it was written at.
struct Replacement {
    node: Node,
    loc: Location,
}

fn load(b: &mut Builder<'_>, dir: &Path, entry: &Node) -> Vec<Replacement> {
    let Some(path) = entry.get("path") else {
        return vec![Replacement {
            node: entry.clone(),
            loc: entry.loc.clone(),
        }];
    };
    let Some(p) = path.as_str() else {
        b.error(
            "replacements: path must be a string",
            Some(path.loc.clone()),
        );
        return Vec::new();
    };
    let Some((rel, text)) = b.read_file(dir, p, &path.loc, "replacement file") else {
        return Vec::new();
    };
    let stream = parse_stream(&rel, &text, Schema::Kube);
    let failed = stream.has_errors();
    b.yaml(stream.diagnostics);
    if failed {
        return Vec::new();
    }
    let mut out = Vec::new();
    for doc in stream.docs {
        match &doc.value {
            Value::Seq(items) => out.extend(items.iter().map(|n| Replacement {
                node: n.clone(),
                loc: n.loc.clone(),
            })),
            Value::Map(_) => out.push(Replacement {
                loc: doc.loc.clone(),
                node: doc,
            }),
            _ => {}
        }
    }
    out
}

fn text(node: &Node, key: &str) -> String {
    node.get(key)
        .and_then(Node::scalar_text)
        .unwrap_or_default()
}

/// kustomize's `ResId.IsSelectedBy`: every field the selector sets is equal (namespaces with
/// `""` and `default` the same).
fn selected_by(id: &ResId, sel: &Node) -> bool {
    let want = |k: &str| text(sel, k);
    let ns = want("namespace");
    (want("group").is_empty() || want("group") == id.group)
        && (want("version").is_empty() || want("version") == id.version)
        && (want("kind").is_empty() || want("kind") == id.kind)
        && (want("name").is_empty() || want("name") == id.name)
        && (ns.is_empty()
            || id.ns_equals(&ResId {
                namespace: ns,
                ..ResId::default()
            }))
}

/// A selector's `labelSelector` and `annotationSelector` (a selector without them matches).
fn meta_selected(obj: &Node, sel: &Node) -> Result<bool, Error> {
    let mut only = Map::default();
    for k in ["labelSelector", "annotationSelector"] {
        if let Some(v) = sel.get(k) {
            only.insert(k.to_string(), v.clone());
        }
    }
    if only.is_empty() {
        return Ok(true);
    }
    patch::selector_matches(obj, &Node::new(Value::Map(Box::new(only)), sel.loc.clone()))
}

/// The options `delimiter` and `index` (kustomize's `FieldOptions`).
fn split_options(opts: Option<&Node>) -> Option<(String, i64)> {
    let opts = opts?;
    let delim = text(opts, "delimiter");
    if delim.is_empty() {
        return None;
    }
    Some((delim, opts.get("index").and_then(Node::as_i64).unwrap_or(0)))
}

fn apply(r: &Replacement, acc: &mut [Resource]) -> Result<(), Error> {
    let value = source_value(&r.node, acc)?;
    for target in seq(r.node.get("targets")) {
        let Some(select) = target.get("select") else {
            return Err(Error::TargetWithoutSelect);
        };
        let paths: Vec<String> = match target.get("fieldPaths").and_then(Node::as_seq) {
            Some(p) if !p.is_empty() => p.iter().filter_map(Node::scalar_text).collect(),
            _ => vec!["metadata.name".to_string()],
        };
        let rejects = seq(target.get("reject"));
        for res in acc.iter_mut() {
            if !meta_selected(&res.node, select)? {
                continue;
            }
            let mut rejected_by_meta = false;
            for rej in rejects {
                if (rej.get("labelSelector").is_some() || rej.get("annotationSelector").is_some())
                    && meta_selected(&res.node, rej)?
                {
                    rejected_by_meta = true;
                }
            }
            if rejected_by_meta {
                continue;
            }
            // kustomize tries the current id first, then the earlier ones: an id that is
            // selected and not rejected makes the object a target.
            let mut ids = vec![res.id()];
            ids.extend(res.prev_ids.iter().rev().cloned());
            let hit = ids.iter().any(|id| {
                selected_by(id, select)
                    && !rejects
                        .iter()
                        .any(|rej| has_id_fields(rej) && selected_by(id, rej))
            });
            if hit {
                copy_to_target(&mut res.node, &value, target, &paths)?;
                // Labels and annotations come out as strings, created ones too.
                stringify_metadata_maps(&mut res.node);
            }
        }
    }
    Ok(())
}

fn has_id_fields(sel: &Node) -> bool {
    ["group", "version", "kind", "name", "namespace"]
        .iter()
        .any(|k| !text(sel, k).is_empty())
}

fn source_value(r: &Node, acc: &[Resource]) -> Result<Node, Error> {
    let Some(source) = r.get("source") else {
        return Err(Error::NoSource);
    };
    let mut found: Option<&Resource> = None;
    for res in acc {
        if res.all_ids().iter().any(|id| selected_by(id, source)) {
            if found.is_some() {
                return Err(Error::AmbiguousSource {
                    source_id: describe(source),
                });
            }
            found = Some(res);
        }
    }
    let Some(res) = found else {
        return Err(Error::SourceNotFound {
            source_id: describe(source),
        });
    };
    let field_path = match text(source, "fieldPath") {
        p if p.is_empty() => "metadata.name".to_string(),
        p => p,
    };
    let parts = split_path(&field_path);
    let mut hits = Vec::new();
    find(&res.node, &parts, &mut hits);
    let value = hits
        .into_iter()
        .next()
        .filter(|n| !is_nil_or_empty(n))
        .cloned()
        .ok_or_else(|| Error::SourceFieldMissing {
            field_path: field_path.clone(),
            source_id: describe(source),
        })?;
    let Some((delim, index)) = split_options(source.get("options")) else {
        return Ok(value);
    };
    let whole = value.scalar_text().unwrap_or_default();
    let parts: Vec<&str> = whole.split(delim.as_str()).collect();
    let part = usize::try_from(index)
        .ok()
        .and_then(|i| parts.get(i))
        .ok_or_else(|| Error::OptionsIndexOutOfBounds {
            index,
            value: whole.clone(),
        })?;
    Ok(Node::string(*part, value.loc.clone()))
}

fn is_nil_or_empty(n: &Node) -> bool {
    match &n.value {
        Value::Null => true,
        Value::Map(m) => m.is_empty(),
        Value::Seq(s) => s.is_empty(),
        _ => false,
    }
}

fn describe(sel: &Node) -> String {
    let parts: Vec<String> = ["group", "version", "kind", "name", "namespace"]
        .iter()
        .filter_map(|k| {
            let v = text(sel, k);
            (!v.is_empty()).then(|| format!("{k}={v}"))
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// kustomize's smarter path splitter: dots separate parts, except inside `[...]` and when
/// escaped (`data.emqx\.conf` is the key `emqx.conf` of `data`; kyaml's `PathSplitter` drops
/// the backslash before a delimiter).
fn split_path(path: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'.') => {
                cur.push('.');
                chars.next();
            }
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            '.' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    parts.push(cur);
    parts
}

/// A path part.
enum Part<'a> {
    Field(&'a str),
    /// `[key=value]`: list elements whose `key` is `value`.
    Match(&'a str, &'a str),
    Index(usize),
    All,
}

fn part(p: &str) -> Part<'_> {
    if p == "*" {
        return Part::All;
    }
    if let Some(inner) = p.strip_prefix('[').and_then(|s| s.strip_suffix(']'))
        && let Some((k, v)) = inner.split_once('=')
    {
        return Part::Match(k, v);
    }
    if let Ok(i) = p.parse::<usize>() {
        return Part::Index(i);
    }
    Part::Field(p)
}

fn element_matches(el: &Node, key: &str, want: &str) -> bool {
    el.get(key)
        .and_then(Node::scalar_text)
        .is_some_and(|v| v == want)
}

/// Every node under `parts`, read-only (the source side).
fn find<'a>(node: &'a Node, parts: &[String], out: &mut Vec<&'a Node>) {
    let Some((first, rest)) = parts.split_first() else {
        out.push(node);
        return;
    };
    match (part(first), &node.value) {
        (Part::Field(f), Value::Map(m)) => {
            if let Some(n) = m.get(f) {
                find(n, rest, out);
            }
        }
        (Part::Match(k, v), Value::Seq(items)) => {
            for el in items.iter().filter(|el| element_matches(el, k, v)) {
                find(el, rest, out);
            }
        }
        (Part::Index(i), Value::Seq(items)) => {
            if let Some(el) = items.get(i) {
                find(el, rest, out);
            }
        }
        (Part::All, Value::Seq(items)) => {
            for el in items {
                find(el, rest, out);
            }
        }
        _ => {}
    }
}

/// Visits every node under `parts`, creating missing fields and list elements when `create`
/// (a created leaf is `Value::Null` until set). Returns how many nodes were visited.
fn visit_mut(
    node: &mut Node,
    parts: &[String],
    create: bool,
    loc: &Location,
    f: &mut dyn FnMut(&mut Node, bool) -> Result<(), Error>,
    created: bool,
) -> Result<usize, Error> {
    let Some((first, rest)) = parts.split_first() else {
        f(node, created)?;
        return Ok(1);
    };
    let next_is_list = rest
        .first()
        .is_some_and(|p| !matches!(part(p), Part::Field(_)));
    let empty = |loc: &Location| {
        if rest.is_empty() {
            Node::null(loc.clone())
        } else if next_is_list {
            Node::new(Value::Seq(Vec::new()), loc.clone())
        } else {
            Node::map(loc.clone())
        }
    };
    let mut n = 0;
    match (part(first), &mut node.value) {
        (Part::Field(name), Value::Map(m)) => {
            let mut made = false;
            if !m.contains_key(name) {
                if !create {
                    return Ok(0);
                }
                m.insert(name.to_string(), empty(loc));
                made = true;
            }
            if let Some(child) = m.get_mut(name) {
                n += visit_mut(child, rest, create, loc, f, made)?;
            }
        }
        (Part::Match(k, v), Value::Seq(items)) => {
            let mut any = false;
            for el in items.iter_mut().filter(|el| element_matches(el, k, v)) {
                any = true;
                n += visit_mut(el, rest, create, loc, f, false)?;
            }
            if !any && create {
                let mut el = Map::default();
                el.insert(k.to_string(), Node::string(v, loc.clone()));
                items.push(Node::new(Value::Map(Box::new(el)), loc.clone()));
                if let Some(el) = items.last_mut() {
                    n += visit_mut(el, rest, create, loc, f, false)?;
                }
            }
        }
        (Part::Index(i), Value::Seq(items)) => {
            if let Some(el) = items.get_mut(i) {
                n += visit_mut(el, rest, create, loc, f, false)?;
            }
        }
        (Part::All, Value::Seq(items)) => {
            for el in items {
                n += visit_mut(el, rest, create, loc, f, false)?;
            }
        }
        _ => {}
    }
    Ok(n)
}

fn copy_to_target(
    obj: &mut Node,
    value: &Node,
    target: &Node,
    paths: &[String],
) -> Result<(), Error> {
    let opts = target.get("options");
    let create = opts
        .and_then(|o| o.get("create"))
        .and_then(Node::as_bool)
        .unwrap_or(false);
    let split = split_options(opts);
    for path in paths {
        let parts = split_path(path);
        let mut set =
            |field: &mut Node, created: bool| set_field(field, value, split.as_ref(), created);
        let n = visit_mut(obj, &parts, create, &value.loc, &mut set, false)?;
        if n == 0 {
            let path = path.clone();
            return Err(if create {
                Error::TargetFieldNotCreated { path }
            } else {
                Error::TargetFieldNotFound { path }
            });
        }
    }
    Ok(())
}

/// kustomize's `setFieldValue`: with a delimiter, the value replaces one part of the target
/// (a negative index prepends, one past the end appends); a scalar target keeps its type.
fn set_field(
    field: &mut Node,
    value: &Node,
    split: Option<&(String, i64)>,
    created: bool,
) -> Result<(), Error> {
    let is_scalar = !matches!(field.value, Value::Map(_) | Value::Seq(_));
    let mut value = value.clone();
    if let Some((delim, index)) = split {
        if !is_scalar {
            return Err(Error::DelimiterOnCollection);
        }
        let current = field.scalar_text().unwrap_or_default();
        let mut parts: Vec<String> = current.split(delim.as_str()).map(str::to_string).collect();
        let v = value.scalar_text().unwrap_or_default();
        match usize::try_from(*index) {
            Err(_) => parts.insert(0, v),
            Ok(i) if i >= parts.len() => parts.push(v),
            Ok(i) => parts[i] = v,
        }
        value = Node::string(parts.join(delim), value.loc.clone());
    }
    if !is_scalar || matches!(value.value, Value::Map(_) | Value::Seq(_)) {
        *field = value;
        return Ok(());
    }
    let text = value.scalar_text().unwrap_or_default();
    let new = if created {
        resolve_plain(&text, Schema::Kube)
    } else {
        // Only the text is copied: a string stays a string, a number stays a number.
        match (&field.value, resolve_plain(&text, Schema::Kube)) {
            (Value::Int(_), v @ Value::Int(_))
            | (Value::Float(_), v @ (Value::Float(_) | Value::Int(_)))
            | (Value::Bool(_), v @ Value::Bool(_)) => v,
            (Value::Null, _) => value.value.clone(),
            _ => Value::String(text),
        }
    };
    *field = Node::new(new, value.loc.clone());
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn escaped_dots_are_part_of_a_key() {
        assert_eq!(
            super::split_path(r"data.emqx\.conf"),
            vec!["data".to_string(), "emqx.conf".to_string()]
        );
        assert_eq!(
            super::split_path(r"spec.containers.[name=a\.b].image"),
            vec!["spec", "containers", "[name=a.b]", "image"]
        );
    }

    use super::*;

    #[test]
    fn paths_split_outside_brackets() {
        assert_eq!(
            split_path("spec.containers.[name=a.b].image"),
            vec!["spec", "containers", "[name=a.b]", "image"]
        );
    }

    fn doc(text: &str) -> Node {
        parse_stream("t.yaml", text, Schema::Kube).docs.remove(0)
    }

    #[test]
    fn scalar_targets_keep_their_type() {
        let v = Node::string("3", Location::file("s.yaml"));
        let mut int = doc("1");
        set_field(&mut int, &v, None, false).unwrap();
        assert_eq!(int.value, Value::Int(3));
        let mut s = doc("\"0\"");
        set_field(&mut s, &v, None, false).unwrap();
        assert_eq!(s.value, Value::String("3".into()));
        let mut created = Node::null(Location::file("k.yaml"));
        set_field(&mut created, &v, None, true).unwrap();
        assert_eq!(created.value, Value::Int(3));
    }

    #[test]
    fn delimited_parts() {
        let v = Node::string("x", Location::file("s.yaml"));
        for (index, want) in [(1, "a.x.c"), (-1, "x.a.b.c"), (5, "a.b.c.x")] {
            let mut t = doc("a.b.c");
            set_field(&mut t, &v, Some(&(".".into(), index)), false).unwrap();
            assert_eq!(t.as_str(), Some(want));
        }
    }
}
