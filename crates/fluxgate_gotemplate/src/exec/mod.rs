//! The executor: walks a tree with Go's rules for dot, variables and their scopes, field
//! chains on maps and objects, `missingkey`, pipelines (the previous command's value is the
//! last argument of the next), lazy `and`/`or`, `range` over slices, maps (key order) and
//! ints, `break`/`continue`, and Go's error text.

use std::sync::Arc;
use std::sync::OnceLock;

use crate::Templates;
use crate::ast::{Branch, List, Node};
use crate::format::{quote, sprint_value};
use crate::trace::{Origin, Span, Traced, Tracer, slice_spans};
use crate::value::Value;

mod call;
mod eval;
mod prov;

pub use call::Call;
pub(crate) use prov::Prov;

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

/// One parsed template: its name, the file it was parsed from (error positions and origins
/// are computed in that text), and its tree.
#[derive(Debug)]
pub struct Template {
    pub name: String,
    pub(crate) src: Arc<Source>,
    pub root: List,
    /// The bytes of literal text in `root` ([`crate::ast::text_bytes`]): about what an
    /// execution prints, so its output starts that large (a chart's CRD template is one text
    /// of hundreds of kilobytes inside an `if`, which grew by doubling).
    pub(crate) text_bytes: usize,
}

impl Template {
    /// The name of the text the template was parsed from.
    pub fn parse_name(&self) -> &str {
        &self.src.name
    }

    /// The text the template was parsed from.
    pub fn source(&self) -> &str {
        &self.src.text
    }
}

/// A parsed text, shared by the templates it defines.
#[derive(Debug)]
pub(crate) struct Source {
    pub(crate) name: Arc<str>,
    pub(crate) text: Arc<str>,
    /// Where each line starts, computed on the first traced use.
    lines: OnceLock<Vec<usize>>,
    /// For a text that `tpl` executes: where its bytes came from (values, a template).
    origins: Option<Vec<Span>>,
}

impl Source {
    pub(crate) fn new(name: &str, text: &str, origins: Option<Vec<Span>>) -> Source {
        Source::with_text(name, Arc::from(text), origins)
    }

    pub(crate) fn with_text(name: &str, text: Arc<str>, origins: Option<Vec<Span>>) -> Source {
        Source {
            name: Arc::from(name),
            text,
            lines: OnceLock::new(),
            origins,
        }
    }

    /// The 1-based line and 1-based column (in characters) of byte `pos`.
    pub(crate) fn line_col(&self, pos: usize) -> (usize, usize) {
        let lines = self
            .lines
            .get_or_init(|| crate::trace::line_starts(&self.text));
        let pos = pos.min(self.text.len());
        let line = lines.partition_point(|&s| s <= pos).max(1);
        let start = lines[line - 1];
        let column = 1 + self.text.get(start..pos).map_or(0, |t| t.chars().count());
        (line, column)
    }

    /// Where byte `pos` of the text came from.
    pub(crate) fn origin_at(&self, pos: usize) -> Origin {
        if let Some(origins) = &self.origins {
            let i = origins.partition_point(|s| s.end <= pos);
            if let Some(s) = origins.get(i).or_else(|| origins.last()) {
                return s.origin.clone();
            }
        }
        let (line, column) = self.line_col(pos);
        Origin::Template {
            file: self.name.clone(),
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }

    /// The spans of the literal text `start..end`, relative to `start`: one per line.
    fn literal(&self, start: usize, end: usize) -> Vec<Span> {
        if let Some(origins) = &self.origins {
            return slice_spans(origins, start, end);
        }
        let Some(text) = self.text.get(start..end) else {
            return Vec::new();
        };
        // The first line starts where the text does; each later one at column 1 of the next
        // line of the template.
        let (line, column) = self.line_col(start);
        let mut out = Vec::new();
        let mut at = 0;
        let breaks = memchr::memchr_iter(b'\n', text.as_bytes()).map(Some);
        for (n, brk) in breaks.chain(std::iter::once(None)).enumerate() {
            let stop = brk.map_or(text.len(), |i| i + 1);
            if stop == at {
                break;
            }
            out.push(Span {
                start: at,
                end: stop,
                origin: Origin::Template {
                    file: self.name.clone(),
                    line: u32::try_from(line + n).unwrap_or(u32::MAX),
                    column: u32::try_from(if n == 0 { column } else { 1 }).unwrap_or(u32::MAX),
                },
            });
            at = stop;
        }
        out
    }
}

/// One step of an execution error: where, in which template, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The name of the text the template was parsed from (a chart file path in Helm).
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters (Go's message prints the 0-based byte column).
    pub column: usize,
    /// The template executing there (a `define`'s name, or the file's).
    pub template: String,
    /// The message at this step (for a call that failed inside, `error calling F: ...`).
    pub message: String,
}

/// An execution error: Go's text, and the steps from the outermost call inwards.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) text: String,
    pub(crate) frames: Vec<Frame>,
}

