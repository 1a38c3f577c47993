//! The parser: tokens into trees, one for the template itself and one per `define`/`block`,
//! with Go's parse-time checks (functions that exist, variables in scope, `break` inside
//! `range`) and its error text (`template: NAME:LINE: message`).

use std::sync::Arc;

use crate::ast::{Arg, Branch, Command, List, Name, Node};
use crate::lex::{Tok, Token, lex, string_value};

mod pipeline;

use pipeline::describe;

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

/// Most slots of the parser's name cache.
const NAME_CACHE: usize = 256;

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
    // A short text (most `tpl` arguments) names few things: a smaller cache.
    let cache = tokens.len().next_power_of_two().clamp(16, NAME_CACHE);
    let mut p = Parser {
        toks: tokens,
        i: 0,
        vars: vec!["$"],
        has_func,
        range_depth: 0,
        depth: 0,
        defines: Vec::new(),
        chain_pos: None,
        nodes: Vec::with_capacity(64),
        cmds: Vec::with_capacity(16),
        args: Vec::with_capacity(32),
        arg_pos: Vec::with_capacity(32),
        names: vec![None; cache],
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
        .all(|n| matches!(n, Node::Text(t, _) if t.trim().is_empty()))
}

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    i: usize,
    vars: Vec<&'a str>,
    has_func: &'a dyn Fn(&str) -> bool,
    range_depth: usize,
    depth: usize,
    defines: Vec<Tree>,
    /// Where the last operand's field chain started, when it had one.
    chain_pos: Option<usize>,
    /// Work stacks of the lists, pipelines and commands being parsed: each pushes its parts
    /// above what its callers pushed and takes them off (into a vector of exactly their
    /// number) when it ends, so that no tree vector grows step by step.
    nodes: Vec<Node>,
    cmds: Vec<Command>,
    args: Vec<Arg>,
    arg_pos: Vec<usize>,
    /// Names met recently, by a hash of their length and ends: a name found there is not
    /// allocated again (a direct-mapped cache, so no input makes a lookup slow).
    names: Vec<Option<(&'a str, Name)>>,
}

/// How a list ended.
enum End {
    Eof,
    Closed(usize),
    Else(usize),
}

type R<T> = Result<T, ParseFailure>;

impl<'a> Parser<'a> {
    fn peek(&self) -> Token<'a> {
        // The lexer ends every token list with `Eof`.
        let last = self.toks.len() - 1;
        self.toks[self.i.min(last)]
    }

    fn next(&mut self) -> Token<'a> {
        let t = self.peek();
        if self.i < self.toks.len() {
            self.i += 1;
        }
        t
    }

    /// The shared allocation of a function, field or variable name.
    fn name(&mut self, s: &'a str) -> Name {
        let b = s.as_bytes();
        let (first, last) = (b.first().copied(), b.last().copied());
        let h = s.len() * 31 + usize::from(first.unwrap_or(0)) * 7 + usize::from(last.unwrap_or(0));
        let slots = self.names.len();
        let slot = &mut self.names[h % slots];
        match slot {
            Some((k, name)) if *k == s => name.clone(),
            _ => {
                let name: Name = Arc::from(s);
                *slot = Some((s, name.clone()));
                name
            }
        }
    }

    fn skip_space(&mut self) {
        while matches!(self.peek().tok, Tok::Space) {
            self.i += 1;
        }
    }

    fn next_non_space(&mut self) -> Token<'a> {
        self.skip_space();
        self.next()
    }

    fn peek_non_space(&mut self) -> Token<'a> {
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
        let base = self.nodes.len();
        loop {
            let t = self.next();
            match t.tok {
                Tok::Eof => {
                    if top {
                        return Ok((self.nodes.split_off(base), End::Eof));
                    }
                    return self.fail("unexpected EOF", t.pos);
                }
                Tok::Text(s) => self.nodes.push(Node::Text(Arc::from(s), t.pos)),
                Tok::LeftDelim => {
                    let kw = self.peek_non_space();
                    if let Tok::Ident(word) = kw.tok {
                        match word {
                            "end" => {
                                self.next();
                                self.expect_right("end")?;
                                return Ok((self.nodes.split_off(base), End::Closed(kw.pos)));
                            }
                            "else" => {
                                self.next();
                                return Ok((self.nodes.split_off(base), End::Else(kw.pos)));
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
                    self.nodes.push(node);
                }
                other => {
                    return self.fail(format!("unexpected {} in input", describe(&other)), t.pos);
                }
            }
        }
    }

    fn expect_right(&mut self, context: &str) -> R<()> {
        let t = self.next_non_space();
        if !matches!(t.tok, Tok::RightDelim) {
            return self.fail(
                format!("unexpected {} in {context}", describe(&t.tok)),
                t.pos,
            );
        }
        Ok(())
    }

    fn define(&mut self, pos: usize) -> R<()> {
        let t = self.next_non_space();
        let Tok::Str(name) = t.tok else {
            return self.fail(
                format!("unexpected {} in define clause", describe(&t.tok)),
                t.pos,
            );
        };
        self.expect_right("define clause")?;
        let saved = std::mem::replace(&mut self.vars, vec!["$"]);
        self.depth += 1;
        let (list, end) = self.list(false)?;
        self.depth -= 1;
        self.vars = saved;
        match end {
            End::Closed(_) => {}
            End::Else(p) => return self.fail("unexpected {{else}}", p),
            End::Eof => return self.fail("unexpected EOF", pos),
        }
        self.defines.push(Tree {
            name: string_value(name).into_owned(),
            root: list,
        });
        Ok(())
    }

    /// One action after `{{`: a control structure or a pipeline to print.
    fn action(&mut self) -> R<Node> {
        let t = self.peek_non_space();
        if let Tok::Ident(word) = t.tok {
            match word {
                "if" | "range" | "with" => {
                    self.next();
                    return self.control(word, t.pos);
                }
                "block" => {
                    self.next();
                    return self.block(t.pos);
                }
                "template" => {
                    self.next();
                    return self.template(t.pos, "template");
                }
                "break" | "continue" => {
                    self.next();
                    if self.range_depth == 0 {
                        return self.fail(format!("{{{{{word}}}}} outside {{{{range}}}}"), t.pos);
                    }
                    self.expect_right(&format!("{{{{{word}}}}}"))?;
                    return Ok(if word == "break" {
                        Node::Break(t.pos)
                    } else {
                        Node::Continue(t.pos)
                    });
                }
                _ => {}
            }
        }
        let pipe = self.pipeline("command", false)?;
        Ok(Node::Action(pipe))
    }

    fn template(&mut self, _keyword: usize, context: &str) -> R<Node> {
        let t = self.next_non_space();
        let Tok::Str(name) = t.tok else {
            return self.fail(
                format!("unexpected {} in {context} clause", describe(&t.tok)),
                t.pos,
            );
        };
        let name = string_value(name).into_owned();
        let pipe = if matches!(self.peek_non_space().tok, Tok::RightDelim) {
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
        let saved = std::mem::replace(&mut self.vars, vec!["$"]);
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
                let t = self.peek_non_space();
                match t.tok {
                    // `{{else if ...}}` and `{{else with ...}}`: a nested structure sharing
                    // the `{{end}}`.
                    Tok::Ident(w)
                        if (w == "if" && kind == "if") || (w == "with" && kind == "with") =>
                    {
                        self.next();
                        let nested = self.control(w, t.pos)?;
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
}
