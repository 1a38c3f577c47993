//! Shell patterns for `${V#p}` and friends, as the matcher vendored in fluxcd/pkg envsubst
//! v1.7.0 reads them (an old `path.Match`): `*` matches any run of bytes, `/` included, `?`
//! any one character, `[...]` a class with ranges and `^` negation, `\` escapes the next
//! character. It works on bytes, as Go strings are, and finds a malformed pattern only when
//! matching reaches it: `a[` never fails against `x`, but fails against `a`. A class character
//! must be followed by more pattern (`[a` is malformed, as Go's `getEsc` says), so the matcher
//! never reads past the end.

/// A malformed pattern: the caller leaves the value unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadPattern;

const RUNE_ERROR: u32 = 0xFFFD;

/// The first character of `s` and its length in bytes; an invalid byte is U+FFFD of length 1
/// (Go's `utf8.DecodeRuneInString`).
fn decode(s: &[u8]) -> (u32, usize) {
    let Some(&b0) = s.first() else {
        return (RUNE_ERROR, 0);
    };
    let n = match b0 {
        0..=0x7F => return (u32::from(b0), 1),
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return (RUNE_ERROR, 1),
    };
    match s.get(..n).map(std::str::from_utf8) {
        Some(Ok(t)) => (t.chars().next().map_or(RUNE_ERROR, u32::from), n),
        _ => (RUNE_ERROR, 1),
    }
}

/// Whether `name` matches `pattern` as a whole.
pub(crate) fn matches(pattern: &[u8], name: &[u8]) -> Result<bool, BadPattern> {
    let mut pattern = pattern;
    let mut name = name;
    'chunks: while !pattern.is_empty() {
        let (star, chunk, rest) = split_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            // A trailing star takes whatever is left.
            return Ok(true);
        }
        let first = match_chunk(chunk, name);
        if let Ok(Some(t)) = first
            && (t.is_empty() || !pattern.is_empty())
        {
            name = t;
            continue;
        }
        first?;
        if star {
            for i in 0..name.len() {
                match match_chunk(chunk, &name[i + 1..])? {
                    Some(t) if pattern.is_empty() && !t.is_empty() => {}
                    Some(t) => {
                        name = t;
                        continue 'chunks;
                    }
                    None => {}
                }
            }
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// Leading stars, then the text up to the next star outside a class.
fn split_chunk(pattern: &[u8]) -> (bool, &[u8], &[u8]) {
    let stars = pattern.iter().take_while(|&&b| b == b'*').count();
    let p = &pattern[stars..];
    let mut in_class = false;
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            b'\\' if i + 1 < p.len() => i += 1,
            b'[' => in_class = true,
            b']' => in_class = false,
            b'*' if !in_class => break,
            _ => {}
        }
        i += 1;
    }
    (stars > 0, &p[..i], &p[i..])
}

/// Matches `chunk` at the start of `s`: the rest of `s`, or `None`.
fn match_chunk<'a>(chunk: &[u8], s: &'a [u8]) -> Result<Option<&'a [u8]>, BadPattern> {
    let mut chunk = chunk;
    let mut s = s;
    while let Some(&c) = chunk.first() {
        if s.is_empty() {
            return Ok(None);
        }
        match c {
            b'[' => {
                let (r, n) = decode(s);
                s = &s[n..];
                chunk = &chunk[1..];
                let negated = chunk.first() == Some(&b'^');
                if negated {
                    chunk = &chunk[1..];
                }
                let mut hit = false;
                let mut ranges = 0;
                loop {
                    if chunk.first() == Some(&b']') && ranges > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = class_char(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    match chunk.first() {
                        // `class_char` leaves at least one byte.
                        None => return Err(BadPattern),
                        Some(b'-') => {
                            let (h, rest) = class_char(&chunk[1..])?;
                            hi = h;
                            chunk = rest;
                        }
                        Some(_) => {}
                    }
                    hit |= lo <= r && r <= hi;
                    ranges += 1;
                }
                if hit == negated {
                    return Ok(None);
                }
            }
            b'?' => {
                let (_, n) = decode(s);
                s = &s[n..];
                chunk = &chunk[1..];
            }
            _ => {
                let literal = if c == b'\\' {
                    chunk = &chunk[1..];
                    *chunk.first().ok_or(BadPattern)?
                } else {
                    c
                };
                if literal != s[0] {
                    return Ok(None);
                }
                s = &s[1..];
                chunk = &chunk[1..];
            }
        }
    }
    Ok(Some(s))
}

/// One character of a class (`\` escapes it), and the pattern after it.
fn class_char(chunk: &[u8]) -> Result<(u32, &[u8]), BadPattern> {
    let mut chunk = chunk;
    match chunk.first() {
        None | Some(b'-' | b']') => return Err(BadPattern),
        Some(b'\\') => {
            chunk = &chunk[1..];
            if chunk.is_empty() {
                return Err(BadPattern);
            }
        }
        Some(_) => {}
    }
    let (r, n) = decode(chunk);
    let rest = &chunk[n..];
    if (r == RUNE_ERROR && n == 1) || rest.is_empty() {
        return Err(BadPattern);
    }
    Ok((r, rest))
}

#[cfg(test)]
mod tests {
    use super::{BadPattern, matches};

    fn m(p: &str, n: &str) -> Result<bool, BadPattern> {
        matches(p.as_bytes(), n.as_bytes())
    }

    #[test]
    fn flux_matcher_rules() {
        assert_eq!(m("*.gz", "a.gz"), Ok(true));
        // Unlike today's path.Match, `*` and `?` cross slashes.
        assert_eq!(m("*", "a/b"), Ok(true));
        assert_eq!(m("a?c", "a/c"), Ok(true));
        assert_eq!(m("*.yaml", "x/a.yaml"), Ok(true));
        assert_eq!(m("[a-c]x", "bx"), Ok(true));
        assert_eq!(m("[^a-c]x", "bx"), Ok(false));
        assert_eq!(m("\\*", "*"), Ok(true));
        assert_eq!(m("abc", "abd"), Ok(false));
        assert_eq!(m("*", ""), Ok(true));
        // Errors only where matching reaches them.
        assert_eq!(m("[", "["), Err(BadPattern));
        assert_eq!(m("a\\", "a"), Ok(false));
        assert_eq!(m("a\\", "ab"), Err(BadPattern));
        assert_eq!(m("a[", "x"), Ok(false));
        assert_eq!(m("[a", "a"), Err(BadPattern));
        assert_eq!(m("[a-b", "a"), Err(BadPattern));
    }
}
