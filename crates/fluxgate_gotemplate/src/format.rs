//! Go's `fmt` as templates reach it: `print`, `println`, `printf` and the printing of an
//! action's value (`%v`), with Go's float rules (`1e+06`), `map[k:v]`, `[a b]`, `<nil>`, and
//! the `%!verb(type=value)` forms for bad verbs and arguments.

use std::borrow::Cow;

use crate::value::{MAX_DEPTH, Value};

/// `fmt.Sprint(v)` of one value.
pub fn sprint_value(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, 'v', &Spec::default(), 0);
    out
}

/// `fmt.Sprint(args...)`: a space between operands when neither side is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        let is_str = matches!(a, Value::String(_));
        if i > 0 && !is_str && !matches!(args[i - 1], Value::String(_)) {
            out.push(' ');
        }
        out.push_str(&sprint_value(a));
    }
    out
}

/// `fmt.Sprintln(args...)`: spaces between all operands and a newline.
pub fn sprintln(args: &[Value]) -> String {
    let parts: Vec<String> = args.iter().map(sprint_value).collect();
    parts.join(" ") + "\n"
}

/// `strconv.FormatFloat(f, 'g', -1, 64)`, which `%v` uses for float64.
pub fn format_float(f: f64) -> String {
    format_float_g(f, None, false)
}

/// `strconv.Quote(s)`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            '\u{fffd}' => out.push('\u{fffd}'),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn is_printable(c: char) -> bool {
    // Go's unicode.IsPrint, approximated: control and format characters and separators
    // other than the ASCII space are escaped.
    !(c.is_control()
        || matches!(c as u32, 0x00ad | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x206f | 0xfeff | 0xfff9..=0xfffb | 0xe000..=0xf8ff)
        || (c.is_whitespace() && c != ' '))
}

// The flags of one verb, as Go's fmt keeps them.
#[allow(clippy::struct_excessive_bools)]
#[derive(Default, Clone)]
struct Spec {
    plus: bool,
    minus: bool,
    sharp: bool,
    zero: bool,
    space: bool,
    /// `%#v`: Go syntax (`[]interface {}{1, "a"}`).
    sharp_v: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

/// `fmt.Sprintf(format, args...)`, parsed as Go's `doPrintf` does: flags, explicit argument
/// indexes (`%[2]d`), `*` widths and precisions from the arguments (`%!(BADWIDTH)`,
/// `%!(BADPREC)` when they are not ints; a negative width left-justifies), and the
/// `%!v(MISSING)`, `%!v(BADINDEX)`, `%!(NOVERB)` and `%!(EXTRA ...)` notes.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let b = format.as_bytes();
    let end = b.len();
    let mut out = String::new();
    let mut p = Printf {
        arg_num: 0,
        reordered: false,
        good: true,
    };
    let mut i = 0;
    while i < end {
        p.good = true;
        let last = i;
        while i < end && b[i] != b'%' {
            i += 1;
        }
        if i > last {
            out.push_str(&format[last..i]);
        }
        if i >= end {
            break;
        }
        i += 1;
        let mut spec = Spec::default();
        while i < end {
            match b[i] {
                b'#' => spec.sharp = true,
                b'0' => spec.zero = true,
                b'+' => spec.plus = true,
                b'-' => spec.minus = true,
                b' ' => spec.space = true,
                _ => break,
            }
            i += 1;
        }
        let mut after_index;
        (i, after_index) = p.arg_number(b, i, args.len());
        if i < end && b[i] == b'*' {
            i += 1;
            match p.int_from_arg(args) {
                Some(w) if w < 0 => {
                    spec.width = usize::try_from(w.unsigned_abs()).ok();
                    spec.minus = true;
                    spec.zero = false;
                }
                Some(w) => spec.width = usize::try_from(w.unsigned_abs()).ok(),
                None => out.push_str("%!(BADWIDTH)"),
            }
            after_index = false;
        } else {
            let (w, ok, next) = parse_num(b, i, end);
            i = next;
            spec.width = ok.then_some(w);
            if after_index && ok {
                p.good = false;
            }
        }
        if i + 1 < end && b[i] == b'.' {
            i += 1;
            if after_index {
                p.good = false;
            }
            (i, after_index) = p.arg_number(b, i, args.len());
            if i < end && b[i] == b'*' {
                i += 1;
                match p.int_from_arg(args) {
                    Some(n) if n >= 0 => spec.prec = usize::try_from(n.unsigned_abs()).ok(),
                    _ => out.push_str("%!(BADPREC)"),
                }
                after_index = false;
            } else {
                let (n, ok, next) = parse_num(b, i, end);
                i = next;
                spec.prec = Some(if ok { n } else { 0 });
            }
        }
        if !after_index {
            (i, _) = p.arg_number(b, i, args.len());
        }
        let Some(verb) = format.get(i..).and_then(|r| r.chars().next()) else {
            out.push_str("%!(NOVERB)");
            break;
        };
        i += verb.len_utf8();
        if verb == '%' {
            out.push('%');
            continue;
        }
        if !p.good {
            out.push_str(&format!("%!{verb}(BADINDEX)"));
            continue;
        }
        let Some(arg) = args.get(p.arg_num) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        p.arg_num += 1;
        // `%+v` is `%v` for what templates print (no struct fields); `%#v` is Go syntax.
        if verb == 'v' {
            spec.plus = false;
            spec.sharp_v = std::mem::take(&mut spec.sharp);
        }
        let arg = if matches!(arg, Value::Missing) {
            &Value::Nil
        } else {
            arg
        };
        write_value(&mut out, arg, verb, &spec, 0);
    }
    if !p.reordered && p.arg_num < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[p.arg_num..]
            .iter()
            .map(|a| {
                if a.is_nil() {
                    "<nil>".to_string()
                } else {
                    format!("{}={}", a.type_name(), sprint_value(a))
                }
            })
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

/// Where `sprintf` is in its arguments.
struct Printf {
    arg_num: usize,
    /// An explicit index was seen: extra arguments are not reported.
    reordered: bool,
    /// The verb's argument index is valid.
    good: bool,
}

impl Printf {
    /// Go's `argNumber`: an explicit `[n]` at `i` moves to argument n; the position after
    /// it and whether one was read.
    fn arg_number(&mut self, b: &[u8], i: usize, num_args: usize) -> (usize, bool) {
        if b.get(i) != Some(&b'[') {
            return (i, false);
        }
        self.reordered = true;
        let (index, width, ok) = parse_arg_number(&b[i..]);
        if let (true, Some(n)) = (ok, index.filter(|n| *n < num_args)) {
            self.arg_num = n;
            return (i + width, true);
        }
        self.good = false;
        (i + width, ok)
    }

