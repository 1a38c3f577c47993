//! The CEL side of the policies: one runtime (`kube_cel::cel`, cel 0.13, with the Kubernetes
//! libraries), JSON values as CEL values, and CEL's optional syntax.
//!
//! cel 0.13's parser rejects `.?field`, `[?key]`, `optional.of(..)` and `optional.none()`, and
//! kube-cel 0.8 (the newest on crates.io) is built on it. Rather than reject the policies
//! that use them (most Kyverno ValidatingPolicies do), [`lower_optionals`] rewrites those forms,
//! token by token, into calls of functions registered here on an opaque optional value:
//! `a.?b` becomes `a.fgOptField("b")`, `a[?k]` becomes `a.fgOptIndex(k)`, a plain selection or
//! index that follows in the same chain becomes the strict `fgOptSel`/`fgOptAt` (CEL applies
//! them inside the optional), and `orValue`, `hasValue`, `value` and `or` are methods of the
//! optional. An expression that still does not parse is a finding that says why.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::objects::{Key, Map, Opaque, OpaqueEq};
use kube_cel::cel::{Context, ExecutionError, Program, Value};
use serde_json::Value as Json;

use crate::Error;

/// A value that may be absent: CEL's `optional_type`.
#[derive(Debug)]
pub(crate) struct Optional(pub Option<Value>);

impl OpaqueEq for Optional {
    fn opaque_eq(&self, other: &dyn Opaque) -> bool {
        other
            .downcast_ref::<Optional>()
            .is_some_and(|o| o.0 == self.0)
    }
}

impl Opaque for Optional {
    fn runtime_type_name(&self) -> &'static str {
        "optional_type"
    }
}

fn some(v: Value) -> Value {
    Value::Opaque(Arc::new(Optional(Some(v))))
}

fn none() -> Value {
    Value::Opaque(Arc::new(Optional(None)))
}

/// `Some(inner)` when `v` is an optional (`inner` is `None` for `optional.none()`).
#[allow(clippy::option_option)] // "not an optional" and "the empty optional" are both needed
fn as_optional(v: &Value) -> Option<Option<&Value>> {
    if let Value::Opaque(o) = v {
        return o.downcast_ref::<Optional>().map(|o| o.0.as_ref());
    }
    None
}

