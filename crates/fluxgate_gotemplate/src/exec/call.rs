//! Calling functions: Go's argument count and type checks, lazy `and`/`or`, and the
//! [`Call`] context through which a function executes templates (`include`, `tpl`).

use super::{At, R, State, run};
use crate::ast::Arg;
use crate::format::quote;
use crate::funcs::{Arity, ConstKind, Func};
use crate::value::Value;
use crate::ast::Command;

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

impl State<'_> {
    pub(super) fn eval_function(
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

pub(super) fn nil_for_missing(v: Value) -> Value {
    match v {
        Value::Missing => Value::Nil,
        v => v,
    }
}
