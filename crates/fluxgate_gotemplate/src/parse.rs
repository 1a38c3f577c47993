//! The parser: tokens into trees, one for the template itself and one per `define`/`block`,
//! with Go's parse-time checks (functions that exist, variables in scope, `break` inside
//! `range`) and its error text (`template: NAME:LINE: message`).

use std::rc::Rc;

use crate::ast::{Arg, Branch, Command, List, Node, Number, Pipe};
use crate::lex::{Tok, Token, lex};

/// A parsed tree and the template name it is stored under.
#[derive(Debug, Clone)]
pub struct Tree {
    pub name: String,
    pub root: List,
}

/// A parse error: the message without the `template: NAME:LINE:` prefix, and where.
#[derive(Debug, Clone)]
pub struct ParseFailure {
    pub message: String,
    pub pos: usize,
}

/// Nesting of parentheses and control structures beyond which parsing stops (no stack
/// overflow on hostile input).
const MAX_NESTING: usize = 100;

/// Parses `src` (the template `name`) into its own tree and those of its `define`s.
/// `has_func` says whether a function name exists.
pub fn parse(
    name: &str,
    src: &str,
    has_func: &dyn Fn(&str) -> bool,
) -> Result<Vec<Tree>, ParseFailure> {
    let tokens = lex(src).map_err(|e| ParseFailure {
        message: e.message,
        pos: e.pos,
    })?;
    let mut p = Parser {
        toks: tokens,
        i: 0,
        vars: vec!["$".into()],
        has_func,
        range_depth: 0,
        depth: 0,
        defines: Vec::new(),
        chain_pos: None,
    };
    let root = p.top_list()?;
    let mut trees = vec![Tree {
        name: name.to_string(),
        root,
    }];
    trees.append(&mut p.defines);
    Ok(trees)
}

/// Whether a tree holds only whitespace text (Go keeps an earlier definition over it).
pub fn is_empty_tree(list: &List) -> bool {
    list.iter()
        .all(|n| matches!(n, Node::Text(t) if t.trim().is_empty()))
}

struct Parser<'a> {
    toks: Vec<Token>,
    i: usize,
    vars: Vec<String>,
    has_func: &'a dyn Fn(&str) -> bool,
    range_depth: usize,
    depth: usize,
    defines: Vec<Tree>,
    /// Where the last operand's field chain started, when it had one.
    chain_pos: Option<usize>,
}

/// How a list ended.
enum End {
    Eof,
    Closed(usize),
    Else(usize),
}

type R<T> = Result<T, ParseFailure>;

