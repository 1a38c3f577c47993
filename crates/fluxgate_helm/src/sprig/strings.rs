//! sprig's string functions.

use fluxgate_gotemplate::{Arity, FuncError, Funcs, Value, format};

use super::{arg_int, arg_str, strslice, strval};

fn s(v: String) -> Result<Value, FuncError> {
    Ok(Value::from(v))
}

/// Go's `strings.Title`: the first letter of each word (after a non-letter) upper-cased.
fn title(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut prev_letter = false;
    for c in v.chars() {
        let is_sep = !(c.is_alphanumeric() || c == '_' || c == '\'');
        if !prev_letter && !is_sep {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_letter = !is_sep;
    }
    out
}

fn untitle(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut at_start = true;
    for c in v.chars() {
        if at_start && !c.is_whitespace() {
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
        at_start = c.is_whitespace();
    }
    out
}

pub fn indent(spaces: i64, v: &str) -> String {
    let pad = " ".repeat(usize::try_from(spaces).unwrap_or(0));
    format!("{pad}{}", v.replace('\n', &format!("\n{pad}")))
}

/// sprig's `trunc`: a negative count keeps the end.
fn trunc(c: i64, v: &str) -> String {
    let len = i64::try_from(v.len()).unwrap_or(i64::MAX);
    let cut = |i: i64| usize::try_from(i).unwrap_or(0);
    if c < 0 && len + c > 0 {
        return String::from_utf8_lossy(&v.as_bytes()[cut(len + c)..]).into_owned();
    }
    if c >= 0 && len > c {
        return String::from_utf8_lossy(&v.as_bytes()[..cut(c)]).into_owned();
    }
    v.to_string()
}

fn substr(start: i64, end: i64, v: &str) -> String {
    let len = i64::try_from(v.len()).unwrap_or(i64::MAX);
    let b = v.as_bytes();
    let at = |i: i64| usize::try_from(i).unwrap_or(0);
    let r = if start < 0 {
        &b[..at(end.min(len).max(0))]
    } else if end < 0 || end > len {
        &b[at(start.min(len))..]
    } else {
        &b[at(start.min(end))..at(end)]
    };
    String::from_utf8_lossy(r).into_owned()
}

/// Go's `strings.Fields`-free case conversions sprig takes from xstrings.
fn snake(v: &str, sep: char) -> String {
    let mut out = String::new();
    let chars: Vec<char> = v.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) && !out.ends_with(sep) {
                out.push(sep);
            }
            out.extend(c.to_lowercase());
        } else if c == '_' || c == '-' || c == ' ' {
            if !out.is_empty() && !out.ends_with(sep) {
                out.push(sep);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn camel(v: &str) -> String {
    v.split(['_', '-', ' '])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

pub fn add(f: &mut Funcs) {
    f.insert("upper", Arity::Exact(1), |_, a| {
        s(arg_str(a, 0)?.to_uppercase())
    });
    f.insert("lower", Arity::Exact(1), |_, a| {
        s(arg_str(a, 0)?.to_lowercase())
    });
    f.insert("title", Arity::Exact(1), |_, a| s(title(&arg_str(a, 0)?)));
    f.insert("untitle", Arity::Exact(1), |_, a| {
        s(untitle(&arg_str(a, 0)?))
    });
    f.insert("trim", Arity::Exact(1), |_, a| {
        s(arg_str(a, 0)?
            .trim_matches(|c: char| c.is_whitespace())
            .to_string())
    });
    f.insert("trimAll", Arity::Exact(2), |_, a| {
        let cut = arg_str(a, 0)?;
        s(arg_str(a, 1)?.trim_matches(|c| cut.contains(c)).to_string())
    });
    f.insert("trimSuffix", Arity::Exact(2), |_, a| {
        let (suf, v) = (arg_str(a, 0)?, arg_str(a, 1)?);
        s(v.strip_suffix(suf.as_str()).unwrap_or(&v).to_string())
    });
    f.insert("trimPrefix", Arity::Exact(2), |_, a| {
        let (pre, v) = (arg_str(a, 0)?, arg_str(a, 1)?);
        s(v.strip_prefix(pre.as_str()).unwrap_or(&v).to_string())
    });
    f.insert("nospace", Arity::Exact(1), |_, a| {
        s(arg_str(a, 0)?
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect())
    });
    f.insert("trunc", Arity::Exact(2), |_, a| {
        s(trunc(arg_int(a, 0)?, &arg_str(a, 1)?))
    });
    f.insert("substr", Arity::Exact(3), |_, a| {
        s(substr(arg_int(a, 0)?, arg_int(a, 1)?, &arg_str(a, 2)?))
    });
    f.insert("abbrev", Arity::Exact(2), |_, a| {
        let (w, v) = (arg_int(a, 0)?, arg_str(a, 1)?);
        if w < 4 || i64::try_from(v.len()).unwrap_or(0) <= w {
            return s(v);
        }
        s(format!(
            "{}...",
            &v[..usize::try_from(w - 3).unwrap_or(0).min(v.len())]
        ))
    });
    f.insert("repeat", Arity::Exact(2), |_, a| {
        let n = arg_int(a, 0)?;
        let v = arg_str(a, 1)?;
        let n = usize::try_from(n).map_err(|_| "strings: negative Repeat count".to_string())?;
        if n.saturating_mul(v.len()) > 64 << 20 {
            return Err("strings: Repeat output length overflow".into());
        }
        s(v.repeat(n))
    });
    f.insert("contains", Arity::Exact(2), |_, a| {
        Ok(Value::Bool(
            arg_str(a, 1)?.contains(arg_str(a, 0)?.as_str()),
        ))
    });
    f.insert("hasPrefix", Arity::Exact(2), |_, a| {
        Ok(Value::Bool(
            arg_str(a, 1)?.starts_with(arg_str(a, 0)?.as_str()),
        ))
    });
    f.insert("hasSuffix", Arity::Exact(2), |_, a| {
        Ok(Value::Bool(
            arg_str(a, 1)?.ends_with(arg_str(a, 0)?.as_str()),
        ))
    });
    f.insert("replace", Arity::Exact(3), |_, a| {
        let (old, new, src) = (arg_str(a, 0)?, arg_str(a, 1)?, arg_str(a, 2)?);
        if old.is_empty() {
            // Go inserts `new` around every rune.
            let mut out = new.clone();
            for c in src.chars() {
                out.push(c);
                out.push_str(&new);
            }
            return s(out);
        }
        s(src.replace(&old, &new))
    });
    f.insert("quote", Arity::AtLeast(0), |_, a| {
        s(a.iter()
            .filter(|v| !v.is_nil())
            .map(|v| format::quote(&strval(v)))
            .collect::<Vec<_>>()
            .join(" "))
    });
    f.insert("squote", Arity::AtLeast(0), |_, a| {
        s(a.iter()
            .filter(|v| !v.is_nil())
            .map(|v| format!("'{}'", strval(v)))
            .collect::<Vec<_>>()
            .join(" "))
    });
    f.insert("cat", Arity::AtLeast(0), |_, a| {
        s(a.iter()
            .filter(|v| !v.is_nil())
            .map(strval)
            .collect::<Vec<_>>()
            .join(" "))
    });
    f.insert("indent", Arity::Exact(2), |_, a| {
        s(indent(arg_int(a, 0)?, &arg_str(a, 1)?))
    });
    f.insert("nindent", Arity::Exact(2), |_, a| {
        s(format!("\n{}", indent(arg_int(a, 0)?, &arg_str(a, 1)?)))
    });
    f.insert("plural", Arity::Exact(3), |_, a| {
        let n = arg_int(a, 2)?;
        s(if n == 1 {
            arg_str(a, 0)?
        } else {
            arg_str(a, 1)?
        })
    });
    f.insert("snakecase", Arity::Exact(1), |_, a| {
        s(snake(&arg_str(a, 0)?, '_'))
    });
    f.insert("kebabcase", Arity::Exact(1), |_, a| {
        s(snake(&arg_str(a, 0)?, '-'))
    });
    f.insert("camelcase", Arity::Exact(1), |_, a| {
        s(camel(&arg_str(a, 0)?))
    });
    f.insert("initials", Arity::Exact(1), |_, a| {
        s(arg_str(a, 0)?
            .split_whitespace()
            .filter_map(|w| w.chars().next())
            .collect())
    });
    f.insert("wrap", Arity::Exact(2), |_, a| {
        s(wrap(
            usize::try_from(arg_int(a, 0)?).unwrap_or(0),
            &arg_str(a, 1)?,
        ))
    });
    f.insert("toString", Arity::Exact(1), |_, a| s(strval(&a[0])));
    f.insert("toStrings", Arity::Exact(1), |_, a| {
        Ok(Value::list(
            strslice(&a[0]).into_iter().map(Value::from).collect(),
        ))
    });
    f.insert("join", Arity::Exact(2), |_, a| {
        s(strslice(&a[1]).join(&arg_str(a, 0)?))
    });
    f.insert("split", Arity::Exact(2), |_, a| {
        let (sep, v) = (arg_str(a, 0)?, arg_str(a, 1)?);
        Ok(Value::map(
            go_split(&v, &sep, None)
                .into_iter()
                .enumerate()
                .map(|(i, p)| (format!("_{i}"), Value::from(p)))
                .collect(),
        ))
    });
    f.insert("splitn", Arity::Exact(3), |_, a| {
        let (sep, n, v) = (arg_str(a, 0)?, arg_int(a, 1)?, arg_str(a, 2)?);
        let parts = go_split(&v, &sep, usize::try_from(n).ok());
        Ok(Value::map(
            parts
                .into_iter()
                .enumerate()
                .map(|(i, p)| (format!("_{i}"), Value::from(p)))
                .collect(),
        ))
    });
    f.insert("splitList", Arity::Exact(2), |_, a| {
        let (sep, v) = (arg_str(a, 0)?, arg_str(a, 1)?);
        Ok(Value::list(
            go_split(&v, &sep, None)
                .into_iter()
                .map(Value::from)
                .collect(),
        ))
    });
    f.insert("sortAlpha", Arity::Exact(1), |_, a| {
        let mut v = match &a[0] {
            Value::List(_) => strslice(&a[0]),
            other => vec![strval(other)],
        };
        v.sort();
        Ok(Value::list(v.into_iter().map(Value::from).collect()))
    });
    f.insert("base", Arity::Exact(1), |_, a| {
        s(path_base(&arg_str(a, 0)?))
    });
    f.insert("dir", Arity::Exact(1), |_, a| s(path_dir(&arg_str(a, 0)?)));
    f.insert("ext", Arity::Exact(1), |_, a| {
        let b = arg_str(a, 0)?;
        s(b.rfind('.')
            .filter(|&i| !b[i..].contains('/'))
            .map(|i| b[i..].to_string())
            .unwrap_or_default())
    });
    f.insert("clean", Arity::Exact(1), |_, a| {
        s(path_clean(&arg_str(a, 0)?))
    });
    f.insert("isAbs", Arity::Exact(1), |_, a| {
        Ok(Value::Bool(arg_str(a, 0)?.starts_with('/')))
    });
}

/// Go's `strings.Split`/`SplitN` (an empty separator splits into runes).
fn go_split(v: &str, sep: &str, n: Option<usize>) -> Vec<String> {
    if n == Some(0) {
        return Vec::new();
    }
    if sep.is_empty() {
        return v.chars().map(String::from).collect();
    }
    match n {
        Some(n) => v.splitn(n, sep).map(String::from).collect(),
        None => v.split(sep).map(String::from).collect(),
    }
}

fn wrap(width: usize, v: &str) -> String {
    // goutils.Wrap: breaks at spaces so that lines are at most `width` long.
    let mut out = String::new();
    for (i, line) in v.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut col = 0;
        for (j, word) in line.split(' ').enumerate() {
            if j > 0 {
                if col + 1 + word.len() > width.max(1) {
                    out.push('\n');
                    col = 0;
                } else {
                    out.push(' ');
                    col += 1;
                }
            }
            out.push_str(word);
            col += word.len();
        }
    }
    out
}

/// Go's `path.Clean`.
pub fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// Go's `path.Base`.
pub fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

/// Go's `path.Dir`.
pub fn path_dir(p: &str) -> String {
    let dir = p.rfind('/').map_or("", |i| &p[..=i]);
    path_clean(dir)
}