fn lookup(v: &Value, key: &Value) -> Result<Option<Value>, ExecutionError> {
    match (v, key) {
        (Value::Map(m), k) => {
            let k = match k {
                Value::String(s) => Key::String(s.clone()),
                Value::Int(i) => Key::Int(*i),
                Value::UInt(u) => Key::Uint(*u),
                Value::Bool(b) => Key::Bool(*b),
                other => {
                    return Err(ExecutionError::function_error(
                        "optional",
                        format!("unsupported map key {other:?}"),
                    ));
                }
            };
            Ok(m.map.get(&k).cloned())
        }
        (Value::List(l), Value::Int(i)) => {
            Ok(usize::try_from(*i).ok().and_then(|i| l.get(i).cloned()))
        }
        (Value::List(l), Value::UInt(i)) => {
            Ok(usize::try_from(*i).ok().and_then(|i| l.get(i).cloned()))
        }
        (other, k) => Err(ExecutionError::function_error(
            "optional",
            format!("cannot select {k:?} from {}", type_name(other)),
        )),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Function(..) => "function",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::String(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        _ => "value",
    }
}

/// `this.?key` / `this[?key]`: present -> `optional.of`, absent -> `optional.none()`.
fn opt_lookup(this: &Value, key: &Value) -> Result<Value, ExecutionError> {
    match as_optional(this) {
        Some(None) => Ok(none()),
        Some(Some(inner)) => Ok(lookup(inner, key)?.map_or_else(none, some)),
        None if matches!(this, Value::Null) => Ok(none()),
        None => Ok(lookup(this, key)?.map_or_else(none, some)),
    }
}

/// A plain `.key` / `[key]` inside an optional chain: absent keys are errors, as in CEL.
fn strict_lookup(this: &Value, key: &Value) -> Result<Value, ExecutionError> {
    let inner = match as_optional(this) {
        Some(None) => return Ok(none()),
        Some(Some(inner)) => inner,
        None => this,
    };
    match lookup(inner, key)? {
        Some(v) => Ok(some(v)),
        None => Err(ExecutionError::NoSuchKey(Arc::new(format!("{key:?}")))),
    }
}

/// The root context of every policy evaluation: the CEL standard library, the Kubernetes
/// libraries and the optional functions. Evaluations add their variables in an inner scope.
pub(crate) fn root_context() -> Context<'static> {
    let mut ctx = Context::default().with_all();
    ctx.add_function(
        "fgOptField",
        |kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>,
         key: Value|
         -> Result<Value, ExecutionError> { opt_lookup(&this, &key) },
    );
    ctx.add_function(
        "fgOptIndex",
        |kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>,
         key: Value|
         -> Result<Value, ExecutionError> { opt_lookup(&this, &key) },
    );
    ctx.add_function(
        "fgOptSel",
        |kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>,
         key: Value|
         -> Result<Value, ExecutionError> { strict_lookup(&this, &key) },
    );
    ctx.add_function(
        "fgOptAt",
        |kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>,
         key: Value|
         -> Result<Value, ExecutionError> { strict_lookup(&this, &key) },
    );
    ctx.add_function("fgOptOf", |v: Value| -> Result<Value, ExecutionError> {
        Ok(some(v))
    });
    ctx.add_function("fgOptNone", || -> Result<Value, ExecutionError> {
        Ok(none())
    });
    ctx.add_function(
        "fgOptOfNonZero",
        |v: Value| -> Result<Value, ExecutionError> {
            Ok(if is_zero(&v) { none() } else { some(v) })
        },
    );
    ctx.add_function(
        "orValue",
        |kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>,
         default: Value|
         -> Result<Value, ExecutionError> {
            // On a value that is not an optional, the value itself: what Kyverno's CEL
            // does with `dyn` values (kyverno-policies' ensure-readonly-hostpath relies on
            // `container.volumeMounts.orValue([])`).
            match as_optional(&this) {
                Some(Some(v)) => Ok(v.clone()),
                Some(None) => Ok(default),
                None => Ok(this),
            }
        },
    );
    ctx.add_function(
        "hasValue",
        |kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>|
         -> Result<Value, ExecutionError> {
            match as_optional(&this) {
                Some(v) => Ok(Value::Bool(v.is_some())),
                None => Err(ExecutionError::function_error(
                    "hasValue",
                    format!("hasValue() on a {}, not an optional", type_name(&this)),
                )),
            }
        },
    );
    ctx.add_function(
        "value",
        |kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>|
         -> Result<Value, ExecutionError> {
            match as_optional(&this) {
                Some(Some(v)) => Ok(v.clone()),
                Some(None) => Err(ExecutionError::function_error(
                    "value",
                    "value() of optional.none()",
                )),
                None => Err(ExecutionError::function_error(
                    "value",
                    format!("value() on a {}, not an optional", type_name(&this)),
                )),
            }
        },
    );
    ctx.add_function(
        "or",
        |kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>,
         other: Value|
         -> Result<Value, ExecutionError> {
            match as_optional(&this) {
                Some(Some(_)) => Ok(this),
                Some(None) => Ok(other),
                None => Err(ExecutionError::function_error(
                    "or",
                    format!("or() on a {}, not an optional", type_name(&this)),
                )),
            }
        },
    );
    ctx
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::UInt(u) => *u == 0,
        Value::Float(f) => *f == 0.0,
        Value::String(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.map.is_empty(),
        _ => false,
    }
}

/// A compiled expression, or why it could not be compiled.
pub(crate) struct Expr {
    pub source: String,
    pub program: Result<Program, Error>,
}

impl Expr {
    pub fn compile(source: &str) -> Expr {
        let lowered = lower_optionals(source);
        let program = Program::compile(&lowered).map_err(|e| {
            let first = e.to_string();
            let first = first.lines().next().unwrap_or("").trim().to_string();
            Error::CelCompile { reason: first }
        });
        Expr {
            source: source.to_string(),
            program,
        }
    }

    pub fn eval(&self, ctx: &Context) -> Result<Value, Error> {
        let p = self.program.as_ref().map_err(Clone::clone)?;
        Ok(p.execute(ctx)?)
    }
}

