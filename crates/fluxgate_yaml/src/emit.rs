//! A YAML emitter that writes what `kubectl kustomize` writes: go-yaml v3's block style with
//! two-space indentation, sequences flush with their key, and its quoting choices (a string
//! that would read back as another type is double-quoted; one that cannot be plain is
//! single-quoted).

use std::cell::RefCell;
use std::fmt::Write as _;
use std::ops::Range;

use fluxgate_diagnostics::Location;

use crate::node::{Node, Value, format_float};

#[derive(Clone, Copy, Debug, Default)]
pub struct EmitOptions {
    /// Sort mapping keys, as kustomize's output does.
    pub sort_keys: bool,
    /// Append `# file:line` after every scalar: where that value was set.
    pub origins: bool,
}

/// A scalar as the printer sees it.
#[derive(Clone, Copy, Debug)]
pub enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
}

/// What a node of a [`Tree`] holds, its children borrowed.
pub enum Shape<'a> {
    Scalar(Scalar<'a>),
    Seq(Vec<&'a dyn Tree>),
    /// Entries in the tree's order (the printer sorts them with `sort_keys`).
    Map(Vec<(&'a str, &'a dyn Tree)>),
}

/// A tree the printer walks: a [`Node`], or another program's values printed without being
/// turned into nodes first (Helm's `toYaml`).
pub trait Tree {
    /// Calls `f` with what this node holds.
    fn shape(&self, f: &mut dyn FnMut(Shape<'_>));
    /// Where the node was set, for [`EmitOptions::origins`].
    fn origin(&self) -> Option<&Location> {
        None
    }
}

impl Tree for Node {
    fn shape(&self, f: &mut dyn FnMut(Shape<'_>)) {
        f(match &self.value {
            Value::Null => Shape::Scalar(Scalar::Null),
            Value::Bool(b) => Shape::Scalar(Scalar::Bool(*b)),
            Value::Int(i) => Shape::Scalar(Scalar::Int(*i)),
            Value::Float(x) => Shape::Scalar(Scalar::Float(*x)),
            Value::String(s) => Shape::Scalar(Scalar::Str(s)),
            Value::Seq(items) => Shape::Seq(items.iter().map(|n| n as &dyn Tree).collect()),
            Value::Map(m) => Shape::Map(
                m.iter()
                    .map(|(k, v)| (k.as_str(), v as &dyn Tree))
                    .collect(),
            ),
        });
    }

    fn origin(&self) -> Option<&Location> {
        Some(&self.loc)
    }
}

/// Writes documents separated by `---`, the way kustomize prints a build.
#[must_use]
pub fn emit_docs(docs: &[Node], opts: EmitOptions) -> String {
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&emit_node(d, opts));
    }
    out
}

thread_local! {
    /// Where [`emit_tree_scalars`] collects the range of each scalar written.
    static SCALARS: RefCell<Option<Vec<Range<usize>>>> = const { RefCell::new(None) };
}

/// [`emit_node`], and the byte range of each scalar in the text in the order they are
/// written: depth first, mapping entries in their emitted order (sorted with
/// `sort_keys`), an empty mapping or sequence (`{}`, `[]`) as a scalar.
#[must_use]
pub fn emit_node_scalars(node: &Node, opts: EmitOptions) -> (String, Vec<Range<usize>>) {
    emit_tree_scalars(node, opts)
}

/// [`emit_node_scalars`] of any [`Tree`].
#[must_use]
pub fn emit_tree_scalars(tree: &dyn Tree, opts: EmitOptions) -> (String, Vec<Range<usize>>) {
    let previous = SCALARS.with(|s| s.replace(Some(Vec::new())));
    let text = emit_tree(tree, opts);
    let ranges = SCALARS.with(|s| s.replace(previous)).unwrap_or_default();
    (text, ranges)
}

/// Writes one document.
#[must_use]
pub fn emit_node(node: &Node, opts: EmitOptions) -> String {
    emit_tree(node, opts)
}

/// Writes one document of any [`Tree`].
#[must_use]
pub fn emit_tree(tree: &dyn Tree, opts: EmitOptions) -> String {
    let mut out = String::new();
    tree.shape(&mut |shape| match shape {
        Shape::Map(entries) if !entries.is_empty() => write_map(&mut out, entries, 0, opts),
        Shape::Seq(items) if !items.is_empty() => write_seq(&mut out, &items, 0, opts),
        shape => {
            write_scalar(&mut out, tree, &shape, 0, opts);
            out.push('\n');
        }
    });
    out
}

/// The order go-yaml gives a Go map's string keys when it encodes them (kustomize's output
/// goes through `sigs.k8s.io/yaml`'s JSON-to-YAML, a go-yaml v2): rune by rune, letters after
/// other characters, and runs of digits compared as numbers (`a9` before `a10`).
pub fn go_yaml_key_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    // ASCII keys that first differ in a letter (most keys): decided there, without
    // collecting characters.
    if a.is_ascii() && b.is_ascii() {
        let (ab, bb) = (a.as_bytes(), b.as_bytes());
        match ab.iter().zip(bb).position(|(x, y)| x != y) {
            None => return ab.len().cmp(&bb.len()),
            Some(i) => match (ab[i].is_ascii_alphabetic(), bb[i].is_ascii_alphabetic()) {
                (true, true) => return ab[i].cmp(&bb[i]),
                (true, false) => return Ordering::Greater,
                (false, true) => return Ordering::Less,
                (false, false) => {}
            },
        }
    }
    char_order(a, b)
}

/// go-yaml v2's `keyList.Less` over characters.
fn char_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let less = |yes: bool| {
        if yes {
            Ordering::Less
        } else {
            Ordering::Greater
        }
    };
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return less(bl);
        }
        // Leading zeros count only when the digits before them are all zeros.
        let mut an: i128 = 0;
        let mut bn: i128 = 0;
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let number = |r: &[char], n: &mut i128| {
            let mut k = i;
            while k < r.len() && r[k].is_ascii_digit() {
                *n = n
                    .saturating_mul(10)
                    .saturating_add(i128::from(r[k] as u8 - b'0'));
                k += 1;
            }
            k
        };
        let ai = number(&ar, &mut an);
        let bi = number(&br, &mut bn);
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

