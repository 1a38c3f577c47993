//! Pipelines and their parts: variable declarations, commands joined by `|`, operands with
//! field chains, terms (constants, variables, functions, parenthesized pipelines), and Go's
//! reading of number constants.

use std::sync::Arc;

use super::{MAX_NESTING, Parser, R};
use crate::ast::{Arg, Command, Name, Number, Pipe};
use crate::lex::{Tok, string_value};

impl Parser<'_> {
    /// A pipeline up to `}}` (or `)` when `in_paren`-like contexts call [`Parser::paren`]).
    pub(super) fn pipeline(&mut self, context: &str, multi_decl: bool) -> R<Pipe> {
        self.pipeline_until(context, multi_decl, Tok::RightDelim)
    }

    fn pipeline_until(&mut self, context: &str, multi_decl: bool, end: Tok<'_>) -> R<Pipe> {
        let pos = self.peek_non_space().pos;
        let mut decl = Vec::new();
        let mut is_assign = false;
        // Declarations: `$x :=`, `$x =`, and in range `$i, $x :=`.
        if let Tok::Variable(name) = self.peek().tok {
            let save = self.i;
            self.next();
            let t = self.next_non_space();
            match t.tok {
                Tok::Declare | Tok::Assign => {
                    is_assign = matches!(t.tok, Tok::Assign);
                    decl = vec![self.name(name)];
                    if !is_assign {
                        self.vars.push(name);
                    } else if !self.vars.contains(&name) {
                        return self.fail(format!("undefined variable {name:?}"), t.pos);
                    }
                }
                Tok::Comma if multi_decl => {
                    let t2 = self.next_non_space();
                    let Tok::Variable(second) = t2.tok else {
                        return self
                            .fail("range can only initialize variables".to_string(), t2.pos);
                    };
                    let t3 = self.next_non_space();
                    if !matches!(t3.tok, Tok::Declare | Tok::Assign) {
                        return self
                            .fail("expected := or = after range variables".to_string(), t3.pos);
                    }
                    is_assign = matches!(t3.tok, Tok::Assign);
                    if is_assign {
                        for v in [name, second] {
                            if !self.vars.contains(&v) {
                                return self.fail(format!("undefined variable {v:?}"), t3.pos);
                            }
                        }
                    } else {
                        self.vars.push(name);
                        self.vars.push(second);
                    }
                    decl = vec![self.name(name), self.name(second)];
                }
                _ => self.i = save,
            }
        }
        let base = self.cmds.len();
        loop {
            let t = self.peek_non_space();
            // `end` has no payload: the same variant is the same token.
            if std::mem::discriminant(&t.tok) == std::mem::discriminant(&end) {
                self.next();
                if self.cmds.len() == base {
                    return self.fail(format!("missing value for {context}"), t.pos);
                }
                break;
            }
            match t.tok {
                Tok::Eof | Tok::RightDelim | Tok::RightParen => {
                    return self.fail(
                        format!("unexpected {} in {context}", describe(&t.tok)),
                        t.pos,
                    );
                }
                _ => {
                    let c = self.command()?;
                    self.cmds.push(c);
                }
            }
        }
        let cmds = self.cmds.split_off(base);
        // Every command after the first gets the previous one's value: constants cannot.
        for (i, c) in cmds.iter().enumerate().skip(1) {
            if let Some(first) = c.args.first()
                && matches!(
                    first,
                    Arg::Bool(_) | Arg::Dot | Arg::Nil | Arg::Number(_) | Arg::Str(..)
                )
            {
                return self.fail(
                    format!("non executable command in pipeline stage {}", i + 1),
                    c.pos,
                );
            }
        }
        Ok(Pipe {
            pos,
            decl,
            is_assign,
            cmds,
        })
    }

    fn command(&mut self) -> R<Command> {
        let pos = self.peek_non_space().pos;
        // Arguments and their positions go on the work stacks in pairs: one base for both.
        let base = self.args.len();
        loop {
            self.skip_space();
            if matches!(self.peek().tok, Tok::Pipe) {
                self.next();
                break;
            }
            let at = self.peek().pos;
            self.chain_pos = None;
            let Some(op) = self.operand()? else { break };
            self.args.push(op);
            // Go places a field chain (`.a.b`, `$x.a`) at its second element.
            self.arg_pos.push(self.chain_pos.unwrap_or(at));
            let t = self.peek();
            match t.tok {
                Tok::Space => {}
                Tok::RightDelim | Tok::RightParen => break,
                Tok::Pipe => {
                    self.next();
                    break;
                }
                other => {
                    return self.fail(format!("unexpected {} in operand", describe(&other)), t.pos);
                }
            }
        }
        if self.args.len() == base {
            let t = self.peek();
            return self.fail(format!("unexpected {} in command", describe(&t.tok)), t.pos);
        }
        Ok(Command {
            pos,
            args: self.args.split_off(base),
            arg_pos: self.arg_pos.split_off(base),
        })
    }

    /// How many field tokens (`.a.b`) come next.
    fn fields_ahead(&self) -> usize {
        self.toks[self.i.min(self.toks.len())..]
            .iter()
            .take_while(|t| matches!(t.tok, Tok::Field(_)))
            .count()
    }

    /// Moves the field tokens that come next into `fields`.
    fn take_fields(&mut self, fields: &mut Vec<Name>) {
        while let Tok::Field(f) = self.peek().tok {
            let name = self.name(f);
            fields.push(name);
            self.next();
        }
    }

    fn operand(&mut self) -> R<Option<Arg>> {
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        // Inner operands (inside parentheses) leave theirs behind: only this one counts.
        self.chain_pos = matches!(self.peek().tok, Tok::Field(_)).then(|| self.peek().pos);
        if self.chain_pos.is_none() {
            return Ok(Some(term));
        }
        Ok(Some(match term {
            // The term made room for its fields (`term`).
            Arg::Field(mut base) => {
                self.take_fields(&mut base);
                Arg::Field(base)
            }
            Arg::Variable(name, mut base) => {
                self.take_fields(&mut base);
                Arg::Variable(name, base)
            }
            Arg::Bool(_) | Arg::Str(..) | Arg::Number(_) | Arg::Nil | Arg::Dot => {
                self.i += self.fields_ahead();
                let pos = self.toks[self.i.saturating_sub(1)].pos;
                return self.fail(
                    format!("unexpected . after term {:?}", term.to_string()),
                    pos,
                );
            }
            other => {
                let mut fields = Vec::with_capacity(self.fields_ahead());
                self.take_fields(&mut fields);
                Arg::Chain(Box::new(other), fields)
            }
        }))
    }

    fn term(&mut self) -> R<Option<Arg>> {
        let t = self.next_non_space();
        Ok(Some(match t.tok {
            Tok::Ident(name) => {
                if !(self.has_func)(name) {
                    return self.fail(format!("function {name:?} not defined"), t.pos);
                }
                Arg::Ident(self.name(name))
            }
            Tok::Dot => Arg::Dot,
            Tok::Nil => Arg::Nil,
            Tok::Variable(name) => {
                if !self.vars.contains(&name) {
                    return self.fail(format!("undefined variable {name:?}"), t.pos);
                }
                Arg::Variable(self.name(name), Vec::with_capacity(self.fields_ahead()))
            }
            Tok::Field(f) => {
                let mut fields = Vec::with_capacity(1 + self.fields_ahead());
                fields.push(self.name(f));
                Arg::Field(fields)
            }
            Tok::Bool(b) => Arg::Bool(b),
            Tok::Char(c, text) => Arg::Number(Number {
                text: text.to_string(),
                int: Some(i64::from(u32::from(c))),
                float: Some(f64::from(u32::from(c))),
                is_float_syntax: false,
                is_char: true,
            }),
            Tok::Number(text) => match number(text) {
                Some(n) => Arg::Number(n),
                None => return self.fail(format!("illegal number syntax: {text:?}"), t.pos),
            },
            Tok::Str(text) => Arg::Str(Arc::from(string_value(text)), text.to_string()),
            Tok::LeftParen => {
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return self.fail("too deeply nested", t.pos);
                }
                let pipe = self.pipeline_until("parenthesized pipeline", false, Tok::RightParen)?;
                self.depth -= 1;
                Arg::Pipe(Box::new(pipe))
            }
            _ => {
                self.i -= 1;
                return Ok(None);
            }
        }))
    }
}

