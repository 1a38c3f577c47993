//! `toYaml` then `fromYaml` without parsing YAML, keeping the origins of what went through.
//!
//! Library charts (bjw-s' app-template above all) rebuild their values with
//! `include "...enabledControllers" . | fromYaml`, where the included template ends in
//! `{{- $m | toYaml -}}`. Parsed afresh, the map is unknown to the [`Tracer`], so every
//! value of the objects built from it points at the `fromYaml` action instead of the values
//! line; and the parse costs a good share of a render.
//!
//! So, during one render (a [`Scope`]), `toYaml` (`mustToYaml`, `toYamlPretty`) of a map or
//! list records, under the text it printed, a *snapshot*: a deep copy of the value as
//! `fromYaml` reads that text back (see [`crate::convert`]: ints and floats become float64,
//! an integral float prints as an int and reads back as the same float but `-0` reads `0`,
//! bytes become their base64 text, nil and no value become nil; keys stay sorted), with the
//! path of each map and list that was traced. A `fromYaml` (`fromYamlArray`) of a recorded
//! text gets a fresh copy of the snapshot (templates `set` into it), each map and list of the
//! copy traced as its original was ([`Call::trace_as`]) and each scalar holding what its
//! original's container held for it ([`Call::hold`]); any other text is parsed (with the
//! origins of its bytes, see [`crate::origins`]).
//!
//! What the round trip cannot reproduce exactly is not recorded: host objects, NaN and the
//! infinities, a `<<` key (a merge key once parsed), a string printed plain that YAML reads
//! as another type (`1_000`: the printer resolves a few numbers unlike go-yaml v2), a value
//! whose last scalar is a string ending in a newline (printed as a block, it loses that
//! newline when `toYaml` drops the text's last one), nesting deeper than [`MAX_NESTING`] (the
//! parser's bound is lower than the printer's).
//!
//! Bounds (per render): at most [`MAX_ENTRIES`] texts, [`MAX_BYTES`] bytes of text and
//! [`MAX_NODES`] snapshot nodes are held; the oldest entries go first. A text over a quarter
//! of the byte or node bound is not recorded. Copies handed out are traced weakly (see
//! [`fluxgate_gotemplate::Tracer::MAX_COPIES`]).

use std::cell::RefCell;
use std::collections::VecDeque;

use foldhash::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use fluxgate_gotemplate::{Call, Held, Slot, Value};
use fluxgate_yaml::{Schema, Value as Y, go_yaml_key_order, quote_string, resolve_plain};

/// Most texts held.
pub const MAX_ENTRIES: usize = 64;
/// Most bytes of text held.
pub const MAX_BYTES: usize = 4 << 20;
/// Most snapshot nodes (scalars, maps, lists) held.
pub const MAX_NODES: usize = 1 << 18;
/// Deepest nesting recorded (the YAML parser stops at 256).
pub const MAX_NESTING: usize = 200;

/// A value as `fromYaml` reads back what `toYaml` printed of it.
#[derive(Debug)]
enum Snap {
    Nil,
    Bool(bool),
    Float(f64),
    Str(Rc<str>),
    /// The items and the path of the traced list it copies.
    List(Vec<Snap>, Option<Arc<str>>),
    /// The entries (in the map's order, its keys' bytes) and the path of the traced map it
    /// copies.
    Map(Vec<(String, Snap)>, Option<Arc<str>>),
    /// A scalar of a map or list that held an origin ([`Held`]).
    Held(Box<Snap>, Held),
}

struct Entry {
    snap: Snap,
    nodes: usize,
}

#[derive(Default)]
struct Table {
    entries: HashMap<Rc<str>, Rc<Entry>>,
    /// Texts, oldest first.
    order: VecDeque<Rc<str>>,
    bytes: usize,
    nodes: usize,
}

impl Table {
    fn remove(&mut self, text: &str) {
        if let Some(old) = self.entries.remove(text) {
            self.bytes -= text.len();
            self.nodes -= old.nodes;
            if let Some(i) = self.order.iter().position(|t| &**t == text) {
                self.order.remove(i);
            }
        }
    }

    fn insert(&mut self, text: Rc<str>, entry: Entry) {
        self.remove(&text);
        while self.entries.len() >= MAX_ENTRIES
            || self.bytes + text.len() > MAX_BYTES
            || self.nodes + entry.nodes > MAX_NODES
        {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(old) = self.entries.remove(&oldest) {
                self.bytes -= oldest.len();
                self.nodes -= old.nodes;
            }
        }
        self.bytes += text.len();
        self.nodes += entry.nodes;
        self.order.push_back(text.clone());
        self.entries.insert(text, Rc::new(entry));
    }
}

