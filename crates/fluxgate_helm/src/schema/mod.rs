//! `values.schema.json` validation as helm v4.3.2 does it before rendering: the coalesced
//! values checked against the chart's schema, then each enabled subchart's section against
//! the subchart's schema (recursively, in dependency order). helm's error text is rebuilt
//! byte for byte ([`SchemaFailure::text`]); the same failures come as [`Violation`]s, each
//! with its path in the release's values, for callers that point at the values line.
//!
//! ```
//! use fluxgate_helm::{Chart, schema};
//! let files = vec![
//!     ("Chart.yaml".to_string(), b"apiVersion: v2\nname: demo\nversion: 1.0.0\n".to_vec()),
//!     ("values.yaml".to_string(), b"replicas: two\n".to_vec()),
//!     ("values.schema.json".to_string(),
//!      br#"{"properties": {"replicas": {"type": "integer"}}}"#.to_vec()),
//! ];
//! let chart = Chart::from_files(files, "demo").unwrap();
//! let values = fluxgate_helm::values::coalesce_values_copy(&chart, &fluxgate_gotemplate::Value::empty_map()).unwrap();
//! let failure = schema::validate(&chart, &values).unwrap_err();
//! assert_eq!(failure.text, "demo:\n- at '/replicas': got string, want integer\n");
//! assert_eq!(failure.violations[0].path, ["replicas"]);
//! ```
//!
//! Where helm differs from run to run (Go visits maps in random order: the order of errors
//! among an object's members, and the order of the names in one `additional properties`
//! error), fluxgate uses key order. `$ref`s are resolved offline (see [`doc`]).

mod doc;
mod format;
mod text;
mod validate;

use fluxgate_gotemplate::Value;
use serde_json::Value as Json;

use crate::chart::Chart;
use validate::{Kind, Node, Validator};

/// The first line of helm's error; [`SchemaFailure::text`] follows it.
pub const HEADER: &str =
    "values don't meet the specifications of the schema(s) in the following chart(s):";

/// Why the values of a release do not pass its charts' schemas.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaFailure {
    /// What helm prints after [`HEADER`] and a newline: for each failing chart, `NAME:` and
    /// its errors (`- at '/a/b': MESSAGE`, nested ones indented).
    pub text: String,
    /// Every failure, flattened to the values it concerns.
    pub violations: Vec<Violation>,
    /// Schemas that could not be compiled offline (a `$ref` to a URL that no file of the
    /// chart holds: helm would fetch it; a broken `$ref`; bad JSON). The values were not
    /// checked against them: a caller may make this a note rather than a failure.
    pub unloadable: Vec<Unloadable>,
}

/// A schema that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unloadable {
    pub chart: String,
    pub chart_path: String,
    /// santhosh-tekuri/jsonschema's words where helm's offline run fails the same way
    /// (`failing loading "https://...": ...`).
    pub message: String,
}

impl std::fmt::Display for SchemaFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{HEADER}\n{}", self.text)
    }
}

/// One failure, where the values hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The chart whose schema failed, as helm names it (an alias replaces the name).
    pub chart: String,
    /// The chart's path from the release's chart: `app` or `app/charts/redis`.
    pub chart_path: String,
    /// The failing value's path in the release's values (the subchart's key first):
    /// `["redis", "auth", "password"]`. Empty for the values as a whole.
    pub path: Vec<String>,
    /// The keyword that failed (`type`, `required`, `additionalProperties`, `anyOf`, ...),
    /// `values` when a subchart's section is not a map.
    pub keyword: String,
    /// santhosh-tekuri/jsonschema's message (`got string, want integer`).
    pub message: String,
    /// For `anyOf`/`oneOf`/`not`/`propertyNames`/`contains`: the nested errors as helm
    /// prints them (`at '/x': ...`), one per alternative tried.
    pub details: Vec<String>,
}

/// Validates `values` (coalesced, as templates see them) against the schemas of `chart`
/// (dependencies processed: disabled subcharts removed) and its subcharts.
pub fn validate(chart: &Chart, values: &Value) -> Result<(), SchemaFailure> {
    let mut failure = SchemaFailure {
        text: String::new(),
        violations: Vec::new(),
        unloadable: Vec::new(),
    };
    walk(chart, chart, values, &chart.name, &[], &mut failure, 0);
    if failure.text.is_empty() {
        Ok(())
    } else {
        Err(failure)
    }
}

/// Deepest subchart nesting followed.
const MAX_CHARTS_DEPTH: usize = 32;

