//! Strategic merge patch, as kustomize v5.5.0 applies it (kyaml's `merge2` walker with the
//! patch's list elements placed first).
//!
//! The walk visits the target ("dest") and the patch ("origin") side by side:
//! - maps merge key by key (new keys are appended in sorted order); a `null` in the patch
//!   deletes the key; `$patch: delete` removes the map, `$patch: replace` swaps in the patch's
//!   map, `$patch: merge` is the default; the directive is removed from the output;
//! - lists the schema marks as merged ([`super::merge_keys`]) merge element by element,
//!   matched by their merge keys: the patch's elements come first, in the patch's order, then
//!   the target's untouched ones; lists of scalars merged as sets (finalizers) are unioned;
//! - every other list, and every list of a kind the built-in schema does not know (CRDs), is
//!   replaced by the patch's;
//! - scalars are replaced.
//!
//! kyaml implements no other directive: `$setElementOrder/<f>`, `$retainKeys` and
//! `$deleteFromPrimitiveList/<f>` are copied into the output as ordinary keys, exactly as
//! `kubectl kustomize` prints them (checked against kustomize v5.5.0). The list merge follows
//! kyaml's element-setting steps literally, because its corner cases (an element without a
//! merge key empties the list, `$patch: replace` on an element keeps the target's element)
//! are what `kubectl kustomize` prints.

use fluxgate_yaml::{Map, Node, Value, format_float};

use super::list;
use super::merge_keys::{self, Schema};
use crate::Error;

/// Applies a strategic merge `patch` to `target` (a whole object). When the patch deletes
/// the object (`$patch: delete` at its top), `target` becomes a null node; callers check
/// [`super::is_delete_patch`] first to drop the object instead.
pub fn strategic_merge(target: &mut Node, patch: &Node) -> Result<(), Error> {
    let schema = merge_keys::for_object(
        target.str_at(&["apiVersion"]).unwrap_or(""),
        target.str_at(&["kind"]).unwrap_or(""),
    );
    drop_implicit_nulls(target, schema.as_ref());
    let mut path = Vec::new();
    let out = walk(
        Some(target.clone()),
        Some(patch.clone()),
        schema.as_ref(),
        &mut path,
    )?;
    match out.node {
        Some(n) => *target = n,
        None => target.value = Value::Null,
    }
    Ok(())
}

/// kyaml's merge walks the target's mappings, and the elements of the lists it merges, and
/// leaves out every field whose value was written as nothing (`key:`); an explicit `null` or
/// `~` stays, and so does everything in lists it replaces (checked with `kubectl kustomize`).
fn drop_implicit_nulls(node: &mut Node, schema: Option<&Schema>) {
    let Value::Map(m) = &mut node.value else {
        return;
    };
    m.retain(|_, v| !(v.implicit_null && v.is_null()));
    for (k, v) in m.iter_mut() {
        let field = merge_keys::field(schema, k);
        match &mut v.value {
            Value::Map(_) => drop_implicit_nulls(v, field.as_ref()),
            Value::Seq(items) if matches!(field, Some(Schema::MergedList { .. })) => {
                let elem = merge_keys::elements(field.as_ref());
                for item in items {
                    drop_implicit_nulls(item, elem.as_ref());
                }
            }
            _ => {}
        }
    }
}

/// What one step of the walk produced: the value to set (none: remove it), and whether it
/// is the target's own node merged in place (which matters when list elements are re-set).
pub(super) struct Walked {
    pub(super) node: Option<Node>,
    pub(super) in_place: bool,
}