    /// Go's `intFromArg`: the next argument as a width or precision (ints only, at most
    /// 10^6 in size).
    fn int_from_arg(&mut self, args: &[Value]) -> Option<i64> {
        let a = args.get(self.arg_num)?;
        self.arg_num += 1;
        match a {
            Value::Int(n) | Value::Int64(n) if n.unsigned_abs() <= 1_000_000 => Some(*n),
            _ => None,
        }
    }
}

/// Go's `parseArgNumber` of `[n]...`: the 0-based index (None below 1), the bytes read, and
/// whether the brackets held a number.
fn parse_arg_number(b: &[u8]) -> (Option<usize>, usize, bool) {
    if b.len() < 3 {
        return (None, 1, false);
    }
    for i in 1..b.len() {
        if b[i] == b']' {
            let (n, ok, next) = parse_num(b, 1, i);
            if !ok || next != i {
                return (None, i + 1, false);
            }
            return (n.checked_sub(1), i + 1, true);
        }
    }
    (None, 1, false)
}

/// Go's `parsenum`: decimal digits from `start`; the number, whether there was one, and
/// where it ended (a number above 10^6 swallows the rest of the format, as in Go).
fn parse_num(b: &[u8], start: usize, end: usize) -> (usize, bool, usize) {
    if start >= end {
        return (0, false, end);
    }
    let (mut n, mut any, mut i) = (0usize, false, start);
    while i < end && b[i].is_ascii_digit() {
        if n > 1_000_000 {
            return (0, false, end);
        }
        n = n * 10 + usize::from(b[i] - b'0');
        any = true;
        i += 1;
    }
    (n, any, i)
}

/// `%!verb(type=value)`: the value printed with `%v` and the verb's flags, as Go does.
fn bad_verb(out: &mut String, v: &Value, verb: char, spec: &Spec) {
    if v.is_nil() {
        out.push_str(&format!("%!{verb}(<nil>)"));
    } else {
        out.push_str(&format!("%!{verb}({}=", v.type_name()));
        write_value(out, v, 'v', spec, 0);
        out.push(')');
    }
}

/// Go's `padString`: text padded to the width, with zeros on the left under the `0` flag.
fn pad_text(out: &mut String, s: &str, spec: &Spec) {
    let width = spec.width.unwrap_or(0);
    // No width (nearly always): no need to count the characters.
    if width == 0 {
        out.push_str(s);
        return;
    }
    let len = s.chars().count();
    if len >= width {
        out.push_str(s);
        return;
    }
    let fill = width - len;
    if spec.minus {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', fill));
    } else {
        let c = if spec.zero { '0' } else { ' ' };
        out.extend(std::iter::repeat_n(c, fill));
        out.push_str(s);
    }
}

fn pad(out: &mut String, s: &str, spec: &Spec, numeric: bool) {
    let len = s.chars().count();
    let width = spec.width.unwrap_or(0);
    if len >= width {
        out.push_str(s);
        return;
    }
    let fill = width - len;
    if spec.minus {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if spec.zero && numeric {
        let (sign, digits) = match s.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (Some(c), &s[1..]),
            _ => (None, s),
        };
        if let Some(c) = sign {
            out.push(c);
        }
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(digits);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(s);
    }
}

fn write_value(out: &mut String, v: &Value, verb: char, spec: &Spec, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("...");
        return;
    }
    if verb == 'T' {
        pad_text(out, &v.type_name(), spec);
        return;
    }
    if spec.sharp_v && verb == 'v' {
        write_go_syntax(out, v, spec, depth);
        return;
    }
    match v {
        Value::Missing | Value::Nil => match verb {
            'v' => pad_text(out, "<nil>", spec),
            _ => bad_verb(out, v, verb, spec),
        },
        Value::Bool(b) => match verb {
            'v' | 't' => pad_text(out, if *b { "true" } else { "false" }, spec),
            _ => bad_verb(out, v, verb, spec),
        },
        Value::Int(i) | Value::Int64(i) => write_int(out, v, *i, verb, spec),
        Value::Float(f) => write_float(out, v, *f, verb, spec),
        Value::String(s) => write_str(out, v, s.as_bytes(), verb, spec),
        Value::Bytes(b) => match verb {
            's' | 'q' | 'x' | 'X' => write_str(out, v, b, verb, spec),
            _ => write_seq(
                out,
                b.iter().map(|x| Value::Int(i64::from(*x))),
                verb,
                spec,
                depth,
            ),
        },
        Value::List(l) => {
            let items = l.borrow().clone();
            write_seq(out, items.into_iter(), verb, spec, depth);
        }
        Value::Map(m) => {
            let entries: Vec<(String, Value)> = m
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            out.push_str("map[");
            for (i, (k, val)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_str(out, &Value::str(k), k.as_bytes(), verb, spec);
                out.push(':');
                write_value(out, val, verb, spec, depth + 1);
            }
            out.push(']');
        }
        Value::Object(o) => match verb {
            'v' | 's' => pad_text(out, &o.display(), spec),
            _ => bad_verb(out, v, verb, spec),
        },
    }
}