fn pad(out: &mut String, n: usize) {
    const SPACES: &str = "                                                                ";
    let mut left = n;
    while left > 0 {
        let k = left.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        left -= k;
    }
}

fn write_map(
    out: &mut String,
    mut entries: Vec<(&str, &dyn Tree)>,
    indent: usize,
    opts: EmitOptions,
) {
    if opts.sort_keys {
        entries.sort_by(|a, b| go_yaml_key_order(a.0, b.0));
    }
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        write_folded(out, k, scalar_style(k), usize::MAX);
        out.push(':');
        v.shape(&mut |shape| write_value_after_key(out, v, shape, indent, opts));
    }
}

fn write_value_after_key(
    out: &mut String,
    v: &dyn Tree,
    shape: Shape<'_>,
    indent: usize,
    opts: EmitOptions,
) {
    match shape {
        Shape::Map(entries) if !entries.is_empty() => {
            out.push('\n');
            pad(out, indent + 2);
            write_map(out, entries, indent + 2, opts);
        }
        Shape::Seq(items) if !items.is_empty() => {
            out.push('\n');
            pad(out, indent);
            write_seq(out, &items, indent, opts);
        }
        shape => {
            out.push(' ');
            write_scalar(out, v, &shape, indent, opts);
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, items: &[&dyn Tree], indent: usize, opts: EmitOptions) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        out.push_str("- ");
        item.shape(&mut |shape| match shape {
            Shape::Map(entries) if !entries.is_empty() => {
                write_map(out, entries, indent + 2, opts);
            }
            Shape::Seq(inner) if !inner.is_empty() => write_seq(out, &inner, indent + 2, opts),
            // A scalar item continues (folded lines, a literal's body) two columns past
            // its dash, as a mapping value does past its key.
            shape => {
                write_scalar(out, *item, &shape, indent, opts);
                out.push('\n');
            }
        });
    }
}

