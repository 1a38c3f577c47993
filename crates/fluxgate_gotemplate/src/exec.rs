//! The executor: walks a tree with Go's rules for dot, variables and their scopes, field
//! chains on maps and objects, `missingkey`, pipelines (the previous command's value is the
//! last argument of the next), lazy `and`/`or`, `range` over slices, maps (key order) and
//! ints, `break`/`continue`, and Go's error text.

use std::rc::Rc;

use crate::Templates;
use crate::ast::{Arg, Branch, Command, List, Node, Pipe};
use crate::format::{quote, sprint_value};
use crate::funcs::{Arity, ConstKind, Func};
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

/// The context a function gets: it can execute other templates, as `include` and `tpl` do.
pub struct Call<'s, 'a> {
    state: &'s mut State<'a>,
}

impl Call<'_, '_> {
    /// Executes the template `name` with `data` as dot; its output, or the error as Go
    /// prints it.
    pub fn execute_template(&mut self, name: &str, data: &Value) -> Result<String, String> {
        let set = self.state.set;
        let Some(t) = set.get(name) else {
            return Err(format!(
                "template: no template {} associated with template {}",
                quote(name),
                quote(&set.root_name)
            ));
        };
        run(set, &t, data, self.state.depth + 1)
    }

    /// Parses `text` as a new template `name` beside the current ones (its `define`s are
    /// visible to it) and executes it with `data`.
    pub fn execute_text(&mut self, name: &str, text: &str, data: &Value) -> Result<String, String> {
        let mut set = self.state.set.clone();
        set.parse(name, text).map_err(|e| e.to_string())?;
        let Some(t) = set.get(name) else {
            return Ok(String::new());
        };
        run(&set, &t, data, self.state.depth + 1)
    }

    /// How deep template calls are nested here.
    pub fn depth(&self) -> usize {
        self.state.depth
    }

    /// The template being executed.
    pub fn template_name(&self) -> &str {
        &self.state.tmpl.name
    }
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

