//! The function table: Go's builtins (`and`, `or`, `not`, `len`, `index`, `slice`, `print`,
//! `printf`, `println`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`, `html`, `js`, `urlquery`) and the
//! functions a caller adds (sprig, Helm's own). A function gets its arguments and a
//! [`Call`](crate::Call) through which it can execute templates (`include`, `tpl`).

use foldhash::HashMap;
use std::sync::Arc;

use crate::compare;
use crate::exec::Call;
use crate::format::{sprint, sprintf, sprintln};
use crate::trace::Trace;
use crate::value::Value;

/// How many arguments a function takes (Go's "wrong number of args" is checked from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    Exact(usize),
    AtLeast(usize),
}

/// Why a template function (or a map method, a comparison, a conversion) failed: Go's
/// message as it is, which the executor wraps in `error calling NAME: ...`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct FuncError(pub String);

impl From<String> for FuncError {
    fn from(s: String) -> FuncError {
        FuncError(s)
    }
}

impl From<&str> for FuncError {
    fn from(s: &str) -> FuncError {
        FuncError(s.to_string())
    }
}

/// A nested `include` or `tpl` that failed: its text as Go prints it.
impl From<crate::Error> for FuncError {
    fn from(e: crate::Error) -> FuncError {
        FuncError(e.to_string())
    }
}

/// A function's body: its arguments (nil for no value) and the call context.
pub type FuncBody = dyn Fn(&mut Call<'_, '_>, &[Value]) -> Result<Value, FuncError> + Send + Sync;

/// A Go parameter type, checked before the call as Go's reflection checks it: a value of
/// another type is "wrong type for value; expected T; got U", a nil where nil cannot go is
/// "invalid value; expected T" (nil maps and slices are allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Any,
    Str,
    Int,
    Bool,
    Map,
    List,
}

impl Ty {
    /// Go's message when a constant cannot be passed as this type (`found` is the constant
    /// as written).
    pub fn check_constant(self, kind: ConstKind, found: &dyn std::fmt::Display) -> Option<String> {
        let ok = matches!(
            (self, kind),
            (Ty::Any, _)
                | (Ty::Str, ConstKind::Str)
                | (Ty::Int, ConstKind::Int)
                | (Ty::Bool, ConstKind::Bool)
                | (Ty::Map | Ty::List, ConstKind::Nil)
        );
        if ok {
            return None;
        }
        Some(match (self, kind) {
            (_, ConstKind::Nil) => format!("cannot assign nil to {}", self.go_name()),
            (Ty::Str, _) => format!("expected string; found {found}"),
            (Ty::Int, _) => format!("expected integer; found {found}"),
            (Ty::Bool, _) => format!("expected bool; found {found}"),
            _ => format!("can't handle {found} for arg of type {}", self.go_name()),
        })
    }

    fn go_name(self) -> &'static str {
        match self {
            Ty::Any => "interface {}",
            Ty::Str => "string",
            Ty::Int => "int",
            Ty::Bool => "bool",
            Ty::Map => "map[string]interface {}",
            Ty::List => "[]interface {}",
        }
    }

    /// Go's message when `v` cannot be passed as this type. No value (a pipeline's nil) is
    /// a nil map or slice, and invalid elsewhere; a nil `interface{}` (a map entry, a
    /// function's result) is of the wrong type wherever the type is not `interface{}`.
    pub fn check(self, v: &Value) -> Option<String> {
        let ok = match (self, v) {
            (Ty::Any, _)
            | (Ty::Str, Value::String(_))
            | (Ty::Int, Value::Int(_))
            | (Ty::Bool, Value::Bool(_))
            | (Ty::Map, Value::Map(_) | Value::Missing)
            | (Ty::List, Value::List(_) | Value::Missing) => true,
            (_, Value::Missing) => {
                return Some(format!("invalid value; expected {}", self.go_name()));
            }
            (_, Value::Nil) => {
                return Some(format!(
                    "wrong type for value; expected {}; got interface {{}}",
                    self.go_name()
                ));
            }
            _ => false,
        };
        (!ok).then(|| {
            format!(
                "wrong type for value; expected {}; got {}",
                self.go_name(),
                v.type_name()
            )
        })
    }
}

