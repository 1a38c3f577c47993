//! A realistic wrong value for a scalar as written: a boolean flipped, a number or a version
//! bumped, an address moved to its neighbour, a network moved, a word changed. The quotes of
//! the original are kept, so the mutant is the one-token diff a person would make.

use crate::Error;

/// The mutated text of `raw` (a scalar as written in YAML), or why it cannot be mutated.
pub fn mutate(raw: &str) -> Result<String, Error> {
    let raw = raw.trim();
    if raw.contains("{{") || raw.contains("{%") {
        return Err(Error::JinjaExpression);
    }
    if raw.contains("${") {
        return Err(Error::SubstitutionReference);
    }
    if raw.contains("ENC[") || raw.starts_with("!vault") || raw.contains("$ANSIBLE_VAULT") {
        return Err(Error::Encrypted);
    }
    if raw.is_empty() || matches!(raw, "~" | "null" | "Null" | "NULL") {
        return Err(Error::Empty);
    }
    let (quote, inner) = match raw.chars().next() {
        Some(q @ ('"' | '\'')) if raw.len() >= 2 && raw.ends_with(q) => {
            (Some(q), &raw[1..raw.len() - 1])
        }
        _ => (None, raw),
    };
    let changed = mutate_text(inner, quote.is_none());
    Ok(match quote {
        Some(q) => format!("{q}{changed}{q}"),
        None => changed,
    })
}

fn mutate_text(s: &str, plain: bool) -> String {
    if plain {
        match s {
            "true" => return "false".into(),
            "false" => return "true".into(),
            "True" => return "False".into(),
            "False" => return "True".into(),
            _ => {}
        }
    }
    if let Ok(n) = s.parse::<i64>() {
        return n.saturating_add(1).to_string();
    }
    if let Some((ip, len)) = s.split_once('/')
        && len.parse::<u8>().is_ok()
        && let Some(octets) = ipv4(ip)
    {
        let second = (octets[1] + 1) % 256;
        return format!("{}.{second}.{}.{}/{len}", octets[0], octets[2], octets[3]);
    }
    if let Some(octets) = ipv4(s) {
        let last = if octets[3] >= 254 {
            octets[3] - 1
        } else {
            octets[3] + 1
        };
        return format!("{}.{}.{}.{last}", octets[0], octets[1], octets[2]);
    }
    if let Some(bumped) = bump_version(s) {
        return bumped;
    }
    if s.is_empty() {
        return "x".into();
    }
    format!("{s}-mutant")
}

fn ipv4(s: &str) -> Option<[u16; 4]> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut out = [0u16; 4];
    for (o, p) in out.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok().filter(|v| *v < 256)?;
    }
    Some(out)
}

/// `1.16.5` -> `1.16.6`, `v1.31.4+k3s1` -> `v1.31.5+k3s1`: the last number of the version core.
fn bump_version(s: &str) -> Option<String> {
    let (prefix, rest) = s.strip_prefix('v').map_or(("", s), |r| ("v", r));
    let core_end = rest.find(['-', '+']).unwrap_or(rest.len());
    let (core, suffix) = rest.split_at(core_end);
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() < 2
        || !parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let last: u64 = parts.last()?.parse().ok()?;
    let mut out: Vec<String> = parts[..parts.len() - 1]
        .iter()
        .map(|p| (*p).to_string())
        .collect();
    out.push((last + 1).to_string());
    Some(format!("{prefix}{}{suffix}", out.join(".")))
}

#[cfg(test)]
mod tests {
    use super::mutate;

    #[test]
    fn each_kind_of_scalar_gets_a_neighbouring_wrong_value() {
        assert_eq!(mutate("true").unwrap(), "false");
        assert_eq!(mutate("\"true\"").unwrap(), "\"true-mutant\"");
        assert_eq!(mutate("1").unwrap(), "2");
        assert_eq!(mutate("\"6443\"").unwrap(), "\"6444\"");
        assert_eq!(mutate("\"192.168.2.9\"").unwrap(), "\"192.168.2.10\"");
        assert_eq!(mutate("10.0.0.254").unwrap(), "10.0.0.253");
        assert_eq!(mutate("10.42.0.0/16").unwrap(), "10.43.0.0/16");
        assert_eq!(mutate("\"1.16.5\"").unwrap(), "\"1.16.6\"");
        assert_eq!(mutate("v1.31.4+k3s1").unwrap(), "v1.31.5+k3s1");
        assert_eq!(mutate("cluster-pool").unwrap(), "cluster-pool-mutant");
        assert!(mutate("\"{{ kube_vip_address }}\"").is_err());
        assert!(mutate("${K3S_API_HOST}").is_err());
        assert!(mutate("~").is_err());
    }
}
