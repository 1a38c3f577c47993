//! Evaluating pipelines, commands and operands: variables, constants, field chains on maps
//! and objects (with `missingkey` and the Helm-style map methods), parenthesized pipelines.
//! Each value comes with its origin ([`Prov`]), which is `None` unless the run traces.

use super::call::{last_node, nil_for_missing};
use super::prov::{Prov, TV};
use super::{At, MissingKey, R, State};
use crate::ast::{Arg, Command, Name, Pipe};
use crate::format::quote;
use crate::value::Value;

impl State<'_> {
    pub(super) fn eval_pipeline(&mut self, dot: &Value, pipe: &Pipe) -> R<TV> {
        let mut value: Option<TV> = None;
        for cmd in &pipe.cmds {
            // Go unwraps the interface after each command: a nil becomes no value (and the
            // next command's final argument is "invalid" where a nil cannot go).
            value = Some(nil_as_missing(self.eval_command(dot, cmd, value)?));
        }
        let (value, prov) = value.unwrap_or_default();
        for name in &pipe.decl {
            if pipe.is_assign {
                self.set_var(name, value.clone(), prov.clone());
            } else {
                self.vars.push((name.clone(), value.clone(), prov.clone()));
            }
        }
        Ok((value, prov))
    }

    fn eval_command(&mut self, dot: &Value, cmd: &Command, fin: Option<TV>) -> R<TV> {
        let first = &cmd.args[0];
        let rest = &cmd.args[1..];
        let pos = cmd.arg_pos.first().copied().unwrap_or(cmd.pos);
        match first {
            Arg::Ident(name) => self.eval_function(dot, name, cmd, fin),
            Arg::Field(fields) => {
                let recv = (dot.clone(), self.dot_prov.clone());
                self.eval_chain(dot, recv, fields, first, pos, rest_of(cmd), fin.as_ref())
            }
            Arg::Variable(name, fields) => {
                let v = self.var(name);
                if fields.is_empty() {
                    self.not_a_function(cmd, rest, fin.as_ref())?;
                    return Ok(v);
                }
                self.eval_chain(dot, v, fields, first, pos, rest_of(cmd), fin.as_ref())
            }
            Arg::Chain(inner, fields) => {
                let v = nil_as_missing(self.eval_arg(dot, inner, pos)?);
                self.eval_chain(dot, v, fields, first, pos, rest_of(cmd), fin.as_ref())
            }
            Arg::Pipe(p) => {
                self.not_a_function(cmd, rest, fin.as_ref())?;
                self.eval_pipeline(dot, p)
            }
            Arg::Nil => {
                self.not_a_function(cmd, rest, fin.as_ref())?;
                Err(self.error(At { pos, text: first }, "nil is not a command"))
            }
            other => {
                self.not_a_function(cmd, rest, fin.as_ref())?;
                self.eval_arg(dot, other, pos)
            }
        }
    }

    fn not_a_function(&self, cmd: &Command, rest: &[Arg], fin: Option<&TV>) -> R<()> {
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
    pub(super) fn eval_arg(&mut self, dot: &Value, arg: &Arg, pos: usize) -> R<TV> {
        Ok(match arg {
            Arg::Dot => (dot.clone(), self.dot_prov.clone()),
            Arg::Nil => (Value::Nil, Prov::None),
            Arg::Bool(b) => (Value::Bool(*b), self.at(pos)),
            Arg::Str(s, _) => (Value::String(std::rc::Rc::from(&**s)), self.at(pos)),
            Arg::Number(n) => {
                let v = if n.is_float_syntax && !n.is_char || n.int.is_none() {
                    Value::Float(n.float.unwrap_or(0.0))
                } else {
                    Value::Int(n.int.unwrap_or(0))
                };
                (v, self.at(pos))
            }
            Arg::Field(fields) => {
                let recv = (dot.clone(), self.dot_prov.clone());
                self.eval_chain(dot, recv, fields, arg, pos, NO_ARGS, None)?
            }
            Arg::Variable(name, fields) => {
                let v = self.var(name);
                if fields.is_empty() {
                    v
                } else {
                    self.eval_chain(dot, v, fields, arg, pos, NO_ARGS, None)?
                }
            }
            Arg::Pipe(p) => self.eval_pipeline(dot, p)?,
            Arg::Chain(inner, fields) => {
                let v = nil_as_missing(self.eval_arg(dot, inner, pos)?);
                self.eval_chain(dot, v, fields, arg, pos, NO_ARGS, None)?
            }
            Arg::Ident(name) => {
                let single = Command {
                    pos,
                    args: vec![arg.clone()],
                    arg_pos: vec![pos],
                };
                self.eval_function(dot, name, &single, None)?
            }
        })
    }

    /// The arguments of a method call: the command's, then the piped value.
    fn method_args(
        &mut self,
        dot: &Value,
        (args, arg_pos): Rest,
        fin: Option<&TV>,
    ) -> R<Vec<Value>> {
        let mut argv = Vec::new();
        for (a, p) in args.iter().zip(arg_pos) {
            argv.push(nil_for_missing(self.eval_arg(dot, a, *p)?.0));
        }
        if let Some((f, _)) = fin {
            argv.push(nil_for_missing(f.clone()));
        }
        Ok(argv)
    }

    /// A field chain `.a.b.c` on `receiver`; the last field gets `args` and `fin` (a method
    /// call), the others none.
    #[allow(clippy::too_many_arguments)] // The pieces of one command; a struct would only rename them.
    fn eval_chain(
        &mut self,
        dot: &Value,
        receiver: TV,
        fields: &[Name],
        node: &Arg,
        at_pos: usize,
        rest: Rest,
        fin: Option<&TV>,
    ) -> R<TV> {
        let (mut cur, mut prov) = receiver;
        let tracing = self.trace.is_some();
        if tracing && matches!(prov, Prov::None) {
            prov = self.known(&cur);
        }
        let args = rest.0;
        let last = fields.len().saturating_sub(1);
        // The receiver of the first step is a concrete value; later ones come out of maps.
        let mut from_map = false;
        // Go reports a field it cannot evaluate at the node it evaluated last: for
        // `(pipe).a`, inside the pipeline; a failed method call at the chain itself.
        let touched = match node {
            Arg::Chain(inner, _) => last_node(inner, at_pos),
            _ => At {
                pos: at_pos,
                text: node,
            },
        };
        for (i, name) in fields.iter().enumerate() {
            let name: &str = name;
            let is_last = i == last;
            let has_args = is_last && (!args.is_empty() || fin.is_some());
            let err = |s: &State, msg: String| s.error(touched, &msg);
            let parent = if tracing { cur.clone() } else { Value::Missing };
            let call_err = |s: &State, msg: String| {
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
                    let found = m.borrow().get(name).cloned();
                    if let (None, Some(method)) = (&found, self.set.map_methods.get(name)) {
                        let argv = if is_last {
                            self.method_args(dot, rest, fin)?
                        } else {
                            Vec::new()
                        };
                        let recv = cur.clone();
                        cur = method(&recv, &argv)
                            .map_err(|e| call_err(self, format!("error calling {name}: {e}")))?;
                        if tracing {
                            prov = self.step_prov(&prov, &recv, name, &cur);
                        }
                        from_map = true;
                        continue;
                    }
                    if has_args {
                        return Err(err(
                            self,
                            format!("{name} is not a method but has arguments"),
                        ));
                    }
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
                        let argv = if is_last {
                            self.method_args(dot, rest, fin)?
                        } else {
                            Vec::new()
                        };
                        match o.call(name, &argv) {
                            Some(Ok(v)) => v,
                            Some(Err(e)) => {
                                return Err(call_err(self, format!("error calling {name}: {e}")));
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
            if tracing {
                prov = self.step_prov(&prov, &parent, name, &cur);
            }
            from_map = true;
        }
        Ok((cur, prov))
    }
}

/// The arguments after the first of a command, and where each starts.
type Rest<'a> = (&'a [Arg], &'a [usize]);

/// An operand alone: no arguments.
const NO_ARGS: Rest<'static> = (&[], &[]);

fn rest_of(cmd: &Command) -> Rest<'_> {
    (&cmd.args[1..], &cmd.arg_pos[1..])
}

fn nil_as_missing((v, p): TV) -> TV {
    match v {
        Value::Nil => (Value::Missing, p),
        v => (v, p),
    }
}