impl Failure {
    fn plain(text: String) -> Failure {
        Failure {
            text,
            frames: Vec::new(),
        }
    }
}

pub(crate) struct State<'a> {
    pub(crate) set: &'a Templates,
    trace: Option<&'a Tracer>,
    tmpl: Arc<Template>,
    vars: Vec<(crate::ast::Name, Value, Prov)>,
    out: String,
    spans: Vec<Span>,
    /// The origin of dot.
    dot_prov: Prov,
    pending: Pending,
    pub(crate) depth: usize,
}

/// What the executor hands a function that executes templates, and what it leaves behind.
#[derive(Default)]
struct Pending {
    /// The origin of the data `include`/`tpl` pass as dot.
    dot: Prov,
    /// The origins of the text `tpl` executes.
    text: Option<Vec<Span>>,
    /// What the last execution printed, with its spans.
    output: Option<Traced>,
    /// The steps of the last execution's error.
    frames: Vec<Frame>,
    /// The spans a function gave for pieces of the text it returned ([`Call::set_spans`]).
    result: Option<Vec<Span>>,
}

/// Executes `t` of `set` with `data` (whose origin is `dot_prov`) at call depth `depth`.
pub(crate) fn run(
    set: &Templates,
    trace: Option<&Tracer>,
    t: &Arc<Template>,
    data: &Value,
    dot_prov: Prov,
    depth: usize,
) -> Result<Traced, Failure> {
    if depth > MAX_DEPTH {
        return Err(Failure::plain(format!(
            "template: {}: exceeded maximum template depth ({MAX_DEPTH})",
            t.name
        )));
    }
    crate::memo::reached(depth);
    let dot_prov = match (trace, dot_prov) {
        (Some(t), Prov::None) => t.path_of(data).map_or(Prov::None, Prov::Path),
        (_, p) => p,
    };
    let mut s = State {
        set,
        trace,
        tmpl: t.clone(),
        vars: vec![(dollar(), data.clone(), dot_prov.clone())],
        out: String::with_capacity(t.text_bytes),
        spans: Vec::new(),
        dot_prov,
        pending: Pending::default(),
        depth,
    };
    s.walk_list(data, &t.root)?;
    Ok(Traced {
        text: s.out,
        spans: s.spans,
    })
}

/// The name `$`, made once per thread (every execution declares it).
fn dollar() -> crate::ast::Name {
    std::thread_local! {
        static DOLLAR: crate::ast::Name = crate::ast::Name::from("$");
    }
    DOLLAR.with(Arc::clone)
}

enum Flow {
    Next,
    Break,
    Continue,
}

type R<T> = Result<T, Failure>;

/// Where a node is and what it reads as, for error messages.
#[derive(Clone, Copy)]
struct At<'n> {
    pos: usize,
    text: &'n dyn std::fmt::Display,
}

