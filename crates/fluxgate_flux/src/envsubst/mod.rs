//! The text engine of Flux post-build substitution: the grammar and functions of the envsubst
//! that kustomize-controller runs (a fork of drone/envsubst kept in fluxcd/pkg), applied to one
//! serialised resource.
//!
//! The behaviour it keeps, because users' files depend on it:
//! - only `${...}` is an expression; `$VAR` stays as it is, `$$` is `$` everywhere outside
//!   function arguments, and a backslash escapes nothing except `\/` and `\\` inside the
//!   pattern and replacement of `${V/p/r}`;
//! - after the name only `}`, `:`, `=`, `,`, `^`, `/`, `#` and `%` may follow: `${A-d}`,
//!   `${A+x}`, `${A?x}`, `${A[@]}` and `${X.Y}` are parse errors, and a parse error fails the
//!   whole text;
//! - the default operators (`=`, `:=`, `:-`, `:+`, `:?`) all mean "the value when it is
//!   non-empty, else the argument", so `${SET:+alt}` is the value, not bash's `alt`;
//! - an unset variable read without a default is an error in strict mode (Flux >= 2.9); both the
//!   lenient text (the empty string) and the list of such references are returned, so that a
//!   caller can report what either Flux would do.

pub(crate) mod glob;
mod parse;

pub use parse::ParseError;

use parse::{Func, Part};

/// One `${...}` that was evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarRef {
    /// The variable name.
    pub name: String,
    /// Byte range of the whole `${...}` in the input text.
    pub start: usize,
    pub end: usize,
    /// The variable had a value (possibly empty).
    pub defined: bool,
    /// The operator supplies its own fallback (`:-`, `=`, `:=`, `:+`, `:?`): an unset variable
    /// is not an error.
    pub has_default: bool,
    /// The variable's value was used in the output (set, and not replaced by a default).
    pub value_used: bool,
}

impl VarRef {
    /// Strict mode refuses this reference.
    #[must_use]
    pub fn is_strict_error(&self) -> bool {
        !self.defined && !self.has_default
    }
}

/// The outcome of substituting one text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expansion {
    /// The text as non-strict Flux (before 2.9) writes it: unset variables are empty.
    pub text: String,
    /// Every reference in input order (nested ones after the reference that holds them).
    pub refs: Vec<VarRef>,
}

impl Expansion {
    /// Strict Flux (>= 2.9, the default) fails the resource on these.
    pub fn undefined(&self) -> impl Iterator<Item = &VarRef> {
        self.refs.iter().filter(|r| r.is_strict_error())
    }

    #[must_use]
    pub fn strict_ok(&self) -> bool {
        self.undefined().next().is_none()
    }
}

/// Substitutes `text` with `lookup` (name -> value). A parse error means Flux rejects the whole
/// text and substitutes nothing.
pub fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Expansion, ParseError> {
    let parts = parse::parse(text)?;
    let mut out = Expansion {
        text: String::with_capacity(text.len()),
        refs: Vec::new(),
    };
    for p in &parts {
        let s = eval_part(p, lookup, &mut out.refs);
        if out.text.len() + s.len() > MAX_OUTPUT {
            let offset = match p {
                Part::Func(f) => f.start,
                Part::Text(_) => 0,
            };
            return Err(ParseError {
                offset,
                message: TOO_LARGE,
            });
        }
        out.text.push_str(&s);
    }
    Ok(out)
}

/// The most text one resource may substitute to (values are inserted, never expanded again,
/// but one long value used many times still multiplies): past it, a finding, not gigabytes.
pub const MAX_OUTPUT: usize = 64 * 1024 * 1024;

/// The [`ParseError`] message of an expansion past [`MAX_OUTPUT`].
pub const TOO_LARGE: &str = "the substituted resource would exceed 64 MiB";

fn eval_part(
    part: &Part,
    lookup: &dyn Fn(&str) -> Option<String>,
    refs: &mut Vec<VarRef>,
) -> String {
    match part {
        Part::Text(t) => t.clone(),
        Part::Func(f) => eval_func(f, lookup, refs),
    }
}