fn walk(
    root: &Chart,
    chart: &Chart,
    values: &Value,
    chart_path: &str,
    prefix: &[String],
    out: &mut SchemaFailure,
    depth: usize,
) {
    if depth > MAX_CHARTS_DEPTH {
        return;
    }
    if let Some(schema) = &chart.schema {
        match check_one(schema, root, values) {
            Ok(nodes) if nodes.is_empty() => {}
            Ok(nodes) => {
                out.text.push_str(&format!("{}:\n", chart.name));
                out.text.push_str(&display_root(&nodes));
                out.text.push('\n');
                for n in &nodes {
                    flatten(n, chart, chart_path, prefix, &mut out.violations);
                }
            }
            Err(doc::LoadError(e)) => {
                // helm adds no newline after a compile error: the next chart's name follows
                // on the same line.
                out.text.push_str(&format!("{}:\n{e}", chart.name));
                out.unloadable.push(Unloadable {
                    chart: chart.name.clone(),
                    chart_path: chart_path.to_string(),
                    message: e,
                });
            }
        }
    }
    for sub in &chart.subcharts {
        let raw = values.get(&sub.name);
        let mut path = prefix.to_vec();
        path.push(sub.name.clone());
        let sub_path = format!("{chart_path}/charts/{}", sub.name);
        match raw {
            None | Some(Value::Nil | Value::Missing) => {}
            Some(v @ Value::Map(_)) => walk(root, sub, &v, &sub_path, &path, out, depth + 1),
            Some(other) => {
                let go_type = go_type(&other);
                out.text.push_str(&format!(
                    "{}:\ninvalid type for values: expected object (map), got {go_type}\n",
                    sub.name
                ));
                out.violations.push(Violation {
                    chart: sub.name.clone(),
                    chart_path: sub_path,
                    path,
                    keyword: "values".into(),
                    message: format!(
                        "invalid type for values: expected object (map), got {go_type}"
                    ),
                    details: Vec::new(),
                });
            }
        }
    }
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Int64(_) => "int64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "[]interface {}",
        Value::Bytes(_) => "[]uint8",
        _ => "<nil>",
    }
}

/// The errors of `values` against one schema document; `Err` when it cannot be compiled.
fn check_one(
    schema: &std::sync::Arc<[u8]>,
    tree: &Chart,
    values: &Value,
) -> Result<Vec<Node>, doc::LoadError> {
    let compiled = doc::compile_cached(schema, tree);
    let (reg, root) = compiled.as_ref().as_ref().map_err(Clone::clone)?;
    let instance = to_json(values, 0);
    let mut v = Validator::new(reg);
    let root = validate::Cur::at(reg, root);
    Ok(v.validate_root(&root, &instance))
}

/// The causes of the root error as helm prints them (the `jsonschema validation failed`
/// line that helm strips already left out), without the final newline.
fn display_root(nodes: &[Node]) -> String {
    let mut out = String::new();
    for n in nodes {
        display(n, &mut out, 1);
    }
    out.strip_prefix('\n').unwrap_or(&out).to_string()
}

fn display(n: &Node, out: &mut String, indent: usize) {
    let mut indent = indent;
    let skip = n.kind == Kind::Reference && n.causes.len() == 1;
    if !skip {
        out.push('\n');
        for _ in 1..indent {
            out.push_str("  ");
        }
        out.push_str("- ");
        indent += 1;
        out.push_str(&format!(
            "at {}: {}",
            text::quote(&text::pointer(&n.at)),
            n.message
        ));
    }
    for c in &n.causes {
        display(c, out, indent);
    }
}

/// Leaves of the tree as violations: groups, references and `allOf` pass through to their
/// causes; alternatives (`anyOf`, `oneOf`, ...) are one violation with the tried ones as
/// details.
fn flatten(n: &Node, chart: &Chart, chart_path: &str, prefix: &[String], out: &mut Vec<Violation>) {
    if n.kind != Kind::Keyword || n.keyword == "allOf" {
        for c in &n.causes {
            flatten(c, chart, chart_path, prefix, out);
        }
        return;
    }
    let mut path = prefix.to_vec();
    path.extend(n.at.iter().cloned());
    let details = if n.causes.is_empty() {
        Vec::new()
    } else {
        let mut s = String::new();
        for c in &n.causes {
            display(c, &mut s, 1);
        }
        s.lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.trim_start().trim_start_matches("- ").to_string())
            .collect()
    };
    out.push(Violation {
        chart: chart.name.clone(),
        chart_path: chart_path.to_string(),
        path,
        keyword: n.keyword.to_string(),
        message: n.message.clone(),
        details,
    });
}

