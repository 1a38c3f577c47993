//! Loading and dispatching patches: `patches:` (a file or inline text, with or without a
//! target; strategic merge or JSON 6902 decided from the content as kustomize does), and the
//! legacy `patchesStrategicMerge` / `patchesJson6902`. The merging itself is in `patch`.

use std::path::Path;

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Map, Node, Schema, Value, parse_stream};

use crate::build::{Builder, seq};
use crate::patch;
use crate::resource::{ResId, Resource};

/// A patch's documents, with locations in the file (or kustomization line) they came from.
struct Loaded {
    docs: Vec<Node>,
    loc: Location,
}

fn load(
    b: &mut Builder<'_>,
    dir: &Path,
    entry: &Node,
    inline: Option<&Node>,
    path: Option<&Node>,
) -> Option<Loaded> {
    if let Some(p) = path.and_then(Node::as_str) {
        let loc = path.map_or_else(|| entry.loc.clone(), |n| n.loc.clone());
        let (rel, text) = b.read_file(dir, p, &loc, "patch")?;
        let stream = parse_stream(&rel, &text, Schema::Kube);
        let failed = stream.has_errors();
        b.yaml(stream.diagnostics);
        if failed {
            return None;
        }
        // kustomize v5.5.0 takes a patch file with nothing in it for an empty JSON patch
        // (fine with a target, an error without one) and one with only comments or blank
        // lines for neither kind of patch (checked with `kubectl kustomize`).
        if stream.docs.iter().all(Node::is_null) {
            let has_target = entry.get("target").is_some_and(|t| !t.is_null());
            if text.is_empty() && has_target {
                return Some(Loaded {
                    docs: Vec::new(),
                    loc: Location::new(rel, 1, 1),
                });
            }
            let why = if text.is_empty() {
                "is empty: an empty patch is a JSON patch, which needs a target"
            } else {
                "holds only comments or blank lines: kustomize reads it as neither a strategic merge nor a JSON patch"
            };
            b.error(format!("patch {p:?} {why}"), Some(loc));
            return None;
        }
        return Some(Loaded {
            docs: stream.docs,
            loc: Location::new(rel, 1, 1),
        });
    }
    let node = inline?;
    let text = node.as_str()?;
    let offset = inline_offset(b, node);
    let stream = parse_stream(&node.loc.file, text, Schema::Kube);
    let failed = stream.has_errors();
    for mut d in stream.diagnostics {
        if let Some(l) = &mut d.location {
            l.line += offset.0;
            l.column += offset.1;
        }
        b.yaml(vec![d]);
    }
    if failed {
        return None;
    }
    let mut docs = stream.docs;
    for d in &mut docs {
        shift(d, offset);
    }
    Some(Loaded {
        docs,
        loc: node.loc.clone(),
    })
}

/// Where an inline patch's text sits in the kustomization, as line and column offsets for the
/// nodes parsed from it. A scalar's location is where its text starts: a block scalar's
/// first content line at its indentation (every line of it shares that indentation), a
/// quoted scalar's opening quote.
fn inline_offset(b: &Builder<'_>, node: &Node) -> (u32, u32) {
    let (line, column) = (node.loc.line, node.loc.column);
    let quoted = b
        .texts
        .get(node.loc.file.as_ref())
        .and_then(|t| t.lines().nth(line.saturating_sub(1) as usize))
        .and_then(|l| l.get(column.saturating_sub(1) as usize..))
        .is_some_and(|rest| rest.starts_with('"') || rest.starts_with('\''));
    (
        line.saturating_sub(1),
        column.saturating_sub(u32::from(!quoted)),
    )
}

fn shift(node: &mut Node, (lines, columns): (u32, u32)) {
    node.loc.line += lines;
    node.loc.column += columns;
    match &mut node.value {
        Value::Seq(s) => s.iter_mut().for_each(|n| shift(n, (lines, columns))),
        Value::Map(m) => m.values_mut().for_each(|n| shift(n, (lines, columns))),
        _ => {}
    }
}