thread_local! {
    static TABLE: RefCell<Option<Table>> = const { RefCell::new(None) };
}

/// The round trip table of one render on this thread; the previous one (none, usually)
/// comes back when it drops.
pub(crate) struct Scope {
    previous: Option<Table>,
}

impl Scope {
    pub(crate) fn install() -> Scope {
        Scope {
            previous: TABLE.with(|t| t.replace(Some(Table::default()))),
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let previous = self.previous.take();
        TABLE.with(|t| *t.borrow_mut() = previous);
    }
}

/// Records what `fromYaml` would read back from `text`, which `toYaml` printed of `v`.
pub(crate) fn record(c: &Call<'_, '_>, text: &Rc<str>, v: &Value) {
    if !matches!(v, Value::Map(_) | Value::List(_)) || text.len() > MAX_BYTES / 4 {
        return;
    }
    let installed = TABLE.with(|t| t.borrow().is_some());
    if !installed {
        return;
    }
    let mut nodes = 0;
    let tracing = c.tracing();
    let look = Look {
        path_of: &|v| c.path_of(v),
        held: &|m, at, x| match at {
            _ if !tracing => None,
            At::Key(k) => c.held_key(m, k, x),
            At::Index(i) => c.held(m, &Slot::Index(i), x),
        },
    };
    let Some(snap) = snapshot(v, &look, 0, &mut nodes) else {
        return;
    };
    // `toYaml` drops the text's final newline: a block string printed last loses its own.
    if matches!(last_scalar(&snap), Some(Snap::Str(s)) if s.ends_with('\n')) {
        return;
    }
    TABLE.with(|t| {
        if let Some(table) = t.borrow_mut().as_mut() {
            table.insert(text.clone(), Entry { snap, nodes });
        }
    });
}

/// A fresh copy of what `toYaml` recorded as `text`, when it was a list (`list`) or a map,
/// each traced map and list of the copy traced by its original's path.
pub(crate) fn lookup(c: &Call<'_, '_>, text: &str, list: bool) -> Option<Value> {
    let entry = TABLE.with(|t| t.borrow().as_ref()?.entries.get(text).cloned())?;
    if !matches!(
        (&entry.snap, list),
        (Snap::Map(..), false) | (Snap::List(..), true)
    ) {
        return None;
    }
    #[cfg(test)]
    tests::HITS.with(|h| h.set(h.get() + 1));
    let tracing = c.tracing();
    Some(thaw(
        &entry.snap,
        &|v, p| {
            if tracing {
                c.trace_as(v, p);
            }
        },
        &|m, slot, x, h| c.hold(m, slot, x, Some(h)),
    ))
}

/// What a snapshot asks of the tracer: the path of a map or list, and what a map or list
/// holds for a scalar at a slot.
struct Look<'a> {
    path_of: &'a dyn Fn(&Value) -> Option<Arc<str>>,
    held: &'a dyn Fn(&Value, At<'_>, &Value) -> Option<Held>,
}

/// A slot of a map or list, borrowed ([`Slot`] owns its key).
#[derive(Clone, Copy)]
enum At<'k> {
    Key(&'k str),
    Index(usize),
}

/// `snap` of `x` at `slot` of `container`, wrapped with what the container holds for it.
fn with_held(look: &Look<'_>, container: &Value, slot: At<'_>, x: &Value, snap: Snap) -> Snap {
    if matches!(snap, Snap::List(..) | Snap::Map(..) | Snap::Nil) {
        return snap;
    }
    match (look.held)(container, slot, x) {
        Some(h) => Snap::Held(Box::new(snap), h),
        None => snap,
    }
}

