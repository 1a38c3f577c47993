//! Evaluating pipelines, commands and operands: variables, constants, field chains on maps
//! and objects (with `missingkey` and the Helm-style map methods), parenthesized pipelines.

use super::{At, MissingKey, R, State};
use super::call::nil_for_missing;
use crate::ast::{Arg, Command, Pipe};
use crate::format::quote;
use crate::value::Value;

impl State<'_> {
    pub(super) fn eval_pipeline(&mut self, dot: &Value, pipe: &Pipe) -> R<Value> {
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
    pub(super) fn eval_arg(&mut self, dot: &Value, arg: &Arg, pos: usize) -> R<Value> {
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
}
