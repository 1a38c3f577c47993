//! The walk of one object against one schema. Both kinds of schema are JSON Schema in
//! `serde_json` form: the built-in definitions (with `$ref` into the embedded `$defs`) and a
//! CRD's `openAPIV3Schema`. What differs is what the API server does with a field the schema
//! does not declare ([`Mode`]): a built-in kind's strict definition rejects it, a CRD prunes it.
//!
//! The walk is deliberately lenient where the API server is: a `null` is always accepted (the
//! built-in types are all nullable, and a CRD prunes a null it does not allow), `format` is not
//! checked (`int32`, `date-time`, `byte` are annotations to the decoder), an integral float
//! passes for an integer, and `oneOf` passes when any branch matches (the exclusivity that
//! some CRDs express with it is not judged).

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Value};
use serde_json::{Map as JsonMap, Value as Json};

use crate::builtin::Defs;

/// How undeclared fields are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A built-in kind: strict definitions (`additionalProperties: false`) reject unknown
    /// fields, as server-side apply does ("field not declared in schema").
    Builtin,
    /// A CRD's structural schema: a field it does not declare is pruned (dropped) unless
    /// `x-kubernetes-preserve-unknown-fields` keeps it.
    Structural,
}

/// What is wrong with a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ViolationKind {
    /// A field the schema does not declare.
    UnknownField,
    /// A value of the wrong JSON type.
    WrongType,
    /// A required field that is absent.
    MissingRequired,
    /// A value outside what the schema allows: an enum, a bound, a pattern, no `oneOf` branch.
    NotAllowed,
}

/// One schema violation, at the node that carries it.
#[derive(Clone, Debug)]
pub struct Violation {
    pub kind: ViolationKind,
    /// The field path in the object, `spec.template.spec.containers[0].imgae`.
    pub path: String,
    /// Where the offending value was written (for a missing field: the mapping that lacks it).
    pub loc: Location,
    /// The field name, for an unknown or missing field (to find the key's own line).
    pub key: Option<String>,
    /// What is wrong, without the value (values may be secrets).
    pub message: String,
    /// For an unknown field: the declared field names at that place (for a did-you-mean).
    pub known: Vec<String>,
}

/// Walks nodes against schemas.
pub(crate) struct Walker<'a> {
    /// `$defs` for `$ref` (the built-in definitions; CRD schemas have no `$ref`).
    pub defs: &'a Defs,
    pub mode: Mode,
    pub out: Vec<Violation>,
    /// Inside a `oneOf`/`anyOf` branch: unknown fields do not decide a branch.
    trial: bool,
}

/// Depth guard against self-referencing definitions (JSONSchemaProps refers to itself).
const MAX_DEPTH: usize = 200;

