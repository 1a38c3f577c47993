//! The executor: walks a tree with Go's rules for dot, variables and their scopes, field
//! chains on maps and objects, `missingkey`, pipelines (the previous command's value is the
//! last argument of the next), lazy `and`/`or`, `range` over slices, maps (key order) and
//! ints, `break`/`continue`, and Go's error text.

use std::rc::Rc;

use crate::Templates;
use crate::ast::{Branch, List, Node};

mod call;
mod eval;

pub use call::Call;
use crate::format::{quote, sprint_value};
use crate::value::Value;

/// What a missing map key gives (Go's `missingkey` option; Helm sets `zero`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissingKey {
    /// No value (prints `<no value>`); a field of it is no value too.
    #[default]
    Default,
    /// The zero value of the map's element type: for `interface{}` a nil, whose fields are
    /// an error ("nil pointer evaluating interface {}.x").
    Zero,
    /// An error ("map has no entry for key").
    Error,
}

/// Template calls (`template`, `include`, `tpl`) nested deeper than this fail, as Go's
/// "exceeded maximum template depth" (Go allows 100000; the stack here is smaller).
pub const MAX_DEPTH: usize = 200;

/// One parsed template: its name, the name and text of the file it was parsed from (error
/// positions are computed in that text), and its tree.
#[derive(Debug)]
pub struct Template {
    pub name: String,
    pub parse_name: String,
    pub source: Rc<str>,
    pub root: List,
}

pub(crate) struct State<'a> {
    pub(crate) set: &'a Templates,
    tmpl: Rc<Template>,
    vars: Vec<(String, Value)>,
    out: String,
    pub(crate) depth: usize,
}

/// Executes `t` of `set` with `data` at call depth `depth`.
pub(crate) fn run(
    set: &Templates,
    t: &Rc<Template>,
    data: &Value,
    depth: usize,
) -> Result<String, String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "template: {}: exceeded maximum template depth ({MAX_DEPTH})",
            t.name
        ));
    }
    let mut s = State {
        set,
        tmpl: t.clone(),
        vars: vec![("$".into(), data.clone())],
        out: String::new(),
        depth,
    };
    s.walk_list(data, &t.root)?;
    Ok(s.out)
}

enum Flow {
    Next,
    Break,
    Continue,
}

type R<T> = Result<T, String>;

/// Where a node is and what it reads as, for error messages.
#[derive(Clone, Copy)]
struct At<'n> {
    pos: usize,
    text: &'n dyn std::fmt::Display,
}

