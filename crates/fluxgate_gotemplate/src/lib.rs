//! Go's `text/template` in Rust, as Helm uses it: no Go at run time.
//!
//! [`Templates`] is a set of named templates sharing one function table ([`Funcs`]: Go's
//! builtins plus whatever the caller adds, e.g. sprig and Helm's `include`). Parsing a text
//! adds it under its name and adds each of its `define`/`block`s; executing walks a tree
//! with a [`Value`] as dot. Errors read as Go prints them:
//! `template: NAME:LINE:COL: executing "NAME" at <NODE>: MESSAGE`.
//!
//! The engine knows nothing of Helm: values, charts and sprig live with the callers.
//!
//! ```
//! use fluxgate_gotemplate::{Funcs, Templates, Value};
//! let mut set = Templates::new(Funcs::new());
//! set.parse("t", "{{ define \"x\" }}[{{ . }}]{{ end }}{{ range $i, $v := . }}{{ template \"x\" $v }}{{ end }}").unwrap();
//! let data = Value::list(vec![Value::Int(1), Value::str("a")]);
//! assert_eq!(set.execute("t", &data).unwrap(), "[1][a]");
//! let err = set.parse("bad", "{{ .x ").unwrap_err();
//! assert_eq!(err.to_string(), "template: bad:1: unclosed action");
//! ```
//!
//! [`Templates::execute_traced`] also says where each piece of the output came from
//! ([`trace`]): literal text at its line, values below the [`Tracer`]'s roots by their path.
//!
//! ```
//! use fluxgate_gotemplate::{Funcs, Origin, Templates, Tracer, Value};
//! let mut set = Templates::new(Funcs::new());
//! set.parse("t", "port: {{ .port }}").unwrap();
//! let data = Value::map([("port".to_string(), Value::Int(80))].into_iter().collect());
//! let mut tracer = Tracer::new();
//! tracer.add_root(&data, "");
//! let out = set.execute_traced("t", &data, &tracer).unwrap();
//! assert_eq!(out.text, "port: 80");
//! assert_eq!(out.spans[1].origin, Origin::Value { path: "port".into() });
//! ```

// Go's numbers move between int64 and float64 as Go converts them; the casts are the point.
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]
// The lexer's and parser's error helpers are methods for uniform call sites.
#![allow(clippy::unused_self)]

mod ast;
mod compare;
mod exec;
pub mod format;
mod funcs;
mod lex;
pub mod memo;
mod parse;
pub mod trace;
mod value;

use foldhash::HashMap;
use std::sync::Arc;

pub use exec::{Call, Frame, MAX_DEPTH, MissingKey, Template};
pub use funcs::{
    Arity, ConstKind, Func, FuncBody, FuncError, Funcs, Ty, index, length, query_escape,
};
pub use trace::{Held, Origin, Slot, Span, Trace, Traced, Tracer};
pub use value::{ListRef, MapRef, Object, Shared, Value};

/// What can go wrong: a parse error or an execution error, each with Go's text and where.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// `template: NAME:LINE: MESSAGE`.
    #[error("template: {name}:{line}: {message}")]
    Parse {
        name: String,
        line: usize,
        /// 1-based, in characters (Go's message has none).
        column: usize,
        message: String,
    },
    /// An execution error: `text` as Go prints it (`template: NAME:LINE:COL: executing
    /// ...`), and its steps from the outermost call inwards (through `template`, `include`
    /// and `tpl`); none for the errors Go gives no position (depth and output bounds).
    #[error("{text}")]
    Exec { text: String, frames: Vec<Frame> },
    /// `template: no template "NAME" associated with template "SET"`.
    #[error("template: no template {0:?} associated with template {0:?}")]
    NoTemplate(String),
}

impl Error {
    /// Where the error is: for a parse error its line, for an execution error the outermost
    /// step (the template and action being executed, as Go's message starts).
    pub fn position(&self) -> Option<Frame> {
        match self {
            Error::Parse {
                name,
                line,
                column,
                message,
            } => Some(Frame {
                file: name.clone(),
                line: *line,
                column: *column,
                template: name.clone(),
                message: message.clone(),
            }),
            Error::Exec { frames, .. } => frames.first().cloned(),
            Error::NoTemplate(_) => None,
        }
    }

    /// The steps of an execution error from the outermost call inwards (empty for others).
    pub fn frames(&self) -> &[Frame] {
        match self {
            Error::Exec { frames, .. } => frames,
            _ => &[],
        }
    }
}

impl From<exec::Failure> for Error {
    fn from(f: exec::Failure) -> Error {
        Error::Exec {
            text: f.text,
            frames: f.frames,
        }
    }
}

/// Default bound on one execution's output (a template that loops forever into its
/// output stops there).
pub const DEFAULT_MAX_OUTPUT: usize = 64 << 20;

/// A set of templates that can call one another.
#[derive(Clone)]
pub struct Templates {
    trees: Arc<HashMap<String, Arc<Template>>>,
    /// Templates added to a copy of a set whose table is shared (what `tpl` parses into a
    /// copy of the chart's set), found before the shared ones: copying a set for each `tpl`
    /// copies no table.
    pub(crate) added: Vec<Arc<Template>>,
    funcs: Arc<Funcs>,
    /// What a missing map key gives.
    pub missing_key: MissingKey,
    /// Bound on the bytes one execution writes.
    pub max_output: usize,
    /// The set's own name, as Go's "no template ... associated with template NAME" says.
    pub root_name: String,
    /// Methods of the data's named map types (Helm's `Values.AsMap`): called for `.Name`
    /// on a map that has no key `Name`.
    pub map_methods: Arc<HashMap<String, MapMethod>>,
}