impl Walked {
    fn cleared() -> Walked {
        Walked {
            node: None,
            in_place: false,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Map,
    Seq,
    Scalar,
}

pub(super) fn kind_of(n: &Node) -> Kind {
    match n.value {
        Value::Map(_) => Kind::Map,
        Value::Seq(_) => Kind::Seq,
        _ => Kind::Scalar,
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Map => "MappingNode",
        Kind::Seq => "SequenceNode",
        Kind::Scalar => "ScalarNode",
    }
}

fn is_missing_or_null(n: Option<&Node>) -> bool {
    n.is_none_or(Node::is_null)
}

pub(super) fn is_empty(n: Option<&Node>) -> bool {
    match n.map(|n| &n.value) {
        None | Some(Value::Null) => true,
        Some(Value::Map(m)) => m.is_empty(),
        Some(Value::Seq(s)) => s.is_empty(),
        Some(_) => false,
    }
}

pub(super) fn is_empty_map(n: &Node) -> bool {
    matches!(&n.value, Value::Map(m) if m.is_empty())
}

/// The text kyaml compares list keys by: the scalar as written (collections have none).
pub(super) fn raw(n: &Node) -> String {
    match &n.value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format_float(*f),
        Value::String(s) => s.clone(),
        Value::Seq(_) | Value::Map(_) => String::new(),
    }
}

pub(super) fn wrong_kind(want: Kind, got: &Node, path: &[String]) -> Error {
    Error::WrongNodeKind {
        path: display_path(path),
        want: kind_name(want),
        got: kind_name(kind_of(got)),
    }
}

fn display_path(path: &[String]) -> String {
    if path.is_empty() {
        "the top".to_string()
    } else {
        path.join(".")
    }
}

pub(super) fn walk(
    dest: Option<Node>,
    origin: Option<Node>,
    schema: Option<&Schema>,
    path: &mut Vec<String>,
) -> Result<Walked, Error> {
    let kind = [dest.as_ref(), origin.as_ref()]
        .into_iter()
        .find(|n| !is_empty(*n))
        .flatten()
        .map(kind_of);
    if let Some(kind) = kind {
        for n in [dest.as_ref(), origin.as_ref()].into_iter().flatten() {
            if !n.is_null() && kind_of(n) != kind {
                return Err(wrong_kind(kind, n, path));
            }
        }
    }
    match kind {
        None | Some(Kind::Map) => walk_map(dest, origin, schema, path),
        Some(Kind::Seq) => {
            if matches!(schema, Some(Schema::MergedList { .. })) {
                walk_merged_list(dest, origin, schema, path)
            } else {
                Ok(replace_or_keep(dest, origin))
            }
        }
        Some(Kind::Scalar) => Ok(replace_or_keep(dest, origin)),
    }
}

/// Scalars and replaced lists: the patch's value when it has one.
fn replace_or_keep(dest: Option<Node>, origin: Option<Node>) -> Walked {
    match origin {
        Some(o) => Walked {
            node: Some(o),
            in_place: false,
        },
        None => Walked {
            node: dest,
            in_place: true,
        },
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Directive {
    Merge,
    Replace,
    Delete,
}

/// Reads (and removes) a `$patch` directive from a patch node.
fn directive(origin: Option<&mut Node>, path: &[String]) -> Result<Directive, Error> {
    let Some(origin) = origin else {
        return Ok(Directive::Merge);
    };
    match &mut origin.value {
        Value::Seq(elems) => list_directive(elems, path),
        Value::Map(m) => {
            let Some(v) = m.get("$patch") else {
                return Ok(Directive::Merge);
            };
            let d = match raw(v).as_str() {
                "delete" => Directive::Delete,
                "replace" => Directive::Replace,
                "merge" => Directive::Merge,
                other => {
                    return Err(Error::UnknownPatchStrategy {
                        strategy: other.to_string(),
                        path: display_path(path),
                    });
                }
            };
            m.shift_remove("$patch");
            Ok(d)
        }
        _ => Err(Error::NoPatchStrategy {
            value: raw(origin),
            path: display_path(path),
        }),
    }
}

/// A list's directive: an element that is only `$patch: <directive>`; it is removed (with
/// kyaml's element setter, which also drops empty elements).
fn list_directive(elems: &mut Vec<Node>, path: &[String]) -> Result<Directive, Error> {
    let Some(m) = elems
        .iter()
        .find_map(|e| e.as_map().filter(|m| m.contains_key("$patch")))
    else {
        return Ok(Directive::Merge);
    };
    if m.len() != 1 {
        return Ok(Directive::Merge);
    }
    let v = m.get("$patch").map(raw).unwrap_or_default();
    let d = match v.as_str() {
        "delete" => Directive::Delete,
        "replace" => Directive::Replace,
        "merge" => Directive::Merge,
        other => {
            return Err(Error::UnknownPatchStrategy {
                strategy: other.to_string(),
                path: display_path(path),
            });
        }
    };
    list::set_element(elems, None, &["$patch".to_string()], &[v], path)?;
    Ok(d)
}

fn walk_map(
    dest: Option<Node>,
    mut origin: Option<Node>,
    schema: Option<&Schema>,
    path: &mut Vec<String>,
) -> Result<Walked, Error> {
    let (merged, in_place) = if is_missing_or_null(dest.as_ref()) {
        // Adding: the patch's subtree, minus what its own directives and nulls remove.
        let d = directive(origin.as_mut(), path).unwrap_or(Directive::Merge);
        if d == Directive::Delete {
            return Ok(Walked::cleared());
        }
        (origin.clone(), false)
    } else {
        if origin.as_ref().is_some_and(Node::is_null) {
            return Ok(Walked::cleared());
        }
        match directive(origin.as_mut(), path)? {
            Directive::Delete => return Ok(Walked::cleared()),
            Directive::Replace => (origin.clone(), false),
            Directive::Merge => (dest, true),
        }
    };
    let Some(mut merged) = merged else {
        return Ok(Walked::cleared());
    };
    let mut keys: Vec<String> = Vec::new();
    for n in [Some(&merged), origin.as_ref()].into_iter().flatten() {
        if let Value::Map(m) = &n.value {
            keys.extend(m.keys().cloned());
        }
    }
    keys.sort();
    keys.dedup();
    if let Value::Map(m) = &mut merged.value {
        for key in keys {
            let field_schema = merge_keys::field(schema, &key);
            let dest_field = m
                .get_mut(&key)
                .map(|slot| std::mem::replace(slot, Node::null(slot.loc.clone())));
            let origin_field = origin.as_ref().and_then(|o| o.get(&key)).cloned();
            if origin_field.is_none() && dest_field.as_ref().is_some_and(Node::is_null) {
                // kyaml keeps a null the target wrote explicitly when the patch says nothing.
                if let (Some(slot), Some(d)) = (m.get_mut(&key), dest_field) {
                    *slot = d;
                }
                continue;
            }
            path.push(key.clone());
            let out = walk(dest_field, origin_field, field_schema.as_ref(), path)?;
            path.pop();
            set_field(m, key, out.node);
        }
    }
    Ok(Walked {
        node: Some(merged),
        in_place,
    })
}

/// kyaml's `FieldSetter`: a missing or null value removes the key, an existing key keeps its
/// place, a new key is appended.
fn set_field(m: &mut Map, key: String, value: Option<Node>) {
    match value {
        Some(v) if !v.is_null() => {
            if let Some(slot) = m.get_mut(&key) {
                *slot = v;
            } else {
                m.insert(key, v);
            }
        }
        _ => {
            m.shift_remove(&key);
        }
    }
}

fn walk_merged_list(
    dest: Option<Node>,
    origin: Option<Node>,
    schema: Option<&Schema>,
    path: &mut Vec<String>,
) -> Result<Walked, Error> {
    let mut origin = origin;
    let (list, in_place) = if is_missing_or_null(dest.as_ref()) {
        (origin.clone(), false)
    } else if origin.as_ref().is_some_and(Node::is_null) {
        return Ok(Walked::cleared());
    } else {
        match directive(origin.as_mut(), path)? {
            Directive::Delete => return Ok(Walked::cleared()),
            Directive::Replace => (origin.clone(), false),
            Directive::Merge => (dest, true),
        }
    };
    let Some(mut list) = list else {
        return Ok(Walked::cleared());
    };
    let Schema::MergedList { keys, .. } = schema.expect("walk_merged_list needs a list schema")
    else {
        return Ok(replace_or_keep(Some(list), origin));
    };
    let elem_schema = merge_keys::elements(schema);
    let origin_elems: Option<&[Node]> = origin.as_ref().and_then(Node::as_seq);
    let Value::Seq(dest_elems) = std::mem::replace(&mut list.value, Value::Null) else {
        return Ok(Walked {
            node: Some(list),
            in_place,
        });
    };
    let merged = list::merge(dest_elems, origin_elems, keys, elem_schema.as_ref(), path)?;
    list.value = Value::Seq(merged);
    Ok(Walked {
        node: Some(list),
        in_place,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema as YamlSchema, parse_stream};

    fn yaml(file: &str, text: &str) -> Node {
        parse_stream(file, text, YamlSchema::Kube).docs.remove(0)
    }

    const HEAD: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n";
    const CRD_HEAD: &str = "apiVersion: example.com/v1\nkind: Foo\nmetadata:\n  name: web\n";

    fn merge(head: &str, base: &str, patch: &str) -> Result<Node, Error> {
        let mut target = yaml("base.yaml", &format!("{head}{base}"));
        strategic_merge(&mut target, &yaml("patch.yaml", &format!("{head}{patch}")))?;
        Ok(target)
    }

    /// (name, head, base, patch, expected): expectations are what `kubectl kustomize`
    /// (kustomize v5.5.0) printed for the same inputs.
    const CASES: &[(&str, &str, &str, &str, &str)] = &[
        (
            "scalars replace, maps merge, null deletes",
            HEAD,
            "spec:\n  replicas: 1\n  paused: true\n  selector: {matchLabels: {a: b}}\n",
            "spec:\n  replicas: 3\n  paused: null\n  selector: {matchLabels: {c: d}}\n",
            "spec:\n  replicas: 3\n  selector: {matchLabels: {a: b, c: d}}\n",
        ),
        (
            "containers merge by name, patch elements first",
            HEAD,
            "spec:\n  template:\n    spec:\n      containers:\n      - {name: side, image: busybox}\n      - {name: app, image: nginx, args: [a, b]}\n",
            "spec:\n  template:\n    spec:\n      containers:\n      - {name: app, image: nginx2, args: [c]}\n      - {name: new, image: x}\n",
            "spec:\n  template:\n    spec:\n      containers:\n      - {name: app, image: nginx2, args: [c]}\n      - {name: new, image: x}\n      - {name: side, image: busybox}\n",
        ),
        (
            "env by name, ports by containerPort and protocol",
            HEAD,
            "spec:\n  template:\n    spec:\n      containers:\n      - name: app\n        env: [{name: A, value: '1'}, {name: B, value: '2'}]\n        ports: [{containerPort: 80, protocol: TCP}, {containerPort: 81}]\n",
            "spec:\n  template:\n    spec:\n      containers:\n      - name: app\n        env: [{name: B, value: '3'}, {name: C, value: '4'}]\n        ports: [{containerPort: 80, protocol: UDP}, {containerPort: 82}]\n",
            "spec:\n  template:\n    spec:\n      containers:\n      - name: app\n        env: [{name: B, value: '3'}, {name: C, value: '4'}, {name: A, value: '1'}]\n        ports: [{containerPort: 80, protocol: UDP}, {containerPort: 82}, {containerPort: 80, protocol: TCP}, {containerPort: 81}]\n",
        ),
        (
            "$patch delete and replace on elements and maps",
            HEAD,
            "metadata:\n  labels: {a: '1', b: '2'}\nspec:\n  template:\n    spec:\n      volumes:\n      - {name: v1, emptyDir: {}}\n      - {name: v2, configMap: {name: cm}}\n      containers:\n      - {name: side, image: busybox, args: [a, b]}\n      - {name: app, image: nginx}\n      - {name: third, image: t}\n",
            "metadata:\n  labels: {$patch: replace, c: '3'}\nspec:\n  template:\n    spec:\n      volumes:\n      - {name: v2, $patch: delete}\n      - name: v3\n        secret: {secretName: s, items: null, $patch: replace}\n      containers:\n      - {name: third, $patch: replace, image: t2}\n      - name: side\n        args: [c]\n        newthing:\n          a: {$patch: delete, b: 1}\n          c: [1, null, 2]\n          d: {e: null}\n",
            "metadata:\n  labels: {c: '3'}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: third, image: t}\n      - name: side\n        image: busybox\n        args: [c]\n        newthing:\n          c: [1, null, 2]\n          d: {}\n      - {name: app, image: nginx}\n      volumes:\n      - {name: v3, secret: {secretName: s}}\n      - {name: v1, emptyDir: {}}\n",
        ),
        (
            "finalizers union, patch values first",
            HEAD,
            "  finalizers: [a, b]\n",
            "  finalizers: [c, a]\n",
            "  finalizers: [c, a, b]\n",
        ),
        (
            "lists of unknown kinds are replaced",
            CRD_HEAD,
            "  finalizers: [a, b]\nspec:\n  items: [{name: a, v: 1}, {name: b, v: 2}]\n",
            "  finalizers: [c]\nspec:\n  items: [{name: a, v: 5}]\n",
            "  finalizers: [c]\nspec:\n  items: [{name: a, v: 5}]\n",
        ),
        (
            "fields newer than kustomize's schema are replaced",
            HEAD,
            "spec:\n  template:\n    spec:\n      schedulingGates: [{name: g1}]\n",
            "spec:\n  template:\n    spec:\n      schedulingGates: [{name: g2}]\n",
            "spec:\n  template:\n    spec:\n      schedulingGates: [{name: g2}]\n",
        ),
        (
            "an element without its merge key empties the list",
            HEAD,
            "spec:\n  template:\n    spec:\n      containers: [{name: a, image: a}, {name: b, image: b}]\n",
            "spec:\n  template:\n    spec:\n      containers: [{image: c}]\n",
            "spec:\n  template:\n    spec:\n      containers: []\n",
        ),
        (
            "a target element without a key survives alone",
            HEAD,
            "spec:\n  template:\n    spec:\n      containers: [{name: a, image: a}, {image: x}, {name: b, image: b}]\n      volumes: [{name: v1}, {name: v2}]\n",
            "spec:\n  template:\n    spec:\n      containers: [{name: a, image: a2}]\n      volumes: [{$patch: replace}, {name: v3}]\n",
            "spec:\n  template:\n    spec:\n      containers: [{image: x}]\n      volumes: [{name: v3}]\n",
        ),
        (
            "explicit nulls and empty elements of the target",
            HEAD,
            "spec:\n  nul: null\n  emptymap: {}\n  template:\n    spec:\n      containers:\n      - {name: a, image: a, nul3: null, env: []}\n      - {}\n",
            "spec:\n  template:\n    spec:\n      containers: [{name: a, image: a2}]\n",
            "spec:\n  nul: null\n  emptymap: {}\n  template:\n    spec:\n      containers:\n      - {name: a, image: a2, nul3: null, env: []}\n",
        ),
        (
            "other directives are copied as keys",
            HEAD,
            "  finalizers: [a, b]\nspec:\n  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1}}\n",
            "  $deleteFromPrimitiveList/finalizers: [a]\nspec:\n  strategy: {$retainKeys: [type], type: Recreate}\n",
            "  $deleteFromPrimitiveList/finalizers: [a]\n  finalizers: [a, b]\nspec:\n  strategy: {$retainKeys: [type], type: Recreate, rollingUpdate: {maxSurge: 1}}\n",
        ),
        (
            "a null list or map deletes it",
            HEAD,
            "spec:\n  template:\n    spec:\n      containers: [{name: a}]\n      volumes: [{name: v}]\n      nodeSelector: {a: b}\n",
            "spec:\n  template:\n    spec:\n      containers: null\n      nodeSelector: null\n",
            "spec:\n  template:\n    spec:\n      volumes: [{name: v}]\n",
        ),
        (
            "cronjob containers are reached through jobTemplate",
            "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: web\n",
            "spec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers: [{name: a, image: a}, {name: b, image: b}]\n",
            "spec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers: [{name: b, image: b2}]\n",
            "spec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers: [{name: b, image: b2}, {name: a, image: a}]\n",
        ),
        (
            "service ports by port and protocol",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n",
            "spec:\n  ports: [{port: 80, targetPort: 8080}, {port: 443}]\n",
            "spec:\n  ports: [{port: 443, targetPort: 8443}]\n",
            "spec:\n  ports: [{port: 443, targetPort: 8443}, {port: 80, targetPort: 8080}]\n",
        ),
    ];

    #[test]
    fn list_directives() {
        let base = "spec:\n  template:\n    spec:\n      containers: [{name: a}, {name: b}]\n";
        let cases = [
            ("[{name: c}, {$patch: delete}]", None),
            (
                "[{$patch: merge}, {name: c}]",
                Some(r#"[{"name":"c"},{"name":"a"},{"name":"b"}]"#),
            ),
            ("[{name: c}, {$patch: replace}]", Some(r#"[{"name":"c"}]"#)),
        ];
        for (patch, want) in cases {
            let patch = format!("spec:\n  template:\n    spec:\n      containers: {patch}\n");
            let got = merge(HEAD, base, &patch).expect("merges");
            let got = got.path(&["spec", "template", "spec", "containers"]);
            let want = want.map(|w| serde_json::from_str::<serde_json::Value>(w).expect("json"));
            assert_eq!(got.map(Node::to_json), want, "{patch}");
        }
    }

    #[test]
    fn merges_like_kustomize() {
        for (name, head, base, patch, want) in CASES {
            let got = merge(head, base, patch).unwrap_or_else(|e| panic!("{name}: {e}"));
            let want = yaml("want.yaml", &format!("{head}{want}"));
            assert_eq!(
                got.to_json(),
                want.to_json(),
                "{name}\n got: {}\nwant: {}",
                got.to_json(),
                want.to_json()
            );
        }
    }

    #[test]
    fn values_from_the_patch_keep_its_location() {
        let got = merge(
            HEAD,
            "spec:\n  replicas: 1\n  template:\n    spec:\n      containers: [{name: a, image: a}]\n",
            "spec:\n  template:\n    spec:\n      containers:\n      - name: a\n        image: b\n",
        )
        .expect("merges");
        let c = &got
            .path(&["spec", "template", "spec", "containers"])
            .expect("list")
            .as_seq()
            .expect("seq")[0];
        let image = c.get("image").expect("image");
        assert_eq!((&*image.loc.file, image.loc.line), ("patch.yaml", 10));
        let replicas = got.path(&["spec", "replicas"]).expect("replicas");
        assert_eq!(&*replicas.loc.file, "base.yaml");
    }

    #[test]
    fn whole_object_delete_and_errors() {
        let deleted = merge(HEAD, "spec: {replicas: 1}\n", "$patch: delete\n").expect("ok");
        assert!(deleted.is_null());
        let cases = [
            (
                "spec: {replicas: 1}\n",
                "spec: {replicas: {a: 1}}\n",
                "wrong node kind at spec.replicas",
            ),
            (
                "spec: {a: {b: 1}}\n",
                "spec: {a: {$patch: frob}}\n",
                "unknown patch strategy 'frob'",
            ),
            ("spec: {a: [1]}\n", "spec: {a: {b: 1}}\n", "wrong node kind"),
        ];
        for (base, patch, want) in cases {
            let err = merge(HEAD, base, patch).expect_err(patch).to_string();
            assert!(err.contains(want), "{patch}: {err}");
        }
    }
}