/// `patches:`.
pub fn patches(b: &mut Builder<'_>, dir: &Path, kust: &Node, acc: &mut Vec<Resource>) {
    for entry in seq(kust.get("patches")).to_vec() {
        let Some(loaded) = load(b, dir, &entry, entry.get("patch"), entry.get("path")) else {
            if entry.get("patch").is_none() && entry.get("path").is_none() {
                b.error("a patch needs `path` or `patch`", Some(entry.loc.clone()));
            }
            continue;
        };
        let target = entry.get("target").filter(|t| !t.is_null());
        let options = entry.get("options");
        let allow_name = options
            .and_then(|o| o.get("allowNameChange"))
            .and_then(Node::as_bool)
            .unwrap_or(false);
        let allow_kind = options
            .and_then(|o| o.get("allowKindChange"))
            .and_then(Node::as_bool)
            .unwrap_or(false);
        if let Some(ops) = loaded.docs.first().filter(|d| d.as_seq().is_some()) {
            let Some(target) = target else {
                b.error("a JSON 6902 patch needs a target", Some(entry.loc.clone()));
                continue;
            };
            apply_6902(b, acc, target, ops, &loaded.loc);
            continue;
        }
        for doc in loaded
            .docs
            .iter()
            .filter(|d| d.as_map().is_some_and(|m| !m.is_empty()))
        {
            match target {
                Some(t) => {
                    let selected = select(b, acc, t, &entry.loc);
                    apply_smp_to(b, acc, &selected, doc, allow_name, allow_kind);
                }
                None => apply_smp_by_id(b, acc, doc),
            }
        }
    }
}

/// `patchesStrategicMerge:`: file paths or inline YAML.
pub fn legacy_strategic_merge(
    b: &mut Builder<'_>,
    dir: &Path,
    kust: &Node,
    acc: &mut Vec<Resource>,
) {
    for entry in seq(kust.get("patchesStrategicMerge")).to_vec() {
        let Some(text) = entry.as_str() else { continue };
        let is_inline =
            text.contains('\n') || (!b.fs.is_file(&dir.join(text)) && text.contains(':'));
        let loaded = if is_inline {
            load(b, dir, &entry, Some(&entry), None)
        } else {
            load(b, dir, &entry, None, Some(&entry))
        };
        let Some(loaded) = loaded else { continue };
        for doc in loaded
            .docs
            .iter()
            .filter(|d| d.as_map().is_some_and(|m| !m.is_empty()))
        {
            apply_smp_by_id(b, acc, doc);
        }
    }
}

/// `patchesJson6902:`.
pub fn legacy_json6902(b: &mut Builder<'_>, dir: &Path, kust: &Node, acc: &mut [Resource]) {
    for entry in seq(kust.get("patchesJson6902")).to_vec() {
        let Some(loaded) = load(b, dir, &entry, entry.get("patch"), entry.get("path")) else {
            continue;
        };
        let Some(target) = entry.get("target") else {
            b.error(
                "patchesJson6902 entry without target",
                Some(entry.loc.clone()),
            );
            continue;
        };
        let Some(ops) = loaded.docs.first() else {
            continue;
        };
        apply_6902(b, acc, target, ops, &loaded.loc);
    }
}

fn apply_6902(
    b: &mut Builder<'_>,
    acc: &mut [Resource],
    target: &Node,
    ops: &Node,
    loc: &Location,
) {
    if ops.as_seq().is_none() {
        b.error(
            "a JSON 6902 patch must be a list of operations",
            Some(ops.loc.clone()),
        );
        return;
    }
    let selected = select(b, acc, target, &target.loc);
    for i in selected {
        let before = acc[i].id();
        let leaves = crate::resource::leaves(&acc[i].node);
        if let Err(e) = patch::json6902(&mut acc[i].node, ops) {
            b.error(
                format!("JSON 6902 patch on {}: {e}", before.display()),
                Some(loc.clone()),
            );
            continue;
        }
        let found = crate::resource::overrides_between(&leaves, &acc[i].node);
        acc[i].overrides.extend(found);
        note_rename(&mut acc[i], before);
    }
}

fn note_rename(r: &mut Resource, before: ResId) {
    let after = r.id();
    if after != before {
        r.prev_ids.push(before);
    }
}