impl<'a> Walker<'a> {
    pub fn new(defs: &'a Defs, mode: Mode) -> Walker<'a> {
        Walker {
            defs,
            mode,
            out: Vec::new(),
            trial: false,
        }
    }

    fn resolve(&self, mut schema: &'a Json) -> &'a Json {
        for _ in 0..16 {
            match schema
                .as_object()
                .and_then(|o| kw(o, "$ref"))
                .and_then(Json::as_str)
            {
                Some(r) => match self.defs.get(r.rsplit('/').next().unwrap_or(r)) {
                    Some(s) => schema = s,
                    None => return &Json::Null,
                },
                None => return schema,
            }
        }
        schema
    }

    fn push(
        &mut self,
        kind: ViolationKind,
        path: &str,
        node: &Node,
        key: Option<&str>,
        message: String,
    ) {
        self.out.push(Violation {
            kind,
            path: path.to_string(),
            loc: node.loc.clone(),
            key: key.map(str::to_string),
            message,
            known: Vec::new(),
        });
    }

    /// Checks `node` at `path` against `schema`.
    pub fn check(&mut self, schema: &'a Json, node: &Node, path: &str, depth: usize) {
        if depth > MAX_DEPTH || node.is_null() {
            return;
        }
        let schema = self.resolve(schema);
        let Some(obj) = schema.as_object() else {
            return;
        };
        if let Some(all) = kw(obj, "allOf").and_then(Json::as_array) {
            for s in all {
                self.check(s, node, path, depth + 1);
            }
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(branches) = kw(obj, key).and_then(Json::as_array)
                && !branches.is_empty()
                && !branches.iter().any(|b| self.matches(b, node, depth))
            {
                let message = match branch_types(self, branches) {
                    Some(types) => format!("must be {}, found {}", types, describe(node)),
                    None => format!(
                        "matches none of the {} forms the schema allows",
                        branches.len()
                    ),
                };
                let kind = if branch_types(self, branches).is_some() {
                    ViolationKind::WrongType
                } else {
                    ViolationKind::NotAllowed
                };
                self.push(kind, path, node, None, message);
                return;
            }
        }
        if !type_ok(obj, node) {
            let want = declared_types(obj).unwrap_or_default();
            self.push(
                ViolationKind::WrongType,
                path,
                node,
                None,
                format!("must be {}, found {}", want, describe(node)),
            );
            return;
        }
        if let Some(allowed) = kw(obj, "enum").and_then(Json::as_array)
            && is_scalar(node)
            && !allowed.iter().any(|a| scalar_eq(a, node))
        {
            let shown: Vec<String> = allowed
                .iter()
                .filter(|a| !a.is_null())
                .take(12)
                .map(Json::to_string)
                .collect();
            self.push(
                ViolationKind::NotAllowed,
                path,
                node,
                None,
                format!("must be one of {}", shown.join(", ")),
            );
            return;
        }
        self.bounds(obj, node, path);
        match &node.value {
            Value::Map(map) => self.mapping(obj, map, node, path, depth),
            Value::Seq(items) => {
                if let Some(item) = kw(obj, "items") {
                    for (i, n) in items.iter().enumerate() {
                        self.check(item, n, &format!("{path}[{i}]"), depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// Checks a custom resource: `apiVersion`, `kind` and `metadata` at the root belong to the
    /// API server (metadata is checked against `object_meta`), the rest to the CRD's schema.
    pub fn check_root(&mut self, schema: &'a Json, node: &Node, object_meta: &'a Json) {
        let Some(map) = node.as_map() else {
            return self.check(schema, node, "", 0);
        };
        if let Some(meta) = map.get("metadata") {
            self.check(object_meta, meta, "metadata", 1);
        }
        let mut rest = Node::map(node.loc.clone());
        if let Some(m) = rest.as_map_mut() {
            for (k, v) in map {
                if !matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        self.check(schema, &rest, "", 0);
    }

    fn mapping(
        &mut self,
        obj: &'a JsonMap<String, Json>,
        map: &fluxgate_yaml::Map,
        node: &Node,
        path: &str,
        depth: usize,
    ) {
        let props = kw(obj, "properties").and_then(Json::as_object);
        let extra = kw(obj, "additionalProperties");
        let preserve = flag(obj, "x-kubernetes-preserve-unknown-fields");
        let embedded = flag(obj, "x-kubernetes-embedded-resource");
        for (k, v) in map {
            let child = join(path, k);
            if let Some(s) = props.and_then(|p| kw(p, k)) {
                self.check(s, v, &child, depth + 1);
                continue;
            }
            match extra {
                Some(s @ Json::Object(_)) => {
                    self.check(s, v, &child, depth + 1);
                    continue;
                }
                Some(Json::Bool(true)) => continue,
                _ => {}
            }
            if preserve || (embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata")) {
                continue;
            }
            let unknown = match self.mode {
                // Only a strict definition closes an object; the few open ones (RawExtension,
                // FieldsV1) take anything.
                Mode::Builtin => extra == Some(&Json::Bool(false)),
                Mode::Structural => true,
            };
            if unknown && !self.trial {
                let mut known: Vec<String> = props
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                known.sort();
                self.out.push(Violation {
                    kind: ViolationKind::UnknownField,
                    path: child,
                    loc: v.loc.clone(),
                    key: Some(k.clone()),
                    message: "is not a field of the schema".to_string(),
                    known,
                });
            }
        }
        if let Some(required) = kw(obj, "required").and_then(Json::as_array) {
            for r in required.iter().filter_map(Json::as_str) {
                if map.contains_key(r) {
                    continue;
                }
                // The API server applies a CRD's defaults before it validates: a required
                // field with a default is filled in.
                let defaulted = props
                    .and_then(|p| p.get(r))
                    .map(|s| self.resolve(s))
                    .is_some_and(|s| s.get("default").is_some());
                if defaulted {
                    continue;
                }
                self.push(
                    ViolationKind::MissingRequired,
                    &join(path, r),
                    node,
                    Some(r),
                    "is required but not set".to_string(),
                );
            }
        }
    }

    /// The structural value constraints a CRD may declare.
    #[allow(clippy::cast_precision_loss)] // lengths and bounds are far below 2^52
    fn bounds(&mut self, obj: &JsonMap<String, Json>, node: &Node, path: &str) {
        let num = |k: &str| kw(obj, k).and_then(Json::as_f64);
        let fail = |this: &mut Self, message: String| {
            this.push(ViolationKind::NotAllowed, path, node, None, message);
        };
        match &node.value {
            Value::String(s) => {
                let len = s.chars().count() as f64;
                if let Some(min) = num("minLength").filter(|m| len < *m) {
                    fail(self, format!("must be at least {min} characters long"));
                }
                if let Some(max) = num("maxLength").filter(|m| len > *m) {
                    fail(self, format!("must be at most {max} characters long"));
                }
                if let Some(p) = kw(obj, "pattern").and_then(Json::as_str)
                    && let Some(re) = crate::pattern(p)
                    && !re.is_match(s)
                {
                    fail(self, format!("must match the pattern `{p}`"));
                }
            }
            Value::Int(_) | Value::Float(_) => {
                let x = match node.value {
                    Value::Int(i) => i as f64,
                    Value::Float(f) => f,
                    _ => return,
                };
                let excl = |k: &str| kw(obj, k).and_then(Json::as_bool).unwrap_or(false);
                if let Some(min) = num("minimum")
                    && (x < min || (excl("exclusiveMinimum") && x <= min))
                {
                    fail(self, format!("must be at least {min}"));
                }
                if let Some(max) = num("maximum")
                    && (x > max || (excl("exclusiveMaximum") && x >= max))
                {
                    fail(self, format!("must be at most {max}"));
                }
            }
            Value::Seq(items) => {
                let n = items.len() as f64;
                if let Some(min) = num("minItems").filter(|m| n < *m) {
                    fail(self, format!("must have at least {min} items"));
                }
                if let Some(max) = num("maxItems").filter(|m| n > *m) {
                    fail(self, format!("must have at most {max} items"));
                }
            }
            _ => {}
        }
    }

    /// Whether `node` matches `schema` (a `oneOf`/`anyOf` branch): no violation other than
    /// unknown fields, which a branch of a structural schema cannot declare.
    fn matches(&self, schema: &'a Json, node: &Node, depth: usize) -> bool {
        let mut w = Walker {
            defs: self.defs,
            mode: self.mode,
            out: Vec::new(),
            trial: true,
        };
        w.check(schema, node, "", depth + 1);
        w.out.is_empty()
    }
}

/// When every branch only names types: "a string or an integer".
fn branch_types(w: &Walker<'_>, branches: &[Json]) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    for b in branches {
        let b = w.resolve(b).as_object()?;
        if b.keys().any(|k| k != "type" && k != "format") {
            return None;
        }
        names.push(declared_types(b)?);
    }
    Some(names.join(" or "))
}

fn flag(obj: &JsonMap<String, Json>, key: &str) -> bool {
    kw(obj, key).and_then(Json::as_bool).unwrap_or(false)
}

fn join(path: &str, key: &str) -> String {
    let simple = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), simple) {
        (true, true) => key.to_string(),
        (false, true) => {
            let mut out = String::with_capacity(path.len() + key.len() + 1);
            out.push_str(path);
            out.push('.');
            out.push_str(key);
            out
        }
        (_, false) => format!("{path}[{}]", serde_json::Value::from(key)),
    }
}

/// `obj[key]`. Schema objects hold a handful of keywords, and comparing them is cheaper than
/// hashing the key with the hasher of serde_json's ordered map (SipHash, which cannot be
/// chosen); a larger object (`properties` of a big kind) is looked up by hash.
fn kw<'j>(obj: &'j JsonMap<String, Json>, key: &str) -> Option<&'j Json> {
    if obj.len() <= 8 {
        obj.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        obj.get(key)
    }
}

/// The JSON types the schema allows, without `null` (always accepted).
fn types_of(obj: &JsonMap<String, Json>) -> Option<Vec<&str>> {
    if flag(obj, "x-kubernetes-int-or-string") {
        return Some(vec!["integer", "string"]);
    }
    match kw(obj, "type")? {
        Json::String(t) => Some(vec![t.as_str()]),
        Json::Array(ts) => Some(
            ts.iter()
                .filter_map(Json::as_str)
                .filter(|t| *t != "null")
                .collect(),
        ),
        _ => None,
    }
}

fn declared_types(obj: &JsonMap<String, Json>) -> Option<String> {
    let types = types_of(obj)?;
    let names: Vec<&str> = types
        .iter()
        .map(|t| match *t {
            "object" => "a mapping",
            "array" => "a list",
            "string" => "a string",
            "integer" => "an integer",
            "number" => "a number",
            "boolean" => "a boolean",
            other => other,
        })
        .collect();
    Some(names.join(" or "))
}

fn type_ok(obj: &JsonMap<String, Json>, node: &Node) -> bool {
    let Some(types) = types_of(obj) else {
        return true;
    };
    if types.is_empty() {
        return true;
    }
    types.iter().any(|t| match (*t, &node.value) {
        ("object", Value::Map(_))
        | ("array", Value::Seq(_))
        | ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("integer" | "number", Value::Int(_))
        | ("number", Value::Float(_)) => true,
        // JSON has one number type: `2.0` decodes into an integer field.
        ("integer", Value::Float(f)) => f.fract() == 0.0,
        _ => false,
    })
}

/// The type of a node, as a message names it (never its value: it may be a secret).
pub(crate) fn describe(node: &Node) -> &'static str {
    match node.value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Int(_) => "an integer",
        Value::Float(_) => "a number",
        Value::String(_) => "a string",
        Value::Seq(_) => "a list",
        Value::Map(_) => "a mapping",
    }
}

fn is_scalar(node: &Node) -> bool {
    !matches!(node.value, Value::Seq(_) | Value::Map(_) | Value::Null)
}

fn scalar_eq(a: &Json, node: &Node) -> bool {
    match (&node.value, a) {
        (Value::String(s), Json::String(t)) => s == t,
        (Value::Bool(b), Json::Bool(c)) => b == c,
        (Value::Int(i), Json::Number(n)) => n.as_i64() == Some(*i),
        (Value::Float(f), Json::Number(n)) => n.as_f64() == Some(*f),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_one};

    fn run(schema: &str, doc: &str, mode: Mode) -> Vec<(ViolationKind, String, u32)> {
        let schema: Json = serde_json::from_str(schema).unwrap();
        let defs = Defs::default();
        let (node, _) = parse_one("t.yaml", doc, Schema::Kube);
        let mut w = Walker::new(&defs, mode);
        w.check(&schema, &node.unwrap(), "", 0);
        w.out
            .into_iter()
            .map(|v| (v.kind, v.path, v.loc.line))
            .collect()
    }

    const SCHEMA: &str = r#"{"type":"object","required":["name"],"properties":{
        "name":{"type":"string"},
        "port":{"x-kubernetes-int-or-string":true},
        "replicas":{"type":"integer","minimum":0},
        "mode":{"type":"string","enum":["a","b"]},
        "opts":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
        "labels":{"type":"object","additionalProperties":{"type":"string"}},
        "size":{"default":"1","type":"string"}},
        "additionalProperties":false}"#;

    #[test]
    fn finds_each_kind_of_violation_at_its_line() {
        let got = run(
            SCHEMA,
            "port: true\nreplicas: -1\nmode: c\nlabels:\n  a: 1\nimgae: x\nopts:\n  any: 1\n",
            Mode::Builtin,
        );
        assert_eq!(
            got,
            [
                (ViolationKind::WrongType, "port".to_string(), 1),
                (ViolationKind::NotAllowed, "replicas".to_string(), 2),
                (ViolationKind::NotAllowed, "mode".to_string(), 3),
                (ViolationKind::WrongType, "labels.a".to_string(), 5),
                (ViolationKind::UnknownField, "imgae".to_string(), 6),
                (ViolationKind::MissingRequired, "name".to_string(), 1),
            ]
        );
    }

    #[test]
    fn accepts_what_the_api_server_accepts() {
        let ok = "name: x\nport: http\nreplicas: 2.0\nmode: ~\nlabels: {a: b}\nopts: {x: [1]}\n";
        assert!(run(SCHEMA, ok, Mode::Builtin).is_empty());
        assert!(run(SCHEMA, "name: x\nport: 80\n", Mode::Builtin).is_empty());
    }

    #[test]
    fn structural_schemas_prune_undeclared_fields() {
        let s = r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}},
            "raw":{"type":"object"}}}"#;
        let got = run(s, "spec:\n  a: x\n  b: y\nraw:\n  c: 1\n", Mode::Structural);
        assert_eq!(
            got,
            [
                (ViolationKind::UnknownField, "spec.b".to_string(), 3),
                (ViolationKind::UnknownField, "raw.c".to_string(), 5),
            ]
        );
        // The same schema in built-in mode is open (no additionalProperties: false).
        assert!(run(s, "spec:\n  b: y\n", Mode::Builtin).is_empty());
    }

    #[test]
    fn one_of_branches_decide_together() {
        let s = r#"{"oneOf":[{"type":"string"},{"type":"integer"}]}"#;
        assert!(run(s, "1\n", Mode::Builtin).is_empty());
        assert!(run(s, "a\n", Mode::Builtin).is_empty());
        assert_eq!(
            run(s, "[1]\n", Mode::Builtin)[0].0,
            ViolationKind::WrongType
        );
    }
}