/// `%#v`: a value as Go source (`"a"`, `[]interface {}{1, "a"}`,
/// `map[string]interface {}{"k":1}`; a nil inside a composite is `interface {}(nil)`).
fn write_go_syntax(out: &mut String, v: &Value, spec: &Spec, depth: usize) {
    match v {
        Value::Missing | Value::Nil if depth > 0 => out.push_str("interface {}(nil)"),
        Value::Missing | Value::Nil => pad_text(out, "<nil>", spec),
        Value::String(s) => pad_text(out, &quote(s), spec),
        Value::Bytes(b) => {
            out.push_str("[]byte{");
            let items: Vec<String> = b.iter().map(|x| format!("{x:#x}")).collect();
            out.push_str(&items.join(", "));
            out.push('}');
        }
        Value::List(l) => {
            out.push_str("[]interface {}{");
            for (i, item) in l.borrow().iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item, 'v', spec, depth + 1);
            }
            out.push('}');
        }
        Value::Map(m) => {
            out.push_str("map[string]interface {}{");
            for (i, (k, val)) in m.borrow().iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&quote(k));
                out.push(':');
                write_value(out, val, 'v', spec, depth + 1);
            }
            out.push('}');
        }
        other => {
            let plain = Spec {
                sharp_v: false,
                ..spec.clone()
            };
            write_value(out, other, 'v', &plain, depth);
        }
    }
}

