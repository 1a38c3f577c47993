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
    /// The operator as written (`:=`, `#`, ...), empty for `${VAR}`.
    pub op: String,
    /// The variable's value was used in the output (set, and not replaced by a default).
    pub value_used: bool,
}

impl VarRef {
    /// The reference writes the value to use when the variable is unset (`-`, `:-`, `=`,
    /// `:=`): the author planned for it to be absent.
    #[must_use]
    pub fn falls_back(&self) -> bool {
        matches!(self.op.as_str(), "-" | ":-" | "=" | ":=")
    }

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
        let s = eval_part(p, lookup, &mut out.refs)?;
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

pub use parse::{MAX_DEPTH, TOO_DEEP};

/// The [`ParseError`] message of an expansion past [`MAX_OUTPUT`].
pub const TOO_LARGE: &str = "the substituted resource would exceed 64 MiB";

fn eval_part(
    part: &Part,
    lookup: &dyn Fn(&str) -> Option<String>,
    refs: &mut Vec<VarRef>,
) -> Result<String, ParseError> {
    match part {
        Part::Text(t) => Ok(t.clone()),
        Part::Func(f) => eval_func(f, lookup, refs),
    }
}

fn is_default_op(op: &str) -> bool {
    matches!(op, "-" | "+" | "=" | "?" | ":-" | ":+" | ":=" | ":?")
}

fn eval_func(
    f: &Func,
    lookup: &dyn Fn(&str) -> Option<String>,
    refs: &mut Vec<VarRef>,
) -> Result<String, ParseError> {
    let slot = refs.len();
    refs.push(VarRef {
        name: f.param.clone(),
        start: f.start,
        end: f.end,
        defined: false,
        has_default: is_default_op(&f.op),
        op: f.op.clone(),
        value_used: false,
    });
    // Flux evaluates the arguments first, then the variable.
    let args = f
        .args
        .iter()
        .map(|a| eval_part(a, lookup, refs))
        .collect::<Result<Vec<String>, ParseError>>()?;
    let value = lookup(&f.param);
    let defined = value.is_some();
    let v = value.unwrap_or_default();
    let result = apply(&f.op, &v, &args).map_err(|message| ParseError {
        offset: f.start,
        message,
    })?;
    let r = &mut refs[slot];
    r.defined = defined;
    r.value_used = defined && !(r.has_default && v.is_empty() && !args.is_empty());
    Ok(result)
}

/// The [`ParseError`] message of `${V:o:l}` with a negative length that cuts before the
/// offset: Flux's controller slices out of range, panics, and the reconcile fails.
pub const SUBSTRING_OUT_OF_RANGE: &str =
    "the substring's negative length ends before its offset (slice bounds out of range)";

fn apply(op: &str, v: &str, args: &[String]) -> Result<String, &'static str> {
    let first = args.first().map(String::as_bytes);
    let bytes = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    Ok(match (op, first) {
        (",", _) => map_first(v, lower),
        (",,", _) => v.chars().map(lower).collect(),
        ("^", _) => map_first(v, upper),
        ("^^", _) => v.chars().map(upper).collect(),
        ("#", None) => v.len().to_string(),
        ("#", Some(p)) => bytes(trim(v.as_bytes(), p, false)),
        ("##", Some(p)) => bytes(trim(v.as_bytes(), p, true)),
        ("%", Some(p)) => trim_suffix(v, p, false),
        ("%%", Some(p)) => trim_suffix(v, p, true),
        (":", _) => bytes(substring(v.as_bytes(), args)?),
        ("/", _) => replace(v, args, Some(1)),
        ("//", _) => replace(v, args, None),
        ("/#", _) => match args {
            [p, r] if v.starts_with(p.as_str()) => v.replacen(p.as_str(), r, 1),
            _ => v.to_string(),
        },
        ("/%", _) => match args {
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
    })
}

/// Go's `unicode.ToLower`: one character for one (the simple case mapping).
fn lower(c: char) -> char {
    if c == '\u{130}' {
        return 'i';
    }
    single(c.to_lowercase()).unwrap_or(c)
}

/// Go's `unicode.ToUpper`: one character for one.
fn upper(c: char) -> char {
    single(c.to_uppercase()).unwrap_or(c)
}

fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    let c = it.next()?;
    it.next().is_none().then_some(c)
}

