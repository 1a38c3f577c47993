//! Calling functions: Go's argument count and type checks, lazy `and`/`or`, and the
//! [`Call`] context through which a function executes templates (`include`, `tpl`).

use std::sync::Arc;

use super::prov::{Prov, TV};
use super::{At, Failure, R, State, run};
use crate::ast::{Arg, Command, Pipe};
use crate::format::quote;
use crate::funcs::{Arity, ConstKind, Func, FuncError};
use crate::trace::{Held, Slot, Span, Trace, Traced};
use crate::value::Value;

/// How many emptied argument lists a thread keeps for the next calls.
const MAX_POOLED: usize = 64;

std::thread_local! {
    /// Argument lists (and their origins) of finished calls, emptied, for the next ones: a
    /// render calls functions hundreds of thousands of times, and two fresh lists a call
    /// were an eighth of its allocations.
    static ARGS: std::cell::RefCell<Vec<(Vec<Value>, Vec<Prov>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The context a function gets: it can execute other templates, as `include` and `tpl` do.
pub struct Call<'s, 'a> {
    state: &'s mut State<'a>,
    /// The origins of the arguments (none without a tracer).
    provs: &'s [Prov],
    /// Where the call is in the template.
    pos: usize,
}

impl Call<'_, '_> {
    /// Executes the template `name` with `data` as dot; its output, or the error as Go
    /// prints it.
    pub fn execute_template(&mut self, name: &str, data: &Value) -> Result<String, FuncError> {
        let set = self.state.set;
        let Some(t) = set.get(name) else {
            return Err(format!(
                "template: no template {} associated with template {}",
                quote(name),
                quote(&set.root_name)
            )
            .into());
        };
        let dot = std::mem::take(&mut self.state.pending.dot);
        let depth = self.state.depth + 1;
        if !crate::memo::enabled() {
            let out = run(set, self.state.trace, &t, data, dot, depth);
            return self.finish(out);
        }
        // What the template printed for the same data, when nothing it read changed since
        // ([`crate::memo`]).
        let key = crate::memo::Key::new(set, &t, data, &dot, self.state.trace);
        if let Some(out) = crate::memo::get(&key, depth) {
            return self.finish(Ok(out));
        }
        let dot = crate::memo::enter(depth, dot, self.state.trace.is_some());
        let out = run(set, self.state.trace, &t, data, dot, depth);
        let out = crate::memo::leave(depth, key, out);
        self.finish(out)
    }

    /// Parses `text` as a new template `name` beside the current ones (its `define`s are
    /// visible to it) and executes it with `data`.
    pub fn execute_text(
        &mut self,
        name: &str,
        text: &str,
        data: &Value,
    ) -> Result<String, FuncError> {
        let mut set = self.state.set.clone();
        let origins = self.state.pending.text.take();
        set.parse_source(name, text, origins)
            .map_err(|e| e.to_string())?;
        let Some(t) = set.get(name) else {
            return Ok(String::new());
        };
        let dot = std::mem::take(&mut self.state.pending.dot);
        let out = run(&set, self.state.trace, &t, data, dot, self.state.depth + 1);
        self.finish(out)
    }

    /// Keeps what an execution printed (with its spans, when tracing) or the steps of its
    /// error for the caller's provenance and error.
    fn finish(&mut self, out: Result<Traced, Failure>) -> Result<String, FuncError> {
        match out {
            Ok(t) if self.state.trace.is_some() => {
                let text = t.text.clone();
                self.state.pending.output = Some(t);
                Ok(text)
            }
            Ok(t) => Ok(t.text),
            Err(f) => {
                self.state.pending.frames = f.frames;
                Err(FuncError(f.text))
            }
        }
    }

    /// Whether this execution traces origins.
    pub fn tracing(&self) -> bool {
        self.state.trace.is_some()
    }

    /// The path of `v` when the execution traces and `v` is a traced map or list.
    pub fn path_of(&self, v: &Value) -> Option<Arc<str>> {
        self.state.trace.and_then(|t| t.path_of(v))
    }

    /// Traces the map or list `v`, a fresh copy of a value traced as `path`, as `path`
    /// ([`crate::Tracer::trace_as`]); false without a tracer.
    pub fn trace_as(&self, v: &Value, path: Arc<str>) -> bool {
        self.state.trace.is_some_and(|t| t.trace_as(v, path))
    }

    /// Says that the value at `path` came from `from` ([`crate::Tracer::alias`]).
    pub fn alias(&self, path: String, from: Arc<str>) {
        if let Some(t) = self.state.trace {
            t.alias(path, from);
        }
    }

    /// The origins of the bytes of argument `i`, a string (none without a tracer): what
    /// printing it here would give.
    pub fn arg_spans(&self, i: usize, text: &str) -> Option<Vec<Span>> {
        let prov = self.provs.get(i)?;
        Some(self.state.spans_of(text, prov, self.pos))
    }

    /// Gives the origins of pieces of the string the function returns (relative to it); the
    /// rest has the origin it would have had.
    pub fn set_spans(&mut self, spans: Vec<Span>) {
        if self.state.trace.is_some() {
            self.state.pending.result = Some(spans);
        }
    }

    /// Says that the scalar `v` at `slot` of `container` came from `held`
    /// ([`crate::Tracer::hold`]).
    pub fn hold(&self, container: &Value, slot: Slot, v: &Value, held: Option<Held>) {
        if let Some(t) = self.state.trace {
            t.hold(container, slot, v, held);
        }
    }

    /// What `container` holds for the scalar `v` at `slot` ([`crate::Tracer::held`]).
    pub fn held(&self, container: &Value, slot: &Slot, v: &Value) -> Option<Held> {
        self.state.trace?.held(container, slot, v)
    }

    /// [`Call::held`] at the key `key`.
    pub fn held_key(&self, container: &Value, key: &str, v: &Value) -> Option<Held> {
        self.state.trace?.held_key(container, key, v)
    }

    /// Whether some slot of `container` holds an origin ([`crate::Tracer::holds`]).
    pub fn holds(&self, container: &Value) -> bool {
        self.state.trace.is_some_and(|t| t.holds(container))
    }

    /// Gives `to` what `from` held for the same scalars ([`crate::Tracer::copy_held`]).
    pub fn copy_held(&self, from: &Value, to: &Value) {
        if let Some(t) = self.state.trace {
            t.copy_held(from, to);
        }
    }

    /// Whether a merge said that some value came from another path ([`Call::alias`]).
    pub fn has_aliases(&self) -> bool {
        self.state.trace.is_some_and(crate::Tracer::has_aliases)
    }

    /// `path`, or where its value came from when a merge said so
    /// ([`crate::Tracer::resolve_alias`]).
    pub fn resolve_alias(&self, path: &str) -> Arc<str> {
        match self.state.trace {
            Some(t) => t.resolve_alias(path),
            None => Arc::from(path),
        }
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

impl State<'_> {
    pub(super) fn eval_function(
        &mut self,
        dot: &Value,
        name: &str,
        cmd: &Command,
        fin: Option<TV>,
    ) -> R<TV> {
        let args = &cmd.args[1..];
        let arg_pos = &cmd.arg_pos[1..];
        let ident_at = At {
            pos: cmd.pos,
            text: &cmd.args[0],
        };
        // The table outlives this state: the function is borrowed from it, not copied.
        let set = self.set;
        let Some(func) = set.funcs.get(name) else {
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
        let tracing = self.trace.is_some();
        let (mut argv, mut provs) = ARGS.with_borrow_mut(Vec::pop).unwrap_or_default();
        argv.reserve(n);
        if tracing {
            provs.reserve(n);
        }
        // Go checks each argument against its parameter type as it evaluates it; the piped
        // value is checked last, at the last node evaluated.
        let mut last_at = ident_at;
        // Go's `len` gets a reflect.Value: a nil constant or a pipeline's nil is none at all.
        let mut untyped_nil = false;
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
            if let Some(msg) = kind.and_then(|k| func.param(i).check_constant(k, a)) {
                return Err(self.error(last_at, &msg));
            }
            let (v, prov) = self.eval_arg(dot, a, *p)?;
            // The node Go points at once the argument is evaluated.
            last_at = last_node(a, *p);
            untyped_nil = matches!(a, Arg::Nil) || matches!(v, Value::Missing);
            if let (None, Some(msg)) = (kind, func.param(i).check(&v)) {
                return Err(self.error(last_at, &msg));
            }
            argv.push(nil_for_missing(v));
            if tracing {
                provs.push(prov);
            }
        }
        if let Some((f, prov)) = fin {
            if let Some(msg) = func.param(argv.len()).check(&f) {
                return Err(self.error(last_at, &msg));
            }
            untyped_nil = f.is_nil();
            argv.push(nil_for_missing(f));
            if tracing {
                provs.push(prov);
            }
        }
        if tracing {
            self.before_call(func.trace, &argv, &provs, cmd.pos);
        }
        self.pending.frames.clear();
        if name == "len" && untyped_nil {
            return Err(self.error(
                cmd_at,
                "error calling len: reflect: call of reflect.Value.Type on zero Value",
            ));
        }
        let result = match self.call(func, &argv, &provs, cmd.pos) {
            Ok(v) => {
                let prov = if tracing {
                    self.pending.dot = Prov::None;
                    self.pending.text = None;
                    self.result_prov(func.trace, &argv, &provs, &v, cmd.pos)
                } else {
                    Prov::None
                };
                Ok((v, prov))
            }
            Err(e) => {
                let mut f = self.error(cmd_at, &format!("error calling {name}: {e}"));
                f.frames.append(&mut self.pending.frames);
                Err(f)
            }
        };
        argv.clear();
        provs.clear();
        ARGS.with_borrow_mut(|pool| {
            if pool.len() < MAX_POOLED {
                pool.push((argv, provs));
            }
        });
        result
    }

    fn call(
        &mut self,
        func: &Func,
        argv: &[Value],
        provs: &[Prov],
        pos: usize,
    ) -> Result<Value, FuncError> {
        let mut call = Call {
            state: self,
            provs,
            pos,
        };
        (func.body)(&mut call, argv)
    }

    /// Hands a function that executes templates the origins of its data and text.
    fn before_call(&mut self, trace: Trace, argv: &[Value], provs: &[Prov], pos: usize) {
        self.pending.output = None;
        self.pending.result = None;
        if !matches!(trace, Trace::Include | Trace::Tpl) {
            return;
        }
        self.pending.dot = provs.last().cloned().unwrap_or_default();
        if trace == Trace::Tpl
            && let (Some(Value::String(text)), Some(prov)) = (argv.first(), provs.first())
        {
            self.pending.text = Some(self.spans_of(text, prov, pos));
        }
    }

    /// `and`/`or`: arguments evaluated left to right until the result is known.
    fn and_or(
        &mut self,
        dot: &Value,
        is_and: bool,
        args: &[Arg],
        arg_pos: &[usize],
        fin: Option<TV>,
    ) -> R<TV> {
        let mut last = (Value::Missing, Prov::None);
        for (a, p) in args.iter().zip(arg_pos) {
            let v = self.eval_arg(dot, a, *p)?;
            if v.0.truthy() != is_and {
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

/// The node Go's executor last pointed at (`s.at`) once `arg` (at `pos`) was evaluated
/// without error: for a parenthesized pipeline, its last command's last argument, and so
/// on inwards. Errors found after an evaluation (an argument of the wrong type, a range
/// over what cannot be ranged) are reported there.
pub(super) fn last_node(arg: &Arg, pos: usize) -> At<'_> {
    match arg {
        Arg::Pipe(p) => last_of_pipe(p).unwrap_or(At { pos, text: arg }),
        Arg::Chain(inner, _) => last_node(inner, pos),
        _ => At { pos, text: arg },
    }
}

/// [`last_node`] of a pipeline: its last command's function or operand, or the last
/// argument it was given.
pub(super) fn last_of_pipe(p: &Pipe) -> Option<At<'_>> {
    let c = p.cmds.last()?;
    let (first, pos) = (c.args.first()?, *c.arg_pos.first()?);
    let calls = matches!(
        first,
        Arg::Ident(_) | Arg::Field(_) | Arg::Variable(..) | Arg::Chain(..)
    );
    if let (true, Some(a), Some(p)) = (c.args.len() > 1 && calls, c.args.last(), c.arg_pos.last()) {
        return Some(last_node(a, *p));
    }
    Some(last_node(first, pos))
}

pub(super) fn nil_for_missing(v: Value) -> Value {
    match v {
        Value::Missing => Value::Nil,
        v => v,
    }
}
