//! The envsubst grammar as Flux's scanner reads it (see the module docs for the rules users
//! meet). Offsets are byte offsets into the input.

/// Why Flux rejects a text. The messages are Flux's own.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// Byte offset of the `${` whose expression failed (the outermost one).
    pub offset: usize,
    pub message: &'static str,
}

const BAD_SUBSTITUTION: &str = "bad substitution";
const MISSING_CLOSING_BRACE: &str = "missing closing brace";
const VARIABLE_NAME: &str = "unable to parse variable name";
const FUNC_SUBSTITUTION: &str = "unable to parse substitution within function";

#[derive(Clone, Debug)]
pub(crate) enum Part {
    Text(String),
    Func(Func),
}

/// `${param<op>args}`; `op` is empty for the plain form.
#[derive(Clone, Debug)]
pub(crate) struct Func {
    pub op: String,
    pub param: String,
    pub args: Vec<Part>,
    pub start: usize,
    pub end: usize,
}

pub(crate) fn parse(text: &str) -> Result<Vec<Part>, ParseError> {
    let mut p = Parser {
        src: text,
        pos: 0,
        depth: 0,
    };
    let mut parts = Vec::new();
    let mut buf = String::new();
    while let Some(c) = p.peek() {
        if p.at_open() {
            if !buf.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut buf)));
            }
            let start = p.pos;
            let f = p.func().map_err(|message| ParseError {
                offset: start,
                message,
            })?;
            parts.push(Part::Func(f));
        } else if c == '$' && p.peek_at(1) == Some('$') {
            buf.push('$');
            p.pos += 2;
        } else {
            buf.push(c);
            p.pos += c.len_utf8();
        }
    }
    if !buf.is_empty() {
        parts.push(Part::Text(buf));
    }
    Ok(parts)
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    /// How many `${` the parser is inside.
    depth: usize,
}

/// The deepest nesting of `${...}` inside one another fluxgate reads (Flux's Go stack takes
/// thousands; a real manifest nests two or three). Past it, a finding, not a stack overflow.
pub const MAX_DEPTH: usize = 64;

/// The [`ParseError`] message past [`MAX_DEPTH`].
pub const TOO_DEEP: &str = "the `${...}` expressions nest more than 64 deep";

type Step<T> = Result<T, &'static str>;

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.rest().chars().nth(n)
    }

    fn at_open(&self) -> bool {
        self.rest().starts_with("${")
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// Takes up to `max` characters accepted by `accept`.
    fn take_while(&mut self, max: usize, accept: impl Fn(char) -> bool) -> String {
        let mut s = String::new();
        while s.chars().count() < max {
            match self.peek() {
                Some(c) if accept(c) => {
                    s.push(c);
                    self.pos += c.len_utf8();
                }
                _ => break,
            }
        }
        s
    }

    fn close(&mut self) -> Step<()> {
        if self.eat('}') {
            Ok(())
        } else {
            Err(BAD_SUBSTITUTION)
        }
    }

    /// Parses `${...}` starting at `${`, at most [`MAX_DEPTH`] deep.
    fn func(&mut self) -> Step<Func> {
        if self.depth >= MAX_DEPTH {
            return Err(TOO_DEEP);
        }
        self.depth += 1;
        let f = self.func_body();
        self.depth -= 1;
        f
    }

    fn func_body(&mut self) -> Step<Func> {
        let start = self.pos;
        self.pos += 2;
        let mut f = Func {
            op: String::new(),
            param: String::new(),
            args: Vec::new(),
            start,
            end: start,
        };
        if self.eat('#') {
            // ${#VAR}: the length.
            f.op = "#".into();
            f.param = self.take_while(usize::MAX, is_ident);
            if f.param.is_empty() {
                return Err(BAD_SUBSTITUTION);
            }
            self.close()?;
            f.end = self.pos;
            return Ok(f);
        }
        f.param = self.take_while(usize::MAX, is_ident);
        if f.param.is_empty() {
            return Err(VARIABLE_NAME);
        }
        match self.peek() {
            Some(':') if matches!(self.peek_at(1), Some('=' | '-' | '?' | '+')) => {
                f.op = self.take_while(2, |_| true);
                self.default_args(&mut f)?;
            }
            // Flux's scanner peeks at the character after `:` and then steps back by that
            // character's width instead of the colon's: after a multi-byte character it lands
            // inside the name, finds no colon there, and refuses the expression.
            Some(':') if self.peek_at(1).is_some_and(|c| c.len_utf8() > 1) => {
                return Err(BAD_SUBSTITUTION);
            }
            Some(':') => {
                self.pos += 1;
                f.op = ":".into();
                self.substring_args(&mut f)?;
            }
            Some('=') => {
                self.pos += 1;
                f.op = "=".into();
                self.default_args(&mut f)?;
            }
            Some(',' | '^') => {
                f.op = self.take_while(2, |c| c == ',' || c == '^');
                self.close()?;
            }
            Some('/') => {
                self.pos += 1;
                f.op = "/".into();
                if let Some(c @ ('/' | '#' | '%')) = self.peek() {
                    self.pos += 1;
                    f.op.push(c);
                }
                self.replace_args(&mut f)?;
            }
            Some(c @ ('#' | '%')) => {
                f.op = self.take_while(2, |x| x == c);
                f.args.push(self.param(|c| c != '}', false)?);
                self.close()?;
            }
            Some('}') => self.pos += 1,
            _ => return Err(MISSING_CLOSING_BRACE),
        }
        f.end = self.pos;
        Ok(f)
    }

    fn default_args(&mut self, f: &mut Func) -> Step<()> {
        loop {
            if self.eat('}') {
                return Ok(());
            }
            f.args.push(self.param(|c| c != '}', false)?);
        }
    }

    fn substring_args(&mut self, f: &mut Func) -> Step<()> {
        f.args.push(self.param(|c| c != ':' && c != '}', false)?);
        if self.eat('}') {
            return Ok(());
        }
        if self.take_while(usize::MAX, |c| c == ':').is_empty() {
            return Err(BAD_SUBSTITUTION);
        }
        f.args.push(self.param(|c| c != '}', false)?);
        self.close()
    }

    fn replace_args(&mut self, f: &mut Func) -> Step<()> {
        // The pattern may not be empty: `${V//x}` is a replace-all of `x`, `${V///x}` an error.
        f.args.push(self.param(|c| c != '/', true)?);
        if self.take_while(usize::MAX, |c| c == '/').is_empty() {
            return Err(BAD_SUBSTITUTION);
        }
        if self.eat('}') {
            return Ok(());
        }
        f.args.push(self.param(|c| c != '}', true)?);
        self.close()
    }

    /// One function argument: a nested `${...}` or a run of accepted text. With `escapes`,
    /// `$$`, `\/` and `\\` stand for their second character.
    fn param(&mut self, accept: impl Fn(char) -> bool, escapes: bool) -> Step<Part> {
        if self.at_open() {
            return self.func().map(Part::Func);
        }
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if self.at_open() {
                break;
            }
            let next = self.peek_at(1);
            let escaped = escapes
                && ((c == '$' && next == Some('$'))
                    || (c == '\\' && matches!(next, Some('/' | '\\'))));
            if let (true, Some(n)) = (escaped, next) {
                text.push(n);
                self.pos += c.len_utf8() + n.len_utf8();
            } else if accept(c) {
                text.push(c);
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        if text.is_empty() {
            // Nothing acceptable here (end of text, or a closing character too early).
            return Err(FUNC_SUBSTITUTION);
        }
        Ok(Part::Text(text))
    }
}