impl State<'_> {
    fn error(&self, at: At<'_>, msg: &str) -> String {
        let src = &self.tmpl.source;
        let pos = at.pos.min(src.len());
        let before = src.get(..pos).unwrap_or("");
        let line = 1 + before.matches('\n').count();
        // Go counts the column from 0.
        let col = pos - before.rfind('\n').map_or(0, |i| i + 1);
        // Go's text/template (1.26) quotes the whole node.
        let ctx = at.text.to_string();
        format!(
            "template: {}:{line}:{col}: executing {} at <{}>: {msg}",
            self.tmpl.parse_name,
            quote(&self.tmpl.name),
            ctx.replace('%', "%%")
        )
    }

    fn write(&mut self, s: &str) -> R<()> {
        if self.out.len() + s.len() > self.set.max_output {
            return Err(format!(
                "template: {}: output exceeds {} bytes",
                self.tmpl.name, self.set.max_output
            ));
        }
        self.out.push_str(s);
        Ok(())
    }

    fn walk_list(&mut self, dot: &Value, list: &[Node]) -> R<Flow> {
        for node in list {
            match self.walk(dot, node)? {
                Flow::Next => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Next)
    }

    fn walk(&mut self, dot: &Value, node: &Node) -> R<Flow> {
        match node {
            Node::Text(t) => self.write(t)?,
            Node::Action(pipe) => {
                let v = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    let text = match &v {
                        Value::Missing => "<no value>".to_string(),
                        other => sprint_value(other),
                    };
                    self.write(&text)?;
                }
            }
            Node::If(b) => return self.if_or_with(dot, b, false),
            Node::With(b) => return self.if_or_with(dot, b, true),
            Node::Range(b) => return self.range(dot, b, node),
            Node::Template { pos, name, pipe } => {
                let Some(t) = self.set.get(name) else {
                    return Err(self.error(
                        At {
                            pos: *pos,
                            text: node,
                        },
                        &format!("template {} not defined", quote(name)),
                    ));
                };
                let data = match pipe {
                    Some(p) => self.eval_pipeline(dot, p)?,
                    None => Value::Missing,
                };
                let out = run(self.set, &t, &data, self.depth + 1)?;
                self.write(&out)?;
            }
            Node::Break(_) => return Ok(Flow::Break),
            Node::Continue(_) => return Ok(Flow::Continue),
        }
        Ok(Flow::Next)
    }

    fn if_or_with(&mut self, dot: &Value, b: &Branch, with: bool) -> R<Flow> {
        let mark = self.vars.len();
        let v = self.eval_pipeline(dot, &b.pipe)?;
        let flow = if v.truthy() {
            if with {
                self.walk_list(&v, &b.list)?
            } else {
                self.walk_list(dot, &b.list)?
            }
        } else if let Some(else_list) = &b.else_list {
            self.walk_list(dot, else_list)?
        } else {
            Flow::Next
        };
        self.vars.truncate(mark);
        Ok(flow)
    }

    fn range(&mut self, dot: &Value, b: &Branch, node: &Node) -> R<Flow> {
        let mark = self.vars.len();
        let v = self.eval_pipeline(dot, &b.pipe)?;
        let inner = self.vars.len();
        let items: Vec<(Value, Value)> = match &v {
            Value::List(l) => l
                .borrow()
                .iter()
                .enumerate()
                .map(|(i, x)| (Value::Int(i64::try_from(i).unwrap_or(0)), x.clone()))
                .collect(),
            Value::Bytes(bs) => bs
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    (
                        Value::Int(i64::try_from(i).unwrap_or(0)),
                        Value::Int(i64::from(*x)),
                    )
                })
                .collect(),
            Value::Map(m) => m
                .borrow()
                .iter()
                .map(|(k, x)| (Value::str(k), x.clone()))
                .collect(),
            Value::Int(n) | Value::Int64(n) => {
                if b.pipe.decl.len() > 1 {
                    return Err(self.error(
                        At {
                            pos: b.pos,
                            text: node,
                        },
                        &format!("can't use {n} to iterate over more than one variable"),
                    ));
                }
                let kind = |i| {
                    if matches!(v, Value::Int(_)) {
                        Value::Int(i)
                    } else {
                        Value::Int64(i)
                    }
                };
                (0..(*n).max(0)).map(|i| (kind(i), kind(i))).collect()
            }
            Value::Missing | Value::Nil => Vec::new(),
            Value::Object(o) if o.entries().is_some() => o.entries().unwrap_or_default(),
            other => {
                return Err(self.error(
                    At {
                        pos: b.pos,
                        text: node,
                    },
                    &format!("range can't iterate over {}", sprint_value(other)),
                ));
            }
        };
        let mut flow = Flow::Next;
        if let (true, Some(else_list)) = (items.is_empty(), &b.else_list) {
            flow = self.walk_list(dot, else_list)?;
        }
        for (key, elem) in items {
            self.set_range_vars(b, &key, &elem);
            let f = self.walk_list(&elem, &b.list)?;
            self.vars.truncate(inner);
            if matches!(f, Flow::Break) {
                break;
            }
        }
        self.vars.truncate(mark);
        Ok(flow)
    }

    fn set_range_vars(&mut self, b: &Branch, key: &Value, elem: &Value) {
        let decl = &b.pipe.decl;
        if b.pipe.is_assign {
            match decl.len() {
                1 => self.set_var(&decl[0], elem.clone()),
                2 => {
                    self.set_var(&decl[0], key.clone());
                    self.set_var(&decl[1], elem.clone());
                }
                _ => {}
            }
            return;
        }
        let n = self.vars.len();
        if !decl.is_empty() && n >= 1 {
            self.vars[n - 1].1 = elem.clone();
        }
        if decl.len() > 1 && n >= 2 {
            self.vars[n - 2].1 = key.clone();
        }
    }

    fn set_var(&mut self, name: &str, v: Value) {
        if let Some(slot) = self.vars.iter_mut().rev().find(|(n, _)| n == name) {
            slot.1 = v;
        }
    }

    fn var(&self, name: &str) -> Value {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }
}
