//! Plain-scalar resolution. Kubernetes tooling (kustomize, Flux: go-yaml v3) and Ansible
//! (PyYAML: YAML 1.1) read the same text differently: `yes` is a string to one and `true` to
//! the other, `0644` is 420 to PyYAML and 420 to go-yaml too, `1e3` is a float to go-yaml but
//! a string to PyYAML. The schema is chosen by the caller.

use crate::node::Value;

/// Which reader's rules resolve plain scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    /// go-yaml v3 as kustomize, Flux and Helm use it (YAML 1.2 core, with Go's integer forms).
    Kube,
    /// PyYAML's YAML 1.1 resolver, as Ansible uses it.
    Yaml11,
    /// go-yaml v2's YAML 1.1 resolver, as `sigs.k8s.io/yaml` reads text back into JSON: what
    /// Flux parses after post-build substitution. `y`, `on`, `no` are booleans, `~` null,
    /// `0x1F`, `017` and `1_000` integers, `1e3` and `08` floats.
    GoYamlV2,
}

/// Resolves a plain (unquoted, untagged) scalar.
#[must_use]
pub fn resolve_plain(text: &str, schema: Schema) -> Value {
    match schema {
        Schema::Kube => resolve_kube(text),
        Schema::Yaml11 => resolve_yaml11(text),
        Schema::GoYamlV2 => resolve_go_yaml_v2(text),
    }
}

