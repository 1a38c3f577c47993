//! `.helmignore` (Helm's own rules: a pattern without `/` matches the base name, one with
//! `/` the whole path, a trailing `/` only directories, `!` negates in Helm's peculiar way)
//! and the glob matching of `filepath.Match` and of `.Files.Glob` (gobwas/glob, where `**`
//! crosses `/` and `{a,b}` are alternatives).

/// One rule of a `.helmignore`.
#[derive(Debug, Clone)]
struct Rule {
    /// The pattern's characters, split once (every file of every render is matched).
    pattern: Vec<char>,
    negate: bool,
    must_dir: bool,
    /// Matched against the base name only.
    base_only: bool,
    /// How the pattern can be matched without the general matcher.
    shape: Shape,
}

/// Most rules of a real `.helmignore` are a name (`.git`, `OWNERS`) or `*` and a suffix
/// (`*.tmp`, `*~`): those are compared directly, the rest go through [`matches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// No character with a meaning: the whole target is the pattern.
    Literal,
    /// `*` then characters without a meaning: the target ends with them, and the part the
    /// `*` covers holds no `/`.
    Suffix,
    General,
}

impl Shape {
    fn of(pattern: &[char]) -> Shape {
        let special = |c: &char| matches!(c, '*' | '?' | '[' | '\\');
        match pattern.split_first() {
            _ if !pattern.iter().any(special) => Shape::Literal,
            Some(('*', rest)) if !rest.iter().any(special) => Shape::Suffix,
            _ => Shape::General,
        }
    }
}

/// The rules of a chart's `.helmignore`, with Helm's default (`templates/.?*`).
#[derive(Debug, Clone, Default)]
pub struct Rules(Vec<Rule>);

impl Rules {
    pub fn parse(text: &str) -> Rules {
        let mut rules = Vec::new();
        for line in std::iter::once("templates/.?*").chain(text.lines()) {
            let mut r = line.trim();
            if r.is_empty() || r.starts_with('#') || r.contains("**") {
                continue;
            }
            let negate = r.starts_with('!');
            if negate {
                r = &r[1..];
            }
            let must_dir = r.ends_with('/');
            let r = r.trim_end_matches('/');
            let r = r.strip_prefix('/').unwrap_or(r);
            if r.is_empty() {
                continue;
            }
            let pattern: Vec<char> = r.chars().collect();
            rules.push(Rule {
                shape: Shape::of(&pattern),
                pattern,
                negate,
                must_dir,
                base_only: !line
                    .trim()
                    .trim_start_matches('!')
                    .trim_start_matches('/')
                    .trim_end_matches('/')
                    .contains('/')
                    && !line.trim().trim_start_matches('!').starts_with('/'),
            });
        }
        Rules(rules)
    }

    /// Whether `path` (relative, `/`-separated) is ignored.
    pub fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." {
            return false;
        }
        let full: Vec<char> = path.chars().collect();
        let base = full
            .iter()
            .rposition(|&c| c == '/')
            .map_or(&full[..], |i| &full[i + 1..]);
        for r in &self.0 {
            let target = if r.base_only { base } else { &full[..] };
            let m = match r.shape {
                Shape::Literal => r.pattern == target,
                Shape::Suffix => {
                    let suffix = &r.pattern[1..];
                    target.ends_with(suffix)
                        && !target[..target.len() - suffix.len()].contains(&'/')
                }
                Shape::General => {
                    let mut budget = BUDGET;
                    matches(&r.pattern, target, false, &mut budget)
                }
            };
            if r.negate {
                if r.must_dir && !is_dir {
                    return true;
                }
                if !m {
                    return true;
                }
                continue;
            }
            if r.must_dir && !is_dir {
                continue;
            }
            if m {
                return true;
            }
        }
        false
    }
}

/// Steps one match may take (a pattern of many `*` against a long name backtracks).
const BUDGET: usize = 100_000;

/// Whether `name` matches `pattern`: `*` and `?` never cross `/`; with `extended`, `**`
/// crosses it and `{a,b}` are alternatives.
pub fn glob_match(pattern: &str, name: &str, extended: bool) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let mut budget = BUDGET;
    matches(&p, &n, extended, &mut budget)
}