pub(super) fn describe(t: &Tok) -> String {
    match t {
        Tok::Text(s) => format!("{s:?}"),
        Tok::LeftDelim => "\"{{\"".into(),
        Tok::RightDelim => "\"}}\"".into(),
        Tok::Space => "space".into(),
        Tok::Ident(s) | Tok::Number(s) | Tok::Variable(s) => format!("<{s}>"),
        Tok::Field(s) => format!("<.{s}>"),
        Tok::Dot => "<.>".into(),
        Tok::Str(text) | Tok::Char(_, text) => format!("{text:?}"),
        Tok::Bool(b) => format!("<{b}>"),
        Tok::Nil => "<nil>".into(),
        Tok::Pipe => "\"|\"".into(),
        Tok::LeftParen => "\"(\"".into(),
        Tok::RightParen => "\")\"".into(),
        Tok::Declare => "\":=\"".into(),
        Tok::Assign => "\"=\"".into(),
        Tok::Comma => "\",\"".into(),
        Tok::Eof => "EOF".into(),
    }
}

/// Go's reading of a number constant (`0x1F`, `1_000`, `1e3`, `-2`, `0o17`, `.5`).
fn number(text: &str) -> Option<Number> {
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    let (neg, digits) = match clean.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, clean.strip_prefix('+').unwrap_or(&clean)),
    };
    let lower = digits.to_ascii_lowercase();
    let parsed_int = if let Some(h) = lower.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(o) = lower.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()
    } else if let Some(b) = lower.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|b| b.is_ascii_digit())
    {
        i64::from_str_radix(&lower[1..], 8).ok()
    } else if lower.bytes().all(|b| b.is_ascii_digit()) && !lower.is_empty() {
        lower.parse::<i64>().ok()
    } else {
        None
    };
    let int = parsed_int.map(|i| if neg { -i } else { i });
    let looks_float = lower.contains(['.', 'e', 'p']) && !lower.starts_with("0x");
    let float = if let Some(i) = int {
        Some(i as f64)
    } else if looks_float {
        let f: f64 = digits.parse().ok().filter(|f: &f64| f.is_finite())?;
        Some(if neg { -f } else { f })
    } else {
        None
    };
    // A float constant that is integral also reads as an int.
    #[allow(clippy::cast_possible_truncation, clippy::float_cmp)] // checked: integral and in range.
    let int = int.or_else(|| {
        float
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
            .map(|f| f as i64)
    });
    if int.is_none() && float.is_none() {
        return None;
    }
    Some(Number {
        text: text.to_string(),
        int,
        float,
        is_float_syntax: looks_float,
        is_char: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let n = number("0x1F").unwrap();
        assert_eq!(n.int, Some(31));
        let n = number("1e3").unwrap();
        assert_eq!(n.int, Some(1000));
        assert!(n.is_float_syntax);
        assert!(number("1.5").unwrap().int.is_none());
        assert!(number("abc").is_none());
    }
}