/// Indices of the resources a `target:` selects. Names and namespaces match the original or
/// the current ones, as kustomize's selector does.
fn select(b: &mut Builder<'_>, acc: &[Resource], target: &Node, loc: &Location) -> Vec<usize> {
    let selector = patch::Selector::compile(target);
    let mut out = Vec::new();
    for (i, r) in acc.iter().enumerate() {
        let cur = r.id();
        let org = r.org_id();
        let mut matched = false;
        for name in dedup2(&org.name, &cur.name) {
            for ns in dedup2(&org.namespace, &cur.namespace) {
                if matched {
                    break;
                }
                match selector.matches_as(&r.node, name, ns) {
                    Ok(m) => matched = m,
                    Err(e) => {
                        b.error(format!("invalid patch target: {e}"), Some(loc.clone()));
                        return Vec::new();
                    }
                }
            }
        }
        if matched {
            out.push(i);
        }
    }
    out
}

fn dedup2<'s>(a: &'s str, b: &'s str) -> Vec<&'s str> {
    if a == b { vec![a] } else { vec![a, b] }
}

/// A strategic merge patch with no target applies to the object with its id.
fn apply_smp_by_id(b: &mut Builder<'_>, acc: &mut Vec<Resource>, doc: &Node) {
    let id = ResId::of(doc);
    let matches: Vec<usize> = acc
        .iter()
        .enumerate()
        .filter(|(_, r)| r.matches_any_id(&id))
        .map(|(i, _)| i)
        .collect();
    match matches.len() {
        0 if b.skipped_remote => b.warn(
            format!(
                "patch target {} not found in the resources; it may come from the remote \
                 resource that was not fetched, so the patch is not checked",
                id.display()
            ),
            Some(doc.loc.clone()),
        ),
        0 => b.error(
            format!("patch target {} not found in the resources", id.display()),
            Some(doc.loc.clone()),
        ),
        1 => apply_smp_to(b, acc, &matches, doc, false, false),
        _ => b.error(
            format!(
                "patch target {} matches more than one resource",
                id.display()
            ),
            Some(doc.loc.clone()),
        ),
    }
}

fn apply_smp_to(
    b: &mut Builder<'_>,
    acc: &mut Vec<Resource>,
    selected: &[usize],
    doc: &Node,
    allow_name: bool,
    allow_kind: bool,
) {
    let mut deleted = Vec::new();
    for &i in selected {
        let before = acc[i].id();
        let mut p = doc.clone();
        if let Some(m) = p.as_map_mut() {
            let loc = m
                .get("metadata")
                .map_or_else(|| doc.loc.clone(), |n| n.loc.clone());
            if !allow_kind {
                for k in ["apiVersion", "kind"] {
                    match acc[i].node.get(k) {
                        Some(v) => m.insert(k.into(), v.clone()),
                        None => m.shift_remove(k),
                    };
                }
            }
            let meta = m
                .entry("metadata".to_string())
                .or_insert_with(|| Node::map(loc.clone()));
            if meta.is_null() {
                *meta = Node::map(loc.clone());
            }
            if let Some(mm) = meta.as_map_mut() {
                let allow_this_name = allow_name && mm.contains_key("name");
                if !allow_this_name {
                    match acc[i].node.path(&["metadata", "name"]) {
                        Some(v) => mm.insert("name".into(), v.clone()),
                        None => mm.shift_remove("name"),
                    };
                }
                match acc[i].node.path(&["metadata", "namespace"]) {
                    Some(v) => mm.insert("namespace".into(), v.clone()),
                    None => mm.shift_remove("namespace"),
                };
            }
        }
        let leaves = crate::resource::leaves(&acc[i].node);
        if let Err(e) = patch::strategic_merge(&mut acc[i].node, &p) {
            b.error(
                format!("strategic merge patch on {}: {e}", before.display()),
                Some(doc.loc.clone()),
            );
            continue;
        }
        if acc[i].node.is_null() || acc[i].node.as_map().is_some_and(Map::is_empty) {
            deleted.push(i);
            continue;
        }
        let found = crate::resource::overrides_between(&leaves, &acc[i].node);
        acc[i].overrides.extend(found);
        note_rename(&mut acc[i], before);
    }
    deleted.sort_unstable();
    for i in deleted.into_iter().rev() {
        acc.remove(i);
    }
}
