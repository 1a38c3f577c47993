//! The Ansible filters, tests and globals that minijinja lacks, with Ansible's semantics
//! (`'no' | bool` is false; `regex_search` returns None when nothing matches).

// minijinja converts filter arguments into owned values; taking them by reference would need
// a different (borrowing) argument type per filter for no gain.
#![allow(clippy::needless_pass_by_value)]
// Filters return `Result` uniformly so that each can fail the way Ansible's does.
#![allow(clippy::unnecessary_wraps)]
// Ansible's own argument names (`v`, `q`, `p`) mirror its documentation of ipaddr queries.
#![allow(clippy::many_single_char_names)]
// Match arms spell out Ansible's cases one by one even where two give the same answer.
#![allow(clippy::match_same_arms)]

use std::net::IpAddr;

use base64::Engine;
use ipnet::IpNet;
use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};

use crate::values::{node_to_value, py_str, value_to_node};

fn err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// Registers a filter under its short name and the `ansible.builtin.` (or given) FQCN.
macro_rules! both {
    ($env:ident, $name:literal, $f:expr) => {
        $env.add_filter($name, $f);
        $env.add_filter(concat!("ansible.builtin.", $name), $f);
    };
}

/// Adds every filter, test and global to `env`.
pub fn register(env: &mut Environment<'static>) {
    minijinja_contrib::add_to_environment(env);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    both!(env, "bool", to_bool);
    both!(env, "ternary", ternary);
    both!(env, "combine", combine);
    both!(env, "dict2items", dict2items);
    both!(env, "items2dict", items2dict);
    both!(env, "regex_replace", regex_replace);
    both!(env, "regex_search", regex_search);
    both!(env, "regex_findall", regex_findall);
    both!(env, "regex_escape", regex_escape);
    both!(env, "to_yaml", to_yaml);
    both!(env, "to_nice_yaml", to_yaml);
    both!(env, "from_yaml", from_yaml);
    both!(env, "to_json", to_json);
    both!(env, "to_nice_json", to_nice_json);
    both!(env, "from_json", from_json);
    both!(env, "mandatory", mandatory);
    both!(env, "b64encode", b64encode);
    both!(env, "b64decode", b64decode);
    both!(env, "flatten", flatten);
    both!(env, "union", union);
    both!(env, "difference", difference);
    both!(env, "intersect", intersect);
    both!(env, "symmetric_difference", symmetric_difference);
    both!(env, "extract", extract);
    both!(env, "basename", basename);
    both!(env, "dirname", dirname);
    both!(env, "quote", quote);
    both!(env, "type_debug", type_debug);
    both!(env, "string", to_string);
    both!(env, "int", to_int);
    both!(env, "zip", zip);
    both!(env, "split", split);
    both!(env, "hash", hash);
    both!(env, "checksum", hash);
    both!(env, "regex_match", regex_match_filter);
    for name in ["ipaddr", "ansible.utils.ipaddr", "ansible.netcommon.ipaddr"] {
        env.add_filter(name, ipaddr);
    }
    for name in ["ipwrap", "ansible.utils.ipwrap", "ansible.netcommon.ipwrap"] {
        env.add_filter(name, ipwrap);
    }
    for name in ["ansible.utils.ipv4", "ipv4"] {
        env.add_filter(name, ipv4);
    }
    for (name, t) in [
        (
            "version",
            version_test as fn(&str, &str, Option<&str>, Option<Kwargs>) -> Result<bool, Error>,
        ),
        ("version_compare", version_test),
        ("ansible.builtin.version", version_test),
    ] {
        env.add_test(name, t);
    }
    for name in ["match", "ansible.builtin.match"] {
        env.add_test(name, test_match);
    }
    for name in ["search", "regex", "ansible.builtin.search"] {
        env.add_test(name, test_search);
    }
    env.add_test("truthy", |v: Value| v.is_true());
    env.add_test("falsy", |v: Value| !v.is_true());
    env.add_test("subset", |a: Value, b: Value| -> Result<bool, Error> {
        let b = items(&b)?;
        Ok(items(&a)?.iter().all(|x| b.contains(x)))
    });
    env.add_test("superset", |a: Value, b: Value| -> Result<bool, Error> {
        let a = items(&a)?;
        Ok(items(&b)?.iter().all(|x| a.contains(x)))
    });
    env.add_test("contains", |a: Value, b: Value| -> Result<bool, Error> {
        Ok(items(&a)?.contains(&b))
    });
    env.add_test("ansible.utils.ipaddr", |v: Value| {
        parse_ip_or_net(&py_str(&v)).is_some()
    });
    env.add_test("ansible.utils.ipv4", |v: Value| {
        parse_ip_or_net(&py_str(&v)).is_some_and(|(ip, _)| ip.is_ipv4())
    });
    env.add_test("ansible.utils.ipv6", |v: Value| {
        parse_ip_or_net(&py_str(&v)).is_some_and(|(ip, _)| ip.is_ipv6())
    });
    env.add_global("omit", Value::from("__omit_place_holder__"));
    env.add_function("lookup", lookup);
    env.add_function("query", query);
    env.add_function("q", query);
}