/// What a constant argument is, for [`Ty::check_constant`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstKind {
    Str,
    Int,
    Float,
    Bool,
    Nil,
}

/// One function of the table.
#[derive(Clone)]
pub struct Func {
    pub arity: Arity,
    pub body: Arc<FuncBody>,
    /// Parameter types (the last one repeats for a variadic function); empty: unchecked.
    pub params: &'static [Ty],
    /// How the result relates to the arguments, for provenance.
    pub trace: Trace,
}

impl Func {
    /// The type of argument `i`.
    pub fn param(&self, i: usize) -> Ty {
        match (self.params.get(i), self.arity) {
            (Some(t), _) => *t,
            (None, Arity::AtLeast(_)) => self.params.last().copied().unwrap_or(Ty::Any),
            (None, Arity::Exact(_)) => Ty::Any,
        }
    }
}

/// The functions templates can call. [`Funcs::new`] holds Go's builtins; callers add theirs.
/// A table built once can be [shared](Funcs::share): its copies then point at it and hold
/// only what is added to them.
#[derive(Clone)]
pub struct Funcs {
    map: HashMap<String, Func>,
    shared: Option<Arc<HashMap<String, Func>>>,
    /// Whether this table's own functions replace some shared one (else a name is looked up
    /// in the shared part first: most calls are to its functions).
    shadows: bool,
}

impl Default for Funcs {
    fn default() -> Self {
        Funcs::new()
    }
}

impl Funcs {
    /// Go's builtin functions.
    pub fn new() -> Funcs {
        let mut f = Funcs {
            map: HashMap::default(),
            shared: None,
            shadows: false,
        };
        // `and` and `or` are evaluated lazily by the executor; the bodies are never called
        // with unevaluated arguments.
        f.insert("and", Arity::AtLeast(1), |_, a| {
            Ok(a.iter()
                .find(|v| !v.truthy())
                .or(a.last())
                .cloned()
                .unwrap_or_default())
        });
        f.insert("or", Arity::AtLeast(1), |_, a| {
            Ok(a.iter()
                .find(|v| v.truthy())
                .or(a.last())
                .cloned()
                .unwrap_or_default())
        });
        f.insert("not", Arity::Exact(1), |_, a| {
            Ok(Value::Bool(!a[0].truthy()))
        });
        f.insert("len", Arity::Exact(1), |_, a| length(&a[0]).map(Value::Int));
        f.insert("index", Arity::AtLeast(1), |_, a| index(&a[0], &a[1..]));
        f.insert("slice", Arity::AtLeast(1), |_, a| slice(&a[0], &a[1..]));
        f.insert("print", Arity::AtLeast(0), |_, a| {
            Ok(Value::from(sprint(a)))
        });
        f.insert("println", Arity::AtLeast(0), |_, a| {
            Ok(Value::from(sprintln(a)))
        });
        f.insert("printf", Arity::AtLeast(1), |_, a| {
            let Value::String(fmt) = &a[0] else {
                return Err(format!(
                    "wrong type for value; expected string; got {}",
                    a[0].type_name()
                )
                .into());
            };
            Ok(Value::from(sprintf(fmt, &a[1..])))
        });
        f.insert("eq", Arity::AtLeast(1), |_, a| {
            compare::eq(&a[0], &a[1..]).map(Value::Bool)
        });
        f.insert("ne", Arity::Exact(2), |_, a| {
            compare::eq(&a[0], &a[1..]).map(|b| Value::Bool(!b))
        });
        f.insert("lt", Arity::Exact(2), |_, a| {
            compare::lt(&a[0], &a[1]).map(Value::Bool)
        });
        f.insert("le", Arity::Exact(2), |_, a| {
            compare::le(&a[0], &a[1]).map(Value::Bool)
        });
        f.insert("gt", Arity::Exact(2), |_, a| {
            compare::le(&a[0], &a[1]).map(|b| Value::Bool(!b))
        });
        f.insert("ge", Arity::Exact(2), |_, a| {
            compare::lt(&a[0], &a[1]).map(|b| Value::Bool(!b))
        });
        f.insert("html", Arity::AtLeast(0), |_, a| {
            Ok(Value::from(html_escape(&eval_args(a))))
        });
        f.insert("js", Arity::AtLeast(0), |_, a| {
            Ok(Value::from(js_escape(&eval_args(a))))
        });
        f.set_params("printf", &[Ty::Str, Ty::Any]);
        f.set_trace("index", Trace::Index);
        f.set_trace("print", Trace::Printf);
        f.set_trace("printf", Trace::Printf);
        f.insert("urlquery", Arity::AtLeast(0), |_, a| {
            Ok(Value::from(query_escape(&eval_args(a))))
        });
        f
    }