/// Writes a scalar, or an empty mapping or sequence, of `node`.
fn write_scalar(
    out: &mut String,
    node: &dyn Tree,
    shape: &Shape<'_>,
    indent: usize,
    opts: EmitOptions,
) {
    let origin = opts
        .origins
        .then(|| node.origin())
        .flatten()
        .map(|loc| format!(" # {}:{}", loc.file, loc.line));
    if let (Some(origin), Shape::Scalar(Scalar::Str(s))) = (&origin, shape)
        && s.contains('\n')
        && literal_allowed(s)
    {
        // A comment may follow a block scalar's header, not its last line.
        let start = out.len();
        let mut block = String::new();
        write_literal(&mut block, s, indent);
        let (header, body) = block.split_once('\n').unwrap_or((&block, ""));
        out.push_str(header);
        out.push_str(origin);
        out.push('\n');
        out.push_str(body);
        wrote_scalar(start..out.len());
        return;
    }
    let start = out.len();
    write_plain_scalar(out, shape, indent);
    wrote_scalar(start..out.len());
    if let Some(origin) = origin {
        out.push_str(&origin);
    }
}

/// Notes where a scalar was written, when [`emit_tree_scalars`] asks.
fn wrote_scalar(r: Range<usize>) {
    SCALARS.with(|s| {
        if let Some(ranges) = s.borrow_mut().as_mut() {
            ranges.push(r);
        }
    });
}

