//! The lexer: template text into tokens, with Go's delimiters, trim markers (`{{- ` and
//! ` -}}` eat the whitespace beside them), comments (`{{/* */}}`) and literals.

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Text(String),
    LeftDelim,
    RightDelim,
    Space,
    /// A function name or a keyword.
    Ident(String),
    /// `.Name`
    Field(String),
    /// `$` or `$name`
    Variable(String),
    Dot,
    /// A quoted string: the decoded value and the text as written.
    Str(String, String),
    /// A character constant: its code point and the text as written.
    Char(i64, String),
    Number(String),
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
#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
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
pub fn lex(src: &str) -> Result<Vec<Token>, LexError> {
    let mut lx = Lexer {
        src,
        pos: 0,
        out: Vec::new(),
        paren: 0,
    };
    lx.run()?;
    Ok(lx.out)
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    out: Vec<Token>,
    paren: usize,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn push(&mut self, tok: Tok, pos: usize) {
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
            let found = self.rest().find("{{");
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
                self.push(Tok::Text(text.to_string()), text_pos);
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
            if r.is_empty() {
                return self.err("unclosed action", self.pos);
            }
            if let Some(t) = trim_right_delim(r) {
                if self.paren > 0 {
                    return self.err("unclosed left paren", self.pos);
                }
                self.push(Tok::RightDelim, self.pos + t - 2);
                self.pos += t;
                return Ok(true);
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
            let c = r.chars().next().unwrap_or(' ');
            match c {
                ' ' | '\t' | '\r' | '\n' => {
                    let n = r.len() - r.trim_start_matches([' ', '\t', '\r', '\n']).len();
                    self.pos += n;
                    self.push(Tok::Space, start);
                }
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
                    let body = r[1..=end].to_string();
                    let text = r[..end + 2].to_string();
                    self.pos += end + 2;
                    self.push(Tok::Str(body, text), start);
                }
                '\'' => self.char_constant(start)?,
                '$' => {
                    let n = 1 + r[1..].find(|c: char| !is_alnum(c)).unwrap_or(r.len() - 1);
                    self.pos += n;
                    self.push(Tok::Variable(r[..n].to_string()), start);
                }
                '.' => {
                    let next = r[1..].chars().next();
                    if next.is_some_and(|d| d.is_ascii_digit()) {
                        self.number(start)?;
                    } else if next.is_some_and(is_alnum) {
                        let n = 1 + r[1..].find(|c: char| !is_alnum(c)).unwrap_or(r.len() - 1);
                        self.pos += n;
                        self.push(Tok::Field(r[1..n].to_string()), start);
                    } else {
                        self.pos += 1;
                        self.push(Tok::Dot, start);
                    }
                }
                '+' | '-' | '0'..='9' => self.number(start)?,
                c if is_alnum(c) => {
                    let n = r.find(|c: char| !is_alnum(c)).unwrap_or(r.len());
                    let word = &r[..n];
                    self.pos += n;
                    let tok = match word {
                        "true" => Tok::Bool(true),
                        "false" => Tok::Bool(false),
                        "nil" => Tok::Nil,
                        w => Tok::Ident(w.to_string()),
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
        let text = r[..=i].to_string();
        let Some(value) = unquote(&text[1..text.len() - 1]) else {
            return self.err(format!("invalid syntax: {text}"), start);
        };
        self.pos += i + 1;
        self.push(Tok::Str(value, text), start);
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
        let text = r[..=i].to_string();
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
        self.push(Tok::Char(i64::from(u32::from(c)), text), start);
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
        self.push(Tok::Number(text.to_string()), start);
        Ok(())
    }
}

/// The length of ` -}}` (any whitespace before the dash) at the start of `r`, if there.
fn trim_right_delim(r: &str) -> Option<usize> {
    let spaces = r.len() - r.trim_start_matches([' ', '\t', '\r', '\n']).len();
    (spaces > 0 && r[spaces..].starts_with("-}}")).then_some(spaces + 3)
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

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn trims_and_comments() {
        assert_eq!(
            toks("a  {{- .x -}}  b{{/* c */}}d"),
            vec![
                Tok::Text("a".into()),
                Tok::LeftDelim,
                Tok::Field("x".into()),
                Tok::RightDelim,
                Tok::Text("b".into()),
                Tok::Text("d".into()),
                Tok::Eof
            ]
        );
        assert_eq!(toks("{{-3}}")[1], Tok::Number("-3".into()));
        assert_eq!(
            toks("x \n{{- /* c */ -}}\n y"),
            vec![Tok::Text("x".into()), Tok::Text("y".into()), Tok::Eof]
        );
    }

    #[test]
    fn literals() {
        assert_eq!(
            toks(r#"{{"a\n\x41"}}"#)[1],
            Tok::Str("a\nA".into(), r#""a\n\x41""#.into())
        );
        assert_eq!(
            toks("{{`a\\n`}}")[1],
            Tok::Str("a\\n".into(), "`a\\n`".into())
        );
        assert_eq!(toks("{{'a'}}")[1], Tok::Char(97, "'a'".into()));
        assert_eq!(
            toks("{{$x.y}}")[1..3],
            [Tok::Variable("$x".into()), Tok::Field("y".into())]
        );
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