fn write_seq(
    out: &mut String,
    items: impl Iterator<Item = Value>,
    verb: char,
    spec: &Spec,
    depth: usize,
) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_value(out, &item, verb, spec, depth + 1);
    }
    out.push(']');
}

fn write_str(out: &mut String, v: &Value, bytes: &[u8], verb: char, spec: &Spec) {
    // Valid UTF-8 (nearly every string) borrowed as is; `from_utf8` checks it faster than
    // the lossy conversion walks it.
    let text =
        std::str::from_utf8(bytes).map_or_else(|_| String::from_utf8_lossy(bytes), Cow::Borrowed);
    let text = match spec.prec {
        Some(p) if matches!(verb, 'v' | 's' | 'q') => Cow::Owned(text.chars().take(p).collect()),
        _ => text,
    };
    match verb {
        'v' | 's' => pad_text(out, &text, spec),
        'q' => {
            let q = if spec.sharp && can_backquote(&text) {
                format!("`{text}`")
            } else if spec.plus {
                ascii_only(&quote(&text))
            } else {
                quote(&text)
            };
            pad_text(out, &q, spec);
        }
        'x' | 'X' => {
            // Go's fmtSbx: the precision counts bytes; `#` puts 0x before the whole text,
            // or before each byte with the space flag; an empty text is padding only.
            let bytes = &bytes[..spec.prec.unwrap_or(bytes.len()).min(bytes.len())];
            let prefix = if verb == 'x' { "0x" } else { "0X" };
            let mut h = String::new();
            for (i, b) in bytes.iter().enumerate() {
                if spec.space && i > 0 {
                    h.push(' ');
                }
                if spec.sharp && (i == 0 || spec.space) {
                    h.push_str(prefix);
                }
                if verb == 'x' {
                    h.push_str(&format!("{b:02x}"));
                } else {
                    h.push_str(&format!("{b:02X}"));
                }
            }
            pad_text(out, &h, spec);
        }
        _ => bad_verb(out, v, verb, spec),
    }
}

