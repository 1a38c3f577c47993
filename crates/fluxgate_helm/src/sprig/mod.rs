//! The sprig functions Helm ships (sprig v3's `TxtFuncMap` minus `env` and `expandenv`), as
//! Go facts to match: `default` and `empty` with Go's zero values, `quote` of `%q`, `dict`,
//! `merge` with mergo's rules and Go's map aliasing, and so on. Functions that read the clock
//! or randomness are deterministic here (see [`crypto`]).

pub mod crypto;
mod dicts;
pub(crate) mod encoding;
mod lists;
mod math;
pub mod semver;
mod strings;
pub mod time;
pub use encoding::parse_yaml;
pub use strings::path_base;

use fluxgate_gotemplate::{FuncError, Funcs, Ty, Value, format};

/// Adds sprig's functions to `funcs`.
/// Go's builtins and sprig's functions but the seeded ones, built once per process: a copy
/// shares them (see [`Funcs::share`]) and adds [`crypto::add_seeded`]'s with its seed.
pub fn shared() -> Funcs {
    static SHARED: std::sync::LazyLock<Funcs> = std::sync::LazyLock::new(|| {
        let mut f = Funcs::new();
        add_unseeded(&mut f);
        set_params(&mut f);
        f.share()
    });
    SHARED.clone()
}

pub fn add(funcs: &mut Funcs) {
    add_unseeded(funcs);
    crypto::add(funcs);
    set_params(funcs);
}

fn add_unseeded(funcs: &mut Funcs) {
    strings::add(funcs);
    lists::add(funcs);
    dicts::add(funcs);
    math::add(funcs);
    encoding::add(funcs);
    semver::add(funcs);
    time::add(funcs);
}

fn set_params(funcs: &mut Funcs) {
    for (name, params) in PARAMS {
        funcs.set_params(name, params);
    }
}

/// The Go parameter types of the functions whose signatures are not all `interface{}`:
/// arguments of another type fail before the call, at the argument, as in Go.
pub const PARAMS: &[(&str, &[Ty])] = &[
    ("abbrev", &[Ty::Int, Ty::Str]),
    ("atoi", &[Ty::Str]),
    ("b64dec", &[Ty::Str]),
    ("b64enc", &[Ty::Str]),
    ("camelcase", &[Ty::Str]),
    ("contains", &[Ty::Str, Ty::Str]),
    ("fail", &[Ty::Str]),
    ("fromJson", &[Ty::Str]),
    ("fromYaml", &[Ty::Str]),
    ("fromYamlArray", &[Ty::Str]),
    ("get", &[Ty::Map, Ty::Str]),
    ("hasKey", &[Ty::Map, Ty::Str]),
    ("hasPrefix", &[Ty::Str, Ty::Str]),
    ("hasSuffix", &[Ty::Str, Ty::Str]),
    ("include", &[Ty::Str, Ty::Any]),
    ("indent", &[Ty::Int, Ty::Str]),
    ("kebabcase", &[Ty::Str]),
    ("kindIs", &[Ty::Str, Ty::Any]),
    ("lower", &[Ty::Str]),
    ("merge", &[Ty::Map, Ty::Map]),
    ("mergeOverwrite", &[Ty::Map, Ty::Map]),
    ("nindent", &[Ty::Int, Ty::Str]),
    ("omit", &[Ty::Map, Ty::Str]),
    ("pick", &[Ty::Map, Ty::Str]),
    ("pluck", &[Ty::Str, Ty::Map]),
    ("regexFind", &[Ty::Str, Ty::Str]),
    ("regexFindAll", &[Ty::Str, Ty::Str, Ty::Int]),
    ("regexMatch", &[Ty::Str, Ty::Str]),
    ("regexReplaceAll", &[Ty::Str, Ty::Str, Ty::Str]),
    ("regexReplaceAllLiteral", &[Ty::Str, Ty::Str, Ty::Str]),
    ("regexSplit", &[Ty::Str, Ty::Str, Ty::Int]),
    ("repeat", &[Ty::Int, Ty::Str]),
    ("replace", &[Ty::Str, Ty::Str, Ty::Str]),
    ("required", &[Ty::Str, Ty::Any]),
    ("semver", &[Ty::Str]),
    ("semverCompare", &[Ty::Str, Ty::Str]),
    ("set", &[Ty::Map, Ty::Str, Ty::Any]),
    ("sha1sum", &[Ty::Str]),
    ("sha256sum", &[Ty::Str]),
    ("snakecase", &[Ty::Str]),
    ("split", &[Ty::Str, Ty::Str]),
    ("splitList", &[Ty::Str, Ty::Str]),
    ("splitn", &[Ty::Str, Ty::Int, Ty::Str]),
    ("substr", &[Ty::Int, Ty::Int, Ty::Str]),
    ("ternary", &[Ty::Any, Ty::Any, Ty::Bool]),
    ("title", &[Ty::Str]),
    ("tpl", &[Ty::Str, Ty::Any]),
    ("trim", &[Ty::Str]),
    ("trimAll", &[Ty::Str, Ty::Str]),
    ("trimPrefix", &[Ty::Str, Ty::Str]),
    ("trimSuffix", &[Ty::Str, Ty::Str]),
    ("trunc", &[Ty::Int, Ty::Str]),
    ("typeIs", &[Ty::Str, Ty::Any]),
    ("unset", &[Ty::Map, Ty::Str]),
    ("untitle", &[Ty::Str]),
    ("upper", &[Ty::Str]),
];

