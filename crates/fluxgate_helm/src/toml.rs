//! `toToml` (BurntSushi/toml's encoder): top-level keys first, then tables, keys sorted.

use fluxgate_gotemplate::Value;

use crate::convert::json_float;

fn key(k: &str) -> String {
    if !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        k.to_string()
    } else {
        fluxgate_gotemplate::format::quote(k)
    }
}

fn scalar(v: &Value) -> Option<String> {
    Some(match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) | Value::Int64(i) => i.to_string(),
        Value::Float(f) => {
            let s = json_float(*f);
            if s.contains(['.', 'e']) {
                s
            } else {
                format!("{s}.0")
            }
        }
        Value::String(s) => fluxgate_gotemplate::format::quote(s),
        Value::List(l) => {
            let items: Option<Vec<String>> = l.borrow().iter().map(scalar).collect();
            format!("[{}]", items?.join(", "))
        }
        _ => return None,
    })
}

/// The TOML text of a map.
pub fn to_toml(v: &Value) -> String {
    let mut out = String::new();
    write_table(&mut out, v, &[], 0);
    out
}

fn write_table(out: &mut String, v: &Value, path: &[String], depth: usize) {
    let Value::Map(m) = v else { return };
    if depth > 100 {
        return;
    }
    let entries: Vec<(String, Value)> = m
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, x) in &entries {
        if let Some(s) = scalar(x) {
            out.push_str(&format!("{}{} = {s}\n", "  ".repeat(path.len()), key(k)));
        }
    }
    for (k, x) in &entries {
        if let Value::Map(_) = x {
            let mut p = path.to_vec();
            p.push(key(k));
            out.push_str(&format!("\n{}[{}]\n", "  ".repeat(path.len()), p.join(".")));
            write_table(out, x, &p, depth + 1);
        }
    }
}
