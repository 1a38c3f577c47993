//! The YAML tree: every node knows where it was written.

use std::sync::Arc;

use fluxgate_diagnostics::Location;
use indexmap::IndexMap;

/// A mapping with string keys in their original order. Non-string keys (rare in the files
/// fluxgate reads) are kept under their text. Keys hash with foldhash (seeded per process):
/// SipHash of the keys of every parsed mapping was a twentieth of a whole check.
pub type Map = IndexMap<String, Node, foldhash::fast::RandomState>;

/// One YAML value and the place that set it.
#[derive(Clone, Debug)]
pub struct Node {
    pub value: Value,
    pub loc: Location,
    /// A tag outside the core schema (`!vault`, `!Ref`), kept so that callers can treat such
    /// values as opaque.
    pub tag: Option<Arc<str>>,
    /// A null written as nothing (`key:`), not as `null` or `~`: kustomize's strategic merge
    /// drops such fields from the objects it patches. Not part of equality.
    pub implicit_null: bool,
}

#[derive(Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Seq(Vec<Node>),
    Map(Box<Map>),
}

impl Clone for Value {
    /// A mapping's copy holds exactly its entries (`IndexMap`'s own clone keeps room for as
    /// many as its hash table could index: up to twice as many).
    fn clone(&self) -> Self {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(*b),
            Value::Int(i) => Value::Int(*i),
            Value::Float(f) => Value::Float(*f),
            Value::String(s) => Value::String(s.clone()),
            Value::Seq(s) => Value::Seq(s.clone()),
            Value::Map(m) => {
                let mut copy = Map::with_capacity_and_hasher(m.len(), m.hasher().clone());
                copy.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
                Value::Map(Box::new(copy))
            }
        }
    }
}

impl PartialEq for Node {
    /// Nodes are equal when their values are: where they came from does not matter.
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            #[allow(clippy::cast_precision_loss)] // equality of 1 and 1.0, as JSON sees it
            (Value::Int(a), Value::Float(b)) | (Value::Float(b), Value::Int(a)) => *a as f64 == *b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Seq(a), Value::Seq(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| w == v))
            }
            _ => false,
        }
    }
}

impl Node {
    pub fn new(value: Value, loc: Location) -> Node {
        Node {
            value,
            loc,
            tag: None,
            implicit_null: false,
        }
    }

    pub fn null(loc: Location) -> Node {
        Node::new(Value::Null, loc)
    }

    pub fn string(s: impl Into<String>, loc: Location) -> Node {
        Node::new(Value::String(s.into()), loc)
    }

    pub fn map(loc: Location) -> Node {
        Node::new(Value::Map(Box::default()), loc)
    }

    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    #[must_use]
    pub fn as_map(&self) -> Option<&Map> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_map_mut(&mut self) -> Option<&mut Map> {
        match &mut self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    #[must_use]
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_seq_mut(&mut self) -> Option<&mut Vec<Node>> {
        match &mut self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    #[must_use]
    pub fn as_bool(&self) -> Option<bool> {
        match self.value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    #[must_use]
    pub fn as_i64(&self) -> Option<i64> {
        match self.value {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    #[must_use]
    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// The child under `key` when this is a mapping.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Node> {
        let m = self.as_map()?;
        // Most mappings are small: comparing their keys is cheaper than hashing.
        if m.len() <= 8 {
            return m.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v);
        }
        m.get(key)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.as_map_mut().and_then(|m| m.get_mut(key))
    }

    /// Follows a path of mapping keys.
    #[must_use]
    pub fn path(&self, keys: &[&str]) -> Option<&Node> {
        keys.iter().try_fold(self, |n, k| n.get(k))
    }

    /// The string under a path of keys.
    #[must_use]
    pub fn str_at(&self, keys: &[&str]) -> Option<&str> {
        self.path(keys).and_then(Node::as_str)
    }

    /// A scalar rendered as text the way a template or a substitution sees it.
    #[must_use]
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Null => Some(String::new()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(format_float(*f)),
            Value::String(s) => Some(s.clone()),
            Value::Seq(_) | Value::Map(_) => None,
        }
    }

    /// Sets every location in this subtree to `loc` (for values a transformer creates).
    pub fn relocate(&mut self, loc: &Location) {
        self.loc = loc.clone();
        match &mut self.value {
            Value::Seq(s) => s.iter_mut().for_each(|n| n.relocate(loc)),
            Value::Map(m) => m.values_mut().for_each(|n| n.relocate(loc)),
            _ => {}
        }
    }

    /// Number of nodes in this subtree.
    #[must_use]
    pub fn size(&self) -> usize {
        1 + match &self.value {
            Value::Seq(s) => s.iter().map(Node::size).sum(),
            Value::Map(m) => m.values().map(Node::size).sum(),
            _ => 0,
        }
    }

    /// The text this subtree holds, in bytes: its strings and keys, and one byte for each
    /// other node (what an alias copies).
    #[must_use]
    pub fn text_bytes(&self) -> usize {
        match &self.value {
            Value::String(s) => s.len().max(1),
            Value::Seq(s) => 1 + s.iter().map(Node::text_bytes).sum::<usize>(),
            Value::Map(m) => {
                1 + m
                    .iter()
                    .map(|(k, v)| k.len() + v.text_bytes())
                    .sum::<usize>()
            }
            _ => 1,
        }
    }

    /// Converts to JSON, dropping locations.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::String(s) => J::String(s.clone()),
            Value::Seq(s) => J::Array(s.iter().map(Node::to_json).collect()),
            Value::Map(m) => J::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }

    /// Builds a tree from JSON, every node at `loc`.
    #[must_use]
    pub fn from_json(json: &serde_json::Value, loc: &Location) -> Node {
        use serde_json::Value as J;
        let value = match json {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => n
                .as_i64()
                .map_or_else(|| Value::Float(n.as_f64().unwrap_or(0.0)), Value::Int),
            J::String(s) => Value::String(s.clone()),
            J::Array(a) => Value::Seq(a.iter().map(|v| Node::from_json(v, loc)).collect()),
            J::Object(o) => Value::Map(Box::new(
                o.iter()
                    .map(|(k, v)| (k.clone(), Node::from_json(v, loc)))
                    .collect(),
            )),
        };
        Node::new(value, loc.clone())
    }
}

/// Formats a float the way Go's JSON encoder and YAML emitters print it: integral values
/// without a fraction, others in the shortest form that reads back the same.
#[must_use]
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        ".nan".to_string()
    } else if f.is_infinite() {
        if f > 0.0 {
            ".inf".to_string()
        } else {
            "-.inf".to_string()
        }
    } else if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        let s = format!("{f}");
        if s.contains('e') {
            s.replace('e', "e+").replace("e+-", "e-")
        } else {
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc() -> Location {
        Location::new("t.yaml", 1, 1)
    }

    #[test]
    fn equality_ignores_locations_and_map_order() {
        let mut a = Map::default();
        a.insert("x".into(), Node::new(Value::Int(1), loc()));
        a.insert("y".into(), Node::string("s", loc()));
        let mut b = Map::default();
        b.insert("y".into(), Node::string("s", Location::new("other", 9, 9)));
        b.insert("x".into(), Node::new(Value::Float(1.0), loc()));
        assert_eq!(
            Node::new(Value::Map(Box::new(a)), loc()),
            Node::new(Value::Map(Box::new(b)), loc())
        );
    }

    #[test]
    fn floats_format_like_go() {
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(1.5), "1.5");
        assert_eq!(format_float(f64::INFINITY), ".inf");
    }
}
