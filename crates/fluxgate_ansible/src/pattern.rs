//! Host patterns of plays: `a:b`, `a,b`, `a:&b`, `a:!b`, globs, `~regex`, `group[0]`,
//! `group[1:3]`, and templated patterns (rendered with the extra vars only, as Ansible does
//! before any host is known).

use fluxgate_diagnostics::Location;

use crate::problem::{Problem, ProblemKind};
use minijinja::Value;

use crate::project::Data;
use crate::values::node_to_value;

/// The hosts a pattern selects, in inventory order of first match.
pub fn select(data: &Data, pattern: &str, loc: &Location) -> (Vec<String>, Vec<Problem>) {
    let mut diags = Vec::new();
    let text = if pattern.contains("{{") || pattern.contains("{%") {
        let mut pairs: Vec<(String, Value)> = data
            .extra_vars
            .iter()
            .map(|(k, v)| (k.clone(), node_to_value(v)))
            .collect();
        pairs.push(("groups".into(), data.groups_value.clone()));
        match data.env.render_str(pattern, Value::from_pairs(pairs)) {
            Ok(s) => s,
            Err(e) => {
                diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("cannot template hosts pattern '{pattern}': {e}"),
                    Some(loc.clone()),
                ));
                return (Vec::new(), diags);
            }
        }
    } else {
        pattern.to_string()
    };
    (evaluate(data, &text), diags)
}

fn split_terms(text: &str) -> Vec<String> {
    // `,` always separates; `:` separates unless the pattern is an IPv6 address or a range.
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if part.matches(':').count() > 1
            && !part.contains(":&")
            && !part.contains(":!")
            && part.parse::<std::net::Ipv6Addr>().is_ok()
        {
            out.push(part.to_string());
            continue;
        }
        let mut cur = String::new();
        let mut depth = 0;
        for c in part.chars() {
            match c {
                '[' => {
                    depth += 1;
                    cur.push(c);
                }
                ']' => {
                    depth -= 1;
                    cur.push(c);
                }
                ':' if depth == 0 => {
                    if !cur.trim().is_empty() {
                        out.push(cur.trim().to_string());
                    }
                    cur.clear();
                }
                c => cur.push(c),
            }
        }
        if !cur.trim().is_empty() {
            out.push(cur.trim().to_string());
        }
    }
    out
}

fn term_hosts(data: &Data, term: &str) -> Vec<String> {
    let inv = &data.inventory;
    let (base, subscript) = match (term.find('['), term.ends_with(']')) {
        (Some(i), true) if i > 0 => (&term[..i], Some(&term[i + 1..term.len() - 1])),
        _ => (term, None),
    };
    let hosts: Vec<String> = if base == "all" || base == "*" {
        inv.hosts.keys().cloned().collect()
    } else if inv.groups.contains_key(base) {
        inv.group_hosts(base)
    } else if inv.hosts.contains_key(base) {
        vec![base.to_string()]
    } else if let Some(re) = base.strip_prefix('~') {
        match regex::Regex::new(re) {
            Ok(re) => {
                let mut v: Vec<String> = Vec::new();
                for g in inv.groups.keys().filter(|g| re.is_match(g)) {
                    v.extend(inv.group_hosts(g));
                }
                v.extend(inv.hosts.keys().filter(|h| re.is_match(h)).cloned());
                v
            }
            Err(_) => Vec::new(),
        }
    } else if base.contains('*') || base.contains('?') {
        let mut v: Vec<String> = Vec::new();
        for g in inv.groups.keys().filter(|g| fluxgate_fs::wildcard(base, g)) {
            v.extend(inv.group_hosts(g));
        }
        v.extend(
            inv.hosts
                .keys()
                .filter(|h| fluxgate_fs::wildcard(base, h))
                .cloned(),
        );
        v
    } else {
        Vec::new()
    };
    let Some(sub) = subscript else {
        return hosts;
    };
    let len = i64::try_from(hosts.len()).unwrap_or(i64::MAX);
    let idx = |s: &str, default: i64| -> i64 {
        let s = s.trim();
        if s.is_empty() {
            return default;
        }
        let n: i64 = s.parse().unwrap_or(0);
        if n < 0 { (len + n).max(0) } else { n.min(len) }
    };
    let (a, b) = if let Some((a, b)) = sub.split_once(':') {
        (idx(a, 0), idx(b, len - 1) + 1)
    } else {
        let i = idx(sub, 0);
        (i, i + 1)
    };
    hosts
        .into_iter()
        .enumerate()
        .filter(|(i, _)| {
            let i = i64::try_from(*i).unwrap_or(i64::MAX);
            i >= a && i < b
        })
        .map(|(_, h)| h)
        .collect()
}

/// Evaluates a pattern that is already plain text.
#[must_use]
pub fn evaluate(data: &Data, text: &str) -> Vec<String> {
    let terms = split_terms(text);
    // Linear in the hosts (sets, not list scans): an inventory may hold 10,000.
    let mut result: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let (mut ands, mut nots) = (Vec::new(), Vec::new());
    for t in &terms {
        if let Some(r) = t.strip_prefix('&') {
            ands.push(r.to_string());
        } else if let Some(r) = t.strip_prefix('!') {
            nots.push(r.to_string());
        } else {
            for h in term_hosts(data, t) {
                if seen.insert(h.clone()) {
                    result.push(h);
                }
            }
        }
    }
    for a in ands {
        let keep: std::collections::HashSet<String> = term_hosts(data, &a).into_iter().collect();
        result.retain(|h| keep.contains(h));
    }
    for n in nots {
        let drop: std::collections::HashSet<String> = term_hosts(data, &n).into_iter().collect();
        result.retain(|h| !drop.contains(h));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_terms() {
        assert!(fluxgate_fs::wildcard("k3s*", "k3s_prod"));
        assert!(!fluxgate_fs::wildcard("k3s?", "k3s_prod"));
        assert_eq!(split_terms("a:&b:!c,d"), vec!["a", "&b", "!c", "d"]);
        assert_eq!(split_terms("web[0:2]"), vec!["web[0:2]"]);
    }
}
