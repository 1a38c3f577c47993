//! Chart version constraints as Flux and Helm resolve them (Masterminds semver v3): `||`
//! between alternatives, comparators joined by spaces or commas, `=`, `!=`, `>`, `<`, `>=`,
//! `<=`, `~` (patch level), `^` (major level, minor below 1.0.0), wildcards `x`, `X`, `*` and
//! missing parts (`1.2` is `1.2.x`), hyphen ranges (`1.2 - 1.4.5`). A prerelease version
//! matches only an alternative that names a prerelease (`>=1.0.0-0`), so `*` and `>=1` never
//! pick a release candidate.
//!
//! ```
//! use fluxgate_fetch::constraint::{Constraint, highest};
//! let c = Constraint::parse(">=1.0 <2").unwrap();
//! let versions = ["0.9.0", "1.4.2", "1.10.0", "2.0.0", "1.11.0-rc.1"];
//! assert_eq!(highest(&c, versions.iter().copied()), Some("1.10.0"));
//! ```

use semver::{Prerelease, Version};

use crate::error::Error;

/// A parsed constraint: alternatives of comparator groups.
#[derive(Clone, Debug)]
pub struct Constraint {
    text: String,
    any_of: Vec<Group>,
}

#[derive(Clone, Debug)]
struct Group {
    all_of: Vec<Bound>,
    /// Whether some comparator of the group names a prerelease (then prereleases match).
    prerelease: bool,
}

#[derive(Clone, Debug)]
enum Bound {
    Ge(Version),
    Gt(Version),
    Lt(Version),
    Le(Version),
    Eq(Version),
    Ne(Version),
}

/// A version as Helm reads one: a leading `v`, and missing minor or patch as 0.
#[must_use]
pub fn parse_version(text: &str) -> Option<Version> {
    let v = text.trim().trim_start_matches('v');
    if let Ok(parsed) = Version::parse(v) {
        return Some(parsed);
    }
    let split = v.find(['-', '+']).unwrap_or(v.len());
    let (core, rest) = v.split_at(split);
    let padded = match core.split('.').count() {
        1 => format!("{core}.0.0{rest}"),
        2 => format!("{core}.0{rest}"),
        _ => return None,
    };
    Version::parse(&padded).ok()
}

/// A partial version of a comparator: each of major, minor, patch given or a wildcard.
struct Partial {
    parts: [Option<u64>; 3],
    pre: Prerelease,
}

impl Partial {
    /// `bad` makes the constraint's error from a message.
    fn parse(text: &str, bad: impl Fn(String) -> Error) -> Result<Partial, Error> {
        let t = text.trim().trim_start_matches('v');
        let t = t.split_once('+').map_or(t, |(v, _)| v);
        let (core, pre) = t.split_once('-').unwrap_or((t, ""));
        let pre = Prerelease::new(pre).map_err(|e| bad(format!("`{text}`: {e}")))?;
        let mut parts = [None; 3];
        let fields: Vec<&str> = core.split('.').collect();
        if fields.len() > 3 || core.is_empty() {
            return Err(bad(format!("`{text}` is not a version")));
        }
        let mut wild = false;
        for (slot, field) in parts.iter_mut().zip(&fields) {
            if matches!(*field, "x" | "X" | "*") {
                wild = true;
                continue;
            }
            if wild {
                return Err(bad(format!("`{text}`: a number after a wildcard")));
            }
            *slot = Some(
                field
                    .parse::<u64>()
                    .map_err(|_| bad(format!("`{text}`: `{field}` is not a number")))?,
            );
        }
        Ok(Partial { parts, pre })
    }

    /// The lowest version the partial covers (wildcards as 0).
    fn floor(&self) -> Version {
        let [a, b, c] = self.parts;
        let mut v = Version::new(a.unwrap_or(0), b.unwrap_or(0), c.unwrap_or(0));
        v.pre = self.pre.clone();
        v
    }

    /// The first version past the partial (`1.2.x` -> `1.3.0`); `None` for `*`.
    fn ceiling(&self) -> Option<Version> {
        match self.parts {
            [Some(a), Some(b), None] => Some(Version::new(a, b.saturating_add(1), 0)),
            [Some(a), None, _] => Some(Version::new(a.saturating_add(1), 0, 0)),
            // Exact (nothing past it) or `*` (no end).
            [Some(_), Some(_), Some(_)] | [None, ..] => None,
        }
    }

    fn exact(&self) -> bool {
        self.parts.iter().all(Option::is_some)
    }

    fn any(&self) -> bool {
        self.parts[0].is_none()
    }
}

