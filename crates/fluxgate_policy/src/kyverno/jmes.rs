//! Kyverno's `{{ }}` variables: JMESPath (the jmespath crate) with the Kyverno functions the
//! policies use registered on one runtime.

// Counts given to `replace`/`truncate` arrive as JMESPath numbers (f64); they are clamped at 0.
#![allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

use base64::Engine;
use jmespath::{Context, ErrorReason, JmespathError, Rcvar, Runtime, Variable};
use serde_json::Value as Json;

use crate::Error;

fn err(ctx: &Context<'_>, msg: impl Into<String>) -> JmespathError {
    JmespathError::from_ctx(ctx, ErrorReason::Parse(msg.into()))
}

fn arg_str<'a>(
    args: &'a [Rcvar],
    i: usize,
    ctx: &Context<'_>,
    f: &str,
) -> Result<&'a str, JmespathError> {
    args.get(i)
        .and_then(|a| a.as_string())
        .map(String::as_str)
        .ok_or_else(|| err(ctx, format!("{f}: argument {} must be a string", i + 1)))
}

fn var(v: Variable) -> Rcvar {
    Rcvar::new(v)
}

fn string(s: impl Into<String>) -> Rcvar {
    var(Variable::String(s.into()))
}

fn number(f: f64) -> Rcvar {
    var(serde_json::Number::from_f64(f).map_or(Variable::Null, Variable::Number))
}

/// A number, a quantity (`250m`, `1Gi`) or a duration (`1h30m`) as one f64 in base units.
fn scalar(v: &Variable) -> Option<(f64, Unit)> {
    match v {
        Variable::Number(n) => n.as_f64().map(|f| (f, Unit::Number)),
        Variable::String(s) => quantity(s)
            .map(|f| (f, Unit::Quantity))
            .or_else(|| duration(s).map(|f| (f, Unit::Duration))),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Number,
    Quantity,
    Duration,
}

/// A Kubernetes quantity in base units.
#[must_use]
pub fn quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0_f64.powi(4),
        "Pi" => 1024.0_f64.powi(5),
        "Ei" => 1024.0_f64.powi(6),
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    Some(n * mult)
}

/// A Go duration (`1h30m`, `300ms`) in seconds.
#[must_use]
pub fn duration(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut total = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..split].parse().ok()?;
        rest = &rest[split..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += n * mult;
        rest = &rest[unit_len..];
    }
    Some(total)
}

fn arith(
    args: &[Rcvar],
    ctx: &Context<'_>,
    name: &str,
    op: fn(f64, f64) -> f64,
) -> Result<Rcvar, JmespathError> {
    if args.len() != 2 {
        return Err(err(ctx, format!("{name}: expects 2 arguments")));
    }
    let a = scalar(&args[0]).ok_or_else(|| {
        err(
            ctx,
            format!("{name}: argument 1 is not a number, quantity or duration"),
        )
    })?;
    let b = scalar(&args[1]).ok_or_else(|| {
        err(
            ctx,
            format!("{name}: argument 2 is not a number, quantity or duration"),
        )
    })?;
    if name == "divide" && b.0 == 0.0 {
        return Err(err(ctx, "divide: division by zero"));
    }
    Ok(number(op(a.0, b.0)))
}

