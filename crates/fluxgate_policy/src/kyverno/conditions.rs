//! Kyverno conditions (`preconditions`, `deny.conditions`): `key`, `operator`, `value`, with
//! the `any`/`all` blocks, after variable substitution.

// Kyverno compares numbers, quantities and durations for exact equality, as here.
#![allow(clippy::float_cmp)]

use serde_json::Value as Json;

use super::jmes::{duration, quantity};
use super::pattern::wildcard;
use crate::Error;

/// Evaluates one substituted condition.
pub fn condition(key: &Json, operator: &str, value: &Json) -> Result<bool, Error> {
    let op = operator.to_ascii_lowercase();
    // The set operators need a list or a string (a JSON list in text, a range, a value);
    // anything else (null: a variable that resolved to nothing) makes them false, as Kyverno's
    // handlers treat an invalid value type.
    let set_op = matches!(
        op.as_str(),
        "in" | "allin" | "notin" | "allnotin" | "anyin" | "anynotin"
    );
    if set_op && !(value.is_array() || value.is_string()) {
        return Ok(false);
    }
    Ok(match op.as_str() {
        "equals" | "equal" => equals(key, value),
        "notequals" | "notequal" => !equals(key, value),
        "in" | "allin" => all_in(key, value),
        "notin" | "allnotin" => {
            let keys = as_list(key);
            keys.iter().all(|k| !contains(value, k))
        }
        "anyin" => as_list(key).iter().any(|k| contains(value, k)),
        "anynotin" => as_list(key).iter().any(|k| !contains(value, k)),
        "greaterthan"
        | "greaterthanorequals"
        | "lessthan"
        | "lessthanorequals"
        | "durationgreaterthan"
        | "durationgreaterthanorequals"
        | "durationlessthan"
        | "durationlessthanorequals" => {
            let (a, b) = numbers(key, value).ok_or_else(|| Error::Incomparable {
                operator: operator.to_string(),
                key: Box::new(key.clone()),
                value: Box::new(value.clone()),
            })?;
            match op.trim_start_matches("duration") {
                "greaterthan" => a > b,
                "greaterthanorequals" => a >= b,
                "lessthan" => a < b,
                _ => a <= b,
            }
        }
        _ => {
            return Err(Error::UnknownOperator {
                operator: operator.to_string(),
            });
        }
    })
}

fn all_in(key: &Json, value: &Json) -> bool {
    as_list(key).iter().all(|k| contains(value, k))
}

fn as_list(v: &Json) -> Vec<Json> {
    match v {
        Json::Array(a) => a.clone(),
        other => vec![other.clone()],
    }
}

/// Whether the list (or scalar) `set` holds `item`; strings in `set` may be wildcards.
fn contains(set: &Json, item: &Json) -> bool {
    match set {
        Json::Array(a) => a.iter().any(|s| equals(item, s)),
        // A string set: a JSON list in text, or a single value.
        Json::String(s) => {
            if let Ok(Json::Array(a)) = serde_json::from_str::<Json>(s) {
                return a.iter().any(|x| equals(item, x));
            }
            // A numeric range `lo-hi`.
            if let Some((lo, hi)) = s.split_once('-')
                && let (Ok(lo), Ok(hi)) = (lo.trim().parse::<f64>(), hi.trim().parse::<f64>())
            {
                let x = match item {
                    Json::Number(n) => n.as_f64(),
                    Json::String(t) => t.parse::<f64>().ok(),
                    _ => None,
                };
                return x.is_some_and(|x| x >= lo && x <= hi);
            }
            equals(item, set)
        }
        other => equals(item, other),
    }
}

/// Kyverno equality: strings with wildcards in the value, numbers and quantities by value,
/// structures by equality.
fn equals(key: &Json, value: &Json) -> bool {
    match (key, value) {
        (Json::String(k), Json::String(v)) => {
            if k == v || wildcard(v, k) {
                return true;
            }
            match (quantity(k), quantity(v)) {
                (Some(a), Some(b)) if !k.is_empty() && !v.is_empty() => return a == b,
                _ => {}
            }
            matches!((duration(k), duration(v)), (Some(a), Some(b)) if a == b)
        }
        (Json::Number(a), Json::Number(b)) => a.as_f64() == b.as_f64(),
        (Json::Number(a), Json::String(s)) | (Json::String(s), Json::Number(a)) => {
            s.parse::<f64>().ok() == a.as_f64()
        }
        (Json::Bool(a), Json::String(s)) | (Json::String(s), Json::Bool(a)) => {
            s.parse::<bool>().ok() == Some(*a)
        }
        (a, b) => a == b,
    }
}

/// Two values as numbers of one kind (plain numbers compare with either kind): 0 number,
/// 1 quantity, 2 duration.
fn numbers(left: &Json, right: &Json) -> Option<(f64, f64)> {
    let parse = |value: &Json| -> Option<(f64, u8)> {
        match value {
            Json::Number(num) => num.as_f64().map(|f| (f, 0)),
            Json::String(text) => text
                .parse::<f64>()
                .ok()
                .map(|f| (f, 0))
                .or_else(|| quantity(text).map(|f| (f, 1)))
                .or_else(|| duration(text).map(|f| (f, 2))),
            _ => None,
        }
    };
    let (lhs, lkind) = parse(left)?;
    let (rhs, rkind) = parse(right)?;
    (lkind == rkind || lkind == 0 || rkind == 0).then_some((lhs, rhs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operators() {
        assert!(condition(&json!("CREATE"), "AnyIn", &json!(["CREATE", "UPDATE"])).unwrap());
        assert!(condition(&json!(["a", "b"]), "AnyNotIn", &json!(["a"])).unwrap());
        assert!(!condition(&json!(["a", "b"]), "AllNotIn", &json!(["a"])).unwrap());
        assert!(condition(&json!("nginx:1"), "Equals", &json!("nginx:*")).unwrap());
        assert!(condition(&json!(3), "GreaterThan", &json!("2")).unwrap());
        assert!(condition(&json!("2Gi"), "GreaterThan", &json!("1Gi")).unwrap());
        assert!(condition(&json!("1h"), "DurationLessThanOrEquals", &json!("2h")).unwrap());
        assert!(condition(&json!(1), "Nope", &json!(1)).is_err());
        assert!(!condition(&json!([5500, 0]), "AllNotIn", &json!("5000-6000")).unwrap());
        assert!(condition(&json!([7000]), "AnyNotIn", &json!("5000-6000")).unwrap());
        // A value that is neither a list nor a string: every set operator is false.
        assert!(!condition(&json!("a"), "AnyNotIn", &json!(null)).unwrap());
        assert!(!condition(&json!("a"), "NotIn", &json!(null)).unwrap());
    }
}
