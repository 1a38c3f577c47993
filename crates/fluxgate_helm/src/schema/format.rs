//! `format` assertions (drafts 4, 6 and 7 assert them in helm's compiler; 2019-09 and later
//! only annotate) and the regular expressions of `pattern`/`patternProperties` (Go's RE2
//! syntax, which the `regex` crate shares). Reasons are santhosh-tekuri/jsonschema's words
//! where they are its own; where it passes on a Go library's error, ours say the same thing
//! in other words.

use foldhash::{HashMap, HashMapExt as _};
use std::cell::RefCell;

use regex::Regex;
use serde_json::Value as Json;

thread_local! {
    static REGEXES: RefCell<HashMap<String, Option<Regex>>> = RefCell::new(HashMap::new());
}

/// A compiled pattern, cached per thread; `None` when it does not compile.
pub fn regex(pattern: &str) -> Option<Regex> {
    REGEXES.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(r) = c.get(pattern) {
            return r.clone();
        }
        if c.len() > 4096 {
            c.clear();
        }
        c.entry(pattern.to_string())
            .or_insert_with(|| Regex::new(pattern).ok())
            .clone()
    })
}

/// Why `v` is not a valid `format`; `None` when it is, or when the format is unknown or
/// does not apply to `v`'s type.
pub fn check(format: &str, v: &Json) -> Option<String> {
    let Json::String(s) = v else {
        return None;
    };
    match format {
        "ipv4" => ipv4(s),
        "ipv6" => ipv6(s),
        "hostname" => hostname(s),
        "email" => email(s),
        "date" => date(s),
        "date-time" => date_time(s),
        "uri" | "iri" => uri(s),
        "uuid" => uuid(s),
        "regex" => Regex::new(s).err().map(|e| e.to_string()),
        "json-pointer" => json_pointer(s),
        _ => None,
    }
}

fn ipv4(s: &str) -> Option<String> {
    let groups: Vec<&str> = s.split('.').collect();
    if groups.len() != 4 {
        return Some("expected four decimals".into());
    }
    for g in groups {
        if g.len() > 1 && g.starts_with('0') {
            return Some("leading zeros".into());
        }
        let Ok(n) = g.parse::<i64>() else {
            return Some(format!(
                "strconv.Atoi: parsing {}: invalid syntax",
                fluxgate_gotemplate::format::quote(g)
            ));
        };
        if !(0..=255).contains(&n) {
            return Some("decimal must be between 0 and 255".into());
        }
    }
    None
}

fn ipv6(s: &str) -> Option<String> {
    if !s.contains(':') {
        return Some("missing colon".into());
    }
    if s.contains('%') {
        return Some("zone id is not a part of ipv6 address".into());
    }
    s.parse::<std::net::Ipv6Addr>().err().map(|_| {
        format!(
            "ParseAddr({}): invalid IPv6 address",
            fluxgate_gotemplate::format::quote(s)
        )
    })
}

fn hostname(s: &str) -> Option<String> {
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.len() > 253 {
        return Some("more than 253 characters long".into());
    }
    for label in s.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Some("label must be 1 to 63 characters long".into());
        }
        if label.starts_with('-') {
            return Some("label starts with hyphen".into());
        }
        if label.ends_with('-') {
            return Some("label ends with hyphen".into());
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-'))
        {
            return Some(format!("invalid character {}", go_char(c)));
        }
    }
    None
}

fn go_char(c: char) -> String {
    let q = fluxgate_gotemplate::format::quote(&c.to_string());
    format!("'{}'", &q[1..q.len() - 1].replace("\\\"", "\""))
}

fn email(s: &str) -> Option<String> {
    if s.len() > 254 {
        return Some("more than 254 characters long".into());
    }
    let Some((local, domain)) = s.rsplit_once('@') else {
        return Some("missing @".into());
    };
    if local.len() > 64 {
        return Some("local part more than 64 characters long".into());
    }
    if let Some(ip) = domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        return match ip.strip_prefix("IPv6:") {
            Some(v6) => ipv6(v6).map(|e| format!("invalid domain: {e}")),
            None => ipv4(ip).map(|e| format!("invalid domain: {e}")),
        };
    }
    hostname(domain).map(|e| format!("invalid domain: {e}"))
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Why `s` is not a `date` (Go's `time.Parse` message), or `None`.
fn date(s: &str) -> Option<String> {
    let bad = || {
        Some(format!(
            "parsing time {} as \"2006-01-02\": cannot parse {} as \"2006\"",
            fluxgate_gotemplate::format::quote(s),
            fluxgate_gotemplate::format::quote(s)
        ))
    };
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return bad();
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return bad();
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => {
            return Some(format!(
                "parsing time {}: month out of range",
                fluxgate_gotemplate::format::quote(s)
            ));
        }
    };
    if d == 0 || d > days {
        return Some(format!(
            "parsing time {}: day out of range",
            fluxgate_gotemplate::format::quote(s)
        ));
    }
    None
}

fn date_time(s: &str) -> Option<String> {
    let Some(t) = s.find(['T', 't']) else {
        return Some("missing time separator 'T'".into());
    };
    if let Some(e) = date(&s[..t]) {
        return Some(e);
    }
    let time = &s[t + 1..];
    let re =
        regex(r"^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([zZ]|[+-]([01]\d|2[0-3]):[0-5]\d)$")?;
    (!re.is_match(time)).then(|| "invalid time".into())
}

fn uri(s: &str) -> Option<String> {
    let re = regex(r"^[A-Za-z][A-Za-z0-9+.\-]*:")?;
    (!re.is_match(s)).then(|| "relative url".into())
}

fn uuid(s: &str) -> Option<String> {
    let re =
        regex(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")?;
    (!re.is_match(s)).then(|| "invalid uuid".into())
}

fn json_pointer(s: &str) -> Option<String> {
    if !s.is_empty() && !s.starts_with('/') {
        return Some("not starting with /".into());
    }
    let bad = regex(r"~[^01]|~$")?;
    bad.is_match(s)
        .then(|| "~ must be followed by 0 or 1".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_say_why() {
        let s = |x: &str| Json::String(x.into());
        assert_eq!(
            check("ipv4", &s("1.2.3")).as_deref(),
            Some("expected four decimals")
        );
        assert_eq!(
            check("ipv4", &s("1.2.3.04")).as_deref(),
            Some("leading zeros")
        );
        assert_eq!(check("ipv4", &s("10.0.0.1")), None);
        assert_eq!(
            check("hostname", &s("a_b")).as_deref(),
            Some("invalid character '_'")
        );
        assert_eq!(check("date", &s("2024-02-29")), None);
        assert!(check("date", &s("2023-02-29")).is_some());
        assert_eq!(check("ipv4", &Json::from(3)), None);
        assert_eq!(check("made-up", &s("x")), None);
    }
}
