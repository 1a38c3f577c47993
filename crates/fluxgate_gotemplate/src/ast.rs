//! The parse tree, and each node's text as Go's `String()` prints it (errors quote it).

use std::fmt;
use std::sync::Arc;

/// A function, field or variable name. The parser gives every use of one name in a text the
/// same allocation.
pub type Name = Arc<str>;

/// A list of nodes (the body of a template or a control structure).
pub type List = Vec<Node>;

#[derive(Debug, Clone)]
pub enum Node {
    /// Literal text and the byte where it starts in the source.
    Text(Arc<str>, usize),
    Action(Pipe),
    If(Branch),
    Range(Branch),
    With(Branch),
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    Break(usize),
    Continue(usize),
}

/// The bytes of literal text in `list`, each body of a control structure counted once.
pub(crate) fn text_bytes(list: &List) -> usize {
    list.iter()
        .map(|n| match n {
            Node::Text(t, _) => t.len(),
            Node::If(b) | Node::Range(b) | Node::With(b) => {
                text_bytes(&b.list) + b.else_list.as_ref().map_or(0, text_bytes)
            }
            _ => 0,
        })
        .sum()
}

/// `if`, `range` and `with`: a pipeline, a body and an optional `else` body.
#[derive(Debug, Clone)]
pub struct Branch {
    pub pos: usize,
    pub pipe: Pipe,
    pub list: List,
    pub else_list: Option<List>,
}

/// A pipeline: optional variable declarations and commands joined by `|`.
#[derive(Debug, Clone)]
pub struct Pipe {
    pub pos: usize,
    /// `$x :=` (declare) or `$x =` (assign); two names only in `range`.
    pub decl: Vec<Name>,
    pub is_assign: bool,
    pub cmds: Vec<Command>,
}

/// One command: a function and its arguments, or a single operand.
#[derive(Debug, Clone)]
pub struct Command {
    pub pos: usize,
    pub args: Vec<Arg>,
    /// Where each argument starts.
    pub arg_pos: Vec<usize>,
}

/// An operand.
#[derive(Debug, Clone)]
pub enum Arg {
    /// `.a.b` (fields of dot).
    Field(Vec<Name>),
    /// `$x.a.b` (name with `$`, then fields).
    Variable(Name, Vec<Name>),
    Dot,
    Nil,
    Bool(bool),
    Number(Number),
    /// The decoded string and the text as written.
    Str(Arc<str>, String),
    /// A function name.
    Ident(Name),
    Pipe(Box<Pipe>),
    /// `(pipe).a.b`
    Chain(Box<Arg>, Vec<Name>),
}

/// A number constant as Go's parser reads it: what it can be as an int and as a float.
#[derive(Debug, Clone)]
pub struct Number {
    pub text: String,
    pub int: Option<i64>,
    pub float: Option<f64>,
    /// Written as a float (`1.0`, `1e3`): `interface{}` arguments get a float64.
    pub is_float_syntax: bool,
    /// A character constant (`'a'`).
    pub is_char: bool,
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            write!(
                f,
                "{} {} ",
                self.decl.join(", "),
                if self.is_assign { "=" } else { ":=" }
            )?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if let Arg::Pipe(p) = a {
                write!(f, "({p})")?;
            } else {
                write!(f, "{a}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Field(fields) => {
                for x in fields {
                    write!(f, ".{x}")?;
                }
                Ok(())
            }
            Arg::Variable(name, fields) => {
                f.write_str(name)?;
                for x in fields {
                    write!(f, ".{x}")?;
                }
                Ok(())
            }
            Arg::Dot => f.write_str("."),
            Arg::Nil => f.write_str("nil"),
            Arg::Bool(b) => write!(f, "{b}"),
            Arg::Number(n) => f.write_str(&n.text),
            Arg::Str(_, text) => f.write_str(text),
            Arg::Ident(name) => f.write_str(name),
            Arg::Pipe(p) => write!(f, "{p}"),
            Arg::Chain(inner, fields) => {
                if matches!(**inner, Arg::Pipe(_)) {
                    write!(f, "({inner})")?;
                } else {
                    write!(f, "{inner}")?;
                }
                for x in fields {
                    write!(f, ".{x}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Text(t, _) => write!(f, "{t:?}"),
            Node::Action(p) => write!(f, "{{{{{p}}}}}"),
            Node::If(b) => write!(f, "{{{{if {}}}}}", b.pipe),
            Node::Range(b) => write!(f, "{{{{range {}}}}}", b.pipe),
            Node::With(b) => write!(f, "{{{{with {}}}}}", b.pipe),
            Node::Template { name, pipe, .. } => match pipe {
                Some(p) => write!(f, "{{{{template {name:?} {p}}}}}"),
                None => write!(f, "{{{{template {name:?}}}}}"),
            },
            Node::Break(_) => f.write_str("{{break}}"),
            Node::Continue(_) => f.write_str("{{continue}}"),
        }
    }
}