fn is_default_op(op: &str) -> bool {
    matches!(op, "-" | "+" | "=" | "?" | ":-" | ":+" | ":=" | ":?")
}

fn eval_func(f: &Func, lookup: &dyn Fn(&str) -> Option<String>, refs: &mut Vec<VarRef>) -> String {
    let slot = refs.len();
    refs.push(VarRef {
        name: f.param.clone(),
        start: f.start,
        end: f.end,
        defined: false,
        has_default: is_default_op(&f.op),
        value_used: false,
    });
    let args: Vec<String> = f.args.iter().map(|a| eval_part(a, lookup, refs)).collect();
    let value = lookup(&f.param);
    let defined = value.is_some();
    let v = value.unwrap_or_default();
    let result = apply(&f.op, &v, &args);
    let r = &mut refs[slot];
    r.defined = defined;
    r.value_used = defined && !(r.has_default && v.is_empty() && !args.is_empty());
    result
}

fn apply(op: &str, v: &str, args: &[String]) -> String {
    match op {
        "," => map_first(v, |c| c.to_lowercase().collect()),
        ",," => v.to_lowercase(),
        "^" => map_first(v, |c| c.to_uppercase().collect()),
        "^^" => v.to_uppercase(),
        "#" if args.is_empty() => v.len().to_string(),
        "#" => args
            .first()
            .map_or_else(|| v.to_string(), |a| trim_shortest(v, a)),
        "##" => args
            .first()
            .map_or_else(|| v.to_string(), |a| trim_longest(v, a)),
        "%" => args
            .first()
            .map_or_else(|| v.to_string(), |a| rev(&trim_shortest(&rev(v), &rev(a)))),
        "%%" => args
            .first()
            .map_or_else(|| v.to_string(), |a| rev(&trim_longest(&rev(v), &rev(a)))),
        ":" => substring(v, args),
        "/" => replace(v, args, Some(1)),
        "//" => replace(v, args, None),
        "/#" => match args {
            [p, r] if v.starts_with(p.as_str()) => v.replacen(p.as_str(), r, 1),
            _ => v.to_string(),
        },
        "/%" => match args {
            [p, r] => v
                .strip_suffix(p.as_str())
                .map_or_else(|| v.to_string(), |s| format!("{s}{r}")),
            _ => v.to_string(),
        },
        // The plain form and every default operator: the value unless it is empty.
        _ => {
            if v.is_empty() && !args.is_empty() {
                args.concat()
            } else {
                v.to_string()
            }
        }
    }
}

fn map_first(v: &str, f: impl Fn(char) -> String) -> String {
    let mut chars = v.chars();
    match chars.next() {
        Some(c) => f(c) + chars.as_str(),
        None => String::new(),
    }
}

fn rev(s: &str) -> String {
    s.chars().rev().collect()
}

fn replace(v: &str, args: &[String], n: Option<usize>) -> String {
    let (pat, rep) = match args {
        [] => return v.to_string(),
        [p] => (p.as_str(), ""),
        [p, r, ..] => (p.as_str(), r.as_str()),
    };
    match n {
        Some(n) => v.replacen(pat, rep, n),
        None => v.replace(pat, rep),
    }
}

/// Non-empty prefixes of `s` from the longest to the shortest, on character boundaries.
fn prefixes(s: &str) -> impl Iterator<Item = &str> {
    let mut ends: Vec<usize> = s.char_indices().map(|(i, _)| i).skip(1).collect();
    ends.push(s.len());
    ends.into_iter()
        .rev()
        .filter(|&e| e > 0)
        .map(move |e| &s[..e])
}

fn trim_shortest(s: &str, pat: &str) -> String {
    let mut shortest = None;
    for p in prefixes(s) {
        match glob::matches(pat, p) {
            Err(()) => return s.to_string(),
            Ok(true) => shortest = Some(p.len()),
            Ok(false) => {}
        }
    }
    shortest.map_or_else(|| s.to_string(), |n| s[n..].to_string())
}

