//! Shell patterns with Go's `path.Match` rules, as `.sourceignore` and `spec.ignore` use them:
//! `*` and `?` never match `/`, `[...]` classes take ranges and `^` negation, `\` escapes. A
//! malformed pattern is `Err`.

#[cfg(test)]
fn matches(pattern: &str, name: &str) -> Result<bool, ()> {
    Ok(Glob::new(pattern)?.matches(name))
}

/// A pattern checked once, to be matched against many names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Glob {
    /// No special character: the name must equal it.
    Literal(String),
    /// `*` followed by literal text: a name without `/` ending with it.
    Suffix(String),
    General(Vec<char>),
}

impl Glob {
    /// `Err` for a malformed pattern.
    pub(crate) fn new(pattern: &str) -> Result<Glob, ()> {
        let special = |c: char| matches!(c, '*' | '?' | '[' | '\\');
        if !pattern.contains(special) {
            return Ok(Glob::Literal(pattern.to_string()));
        }
        if let Some(rest) = pattern.strip_prefix('*')
            && !rest.contains(special)
        {
            return Ok(Glob::Suffix(rest.to_string()));
        }
        let p: Vec<char> = pattern.chars().collect();
        validate(&p)?;
        Ok(Glob::General(p))
    }

    pub(crate) fn matches(&self, name: &str) -> bool {
        match self {
            Glob::Literal(text) => name == text,
            Glob::Suffix(tail) => name
                .strip_suffix(tail.as_str())
                .is_some_and(|head| !head.contains('/')),
            Glob::General(p) => {
                let n: Vec<char> = name.chars().collect();
                match_here(p, &n)
            }
        }
    }
}

fn validate(p: &[char]) -> Result<(), ()> {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' => {
                if i + 1 >= p.len() {
                    return Err(());
                }
                i += 2;
            }
            '[' => i = class_end(p, i).ok_or(())?,
            _ => i += 1,
        }
    }
    Ok(())
}

/// Index after the class that opens at `p[start] == '['`.
fn class_end(p: &[char], start: usize) -> Option<usize> {
    let mut i = start + 1;
    if p.get(i) == Some(&'^') {
        i += 1;
    }
    let mut first = true;
    loop {
        match p.get(i)? {
            ']' if !first => return Some(i + 1),
            '\\' => i += 2,
            _ => i += 1,
        }
        first = false;
    }
}

fn class_matches(p: &[char], start: usize, c: char) -> bool {
    let mut i = start + 1;
    let negated = p.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while let Some(&x) = p.get(i) {
        if x == ']' && !first {
            break;
        }
        first = false;
        let (lo, step) = if x == '\\' {
            (p.get(i + 1).copied().unwrap_or('\\'), 2)
        } else {
            (x, 1)
        };
        i += step;
        let mut hi = lo;
        if p.get(i) == Some(&'-') && p.get(i + 1).is_some_and(|&y| y != ']') {
            hi = p[i + 1];
            i += 2;
        }
        if lo <= c && c <= hi {
            hit = true;
        }
    }
    hit != negated
}

fn match_here(p: &[char], n: &[char]) -> bool {
    let Some(&first) = p.first() else {
        return n.is_empty();
    };
    match first {
        '*' => {
            // `*` spans any run without a slash.
            let mut k = 0;
            loop {
                if match_here(&p[1..], &n[k..]) {
                    return true;
                }
                if k >= n.len() || n[k] == '/' {
                    return false;
                }
                k += 1;
            }
        }
        '?' => n.first().is_some_and(|&c| c != '/') && match_here(&p[1..], &n[1..]),
        '[' => {
            let Some(end) = class_end(p, 0) else {
                return false;
            };
            n.first()
                .is_some_and(|&c| c != '/' && class_matches(p, 0, c))
                && match_here(&p[end..], &n[1..])
        }
        '\\' => p.get(1).is_some_and(|&e| n.first() == Some(&e)) && match_here(&p[2..], &n[1..]),
        c => n.first() == Some(&c) && match_here(&p[1..], &n[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn path_match_rules() {
        assert_eq!(matches("*.gz", "a.gz"), Ok(true));
        assert_eq!(matches("*", "a/b"), Ok(false));
        assert_eq!(matches("a?c", "abc"), Ok(true));
        assert_eq!(matches("[a-c]x", "bx"), Ok(true));
        assert_eq!(matches("[^a-c]x", "bx"), Ok(false));
        assert_eq!(matches("\\*", "*"), Ok(true));
        assert_eq!(matches("[", "["), Err(()));
        assert_eq!(matches("a\\", "a"), Err(()));
        // The literal and `*suffix` shortcuts agree with the general matcher.
        assert_eq!(matches("abc", "abc"), Ok(true));
        assert_eq!(matches("abc", "abd"), Ok(false));
        assert_eq!(matches("*.yaml", ".yaml"), Ok(true));
        assert_eq!(matches("*.yaml", "x/a.yaml"), Ok(false));
        assert_eq!(matches("*", ""), Ok(true));
    }
}