    /// Adds (or replaces) the function `name`.
    pub fn insert(
        &mut self,
        name: &str,
        arity: Arity,
        body: impl Fn(&mut Call<'_, '_>, &[Value]) -> Result<Value, FuncError> + Send + Sync + 'static,
    ) {
        self.put(
            name,
            Func {
                arity,
                body: Arc::new(body),
                params: &[],
                trace: Trace::Computed,
            },
        );
    }

    /// The table as one shared part: clones of the result share it (an `Arc`) instead of
    /// copying each function, and keep what is added to them to themselves.
    #[must_use]
    pub fn share(self) -> Funcs {
        let mut all = match self.shared {
            Some(shared) => Arc::unwrap_or_clone(shared),
            None => HashMap::default(),
        };
        all.extend(self.map);
        Funcs {
            map: HashMap::default(),
            shared: Some(Arc::new(all)),
            shadows: false,
        }
    }

    /// Adds `func` to this table's own functions.
    fn put(&mut self, name: &str, func: Func) {
        self.shadows |= self.shared.as_ref().is_some_and(|s| s.contains_key(name));
        self.map.insert(name.to_string(), func);
    }

    /// The function `name`, this table's own (copied from the shared part when only that
    /// has it) to change.
    fn own_mut(&mut self, name: &str) -> Option<&mut Func> {
        if !self.map.contains_key(name) {
            let shared = self.shared.as_ref()?.get(name)?.clone();
            self.put(name, shared);
        }
        self.map.get_mut(name)
    }

    /// Declares the parameter types of `name` (checked before each call, as Go does).
    pub fn set_params(&mut self, name: &str, params: &'static [Ty]) {
        if self.get(name).is_some_and(|f| f.params == params) {
            return;
        }
        if let Some(f) = self.own_mut(name) {
            f.params = params;
        }
    }

    /// Declares how the result of `name` relates to its arguments, for provenance.
    pub fn set_trace(&mut self, name: &str, trace: Trace) {
        if self.get(name).is_some_and(|f| f.trace == trace) {
            return;
        }
        if let Some(f) = self.own_mut(name) {
            f.trace = trace;
        }
    }

    pub fn get(&self, name: &str) -> Option<&Func> {
        let shared = || self.shared.as_ref()?.get(name);
        if self.shadows {
            self.map.get(name).or_else(shared)
        } else {
            shared().or_else(|| self.map.get(name))
        }
    }

