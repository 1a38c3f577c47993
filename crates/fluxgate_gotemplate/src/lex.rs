//! The lexer: template text into tokens, with Go's delimiters, trim markers (`{{- ` and
//! ` -}}` eat the whitespace beside them), comments (`{{/* */}}`) and literals.

use std::borrow::Cow;

/// What a token is. Its text is a slice of the source: lexing allocates nothing per token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tok<'a> {
    Text(&'a str),
    LeftDelim,
    RightDelim,
    Space,
    /// A function name or a keyword.
    Ident(&'a str),
    /// `.Name`
    Field(&'a str),
    /// `$` or `$name`
    Variable(&'a str),
    Dot,
    /// A quoted string as written (its escapes are valid; [`string_value`] decodes them).
    Str(&'a str),
    /// A character constant: its value and the text as written.
    Char(char, &'a str),
    Number(&'a str),
    Bool(bool),
    Nil,
    Pipe,
    LeftParen,
    RightParen,
    Declare,
    Assign,
    Comma,
    Eof,
}

/// A token and the byte offset where it starts.
#[derive(Clone, Copy, Debug)]
pub struct Token<'a> {
    pub tok: Tok<'a>,
    pub pos: usize,
}

/// A lexing error: its message and where.
#[derive(Debug)]
pub struct LexError {
    pub message: String,
    pub pos: usize,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Splits `src` into tokens.
pub fn lex(src: &str) -> Result<Vec<Token<'_>>, LexError> {
    let mut lx = Lexer {
        src,
        pos: 0,
        // Chart templates have about one token per 5 bytes; fewer in long literal text.
        out: Vec::with_capacity(src.len() / 6 + 4),
        paren: 0,
    };
    lx.run()?;
    Ok(lx.out)
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    out: Vec<Token<'a>>,
    paren: usize,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn push(&mut self, tok: Tok<'a>, pos: usize) {
        self.out.push(Token { tok, pos });
    }

    fn err<T>(&self, message: impl Into<String>, pos: usize) -> Result<T, LexError> {
        Err(LexError {
            message: message.into(),
            pos,
        })
    }

    fn run(&mut self) -> Result<(), LexError> {
        let mut trim_next = false;
        loop {
            let start = self.pos;
            let found = find_left_delim(self.rest());
            let end = found.map_or(self.src.len(), |i| self.pos + i);
            let mut text = &self.src[start..end];
            if trim_next {
                text = text.trim_start_matches(|c: char| c.is_ascii() && is_space(c as u8));
            }
            let left_trim = found.is_some()
                && self.src[end + 2..].starts_with('-')
                && self.src[end + 3..].bytes().next().is_some_and(is_space);
            if left_trim {
                text = text.trim_end_matches(|c: char| c.is_ascii() && is_space(c as u8));
            }
            if !text.is_empty() {
                let text_pos =
                    start + (text.as_ptr() as usize - self.src[start..].as_ptr() as usize);
                self.push(Tok::Text(text), text_pos);
            }
            if found.is_none() {
                self.push(Tok::Eof, self.src.len());
                return Ok(());
            }
            self.pos = end;
            let delim_pos = end;
            self.pos += 2;
            if left_trim {
                self.pos += 2;
            }
            // A comment fills the whole action.
            if self.rest().starts_with("/*") {
                let body = self.pos + 2;
                let Some(close) = self.src[body..].find("*/") else {
                    return self.err("unclosed comment", delim_pos);
                };
                self.pos = body + close + 2;
                let r = self.rest();
                if r.starts_with("}}") {
                    self.pos += 2;
                    trim_next = false;
                } else if let Some(t) = trim_right_delim(r) {
                    self.pos += t;
                    trim_next = true;
                } else {
                    return self.err("comment ends before closing delimiter", delim_pos);
                }
                continue;
            }
            self.push(Tok::LeftDelim, delim_pos);
            trim_next = self.inside_action()?;
        }
    }

    /// Lexes one action up to and including its closing delimiter; whether it trims after.
    fn inside_action(&mut self) -> Result<bool, LexError> {
        self.paren = 0;
        loop {
            let r = self.rest();
            let Some(&first) = r.as_bytes().first() else {
                return self.err("unclosed action", self.pos);
            };
            if is_space(first) {
                // Spaces, or the ` -}}` that closes the action and trims after it.
                let n = r.bytes().take_while(|&b| is_space(b)).count();
                if r[n..].starts_with("-}}") {
                    if self.paren > 0 {
                        return self.err("unclosed left paren", self.pos);
                    }
                    self.push(Tok::RightDelim, self.pos + n + 1);
                    self.pos += n + 3;
                    return Ok(true);
                }
                self.push(Tok::Space, self.pos);
                self.pos += n;
                continue;
            }
            if r.starts_with("}}") {
                if self.paren > 0 {
                    return self.err("unclosed left paren", self.pos);
                }
                self.push(Tok::RightDelim, self.pos);
                self.pos += 2;
                return Ok(false);
            }
            let start = self.pos;
            let c = if first.is_ascii() {
                char::from(first)
            } else {
                r.chars().next().unwrap_or(' ')
            };
            match c {
                '=' => {
                    self.pos += 1;
                    self.push(Tok::Assign, start);
                }
                ':' => {
                    if !r.starts_with(":=") {
                        return self.err("expected :=", start);
                    }
                    self.pos += 2;
                    self.push(Tok::Declare, start);
                }
                '|' => {
                    self.pos += 1;
                    self.push(Tok::Pipe, start);
                }
                ',' => {
                    self.pos += 1;
                    self.push(Tok::Comma, start);
                }
                '(' => {
                    self.pos += 1;
                    self.paren += 1;
                    self.push(Tok::LeftParen, start);
                }
                ')' => {
                    if self.paren == 0 {
                        return self.err("unexpected right paren", start);
                    }
                    self.paren -= 1;
                    self.pos += 1;
                    self.push(Tok::RightParen, start);
                }
                '"' => self.quoted(start)?,
                '`' => {
                    let Some(end) = r[1..].find('`') else {
                        return self.err("unterminated raw quoted string", start);
                    };
                    self.pos += end + 2;
                    self.push(Tok::Str(&r[..end + 2]), start);
                }
                '\'' => self.char_constant(start)?,
                '$' => {
                    let n = 1 + alnum_len(&r[1..]);
                    self.pos += n;
                    self.push(Tok::Variable(&r[..n]), start);
                }
                '.' => {
                    let next = r[1..].chars().next();
                    if next.is_some_and(|d| d.is_ascii_digit()) {
                        self.number(start)?;
                    } else if next.is_some_and(is_alnum) {
                        let n = 1 + alnum_len(&r[1..]);
                        self.pos += n;
                        self.push(Tok::Field(&r[1..n]), start);
                    } else {
                        self.pos += 1;
                        self.push(Tok::Dot, start);
                    }
                }
                '+' | '-' | '0'..='9' => self.number(start)?,
                c if is_alnum(c) => {
                    let n = alnum_len(r);
                    let word = &r[..n];
                    self.pos += n;
                    let tok = match word {
                        "true" => Tok::Bool(true),
                        "false" => Tok::Bool(false),
                        "nil" => Tok::Nil,
                        w => Tok::Ident(w),
                    };
                    self.push(tok, start);
                }
                c => {
                    return self.err(
                        format!("unrecognized character in action: {}", quote_rune(c)),
                        start,
                    );
                }
            }
        }
    }

    fn quoted(&mut self, start: usize) -> Result<(), LexError> {
        let r = self.rest();
        let bytes = r.as_bytes();
        let mut i = 1;
        loop {
            match bytes.get(i) {
                None | Some(b'\n') => return self.err("unterminated quoted string", start),
                Some(b'\\') => i += 2,
                Some(b'"') => break,
                Some(_) => i += 1,
            }
        }
        let text = &r[..=i];
        if text[1..i].contains('\\') && unquote(&text[1..i]).is_none() {
            return self.err(format!("invalid syntax: {text}"), start);
        }
        self.pos += i + 1;
        self.push(Tok::Str(text), start);
        Ok(())
    }

    fn char_constant(&mut self, start: usize) -> Result<(), LexError> {
        let r = self.rest();
        let bytes = r.as_bytes();
        let mut i = 1;
        loop {
            match bytes.get(i) {
                None | Some(b'\n') => return self.err("unterminated character constant", start),
                Some(b'\\') => i += 2,
                Some(b'\'') => break,
                Some(_) => i += 1,
            }
        }
        let text = &r[..=i];
        let inner = &text[1..text.len() - 1];
        let decoded = if inner == "\"" {
            Some("\"".to_string())
        } else {
            unquote(&inner.replace("\\'", "'"))
        };
        let mut chars = decoded.as_deref().unwrap_or("").chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return self.err(format!("malformed character constant: {text}"), start);
        };
        self.pos += i + 1;
        self.push(Tok::Char(c, text), start);
        Ok(())
    }

    fn number(&mut self, start: usize) -> Result<(), LexError> {
        let r = self.rest();
        let n = r
            .char_indices()
            .skip(1)
            .find(|&(i, c)| {
                !(c.is_ascii_alphanumeric()
                    || c == '.'
                    || c == '_'
                    || ((c == '+' || c == '-')
                        && matches!(r.as_bytes()[i - 1], b'e' | b'E' | b'p' | b'P')))
            })
            .map_or(r.len(), |(i, _)| i);
        let text = &r[..n];
        if text == "+" || text == "-" {
            return self.err(format!("bad number syntax: {text:?}"), start);
        }
        self.pos += n;
        self.push(Tok::Number(text), start);
        Ok(())
    }
}

/// Where the first `{{` in `s` starts.
fn find_left_delim(s: &str) -> Option<usize> {
    // A search for one byte (word at a time), then a look at the next.
    let mut from = 0;
    while let Some(i) = s[from..].find('{') {
        let at = from + i;
        if s.as_bytes().get(at + 1) == Some(&b'{') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The ASCII bytes of names: letters, digits and `_`.
const NAME_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 128 {
        t[c] = (c as u8).is_ascii_alphanumeric() || c == b'_' as usize;
        c += 1;
    }
    t
};

/// The length of the run of letters, digits and `_` at the start of `s`.
fn alnum_len(s: &str) -> usize {
    let b = s.as_bytes();
    let ascii = b
        .iter()
        .position(|&c| !NAME_BYTE[usize::from(c)])
        .unwrap_or(b.len());
    if b.get(ascii).is_some_and(|c| !c.is_ascii()) {
        let rest = &s[ascii..];
        return ascii + rest.find(|c: char| !is_alnum(c)).unwrap_or(rest.len());
    }
    ascii
}

/// The length of ` -}}` (any whitespace before the dash) at the start of `r`, if there.
fn trim_right_delim(r: &str) -> Option<usize> {
    let spaces = r.len() - r.trim_start_matches([' ', '\t', '\r', '\n']).len();
    (spaces > 0 && r[spaces..].starts_with("-}}")).then_some(spaces + 3)
}

/// The value of a string token: a raw string's body, or a quoted one's with its escapes
/// decoded (the lexer checked them).
pub fn string_value(text: &str) -> Cow<'_, str> {
    let body = &text[1..text.len() - 1];
    if text.starts_with('`') || !body.contains('\\') {
        Cow::Borrowed(body)
    } else {
        Cow::Owned(unquote(body).unwrap_or_default())
    }
}

/// Go's `%#U`: `U+007D '}'`.
fn quote_rune(c: char) -> String {
    format!("U+{:04X} '{c}'", c as u32)
}

/// Decodes the escapes of a Go interpreted string literal's body.
pub fn unquote(body: &str) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(c) = chars.next() {
        if c != '\\' {
            flush(&mut pending, &mut out);
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        let simple = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' => Some('\\'),
            '"' => Some('"'),
            '\'' => Some('\''),
            _ => None,
        };
        if let Some(s) = simple {
            flush(&mut pending, &mut out);
            out.push(s);
            continue;
        }
        let digits = |n: usize, radix: u32, chars: &mut std::str::Chars| -> Option<u32> {
            let s: String = chars.by_ref().take(n).collect();
            if s.len() != n {
                return None;
            }
            u32::from_str_radix(&s, radix).ok()
        };
        match e {
            'x' => pending.push(u8::try_from(digits(2, 16, &mut chars)?).ok()?),
            '0'..='7' => {
                let rest = digits(2, 8, &mut chars)?;
                let v = e.to_digit(8)? * 64 + rest;
                pending.push(u8::try_from(v).ok()?);
            }
            'u' => {
                flush(&mut pending, &mut out);
                out.push(char::from_u32(digits(4, 16, &mut chars)?)?);
            }
            'U' => {
                flush(&mut pending, &mut out);
                out.push(char::from_u32(digits(8, 16, &mut chars)?)?);
            }
            _ => return None,
        }
    }
    flush(&mut pending, &mut out);
    Some(out)
}

/// Byte escapes (`\xff`) form UTF-8 together; a byte string that is not UTF-8 is replaced
/// lossily (Rust strings hold UTF-8 only).
fn flush(pending: &mut Vec<u8>, out: &mut String) {
    if !pending.is_empty() {
        out.push_str(&String::from_utf8_lossy(pending));
        pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok<'_>> {
        lex(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn trims_and_comments() {
        assert_eq!(
            toks("a  {{- .x -}}  b{{/* c */}}d"),
            vec![
                Tok::Text("a"),
                Tok::LeftDelim,
                Tok::Field("x"),
                Tok::RightDelim,
                Tok::Text("b"),
                Tok::Text("d"),
                Tok::Eof
            ]
        );
        assert_eq!(toks("{{-3}}")[1], Tok::Number("-3"));
        assert_eq!(
            toks("x \n{{- /* c */ -}}\n y"),
            vec![Tok::Text("x"), Tok::Text("y"), Tok::Eof]
        );
    }

    #[test]
    fn literals() {
        assert_eq!(toks(r#"{{"a\n\x41"}}"#)[1], Tok::Str(r#""a\n\x41""#));
        assert_eq!(string_value(r#""a\n\x41""#), "a\nA");
        assert_eq!(toks("{{`a\\n`}}")[1], Tok::Str("`a\\n`"));
        assert_eq!(string_value("`a\\n`"), "a\\n");
        assert_eq!(string_value(r#""a""#), "a");
        assert_eq!(toks("{{'a'}}")[1], Tok::Char('a', "'a'"));
        assert_eq!(
            toks("{{$x.y}}")[1..3],
            [Tok::Variable("$x"), Tok::Field("y")]
        );
    }

    #[test]
    fn tokens_are_small() {
        // The parser copies tokens by value.
        assert!(std::mem::size_of::<Token>() <= 32);
    }

    #[test]
    fn errors_do_not_panic() {
        for s in [
            "{{",
            "{{\"",
            "{{'",
            "{{)",
            "{{(",
            "{{/*",
            "{{ : }}",
            "{{ é }}",
            "{{ ` }}",
            "{{ '\\ }}",
            "{{\"\\x\"}}",
            "{{-",
        ] {
            let _ = lex(s);
        }
    }
}
