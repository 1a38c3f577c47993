//! Between template values and YAML/JSON, as Helm's Go code converts them: values files and
//! `fromYaml` go through `sigs.k8s.io/yaml` (YAML to JSON, so every number is a float64);
//! `toYaml` is JSON first, then go-yaml v2 (integral floats print as integers, keys sorted);
//! `toJson` is `encoding/json` (sorted keys, `<`, `>`, `&` escaped).

use fluxgate_gotemplate::{MAX_DEPTH, Value};
use fluxgate_yaml::{
    EmitOptions, Node, Scalar, Shape, Tree, Value as Y, emit_tree, emit_tree_scalars,
};

use crate::values::ValuesError;

/// A YAML node as `sigs.k8s.io/yaml` unmarshals it into `interface{}`: numbers float64.
pub fn from_yaml_node(n: &Node) -> Value {
    from_yaml_at(n, 0)
}

fn from_yaml_at(n: &Node, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return Value::Nil;
    }
    match &n.value {
        Y::Null => Value::Nil,
        Y::Bool(b) => Value::Bool(*b),
        #[allow(clippy::cast_precision_loss)] // JSON numbers are float64 in Go.
        Y::Int(i) => Value::Float(*i as f64),
        Y::Float(f) => Value::Float(*f),
        Y::String(s) => Value::str(s),
        Y::Seq(items) => Value::list(items.iter().map(|x| from_yaml_at(x, depth + 1)).collect()),
        Y::Map(m) => Value::map(
            m.iter()
                .map(|(k, v)| (k.clone(), from_yaml_at(v, depth + 1)))
                .collect(),
        ),
    }
}

/// A template value as `toYaml` prints it (through JSON, then go-yaml): an integral float
/// below 1e21 as an integer (below 2^63; as a float above), bytes as their base64 text, a
/// host object as its text, no value as null; nothing below [`MAX_DEPTH`]. The printer walks
/// the values themselves: no YAML tree is built.
struct AsYaml<'v>(&'v Value, usize);

impl Tree for AsYaml<'_> {
    fn shape(&self, f: &mut dyn FnMut(Shape<'_>)) {
        let AsYaml(v, depth) = *self;
        if depth > MAX_DEPTH {
            return f(Shape::Scalar(Scalar::Null));
        }
        match v {
            Value::Missing | Value::Nil => f(Shape::Scalar(Scalar::Null)),
            Value::Bool(b) => f(Shape::Scalar(Scalar::Bool(*b))),
            Value::Int(i) | Value::Int64(i) => f(Shape::Scalar(Scalar::Int(*i))),
            #[allow(clippy::cast_possible_truncation)] // only integral values in range
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 1e21 => {
                f(Shape::Scalar(if x.abs() < 9.2e18 {
                    Scalar::Int(*x as i64)
                } else {
                    Scalar::Float(*x)
                }));
            }
            Value::Float(x) => f(Shape::Scalar(Scalar::Float(*x))),
            Value::String(s) => f(Shape::Scalar(Scalar::Str(s))),
            Value::Bytes(b) => f(Shape::Scalar(Scalar::Str(&base64_std(b)))),
            Value::Object(o) => f(Shape::Scalar(Scalar::Str(&o.display()))),
            Value::List(l) => {
                let items = l.borrow();
                let kids: Vec<AsYaml<'_>> = items.iter().map(|x| AsYaml(x, depth + 1)).collect();
                f(Shape::Seq(kids.iter().map(|k| k as &dyn Tree).collect()));
            }
            Value::Map(m) => {
                let entries = m.borrow();
                let kids: Vec<(&str, AsYaml<'_>)> = entries
                    .iter()
                    .map(|(k, x)| (k.as_str(), AsYaml(x, depth + 1)))
                    .collect();
                f(Shape::Map(
                    kids.iter().map(|(k, x)| (*k, x as &dyn Tree)).collect(),
                ));
            }
        }
    }
}

const TO_YAML: EmitOptions = EmitOptions {
    sort_keys: true,
    origins: false,
};

/// [`to_yaml`], and the byte range of each scalar in the text, in the order they are
/// written (see [`fluxgate_yaml::emit_tree_scalars`]): depth first, keys in go-yaml's order,
/// an empty map or list as one.
pub fn to_yaml_scalars(v: &Value) -> (String, Vec<std::ops::Range<usize>>) {
    let (mut out, mut ranges) = emit_tree_scalars(&AsYaml(v, 0), TO_YAML);
    if out.ends_with('\n') {
        out.pop();
        for r in &mut ranges {
            r.end = r.end.min(out.len());
        }
    }
    (out, ranges)
}

/// Helm's `toYaml`: the YAML text without its final newline.
pub fn to_yaml(v: &Value) -> String {
    let mut out = emit_tree(&AsYaml(v, 0), TO_YAML);
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

fn base64_std(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// `encoding/json`'s `Marshal` (with `escape_html`) or `MarshalIndent` with two spaces.
pub fn to_json(v: &Value, escape_html: bool, indent: bool) -> String {
    let mut out = String::new();
    write_json(&mut out, v, escape_html, indent.then_some(0), 0);
    out
}

fn write_json(out: &mut String, v: &Value, esc: bool, indent: Option<usize>, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("null");
        return;
    }
    let nl = |out: &mut String, level: usize| {
        if indent.is_some() {
            out.push('\n');
            out.push_str(&"  ".repeat(level));
        }
    };
    let level = indent.unwrap_or(0);
    match v {
        Value::Missing | Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => {
            use std::fmt::Write as _;
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&json_float(*f)),
        Value::String(s) => json_string(out, s, esc),
        Value::Bytes(b) => json_string(out, &base64_std(b), esc),
        Value::Object(o) => json_string(out, &o.display(), esc),
        Value::List(l) => {
            let l = l.borrow();
            if l.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, level + 1);
                write_json(out, x, esc, indent.map(|l| l + 1), depth + 1);
            }
            nl(out, level);
            out.push(']');
        }
        Value::Map(m) => {
            let m = m.borrow();
            if m.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, level + 1);
                json_string(out, k, esc);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_json(out, x, esc, indent.map(|l| l + 1), depth + 1);
            }
            nl(out, level);
            out.push('}');
        }
    }
}