/// sprig's `strval`: a string as it is, bytes as text, anything else `fmt.Sprintf("%v")`.
pub fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => String::from(&**s),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        other => format::sprint_value(other),
    }
}

/// sprig's `strslice`: a list's elements as strings (nils dropped), or one string.
pub fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l
            .borrow()
            .iter()
            .filter(|x| !x.is_nil())
            .map(strval)
            .collect(),
        Value::Nil | Value::Missing => Vec::new(),
        other => vec![strval(other)],
    }
}

/// sprig's `empty`: Go's zero values are empty; structs never are.
pub fn empty(v: &Value) -> bool {
    !v.truthy()
}

/// spf13/cast's `ToInt64` (errors give 0), which sprig's arithmetic uses.
pub fn to_i64(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        #[allow(clippy::cast_possible_truncation)] // Go truncates the float.
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => parse_int_string(s).unwrap_or(0),
        _ => 0,
    }
}

/// cast's string to int: Go's base prefixes (`0x`, `0o`, `0b`, a leading `0` is octal) after
/// dropping a `.0...` decimal part.
pub fn parse_int_string(s: &str) -> Option<i64> {
    let t = match s.split_once('.') {
        Some((int, frac)) if frac.bytes().all(|b| b == b'0') => int,
        _ => s,
    };
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let lower = digits.to_ascii_lowercase().replace('_', "");
    let v = if let Some(h) = lower.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(o) = lower.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()?
    } else if let Some(b) = lower.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()?
    } else if lower.len() > 1 && lower.starts_with('0') {
        i64::from_str_radix(&lower[1..], 8).ok()?
    } else {
        lower.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// cast's `ToFloat64` (errors give 0).
pub fn to_f64(v: &Value) -> f64 {
    match v {
        #[allow(clippy::cast_precision_loss)] // Go converts the same way.
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// The string argument `i`, or Go's message for a value of another type.
pub fn arg_str(a: &[Value], i: usize) -> Result<String, FuncError> {
    match a.get(i) {
        Some(Value::String(s)) => Ok(String::from(&**s)),
        Some(Value::Nil | Value::Missing) | None => Err("invalid value; expected string".into()),
        Some(other) => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )
        .into()),
    }
}

/// The int argument `i` (Go `int` parameters take `int` values and number constants).
pub fn arg_int(a: &[Value], i: usize) -> Result<i64, FuncError> {
    match a.get(i) {
        Some(Value::Int(n)) => Ok(*n),
        Some(Value::Nil | Value::Missing) | None => Err("invalid value; expected int".into()),
        Some(other) => Err(format!(
            "wrong type for value; expected int; got {}",
            other.type_name()
        )
        .into()),
    }
}

#[cfg(test)]
mod tests;