fn write_int(out: &mut String, v: &Value, i: i64, verb: char, spec: &Spec) {
    let neg = i < 0;
    let mag = i.unsigned_abs();
    let digits = match verb {
        'v' | 'd' => mag.to_string(),
        'b' => format!("{mag:b}"),
        'o' | 'O' => format!("{mag:o}"),
        'x' => format!("{mag:x}"),
        'X' => format!("{mag:X}"),
        'c' => {
            let c = u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{fffd}');
            return pad_text(out, &c.to_string(), spec);
        }
        'q' => {
            let c = u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{fffd}');
            let q = quote(&c.to_string());
            let q = if spec.plus { ascii_only(&q) } else { q };
            let inner = &q[1..q.len() - 1];
            let inner = if inner == "\\\"" {
                "\""
            } else if inner == "'" {
                "\\'"
            } else {
                inner
            };
            return pad_text(out, &format!("'{inner}'"), spec);
        }
        // Go formats the bits as unsigned (`-2` is `U+FFFFFFFFFFFFFFFE`).
        'U' => return pad(out, &format!("U+{:04X}", i.cast_unsigned()), spec, false),
        _ => return bad_verb(out, v, verb, spec),
    };
    let mut digits = match spec.prec {
        Some(0) if mag == 0 => String::new(),
        Some(p) if digits.len() < p => "0".repeat(p - digits.len()) + &digits,
        _ => digits,
    };
    if spec.sharp || verb == 'O' {
        let prefix = match verb {
            'b' => "0b",
            'o' if !digits.starts_with('0') => "0",
            'O' => "0o",
            'x' => "0x",
            'X' => "0X",
            _ => "",
        };
        digits = prefix.to_string() + &digits;
    }
    let sign = if neg {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    pad(out, &format!("{sign}{digits}"), spec, spec.prec.is_none());
}

fn write_float(out: &mut String, v: &Value, f: f64, verb: char, spec: &Spec) {
    let body = match verb {
        'v' | 'g' | 'G' => {
            let s = format_float_g(f, spec.prec, false);
            if verb == 'G' { s.to_uppercase() } else { s }
        }
        'e' | 'E' => {
            let s = format_e(f, spec.prec.unwrap_or(6));
            if verb == 'E' { s.to_uppercase() } else { s }
        }
        'f' | 'F' => {
            if f.is_finite() {
                format!("{:.*}", spec.prec.unwrap_or(6), f)
            } else {
                special(f)
            }
        }
        'x' | 'X' => {
            let s = format_hex_float(f);
            if verb == 'X' { s.to_uppercase() } else { s }
        }
        'b' => format_binary_float(f),
        _ => return bad_verb(out, v, verb, spec),
    };
    // `#` keeps a decimal point and the trailing zeros (Go counts significant digits).
    let body = if spec.sharp && verb != 'b' && f.is_finite() {
        match body.strip_prefix('-') {
            Some(rest) => format!("-{}", sharpen(rest, verb, spec.prec)),
            None => sharpen(&body, verb, spec.prec),
        }
    } else {
        body
    };
    let body = if spec.plus && !body.starts_with(['-', '+']) {
        format!("+{body}")
    } else if spec.space && !body.starts_with(['-', '+']) {
        format!(" {body}")
    } else {
        body
    };
    pad(out, &body, spec, f.is_finite());
}

/// Go's `#` flag on a formatted float (no sign): a decimal point always, and for `%g`,
/// `%v` and `%x` zeros up to the precision (6 when none) in significant digits, where the
/// `x` of `0x` counts as one, as in Go.
fn sharpen(num: &str, verb: char, prec: Option<usize>) -> String {
    let mut digits: i64 = match verb {
        'v' | 'g' | 'G' | 'x' | 'X' => prec.map_or(6, |p| i64::try_from(p).unwrap_or(0)),
        _ => 0,
    };
    let hex = matches!(verb, 'x' | 'X');
    let (mut body, mut tail) = (String::new(), "");
    let (mut point, mut nonzero) = (false, false);
    for (i, c) in num.char_indices() {
        match c {
            '.' => point = true,
            'p' | 'P' => {
                tail = &num[i..];
                break;
            }
            'e' | 'E' if !hex => {
                tail = &num[i..];
                break;
            }
            _ => {
                nonzero |= c != '0';
                if nonzero {
                    digits -= 1;
                }
            }
        }
        body.push(c);
    }
    if !point {
        if body == "0" {
            digits -= 1;
        }
        body.push('.');
    }
    while digits > 0 {
        body.push('0');
        digits -= 1;
    }
    body + tail
}

/// `strconv.CanBackquote`: no backquote, no ASCII control character but tab, no BOM.
fn can_backquote(s: &str) -> bool {
    !s.chars()
        .any(|c| c == '`' || c == '\u{feff}' || c == '\x7f' || (c < ' ' && c != '\t'))
}

/// A quoted text with everything that is not ASCII escaped (`strconv.QuoteToASCII`).
fn ascii_only(q: &str) -> String {
    let mut out = String::with_capacity(q.len());
    for c in q.chars() {
        match c as u32 {
            0..0x80 => out.push(c),
            n if n < 0x10000 => out.push_str(&format!("\\u{n:04x}")),
            n => out.push_str(&format!("\\U{n:08x}")),
        }
    }
    out
}

/// The sign, the 53-bit mantissa and the binary exponent of a finite, non-zero `f`
/// (`f = mant * 2^exp`), as IEEE 754 stores them.
fn float_parts(f: f64) -> (bool, u64, i32) {
    let bits = f.to_bits();
    let neg = bits >> 63 == 1;
    let biased = i32::try_from((bits >> 52) & 0x7ff).unwrap_or(0);
    let frac = bits & ((1 << 52) - 1);
    if biased == 0 {
        (neg, frac, -1074)
    } else {
        (neg, frac | (1 << 52), biased - 1075)
    }
}

/// `strconv.FormatFloat(f, 'x', -1, 64)`: `0x1.8p+01`.
fn format_hex_float(f: f64) -> String {
    if !f.is_finite() {
        return special(f);
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0x0p+00");
    }
    let (_, mut mant, mut exp) = float_parts(f);
    // Normalize: the leading 1 at bit 52 (subnormals shift up).
    while mant & (1 << 52) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    let exp = exp + 52;
    let frac = mant & ((1 << 52) - 1);
    let mut digits = format!("{frac:013x}");
    while digits.ends_with('0') {
        digits.pop();
    }
    let point = if digits.is_empty() {
        String::new()
    } else {
        format!(".{digits}")
    };
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{sign}0x1{point}p{esign}{:02}", exp.unsigned_abs())
}

/// `strconv.FormatFloat(f, 'b', -1, 64)`: `6755399441055744p-52`.
fn format_binary_float(f: f64) -> String {
    if !f.is_finite() {
        return special(f);
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let (mant, exp) = if f == 0.0 {
        (0, -1074)
    } else {
        let (_, m, e) = float_parts(f);
        (m, e)
    };
    let esign = if exp >= 0 { "+" } else { "" };
    format!("{sign}{mant}p{esign}{exp}")
}

fn special(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

/// Decimal digits (no leading zeros, no trailing zeros) and the position of the point
/// (`1234.5` -> ("12345", 4)) of `|f|` rounded to `sig` significant digits, or shortest.
fn digits(f: f64, sig: Option<usize>) -> (String, i32) {
    let s = match sig {
        Some(p) => format!("{:.*e}", p.saturating_sub(1).min(1000), f.abs()),
        None => format!("{:e}", f.abs()),
    };
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut d: String = mant.chars().filter(char::is_ascii_digit).collect();
    while d.len() > 1 && d.ends_with('0') {
        d.pop();
    }
    if d == "0" {
        return (d, 1);
    }
    (d, exp + 1)
}

fn format_e(f: f64, prec: usize) -> String {
    if !f.is_finite() {
        return special(f);
    }
    let s = format!("{:.*e}", prec.min(1000), f);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// `strconv.FormatFloat(f, 'g', prec, 64)`, `prec` `None` for the shortest form.
fn format_float_g(f: f64, prec: Option<usize>, sharp: bool) -> String {
    if !f.is_finite() {
        return special(f);
    }
    let neg = f.is_sign_negative() && f != 0.0 || (f == 0.0 && f.is_sign_negative());
    let prec = prec.map(|p| p.max(1));
    let (d, dp) = digits(f, prec);
    let nd = d.len() as i32;
    let mut eprec = prec.map_or(nd, |p| p as i32);
    if eprec > nd && nd >= dp {
        eprec = nd;
    }
    if prec.is_none() {
        eprec = 6;
    }
    let exp = dp - 1;
    let sign = if neg { "-" } else { "" };
    if exp < -4 || exp >= eprec {
        let mut m = d[..1].to_string();
        if d.len() > 1 {
            m.push('.');
            m.push_str(&d[1..]);
        } else if sharp {
            m.push('.');
        }
        return format!(
            "{sign}{m}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        );
    }
    let s = if dp <= 0 {
        format!("0.{}{}", "0".repeat(dp.unsigned_abs() as usize), d)
    } else if dp >= nd {
        format!("{}{}", d, "0".repeat((dp - nd) as usize))
    } else {
        format!("{}.{}", &d[..dp as usize], &d[dp as usize..])
    };
    format!("{sign}{s}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_go() {
        assert_eq!(format_float(1_000_000.0), "1e+06");
        assert_eq!(format_float(100_000.0), "100000");
        assert_eq!(format_float(1.5), "1.5");
        assert_eq!(format_float(0.0001), "0.0001");
        assert_eq!(format_float(0.00001), "1e-05");
        assert_eq!(format_float(123_456_789.0), "1.23456789e+08");
        assert_eq!(format_float(-2.0), "-2");
        assert_eq!(format_float(0.0), "0");
        assert_eq!(
            sprintf(
                "%.2f|%5.1f|%e|%g",
                &[
                    Value::Float(1.23456),
                    Value::Float(2.0),
                    Value::Float(1234.5),
                    Value::Float(0.1)
                ]
            ),
            "1.23|  2.0|1.234500e+03|0.1"
        );
    }

    #[test]
    fn printf_verbs() {
        let s = Value::str("hi");
        assert_eq!(
            sprintf(
                "%s-%q-%v-%5s-%-4s|",
                &[s.clone(), s.clone(), s.clone(), s.clone(), s.clone()]
            ),
            "hi-\"hi\"-hi-   hi-hi  |"
        );
        assert_eq!(
            sprintf(
                "%d %03d %x %c",
                &[
                    Value::Int(5),
                    Value::Int(7),
                    Value::Int(255),
                    Value::Int(65)
                ]
            ),
            "5 007 ff A"
        );
        assert_eq!(sprintf("%d", &[Value::str("x")]), "%!d(string=x)");
        assert_eq!(sprintf("%s %d", &[Value::Nil]), "%!s(<nil>) %!d(MISSING)");
        assert_eq!(
            sprintf("%s", &[Value::str("a"), Value::Int(1)]),
            "a%!(EXTRA int=1)"
        );
        assert_eq!(sprintf("100%%", &[]), "100%");
    }

    #[test]
    fn flags_like_go() {
        let l = Value::list(vec![Value::Int(1), Value::str("a"), Value::Nil]);
        let m = Value::map([("k".to_string(), Value::Float(1.0))].into_iter().collect());
        assert_eq!(sprintf("%+v", &[Value::Int(3)]), "3");
        assert_eq!(
            sprintf("%#v %#v %#v", &[Value::str("x"), l, m]),
            "\"x\" []interface {}{1, \"a\", interface {}(nil)} map[string]interface {}{\"k\":1}"
        );
        assert_eq!(sprintf("%#v", &[Value::Float(1e6)]), "1e+06");
        assert_eq!(sprintf("%x", &[Value::Float(3.0)]), "0x1.8p+01");
        assert_eq!(sprintf("%X", &[Value::Float(-2.0)]), "-0X1P+01");
        assert_eq!(sprintf("%x", &[Value::Float(0.0)]), "0x0p+00");
        assert_eq!(sprintf("%b", &[Value::Float(1.5)]), "6755399441055744p-52");
        assert_eq!(sprintf("%U", &[Value::Int(-2)]), "U+FFFFFFFFFFFFFFFE");
        assert_eq!(sprintf("%05d", &[Value::str("x")]), "%!d(string=0000x)");
        assert_eq!(sprintf("%.2f", &[Value::str("hello")]), "%!f(string=he)");
        assert_eq!(sprintf("%.2f", &[Value::Int(-2)]), "%!f(int=-02)");
        assert_eq!(sprintf("%05v", &[Value::Bool(true)]), "0true");
        let (one, x) = (Value::Int(1), Value::str("x"));
        assert_eq!(
            sprintf("%[2]v %[1]v %v|%[3]d", &[x.clone(), one.clone()]),
            "1 x 1|%!d(BADINDEX)"
        );
        assert_eq!(
            sprintf(
                "%*d|%-*d|%.*f",
                &[
                    x.clone(),
                    one.clone(),
                    Value::Int(-3),
                    one.clone(),
                    x,
                    Value::Float(1.5)
                ]
            ),
            "%!(BADWIDTH)1|1  |%!(BADPREC)1.500000"
        );
        assert_eq!(sprintf("%#x", &[Value::Float(-2.0)]), "-0x1.0000p+01");
        assert_eq!(
            sprintf("%#q", &[Value::Float(1e6)]),
            "%!q(float64=1.00000e+06)"
        );
        assert_eq!(
            sprintf("%#x|% #x", &[Value::str("ab"), Value::str("ab")]),
            "0x6162|0x61 0x62"
        );
        assert_eq!(sprintf("%+q", &[Value::str("é")]), "\"\\u00e9\"");
    }

    #[test]
    fn composites() {
        let m = Value::map(
            [
                ("b".to_string(), Value::Int(2)),
                (
                    "a".to_string(),
                    Value::list(vec![Value::str("x"), Value::Nil]),
                ),
            ]
            .into_iter()
            .collect(),
        );
        assert_eq!(sprint_value(&m), "map[a:[x <nil>] b:2]");
        assert_eq!(
            sprint(&[Value::Int(1), Value::Int(2), Value::str("a"), Value::Int(3)]),
            "1 2a3"
        );
        assert_eq!(quote("a\"\n\u{1}"), "\"a\\\"\\n\\x01\"");
    }
}