/// A JSON value as a CEL value (integers stay `int`).
pub(crate) fn to_cel(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => n
            .as_i64()
            .map(Value::Int)
            .or_else(|| n.as_u64().map(Value::UInt))
            .unwrap_or_else(|| Value::Float(n.as_f64().unwrap_or(0.0))),
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(items) => Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Json::Object(m) => map(m.iter().map(|(k, v)| (k.clone(), to_cel(v)))),
    }
}

pub(crate) fn map(entries: impl Iterator<Item = (String, Value)>) -> Value {
    let m: HashMap<Key, Value> = entries
        .map(|(k, v)| (Key::String(Arc::new(k)), v))
        .collect();
    Value::Map(Map { map: Arc::new(m) })
}

/// The text of a CEL value in a message (`messageExpression` results are strings).
pub(crate) fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        other => format!("{other:?}"),
    }
}

/// The field chains an expression reads from `object`: `object.spec.?containers` gives
/// `["spec", "containers"]`, `object.metadata.labels['app']` gives `["metadata", "labels",
/// "app"]`. A chain ends at a method call or anything but a field or a literal index. String
/// literals are skipped.
#[must_use]
pub fn object_paths(src: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = src.chars().collect();
    let ident = |ch: char| ch.is_ascii_alphanumeric() || ch == '_';
    let skip_ws = |mut at: usize| {
        while at < chars.len() && chars[at].is_whitespace() {
            at += 1;
        }
        at
    };
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < chars.len() {
        let ch = chars[pos];
        if ch == '"' || ch == '\'' {
            pos = string_end(&chars, pos);
            continue;
        }
        if !(ch.is_ascii_alphabetic() || ch == '_') {
            pos += 1;
            continue;
        }
        let word_start = pos;
        while pos < chars.len() && ident(chars[pos]) {
            pos += 1;
        }
        let after_dot = chars[..word_start]
            .iter()
            .rev()
            .find(|c| !c.is_whitespace())
            == Some(&'.');
        if after_dot || chars[word_start..pos].iter().collect::<String>() != "object" {
            continue;
        }
        let mut path = Vec::new();
        loop {
            let step = skip_ws(pos);
            let optional = usize::from(chars.get(step + 1) == Some(&'?'));
            match chars.get(step) {
                Some('.') => {
                    let name_start = skip_ws(step + 1 + optional);
                    let mut name_end = name_start;
                    while name_end < chars.len() && ident(chars[name_end]) {
                        name_end += 1;
                    }
                    // A method call (`.all(`, `.orValue(`) ends the chain.
                    if name_end == name_start || chars.get(skip_ws(name_end)) == Some(&'(') {
                        break;
                    }
                    path.push(chars[name_start..name_end].iter().collect());
                    pos = name_end;
                }
                Some('[') => {
                    let key_start = skip_ws(step + 1 + optional);
                    let (segment, key_end) = match chars.get(key_start) {
                        Some('"' | '\'') => {
                            let end = string_end(&chars, key_start);
                            let inner: String = chars
                                [key_start + 1..end.saturating_sub(1).max(key_start + 1)]
                                .iter()
                                .collect();
                            (inner, end)
                        }
                        Some(d) if d.is_ascii_digit() => {
                            let mut end = key_start;
                            while end < chars.len() && chars[end].is_ascii_digit() {
                                end += 1;
                            }
                            (chars[key_start..end].iter().collect(), end)
                        }
                        _ => break,
                    };
                    let close = skip_ws(key_end);
                    if chars.get(close) != Some(&']') {
                        break;
                    }
                    path.push(segment);
                    pos = close + 1;
                }
                _ => break,
            }
        }
        if !path.is_empty() {
            out.push(path);
        }
    }
    out
}

/// The index just past the string literal that opens at `start`.
fn string_end(chars: &[char], start: usize) -> usize {
    let q = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        if chars[i] == '\\' {
            i += 2;
            continue;
        }
        if chars[i] == q {
            return i + 1;
        }
        i += 1;
    }
    chars.len()
}

#[derive(Clone, Copy, PartialEq)]
enum Tok {
    /// The end of an operand: an identifier, a literal, `)` or `]`.
    Operand,
    Other,
}