impl Parser<'_> {
    fn peek(&self) -> &Token {
        let last = self.toks.len() - 1;
        &self.toks[self.i.min(last)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.i < self.toks.len() {
            self.i += 1;
        }
        t
    }

    fn skip_space(&mut self) {
        while self.peek().tok == Tok::Space {
            self.i += 1;
        }
    }

    fn next_non_space(&mut self) -> Token {
        self.skip_space();
        self.next()
    }

    fn peek_non_space(&mut self) -> &Token {
        self.skip_space();
        self.peek()
    }

    fn fail<T>(&self, message: impl Into<String>, pos: usize) -> R<T> {
        Err(ParseFailure {
            message: message.into(),
            pos,
        })
    }

    fn top_list(&mut self) -> R<List> {
        let (list, end) = self.list(true)?;
        match end {
            End::Eof => Ok(list),
            End::Closed(pos) => self.fail("unexpected {{end}}", pos),
            End::Else(pos) => self.fail("unexpected {{else}}", pos),
        }
    }

    /// Nodes up to `{{end}}`, `{{else ...}}` or the end of input.
    fn list(&mut self, top: bool) -> R<(List, End)> {
        let mut list = Vec::new();
        loop {
            let t = self.next();
            match t.tok {
                Tok::Eof => {
                    if top {
                        return Ok((list, End::Eof));
                    }
                    return self.fail("unexpected EOF", t.pos);
                }
                Tok::Text(s) => list.push(Node::Text(Rc::from(s))),
                Tok::LeftDelim => {
                    let kw = self.peek_non_space().clone();
                    if let Tok::Ident(word) = &kw.tok {
                        match word.as_str() {
                            "end" => {
                                self.next();
                                self.expect_right("end")?;
                                return Ok((list, End::Closed(kw.pos)));
                            }
                            "else" => {
                                self.next();
                                return Ok((list, End::Else(kw.pos)));
                            }
                            "define" => {
                                if !top || self.depth > 0 {
                                    return self.fail("unexpected <define> in command", kw.pos);
                                }
                                self.next();
                                self.define(kw.pos)?;
                                continue;
                            }
                            _ => {}
                        }
                    }
                    let node = self.action()?;
                    if let Some(n) = node {
                        list.push(n);
                    }
                }
                other => {
                    return self.fail(format!("unexpected {} in input", describe(&other)), t.pos);
                }
            }
        }
    }

    fn expect_right(&mut self, context: &str) -> R<()> {
        let t = self.next_non_space();
        if t.tok != Tok::RightDelim {
            return self.fail(
                format!("unexpected {} in {context}", describe(&t.tok)),
                t.pos,
            );
        }
        Ok(())
    }

    fn define(&mut self, pos: usize) -> R<()> {
        let t = self.next_non_space();
        let Tok::Str(name, _) = t.tok else {
            return self.fail(
                format!("unexpected {} in define clause", describe(&t.tok)),
                t.pos,
            );
        };
        self.expect_right("define clause")?;
        let saved = std::mem::replace(&mut self.vars, vec!["$".into()]);
        self.depth += 1;
        let (list, end) = self.list(false)?;
        self.depth -= 1;
        self.vars = saved;
        match end {
            End::Closed(_) => {}
            End::Else(p) => return self.fail("unexpected {{else}}", p),
            End::Eof => return self.fail("unexpected EOF", pos),
        }
        self.defines.push(Tree { name, root: list });
        Ok(())
    }

    /// One action after `{{`: a control structure or a pipeline to print.
    fn action(&mut self) -> R<Option<Node>> {
        let t = self.peek_non_space().clone();
        if let Tok::Ident(word) = &t.tok {
            match word.as_str() {
                "if" | "range" | "with" => {
                    self.next();
                    return self.control(word, t.pos).map(Some);
                }
                "block" => {
                    self.next();
                    return self.block(t.pos).map(Some);
                }
                "template" => {
                    self.next();
                    return self.template(t.pos, "template").map(Some);
                }
                "break" | "continue" => {
                    self.next();
                    if self.range_depth == 0 {
                        return self.fail(format!("{{{{{word}}}}} outside {{{{range}}}}"), t.pos);
                    }
                    self.expect_right(&format!("{{{{{word}}}}}"))?;
                    return Ok(Some(if word == "break" {
                        Node::Break(t.pos)
                    } else {
                        Node::Continue(t.pos)
                    }));
                }
                _ => {}
            }
        }
        let pipe = self.pipeline("command", false)?;
        Ok(Some(Node::Action(pipe)))
    }

    fn template(&mut self, _keyword: usize, context: &str) -> R<Node> {
        let t = self.next_non_space();
        let Tok::Str(name, _) = t.tok else {
            return self.fail(
                format!("unexpected {} in {context} clause", describe(&t.tok)),
                t.pos,
            );
        };
        let pipe = if self.peek_non_space().tok == Tok::RightDelim {
            self.next();
            None
        } else {
            Some(self.pipeline(context, false)?)
        };
        Ok(Node::Template {
            pos: t.pos,
            name,
            pipe,
        })
    }

    fn block(&mut self, pos: usize) -> R<Node> {
        let Node::Template { name, pipe, pos } = self.template(pos, "block")? else {
            return self.fail("unexpected block", pos);
        };
        let saved = std::mem::replace(&mut self.vars, vec!["$".into()]);
        self.depth += 1;
        let (list, end) = self.list(false)?;
        self.depth -= 1;
        self.vars = saved;
        if !matches!(end, End::Closed(_)) {
            return self.fail("unexpected {{else}} in block clause", pos);
        }
        self.defines.push(Tree {
            name: name.clone(),
            root: list,
        });
        Ok(Node::Template { pos, name, pipe })
    }

    fn control(&mut self, kind: &str, pos: usize) -> R<Node> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return self.fail("too deeply nested", pos);
        }
        let saved_vars = self.vars.len();
        let pipe = self.pipeline(kind, kind == "range")?;
        if kind == "range" {
            self.range_depth += 1;
        }
        let (list, end) = self.list(false)?;
        if kind == "range" {
            self.range_depth -= 1;
        }
        let else_list = match end {
            End::Closed(_) => None,
            End::Else(_) => {
                let t = self.peek_non_space().clone();
                match &t.tok {
                    // `{{else if ...}}` and `{{else with ...}}`: a nested structure sharing
                    // the `{{end}}`.
                    Tok::Ident(w)
                        if (w == "if" && kind == "if") || (w == "with" && kind == "with") =>
                    {
                        let w = w.clone();
                        self.next();
                        let nested = self.control(&w, t.pos)?;
                        Some(vec![nested])
                    }
                    _ => {
                        self.expect_right("else")?;
                        let (l, end) = self.list(false)?;
                        match end {
                            End::Closed(_) => Some(l),
                            End::Else(p) => return self.fail("expected end; found {{else}}", p),
                            End::Eof => return self.fail("unexpected EOF", pos),
                        }
                    }
                }
            }
            End::Eof => return self.fail("unexpected EOF", pos),
        };
        self.vars.truncate(saved_vars);
        self.depth -= 1;
        let branch = Branch {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        };
        Ok(match kind {
            "if" => Node::If(branch),
            "range" => Node::Range(branch),
            _ => Node::With(branch),
        })
    }

    /// A pipeline up to `}}` (or `)` when `in_paren`-like contexts call [`Parser::paren`]).
    fn pipeline(&mut self, context: &str, multi_decl: bool) -> R<Pipe> {
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
            Tok::Str(s, text) => Arg::Str(Rc::from(s), text),
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

fn describe(t: &Tok) -> String {
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

    fn ok(src: &str) -> Vec<Tree> {
        parse("t", src, &|f| f != "nope").unwrap()
    }

    fn err(src: &str) -> String {
        parse("t", src, &|f| f != "nope").unwrap_err().message
    }

    #[test]
    fn parses_structures() {
        let trees = ok(
            "{{define \"a\"}}x{{end}}{{if .a}}1{{else if .b}}2{{else}}3{{end}}{{range $i, $v := .l}}{{$v}}{{break}}{{end}}",
        );
        assert_eq!(trees.len(), 2);
        assert_eq!(trees[1].name, "a");
        assert!(matches!(trees[0].root[0], Node::If(_)));
        let t = ok("{{ (include \"x\" .).a | printf \"%s\" }}");
        let Node::Action(p) = &t[0].root[0] else {
            panic!()
        };
        assert_eq!(p.to_string(), "(include \"x\" .).a | printf \"%s\"");
    }

    #[test]
    fn reports_go_errors() {
        assert_eq!(err("{{ nope }}"), "function \"nope\" not defined");
        assert_eq!(err("{{ $x }}"), "undefined variable \"$x\"");
        assert_eq!(err("{{ end }}"), "unexpected {{end}}");
        assert_eq!(err("{{ if 1 }}"), "unexpected EOF");
        assert_eq!(err("{{ break }}"), "{{break}} outside {{range}}");
        assert_eq!(err("{{ }}"), "missing value for command");
        assert!(ok("{{ if 1 }}{{ $x := 1 }}{{ end }}").len() == 1);
        assert!(parse("t", "{{ if 1 }}{{ $x := 1 }}{{ end }}{{ $x }}", &|_| true).is_err());
    }

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