fn write_plain_scalar(out: &mut String, shape: &Shape<'_>, indent: usize) {
    match shape {
        Shape::Scalar(Scalar::Null) => out.push_str("null"),
        Shape::Scalar(Scalar::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        Shape::Scalar(Scalar::Int(i)) => out.push_str(&i.to_string()),
        Shape::Scalar(Scalar::Float(f)) => out.push_str(&format_float(*f)),
        Shape::Scalar(Scalar::Str(s)) if s.contains('\n') && literal_allowed(s) => {
            write_literal(out, s, indent);
        }
        Shape::Scalar(Scalar::Str(s)) => write_folded(out, s, scalar_style(s), indent + 2),
        Shape::Map(_) => out.push_str("{}"),
        Shape::Seq(_) => out.push_str("[]"),
    }
}

fn literal_allowed(s: &str) -> bool {
    s.chars().all(|c| c == '\n' || go_printable(c))
        && !s.split('\n').any(|l| l.ends_with(' ') || l.ends_with('\t'))
}

/// go-yaml's `is_printable`: the characters its emitter writes as they are. Anything else (C0
/// and C1 controls but the line feed, DEL, the byte order mark, U+FFFE and U+FFFF, and every
/// character past U+FFFF, emoji included) forces a double-quoted scalar and is escaped there.
fn go_printable(c: char) -> bool {
    matches!(c as u32, 0x0A | 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD) && c != '\u{feff}'
}

fn write_literal(out: &mut String, s: &str, indent: usize) {
    out.push('|');
    if s.starts_with([' ', '\n']) {
        out.push('2');
    }
    // A string that is one line break keeps it with `+`, as go-yaml's emitter does.
    let trailing = match s.len() - s.trim_end_matches('\n').len() {
        1 if s.len() == 1 => 2,
        n => n,
    };
    match trailing {
        0 => out.push('-'),
        1 => {}
        _ => out.push('+'),
    }
    out.push('\n');
    let body = if trailing == 1 { &s[..s.len() - 1] } else { s };
    let body = body.strip_suffix('\n').unwrap_or(body);
    let lines: Vec<&str> = if trailing > 1 {
        s[..s.len() - 1].split('\n').collect()
    } else {
        body.split('\n').collect()
    };
    for l in lines {
        if !l.is_empty() {
            pad(out, indent + 2);
            out.push_str(l);
        }
        out.push('\n');
    }
    // The caller writes the newline after a scalar; a literal block already ended its line.
    out.pop();
}

fn is_old_bool(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

/// Whether go-yaml v2 (kustomize's printer) reads the plain text as a timestamp, so that it
/// quotes the string: `YYYY-M-D`, optionally followed by `T`/`t` and `h:m:s[.frac]` with `Z`
/// or `±hh:mm`, or by a space and `h:m:s[.frac]` (Go's `time.Parse` with go-yaml's layouts).
fn is_go_timestamp(s: &str) -> bool {
    fn num(b: &[u8], i: &mut usize, max_digits: usize) -> Option<u32> {
        let start = *i;
        while *i < b.len() && *i - start < max_digits && b[*i].is_ascii_digit() {
            *i += 1;
        }
        (*i > start).then(|| {
            b[start..*i]
                .iter()
                .fold(0, |n, d| n * 10 + u32::from(d - b'0'))
        })
    }
    fn expect(b: &[u8], i: &mut usize, c: u8) -> Option<()> {
        (b.get(*i) == Some(&c)).then(|| *i += 1)
    }
    fn parse(b: &[u8]) -> Option<()> {
        let mut i = 0;
        if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) {
            return None;
        }
        let year = num(b, &mut i, 4)?;
        expect(b, &mut i, b'-')?;
        let month = num(b, &mut i, 2)?;
        expect(b, &mut i, b'-')?;
        let day = num(b, &mut i, 2)?;
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        if day == 0 || day > days {
            return None;
        }
        let Some(&sep) = b.get(i) else {
            return Some(());
        };
        if !matches!(sep, b'T' | b't' | b' ') {
            return None;
        }
        i += 1;
        let (h, m) = (num(b, &mut i, 2)?, {
            expect(b, &mut i, b':')?;
            num(b, &mut i, 2)?
        });
        expect(b, &mut i, b':')?;
        let sec = num(b, &mut i, 2)?;
        if h > 23 || m > 59 || sec > 59 {
            return None;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            num(b, &mut i, usize::MAX)?;
        }
        if sep == b' ' {
            return (i == b.len()).then_some(());
        }
        match b.get(i) {
            Some(b'Z') => i += 1,
            Some(b'+' | b'-') => {
                i += 1;
                let zh = b.get(i..i + 2)?;
                i += 2;
                expect(b, &mut i, b':')?;
                let zm = b.get(i..i + 2)?;
                i += 2;
                if !zh.iter().chain(zm).all(u8::is_ascii_digit) {
                    return None;
                }
            }
            _ => return None,
        }
        (i == b.len()).then_some(())
    }
    parse(s.as_bytes()).is_some()
}

fn is_base60_float(s: &str) -> bool {
    let b = s.trim_start_matches(['-', '+']);
    let mut parts = b.split(':');
    let Some(head) = parts.next() else {
        return false;
    };
    if head.is_empty()
        || !head.as_bytes()[0].is_ascii_digit()
        || !head.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return false;
    }
    let rest: Vec<&str> = parts.collect();
    if rest.is_empty() {
        return false;
    }
    for (i, p) in rest.iter().enumerate() {
        let (digits, frac) = match p.split_once('.') {
            Some((d, f)) if i == rest.len() - 1 => (d, Some(f)),
            Some(_) => return false,
            None => (*p, None),
        };
        if digits.is_empty() || digits.len() > 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
        if digits.len() == 2 && digits.as_bytes()[0] > b'5' {
            return false;
        }
        if frac.is_some_and(|f| !f.chars().all(|c| c.is_ascii_digit() || c == '_')) {
            return false;
        }
    }
    true
}

/// How go-yaml v3 writes a string on one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
}

/// Quotes a string as go-yaml v3 would: plain when that reads back as the same string,
/// single-quoted when plain syntax is not allowed, double-quoted when it would read back as
/// another type or holds characters only double quotes can carry.
#[must_use]
pub fn quote_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_folded(&mut out, s, scalar_style(s), usize::MAX);
    out
}

fn scalar_style(s: &str) -> Style {
    if obviously_plain(s) {
        return Style::Plain;
    }
    resolved_style(s)
}

/// [`scalar_style`] the long way: how each reader would resolve the text.
fn resolved_style(s: &str) -> Style {
    if s.is_empty() {
        return Style::Double;
    }
    let reads_as_other = !matches!(
        crate::scalar::resolve_plain(s, crate::Schema::Kube),
        Value::String(_)
    );
    if reads_as_other || is_old_bool(s) || is_base60_float(s) || is_go_timestamp(s) {
        return Style::Double;
    }
    if s.chars()
        .any(|c| !go_printable(c) || c == '\n' || c == '\u{2028}' || c == '\u{2029}')
    {
        return Style::Double;
    }
    if plain_allowed(s) {
        Style::Plain
    } else {
        Style::Single
    }
}

