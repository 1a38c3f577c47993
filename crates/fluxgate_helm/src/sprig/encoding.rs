//! Encodings: Helm's `toYaml`/`fromYaml`/`fromYamlArray`/`toJson`/`fromJson`/
//! `fromJsonArray`/`toToml`, sprig's `toPrettyJson`/`toRawJson`, base64/base32, hashes and
//! regular expressions (Go's RE2 syntax, which the `regex` crate shares).

use std::collections::BTreeMap;
use std::rc::Rc;

use base64::Engine as _;
use fluxgate_gotemplate::{Arity, FuncError, Funcs, Value};
use fluxgate_yaml::{Schema, Stream, parse_stream};
use sha2::Digest as _;

use super::{arg_str, strval, to_i64};
use crate::{convert, origins, roundtrip};

fn s(v: String) -> Result<Value, FuncError> {
    Ok(Value::from(v))
}

/// `sigs.k8s.io/yaml.Unmarshal` of `text` into `interface{}`: the first document, YAML 1.1
/// scalars (go-yaml v2), numbers as float64; `Err` with a message on bad YAML.
pub fn parse_yaml(text: &str) -> Result<Value, FuncError> {
    yaml_value(text, &parse_stream("fromYaml", text, Schema::GoYamlV2))
}

/// [`parse_yaml`] of `text` parsed as `stream`.
pub(crate) fn yaml_value(text: &str, stream: &Stream) -> Result<Value, FuncError> {
    if let Some(d) = stream.diagnostics.first() {
        // go-yaml's text: `yaml: line N: PROBLEM` (libyaml's problem without its context).
        let msg = d
            .message
            .strip_prefix("invalid YAML: ")
            .unwrap_or(&d.message);
        let msg = match msg.strip_prefix("while ") {
            Some(rest) => rest.split_once(", ").map_or(msg, |(_, p)| p),
            None => msg,
        };
        // The reader's refusal has no line (`yaml: control characters are not allowed`).
        if msg.starts_with(fluxgate_yaml::CONTROL_CHARACTERS) {
            return Err(format!(
                "error converting YAML to JSON: yaml: {}",
                fluxgate_yaml::CONTROL_CHARACTERS
            )
            .into());
        }
        // At the end of the text libyaml's mark stays on the last line.
        let last = u32::try_from(text.lines().count().max(1)).unwrap_or(u32::MAX);
        let line = d.location.as_ref().map_or(1, |l| l.line).min(last);
        return Err(format!("error converting YAML to JSON: yaml: line {line}: {msg}").into());
    }
    Ok(stream
        .docs
        .first()
        .map_or(Value::Nil, convert::from_yaml_node))
}

fn regex(p: &str) -> Result<regex::Regex, FuncError> {
    regex::Regex::new(p).map_err(|e| FuncError(format!("error parsing regexp: {e}")))
}

/// Go's replacement template (`$1`, `${name}`) in the regex crate's syntax, which is the same.
fn limit(n: i64, len: usize) -> usize {
    if n < 0 {
        len
    } else {
        usize::try_from(n).unwrap_or(0).min(len)
    }
}