fn resolve_go_yaml_v2(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    match text.as_bytes()[0] {
        // Go's ParseFloat on the text as written.
        b'.' => match text.parse::<f64>() {
            Ok(f) if is_yaml_float(text) => Value::Float(f),
            _ => Value::String(text.to_string()),
        },
        // A timestamp stays a string when read into a JSON-bound value; numbers are tried
        // with every underscore removed.
        b'0'..=b'9' | b'+' | b'-' => {
            let plain = text.replace('_', "");
            if let Some(i) = parse_go_int(&plain) {
                return Value::Int(i);
            }
            if let Some(u) = parse_go_uint(&plain) {
                #[expect(
                    clippy::cast_precision_loss,
                    reason = "JSON numbers past i64 are floats"
                )]
                return Value::Float(u as f64);
            }
            if is_yaml_float(&plain)
                && let Ok(f) = plain.parse::<f64>()
            {
                return Value::Float(f);
            }
            Value::String(text.to_string())
        }
        _ => Value::String(text.to_string()),
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` for what `ParseInt` refused as too large.
fn parse_go_uint(text: &str) -> Option<u64> {
    if text.starts_with(['-', '+']) {
        return None;
    }
    let (radix, digits) =
        if let Some(r) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (16, r)
        } else if let Some(r) = text.strip_prefix("0o").or_else(|| text.strip_prefix("0O")) {
            (8, r)
        } else if let Some(r) = text.strip_prefix("0b").or_else(|| text.strip_prefix("0B")) {
            (2, r)
        } else if text.len() > 1 && text.starts_with('0') {
            (8, &text[1..])
        } else {
            (10, text)
        };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

fn resolve_kube(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    let first = text.as_bytes()[0];
    if !(first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.') {
        return Value::String(text.to_string());
    }
    if let Some(i) = parse_go_int(text) {
        return Value::Int(i);
    }
    if is_yaml_float(text)
        && let Ok(f) = text.parse::<f64>()
    {
        return Value::Float(f);
    }
    Value::String(text.to_string())
}

/// Go's `strconv.ParseInt(s, 0, 64)`: decimal, `0x`, `0o`, `0b`, a leading `0` for octal,
/// underscores only between digits when a base prefix is present.
fn parse_go_int(text: &str) -> Option<i64> {
    let (neg, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if body.is_empty() {
        return None;
    }
    let (radix, digits, prefixed) =
        if let Some(r) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, r, true)
        } else if let Some(r) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (8, r, true)
        } else if let Some(r) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (2, r, true)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..], true)
        } else {
            (10, body, false)
        };
    if digits.is_empty() {
        return None;
    }
    let cleaned: String = if prefixed && digits.contains('_') {
        if digits.starts_with('_') && radix != 8 || digits.ends_with('_') || digits.contains("__") {
            return None;
        }
        digits.replace('_', "")
    } else {
        digits.to_string()
    };
    if cleaned.is_empty() || !cleaned.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = i128::from_str_radix(&cleaned, radix).ok()?;
    let v = if neg { -magnitude } else { magnitude };
    i64::try_from(v).ok()
}

/// go-yaml v3's float syntax: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_float(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if int_digits == 0 && i == frac_start {
            return false;
        }
    } else if int_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

fn resolve_yaml11(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    if let Some(i) = yaml11_int(text) {
        return Value::Int(i);
    }
    if let Some(f) = yaml11_float(text) {
        return Value::Float(f);
    }
    Value::String(text.to_string())
}

fn split_sign(text: &str) -> (bool, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    }
}

/// PyYAML's int: `0b`, `0x`, leading-`0` octal, decimal with `_`, and sexagesimal `1:30`.
fn yaml11_int(text: &str) -> Option<i64> {
    let (neg, body) = split_sign(text);
    if body.is_empty() {
        return None;
    }
    let apply = |m: i128| i64::try_from(if neg { -m } else { m }).ok();
    if let Some(r) = body.strip_prefix("0b") {
        let d = r.replace('_', "");
        return if !d.is_empty() && d.chars().all(|c| c == '0' || c == '1') {
            apply(i128::from_str_radix(&d, 2).ok()?)
        } else {
            None
        };
    }
    if let Some(r) = body.strip_prefix("0x") {
        let d = r.replace('_', "");
        return if !d.is_empty() && d.chars().all(|c| c.is_ascii_hexdigit()) {
            apply(i128::from_str_radix(&d, 16).ok()?)
        } else {
            None
        };
    }
    if body.contains(':') {
        let mut parts = body.split(':');
        let head = parts.next()?.replace('_', "");
        if head.is_empty() || head.starts_with('0') || !head.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let mut total: i128 = head.parse().ok()?;
        for p in parts {
            if p.is_empty() || p.len() > 2 || !p.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let v: i128 = p.parse().ok()?;
            if v > 59 {
                return None;
            }
            total = total.checked_mul(60)?.checked_add(v)?;
        }
        return apply(total);
    }
    if !body.chars().all(|c| c.is_ascii_digit() || c == '_') || !body.as_bytes()[0].is_ascii_digit()
    {
        return None;
    }
    let d = body.replace('_', "");
    if d.len() > 1 && d.starts_with('0') {
        return if d.chars().all(|c| ('0'..='7').contains(&c)) {
            apply(i128::from_str_radix(&d, 8).ok()?)
        } else {
            None
        };
    }
    if body.starts_with('_') {
        return None;
    }
    apply(d.parse().ok()?)
}

/// PyYAML's float: a dot is required (`1e3` stays a string), exponent sign required.
fn yaml11_float(text: &str) -> Option<f64> {
    let (neg, body) = split_sign(text);
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let int_part = &body[..i];
    if i >= b.len() || b[i] != b'.' {
        return None;
    }
    if !int_part.is_empty() && !int_part.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    i += 1;
    let frac_start = i;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    if int_part.is_empty() && i == frac_start {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i >= b.len() || !(b[i] == b'-' || b[i] == b'+') {
            return None;
        }
        i += 1;
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    let v: f64 = body.replace('_', "").parse().ok()?;
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_schema() {
        assert_eq!(
            resolve_plain("yes", Schema::Kube),
            Value::String("yes".into())
        );
        assert_eq!(resolve_plain("true", Schema::Kube), Value::Bool(true));
        assert_eq!(resolve_plain("0777", Schema::Kube), Value::Int(511));
        assert_eq!(resolve_plain("0x1F", Schema::Kube), Value::Int(31));
        assert_eq!(resolve_plain("1e3", Schema::Kube), Value::Float(1000.0));
        assert_eq!(resolve_plain("1.0", Schema::Kube), Value::Float(1.0));
        assert_eq!(
            resolve_plain("12:30:00", Schema::Kube),
            Value::String("12:30:00".into())
        );
        assert_eq!(resolve_plain("~", Schema::Kube), Value::Null);
        assert_eq!(
            resolve_plain("1.2.3", Schema::Kube),
            Value::String("1.2.3".into())
        );
        assert_eq!(resolve_plain("-", Schema::Kube), Value::String("-".into()));
        assert_eq!(resolve_plain(".", Schema::Kube), Value::String(".".into()));
    }

    #[test]
    fn yaml11_schema() {
        assert_eq!(resolve_plain("yes", Schema::Yaml11), Value::Bool(true));
        assert_eq!(resolve_plain("Off", Schema::Yaml11), Value::Bool(false));
        assert_eq!(
            resolve_plain("y", Schema::Yaml11),
            Value::String("y".into())
        );
        assert_eq!(resolve_plain("0644", Schema::Yaml11), Value::Int(420));
        assert_eq!(
            resolve_plain("0o644", Schema::Yaml11),
            Value::String("0o644".into())
        );
        assert_eq!(resolve_plain("12:30:00", Schema::Yaml11), Value::Int(45000));
        assert_eq!(
            resolve_plain("1e3", Schema::Yaml11),
            Value::String("1e3".into())
        );
        assert_eq!(
            resolve_plain("1.5e+3", Schema::Yaml11),
            Value::Float(1500.0)
        );
        assert_eq!(resolve_plain("6443", Schema::Yaml11), Value::Int(6443));
        assert_eq!(
            resolve_plain("192.168.1.10", Schema::Yaml11),
            Value::String("192.168.1.10".into())
        );
        assert_eq!(resolve_plain("1_000", Schema::Yaml11), Value::Int(1000));
    }
}