fn items(v: &Value) -> Result<Vec<Value>, Error> {
    if v.is_undefined() {
        return Err(Error::from(ErrorKind::UndefinedError));
    }
    Ok(v.try_iter()?.collect())
}

/// Ansible's `bool`: true for `yes`, `on`, `1`, `true`, `y`, `t` (any case) and 1.
fn to_bool(v: Value) -> Result<Value, Error> {
    if v.is_undefined() {
        return Err(Error::from(ErrorKind::UndefinedError));
    }
    Ok(Value::from(match v.kind() {
        ValueKind::Bool => v.is_true(),
        ValueKind::None => false,
        ValueKind::Number => v.as_i64() == Some(1) || f64::try_from(v.clone()).ok() == Some(1.0),
        ValueKind::String => matches!(
            v.as_str()
                .unwrap_or_default()
                .trim()
                .to_lowercase()
                .as_str(),
            "yes" | "on" | "1" | "true" | "y" | "t" | "1.0"
        ),
        _ => false,
    }))
}

fn ternary(v: Value, yes: Value, no: Value, none: Option<Value>) -> Value {
    if v.is_none()
        && let Some(n) = none
    {
        return n;
    }
    if v.is_true() { yes } else { no }
}

fn merge(a: &Value, b: &Value, recursive: bool, list_merge: &str) -> Value {
    if a.kind() != ValueKind::Map || b.kind() != ValueKind::Map {
        if recursive
            && a.kind() == ValueKind::Seq
            && b.kind() == ValueKind::Seq
            && list_merge != "replace"
        {
            let av: Vec<Value> = a.try_iter().map(Iterator::collect).unwrap_or_default();
            let bv: Vec<Value> = b.try_iter().map(Iterator::collect).unwrap_or_default();
            let out: Vec<Value> = match list_merge {
                "append" => av.into_iter().chain(bv).collect(),
                "prepend" => bv.into_iter().chain(av).collect(),
                "append_rp" => {
                    let keep: Vec<Value> = av.into_iter().filter(|x| !bv.contains(x)).collect();
                    keep.into_iter().chain(bv).collect()
                }
                "prepend_rp" => bv
                    .iter()
                    .cloned()
                    .chain(av.into_iter().filter(|x| !bv.contains(x)))
                    .collect(),
                _ => bv,
            };
            return out.into_iter().collect();
        }
        return b.clone();
    }
    let mut out: indexmap::IndexMap<Value, Value> = indexmap::IndexMap::new();
    if let Ok(it) = a.try_iter() {
        for k in it {
            let v = a.get_item(&k).unwrap_or_default();
            out.insert(k, v);
        }
    }
    if let Ok(it) = b.try_iter() {
        for k in it {
            let bv = b.get_item(&k).unwrap_or_default();
            let nv = match out.get(&k) {
                Some(av) if recursive => merge(av, &bv, true, list_merge),
                _ => bv,
            };
            out.insert(k, nv);
        }
    }
    Value::from_pairs(out)
}

