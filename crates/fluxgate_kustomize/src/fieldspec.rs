//! kustomize's field specs: which field of which kinds a transformer touches, and the walk
//! that reaches (and with `create`, makes) those fields.

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Value};

use crate::resource::ResId;

/// One field spec: an optional group/version/kind filter, a `/`-separated path (sequences are
/// crossed wherever they are met; a `[]` suffix is accepted and ignored) and whether missing
/// fields are created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub path: String,
    pub create: bool,
}

impl FieldSpec {
    #[must_use]
    pub fn new(group: &str, kind: &str, path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            group: group.to_string(),
            version: String::new(),
            kind: kind.to_string(),
            path: path.to_string(),
            create,
        }
    }

    /// Reads a user-written field spec (`fields:` of `labels`, a transformer config).
    #[must_use]
    pub fn from_node(node: &Node) -> Option<FieldSpec> {
        let s = |k: &str| node.str_at(&[k]).unwrap_or("").to_string();
        let path = node.str_at(&["path"])?.to_string();
        Some(FieldSpec {
            group: s("group"),
            version: s("version"),
            kind: s("kind"),
            path,
            create: node.get("create").and_then(Node::as_bool).unwrap_or(false),
        })
    }

    #[must_use]
    pub fn applies_to(&self, id: &ResId) -> bool {
        (self.group.is_empty() || self.group == id.group)
            && (self.version.is_empty() || self.version == id.version)
            && (self.kind.is_empty() || self.kind == id.kind)
    }

    /// Calls `f` on every node at this spec's path in `obj` (creating it as `null` when
    /// missing and `create` is set).
    pub fn visit(&self, obj: &mut Node, loc: &Location, f: &mut dyn FnMut(&mut Node)) {
        let segs: Vec<&str> = split_path(&self.path);
        visit(obj, &segs, self.create, loc, f);
    }
}

/// Splits a field path on `/`, honouring `\/` as a literal slash, dropping `[]` suffixes.
fn split_path(path: &str) -> Vec<&str> {
    path.split('/').filter(|s| !s.is_empty()).collect()
}

/// Walks `segs` from `node`; see [`FieldSpec::visit`].
pub fn visit(
    node: &mut Node,
    segs: &[&str],
    create: bool,
    loc: &Location,
    f: &mut dyn FnMut(&mut Node),
) {
    let Some((first_raw, rest)) = segs.split_first() else {
        f(node);
        return;
    };
    // `name[]` marks a list: kustomize never creates one that is missing.
    let (first, is_list) = match first_raw.strip_suffix("[]") {
        Some(f) => (f, true),
        None => (*first_raw, false),
    };
    let first = &first;
    match &mut node.value {
        Value::Seq(items) => {
            for item in items {
                visit(item, segs, create, loc, f);
            }
        }
        Value::Map(map) => {
            if !map.contains_key(*first) {
                if !create || is_list {
                    return;
                }
                let fresh = if rest.is_empty() {
                    Node::null(loc.clone())
                } else {
                    Node::map(loc.clone())
                };
                map.insert((*first).to_string(), fresh);
            }
            if let Some(child) = map.get_mut(*first) {
                if child.is_null() && !rest.is_empty() {
                    if !create {
                        return;
                    }
                    *child = Node::map(loc.clone());
                }
                visit(child, rest, create, loc, f);
            }
        }
        _ => {}
    }
}

/// Turns a static table `(group, kind, path, create)` into field specs.
#[must_use]
pub fn table(rows: &[(&str, &str, &str, bool)]) -> Vec<FieldSpec> {
    rows.iter()
        .map(|(g, k, p, c)| FieldSpec::new(g, k, p, *c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_stream};

    #[test]
    fn visit_crosses_sequences_and_creates() {
        let mut n = parse_stream(
            "t.yaml",
            "spec:\n  containers:\n  - name: a\n  - name: b\n",
            Schema::Kube,
        )
        .docs
        .remove(0);
        let fs = FieldSpec::new("", "", "spec/containers[]/image", true);
        let loc = Location::new("k.yaml", 1, 1);
        fs.visit(&mut n, &loc, &mut |x| *x = Node::string("img", loc.clone()));
        let c = n.path(&["spec", "containers"]).unwrap().as_seq().unwrap();
        assert_eq!(c[1].str_at(&["image"]), Some("img"));
        let mut count = 0;
        FieldSpec::new("", "", "spec/missing/x", false).visit(&mut n, &loc, &mut |_| count += 1);
        assert_eq!(count, 0);
    }
}