/// Values as the JSON the validator reads (helm's `map[string]any` tree).
fn to_json(v: &Value, depth: usize) -> Json {
    if depth > 512 {
        return Json::Null;
    }
    match v {
        Value::Missing | Value::Nil | Value::Object(_) => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) | Value::Int64(i) => Json::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.to_string()),
        Value::Bytes(b) => Json::String(String::from_utf8_lossy(b).into_owned()),
        Value::List(l) => Json::Array(l.borrow().iter().map(|x| to_json(x, depth + 1)).collect()),
        Value::Map(m) => Json::Object(
            m.borrow()
                .iter()
                .map(|(k, x)| (k.clone(), to_json(x, depth + 1)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(schema: &str, values: &str) -> Result<(), SchemaFailure> {
        let files = vec![
            (
                "Chart.yaml".to_string(),
                b"apiVersion: v2\nname: c\nversion: 0.1.0\n".to_vec(),
            ),
            ("values.yaml".to_string(), values.as_bytes().to_vec()),
            ("values.schema.json".to_string(), schema.as_bytes().to_vec()),
        ];
        let chart = Chart::from_files(files, "c").expect("chart");
        let vals =
            crate::values::coalesce_values_copy(&chart, &Value::empty_map()).expect("values");
        validate(&chart, &vals)
    }

    #[test]
    fn hostile_schemas_fail_without_panicking() {
        for schema in [
            "",
            "[]",
            "\"x\"",
            "{",
            r##"{"$ref": "#"}"##,
            r##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}"##,
            r#"{"$ref": "other.json"}"#,
            r#"{"$ref": "http://[::1"}"#,
            r##"{"$ref": "#/%zz/%"}"##,
            r#"{"$schema": "http://example.com/unknown"}"#,
            r#"{"properties": {"a": {"multipleOf": 1e-300, "minimum": 1e308}}}"#,
            r#"{"properties": {"a": {"pattern": "(", "format": "regex"}}, "patternProperties": {"[": {}}}"#,
            r#"{"properties": {"a": {"enum": [], "const": {"x": [1]}}}}"#,
            r#"{"allOf": [false], "anyOf": [], "oneOf": [true, true], "not": true}"#,
        ] {
            let _ = check(schema, "a: 1\nb: [1, 1]\n");
        }
    }

    #[test]
    fn cycles_are_errors() {
        let f = check(r##"{"$ref": "#"}"##, "a: 1\n").expect_err("a cycle fails");
        assert!(f.text.contains("causing reference cycle"), "{}", f.text);
    }

    #[test]
    fn cycles_name_the_pointer_below_a_ref_target() {
        let f = check(
            r##"{"properties": {"x": {"$ref": "#/properties/x"}}}"##,
            "x: 1\n",
        )
        .expect_err("a cycle fails");
        assert!(
            f.text.contains(
                "both /properties/x and /properties/x resolve to \"file:///values.schema.json#/properties/x\" causing reference cycle"
            ),
            "{}",
            f.text
        );
    }

    /// The compiled schema is shared only where the schema and the files its `$ref`s load
    /// are the same: two charts with one schema text but different referenced files
    /// validate differently, however often and in whatever order.
    #[test]
    fn cached_schemas_follow_the_referenced_files() {
        let schema = br#"{"$id": "https://example.com/values.schema.json", "properties": {"a": {"$ref": "defs.json"}}}"#;
        let chart = |defs: &str| {
            let files = vec![
                (
                    "Chart.yaml".to_string(),
                    b"apiVersion: v2\nname: c\nversion: 0.1.0\n".to_vec(),
                ),
                ("values.yaml".to_string(), b"a: 1\n".to_vec()),
                ("values.schema.json".to_string(), schema.to_vec()),
                ("defs.json".to_string(), defs.as_bytes().to_vec()),
            ];
            Chart::from_files(files, "c").expect("chart")
        };
        let strings = chart(r#"{"type": "string"}"#);
        let integers = chart(r#"{"type": "integer"}"#);
        let run = |c: &Chart| {
            let vals = crate::values::coalesce_values_copy(c, &Value::empty_map()).expect("values");
            validate(c, &vals)
        };
        for _ in 0..2 {
            let f = run(&strings).expect_err("1 is no string");
            assert_eq!(f.text, "c:\n- at '/a': got number, want string\n");
            assert!(run(&integers).is_ok());
        }
    }

    #[test]
    fn deep_schemas_and_values_are_bounded() {
        let depth = 120;
        let schema = "{\"properties\": {\"a\": ".repeat(depth)
            + "{\"type\": \"string\"}"
            + &"}}".repeat(depth);
        let mut values = String::new();
        for i in 0..depth {
            values.push_str(&"  ".repeat(i));
            values.push_str("a:\n");
        }
        values.push_str(&"  ".repeat(depth));
        values.push_str("a: 1\n");
        let _ = check(&schema, &values);
    }

    #[test]
    fn violations_carry_the_values_path() {
        let f = check(
            r#"{"properties": {"image": {"properties": {"tag": {"type": "string"}}, "additionalProperties": false}}}"#,
            "image:\n  tag: 1\n  tga: x\n",
        )
        .expect_err("fails");
        let got: Vec<(String, &str, String)> = f
            .violations
            .iter()
            .map(|v| (v.path.join("."), v.keyword.as_str(), v.message.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "image.tag".to_string(),
                    "type",
                    "got number, want string".to_string()
                ),
                (
                    "image".to_string(),
                    "additionalProperties",
                    "additional properties 'tga' not allowed".to_string()
                ),
            ]
        );
        // helm unwraps the root's only error when it is a group, wherever that group is.
        assert_eq!(
            f.text,
            "c:\n- at '/image/tag': got number, want string\n- at '/image': additional properties 'tga' not allowed\n"
        );
    }
}