pub fn add(f: &mut Funcs) {
    // `toYaml` of a map or list remembers what `fromYaml` reads back (crate::roundtrip).
    for name in ["toYaml", "mustToYaml", "toYamlPretty"] {
        f.insert(name, Arity::Exact(1), |c, a| {
            let (text, spans) = origins::to_yaml(c, &a[0]);
            let text: Rc<str> = Rc::from(text);
            roundtrip::record(c, &text, &a[0]);
            if let Some(spans) = spans {
                c.set_spans(spans);
            }
            Ok(Value::String(text))
        });
    }
    f.insert("fromYaml", Arity::Exact(1), |c, a| {
        let text = arg_str(a, 0)?;
        if let Some(v) = roundtrip::lookup(c, &text, false) {
            debug_assert_round_trip(&text, &v);
            return Ok(v);
        }
        Ok(match origins::from_yaml(c, &text) {
            Ok(Value::Map(m)) => Value::Map(m),
            Ok(Value::Nil) => Value::empty_map(),
            Ok(other) => error_map(format!("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}", json_kind(&other))),
            Err(e) => error_map(e.0),
        })
    });
    f.insert("fromYamlArray", Arity::Exact(1), |c, a| {
        let text = arg_str(a, 0)?;
        if let Some(v) = roundtrip::lookup(c, &text, true) {
            debug_assert_round_trip(&text, &v);
            return Ok(v);
        }
        Ok(match origins::from_yaml(c, &text) {
            Ok(Value::List(l)) => Value::List(l),
            Ok(Value::Nil) => Value::list(Vec::new()),
            Ok(other) => Value::list(vec![Value::from(format!("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type []interface {{}}", json_kind(&other)))]),
            Err(e) => Value::list(vec![Value::from(e.0)]),
        })
    });
    f.insert("toJson", Arity::Exact(1), |_, a| {
        s(convert::to_json(&a[0], true, false))
    });
    f.insert("mustToJson", Arity::Exact(1), |_, a| {
        s(convert::to_json(&a[0], true, false))
    });
    f.insert("toPrettyJson", Arity::Exact(1), |_, a| {
        s(convert::to_json(&a[0], true, true))
    });
    f.insert("mustToPrettyJson", Arity::Exact(1), |_, a| {
        s(convert::to_json(&a[0], true, true))
    });
    f.insert("toRawJson", Arity::Exact(1), |_, a| {
        s(convert::to_json(&a[0], false, false))
    });
    f.insert("mustToRawJson", Arity::Exact(1), |_, a| {
        s(convert::to_json(&a[0], false, false))
    });
    f.insert("fromJson", Arity::Exact(1), |c, a| {
        Ok(match origins::from_json(c, &arg_str(a, 0)?) {
            Ok(Value::Map(m)) => Value::Map(m),
            // `null` leaves Go's map nil: no error, an empty map.
            Ok(Value::Nil) => Value::empty_map(),
            Ok(other) => error_map(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(&other)
            )),
            Err(e) => error_map(e.0),
        })
    });
    f.insert("fromJsonArray", Arity::Exact(1), |c, a| {
        Ok(match origins::from_json(c, &arg_str(a, 0)?) {
            Ok(Value::List(l)) => Value::List(l),
            Ok(Value::Nil) => Value::list(Vec::new()),
            Ok(other) => Value::list(vec![Value::from(format!(
                "json: cannot unmarshal {} into Go value of type []interface {{}}",
                json_kind(&other)
            ))]),
            Err(e) => Value::list(vec![Value::from(e.0)]),
        })
    });
    f.insert("toToml", Arity::Exact(1), |_, a| {
        s(crate::toml::to_toml(&a[0]))
    });
    f.insert("b64enc", Arity::Exact(1), |_, a| {
        s(base64::engine::general_purpose::STANDARD.encode(strval(&a[0])))
    });
    f.insert("b64dec", Arity::Exact(1), |_, a| {
        Ok(
            match base64::engine::general_purpose::STANDARD.decode(strval(&a[0])) {
                Ok(b) => Value::from(String::from_utf8_lossy(&b).into_owned()),
                Err(e) => Value::from(e.to_string()),
            },
        )
    });
    f.insert("b32enc", Arity::Exact(1), |_, a| {
        s(base32(strval(&a[0]).as_bytes()))
    });
    f.insert("sha256sum", Arity::Exact(1), |_, a| {
        s(hex(&sha2::Sha256::digest(arg_str(a, 0)?.as_bytes())))
    });
    f.insert("sha512sum", Arity::Exact(1), |_, a| {
        s(hex(&sha2::Sha512::digest(arg_str(a, 0)?.as_bytes())))
    });
    f.insert("sha1sum", Arity::Exact(1), |_, a| {
        s(hex(&crate::sprig::crypto::sha1(arg_str(a, 0)?.as_bytes())))
    });
    f.insert("adler32sum", Arity::Exact(1), |_, a| {
        let (mut x, mut y) = (1u32, 0u32);
        for b in arg_str(a, 0)?.bytes() {
            x = (x + u32::from(b)) % 65521;
            y = (y + x) % 65521;
        }
        s(((y << 16) | x).to_string())
    });
    for name in ["regexMatch", "mustRegexMatch"] {
        f.insert(name, Arity::Exact(2), |_, a| {
            Ok(Value::Bool(
                regex(&arg_str(a, 0)?)?.is_match(&arg_str(a, 1)?),
            ))
        });
    }
    for name in ["regexFind", "mustRegexFind"] {
        f.insert(name, Arity::Exact(2), |_, a| {
            s(regex(&arg_str(a, 0)?)?
                .find(&arg_str(a, 1)?)
                .map(|m| m.as_str().to_string())
                .unwrap_or_default())
        });
    }
    for name in ["regexFindAll", "mustRegexFindAll"] {
        f.insert(name, Arity::Exact(3), |_, a| {
            let text = arg_str(a, 1)?;
            let all: Vec<Value> = regex(&arg_str(a, 0)?)?
                .find_iter(&text)
                .map(|m| Value::str(m.as_str()))
                .collect();
            let n = limit(to_i64(&a[2]), all.len());
            Ok(Value::list(all.into_iter().take(n).collect()))
        });
    }
    for name in ["regexReplaceAll", "mustRegexReplaceAll"] {
        f.insert(name, Arity::Exact(3), |_, a| {
            s(regex(&arg_str(a, 0)?)?
                .replace_all(&arg_str(a, 1)?, arg_str(a, 2)?.as_str())
                .into_owned())
        });
    }
    for name in ["regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"] {
        f.insert(name, Arity::Exact(3), |_, a| {
            s(regex(&arg_str(a, 0)?)?
                .replace_all(&arg_str(a, 1)?, regex::NoExpand(&arg_str(a, 2)?))
                .into_owned())
        });
    }
    for name in ["regexSplit", "mustRegexSplit"] {
        f.insert(name, Arity::Exact(3), |_, a| {
            let text = arg_str(a, 1)?;
            let re = regex(&arg_str(a, 0)?)?;
            let n = to_i64(&a[2]);
            let parts: Vec<Value> = if n < 0 {
                re.split(&text).map(Value::str).collect()
            } else {
                re.splitn(&text, usize::try_from(n).unwrap_or(0))
                    .map(Value::str)
                    .collect()
            };
            Ok(Value::list(parts))
        });
    }
    f.insert("regexQuoteMeta", Arity::Exact(1), |_, a| {
        s(regex::escape(&arg_str(a, 0)?))
    });
    // `urlquery` is Go's builtin (neither sprig nor Helm replaces it).
}

/// In debug builds (the tests), every round trip is checked against the parse it replaces.
fn debug_assert_round_trip(text: &str, got: &Value) {
    if cfg!(debug_assertions) {
        let parsed = parse_yaml(text);
        assert!(
            parsed.as_ref().is_ok_and(|p| roundtrip::identical(p, got)),
            "toYaml/fromYaml round trip differs from the parse of {text:?}: {got:?} vs {parsed:?}"
        );
    }
}

fn error_map(msg: String) -> Value {
    Value::map(BTreeMap::from([("Error".to_string(), Value::from(msg))]))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "array",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Map(_) => "object",
        _ => "number",
    }
}

pub fn hex(b: &[u8]) -> String {
    use std::fmt::Write as _;
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

fn base32(b: &[u8]) -> String {
    const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    for chunk in b.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let n = buf.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(ALPHA[usize::try_from((n >> (35 - i * 5)) & 31).unwrap_or(0)] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