/// Rewrites CEL's optional syntax into calls cel 0.13 parses (see the module docs). String
/// literals are copied untouched.
#[must_use]
pub fn lower_optionals(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len() + 16);
    // Per open bracket: whether the chain at this depth is inside an optional, and whether
    // the bracket was an optional index (whose `]` closes a call).
    let mut opt_chain: Vec<bool> = vec![false];
    let mut closers: Vec<&'static str> = Vec::new();
    let mut last = Tok::Other;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // String literals (with r/b prefixes and triple quotes).
        if c == '"' || c == '\'' {
            let raw = i > 0 && matches!(chars[i - 1], 'r' | 'R') && last == Tok::Operand;
            let triple = i + 2 < chars.len() && chars[i + 1] == c && chars[i + 2] == c;
            let start = i;
            i += if triple { 3 } else { 1 };
            while i < chars.len() {
                if !raw && chars[i] == '\\' {
                    i += 2;
                    continue;
                }
                if chars[i] == c
                    && (!triple || (i + 2 < chars.len() && chars[i + 1] == c && chars[i + 2] == c))
                {
                    i += if triple { 3 } else { 1 };
                    break;
                }
                i += 1;
            }
            out.extend(&chars[start..i.min(chars.len())]);
            last = Tok::Operand;
            continue;
        }
        if c.is_whitespace() {
            out.push(c);
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // `optional.of(` / `optional.none(` / `optional.ofNonZeroValue(`
            if word == "optional" && last != Tok::Operand {
                let rest: String = chars[i..].iter().take(20).collect();
                for (method, name) in [
                    (".ofNonZeroValue", "fgOptOfNonZero"),
                    (".of", "fgOptOf"),
                    (".none", "fgOptNone"),
                ] {
                    if let Some(after) = rest.strip_prefix(method)
                        && after.trim_start().starts_with('(')
                    {
                        out.push_str(name);
                        i += method.chars().count();
                        last = Tok::Operand;
                        break;
                    }
                }
                if last == Tok::Operand {
                    continue;
                }
            }
            out.push_str(&word);
            *opt_chain.last_mut().expect("depth") = false;
            last = Tok::Operand;
            continue;
        }
        if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                // A digit run, a float, a `u` suffix, hex.
                if chars[i] == '.' && !chars.get(i + 1).is_some_and(char::is_ascii_digit) {
                    break;
                }
                out.push(chars[i]);
                i += 1;
            }
            *opt_chain.last_mut().expect("depth") = false;
            last = Tok::Operand;
            continue;
        }
        match c {
            '.' if last == Tok::Operand => {
                let optional = chars.get(i + 1) == Some(&'?');
                let mut j = i + 1 + usize::from(optional);
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                let start = j;
                while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                let name: String = chars[start..j].iter().collect();
                let mut k = j;
                while k < chars.len() && chars[k].is_whitespace() {
                    k += 1;
                }
                let call = chars.get(k) == Some(&'(');
                let in_chain = *opt_chain.last().expect("depth");
                if name.is_empty() {
                    out.push(c);
                    i += 1;
                    last = Tok::Other;
                } else if optional {
                    out.push_str(&format!(".fgOptField(\"{name}\")"));
                    *opt_chain.last_mut().expect("depth") = true;
                    i = j;
                } else if !call && in_chain {
                    out.push_str(&format!(".fgOptSel(\"{name}\")"));
                    i = j;
                } else {
                    out.push('.');
                    out.push_str(&name);
                    i = j;
                    if call {
                        // A method's result is not optional (orValue, hasValue, all, ...),
                        // except `or`, which keeps the chain.
                        *opt_chain.last_mut().expect("depth") = name == "or";
                    }
                }
            }
            '[' if last == Tok::Operand => {
                let optional = chars.get(i + 1) == Some(&'?');
                let in_chain = *opt_chain.last().expect("depth");
                if optional {
                    out.push_str(".fgOptIndex(");
                    closers.push(")");
                    i += 2;
                } else if in_chain {
                    out.push_str(".fgOptAt(");
                    closers.push(")");
                    i += 1;
                } else {
                    out.push('[');
                    closers.push("]");
                    i += 1;
                }
                // The index expression is a chain of its own.
                opt_chain.push(false);
                last = Tok::Other;
            }
            '(' | '[' | '{' => {
                let close = match c {
                    '(' => ")",
                    '[' => "]",
                    _ => "}",
                };
                closers.push(close);
                opt_chain.push(false);
                out.push(c);
                i += 1;
                last = Tok::Other;
            }
            ')' | ']' | '}' => {
                let close = closers.pop().unwrap_or(match c {
                    ')' => ")",
                    ']' => "]",
                    _ => "}",
                });
                opt_chain.pop();
                if opt_chain.is_empty() {
                    opt_chain.push(false);
                }
                out.push_str(close);
                i += 1;
                // After an optional index the outer chain is optional; after a call or a
                // group it continues as it was (a method call already reset it).
                if close == ")" && c == ']' {
                    *opt_chain.last_mut().expect("depth") = true;
                }
                last = Tok::Operand;
            }
            _ => {
                *opt_chain.last_mut().expect("depth") = false;
                out.push(c);
                i += 1;
                last = Tok::Other;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expr: &str, object: &Json) -> Result<Value, Error> {
        let root = root_context();
        let mut ctx = root.new_inner_scope();
        ctx.add_variable_from_value("object", to_cel(object));
        Expr::compile(expr).eval(&ctx)
    }

    #[test]
    fn object_paths_of_expressions() {
        assert_eq!(
            object_paths("object.spec.containers.all(c, c.image != 'object.x')"),
            vec![vec!["spec".to_string(), "containers".to_string()]]
        );
        assert_eq!(
            object_paths(
                "has(object.metadata.labels) && object.metadata.?labels[?'app.io/x'].orValue('') == 'a'"
            ),
            vec![
                vec!["metadata".to_string(), "labels".to_string()],
                vec![
                    "metadata".to_string(),
                    "labels".to_string(),
                    "app.io/x".to_string()
                ],
            ]
        );
        assert_eq!(
            object_paths("object.spec.template.spec.containers[0].name"),
            vec![
                ["spec", "template", "spec", "containers", "0", "name"]
                    .map(String::from)
                    .to_vec()
            ]
        );
        assert!(object_paths("oldObject.spec == params.object.spec").is_empty());
    }

    #[test]
    fn lowers_optional_syntax_outside_strings() {
        assert_eq!(
            lower_optionals("object.spec.?initContainers.orValue([])"),
            "object.spec.fgOptField(\"initContainers\").orValue([])"
        );
        assert_eq!(
            lower_optionals("object.metadata.?annotations[?'a.b/c'].orValue('')"),
            "object.metadata.fgOptField(\"annotations\").fgOptIndex('a.b/c').orValue('')"
        );
        assert_eq!(
            lower_optionals("a.?b.c.orValue(1) == 'x.?y'"),
            "a.fgOptField(\"b\").fgOptSel(\"c\").orValue(1) == 'x.?y'"
        );
        assert_eq!(lower_optionals("optional.none()"), "fgOptNone()");
        assert_eq!(lower_optionals("[1, 2][0] > 1.5"), "[1, 2][0] > 1.5");
    }

    #[test]
    fn optional_semantics() {
        let pod = serde_json::json!({"metadata": {"annotations": {"a/b": "x"}}, "spec": {"containers": [{"name": "c"}]}});
        let t = |e: &str| eval(e, &pod).unwrap();
        assert_eq!(
            t("object.metadata.?annotations[?'a/b'].orValue('')"),
            Value::String(Arc::new("x".into()))
        );
        assert_eq!(
            t("object.metadata.?labels[?'a/b'].orValue('none')"),
            Value::String(Arc::new("none".into()))
        );
        assert_eq!(
            t("object.spec.?initContainers.orValue([]).size()"),
            Value::Int(0)
        );
        assert_eq!(t("object.spec.?containers.hasValue()"), Value::Bool(true));
        assert_eq!(
            t(
                "(object.spec.containers + object.spec.?initContainers.orValue([])).all(c, c.?securityContext.?privileged.orValue(false) == false)"
            ),
            Value::Bool(true)
        );
        assert_eq!(
            t("object.?spec.containers[0].name.orValue('')"),
            Value::String(Arc::new("c".into()))
        );
        // A plain selection inside an optional chain is strict.
        assert!(eval("object.?spec.missing.orValue(1)", &pod).is_err());
        assert!(matches!(
            t("object.metadata.annotations.orValue(1)"),
            Value::Map(_)
        ));
    }
}
