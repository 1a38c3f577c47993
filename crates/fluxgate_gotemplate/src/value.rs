//! Go values as templates see them: `interface{}` holding a map, a slice, a string, an
//! `int`/`int64`, a `float64`, a bool or nil, plus host objects with fields and methods
//! (Helm's `.Files`, `.Capabilities`).
//!
//! Maps and lists are shared and mutable (`Rc<RefCell<..>>`): Go maps are references, so
//! sprig's `set` on a map reached through two variables is seen through both.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use crate::funcs::FuncError;

/// A Go map with string keys; Go ranges over and prints maps in key order.
pub type MapRef = Rc<Shared<BTreeMap<String, Value>>>;
/// A Go slice of `interface{}`.
pub type ListRef = Rc<Shared<Vec<Value>>>;

/// The cell of a map or a list, with a number that tells containers apart for as long as
/// the thread runs: numbers grow as containers are made, so one made during an `include`
/// has a number at least that of the include's start ([`crate::memo`]). Changing one made
/// before tells the memo of `include` (a template that changed what its caller sees has to
/// run again).
pub struct Shared<T> {
    id: u64,
    cell: RefCell<T>,
}

impl<T> Shared<T> {
    pub fn new(value: T) -> Shared<T> {
        Shared {
            id: crate::memo::next_id(),
            cell: RefCell::new(value),
        }
    }

    /// The container's number.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The contents to read: a read the memo of `include` is told of.
    pub fn borrow(&self) -> std::cell::Ref<'_, T> {
        crate::memo::read(self.id);
        self.cell.borrow()
    }

    /// The contents to change: a change the memo of `include` is told of.
    pub fn borrow_mut(&self) -> std::cell::RefMut<'_, T> {
        crate::memo::changed(self.id);
        self.cell.borrow_mut()
    }

    /// The contents to change in a way no template can tell (a scalar replaced by an equal
    /// one, as a repeated `set` does): the memo of `include` is not told.
    fn borrow_mut_unseen(&self) -> std::cell::RefMut<'_, T> {
        self.cell.borrow_mut()
    }
}

/// One Go value.
#[derive(Clone, Default)]
pub enum Value {
    /// Go's invalid `reflect.Value`: no value at all (a missing map key under the default
    /// `missingkey`, the result of a pipeline that produced nil). Prints `<no value>`.
    #[default]
    Missing,
    /// A nil `interface{}` (a map entry holding nil, the `nil` constant).
    Nil,
    Bool(bool),
    /// Go `int` (number constants, `len`).
    Int(i64),
    /// Go `int64` (what sprig's arithmetic returns).
    Int64(i64),
    Float(f64),
    String(Rc<str>),
    /// Go `[]byte` (`.Files.GetBytes`).
    Bytes(Rc<[u8]>),
    List(ListRef),
    Map(MapRef),
    Object(Rc<dyn Object>),
}

/// A host value with fields and methods (a Go struct or pointer to one).
pub trait Object {
    /// The Go type name, as `%T` and error messages print it (`*chart.Files`).
    fn type_name(&self) -> String;
    /// A field or a method without arguments; `None` when the type has neither.
    fn field(&self, name: &str) -> Option<Value>;
    /// A method called with arguments; `None` when the type has no such method.
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, FuncError>>;
    /// What `fmt.Sprint` prints for it.
    fn display(&self) -> String;
    /// Whether `name` is a method (then `.X arg` is a call, not a field).
    fn has_method(&self, name: &str) -> bool;
    /// A value that equal objects share (Go's `==` on structs such as `time.Time`);
    /// objects without one are equal only to themselves.
    fn key(&self) -> Option<String> {
        None
    }
    /// The entries `range` visits when the object is a Go map type (Helm's `Files`).
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        None
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Missing => f.write_str("Missing"),
            Value::Object(o) => write!(f, "Object({})", o.type_name()),
            other => write!(f, "{}", crate::format::sprint_value(other)),
        }
    }
}

impl PartialEq for Value {
    /// Deep equality (for tests and `has`/`uniq`-style functions); not Go's `eq`.
    fn eq(&self, other: &Value) -> bool {
        deep_equal(self, other, 0)
    }
}