    fn eval_pipeline(&mut self, dot: &Value, pipe: &Pipe) -> R<Value> {
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            value = Some(self.eval_command(dot, cmd, value)?);
        }
        // Go unwraps the interface at the end of a pipeline: a nil becomes no value.
        let value = match value.unwrap_or_default() {
            Value::Nil => Value::Missing,
            v => v,
        };
        for name in &pipe.decl {
            if pipe.is_assign {
                self.set_var(name, value.clone());
            } else {
                self.vars.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn eval_command(&mut self, dot: &Value, cmd: &Command, fin: Option<Value>) -> R<Value> {
        let first = &cmd.args[0];
        let rest = &cmd.args[1..];
        let pos = cmd.arg_pos.first().copied().unwrap_or(cmd.pos);
        match first {
            Arg::Ident(name) => self.eval_function(dot, name, cmd, fin),
            Arg::Field(fields) => {
                self.eval_chain(dot, dot.clone(), fields, first, pos, cmd, fin.as_ref())
            }
            Arg::Variable(name, fields) => {
                let v = self.var(name);
                if fields.is_empty() {
                    self.not_a_function(cmd, rest, fin.as_ref())?;
                    return Ok(v);
                }
                self.eval_chain(dot, v, fields, first, pos, cmd, fin.as_ref())
            }
            Arg::Chain(inner, fields) => {
                let v = self.eval_arg(dot, inner, pos)?;
                let v = if matches!(v, Value::Nil) {
                    Value::Missing
                } else {
                    v
                };
                self.eval_chain(dot, v, fields, first, pos, cmd, fin.as_ref())
            }
            Arg::Pipe(p) => {
                self.not_a_function(cmd, rest, fin.as_ref())?;
                self.eval_pipeline(dot, p)
            }
            other => {
                self.not_a_function(cmd, rest, fin.as_ref())?;
                self.eval_arg(dot, other, pos)
            }
        }
    }

    fn not_a_function(&self, cmd: &Command, rest: &[Arg], fin: Option<&Value>) -> R<()> {
        if !rest.is_empty() || fin.is_some() {
            return Err(self.error(
                At {
                    pos: cmd.pos,
                    text: &cmd.args[0],
                },
                &format!("can't give argument to non-function {}", cmd.args[0]),
            ));
        }
        Ok(())
    }

    /// Evaluates an argument (not in function position).
    fn eval_arg(&mut self, dot: &Value, arg: &Arg, pos: usize) -> R<Value> {
        let single = || Command {
            pos,
            args: vec![arg.clone()],
            arg_pos: vec![pos],
        };
        Ok(match arg {
            Arg::Dot => dot.clone(),
            Arg::Nil => Value::Nil,
            Arg::Bool(b) => Value::Bool(*b),
            Arg::Str(s, _) => Value::String(s.clone()),
            Arg::Number(n) => {
                if n.is_float_syntax && !n.is_char || n.int.is_none() {
                    Value::Float(n.float.unwrap_or(0.0))
                } else {
                    Value::Int(n.int.unwrap_or(0))
                }
            }
            Arg::Field(fields) => {
                self.eval_chain(dot, dot.clone(), fields, arg, pos, &single(), None)?
            }
            Arg::Variable(name, fields) => {
                let v = self.var(name);
                if fields.is_empty() {
                    v
                } else {
                    self.eval_chain(dot, v, fields, arg, pos, &single(), None)?
                }
            }
            Arg::Pipe(p) => self.eval_pipeline(dot, p)?,
            Arg::Chain(inner, fields) => {
                let v = self.eval_arg(dot, inner, pos)?;
                let v = if matches!(v, Value::Nil) {
                    Value::Missing
                } else {
                    v
                };
                self.eval_chain(dot, v, fields, arg, pos, &single(), None)?
            }
            Arg::Ident(name) => self.eval_function(dot, name, &single(), None)?,
        })
    }

    /// A field chain `.a.b.c` on `receiver`; the last field gets `args` and `fin` (a method
    /// call), the others none.
    #[allow(clippy::too_many_arguments)] // The pieces of one command; a struct would only rename them.
    fn eval_chain(
        &mut self,
        dot: &Value,
        receiver: Value,
        fields: &[String],
        node: &Arg,
        at_pos: usize,
        cmd: &Command,
        fin: Option<&Value>,
    ) -> R<Value> {
        let mut cur = receiver;
        let args = &cmd.args[1..];
        let last = fields.len().saturating_sub(1);
        // The receiver of the first step is a concrete value; later ones come out of maps.
        let mut from_map = false;
        for (i, name) in fields.iter().enumerate() {
            let is_last = i == last;
            let has_args = is_last && (!args.is_empty() || fin.is_some());
            let err = |s: &State, msg: String| {
                s.error(
                    At {
                        pos: at_pos,
                        text: node,
                    },
                    &msg,
                )
            };
            cur = match &cur {
                Value::Missing => {
                    if self.set.missing_key == MissingKey::Error {
                        return Err(err(
                            self,
                            format!("nil data; no entry for key {}", quote(name)),
                        ));
                    }
                    Value::Missing
                }
                Value::Nil => {
                    return Err(err(
                        self,
                        format!("nil pointer evaluating interface {{}}.{name}"),
                    ));
                }
                Value::Map(m) => {
                    let has_key = m.borrow().contains_key(name);
                    if let (false, Some(method)) =
                        (has_key, self.set.map_methods.get(name.as_str()))
                    {
                        let mut argv = Vec::new();
                        if is_last {
                            for (a, p) in args.iter().zip(&cmd.arg_pos[1..]) {
                                argv.push(nil_for_missing(self.eval_arg(dot, a, *p)?));
                            }
                            if let Some(f) = fin {
                                argv.push(nil_for_missing(f.clone()));
                            }
                        }
                        let recv = cur.clone();
                        cur = method(&recv, &argv)
                            .map_err(|e| err(self, format!("error calling {name}: {e}")))?;
                        from_map = true;
                        continue;
                    }
                    if has_args {
                        return Err(err(
                            self,
                            format!("{name} is not a method but has arguments"),
                        ));
                    }
                    let found = m.borrow().get(name).cloned();
                    match found {
                        Some(v) => v,
                        None => match self.set.missing_key {
                            MissingKey::Default => Value::Missing,
                            MissingKey::Zero => Value::Nil,
                            MissingKey::Error => {
                                return Err(err(
                                    self,
                                    format!("map has no entry for key {}", quote(name)),
                                ));
                            }
                        },
                    }
                }
                Value::Object(o) => {
                    let o = o.clone();
                    if o.has_method(name) {
                        let mut argv = Vec::new();
                        if is_last {
                            for (a, p) in args.iter().zip(&cmd.arg_pos[1..]) {
                                argv.push(nil_for_missing(self.eval_arg(dot, a, *p)?));
                            }
                            if let Some(f) = fin {
                                argv.push(nil_for_missing(f.clone()));
                            }
                        }
                        match o.call(name, &argv) {
                            Some(Ok(v)) => v,
                            Some(Err(e)) => {
                                return Err(err(self, format!("error calling {name}: {e}")));
                            }
                            None => {
                                return Err(err(
                                    self,
                                    format!(
                                        "can't evaluate field {name} in type {}",
                                        o.type_name()
                                    ),
                                ));
                            }
                        }
                    } else if let Some(v) = o.field(name) {
                        if has_args {
                            return Err(err(
                                self,
                                format!("{name} has arguments but cannot be invoked as function"),
                            ));
                        }
                        v
                    } else {
                        return Err(err(
                            self,
                            format!("can't evaluate field {name} in type {}", o.type_name()),
                        ));
                    }
                }
                other => {
                    let ty = if from_map {
                        "interface {}".to_string()
                    } else {
                        other.type_name()
                    };
                    return Err(err(
                        self,
                        format!("can't evaluate field {name} in type {ty}"),
                    ));
                }
            };
            from_map = true;
        }
        Ok(cur)
    }

    fn eval_function(
        &mut self,
        dot: &Value,
        name: &str,
        cmd: &Command,
        fin: Option<Value>,
    ) -> R<Value> {
        let args = &cmd.args[1..];
        let arg_pos = &cmd.arg_pos[1..];
        let ident_at = At {
            pos: cmd.pos,
            text: &cmd.args[0],
        };
        let Some(func) = self.set.funcs.get(name).cloned() else {
            return Err(self.error(
                ident_at,
                &format!("{} is not a defined function", quote(name)),
            ));
        };
        let n = args.len() + usize::from(fin.is_some());
        match func.arity {
            Arity::Exact(want) if want != n && name != "and" && name != "or" => {
                return Err(self.error(
                    ident_at,
                    &format!("wrong number of args for {name}: want {want} got {n}"),
                ));
            }
            Arity::AtLeast(want) if n < want => {
                return Err(self.error(
                    ident_at,
                    &format!("wrong number of args for {name}: want at least {want} got {n}"),
                ));
            }
            _ => {}
        }
        let cmd_at = At {
            pos: cmd.pos,
            text: cmd,
        };
        if name == "and" || name == "or" {
            return self.and_or(dot, name == "and", args, arg_pos, fin);
        }
        let mut argv = Vec::with_capacity(n);
        // Go checks each argument against its parameter type as it evaluates it; the piped
        // value is checked last, at the last node evaluated.
        let mut last_at = ident_at;
        for (i, (a, p)) in args.iter().zip(arg_pos).enumerate() {
            last_at = At { pos: *p, text: a };
            let kind = match a {
                Arg::Str(..) => Some(ConstKind::Str),
                // Go's evalInteger takes any constant that is an integer (`1e3` too).
                Arg::Number(n) if n.int.is_some() => Some(ConstKind::Int),
                Arg::Number(_) => Some(ConstKind::Float),
                Arg::Bool(_) => Some(ConstKind::Bool),
                Arg::Nil => Some(ConstKind::Nil),
                _ => None,
            };
            if let Some(msg) = kind.and_then(|k| func.param(i).check_constant(k, &a.to_string())) {
                return Err(self.error(last_at, &msg));
            }
            let v = self.eval_arg(dot, a, *p)?;
            if let (None, Some(msg)) = (kind, func.param(i).check(&v)) {
                return Err(self.error(last_at, &msg));
            }
            argv.push(nil_for_missing(v));
        }
        if let Some(f) = fin {
            if let Some(msg) = func.param(argv.len()).check(&f) {
                return Err(self.error(last_at, &msg));
            }
            argv.push(nil_for_missing(f));
        }
        self.call(&func, name, &argv)
            .map_err(|e| self.error(cmd_at, &format!("error calling {name}: {e}")))
    }

    fn call(&mut self, func: &Func, _name: &str, argv: &[Value]) -> R<Value> {
        let mut call = Call { state: self };
        (func.body)(&mut call, argv)
    }

    /// `and`/`or`: arguments evaluated left to right until the result is known.
    fn and_or(
        &mut self,
        dot: &Value,
        is_and: bool,
        args: &[Arg],
        arg_pos: &[usize],
        fin: Option<Value>,
    ) -> R<Value> {
        let mut last = Value::Missing;
        for (a, p) in args.iter().zip(arg_pos) {
            let v = self.eval_arg(dot, a, *p)?;
            if v.truthy() != is_and {
                return Ok(v);
            }
            last = v;
        }
        if let Some(f) = fin {
            return Ok(f);
        }
        Ok(last)
    }
}

fn nil_for_missing(v: Value) -> Value {
    match v {
        Value::Missing => Value::Nil,
        v => v,
    }
}
