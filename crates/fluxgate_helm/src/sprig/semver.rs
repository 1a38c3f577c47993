//! Masterminds semver v3 as sprig uses it: `semver` parses leniently (`v1.30`, missing
//! parts are 0) and `semverCompare` checks constraints (`>=1.21-0`, `~1.2`, `^1.2.3`, `1.x`,
//! `a - b`, `,`/space for AND, `||` for OR; a prerelease version matches only constraints
//! that name a prerelease).

use std::cmp::Ordering;
use std::rc::Rc;

use fluxgate_gotemplate::{Arity, FuncError, Funcs, Object, Value};

use super::arg_str;

/// A parsed version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
    pub meta: String,
    pub original: String,
}

impl Version {
    /// Masterminds' `NewVersion` (not strict).
    pub fn parse(s: &str) -> Option<Version> {
        let t = s.strip_prefix('v').unwrap_or(s);
        let (rest, meta) = t.split_once('+').unwrap_or((t, ""));
        let (core, pre) = match rest.find('-') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty()
            || parts.len() > 3
            || parts
                .iter()
                .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return None;
        }
        let ident_ok = |x: &str| {
            x.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        };
        if (!pre.is_empty() && !ident_ok(pre))
            || (!meta.is_empty() && !ident_ok(meta))
            || (rest.ends_with('-'))
        {
            return None;
        }
        let n = |i: usize| parts.get(i).map_or(Some(0), |p| p.parse::<u64>().ok());
        Some(Version {
            major: n(0)?,
            minor: n(1)?,
            patch: n(2)?,
            pre: pre.to_string(),
            meta: meta.to_string(),
            original: s.to_string(),
        })
    }

    fn cmp_core(&self, o: &Version) -> Ordering {
        (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch))
    }

    /// SemVer precedence (build metadata ignored).
    pub fn compare(&self, o: &Version) -> Ordering {
        self.cmp_core(o)
            .then_with(|| compare_pre(&self.pre, &o.pre))
    }

    pub fn string(&self) -> String {
        let mut s = format!("{}.{}.{}", self.major, self.minor, self.patch);
        if !self.pre.is_empty() {
            s.push('-');
            s.push_str(&self.pre);
        }
        if !self.meta.is_empty() {
            s.push('+');
            s.push_str(&self.meta);
        }
        s
    }
}

fn compare_pre(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    for (x, y) in pa.iter().zip(pb.iter()) {
        let o = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(i), Ok(j)) => i.cmp(&j),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            _ => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    pa.len().cmp(&pb.len())
}

/// One comparison of a constraint: an operator, a version, and which parts were wildcards
/// or missing.
struct Term {
    op: String,
    v: Version,
    /// How many leading parts were given (1: `1`, 2: `1.2`, 3: `1.2.3`).
    given: usize,
}

fn parse_term(t: &str) -> Result<Term, FuncError> {
    let op_len = t
        .find(|c: char| c.is_ascii_digit() || c == 'v' || c == 'x' || c == 'X' || c == '*')
        .unwrap_or(t.len());
    let op = t[..op_len].trim().to_string();
    let ver = t[op_len..].trim();
    let ver = ver.strip_prefix('v').unwrap_or(ver);
    let (core, tail) = match ver.find(['-', '+']) {
        Some(i) => (&ver[..i], &ver[i..]),
        None => (ver, ""),
    };
    let mut given = 0;
    let mut nums = Vec::new();
    for p in core.split('.') {
        if p == "x" || p == "X" || p == "*" || p.is_empty() {
            break;
        }
        nums.push(p);
        given += 1;
    }
    while nums.len() < 3 {
        nums.push("0");
    }
    let text = format!("{}{tail}", nums.join("."));
    let v = Version::parse(&text).ok_or_else(|| format!("improper constraint: {t}"))?;
    Ok(Term { op, v, given })
}

fn bump(v: &Version, part: usize) -> Version {
    let mut n = v.clone();
    n.pre.clear();
    match part {
        0 => {
            n.major += 1;
            n.minor = 0;
            n.patch = 0;
        }
        1 => {
            n.minor += 1;
            n.patch = 0;
        }
        _ => n.patch += 1,
    }
    n
}