fn snapshot(v: &Value, look: &Look<'_>, depth: usize, nodes: &mut usize) -> Option<Snap> {
    *nodes += 1;
    if depth > MAX_NESTING || *nodes > MAX_NODES / 4 {
        return None;
    }
    Some(match v {
        Value::Missing | Value::Nil => Snap::Nil,
        Value::Bool(b) => Snap::Bool(*b),
        #[allow(clippy::cast_precision_loss)] // float64, as JSON numbers are in Go.
        Value::Int(i) | Value::Int64(i) => Snap::Float(*i as f64),
        Value::Float(f) if !f.is_finite() => return None,
        // `toYaml` prints an integral float below 2^63 as an int: `-0` reads back `0`.
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Snap::Float(*f as i64 as f64),
        Value::Float(f) => Snap::Float(*f),
        Value::String(s) if !plain_reads_back(s) => return None,
        Value::String(s) => Snap::Str(s.clone()),
        Value::Bytes(b) => Snap::Str(Rc::from(base64_std(b))),
        Value::Object(_) => return None,
        Value::List(l) => {
            let items = l
                .borrow()
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    let snap = snapshot(x, look, depth + 1, nodes)?;
                    Some(with_held(look, v, At::Index(i), x, snap))
                })
                .collect::<Option<Vec<Snap>>>()?;
            Snap::List(items, (look.path_of)(v))
        }
        Value::Map(m) => {
            let m = m.borrow();
            let mut out = Vec::with_capacity(m.len());
            for (k, x) in m.iter() {
                if k == "<<" || !plain_reads_back(k) {
                    return None;
                }
                let snap = snapshot(x, look, depth + 1, nodes)?;
                out.push((k.clone(), with_held(look, v, At::Key(k), x, snap)));
            }
            Snap::Map(out, (look.path_of)(v))
        }
    })
}

/// Whether `s` reads back as itself once printed: a string that YAML (go-yaml v2's
/// resolution, as `fromYaml` reads) takes for a number, a bool or null must have been quoted
/// by the printer, whose resolution differs on a few (`1_000`, `0b101`).
fn plain_reads_back(s: &str) -> bool {
    let Some(&first) = s.as_bytes().first() else {
        return true;
    };
    // Only these start a non-string under go-yaml v2 besides the words the printer quotes
    // in any case (`yes`, `null`, `.inf`: see `fluxgate_yaml`'s emitter).
    if !matches!(first, b'0'..=b'9' | b'+' | b'-' | b'.') {
        return true;
    }
    matches!(resolve_plain(s, Schema::GoYamlV2), Y::String(_))
        || quote_string(s).starts_with(['"', '\''])
}

/// The scalar `toYaml` prints last (keys in go-yaml's order), if any.
fn last_scalar(s: &Snap) -> Option<&Snap> {
    match s {
        Snap::List(items, _) => last_scalar(items.last()?),
        Snap::Map(entries, _) => {
            let (_, last) = entries
                .iter()
                .max_by(|a, b| go_yaml_key_order(&a.0, &b.0))?;
            last_scalar(last)
        }
        Snap::Held(inner, _) => last_scalar(inner),
        scalar => Some(scalar),
    }
}

/// What [`thaw`] calls to trace a map or list by a path, and to say what a map or list holds
/// for the scalar at a slot.
type TraceAs<'a> = &'a dyn Fn(&Value, Arc<str>);
type Hold<'a> = &'a dyn Fn(&Value, Slot, &Value, Held);

fn thaw(s: &Snap, trace: TraceAs<'_>, hold: Hold<'_>) -> Value {
    match s {
        Snap::Nil => Value::Nil,
        Snap::Bool(b) => Value::Bool(*b),
        Snap::Float(f) => Value::Float(*f),
        Snap::Str(s) => Value::String(s.clone()),
        Snap::Held(inner, _) => thaw(inner, trace, hold),
        Snap::List(items, path) => {
            let v = Value::list(items.iter().map(|x| thaw(x, trace, hold)).collect());
            if let Some(p) = path {
                trace(&v, p.clone());
            }
            if let Value::List(l) = &v {
                for (i, (x, snap)) in l.borrow().iter().zip(items).enumerate() {
                    if let Snap::Held(_, h) = snap {
                        hold(&v, Slot::Index(i), x, h.clone());
                    }
                }
            }
            v
        }
        Snap::Map(entries, path) => {
            let v = Value::map(
                entries
                    .iter()
                    .map(|(k, x)| (k.clone(), thaw(x, trace, hold)))
                    .collect(),
            );
            if let Some(p) = path {
                trace(&v, p.clone());
            }
            if let Value::Map(m) = &v {
                for ((k, x), (_, snap)) in m.borrow().iter().zip(entries) {
                    if let Snap::Held(_, h) = snap {
                        hold(&v, Slot::Key(k.clone()), x, h.clone());
                    }
                }
            }
            v
        }
    }
}

fn base64_std(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// Whether `a` and `b` are the same data to the last bit: kinds, floats by their bits
/// (`-0` is not `0`), strings, keys, order. For the check of each round trip in debug
/// builds and for tests.
pub(crate) fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::List(x), Value::List(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| identical(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((k1, v1), (k2, v2))| k1 == k2 && identical(v1, v2))
        }
        _ => a.identical_leaf(b),
    }
}

#[cfg(test)]
mod tests;