/// The runtime: the JMESPath built-ins and Kyverno's extra functions.
pub static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    let mut rt = Runtime::new();
    rt.register_builtin_functions();
    rt.register_function(
        "to_upper",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            Ok(string(arg_str(a, 0, c, "to_upper")?.to_uppercase()))
        }),
    );
    rt.register_function(
        "to_lower",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            Ok(string(arg_str(a, 0, c, "to_lower")?.to_lowercase()))
        }),
    );
    rt.register_function(
        "trim",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let s = arg_str(a, 0, c, "trim")?;
            let cut: Vec<char> = arg_str(a, 1, c, "trim")?.chars().collect();
            Ok(string(s.trim_matches(|ch| cut.contains(&ch))))
        }),
    );
    rt.register_function(
        "split",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let s = arg_str(a, 0, c, "split")?;
            let sep = arg_str(a, 1, c, "split")?;
            Ok(var(Variable::Array(s.split(sep).map(string).collect())))
        }),
    );
    rt.register_function(
        "equal_fold",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let x = arg_str(a, 0, c, "equal_fold")?;
            let y = arg_str(a, 1, c, "equal_fold")?;
            Ok(var(Variable::Bool(x.to_lowercase() == y.to_lowercase())))
        }),
    );
    rt.register_function(
        "replace_all",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            Ok(string(arg_str(a, 0, c, "replace_all")?.replace(
                arg_str(a, 1, c, "replace_all")?,
                arg_str(a, 2, c, "replace_all")?,
            )))
        }),
    );
    rt.register_function(
        "replace",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let s = arg_str(a, 0, c, "replace")?;
            let old = arg_str(a, 1, c, "replace")?;
            let new = arg_str(a, 2, c, "replace")?;
            let n = a.get(3).and_then(|v| v.as_number()).unwrap_or(-1.0);
            Ok(string(if n < 0.0 {
                s.replace(old, new)
            } else {
                s.replacen(old, new, n as usize)
            }))
        }),
    );
    rt.register_function(
        "truncate",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let s = arg_str(a, 0, c, "truncate")?;
            let n = a.get(1).and_then(|v| v.as_number()).unwrap_or(0.0).max(0.0) as usize;
            Ok(string(s.chars().take(n).collect::<String>()))
        }),
    );
    rt.register_function(
        "regex_match",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let re = arg_str(a, 0, c, "regex_match")?;
            let value = match a.get(1).map(|v| &**v) {
                Some(Variable::String(s)) => s.clone(),
                Some(Variable::Number(n)) => n.to_string(),
                _ => {
                    return Err(err(
                        c,
                        "regex_match: argument 2 must be a string or a number",
                    ));
                }
            };
            let re = regex::Regex::new(re).map_err(|e| err(c, format!("regex_match: {e}")))?;
            Ok(var(Variable::Bool(re.is_match(&value))))
        }),
    );
    rt.register_function(
        "regex_replace_all",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let re = arg_str(a, 0, c, "regex_replace_all")?;
            let src = match a.get(1).map(|v| &**v) {
                Some(Variable::String(s)) => s.clone(),
                Some(Variable::Number(n)) => n.to_string(),
                _ => {
                    return Err(err(
                        c,
                        "regex_replace_all: argument 2 must be a string or a number",
                    ));
                }
            };
            let rep = arg_str(a, 2, c, "regex_replace_all")?;
            let re =
                regex::Regex::new(re).map_err(|e| err(c, format!("regex_replace_all: {e}")))?;
            Ok(string(re.replace_all(&src, rep).into_owned()))
        }),
    );
    rt.register_function(
        "regex_replace_all_literal",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let re = arg_str(a, 0, c, "regex_replace_all_literal")?;
            let src = arg_str(a, 1, c, "regex_replace_all_literal")?;
            let rep = arg_str(a, 2, c, "regex_replace_all_literal")?;
            let re = regex::Regex::new(re)
                .map_err(|e| err(c, format!("regex_replace_all_literal: {e}")))?;
            Ok(string(
                re.replace_all(src, regex::NoExpand(rep)).into_owned(),
            ))
        }),
    );
    rt.register_function(
        "base64_decode",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let s = arg_str(a, 0, c, "base64_decode")?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| err(c, format!("base64_decode: {e}")))?;
            Ok(string(String::from_utf8_lossy(&bytes).into_owned()))
        }),
    );
    rt.register_function(
        "base64_encode",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            Ok(string(
                base64::engine::general_purpose::STANDARD.encode(arg_str(
                    a,
                    0,
                    c,
                    "base64_encode",
                )?),
            ))
        }),
    );
    rt.register_function(
        "pattern_match",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let p = arg_str(a, 0, c, "pattern_match")?;
            let value = match a.get(1).map(|v| &**v) {
                Some(Variable::String(s)) => s.clone(),
                Some(Variable::Number(n)) => n.to_string(),
                _ => {
                    return Err(err(
                        c,
                        "pattern_match: argument 2 must be a string or a number",
                    ));
                }
            };
            Ok(var(Variable::Bool(super::pattern::wildcard(p, &value))))
        }),
    );
    rt.register_function(
        "label_match",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let (Some(sel), Some(labels)) = (
                a.first().and_then(|v| v.as_object()),
                a.get(1).and_then(|v| v.as_object()),
            ) else {
                return Err(err(c, "label_match: expects two objects"));
            };
            Ok(var(Variable::Bool(
                sel.iter().all(|(k, v)| labels.get(k) == Some(v)),
            )))
        }),
    );
    rt.register_function(
        "add",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| arith(a, c, "add", |x, y| x + y)),
    );
    rt.register_function(
        "subtract",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| arith(a, c, "subtract", |x, y| x - y)),
    );
    rt.register_function(
        "multiply",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| arith(a, c, "multiply", |x, y| x * y)),
    );
    rt.register_function(
        "divide",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| arith(a, c, "divide", |x, y| x / y)),
    );
    rt.register_function(
        "modulo",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| arith(a, c, "modulo", |x, y| x % y)),
    );
    rt.register_function(
        "parse_json",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let s = arg_str(a, 0, c, "parse_json")?;
            let j: Json =
                serde_json::from_str(s).map_err(|e| err(c, format!("parse_json: {e}")))?;
            Ok(to_var(&j))
        }),
    );
    rt.register_function(
        "items",
        Box::new(|a: &[Rcvar], c: &mut Context<'_>| {
            let key = arg_str(a, 1, c, "items")?.to_string();
            let val = arg_str(a, 2, c, "items")?.to_string();
            let Some(obj) = a.first().and_then(|v| v.as_object()) else {
                return Err(err(c, "items: argument 1 must be an object"));
            };
            Ok(var(Variable::Array(
                obj.iter()
                    .map(|(k, v)| {
                        var(Variable::Object(BTreeMap::from([
                            (key.clone(), string(k.clone())),
                            (val.clone(), v.clone()),
                        ])))
                    })
                    .collect(),
            )))
        }),
    );
    rt
});