fn check_term(t: &Term, v: &Version) -> bool {
    if !v.pre.is_empty() && t.v.pre.is_empty() {
        return false;
    }
    let c = v.compare(&t.v);
    let upper = |part: usize| v.compare(&bump(&t.v, part)) == Ordering::Less;
    match t.op.as_str() {
        "" | "=" => {
            if t.given >= 3 {
                c == Ordering::Equal
            } else {
                t.given == 0 || (c != Ordering::Less && upper(t.given - 1))
            }
        }
        "!=" => {
            if t.given >= 3 {
                c != Ordering::Equal
            } else {
                !(c != Ordering::Less && upper(t.given.saturating_sub(1)))
            }
        }
        ">" => {
            if t.given >= 3 {
                c == Ordering::Greater
            } else {
                v.compare(&bump(&t.v, t.given.saturating_sub(1))) != Ordering::Less
            }
        }
        ">=" | "=>" => c != Ordering::Less,
        "<" => c == Ordering::Less,
        "<=" | "=<" => {
            if t.given >= 3 {
                c != Ordering::Greater
            } else {
                upper(t.given.saturating_sub(1))
            }
        }
        "~" | "~>" => c != Ordering::Less && upper(usize::from(t.given >= 2)),
        "^" => {
            let part = if t.v.major > 0 || t.given < 2 {
                0
            } else if t.v.minor > 0 || t.given < 3 {
                1
            } else {
                2
            };
            c != Ordering::Less && upper(part)
        }
        _ => false,
    }
}

/// Whether `version` satisfies `constraint`.
pub fn satisfies(constraint: &str, version: &Version) -> Result<bool, FuncError> {
    for alt in constraint.split("||") {
        let mut terms = Vec::new();
        let alt = alt.trim();
        // `a - b` hyphen ranges.
        if let Some((lo, hi)) = alt.split_once(" - ") {
            terms.push(parse_term(&format!(">={}", lo.trim()))?);
            terms.push(parse_term(&format!("<={}", hi.trim()))?);
        } else {
            // Split on commas and on spaces between terms (an operator may be followed by a space).
            let mut pending = String::new();
            for piece in alt.split([',', ' ']).filter(|p| !p.is_empty()) {
                pending.push_str(piece);
                if piece.chars().all(|c| "<>=!~^".contains(c)) {
                    continue;
                }
                terms.push(parse_term(&pending)?);
                pending.clear();
            }
            if !pending.is_empty() {
                return Err(format!("improper constraint: {constraint}").into());
            }
        }
        if terms.is_empty() {
            return Err(format!("improper constraint: {constraint}").into());
        }
        if terms.iter().all(|t| check_term(t, version)) {
            return Ok(true);
        }
    }
    Ok(false)
}

#[derive(Debug)]
struct SemverObject(Version);

impl Object for SemverObject {
    fn type_name(&self) -> String {
        "*semver.Version".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        let v = &self.0;
        #[allow(clippy::cast_possible_wrap)] // versions fit in i64
        Some(match name {
            "Major" => Value::Int64(v.major as i64),
            "Minor" => Value::Int64(v.minor as i64),
            "Patch" => Value::Int64(v.patch as i64),
            "Prerelease" => Value::str(&v.pre),
            "Metadata" => Value::str(&v.meta),
            "Original" => Value::str(&v.original),
            "String" => Value::from(v.string()),
            _ => return None,
        })
    }
    fn call(&self, _name: &str, _args: &[Value]) -> Option<Result<Value, FuncError>> {
        None
    }
    fn display(&self) -> String {
        self.0.string()
    }
    fn has_method(&self, _name: &str) -> bool {
        false
    }
}

pub fn add(f: &mut Funcs) {
    f.insert("semverCompare", Arity::Exact(2), |_, a| {
        let c = arg_str(a, 0)?;
        let v = Version::parse(&arg_str(a, 1)?)
            .ok_or_else(|| "invalid semantic version".to_string())?;
        satisfies(&c, &v).map(Value::Bool)
    });
    f.insert("semver", Arity::Exact(1), |_, a| {
        let v = Version::parse(&arg_str(a, 0)?)
            .ok_or_else(|| "invalid semantic version".to_string())?;
        Ok(Value::Object(Rc::new(SemverObject(v))))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sat(c: &str, v: &str) -> bool {
        satisfies(c, &Version::parse(v).unwrap()).unwrap()
    }

    #[test]
    fn constraints() {
        assert!(sat(">=1.21-0", "v1.30.0"));
        assert!(!sat("<1.21-0", "v1.30.0"));
        assert!(sat(">= 1.19.0-0, < 1.31.0-0", "1.30.2"));
        assert!(sat("~1.2", "1.2.9"));
        assert!(!sat("~1.2", "1.3.0"));
        assert!(sat("^1.2.3", "1.9.0"));
        assert!(!sat("^0.2.3", "0.3.0"));
        assert!(sat("1.x", "1.5.0"));
        assert!(sat("<2.0.0 || >3", "4.1.0"));
        assert!(!sat(">3", "3.1.0"));
        assert!(!sat(">=1.0.0", "1.2.0-beta"));
        assert!(sat(">1.2", "1.3.0"));
        assert!(!sat(">1.2", "1.2.5"));
        assert!(sat("<=1.2", "1.2.5"));
    }
}
