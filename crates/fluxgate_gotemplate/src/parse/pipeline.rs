//! Pipelines and their parts: variable declarations, commands joined by `|`, operands with
//! field chains, terms (constants, variables, functions, parenthesized pipelines), and Go's
//! reading of number constants.

use std::sync::Arc;

use super::{MAX_NESTING, Parser, R};
use crate::ast::{Arg, Command, Number, Pipe};
use crate::lex::Tok;

impl Parser<'_> {
    /// A pipeline up to `}}` (or `)` when `in_paren`-like contexts call [`Parser::paren`]).
    pub(super) fn pipeline(&mut self, context: &str, multi_decl: bool) -> R<Pipe> {
        self.pipeline_until(context, multi_decl, &Tok::RightDelim)
    }

    fn pipeline_until(&mut self, context: &str, multi_decl: bool, end: &Tok) -> R<Pipe> {
        let pos = self.peek_non_space().pos;
        let mut decl = Vec::new();
        let mut is_assign = false;
        // Declarations: `$x :=`, `$x =`, and in range `$i, $x :=`.
        if let Tok::Variable(name) = &self.peek().tok {
            let save = self.i;
            let name = name.clone();
            self.next();
            let t = self.next_non_space();
            match t.tok {
                Tok::Declare | Tok::Assign => {
                    is_assign = t.tok == Tok::Assign;
                    decl.push(name.clone());
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
                    is_assign = t3.tok == Tok::Assign;
                    if is_assign {
                        for v in [&name, &second] {
                            if !self.vars.contains(v) {
                                return self.fail(format!("undefined variable {v:?}"), t3.pos);
                            }
                        }
                    } else {
                        self.vars.push(name.clone());
                        self.vars.push(second.clone());
                    }
                    decl = vec![name, second];
                }
                _ => self.i = save,
            }
        }
        let mut cmds = Vec::new();
        loop {
            let t = self.peek_non_space().clone();
            if &t.tok == end {
                self.next();
                if cmds.is_empty() {
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
                _ => cmds.push(self.command()?),
            }
        }
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
        let mut args = Vec::new();
        let mut arg_pos = Vec::new();
        loop {
            self.skip_space();
            if self.peek().tok == Tok::Pipe {
                self.next();
                break;
            }
            let at = self.peek().pos;
            self.chain_pos = None;
            let Some(op) = self.operand()? else { break };
            args.push(op);
            // Go places a field chain (`.a.b`, `$x.a`) at its second element.
            arg_pos.push(self.chain_pos.unwrap_or(at));
            let t = self.peek().clone();
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
        if args.is_empty() {
            let t = self.peek();
            return self.fail(format!("unexpected {} in command", describe(&t.tok)), t.pos);
        }
        Ok(Command { pos, args, arg_pos })
    }

    fn operand(&mut self) -> R<Option<Arg>> {
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        let mut fields = Vec::new();
        // Inner operands (inside parentheses) leave theirs behind: only this one counts.
        self.chain_pos = matches!(self.peek().tok, Tok::Field(_)).then(|| self.peek().pos);
        while let Tok::Field(f) = &self.peek().tok {
            fields.push(f.clone());
            self.next();
        }
        if fields.is_empty() {
            return Ok(Some(term));
        }
        Ok(Some(match term {
            Arg::Field(mut base) => {
                base.extend(fields);
                Arg::Field(base)
            }
            Arg::Variable(name, mut base) => {
                base.extend(fields);
                Arg::Variable(name, base)
            }
            Arg::Bool(_) | Arg::Str(..) | Arg::Number(_) | Arg::Nil | Arg::Dot => {
                let pos = self.toks[self.i.saturating_sub(1)].pos;
                return self.fail(
                    format!("unexpected . after term {:?}", term.to_string()),
                    pos,
                );
            }
            other => Arg::Chain(Box::new(other), fields),
        }))
    }

    fn term(&mut self) -> R<Option<Arg>> {
        let t = self.next_non_space();
        Ok(Some(match t.tok {
            Tok::Ident(name) => {
                if !(self.has_func)(&name) {
                    return self.fail(format!("function {name:?} not defined"), t.pos);
                }
                Arg::Ident(name)
            }
            Tok::Dot => Arg::Dot,
            Tok::Nil => Arg::Nil,
            Tok::Variable(name) => {
                if !self.vars.contains(&name) {
                    return self.fail(format!("undefined variable {name:?}"), t.pos);
                }
                Arg::Variable(name, Vec::new())
            }
            Tok::Field(f) => Arg::Field(vec![f]),
            Tok::Bool(b) => Arg::Bool(b),
            Tok::Char(c, text) => Arg::Number(Number {
                text,
                int: Some(c),
                float: Some(c as f64),
                is_float_syntax: false,
                is_char: true,
            }),
            Tok::Number(text) => match number(&text) {
                Some(n) => Arg::Number(n),
                None => return self.fail(format!("illegal number syntax: {text:?}"), t.pos),
            },
            Tok::Str(s, text) => Arg::Str(Arc::from(s), text),
            Tok::LeftParen => {
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return self.fail("too deeply nested", t.pos);
                }
                let pipe =
                    self.pipeline_until("parenthesized pipeline", false, &Tok::RightParen)?;
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
        Tok::Str(_, text) | Tok::Char(_, text) => format!("{text:?}"),
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