/// Whether `s` is plain by a look at its bytes alone, as most keys and strings a chart prints
/// are (names, labels, sentences): a letter first, printable ASCII without `:` or `#`, no
/// space last, and no word a YAML reader resolves to another type. [`scalar_style`] decides
/// the same for these, after resolving the text as every reader would; this skips that.
fn obviously_plain(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphabetic()
        && *last != b' '
        && b.iter()
            .all(|&c| matches!(c, b' '..=b'~') && c != b':' && c != b'#')
        // Every word that reads as null or a bool (go-yaml v2's included) has five letters
        // or fewer: those the resolvers judge.
        && (b.len() > 5
            || !is_old_bool(s)
                && matches!(
                    crate::scalar::resolve_plain(s, crate::Schema::Kube),
                    Value::String(_)
                ))
}

/// go-yaml's emitter breaks a long line (its best width is 80 columns).
const BEST_WIDTH: usize = 80;

/// Writes `s` in `style` as go-yaml's emitter does, folding at a space once the line is past
/// 80 columns (columns counted in characters) and continuing at `indent`. `usize::MAX` as
/// the indent never folds (keys are never folded).
fn write_folded(out: &mut String, s: &str, style: Style, indent: usize) {
    let allow_breaks = indent != usize::MAX;
    // Only a space can fold: without one (or where folding is off) plain and single-quoted
    // text is written as it is.
    if style != Style::Double && (!allow_breaks || !s.contains(' ')) {
        if style == Style::Plain {
            out.push_str(s);
        } else {
            out.push('\'');
            out.push_str(&s.replace('\'', "''"));
            out.push('\'');
        }
        return;
    }
    let mut column = out
        .rsplit_once('\n')
        .map_or(out.as_str(), |(_, last)| last)
        .chars()
        .count();
    match style {
        Style::Single => out.push('\''),
        Style::Double => out.push('"'),
        Style::Plain => {}
    }
    if style != Style::Plain {
        column += 1;
    }
    let chars: Vec<char> = s.chars().collect();
    let mut spaces = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next_is_space = chars.get(i + 1) == Some(&' ');
        if c == ' ' {
            let inner = i > 0 && i + 1 < chars.len();
            let fold = allow_breaks
                && !spaces
                && column > BEST_WIDTH
                && match style {
                    Style::Plain => !next_is_space,
                    Style::Single => inner && !next_is_space,
                    Style::Double => inner,
                };
            if fold {
                out.push('\n');
                pad(out, indent);
                column = indent;
                if style == Style::Double && next_is_space {
                    // An escaped break keeps the spaces that follow it.
                    out.push('\\');
                    column += 1;
                }
            } else {
                out.push(' ');
                column += 1;
            }
            spaces = true;
            i += 1;
            continue;
        }
        let before = out.len();
        match style {
            Style::Double => push_double_escaped(out, c),
            Style::Single if c == '\'' => out.push_str("''"),
            _ => out.push(c),
        }
        column += out[before..].chars().count();
        spaces = false;
        i += 1;
    }
    match style {
        Style::Single => out.push('\''),
        Style::Double => out.push('"'),
        Style::Plain => {}
    }
}

fn plain_allowed(s: &str) -> bool {
    let first = s.chars().next().unwrap_or(' ');
    let second = s.chars().nth(1);
    if first == ' ' || s.ends_with(' ') {
        return false;
    }
    match first {
        '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%'
        | '@' | '`' => return false,
        '-' | '?' | ':' if second.is_none_or(|c| c == ' ') => return false,
        _ => {}
    }
    if s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    if s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s.contains(":\t")
        || s.contains("\t#")
    {
        return false;
    }
    true
}