/// The bounds one comparator sets. Prereleases are filtered per group before the bounds are
/// compared, so the bounds themselves are plain SemVer precedence.
fn bounds(op: &str, p: &Partial) -> Vec<Bound> {
    let floor = p.floor();
    let ceiling = p.ceiling();
    let range = |lo: Version, hi: Option<Version>| {
        let mut b = vec![Bound::Ge(lo)];
        b.extend(hi.map(Bound::Lt));
        b
    };
    match op {
        "" | "=" if p.exact() => vec![Bound::Eq(floor)],
        "" | "=" => range(floor, ceiling),
        "!=" if p.exact() => vec![Bound::Ne(floor)],
        // `!=1.2.x`: outside the range (expressed by the caller as an alternative is not
        // possible inside one group, so a wildcard `!=` excludes only its floor).
        "!=" => vec![Bound::Ne(floor)],
        ">" if p.exact() => vec![Bound::Gt(floor)],
        ">" => ceiling.map_or_else(
            || vec![Bound::Lt(Version::new(0, 0, 0))],
            |c| vec![Bound::Ge(c)],
        ),
        ">=" | "=>" => vec![Bound::Ge(floor)],
        "<" => vec![Bound::Lt(floor)],
        "<=" | "=<" if p.exact() => vec![Bound::Le(floor)],
        "<=" | "=<" => ceiling.map_or_else(Vec::new, |c| vec![Bound::Lt(c)]),
        "~" | "~>" => {
            let hi = match p.parts {
                [Some(a), None, _] => Some(Version::new(a.saturating_add(1), 0, 0)),
                [Some(a), Some(b), _] => Some(Version::new(a, b.saturating_add(1), 0)),
                [None, ..] => None,
            };
            range(floor, hi)
        }
        "^" => {
            let hi = match p.parts {
                [None, ..] => None,
                [Some(0), None, _] => Some(Version::new(1, 0, 0)),
                [Some(0), Some(0), None] => Some(Version::new(0, 1, 0)),
                [Some(0), Some(0), Some(c)] => Some(Version::new(0, 0, c.saturating_add(1))),
                [Some(0), Some(b), _] => Some(Version::new(0, b.saturating_add(1), 0)),
                [Some(a), ..] => Some(Version::new(a.saturating_add(1), 0, 0)),
            };
            range(floor, hi)
        }
        _ => Vec::new(),
    }
}

const OPS: [&str; 11] = ["!=", ">=", "=>", "<=", "=<", "~>", ">", "<", "=", "~", "^"];

impl Constraint {
    /// Parses a constraint; the empty string is `*`.
    pub fn parse(text: &str) -> Result<Constraint, Error> {
        let bad = |message: String| Error::BadConstraint {
            constraint: text.to_string(),
            message,
        };
        let mut any_of = Vec::new();
        for alternative in text.split("||") {
            let tokens: Vec<&str> = alternative
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .collect();
            let mut group = Group {
                all_of: Vec::new(),
                prerelease: false,
            };
            let mut i = 0;
            while i < tokens.len() {
                // A hyphen range: `A - B`.
                if tokens.get(i + 1) == Some(&"-") {
                    let (Some(lo), Some(hi)) = (tokens.get(i), tokens.get(i + 2)) else {
                        return Err(bad("a hyphen range needs a version on each side".into()));
                    };
                    let (lo, hi) = (Partial::parse(lo, bad)?, Partial::parse(hi, bad)?);
                    group.prerelease |= !lo.pre.is_empty() || !hi.pre.is_empty();
                    group.all_of.extend(bounds(">=", &lo));
                    group.all_of.extend(bounds("<=", &hi));
                    i += 3;
                    continue;
                }
                let token = tokens[i];
                let op = OPS
                    .iter()
                    .find(|op| token.starts_with(**op))
                    .copied()
                    .unwrap_or("");
                let mut rest = &token[op.len()..];
                if rest.is_empty() {
                    // `>= 1.2`: the operator and its version are separate tokens.
                    i += 1;
                    rest = tokens
                        .get(i)
                        .copied()
                        .ok_or_else(|| bad(format!("`{op}` without a version")))?;
                }
                let p = Partial::parse(rest, bad)?;
                group.prerelease |= !p.pre.is_empty();
                if !(p.any()
                    && matches!(op, "" | "=" | ">=" | "=>" | "<=" | "=<" | "~" | "~>" | "^"))
                {
                    group.all_of.extend(bounds(op, &p));
                }
                i += 1;
            }
            any_of.push(group);
        }
        Ok(Constraint {
            text: text.to_string(),
            any_of,
        })
    }

    /// Whether `version` satisfies the constraint.
    #[must_use]
    pub fn matches(&self, version: &Version) -> bool {
        self.any_of.iter().any(|g| {
            (version.pre.is_empty() || g.prerelease)
                && g.all_of.iter().all(|b| match b {
                    Bound::Ge(x) => version_cmp(version, x).is_ge(),
                    Bound::Gt(x) => version_cmp(version, x).is_gt(),
                    Bound::Lt(x) => version_cmp(version, x).is_lt(),
                    Bound::Le(x) => version_cmp(version, x).is_le(),
                    Bound::Eq(x) => version_cmp(version, x).is_eq(),
                    Bound::Ne(x) => version_cmp(version, x).is_ne(),
                })
        })
    }

