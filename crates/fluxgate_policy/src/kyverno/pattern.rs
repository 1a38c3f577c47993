//! Kyverno validate patterns: a partial object whose keys may carry anchors and whose scalar
//! values are wildcards, comparisons, ranges and `|`/`&` combinations.
//!
//! Anchors: `(key)` conditional (when the value does not match, the enclosing element is
//! skipped), `<(key)` global (a mismatch skips the rule), `=(key)` equality (checked only when
//! the key is present), `^(key)` existence (at least one list element matches), `X(key)`
//! negation (the key must be absent). `+(key)` is a mutate anchor and is ignored.

// Patterns compare numbers and quantities for exact equality, as Kyverno does.
#![allow(clippy::float_cmp)]

use serde_json::Value as Json;

use super::jmes::{duration, quantity};

/// Why a pattern did not match.
#[derive(Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The value at this path does not match.
    Fail(String),
    /// A conditional anchor did not hold: the element (or, at the top, the rule) is skipped.
    Conditional(String),
    /// A global anchor did not hold: the rule is skipped.
    Global(String),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Anchor {
    None,
    Conditional,
    Global,
    Equality,
    Existence,
    Negation,
    AddIfAbsent,
}

fn anchor(key: &str) -> (Anchor, &str) {
    let inner = |prefix: &str| key.strip_prefix(prefix).and_then(|k| k.strip_suffix(')'));
    if let Some(k) = inner("(") {
        return (Anchor::Conditional, k);
    }
    if let Some(k) = inner("<(") {
        return (Anchor::Global, k);
    }
    if let Some(k) = inner("=(") {
        return (Anchor::Equality, k);
    }
    if let Some(k) = inner("^(") {
        return (Anchor::Existence, k);
    }
    if let Some(k) = inner("X(") {
        return (Anchor::Negation, k);
    }
    if let Some(k) = inner("+(") {
        return (Anchor::AddIfAbsent, k);
    }
    (Anchor::None, key)
}

/// Validates `value` (None: absent) against `pattern` at `path`.
pub fn validate(value: Option<&Json>, pattern: &Json, path: &str) -> Result<(), Mismatch> {
    match pattern {
        Json::Object(p) => {
            let Some(Json::Object(m)) = value else {
                return Err(Mismatch::Fail(path.to_string()));
            };
            // Anchors that decide whether the element applies come first.
            for order in [0, 1] {
                for (key, pv) in p {
                    let (a, name) = anchor(key);
                    let is_condition = matches!(a, Anchor::Conditional | Anchor::Global);
                    if (order == 0) != is_condition {
                        continue;
                    }
                    let keys = matching_keys(m, name);
                    let sub = format!("{path}{name}/");
                    match a {
                        Anchor::Conditional | Anchor::Global => {
                            let ok = !keys.is_empty()
                                && keys
                                    .iter()
                                    .all(|k| validate(m.get(k.as_str()), pv, &sub).is_ok());
                            if !ok {
                                return Err(if a == Anchor::Global {
                                    Mismatch::Global(sub)
                                } else {
                                    Mismatch::Conditional(sub)
                                });
                            }
                        }
                        Anchor::Equality => {
                            for k in keys {
                                validate(m.get(k.as_str()), pv, &format!("{path}{k}/"))?;
                            }
                        }
                        Anchor::Negation => {
                            if !keys.is_empty() {
                                return Err(Mismatch::Fail(sub));
                            }
                        }
                        Anchor::Existence => {
                            let Some(Json::Array(items)) = m.get(name) else {
                                return Err(Mismatch::Fail(sub));
                            };
                            let elem = match pv {
                                Json::Array(ps) => ps.first().cloned().unwrap_or(Json::Null),
                                other => other.clone(),
                            };
                            if !items
                                .iter()
                                .any(|it| validate(Some(it), &elem, &sub).is_ok())
                            {
                                return Err(Mismatch::Fail(sub));
                            }
                        }
                        Anchor::AddIfAbsent => {}
                        Anchor::None => {
                            if keys.is_empty() {
                                // An absent key matches only a pattern that allows null.
                                validate(None, pv, &sub)?;
                            }
                            for k in keys {
                                validate(m.get(k.as_str()), pv, &format!("{path}{k}/"))?;
                            }
                        }
                    }
                }
            }
            Ok(())
        }
        Json::Array(ps) => {
            let Some(Json::Array(items)) = value else {
                return Err(Mismatch::Fail(path.to_string()));
            };
            let Some(first) = ps.first() else {
                return Ok(());
            };
            if first.is_object() {
                // Elements whose conditional anchors do not hold are skipped; when every
                // element is skipped, so is the list (Kyverno's validateArrayOfMaps).
                let mut applied = 0;
                let mut skipped = None;
                for (i, it) in items.iter().enumerate() {
                    match validate(Some(it), first, &format!("{path}{i}/")) {
                        Ok(()) => applied += 1,
                        Err(Mismatch::Conditional(p)) => skipped = Some(p),
                        Err(e) => return Err(e),
                    }
                }
                match skipped {
                    Some(p) if applied == 0 => Err(Mismatch::Conditional(p)),
                    _ => Ok(()),
                }
            } else {
                // Lists of scalars: element by element.
                for (i, it) in items.iter().enumerate() {
                    let p = ps.get(i).unwrap_or(first);
                    validate(Some(it), p, &format!("{path}{i}/"))?;
                }
                Ok(())
            }
        }
        scalar => {
            // A scalar pattern over a list: every element must match it.
            if let Some(Json::Array(items)) = value {
                for (i, it) in items.iter().enumerate() {
                    if !scalar_matches(Some(it), scalar) {
                        return Err(Mismatch::Fail(format!("{path}{i}/")));
                    }
                }
                return Ok(());
            }
            if scalar_matches(value, scalar) {
                Ok(())
            } else {
                Err(Mismatch::Fail(path.to_string()))
            }
        }
    }
}