/// JSON as a JMESPath value.
pub fn to_var(j: &Json) -> Rcvar {
    var(match j {
        Json::Null => Variable::Null,
        Json::Bool(b) => Variable::Bool(*b),
        Json::Number(n) => Variable::Number(n.clone()),
        Json::String(s) => Variable::String(s.clone()),
        Json::Array(a) => Variable::Array(a.iter().map(to_var).collect()),
        Json::Object(m) => {
            Variable::Object(m.iter().map(|(k, v)| (k.clone(), to_var(v))).collect())
        }
    })
}

/// A JMESPath value as JSON; integral numbers become integers (jmespath computes in f64).
pub fn to_json(v: &Variable) -> Json {
    match v {
        Variable::Null | Variable::Expref(_) => Json::Null,
        Variable::Bool(b) => Json::Bool(*b),
        Variable::Number(n) => match n.as_f64() {
            #[allow(clippy::cast_possible_truncation)] // guarded: integral and in range
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 && n.as_i64().is_none() => {
                Json::from(f as i64)
            }
            _ => Json::Number(n.clone()),
        },
        Variable::String(s) => Json::String(s.clone()),
        Variable::Array(a) => Json::Array(a.iter().map(|x| to_json(x)).collect()),
        Variable::Object(m) => {
            Json::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

/// Evaluates `expr` over `data`.
pub fn search(expr: &str, data: &Rcvar) -> Result<Json, Error> {
    let compiled = compiled(expr)?;
    // `Expression::search` would first copy `data` through serde (jmespath's `specialized`
    // feature, which avoids it, needs a nightly compiler); the interpreter reads it as is.
    let mut ctx = jmespath::Context::new(expr, &RUNTIME);
    jmespath::interpret(data, compiled.as_ast(), &mut ctx)
        .map(|v| to_json(&v))
        .map_err(|e| Error::JmesPath {
            expr: expr.to_string(),
            reason: e.reason,
        })
}

/// Expressions compiled so far: the same few expressions are searched over every object.
/// Substituted expressions can differ per object, so the cache is emptied when it grows
/// past a bound.
static COMPILED: LazyLock<Mutex<HashMap<String, Arc<jmespath::Expression<'static>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

const COMPILED_BOUND: usize = 4096;

fn compiled(expr: &str) -> Result<Arc<jmespath::Expression<'static>>, Error> {
    if let Ok(cache) = COMPILED.lock()
        && let Some(e) = cache.get(expr)
    {
        return Ok(Arc::clone(e));
    }
    let runtime: &'static Runtime = &RUNTIME;
    let e = Arc::new(runtime.compile(expr).map_err(|e| Error::JmesPathParse {
        expr: expr.to_string(),
        reason: e.reason,
    })?);
    if let Ok(mut cache) = COMPILED.lock() {
        if cache.len() >= COMPILED_BOUND {
            cache.clear();
        }
        cache.insert(expr.to_string(), Arc::clone(&e));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::needless_pass_by_value)] // json! literals read best inline
    fn q(expr: &str, data: Json) -> Json {
        search(expr, &to_var(&data)).unwrap()
    }

    #[test]
    fn kyverno_functions() {
        let d = serde_json::json!({"a": {"x": "1", "y": "2"}, "s": "Hello", "l": ["a", "b"]});
        assert_eq!(q("s.to_upper(@)", d.clone()), "HELLO");
        assert_eq!(q("a.keys(@)", d.clone()), serde_json::json!(["x", "y"]));
        assert_eq!(q("regex_match('^H', s)", d.clone()), true);
        assert_eq!(q("divide('1Gi', '512Mi')", d.clone()), 2);
        assert_eq!(q("length(l)", d.clone()), 2);
        assert_eq!(q("missing || `[]` | length(@)", d), 0);
        assert_eq!(duration("1h30m"), Some(5400.0));
        assert_eq!(quantity("250m"), Some(0.25));
    }
}
