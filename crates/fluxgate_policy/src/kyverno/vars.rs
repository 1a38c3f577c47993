//! `{{ }}` substitution: innermost first, a string that is exactly one variable takes the
//! variable's value (any type), a variable inside text is inserted as text. `{{@}}` (the
//! pattern's current value) is left for the pattern, `\{{` is literal.

use jmespath::Rcvar;
use serde_json::Value as Json;

use super::jmes::search;
use crate::Error;

/// Substitutes the variables of every string in `v` (not keys).
pub fn substitute(v: &Json, data: &Rcvar) -> Result<Json, Error> {
    Ok(match v {
        Json::String(s) => substitute_str(s, data)?,
        Json::Array(a) => Json::Array(
            a.iter()
                .map(|x| substitute(x, data))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(m) => Json::Object(
            m.iter()
                .map(|(k, x)| Ok((k.clone(), substitute(x, data)?)))
                .collect::<Result<_, Error>>()?,
        ),
        other => other.clone(),
    })
}

fn text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The end (index of the first `}` of the closing `}}`) of the variable opened at `start`.
fn closing(chars: &[char], start: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = start;
    while i + 1 < chars.len() {
        if chars[i] == '{' && chars[i + 1] == '{' {
            depth += 1;
            i += 2;
        } else if chars[i] == '}' && chars[i + 1] == '}' {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    None
}

/// `a.b."c.d"[0]`: field lookups and indexes only.
fn is_plain_path(expr: &str) -> bool {
    let mut in_quote = false;
    expr.chars().all(|c| {
        if c == '"' {
            in_quote = !in_quote;
            return true;
        }
        in_quote || c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '-')
    }) && !expr.contains("[]")
}

/// Substitutes the variables of one string.
pub fn substitute_str(s: &str, data: &Rcvar) -> Result<Json, Error> {
    if !s.contains("{{") {
        return Ok(Json::String(s.to_string()));
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\\' && chars.get(i + 1) == Some(&'{') && chars.get(i + 2) == Some(&'{') {
            out.push_str("{{");
            i += 3;
            continue;
        }
        if chars[i] == '{'
            && chars.get(i + 1) == Some(&'{')
            && let Some(end) = closing(&chars, i)
        {
            let inner: String = chars[i + 2..end].iter().collect();
            let inner = text(&substitute_str(&inner, data)?);
            let expr = inner.trim();
            if expr.starts_with('@') {
                out.push_str(&format!("{{{{{inner}}}}}"));
            } else {
                let value = search(expr, data)?;
                // Kyverno's JMESPath fails on a missing key of a plain path; projections,
                // functions and `||` may give null.
                if value.is_null() && is_plain_path(expr) {
                    return Err(Error::UndefinedVariable {
                        expr: expr.to_string(),
                    });
                }
                if i == 0 && end + 2 == chars.len() {
                    return Ok(value);
                }
                out.push_str(&text(&value));
            }
            i = end + 2;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    Ok(Json::String(out))
}

#[cfg(test)]
mod tests {
    use super::super::jmes::to_var;
    use super::*;
    use serde_json::json;

    #[test]
    fn substitution() {
        let d = to_var(&json!({"request": {"object": {"spec": {"replicas": 3, "name": "web"}}}}));
        assert_eq!(
            substitute_str("{{ request.object.spec.replicas }}", &d).unwrap(),
            json!(3)
        );
        assert_eq!(
            substitute_str("name {{request.object.spec.name}}!", &d).unwrap(),
            json!("name web!")
        );
        assert_eq!(
            substitute_str(
                "{{ regex_match('^w', '{{request.object.spec.name}}') }}",
                &d
            )
            .unwrap(),
            json!(true)
        );
        assert!(substitute_str("{{ request.object.nope }}", &d).is_err());
        assert_eq!(substitute_str("{{@}}", &d).unwrap(), json!("{{@}}"));
    }
}