    /// The constraint as written.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// SemVer precedence: build metadata is ignored.
fn version_cmp(a: &Version, b: &Version) -> std::cmp::Ordering {
    a.cmp_precedence(b)
}

/// The highest of `versions` that satisfies `constraint` (as Helm's index lookup picks), or
/// the one written exactly as the constraint when there is one.
pub fn highest<'a>(
    constraint: &Constraint,
    versions: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(&str, Version)> = None;
    for text in versions {
        if text == constraint.text.trim() {
            return Some(text);
        }
        let Some(v) = parse_version(text) else {
            continue;
        };
        if !constraint.matches(&v) {
            continue;
        }
        if best
            .as_ref()
            .is_none_or(|(_, b)| version_cmp(&v, b).is_gt())
        {
            best = Some((text, v));
        }
    }
    best.map(|(t, _)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(constraint: &str, version: &str) -> bool {
        Constraint::parse(constraint)
            .expect("constraint")
            .matches(&parse_version(version).expect("version"))
    }

    #[test]
    fn masterminds_examples() {
        let cases: &[(&str, &str, bool)] = &[
            (">=1.0 <2", "1.9.9", true),
            (">=1.0 <2", "2.0.0", false),
            (">= 1.2, < 3.0.0 || >= 4.2.3", "4.3.0", true),
            (">= 1.2, < 3.0.0 || >= 4.2.3", "3.5.0", false),
            ("~1.2.3", "1.2.9", true),
            ("~1.2.3", "1.3.0", false),
            ("~1", "1.9.0", true),
            ("~1", "2.0.0", false),
            ("~2.3", "2.3.7", true),
            ("~2.3", "2.4.0", false),
            ("^1.2.3", "1.9.0", true),
            ("^1.2.3", "2.0.0", false),
            ("^1.2.3", "1.2.2", false),
            ("^0.2.3", "0.2.9", true),
            ("^0.2.3", "0.3.0", false),
            ("^0.0.3", "0.0.3", true),
            ("^0.0.3", "0.0.4", false),
            ("^0.0", "0.0.9", true),
            ("^0.0", "0.1.0", false),
            ("^0", "0.9.0", true),
            ("^0", "1.0.0", false),
            ("1.2.x", "1.2.7", true),
            ("1.2.x", "1.3.0", false),
            ("1.x", "1.99.0", true),
            ("1.2", "1.2.5", true),
            ("1.2.3", "1.2.3", true),
            ("=1.2.3", "1.2.4", false),
            ("!=1.2.3", "1.2.4", true),
            ("<= 2.x", "2.9.9", true),
            ("<= 2.x", "3.0.0", false),
            ("> 1.x", "1.9.0", false),
            ("> 1.x", "2.0.0", true),
            ("*", "0.0.1", true),
            ("", "7.0.0", true),
            ("1.2 - 1.4.5", "1.4.5", true),
            ("1.2 - 1.4.5", "1.4.6", false),
            ("1.2 - 1.4.5", "1.1.9", false),
            ("v1.2.3", "1.2.3", true),
            // Prereleases: only when the alternative names one.
            ("*", "1.0.0-rc.1", false),
            (">=1.0", "1.1.0-rc.1", false),
            (">=1.0.0-0", "1.1.0-rc.1", true),
            (">=1.0.0-0 <2", "1.1.0-rc.1", true),
            (">=1.0.0-0 || >=3", "1.1.0-rc.1", true),
        ];
        for (c, v, want) in cases {
            assert_eq!(check(c, v), *want, "{c} against {v}");
        }
    }

    #[test]
    fn highest_picks_like_helm() {
        let versions = ["1.0.0", "1.10.0", "1.9.3", "2.0.0-rc.1", "not-a-version"];
        let pick = |c: &str| highest(&Constraint::parse(c).expect("c"), versions.iter().copied());
        assert_eq!(pick("*"), Some("1.10.0"));
        assert_eq!(pick("~1.9"), Some("1.9.3"));
        assert_eq!(pick(">=2.0.0-0"), Some("2.0.0-rc.1"));
        assert_eq!(pick(">=3"), None);
        assert_eq!(pick("1.9.3"), Some("1.9.3"));
    }

    #[test]
    fn bad_constraints_are_errors() {
        for c in [">=", "1.2.3.4", "~a.b", "1.x.3", "1 -"] {
            assert!(Constraint::parse(c).is_err(), "{c}");
        }
    }
}