fn combine(base: Value, rest: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let recursive: bool = kwargs.get::<Option<bool>>("recursive")?.unwrap_or(false);
    let list_merge: String = kwargs
        .get::<Option<String>>("list_merge")?
        .unwrap_or_else(|| "replace".into());
    kwargs.assert_all_used()?;
    let mut acc = base;
    let mut others = Vec::new();
    for r in rest.iter() {
        if r.kind() == ValueKind::Seq {
            others.extend(r.try_iter()?);
        } else {
            others.push(r.clone());
        }
    }
    if acc.kind() == ValueKind::Seq {
        let mut it: Vec<Value> = acc.try_iter()?.collect();
        it.extend(others);
        others = it;
        acc = Value::from_pairs(Vec::<(Value, Value)>::new());
    }
    for o in others {
        if o.kind() != ValueKind::Map {
            return Err(err(format!(
                "failed to combine variables, expected dicts but got a '{}'",
                o.kind()
            )));
        }
        acc = merge(&acc, &o, recursive, &list_merge);
    }
    Ok(acc)
}

fn dict2items(v: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let kn: String = kwargs
        .get::<Option<String>>("key_name")?
        .unwrap_or_else(|| "key".into());
    let vn: String = kwargs
        .get::<Option<String>>("value_name")?
        .unwrap_or_else(|| "value".into());
    if v.kind() != ValueKind::Map {
        return Err(err(format!(
            "dict2items requires a dictionary, got {}",
            v.kind()
        )));
    }
    let mut out = Vec::new();
    for k in v.try_iter()? {
        let val = v.get_item(&k)?;
        out.push(Value::from_pairs([(kn.as_str(), k), (vn.as_str(), val)]));
    }
    Ok(out.into_iter().collect())
}

fn items2dict(v: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let kn: String = kwargs
        .get::<Option<String>>("key_name")?
        .unwrap_or_else(|| "key".into());
    let vn: String = kwargs
        .get::<Option<String>>("value_name")?
        .unwrap_or_else(|| "value".into());
    let mut out = Vec::new();
    for it in v.try_iter()? {
        out.push((it.get_attr(&kn)?, it.get_attr(&vn)?));
    }
    Ok(Value::from_pairs(out))
}

/// Python's regex syntax to Rust's: `(?P<n>` is accepted by both; `\1` in replacements
/// becomes `${1}`, `\g<name>` becomes `${name}`.
fn py_replacement(rep: &str) -> String {
    let mut out = String::new();
    let mut chars = rep.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek().copied() {
                Some(d) if d.is_ascii_digit() => {
                    let mut n = String::new();
                    while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                        n.push(d);
                        chars.next();
                    }
                    out.push_str(&format!("${{{n}}}"));
                }
                Some('g') => {
                    chars.next();
                    if chars.peek() == Some(&'<') {
                        chars.next();
                        let name: String = chars.by_ref().take_while(|c| *c != '>').collect();
                        out.push_str(&format!("${{{name}}}"));
                    } else {
                        out.push_str("\\g");
                    }
                }
                Some('n') => {
                    chars.next();
                    out.push('\n');
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

fn build_regex(pattern: &str, ignorecase: bool, multiline: bool) -> Result<regex::Regex, Error> {
    regex::RegexBuilder::new(pattern)
        .case_insensitive(ignorecase)
        .multi_line(multiline)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| err(format!("invalid regular expression: {e}")))
}

fn regex_replace(
    v: Value,
    pattern: String,
    rep: Option<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let ic = kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false);
    let ml = kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false);
    let count = kwargs.get::<Option<usize>>("count")?.unwrap_or(0);
    let re = build_regex(&pattern, ic, ml)?;
    let rep = py_replacement(&rep.unwrap_or_default());
    let s = py_str(&v);
    Ok(Value::from(
        re.replacen(&s, count, rep.as_str()).into_owned(),
    ))
}