impl State<'_> {
    fn error(&self, at: At<'_>, msg: &str) -> Failure {
        let src = &self.tmpl.src.text;
        let pos = at.pos.min(src.len());
        let before = src.get(..pos).unwrap_or("");
        let line = 1 + before.matches('\n').count();
        // Go counts the column from 0.
        let col = pos - before.rfind('\n').map_or(0, |i| i + 1);
        // Go's text/template (1.26) quotes the whole node.
        let ctx = at.text.to_string();
        let text = format!(
            "template: {}:{line}:{col}: executing {} at <{}>: {msg}",
            self.tmpl.src.name,
            quote(&self.tmpl.name),
            ctx.replace('%', "%%")
        );
        let (_, column) = self.tmpl.src.line_col(pos);
        Failure {
            text,
            frames: vec![Frame {
                file: self.tmpl.src.name.to_string(),
                line,
                column,
                template: self.tmpl.name.clone(),
                message: msg.to_string(),
            }],
        }
    }

    fn write(&mut self, s: &str) -> R<()> {
        if self.out.len() + s.len() > self.set.max_output {
            return Err(Failure::plain(format!(
                "template: {}: output exceeds {} bytes",
                self.tmpl.name, self.set.max_output
            )));
        }
        self.out.push_str(s);
        Ok(())
    }

    /// Writes `t`, whose spans (relative to it) are `spans`.
    fn write_traced(&mut self, t: &Traced) -> R<()> {
        let base = self.out.len();
        self.write(&t.text)?;
        if self.trace.is_some() {
            self.spans.extend(t.spans.iter().map(|s| Span {
                start: base + s.start,
                end: base + s.end,
                origin: s.origin.clone(),
            }));
        }
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
            Node::Text(t, pos) => {
                let base = self.out.len();
                self.write(t)?;
                if self.trace.is_some() {
                    let spans = self.tmpl.src.literal(*pos, *pos + t.len());
                    self.spans.extend(spans.into_iter().map(|s| Span {
                        start: base + s.start,
                        end: base + s.end,
                        origin: s.origin,
                    }));
                }
            }
            Node::Action(pipe) => {
                let (v, prov) = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    // A string prints as itself (`%v`): written without a copy.
                    let text: std::borrow::Cow<'_, str> = match &v {
                        Value::Missing => "<no value>".into(),
                        Value::String(s) => (&**s).into(),
                        other => sprint_value(other).into(),
                    };
                    let base = self.out.len();
                    self.write(&text)?;
                    if self.trace.is_some() {
                        self.record(base, &text, &prov, pipe.pos);
                    }
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
                let (data, prov) = match pipe {
                    Some(p) => self.eval_pipeline(dot, p)?,
                    None => (Value::Missing, Prov::None),
                };
                let out = run(self.set, self.trace, &t, &data, prov, self.depth + 1)?;
                self.write_traced(&out)?;
            }
            Node::Break(_) => return Ok(Flow::Break),
            Node::Continue(_) => return Ok(Flow::Continue),
        }
        Ok(Flow::Next)
    }

    /// Walks `list` with `dot` (of origin `prov`) as dot.
    fn walk_with_dot(&mut self, dot: &Value, prov: Prov, list: &[Node]) -> R<Flow> {
        if self.trace.is_none() {
            return self.walk_list(dot, list);
        }
        let saved = std::mem::replace(&mut self.dot_prov, prov);
        let flow = self.walk_list(dot, list);
        self.dot_prov = saved;
        flow
    }

    fn if_or_with(&mut self, dot: &Value, b: &Branch, with: bool) -> R<Flow> {
        let mark = self.vars.len();
        let (v, prov) = self.eval_pipeline(dot, &b.pipe)?;
        let flow = if v.truthy() {
            if with {
                self.walk_with_dot(&v, prov, &b.list)?
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
        let (v, prov) = self.eval_pipeline(dot, &b.pipe)?;
        // Go reports what cannot be ranged at the last node the pipeline evaluated.
        let at = call::last_of_pipe(&b.pipe).unwrap_or(At {
            pos: b.pos,
            text: node,
        });
        let inner = self.vars.len();
        let is_map = matches!(v, Value::Map(_));
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
                        at,
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
                    at,
                    &format!("range can't iterate over {}", sprint_value(other)),
                ));
            }
        };
        let mut flow = Flow::Next;
        if let (true, Some(else_list)) = (items.is_empty(), &b.else_list) {
            flow = self.walk_list(dot, else_list)?;
        }
        for (i, (key, elem)) in items.into_iter().enumerate() {
            let (key_prov, elem_prov) = if self.trace.is_some() {
                let p = self.item_prov(&prov, &v, i, &key, &elem);
                (if is_map { p.clone() } else { Prov::None }, p)
            } else {
                (Prov::None, Prov::None)
            };
            self.set_range_vars(b, (&key, key_prov), (&elem, elem_prov.clone()));
            let f = self.walk_with_dot(&elem, elem_prov, &b.list)?;
            self.vars.truncate(inner);
            if matches!(f, Flow::Break) {
                break;
            }
        }
        self.vars.truncate(mark);
        Ok(flow)
    }

    fn set_range_vars(&mut self, b: &Branch, key: (&Value, Prov), elem: (&Value, Prov)) {
        let decl = &b.pipe.decl;
        if b.pipe.is_assign {
            match decl.len() {
                1 => self.set_var(&decl[0], elem.0.clone(), elem.1),
                2 => {
                    self.set_var(&decl[0], key.0.clone(), key.1);
                    self.set_var(&decl[1], elem.0.clone(), elem.1);
                }
                _ => {}
            }
            return;
        }
        let n = self.vars.len();
        if !decl.is_empty() && n >= 1 {
            self.vars[n - 1].1 = elem.0.clone();
            self.vars[n - 1].2 = elem.1;
        }
        if decl.len() > 1 && n >= 2 {
            self.vars[n - 2].1 = key.0.clone();
            self.vars[n - 2].2 = key.1;
        }
    }

    fn set_var(&mut self, name: &str, v: Value, prov: Prov) {
        if let Some(slot) = self.vars.iter_mut().rev().find(|(n, ..)| **n == *name) {
            slot.1 = v;
            slot.2 = prov;
        }
    }

    fn var(&self, name: &str) -> (Value, Prov) {
        self.vars
            .iter()
            .rev()
            .find(|(n, ..)| **n == *name)
            .map(|(_, v, p)| (v.clone(), p.clone()))
            .unwrap_or_default()
    }
}