fn trim_longest(s: &str, pat: &str) -> String {
    for p in prefixes(s) {
        match glob::matches(pat, p) {
            Err(()) => return s.to_string(),
            Ok(true) => return s[p.len()..].to_string(),
            Ok(false) => {}
        }
    }
    s.to_string()
}

/// `${V:offset}` and `${V:offset:length}` on bytes, as Go slices strings; a cut inside a
/// multi-byte character is repaired lossily instead of panicking.
fn substring(v: &str, args: &[String]) -> String {
    let b = v.as_bytes();
    let len = i64::try_from(b.len()).unwrap_or(i64::MAX);
    let Some(Ok(mut pos)) = args.first().map(|a| a.parse::<i64>()) else {
        return v.to_string();
    };
    if pos < 0 {
        pos = (len + pos).max(0);
    }
    let slice = |from: i64, to: i64| -> String {
        let from = usize::try_from(from.clamp(0, len)).unwrap_or(0);
        let to = usize::try_from(to.clamp(0, len)).unwrap_or(0);
        if from >= to {
            return String::new();
        }
        String::from_utf8_lossy(&b[from..to]).into_owned()
    };
    let Some(l) = args.get(1) else {
        return slice(pos, len);
    };
    let Ok(l) = l.parse::<i64>() else {
        return v.to_string();
    };
    if l < 0 {
        let end = len + l;
        if end < pos {
            return String::new();
        }
        return slice(pos, end);
    }
    if pos + l >= len {
        return slice(pos, len);
    }
    slice(pos, pos + l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "SET" => Some("val".into()),
            "EMPTY" => Some(String::new()),
            "D" => Some("a.b.c".into()),
            "P" => Some("path/to/file.tar.gz".into()),
            "N" => Some("3".into()),
            "U" => Some("ünï".into()),
            _ => None,
        }
    }

    fn run(text: &str) -> Result<Expansion, ParseError> {
        expand(text, &vars)
    }

    fn out(text: &str) -> String {
        run(text).expect("parses").text
    }

    fn parse_error(text: &str) -> String {
        run(text).expect_err("must not parse").message.to_string()
    }

    // SPEC §3.2, the table, row by row.

    #[test]
    fn set_and_empty() {
        assert_eq!(out("${SET}"), "val");
        assert_eq!(out("a ${EMPTY} b"), "a  b");
        assert!(run("${SET}${EMPTY}").expect("parses").strict_ok());
    }

    #[test]
    fn no_braces_left_alone() {
        assert_eq!(out("$SET and $ and $1"), "$SET and $ and $1");
    }

    #[test]
    fn double_dollar_is_an_escape_everywhere() {
        assert_eq!(out("$${SET}"), "${SET}");
        assert_eq!(out("$$"), "$");
        assert_eq!(out("cost: $$5 $$$$"), "cost: $5 $$");
        assert_eq!(out("a$${SET}b${SET}"), "a${SET}bval");
    }

    #[test]
    fn unset_is_strict_error_and_empty_before() {
        let e = run("host: ${UNSET}").expect("parses");
        assert_eq!(e.text, "host: ");
        assert!(!e.strict_ok());
        let u: Vec<_> = e.undefined().collect();
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].name, "UNSET");
        assert_eq!((u[0].start, u[0].end), (6, 14));
    }

    #[test]
    fn defaults() {
        for t in [
            "${UNSET:=d}",
            "${UNSET=d}",
            "${UNSET:-d}",
            "${EMPTY=d}",
            "${EMPTY:-d}",
        ] {
            let e = run(t).expect("parses");
            assert_eq!(e.text, "d", "{t}");
            assert!(e.strict_ok(), "{t}");
        }
        assert_eq!(out("${SET:-d}"), "val");
        assert_eq!(out("${UNSET:-a b c}"), "a b c");
        assert_eq!(out("${UNSET:-}"), "");
    }

    #[test]
    fn bash_forms_flux_cannot_parse() {
        assert_eq!(parse_error("${UNSET-d}"), "missing closing brace");
        assert_eq!(parse_error("${UNSET+x}"), "missing closing brace");
        assert_eq!(parse_error("${UNSET?x}"), "missing closing brace");
        assert_eq!(parse_error("${A[@]}"), "missing closing brace");
        assert_eq!(parse_error("${X.Y}"), "missing closing brace");
        assert_eq!(
            parse_error("ok ${SET} then ${"),
            "unable to parse variable name"
        );
        assert_eq!(parse_error("${}"), "unable to parse variable name");
        assert_eq!(parse_error("${ SET }"), "unable to parse variable name");
        assert_eq!(parse_error("${SET"), "missing closing brace");
        assert_eq!(
            parse_error("${A:-open"),
            "unable to parse substitution within function"
        );
        let e = run("abc ${X.Y}").expect_err("fails");
        assert_eq!(e.offset, 4);
    }

    #[test]
    fn plus_is_flux_default_not_bash_alternative() {
        assert_eq!(out("${SET:+alt}"), "val");
        assert_eq!(out("${UNSET:+alt}"), "alt");
        assert!(run("${UNSET:+alt}").expect("parses").strict_ok());
        assert_eq!(out("${UNSET:?msg}"), "msg");
    }

    #[test]
    fn replace_first_and_all() {
        assert_eq!(out("${D/./-}"), "a-b.c");
        assert_eq!(out("${D//./-}"), "a-b-c");
        assert_eq!(out("${D/./}"), "ab.c");
        assert_eq!(out("${D/#a/z}"), "z.b.c");
        assert_eq!(out("${D/%c/z}"), "a.b.z");
        assert_eq!(out("${P//\\//_}"), "path_to_file.tar.gz");
        assert_eq!(parse_error("${D/a}"), "bad substitution");
    }

    #[test]
    fn backslash_does_not_escape() {
        assert_eq!(out("\\${SET}"), "\\val");
        assert_eq!(out("a\\$b"), "a\\$b");
    }

    #[test]
    fn other_functions_of_the_fork() {
        assert_eq!(out("${#SET}"), "3");
        assert_eq!(out("${SET^}"), "Val");
        assert_eq!(out("${SET^^}"), "VAL");
        assert_eq!(out("${U^^}"), "ÜNÏ");
        assert_eq!(out("${SET,,}"), "val");
        assert_eq!(out("${SET:1}"), "al");
        assert_eq!(out("${SET:0:2}"), "va");
        assert_eq!(out("${SET:-2}"), "val");
        // Go's Atoi does not skip the space bash needs here, so the value comes back whole.
        assert_eq!(out("${SET: -2}"), "val");
        assert_eq!(out("${P#*/}"), "to/file.tar.gz");
        // Go's path.Match: `*` never crosses a slash, so no prefix ending in `.` matches.
        assert_eq!(out("${P##*.}"), "path/to/file.tar.gz");
        assert_eq!(out("${D##*.}"), "c");
        assert_eq!(out("${P%.*}"), "path/to/file.tar");
        assert_eq!(out("${P%%.*}"), "path/to/file");
    }

    #[test]
    fn nested_defaults_and_refs() {
        let e = run("${UNSET:-${SET}-x}").expect("parses");
        assert_eq!(e.text, "val-x");
        assert_eq!(e.refs.len(), 2);
        assert!(e.strict_ok());
        let e = run("${SET:-${UNSET}}").expect("parses");
        assert_eq!(e.text, "val");
        // Flux evaluates arguments first: strict mode refuses the unset inner reference.
        assert!(!e.strict_ok());
        assert!(e.refs[0].value_used);
        assert!(!run("${EMPTY:-d}").expect("parses").refs[0].value_used);
    }

    #[test]
    fn default_argument_quirks() {
        // Inside a default argument `$$` is not an escape, and `${` still opens a reference.
        assert_eq!(out("${UNSET:-$${SET}}"), "$val");
        assert_eq!(out("${UNSET:-$SET}"), "$SET");
    }

    #[test]
    fn unicode_text_passes_through() {
        assert_eq!(out("ü ${SET} ü"), "ü val ü");
    }
}