fn matches(p: &[char], n: &[char], ext: bool, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    let Some(&c) = p.first() else {
        return n.is_empty();
    };
    match c {
        '*' => {
            let double = ext && p.get(1) == Some(&'*');
            let rest = if double { &p[2..] } else { &p[1..] };
            for i in 0..=n.len() {
                if matches(rest, &n[i..], ext, budget) {
                    return true;
                }
                if i < n.len() && n[i] == '/' && !double {
                    return false;
                }
            }
            false
        }
        '?' => !n.is_empty() && n[0] != '/' && matches(&p[1..], &n[1..], ext, budget),
        '[' => {
            let Some(close) = p.iter().skip(1).position(|&x| x == ']').map(|i| i + 1) else {
                return false;
            };
            let Some(&ch) = n.first() else { return false };
            let class = &p[1..close];
            let (neg, class) = match class.first() {
                Some('^' | '!') => (true, &class[1..]),
                _ => (false, class),
            };
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == '-' {
                    if class[i] <= ch && ch <= class[i + 2] {
                        hit = true;
                    }
                    i += 3;
                } else {
                    if class[i] == ch {
                        hit = true;
                    }
                    i += 1;
                }
            }
            hit != neg && ch != '/' && matches(&p[close + 1..], &n[1..], ext, budget)
        }
        '{' if ext => {
            let Some(close) = p.iter().position(|&x| x == '}') else {
                return false;
            };
            let rest = &p[close + 1..];
            p[1..close].split(|&x| x == ',').any(|alt| {
                let mut q: Vec<char> = alt.to_vec();
                q.extend_from_slice(rest);
                matches(&q, n, ext, budget)
            })
        }
        '\\' if !ext && p.len() > 1 => {
            !n.is_empty() && n[0] == p[1] && matches(&p[2..], &n[1..], ext, budget)
        }
        c => !n.is_empty() && n[0] == c && matches(&p[1..], &n[1..], ext, budget),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("files/*.conf", "files/a.conf", true));
        assert!(!glob_match("files/*.conf", "files/x/a.conf", true));
        assert!(glob_match("files/**", "files/x/a.conf", true));
        assert!(glob_match("{a,b}.txt", "b.txt", true));
        assert!(glob_match("*.tgz", "x.tgz", false));
    }

    /// The direct comparisons of names and suffixes answer as the general matcher does.
    #[test]
    fn plain_rules_match_as_globs_do() {
        let patterns = [
            "OWNERS", ".git", "*.tmp", "*~", "*", "a/b.txt", "*/x", "*.tgz",
        ];
        let names = [
            "OWNERS",
            "OWNERS2",
            ".git",
            "x.tmp",
            ".tmp",
            "a/x.tmp",
            "a~",
            "~",
            "",
            "a/b.txt",
            "a/b",
            "q/x",
            "q/r/x",
            "x",
            "c.tgz",
            "c.tgz.bak",
        ];
        for p in patterns {
            let chars: Vec<char> = p.chars().collect();
            assert_ne!(Shape::of(&chars), Shape::General, "{p}");
            let rules = Rules(vec![Rule {
                shape: Shape::of(&chars),
                pattern: chars.clone(),
                negate: false,
                must_dir: false,
                base_only: false,
            }]);
            for n in names {
                let mut budget = BUDGET;
                let glob = matches(&chars, &n.chars().collect::<Vec<_>>(), false, &mut budget);
                assert_eq!(
                    rules.ignore(n, false),
                    glob && !n.is_empty(),
                    "{p} against {n}"
                );
            }
        }
        assert_eq!(
            Shape::of(&"a*b".chars().collect::<Vec<_>>()),
            Shape::General
        );
        assert_eq!(
            Shape::of(&"*.[ch]".chars().collect::<Vec<_>>()),
            Shape::General
        );
        assert_eq!(
            Shape::of(&"*a\\*".chars().collect::<Vec<_>>()),
            Shape::General
        );
    }

    #[test]
    fn helmignore_rules() {
        let r = Rules::parse("# c\n.git/\n*.tmp\nci/\n/docs\n");
        assert!(r.ignore(".git", true));
        assert!(r.ignore("a/b.tmp", false));
        assert!(r.ignore("docs", true));
        assert!(!r.ignore("templates/x.yaml", false));
        assert!(r.ignore("templates/.hidden", false));
    }
}