/// The keys of `m` a pattern key names: itself, or every key its wildcard matches.
fn matching_keys(m: &serde_json::Map<String, Json>, name: &str) -> Vec<String> {
    if name.contains(['*', '?']) {
        m.keys().filter(|k| wildcard(name, k)).cloned().collect()
    } else if m.contains_key(name) {
        vec![name.to_string()]
    } else {
        Vec::new()
    }
}

/// Whether a scalar pattern matches a value (None: the key is absent).
fn scalar_matches(value: Option<&Json>, pattern: &Json) -> bool {
    match pattern {
        Json::Null => value.is_none_or(Json::is_null),
        Json::Bool(b) => value == Some(&Json::Bool(*b)),
        Json::Number(n) => match value {
            Some(Json::Number(v)) => v.as_f64() == n.as_f64(),
            Some(Json::String(s)) => s.parse::<f64>().ok() == n.as_f64(),
            _ => false,
        },
        Json::String(p) => {
            let Some(v) = value else {
                return false;
            };
            if v.is_null() {
                return p == "null";
            }
            p.split('|')
                .any(|alt| alt.split('&').all(|part| string_matches(v, part.trim())))
        }
        _ => false,
    }
}

fn value_text(v: &Json) -> Option<String> {
    match v {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        Json::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// One operand of a string pattern: `*`, `?*`, `>5`, `<=1Gi`, `!x`, `1-10`, `1!-10`, a
/// wildcard text.
fn string_matches(v: &Json, p: &str) -> bool {
    if p == "*" {
        return !v.is_null();
    }
    if v.is_object() || v.is_array() {
        return false;
    }
    let Some(text) = value_text(v) else {
        return false;
    };
    for (op, f) in [
        (">=", (|a: f64, b: f64| a >= b) as fn(f64, f64) -> bool),
        ("<=", |a, b| a <= b),
        (">", |a, b| a > b),
        ("<", |a, b| a < b),
    ] {
        if let Some(rhs) = p.strip_prefix(op) {
            return compare(&text, rhs.trim()).is_some_and(|(a, b)| f(a, b));
        }
    }
    if let Some(rhs) = p.strip_prefix('!') {
        return !string_matches(v, rhs);
    }
    // Ranges: `a-b` inside, `a!-b` outside (numbers or quantities on both sides).
    if let Some((lo, hi)) = p.split_once("!-")
        && let (Some(l), Some(h), Some(x)) = (number(lo), number(hi), number(&text))
    {
        return x < l || x > h;
    }
    if let Some((lo, hi)) = p.split_once('-')
        && !lo.is_empty()
        && let (Some(l), Some(h), Some(x)) = (number(lo), number(hi), number(&text))
    {
        return x >= l && x <= h;
    }
    if let (Some(a), Some(b)) = (number(&text), number(p))
        && (v.is_number() || !p.contains(['*', '?']))
        && text != p
    {
        return a == b && (v.is_number() || same_kind(&text, p));
    }
    wildcard(p, &text)
}

fn same_kind(a: &str, b: &str) -> bool {
    quantity(a).is_some() && quantity(b).is_some() || duration(a).is_some() && duration(b).is_some()
}

fn number(s: &str) -> Option<f64> {
    let s = s.trim();
    s.parse::<f64>()
        .ok()
        .or_else(|| quantity(s))
        .or_else(|| duration(s))
}

fn compare(value: &str, rhs: &str) -> Option<(f64, f64)> {
    if let (Ok(a), Ok(b)) = (value.parse::<f64>(), rhs.parse::<f64>()) {
        return Some((a, b));
    }
    if let (Some(a), Some(b)) = (quantity(value), quantity(rhs)) {
        return Some((a, b));
    }
    if let (Some(a), Some(b)) = (duration(value), duration(rhs)) {
        return Some((a, b));
    }
    None
}

/// Shell-style wildcards (the one matcher, shared with Ansible host patterns).
pub use fluxgate_fs::wildcard;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[allow(clippy::needless_pass_by_value)] // json! literals read best inline
    fn check(v: Json, p: Json) -> Result<(), Mismatch> {
        validate(Some(&v), &p, "/")
    }

    #[test]
    fn scalars_and_wildcards() {
        assert!(wildcard("*.example.com", "a.example.com"));
        assert!(!wildcard("?*", ""));
        assert!(check(json!({"a": "x"}), json!({"a": "?*"})).is_ok());
        assert!(check(json!({"a": 3}), json!({"a": ">2"})).is_ok());
        assert!(check(json!({"a": "1Gi"}), json!({"a": "<=2Gi"})).is_ok());
        assert!(check(json!({"a": "nginx:latest"}), json!({"a": "!*:latest"})).is_err());
        assert!(check(json!({"a": 5}), json!({"a": "1-10"})).is_ok());
        assert!(check(json!({}), json!({"a": "*"})).is_err());
        assert!(check(json!({"a": false}), json!({"a": false})).is_ok());
        assert!(check(json!({"a": "b"}), json!({"a": "a | b"})).is_ok());
    }

    #[test]
    fn anchors() {
        let pod = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:latest"}]}});
        // Conditional: only containers named b must not use latest.
        let p = json!({"spec": {"containers": [{"(name)": "b", "image": "!*:latest"}]}});
        assert!(matches!(check(pod.clone(), p), Err(Mismatch::Fail(_))));
        // No element named c: every element is skipped, and so is the rule.
        let p = json!({"spec": {"containers": [{"(name)": "c", "image": "!*:latest"}]}});
        assert!(matches!(
            check(pod.clone(), p),
            Err(Mismatch::Conditional(_))
        ));
        let p = json!({"spec": {"containers": [{"(name)": "a", "image": "!*:latest"}]}});
        assert!(check(pod.clone(), p).is_ok());
        // Equality: checked only when present; negation: must be absent.
        assert!(check(pod.clone(), json!({"spec": {"=(hostNetwork)": false}})).is_ok());
        assert!(
            check(
                json!({"spec": {"hostNetwork": true}}),
                json!({"spec": {"=(hostNetwork)": false}})
            )
            .is_err()
        );
        assert!(check(pod.clone(), json!({"spec": {"X(hostPID)": "null"}})).is_ok());
        // Existence: at least one element.
        assert!(
            check(
                pod.clone(),
                json!({"spec": {"^(containers)": [{"image": "x:*"}]}})
            )
            .is_ok()
        );
        // Global: a mismatch skips.
        assert!(matches!(
            check(
                pod,
                json!({"spec": {"<(hostNetwork)": true, "containers": []}})
            ),
            Err(Mismatch::Global(_))
        ));
    }
}