fn push_double_escaped(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '\0' => out.push_str("\\0"),
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{b}' => out.push_str("\\v"),
        '\u{c}' => out.push_str("\\f"),
        '\u{1b}' => out.push_str("\\e"),
        '\u{85}' => out.push_str("\\N"),
        '\u{2028}' => out.push_str("\\L"),
        '\u{2029}' => out.push_str("\\P"),
        c if !go_printable(c) => {
            let n = c as u32;
            if n <= 0xff {
                let _ = write!(out, "\\x{n:02X}");
            } else if n <= 0xffff {
                let _ = write!(out, "\\u{n:04X}");
            } else {
                let _ = write!(out, "\\U{n:08X}");
            }
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Schema, parse_stream};

    fn roundtrip(text: &str) -> String {
        let s = parse_stream("t.yaml", text, Schema::Kube);
        emit_docs(
            &s.docs,
            EmitOptions {
                sort_keys: true,
                ..EmitOptions::default()
            },
        )
    }

    #[test]
    fn quoting_matches_go_yaml_v3() {
        assert_eq!(quote_string("yes"), "\"yes\"");
        assert_eq!(quote_string("n"), "\"n\"");
        assert_eq!(quote_string("0777"), "\"0777\"");
        assert_eq!(quote_string("12:30:00"), "\"12:30:00\"");
        assert_eq!(quote_string("with: colon"), "'with: colon'");
        assert_eq!(quote_string("- x"), "'- x'");
        assert_eq!(quote_string("# hash"), "'# hash'");
        assert_eq!(quote_string("~"), "\"~\"");
        assert_eq!(quote_string("nginx:1.2"), "nginx:1.2");
        assert_eq!(quote_string("-x"), "-x");
        assert_eq!(quote_string(""), "\"\"");
        // go-yaml prints only its printable characters: no emoji, no DEL, no C1 control.
        assert_eq!(quote_string("\u{1F3E0}"), "\"\\U0001F3E0\"");
        assert_eq!(quote_string("a\u{7f}"), "\"a\\x7F\"");
        assert_eq!(quote_string("\u{a0}x\t"), "\"\u{a0}x\\t\"");
        assert_eq!(quote_string("\u{e000}"), "\u{e000}");
        assert_eq!(quote_string("\u{fffe}"), "\"\\uFFFE\"");
    }

    /// The shortcut for plain strings decides as the resolvers do: every string it takes
    /// (words of up to five letters among them, where the ones that read as bools and nulls
    /// are) is plain the long way too, and it takes the common shapes.
    #[test]
    fn obviously_plain_agrees_with_the_resolvers() {
        let pieces = [
            "a",
            "Z",
            "y",
            "n",
            "on",
            "No",
            "OFF",
            "yes",
            "null",
            "NULL",
            "true",
            "False",
            "1",
            "09",
            "2024-01-02",
            ".",
            "-",
            "_",
            "/",
            " ",
            ":",
            "#",
            ": ",
            " #",
            "'",
            "\"",
            "é",
            "\t",
            ",",
            "[",
            "{",
            "~",
            "inf",
            ".inf",
            "x1",
        ];
        let mut taken = 0;
        for a in pieces {
            for b in pieces {
                for c in ["", "a", " ", "b c", ".5", ":", "#"] {
                    let s = format!("{a}{b}{c}");
                    for s in [s.clone(), format!("{s}{s}"), b.to_string()] {
                        if obviously_plain(&s) {
                            taken += 1;
                            assert_eq!(resolved_style(&s), Style::Plain, "{s:?}");
                        }
                    }
                }
            }
        }
        assert!(taken > 1000, "{taken}");
        for s in [
            "app.kubernetes.io/name",
            "name",
            "spec",
            "A sentence, with (words).",
        ] {
            assert!(obviously_plain(s), "{s:?}");
        }
        for s in [
            "yes", "Off", "null", "TRUE", "false", "y", "a:b", "a #b", "ab ", "1a",
        ] {
            assert!(!obviously_plain(s), "{s:?}");
        }
    }

    #[test]
    fn block_layout() {
        let out = roundtrip("b: {y: [1, {k: v, a: b}], x: {}}\na: |\n  l1\n  l2\nc: []\n");
        assert_eq!(
            out,
            "a: |\n  l1\n  l2\nb:\n  x: {}\n  \"y\":\n  - 1\n  - a: b\n    k: v\nc: []\n"
        );
    }

    #[test]
    fn long_strings_fold_like_go_yaml() {
        // Expected text as `kubectl kustomize` (go-yaml v3, best width 80) printed it.
        let words = "word ".repeat(25) + "end";
        let doc = format!(
            "p: {words}\nq: '# {words}'\nd: \"a\\t{words}\"\ns:\n- {words}\nu: {}\nk: {}\n",
            "\u{e9}".repeat(80) + " after",
            "x".repeat(60) + " yyyyy zzzz"
        );
        let out = roundtrip(&doc);
        // Sixteen words take a line past column 80; the fold is at the next space.
        let w16 = "word ".repeat(15) + "word";
        let rest = "word ".repeat(9) + "end";
        // `d: "a\t` is seven columns: fifteen words already end past 80.
        let (d15, d_rest) = ("word ".repeat(14) + "word", "word ".repeat(10) + "end");
        assert_eq!(
            out,
            format!(
                "d: \"a\\t{d15}\n  {d_rest}\"\nk: {}\np: {w16}\n  {rest}\nq: '# {w16}\n  {rest}'\ns:\n- {w16}\n  {rest}\nu: {}\n  after\n",
                "x".repeat(60) + " yyyyy zzzz",
                "\u{e9}".repeat(80)
            )
        );
        // A break before more spaces is escaped so that they survive (as kubectl prints).
        let mut o = String::from("k: ");
        write_folded(&mut o, &("a".repeat(80) + "  b"), Style::Double, 2);
        assert_eq!(o, format!("k: \"{}\n  \\ b\"", "a".repeat(80)));
        // Keys never fold.
        assert_eq!(quote_string(&words), words);
    }

    #[test]
    fn ascii_shortcut_orders_keys_as_the_character_comparison() {
        let keys = [
            "", "a", "A", "b", "ab", "a1", "a10", "a2", "a01", "a001", "1", "10", "01", "-", "_",
            "a-b", "a_b", "a.b", "z", "Z9", "9z", "a b", "x0y", "x00y", "1a", "a1b2", "a1b10",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(go_yaml_key_order(a, b), char_order(a, b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn keys_sort_as_go_yaml_sorts_them() {
        // The order `kubectl kustomize` printed these keys in.
        let want = [
            "-x", "_x", "1a", "9", "10", "A1", "Z", "a-1", "a.1", "a_1", "a0", "a1", "a1b", "a01",
            "a001", "a9", "a09", "a10", "aB", "ab", "b2c9", "b2c10", "b02c", "x00y", "x0y", "x1y",
            "z", "\u{e9}a",
        ];
        let mut got = want.to_vec();
        got.reverse();
        got.sort_by(|a, b| go_yaml_key_order(a, b));
        assert_eq!(got, want);
    }

    #[test]
    fn literal_in_a_list_is_indented_past_the_dash() {
        assert_eq!(roundtrip("a:\n- |\n    x\n    y\n"), "a:\n- |\n  x\n  y\n");
    }

    #[test]
    fn timestamps_are_quoted() {
        for t in [
            "2025-06-11",
            "2025-6-1",
            "2024-02-29",
            "2025-06-11T10:00:00Z",
            "2025-06-11t1:2:3.5+02:00",
            "2025-06-11 10:00:00.123",
        ] {
            assert_eq!(quote_string(t), format!("\"{t}\""), "{t}");
        }
        for t in [
            "2025-02-29",
            "2025-13-01",
            "2025-06-11T10:00:00",
            "2025-06-11 10:00:00Z",
            "25-06-11",
            "2025-06-11x",
        ] {
            assert_eq!(quote_string(t), t, "{t}");
        }
    }

    #[test]
    fn literal_blocks_starting_with_a_break() {
        // As `kubectl kustomize` printed these values.
        let out = roundtrip(
            "a: \"\\n\"\nc: \"\\nx\"\nd: \"\\n\\nx\\n\\n\"\ne: \" x\\ny\"\ng: \"x\\n \\n\"\n",
        );
        assert_eq!(
            out,
            "a: |2+\n\nc: |2-\n\n  x\nd: |2+\n\n\n  x\n\ne: |2-\n   x\n  y\ng: \"x\\n \\n\"\n"
        );
    }

    #[test]
    fn literal_without_final_newline() {
        assert_eq!(roundtrip("a: \"x\\ny\"\n"), "a: |-\n  x\n  y\n");
    }
}