fn deep_equal(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::Missing, Value::Missing) | (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) | (Value::Int64(x), Value::Int64(y)) => x == y,
        #[allow(clippy::float_cmp)] // Go's == on float64 is exact.
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            Rc::ptr_eq(x, y) || {
                let (x, y) = (x.borrow(), y.borrow());
                x.len() == y.len()
                    && x.iter()
                        .zip(y.iter())
                        .all(|(a, b)| deep_equal(a, b, depth + 1))
            }
        }
        (Value::Map(x), Value::Map(y)) => {
            Rc::ptr_eq(x, y) || {
                let (x, y) = (x.borrow(), y.borrow());
                x.len() == y.len()
                    && x.iter()
                        .zip(y.iter())
                        .all(|((k1, v1), (k2, v2))| k1 == k2 && deep_equal(v1, v2, depth + 1))
            }
        }
        (Value::Object(x), Value::Object(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

/// Nesting beyond which printing and copying stop (a map that holds itself through `set`).
pub const MAX_DEPTH: usize = 1000;

impl Value {
    pub fn str(s: &str) -> Value {
        Value::String(Rc::from(s))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(Shared::new(items)))
    }

    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Rc::new(Shared::new(entries)))
    }

    pub fn empty_map() -> Value {
        Value::map(BTreeMap::new())
    }

    /// The same value to the last bit, when neither is a map or a list: the same Go type,
    /// floats by their bits (`-0` is not `0`), strings and bytes by their content, a host
    /// object by identity. Maps and lists are never the same here (callers compare them in
    /// their own way: by identity, or entry by entry).
    pub fn identical_leaf(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Missing, Value::Missing) | (Value::Nil, Value::Nil) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::Int(x), Value::Int(y)) | (Value::Int64(x), Value::Int64(y)) => x == y,
            (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
            (Value::String(x), Value::String(y)) => x == y,
            (Value::Bytes(x), Value::Bytes(y)) => x == y,
            (Value::Object(x), Value::Object(y)) => Rc::ptr_eq(x, y),
            _ => false,
        }
    }

    /// Whether this is nil or no value.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil | Value::Missing)
    }

    /// Go's truth (`if`, `with`, `and`, `or`, `not`): false, 0, nil, and empty strings, maps
    /// and slices are false; structs are true.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Missing | Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::List(l) => !l.borrow().is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
            Value::Object(_) => true,
        }
    }

    /// The Go type, as `%T` and sprig's `typeOf` print it.
    pub fn type_name(&self) -> String {
        match self {
            Value::Missing | Value::Nil => "<nil>".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Int64(_) => "int64".into(),
            Value::Float(_) => "float64".into(),
            Value::String(_) => "string".into(),
            Value::Bytes(_) => "[]uint8".into(),
            Value::List(_) => "[]interface {}".into(),
            Value::Map(_) => "map[string]interface {}".into(),
            Value::Object(o) => o.type_name(),
        }
    }

    /// The Go kind, as sprig's `kindOf` prints it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Missing | Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::Bytes(_) | Value::List(_) => "slice",
            Value::Map(_) => "map",
            Value::Object(_) => "ptr",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The integer of an `int` or `int64`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) | Value::Int64(i) => Some(*i),
            _ => None,
        }
    }

    /// A copy that shares nothing with `self` (sprig's `deepCopy`).
    #[must_use]
    pub fn deep_copy(&self) -> Value {
        self.deep_copy_at(0)
    }

    fn deep_copy_at(&self, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::Nil;
        }
        match self {
            Value::List(l) => Value::list(
                l.borrow()
                    .iter()
                    .map(|v| v.deep_copy_at(depth + 1))
                    .collect(),
            ),
            Value::Map(m) => Value::map(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.deep_copy_at(depth + 1)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The entry `key` of a map (`None` for other values and missing keys).
    pub fn get(&self, key: &str) -> Option<Value> {
        match self {
            Value::Map(m) => m.borrow().get(key).cloned(),
            _ => None,
        }
    }
}

impl Shared<BTreeMap<String, Value>> {
    /// Stores `v` at `key` (sprig's `set`). Storing a scalar equal to the one there changes
    /// nothing a template can read, and the memo of `include` is not told (a library that
    /// names each object in its values again on every call).
    pub fn set(&self, key: String, v: Value) {
        let same = self
            .borrow()
            .get(&key)
            .is_some_and(|old| crate::trace::equal_scalar(old, &v));
        let mut entries = if same {
            self.borrow_mut_unseen()
        } else {
            self.borrow_mut()
        };
        entries.insert(key, v);
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::str(s)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(Rc::from(s))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Float(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_alias_like_go_maps() {
        let m = Value::empty_map();
        let alias = m.clone();
        if let Value::Map(inner) = &alias {
            inner.borrow_mut().insert("a".into(), Value::Int(1));
        }
        assert_eq!(m.get("a"), Some(Value::Int(1)));
        let copy = m.deep_copy();
        if let Value::Map(inner) = &m {
            inner.borrow_mut().insert("b".into(), Value::Int(2));
        }
        assert_eq!(copy.get("b"), None);
    }

    #[test]
    fn truth_follows_go() {
        assert!(!Value::Int(0).truthy());
        assert!(!Value::str("").truthy());
        assert!(!Value::empty_map().truthy());
        assert!(Value::Float(0.5).truthy());
        assert!(!Value::Missing.truthy());
    }
}
