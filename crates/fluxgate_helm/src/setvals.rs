//! User values from the command line as Helm's strvals reads them: `--set a.b=1,c[0]=x`
//! (typed: `true`, `null`, int64), `--set-string`, `--set-json`, `--set-file`,
//! `--set-literal`; `\` escapes `,`, `.` and `=`.

use fluxgate_gotemplate::{MapRef, Value};

use crate::convert;
use crate::values::ValuesError;

fn as_map(v: &Value) -> Option<MapRef> {
    match v {
        Value::Map(m) => Some(m.clone()),
        _ => None,
    }
}

/// Applies one `--set`-style assignment list (`a.b=1,c[0]=x`) to `vals`. `as_string` keeps
/// every value a string (`--set-string`); `json` reads values as JSON (`--set-json`).
pub fn apply_set(vals: &Value, expr: &str, as_string: bool, json: bool) -> Result<(), ValuesError> {
    let Value::Map(root) = vals else {
        return Ok(());
    };
    let pairs: Vec<String> = if json {
        vec![expr.to_string()]
    } else {
        split_unescaped(expr, ',')
    };
    for pair in pairs {
        let Some(eq) = find_unescaped(&pair, '=') else {
            return Err(format!("key \"{pair}\" has no value").into());
        };
        let (key, raw) = (&pair[..eq], &pair[eq + 1..]);
        let value = if json {
            convert::from_json(raw)
                .map_err(|e| format!("failed parsing --set-json data {pair}: {e}"))?
        } else if raw.starts_with('{') && raw.ends_with('}') && !as_string {
            Value::list(
                split_unescaped(&raw[1..raw.len() - 1], ',')
                    .iter()
                    .map(|s| typed(&unescape(s), false))
                    .collect(),
            )
        } else {
            typed(&unescape(raw), as_string)
        };
        set_path(root, &split_unescaped(key, '.'), value)?;
    }
    Ok(())
}

/// `--set-literal K=V`: the whole text after the first `=` is one string value.
pub fn apply_literal(vals: &Value, expr: &str) -> Result<(), ValuesError> {
    let Value::Map(root) = vals else {
        return Ok(());
    };
    let Some((key, raw)) = expr.split_once('=') else {
        return Err(format!("key {expr:?} has no value").into());
    };
    set_path(root, &split_unescaped(key, '.'), Value::str(raw))
}

/// `--set-file K=PATH,...`: each value is the content of the file `read` returns.
pub fn apply_file(
    vals: &Value,
    expr: &str,
    read: &dyn Fn(&str) -> Result<String, ValuesError>,
) -> Result<(), ValuesError> {
    let Value::Map(root) = vals else {
        return Ok(());
    };
    for pair in split_unescaped(expr, ',') {
        let Some(eq) = find_unescaped(&pair, '=') else {
            return Err(format!("key \"{pair}\" has no value").into());
        };
        let content = read(&unescape(&pair[eq + 1..]))?;
        set_path(
            root,
            &split_unescaped(&pair[..eq], '.'),
            Value::from(content),
        )?;
    }
    Ok(())
}

/// strvals' typing: `true`/`false`, `null`, and int64 (no leading zero); else a string.
fn typed(s: &str, as_string: bool) -> Value {
    if as_string {
        return Value::str(s);
    }
    match s {
        _ if s.eq_ignore_ascii_case("true") => Value::Bool(true),
        _ if s.eq_ignore_ascii_case("false") => Value::Bool(false),
        _ if s.eq_ignore_ascii_case("null") => Value::Nil,
        "0" => Value::Int64(0),
        _ if !s.starts_with('0') => s
            .parse::<i64>()
            .map_or_else(|_| Value::str(s), Value::Int64),
        _ => Value::str(s),
    }
}

fn set_path(m: &MapRef, keys: &[String], value: Value) -> Result<(), ValuesError> {
    let Some((first, rest)) = keys.split_first() else {
        return Ok(());
    };
    let first = unescape(first);
    // `name[0]` indexes a list.
    if let Some(open) = first.find('[') {
        let name = first[..open].to_string();
        let idx: usize = first[open + 1..]
            .trim_end_matches(']')
            .parse()
            .map_err(|_| format!("failed to parse index in {first}"))?;
        if idx > 65536 {
            return Err(
                format!("index of {idx} is greater than maximum supported index of 65536").into(),
            );
        }
        let list = match m.borrow().get(&name) {
            Some(Value::List(l)) => l.borrow().clone(),
            _ => Vec::new(),
        };
        let mut list = list;
        while list.len() <= idx {
            list.push(Value::Nil);
        }
        if rest.is_empty() {
            list[idx] = value;
        } else {
            let inner = if let Value::Map(im) = &list[idx] {
                im.clone()
            } else {
                {
                    let v = Value::empty_map();
                    list[idx] = v.clone();
                    as_map(&v).ok_or("map")?
                }
            };
            set_path(&inner, rest, value)?;
        }
        m.borrow_mut().insert(name, Value::list(list));
        return Ok(());
    }
    if rest.is_empty() {
        m.borrow_mut().insert(first, value);
        return Ok(());
    }
    let existing = m.borrow().get(&first).cloned();
    let inner = if let Some(Value::Map(im)) = existing {
        im
    } else {
        {
            let v = Value::empty_map();
            m.borrow_mut().insert(first.clone(), v.clone());
            as_map(&v).ok_or("map")?
        }
    };
    set_path(&inner, rest, value)
}

fn find_unescaped(s: &str, c: char) -> Option<usize> {
    let mut esc = false;
    for (i, ch) in s.char_indices() {
        if esc {
            esc = false;
        } else if ch == '\\' {
            esc = true;
        } else if ch == c {
            return Some(i);
        }
    }
    None
}

fn split_unescaped(s: &str, c: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut esc = false;
    let mut braces = 0usize;
    for ch in s.chars() {
        if esc {
            cur.push('\\');
            cur.push(ch);
            esc = false;
        } else if ch == '\\' {
            esc = true;
        } else if ch == '{' {
            braces += 1;
            cur.push(ch);
        } else if ch == '}' {
            braces = braces.saturating_sub(1);
            cur.push(ch);
        } else if ch == c && braces == 0 {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(ch);
        }
    }
    out.push(cur);
    out
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for ch in s.chars() {
        if esc {
            out.push(ch);
            esc = false;
        } else if ch == '\\' {
            esc = true;
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_expressions() {
        let v = Value::empty_map();
        apply_set(&v, "a.b=1,c[1]=x,d=true,e=null,f=007,g\\.h=y", false, false).unwrap();
        assert_eq!(
            fluxgate_gotemplate::format::sprint_value(&v),
            "map[a:map[b:1] c:[<nil> x] d:true e:<nil> f:007 g.h:y]"
        );
        apply_set(&v, "a.b=2", true, false).unwrap();
        assert_eq!(v.get("a").and_then(|a| a.get("b")), Some(Value::str("2")));
    }

    #[test]
    fn literal_and_file_values() {
        let v = Value::empty_map();
        apply_literal(&v, "a.b=x,y=z").unwrap();
        apply_file(&v, "c=f.txt", &|p| Ok(format!("content of {p}"))).unwrap();
        assert_eq!(
            fluxgate_gotemplate::format::sprint_value(&v),
            "map[a:map[b:x,y=z] c:content of f.txt]"
        );
    }
}