/// encoding/json's float64: `'f'` form between 1e-6 and 1e21, else `'e'` with a short
/// exponent (`1e-07`, `1e+21`).
pub fn json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        let s = format!("{f}");
        return s;
    }
    // Shortest mantissa (strconv 'e' with -1 precision); Go shortens `e-07` to `e-7`.
    let short = format!("{f:e}");
    let (mant, exp) = short.split_once('e').unwrap_or((&short, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < 0 {
        format!("{mant}e-{}", exp.abs())
    } else {
        format!("{mant}e+{exp:02}")
    }
}

/// [`JSON_BYTES`]: a byte `encoding/json` always looks at (`"`, `\\`, a control, 0xE2 which
/// starts U+2028 and U+2029).
const ALWAYS: u8 = 1;
/// [`JSON_BYTES`]: a byte escaped only with HTML escaping (`<`, `>`, `&`).
const HTML: u8 = 2;
/// What each byte is to [`json_string`].
const JSON_BYTES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = ALWAYS;
        b += 1;
    }
    t[b'"' as usize] = ALWAYS;
    t[b'\\' as usize] = ALWAYS;
    t[0xE2] = ALWAYS;
    t[b'<' as usize] = HTML;
    t[b'>' as usize] = HTML;
    t[b'&' as usize] = HTML;
    t
};

/// `s` as `encoding/json` writes a string: `"`, `\` and control characters escaped (`\n`,
/// `\r`, `\t`, `\b`, `\f` short, the rest as `\u00XX`), U+2028 and U+2029 too, and with
/// `esc` (HTML escaping, not `toRawJson`) `<`, `>`, `&`. The text between escapes is copied in
/// runs: every character that needs one is ASCII except U+2028 and U+2029, so a byte scan
/// cannot land inside another character.
fn json_string(out: &mut String, s: &str, esc: bool) {
    let bytes = s.as_bytes();
    out.reserve(s.len() + 2);
    out.push('"');
    let (mut run, mut i) = (0, 0);
    let mask = if esc { ALWAYS | HTML } else { ALWAYS };
    while i < bytes.len() {
        // Runs of bytes that print as they are, one table lookup each.
        while i < bytes.len() && JSON_BYTES[usize::from(bytes[i])] & mask == 0 {
            i += 1;
        }
        let Some(&b) = bytes.get(i) else {
            break;
        };
        let (code, len) = match b {
            b'"' | b'\\' | 0..0x20 => (u32::from(b), 1),
            b'<' | b'>' | b'&' if esc => (u32::from(b), 1),
            0xE2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)) =>
            {
                (0x2000 + u32::from(bytes[i + 2]) - 0x80, 3)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&s[run..i]);
        match code {
            0x22 => out.push_str("\\\""),
            0x5C => out.push_str("\\\\"),
            0x0A => out.push_str("\\n"),
            0x0D => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            // Go 1.22 and later.
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            _ => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{code:04x}");
            }
        }
        i += len;
        run = i;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// A JSON document as `encoding/json` decodes it into `interface{}` (numbers float64).
pub fn from_json(text: &str) -> Result<Value, ValuesError> {
    let j: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() {
            "unexpected end of JSON input".to_string()
        } else {
            e.to_string()
        }
    })?;
    Ok(from_json_value(&j, 0))
}

fn from_json_value(j: &serde_json::Value, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return Value::Nil;
    }
    match j {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::str(s),
        serde_json::Value::Array(a) => {
            Value::list(a.iter().map(|x| from_json_value(x, depth + 1)).collect())
        }
        serde_json::Value::Object(o) => Value::map(
            o.iter()
                .map(|(k, v)| (k.clone(), from_json_value(v, depth + 1)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    /// Every escape `encoding/json` writes, between runs of text (ASCII and not; DEL is
    /// written as it is).
    #[test]
    fn json_strings_escape_as_go_does() {
        let s = "a\"b\\c\nd\re\tf\u{1}g<h>i&j\u{2028}k\u{2029}lé\u{7f}€\u{8}\u{c}";
        // With HTML escaping (`toJson`) and without (`toRawJson`).
        for (html, escaped) in [(true, r"\u003ch\u003ei\u0026j"), (false, "<h>i&j")] {
            let mut out = String::new();
            super::json_string(&mut out, s, html);
            let expected = [
                r#""a\"b\\c\nd\re\tf\u0001g"#,
                escaped,
                r"\u2028k\u2029lé",
                "\u{7f}",
                r#"€\b\f""#,
            ]
            .concat();
            assert_eq!(out, expected, "html: {html}");
        }
    }
}