fn regex_search(
    v: Value,
    pattern: String,
    groups: Rest<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let ic = kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false);
    let ml = kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false);
    let re = build_regex(&pattern, ic, ml)?;
    let s = py_str(&v);
    let Some(caps) = re.captures(&s) else {
        return Ok(Value::from(()));
    };
    if groups.is_empty() {
        return Ok(Value::from(caps.get(0).map_or("", |m| m.as_str())));
    }
    let mut out = Vec::new();
    for g in groups.iter() {
        let m = if let Some(n) = g.strip_prefix('\\').and_then(|n| n.parse::<usize>().ok()) {
            caps.get(n)
        } else if let Some(name) = g.strip_prefix("\\g<").and_then(|n| n.strip_suffix('>')) {
            caps.name(name)
        } else {
            None
        };
        out.push(m.map_or(Value::from(()), |m| Value::from(m.as_str())));
    }
    Ok(out.into_iter().collect())
}

fn regex_findall(v: Value, pattern: String, kwargs: Kwargs) -> Result<Value, Error> {
    let ic = kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false);
    let ml = kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false);
    let re = build_regex(&pattern, ic, ml)?;
    let s = py_str(&v);
    let n = re.captures_len();
    let mut out: Vec<Value> = Vec::new();
    for caps in re.captures_iter(&s) {
        if n <= 1 {
            out.push(Value::from(caps.get(0).map_or("", |m| m.as_str())));
        } else if n == 2 {
            out.push(Value::from(caps.get(1).map_or("", |m| m.as_str())));
        } else {
            out.push(
                (1..n)
                    .map(|i| Value::from(caps.get(i).map_or("", |m| m.as_str())))
                    .collect(),
            );
        }
    }
    Ok(out.into_iter().collect())
}

fn regex_escape(v: String) -> String {
    regex::escape(&v)
}

fn regex_match_filter(v: Value, pattern: String) -> Result<bool, Error> {
    let re = build_regex(&format!("^(?:{pattern})"), false, false)?;
    Ok(re.is_match(&py_str(&v)))
}

fn test_match(v: Value, pattern: String, kwargs: Kwargs) -> Result<bool, Error> {
    let ic = kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false);
    let ml = kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false);
    let re = build_regex(&format!("^(?:{pattern})"), ic, ml)?;
    Ok(re.is_match(&py_str(&v)))
}

fn test_search(v: Value, pattern: String, kwargs: Kwargs) -> Result<bool, Error> {
    let ic = kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false);
    let ml = kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false);
    let re = build_regex(&pattern, ic, ml)?;
    Ok(re.is_match(&py_str(&v)))
}

fn to_yaml(v: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let _ = kwargs.get::<Option<Value>>("indent");
    let _ = kwargs.get::<Option<Value>>("width");
    let _ = kwargs.get::<Option<Value>>("default_flow_style");
    let _ = kwargs.get::<Option<Value>>("sort_keys");
    let loc = fluxgate_diagnostics::Location::file("<to_yaml>");
    let node = value_to_node(&v, &loc);
    Ok(Value::from(fluxgate_yaml::emit_node(
        &node,
        fluxgate_yaml::EmitOptions::default(),
    )))
}

fn from_yaml(v: Value) -> Result<Value, Error> {
    let text = py_str(&v);
    let s = fluxgate_yaml::parse_stream("<from_yaml>", &text, fluxgate_yaml::Schema::Yaml11);
    if let Some(d) = s.diagnostics.first() {
        return Err(err(format!("from_yaml: {}", d.message)));
    }
    Ok(s.docs.first().map_or(Value::from(()), node_to_value))
}

fn to_json_value(v: &Value) -> serde_json::Value {
    value_to_node(v, &fluxgate_diagnostics::Location::file("<json>")).to_json()
}

fn to_json(v: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let _ = kwargs.get::<Option<Value>>("indent");
    let _ = kwargs.get::<Option<Value>>("sort_keys");
    // Python's json.dumps separators: ", " and ": ".
    Ok(Value::from(python_json(&to_json_value(&v))))
}