/// The templates one text defines, parsed: immutable, shared between threads and sets
/// ([`Templates::parse_text`], [`Templates::add`]).
#[derive(Clone, Debug)]
pub struct Parsed {
    templates: Arc<[Arc<Template>]>,
}

/// A method of a named map type: the map, then the arguments.
pub type MapMethod = fn(&Value, &[Value]) -> Result<Value, FuncError>;

impl Templates {
    pub fn new(funcs: Funcs) -> Templates {
        Templates {
            trees: Arc::default(),
            added: Vec::new(),
            funcs: Arc::new(funcs),
            missing_key: MissingKey::Default,
            max_output: DEFAULT_MAX_OUTPUT,
            root_name: String::new(),
            map_methods: Arc::default(),
        }
    }

    /// Parses `text` as the template `name`, adding its `define`s. A later definition
    /// replaces an earlier one, except that an empty one never replaces a non-empty one.
    pub fn parse(&mut self, name: &str, text: &str) -> Result<(), Error> {
        let parsed = self.parse_text(name, text)?;
        self.add(&parsed);
        Ok(())
    }

    /// Parses `text` as the template `name` against this set's functions without adding it:
    /// a [`Parsed`] can be added to any set with the same function names, on any thread, as
    /// often as needed (a chart's templates parsed once for all its releases).
    pub fn parse_text(&self, name: &str, text: &str) -> Result<Parsed, Error> {
        self.parse_only(name, text, None, None)
    }

    /// [`Templates::parse_text`] of a text the templates keep without a copy (a chart's
    /// templates are held once for the process).
    pub fn parse_shared(&self, name: &str, text: &Arc<str>) -> Result<Parsed, Error> {
        self.parse_only(name, text, None, Some(text.clone()))
    }

    /// [`Templates::parse`], with the origins of the text's own bytes when it came from
    /// elsewhere (what `tpl` executes): its literal text and constants get those.
    pub(crate) fn parse_source(
        &mut self,
        name: &str,
        text: &str,
        origins: Option<Vec<Span>>,
    ) -> Result<(), Error> {
        let parsed = self.parse_only(name, text, origins, None)?;
        self.add(&parsed);
        Ok(())
    }

    /// `shared` is `text` when the caller holds it as an `Arc` already.
    fn parse_only(
        &self,
        name: &str,
        text: &str,
        origins: Option<Vec<Span>>,
        shared: Option<Arc<str>>,
    ) -> Result<Parsed, Error> {
        let funcs = &self.funcs;
        let trees = parse::parse(name, text, &|f| funcs.contains(f)).map_err(|e| {
            let src = exec::Source::new(name, text, None);
            let (line, column) = src.line_col(e.pos);
            Error::Parse {
                name: name.to_string(),
                line,
                column,
                message: e.message,
            }
        })?;
        let source = Arc::new(exec::Source::with_text(
            name,
            shared.unwrap_or_else(|| Arc::from(text)),
            origins,
        ));
        let templates = trees
            .into_iter()
            .map(|tree| {
                let text_bytes = ast::text_bytes(&tree.root);
                Arc::new(Template {
                    name: tree.name,
                    src: source.clone(),
                    root: tree.root,
                    text_bytes,
                })
            })
            .collect();
        Ok(Parsed { templates })
    }

    /// Adds the templates of `parsed`, in the order they were defined. A later definition
    /// replaces an earlier one, except that an empty one never replaces a non-empty one.
    pub fn add(&mut self, parsed: &Parsed) {
        for t in parsed.templates.iter() {
            let keep_old = parse::is_empty_tree(&t.root)
                && self
                    .get_ref(&t.name)
                    .is_some_and(|old| !parse::is_empty_tree(&old.root));
            if keep_old {
                continue;
            }
            self.added.retain(|a| a.name != t.name);
            if let Some(trees) = Arc::get_mut(&mut self.trees) {
                trees.insert(t.name.clone(), t.clone());
            } else {
                self.added.push(t.clone());
            }
        }
    }

    /// Executes the template `name` with `data` as dot.
    pub fn execute(&self, name: &str, data: &Value) -> Result<String, Error> {
        let t = self
            .get(name)
            .ok_or_else(|| Error::NoTemplate(name.to_string()))?;
        memo::start_over();
        exec::run(self, None, &t, data, exec::Prov::None, 0)
            .map(|t| t.text)
            .map_err(Error::from)
    }

    /// [`Templates::execute`], with the origin of each piece of the output: literal text at
    /// its template line, values below `tracer`'s roots by their paths.
    pub fn execute_traced(
        &self,
        name: &str,
        data: &Value,
        tracer: &Tracer,
    ) -> Result<Traced, Error> {
        let t = self
            .get(name)
            .ok_or_else(|| Error::NoTemplate(name.to_string()))?;
        memo::start_over();
        exec::run(self, Some(tracer), &t, data, exec::Prov::None, 0).map_err(Error::from)
    }

    /// Whether a template `name` exists.
    pub fn has(&self, name: &str) -> bool {
        self.get_ref(name).is_some()
    }

    /// The names of the templates, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .trees
            .keys()
            .chain(self.added.iter().map(|t| &t.name))
            .cloned()
            .collect();
        v.sort();
        v.dedup();
        v
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<Template>> {
        self.get_ref(name).cloned()
    }

    fn get_ref(&self, name: &str) -> Option<&Arc<Template>> {
        self.added
            .iter()
            .find(|t| t.name == name)
            .or_else(|| self.trees.get(name))
    }

    /// The function table.
    pub fn funcs(&self) -> &Funcs {
        &self.funcs
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod provenance_tests;

#[cfg(test)]
mod memo_tests;