    /// Adds (or replaces) `name` with a function of the table under another name (an alias,
    /// as helmfile keeps sprig's `get` as `sprigGet`).
    pub fn insert_func(&mut self, name: &str, func: Func) {
        self.put(name, func);
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// The text of `html`/`js`/`urlquery`'s arguments: one string as it is, else `fmt.Sprint`
/// with a nil printed as `<no value>` (Go's `printableValue`).
fn eval_args(a: &[Value]) -> String {
    if let [Value::String(s)] = a {
        return s.to_string();
    }
    let args: Vec<Value> = a
        .iter()
        .map(|v| {
            if v.is_nil() {
                Value::str("<no value>")
            } else {
                v.clone()
            }
        })
        .collect();
    sprint(&args)
}

/// Go's `len`.
pub fn length(v: &Value) -> Result<i64, FuncError> {
    let n = match v {
        Value::String(s) => s.len(),
        Value::Bytes(b) => b.len(),
        Value::List(l) => l.borrow().len(),
        Value::Map(m) => m.borrow().len(),
        Value::Nil | Value::Missing => return Err("len of nil pointer".into()),
        other => return Err(format!("len of type {}", other.type_name()).into()),
    };
    Ok(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Go's `indexArg`: an integer index at most `len`.
fn int_index(v: &Value, len: usize) -> Result<usize, FuncError> {
    let Some(i) = v.as_int() else {
        if v.is_nil() {
            return Err("cannot index slice/array with nil".into());
        }
        return Err(format!("cannot index slice/array with type {}", v.type_name()).into());
    };
    match usize::try_from(i) {
        Ok(u) if u <= len => Ok(u),
        _ => Err(format!("index out of range: {i}").into()),
    }
}

/// Go's `index item keys...`.
pub fn index(item: &Value, keys: &[Value]) -> Result<Value, FuncError> {
    if item.is_nil() {
        return Err("index of untyped nil".into());
    }
    let mut cur = item.clone();
    for key in keys {
        cur = match &cur {
            // A nil that came out of a map or a slice.
            Value::Missing | Value::Nil => return Err("index of nil pointer".into()),
            Value::List(l) => {
                let l = l.borrow();
                let i = int_index(key, l.len())?;
                // Go's indexArg lets the length through; reflect's Index then panics.
                l.get(i)
                    .cloned()
                    .ok_or("reflect: slice index out of range")?
            }
            Value::Bytes(b) => {
                let i = int_index(key, b.len())?;
                Value::Int(i64::from(
                    *b.get(i).ok_or("reflect: slice index out of range")?,
                ))
            }
            Value::String(s) => {
                let i = int_index(key, s.len())?;
                Value::Int(i64::from(
                    *s.as_bytes()
                        .get(i)
                        .ok_or("reflect: string index out of range")?,
                ))
            }
            Value::Map(m) => match key {
                Value::String(k) => m.borrow().get(&**k).cloned().unwrap_or(Value::Nil),
                Value::Nil | Value::Missing => {
                    return Err("value is nil; should be of type string".into());
                }
                other => {
                    return Err(
                        format!("value has type {}; should be string", other.type_name()).into(),
                    );
                }
            },
            other => return Err(format!("can't index item of type {}", other.type_name()).into()),
        };
    }
    Ok(cur)
}

/// Go's `slice item from? to?`.
pub fn slice(item: &Value, idx: &[Value]) -> Result<Value, FuncError> {
    if idx.len() > 3 {
        return Err(format!("too many slice indexes: {}", idx.len()).into());
    }
    let len = match item {
        Value::String(s) => s.len(),
        Value::List(l) => l.borrow().len(),
        Value::Bytes(b) => b.len(),
        Value::Nil | Value::Missing => return Err("slice of untyped nil".into()),
        other => return Err(format!("can't slice item of type {}", other.type_name()).into()),
    };
    let from = idx.first().map_or(Ok(0), |v| int_index(v, len))?;
    let to = idx.get(1).map_or(Ok(len), |v| int_index(v, len))?;
    if from > to {
        return Err(format!("invalid slice index: {from} > {to}").into());
    }
    Ok(match item {
        Value::String(s) => match s.get(from..to) {
            Some(sub) => Value::str(sub),
            None => Value::from(String::from_utf8_lossy(&s.as_bytes()[from..to]).into_owned()),
        },
        Value::Bytes(b) => Value::Bytes(b[from..to].into()),
        Value::List(l) => Value::list(l.borrow()[from..to].to_vec()),
        _ => Value::Nil,
    })
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char);
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_slice() {
        let l = Value::list(vec![Value::Int(1), Value::Int(2), Value::Int(3)]);
        assert_eq!(index(&l, &[Value::Int(1)]), Ok(Value::Int(2)));
        assert!(index(&l, &[Value::Int(3)]).is_err());
        assert_eq!(
            index(&Value::Nil, &[Value::Int(0)]),
            Err("index of untyped nil".into())
        );
        assert_eq!(
            index(&Value::empty_map(), &[Value::str("x")]),
            Ok(Value::Nil)
        );
        assert_eq!(
            slice(&Value::str("hello"), &[Value::Int(1), Value::Int(3)]),
            Ok(Value::str("el"))
        );
        assert!(slice(&l, &[Value::Int(2), Value::Int(1)]).is_err());
        assert_eq!(length(&l), Ok(3));
    }

    #[test]
    fn escapes() {
        assert_eq!(
            html_escape("<a href='x'>&"),
            "&lt;a href=&#39;x&#39;&gt;&amp;"
        );
        assert_eq!(query_escape("a b/c"), "a+b%2Fc");
    }
}
