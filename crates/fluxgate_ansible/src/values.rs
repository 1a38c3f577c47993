//! Conversions between fluxgate_yaml nodes, JSON and minijinja values, and Python's `str()`
//! of values (what Ansible prints when a list or a boolean lands inside a string).

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Value as Y};
use minijinja::Value;
use minijinja::value::ValueKind;

/// What a vault-encrypted value shows as: fluxgate never decrypts.
pub const OPAQUE: &str = "<vault-encrypted>";

/// What a variable that nobody defines renders as for a representative host (an inventory
/// without hosts): `<name>`, a plain YAML scalar wherever the template puts it, so that two
/// values from the same undefined variable compare equal and a different one does not.
#[must_use]
pub fn symbolic(name: &str) -> String {
    format!("<{name}>")
}

/// The variable a [`symbolic`] value stands for, when the whole text is one.
#[must_use]
pub fn symbolic_var(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('<')?.strip_suffix('>')?;
    (!inner.is_empty() && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(inner)
}

/// A YAML node as a template value (vault-tagged nodes become [`OPAQUE`]).
#[must_use]
pub fn node_to_value(node: &Node) -> Value {
    if is_vault(node) {
        return Value::from(OPAQUE);
    }
    match &node.value {
        Y::Null => Value::from(()),
        Y::Bool(b) => Value::from(*b),
        Y::Int(i) => Value::from(*i),
        Y::Float(f) => Value::from(*f),
        Y::String(s) => Value::from(s.as_str()),
        Y::Seq(s) => s.iter().map(node_to_value).collect(),
        Y::Map(m) => Value::from_pairs(m.iter().map(|(k, v)| (k.as_str(), node_to_value(v)))),
    }
}

/// Whether a node carries the `!vault` tag.
#[must_use]
pub fn is_vault(node: &Node) -> bool {
    node.tag
        .as_deref()
        .is_some_and(|t| t.trim_start_matches('!') == "vault" || t.ends_with(":vault"))
}

/// A template value as a YAML node placed at `loc`.
#[must_use]
pub fn value_to_node(v: &Value, loc: &Location) -> Node {
    value_to_node_depth(v, loc, 0)
}

fn value_to_node_depth(v: &Value, loc: &Location, depth: usize) -> Node {
    let value = if depth > 64 {
        Y::String(v.to_string())
    } else {
        match v.kind() {
            ValueKind::Undefined | ValueKind::None => Y::Null,
            ValueKind::Bool => Y::Bool(v.is_true()),
            ValueKind::Number => {
                if let Some(i) = v.as_i64() {
                    Y::Int(i)
                } else {
                    f64::try_from(v.clone()).map_or_else(|_| Y::String(v.to_string()), Y::Float)
                }
            }
            ValueKind::String | ValueKind::Bytes | ValueKind::Plain | ValueKind::Invalid => {
                Y::String(v.as_str().map_or_else(|| v.to_string(), str::to_string))
            }
            ValueKind::Map => {
                let mut m = fluxgate_yaml::Map::default();
                if let Ok(iter) = v.try_iter() {
                    for k in iter {
                        let val = v.get_item(&k).unwrap_or_default();
                        let key = k.as_str().map_or_else(|| k.to_string(), str::to_string);
                        m.insert(key, value_to_node_depth(&val, loc, depth + 1));
                    }
                }
                Y::Map(Box::new(m))
            }
            ValueKind::Seq | ValueKind::Iterable => Y::Seq(
                v.try_iter()
                    .map(|it| {
                        it.map(|x| value_to_node_depth(&x, loc, depth + 1))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            _ => Y::String(v.to_string()),
        }
    };
    Node::new(value, loc.clone())
}

/// Python's `str()` of a value, as Jinja2 under Ansible prints it: `True`, `['a', 1]`,
/// `{'k': 'v'}`; `None` prints as the empty string (Ansible's finalize).
#[must_use]
pub fn py_str(v: &Value) -> String {
    match v.kind() {
        ValueKind::None | ValueKind::Undefined => String::new(),
        ValueKind::String => v.as_str().unwrap_or_default().to_string(),
        _ => py_repr(v, 0),
    }
}

/// Python's `repr()` of a value.
#[must_use]
pub fn py_repr(v: &Value, depth: usize) -> String {
    if depth > 64 {
        return "...".into();
    }
    match v.kind() {
        ValueKind::None | ValueKind::Undefined => "None".into(),
        ValueKind::Bool => if v.is_true() { "True" } else { "False" }.into(),
        ValueKind::Number => {
            if v.is_integer() {
                v.to_string()
            } else {
                let f = f64::try_from(v.clone()).unwrap_or(0.0);
                if f.fract() == 0.0 && f.abs() < 1e16 {
                    format!("{f:.1}")
                } else {
                    format!("{f}")
                }
            }
        }
        ValueKind::String => quote_py(v.as_str().unwrap_or_default()),
        ValueKind::Map => {
            let mut parts = Vec::new();
            if let Ok(iter) = v.try_iter() {
                for k in iter {
                    let val = v.get_item(&k).unwrap_or_default();
                    parts.push(format!(
                        "{}: {}",
                        py_repr(&k, depth + 1),
                        py_repr(&val, depth + 1)
                    ));
                }
            }
            format!("{{{}}}", parts.join(", "))
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let parts: Vec<String> = v
                .try_iter()
                .map(|it| it.map(|x| py_repr(&x, depth + 1)).collect())
                .unwrap_or_default();
            format!("[{}]", parts.join(", "))
        }
        _ => v.to_string(),
    }
}

fn quote_py(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_str() {
        let v: Value = vec![Value::from("a"), Value::from(1), Value::from(true)]
            .into_iter()
            .collect();
        assert_eq!(py_str(&v), "['a', 1, True]");
        assert_eq!(py_str(&Value::from(())), "");
        let m = Value::from_pairs([("k", "v")]);
        assert_eq!(py_str(&m), "{'k': 'v'}");
    }
}