fn python_json(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Array(a) => {
            format!(
                "[{}]",
                a.iter().map(python_json).collect::<Vec<_>>().join(", ")
            )
        }
        serde_json::Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!(
                    "{}: {}",
                    serde_json::Value::String(k.clone()),
                    python_json(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

fn to_nice_json(v: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let _ = kwargs.get::<Option<Value>>("indent");
    let j = to_json_value(&v);
    Ok(Value::from(
        serde_json::to_string_pretty(&j).unwrap_or_default(),
    ))
}

fn from_json(v: Value) -> Result<Value, Error> {
    let j: serde_json::Value =
        serde_json::from_str(&py_str(&v)).map_err(|e| err(format!("from_json: {e}")))?;
    Ok(node_to_value(&fluxgate_yaml::Node::from_json(
        &j,
        &fluxgate_diagnostics::Location::file("<json>"),
    )))
}

fn mandatory(v: Value, msg: Option<String>) -> Result<Value, Error> {
    if v.is_undefined() {
        return Err(Error::new(
            ErrorKind::UndefinedError,
            msg.unwrap_or_else(|| "Mandatory variable not defined.".into()),
        ));
    }
    Ok(v)
}

fn b64encode(v: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(py_str(&v))
}

fn b64decode(v: Value) -> Result<String, Error> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(py_str(&v).trim())
        .map_err(|e| err(format!("b64decode: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn flatten_into(v: &Value, levels: Option<i64>, out: &mut Vec<Value>) {
    for x in v.try_iter().into_iter().flatten() {
        if x.kind() == ValueKind::Seq && levels != Some(0) {
            flatten_into(&x, levels.map(|l| l - 1), out);
        } else if !x.is_none() {
            out.push(x);
        }
    }
}

fn flatten(v: Value, levels: Option<i64>) -> Value {
    let mut out = Vec::new();
    flatten_into(&v, levels, &mut out);
    out.into_iter().collect()
}

fn dedup(v: Vec<Value>) -> Value {
    let mut out: Vec<Value> = Vec::new();
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out.into_iter().collect()
}

fn union(a: Value, b: Value) -> Result<Value, Error> {
    let mut v = items(&a)?;
    v.extend(items(&b)?);
    Ok(dedup(v))
}

fn difference(a: Value, b: Value) -> Result<Value, Error> {
    let b = items(&b)?;
    Ok(dedup(
        items(&a)?.into_iter().filter(|x| !b.contains(x)).collect(),
    ))
}

fn intersect(a: Value, b: Value) -> Result<Value, Error> {
    let b = items(&b)?;
    Ok(dedup(
        items(&a)?.into_iter().filter(|x| b.contains(x)).collect(),
    ))
}

fn symmetric_difference(a: Value, b: Value) -> Result<Value, Error> {
    let (a, b) = (items(&a)?, items(&b)?);
    let mut v: Vec<Value> = a.iter().filter(|x| !b.contains(x)).cloned().collect();
    v.extend(b.iter().filter(|x| !a.contains(x)).cloned());
    Ok(dedup(v))
}

fn extract(item: Value, container: Value, morekeys: Option<Value>) -> Result<Value, Error> {
    let mut v = container.get_item(&item)?;
    if v.is_undefined() {
        return Err(Error::new(
            ErrorKind::UndefinedError,
            format!("extract: '{item}' is undefined"),
        ));
    }
    if let Some(keys) = morekeys {
        let keys: Vec<Value> = if keys.kind() == ValueKind::Seq {
            items(&keys)?
        } else {
            vec![keys]
        };
        for k in keys {
            v = v.get_item(&k)?;
        }
    }
    Ok(v)
}

fn basename(v: Value) -> String {
    let s = py_str(&v);
    s.rsplit('/').next().unwrap_or_default().to_string()
}

fn dirname(v: Value) -> String {
    let s = py_str(&v);
    match s.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => s[..i].to_string(),
        None => String::new(),
    }
}

fn quote(v: Value) -> String {
    let s = py_str(&v);
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\"'\"'"))
    }
}

fn type_debug(v: Value) -> &'static str {
    match v.kind() {
        ValueKind::None | ValueKind::Undefined => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number => {
            if v.is_integer() {
                "int"
            } else {
                "float"
            }
        }
        ValueKind::String => "str",
        ValueKind::Seq | ValueKind::Iterable => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}

fn to_string(v: Value) -> String {
    py_str(&v)
}

/// Ansible's `int`: strings that are not numbers become the default (0).
fn to_int(v: Value, default: Option<i64>, base: Option<u32>) -> Result<Value, Error> {
    let d = default.unwrap_or(0);
    Ok(Value::from(match v.kind() {
        ValueKind::Number => v.as_i64().unwrap_or_else(|| {
            #[allow(clippy::cast_possible_truncation)] // Python's int() truncates too
            f64::try_from(v.clone()).map_or(d, |f| f.trunc() as i64)
        }),
        ValueKind::Bool => i64::from(v.is_true()),
        ValueKind::String => {
            let s = v.as_str().unwrap_or_default().trim();
            match base {
                Some(b) => i64::from_str_radix(s, b).unwrap_or(d),
                None => s
                    .parse::<i64>()
                    .ok()
                    .or_else(|| {
                        #[allow(clippy::cast_possible_truncation)]
                        // Python's int(float(s)) truncates
                        s.parse::<f64>().ok().map(|f| f.trunc() as i64)
                    })
                    .unwrap_or(d),
            }
        }
        _ => d,
    }))
}

fn zip(a: Value, rest: Rest<Value>) -> Result<Value, Error> {
    let mut lists = vec![items(&a)?];
    for r in rest.iter() {
        lists.push(items(r)?);
    }
    let n = lists.iter().map(Vec::len).min().unwrap_or(0);
    Ok((0..n)
        .map(|i| lists.iter().map(|l| l[i].clone()).collect::<Value>())
        .collect())
}

fn split(v: Value, sep: Option<String>, maxsplit: Option<i64>) -> Value {
    let s = py_str(&v);
    let parts: Vec<Value> = match (sep, maxsplit) {
        (Some(sep), Some(m)) if m >= 0 => s
            .splitn(usize::try_from(m).unwrap_or(0) + 1, sep.as_str())
            .map(Value::from)
            .collect(),
        (Some(sep), _) => s.split(sep.as_str()).map(Value::from).collect(),
        (None, _) => s.split_whitespace().map(Value::from).collect(),
    };
    parts.into_iter().collect()
}

fn hash(v: Value, algo: Option<String>) -> Result<String, Error> {
    use sha2::Digest;
    let s = py_str(&v);
    match algo.as_deref().unwrap_or("sha1") {
        "sha256" => Ok(format!("{:x}", sha2::Sha256::digest(s.as_bytes()))),
        "sha512" => Ok(format!("{:x}", sha2::Sha512::digest(s.as_bytes()))),
        other => Err(err(format!(
            "hash algorithm '{other}' is not supported offline"
        ))),
    }
}

fn parse_ip_or_net(s: &str) -> Option<(IpAddr, Option<u8>)> {
    let s = s.trim();
    let (addr, prefix) = match s.split_once('/') {
        Some((a, p)) => (a, Some(p.parse::<u8>().ok()?)),
        None => (s, None),
    };
    let ip: IpAddr = addr
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    if prefix.is_some_and(|p| p > max) {
        return None;
    }
    Some((ip, prefix))
}

/// The network address of `ip/prefix` (`prefix` is checked by [`parse_ip_or_net`]).
fn network_of(ip: IpAddr, prefix: u8) -> IpAddr {
    IpNet::new(ip, prefix).map_or(ip, |net| net.network())
}

/// The common queries of `ansible.utils.ipaddr`: none (validate), `address`, `network`,
/// `prefix`, `netmask`, `host`, `net`, `public`/`private`, `ipv4`/`ipv6`, and an integer index.
fn ipaddr_one(v: &Value, query: Option<&Value>) -> Value {
    let s = py_str(v);
    let Some((ip, prefix)) = parse_ip_or_net(&s) else {
        return Value::from(false);
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let p = prefix.unwrap_or(max);
    let Some(q) = query else {
        return Value::from(s);
    };
    if let Some(i) = q.as_i64() {
        let net = network_of(ip, p);
        return match net {
            IpAddr::V4(n) => {
                let base = u64::from(u32::from(n));
                u32::try_from(base + u64::try_from(i).unwrap_or(0))
                    .map_or(Value::from(false), |x| {
                        Value::from(format!("{}/{}", std::net::Ipv4Addr::from(x), p))
                    })
            }
            IpAddr::V6(n) => Value::from(format!(
                "{}/{}",
                std::net::Ipv6Addr::from(
                    u128::from(n).wrapping_add(u128::try_from(i).unwrap_or(0))
                ),
                p
            )),
        };
    }
    match q.as_str().unwrap_or_default() {
        "address" | "ip" => {
            if prefix.is_some() && network_of(ip, p) == ip && p < max {
                Value::from(false)
            } else {
                Value::from(ip.to_string())
            }
        }
        "network" => Value::from(network_of(ip, p).to_string()),
        "net" => {
            if prefix.is_some() && network_of(ip, p) == ip {
                Value::from(s)
            } else {
                Value::from(false)
            }
        }
        "host" => {
            if prefix.is_none() || network_of(ip, p) != ip || p == max {
                Value::from(format!("{ip}/{p}"))
            } else {
                Value::from(false)
            }
        }
        "prefix" => Value::from(i64::from(p)),
        "netmask" => match ip {
            IpAddr::V4(_) => IpNet::new(ip, p).map_or(Value::from(false), |net| {
                Value::from(net.netmask().to_string())
            }),
            IpAddr::V6(_) => Value::from(false),
        },
        "ipv4" | "4" => {
            if ip.is_ipv4() {
                Value::from(s)
            } else {
                Value::from(false)
            }
        }
        "ipv6" | "6" => {
            if ip.is_ipv6() {
                Value::from(s)
            } else {
                Value::from(false)
            }
        }
        "private" => {
            let private = match ip {
                IpAddr::V4(a) => a.is_private(),
                IpAddr::V6(a) => (a.segments()[0] & 0xfe00) == 0xfc00,
            };
            if private {
                Value::from(s)
            } else {
                Value::from(false)
            }
        }
        "public" => {
            let public = match ip {
                IpAddr::V4(a) => !(a.is_private() || a.is_loopback() || a.is_link_local()),
                IpAddr::V6(a) => !a.is_loopback(),
            };
            if public {
                Value::from(s)
            } else {
                Value::from(false)
            }
        }
        "wrap" => Value::from(wrap(&s)),
        _ => Value::from(false),
    }
}

fn ipaddr(v: Value, query: Option<Value>) -> Value {
    if v.kind() == ValueKind::Seq {
        let out: Vec<Value> = v
            .try_iter()
            .into_iter()
            .flatten()
            .map(|x| ipaddr_one(&x, query.as_ref()))
            .filter(Value::is_true)
            .collect();
        return out.into_iter().collect();
    }
    ipaddr_one(&v, query.as_ref())
}

fn ipv4(v: Value, query: Option<Value>) -> Value {
    let r = ipaddr_one(&v, None);
    if !r.is_true() || !parse_ip_or_net(&py_str(&v)).is_some_and(|(ip, _)| ip.is_ipv4()) {
        return Value::from(false);
    }
    match query {
        Some(q) => ipaddr_one(&v, Some(&q)),
        None => r,
    }
}

fn wrap(s: &str) -> String {
    match parse_ip_or_net(s) {
        Some((IpAddr::V6(_), _)) if !s.starts_with('[') => match s.split_once('/') {
            Some((a, p)) => format!("[{a}]/{p}"),
            None => format!("[{s}]"),
        },
        _ => s.to_string(),
    }
}

fn ipwrap(v: Value) -> Value {
    if v.kind() == ValueKind::Seq {
        return v
            .try_iter()
            .into_iter()
            .flatten()
            .map(|x| Value::from(wrap(&py_str(&x))))
            .collect();
    }
    Value::from(wrap(&py_str(&v)))
}

fn version_parts(s: &str) -> Vec<u64> {
    s.trim_start_matches('v')
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
        .collect()
}

use std::cmp::Ordering::{Equal, Greater, Less};

fn version_test(
    v: &str,
    other: &str,
    op: Option<&str>,
    kwargs: Option<Kwargs>,
) -> Result<bool, Error> {
    let op = op
        .map(str::to_string)
        .or_else(|| {
            kwargs
                .as_ref()
                .and_then(|k| k.get::<Option<String>>("operator").ok().flatten())
        })
        .unwrap_or_else(|| "eq".into());
    let (mut a, mut b) = (version_parts(v), version_parts(other));
    let n = a.len().max(b.len());
    a.resize(n, 0);
    b.resize(n, 0);
    let ord = a.cmp(&b);
    Ok(match op.as_str() {
        "<" | "lt" => ord == Less,
        "<=" | "le" => ord != Greater,
        ">" | "gt" => ord == Greater,
        ">=" | "ge" => ord != Less,
        "==" | "=" | "eq" => ord == Equal,
        "!=" | "<>" | "ne" => ord != Equal,
        other => return Err(err(format!("invalid version operator '{other}'"))),
    })
}

/// `lookup`: only what is knowable offline. `env` yields the default (empty); `vars` reads a
/// variable; everything else is an error naming the plugin.
fn lookup(state: &State, name: String, args: Rest<Value>) -> Result<Value, Error> {
    match name.trim_start_matches("ansible.builtin.") {
        "vars" => {
            let Some(first) = args.first() else {
                return Err(err("lookup('vars') needs a variable name"));
            };
            let key = py_str(first);
            let v = state.lookup(&key).unwrap_or_default();
            if v.is_undefined() {
                if let Some(d) = args.get(1) {
                    return Ok(d.clone());
                }
                return Err(Error::new(
                    ErrorKind::UndefinedError,
                    format!("'{key}' is undefined"),
                ));
            }
            Ok(v)
        }
        "env" => Ok(Value::from("")),
        other => Err(err(format!(
            "lookup('{other}') cannot be evaluated offline"
        ))),
    }
}

fn query(state: &State, name: String, args: Rest<Value>) -> Result<Value, Error> {
    let v = lookup(state, name, args)?;
    if v.kind() == ValueKind::Seq {
        Ok(v)
    } else {
        Ok(std::iter::once(v).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment<'static> {
        let mut e = Environment::new();
        register(&mut e);
        e
    }

    fn r(src: &str) -> String {
        env()
            .render_str(src, ())
            .unwrap_or_else(|e| format!("ERR {e}"))
    }

    #[test]
    fn ansible_bool() {
        assert_eq!(r("{{ 'no' | bool }}"), "False");
        assert_eq!(r("{{ 'Yes' | bool }}"), "True");
        assert_eq!(r("{{ 1 | bool }}"), "True");
    }

    #[test]
    fn collection_filters() {
        assert_eq!(
            r("{{ {'a': {'x': 1}} | combine({'a': {'y': 2}}, recursive=true) | to_json }}"),
            r#"{"a": {"x": 1, "y": 2}}"#
        );
        assert_eq!(
            r("{{ {'a': 1} | dict2items | to_json }}"),
            r#"[{"key": "a", "value": 1}]"#
        );
        assert_eq!(r("{{ [1, [2, [3]]] | flatten | to_json }}"), "[1, 2, 3]");
        assert_eq!(r("{{ [1,2] | union([2,3]) | to_json }}"), "[1, 2, 3]");
        assert_eq!(r("{{ [1,2] | difference([2,3]) | to_json }}"), "[1]");
        assert_eq!(r("{{ true | ternary('a', 'b') }}"), "a");
    }

    #[test]
    fn regex_filters() {
        assert_eq!(
            r(r"{{ 'ab12' | regex_replace('([a-z]+)(\\d+)', '\\2-\\1') }}"),
            "12-ab"
        );
        assert_eq!(r("{{ 'abc' | regex_search('x') is none }}"), "True");
        assert_eq!(r("{{ 'v1.2' is version('1.10', '<') }}"), "True");
    }

    #[test]
    fn ip_filters() {
        assert_eq!(
            r("{{ '10.0.0.5/24' | ansible.utils.ipaddr('address') }}"),
            "10.0.0.5"
        );
        assert_eq!(r("{{ '10.0.0.5/24' | ipaddr('network') }}"), "10.0.0.0");
        assert_eq!(r("{{ '10.0.0.0/24' | ipaddr(1) }}"), "10.0.0.1/24");
        assert_eq!(r("{{ 'fe80::1' | ansible.utils.ipwrap }}"), "[fe80::1]");
        assert_eq!(r("{{ 'nope' | ipaddr }}"), "False");
    }
}