fn map_first(v: &str, f: impl Fn(char) -> char) -> String {
    let mut chars = v.chars();
    match chars.next() {
        Some(c) => {
            let mut s = String::with_capacity(v.len());
            s.push(f(c));
            s.push_str(chars.as_str());
            s
        }
        None => String::new(),
    }
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

/// Removes the shortest (or longest) non-empty prefix matching `pat`, trying byte prefixes
/// as Flux does; a malformed pattern leaves the value as it is.
fn trim(s: &[u8], pat: &[u8], longest: bool) -> Vec<u8> {
    let mut cut = None;
    for end in (1..=s.len()).rev() {
        match glob::matches(pat, &s[..end]) {
            Err(glob::BadPattern) => return s.to_vec(),
            Ok(true) => {
                cut = Some(end);
                if longest {
                    break;
                }
            }
            Ok(false) => {}
        }
    }
    cut.map_or_else(|| s.to_vec(), |n| s[n..].to_vec())
}

/// `%` and `%%`: the prefix trim on the value and the pattern reversed character by
/// character (an invalid byte reverses as U+FFFD).
fn trim_suffix(v: &str, pat: &[u8], longest: bool) -> String {
    let rev = |b: &[u8]| -> String { String::from_utf8_lossy(b).chars().rev().collect() };
    let trimmed = trim(rev(v.as_bytes()).as_bytes(), rev(pat).as_bytes(), longest);
    rev(&trimmed)
}

/// `${V:offset}` and `${V:offset:length}` on bytes, as Flux slices Go strings, overflow and
/// the out-of-range cut of a negative length included.
fn substring(b: &[u8], args: &[String]) -> Result<Vec<u8>, &'static str> {
    let len = i64::try_from(b.len()).unwrap_or(i64::MAX);
    let Some(Ok(mut pos)) = args.first().map(|a| a.parse::<i64>()) else {
        return Ok(b.to_vec());
    };
    if pos < 0 {
        pos = (len + pos).max(0);
    }
    let to_index = |i: i64| usize::try_from(i).unwrap_or(0);
    let Some(l) = args.get(1) else {
        return Ok(if pos < len {
            b[to_index(pos)..].to_vec()
        } else {
            Vec::new()
        });
    };
    let Ok(l) = l.parse::<i64>() else {
        return Ok(b.to_vec());
    };
    let end = pos.wrapping_add(l);
    if end >= len {
        return Ok(if pos < len {
            b[to_index(pos)..].to_vec()
        } else {
            Vec::new()
        });
    }
    if end < pos {
        return Err(SUBSTRING_OUT_OF_RANGE);
    }
    Ok(b[to_index(pos)..to_index(end)].to_vec())
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

    /// Issue 26 §4: 3000 nested `${A:=` overflowed the stack; past [`MAX_DEPTH`] it is an
    /// error of its own (a finding), and the nesting a manifest uses still works.
    #[test]
    fn nesting_is_bounded_not_a_stack_overflow() {
        let deep = format!("{}x{}", "${A:=".repeat(3000), "}".repeat(3000));
        let e = run(&deep).expect_err("too deep");
        assert_eq!(e.message, TOO_DEEP);
        let fine = format!("{}x{}", "${A:=".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
        assert_eq!(out(&fine), "x");
    }

    /// Two readings the envsubst_vs_flux fuzz target found against Flux's code: a class cut
    /// short leaves the value as it is, and a multi-byte character right after the substring
    /// colon is a bad substitution (the oracle table repeats both against Go).
    #[test]
    fn fuzz_found_readings() {
        let v = out("${SET}");
        assert_eq!(out("${SET#[a}"), v);
        assert_eq!(out("${SET%[a-b}"), v);
        for text in ["${SET:ü}", "${SET:€1}", "${SET:😀}"] {
            assert!(run(text).is_err(), "{text}");
        }
        assert_eq!(out("${SET:-ü}"), v);
        // As Flux: a length that is not a number leaves the value whole.
        assert_eq!(out("${SET:1:ü}"), v);
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
        // Flux's matcher: `*` crosses slashes too.
        assert_eq!(out("${P##*.}"), "gz");
        assert_eq!(out("${P##*/}"), "file.tar.gz");
        assert_eq!(
            run("${D:1:-3}").expect_err("out of range").message,
            SUBSTRING_OUT_OF_RANGE
        );
        assert_eq!(out("${D:9:-2}"), "");
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
