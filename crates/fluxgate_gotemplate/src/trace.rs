//! Provenance: where each byte of an execution's output came from.
//!
//! An execution with a [`Tracer`] returns a [`Traced`] text: the output and [`Span`]s over it,
//! each with an [`Origin`]. Literal text points at its template line; a value reached from a
//! root the tracer knows (Helm's `.Values`) carries the path it was reached by, through field
//! chains, variables, `with`, `range`, `index` and the functions whose [`Trace`] says they pass a
//! value on; whatever a template computes points at the action that computed it.
//!
//! Maps and lists below a root are known by identity (their `Rc`), so `$v := .Values.m`,
//! `with .Values.m` and `(index .Values.l 0).x` find their paths; scalars carry theirs along
//! the evaluation. A function that copies a traced map or list can trace the copy by the
//! same path ([`Tracer::trace_as`]); a function result that is a traced map or list has its
//! path.
//!
//! A scalar stored in a map or list by a function that knew its origin ([`Trace::Dict`],
//! [`Trace::Set`], [`Trace::List`], [`Trace::Append`], or a host function through
//! [`Tracer::hold`]: Helm's `fromYaml` of a traced text) is held by the container's identity
//! and the slot ([`Held`]), as long as the slot holds that very scalar; reading it back (a
//! field, `index`, `get`, `dig`, `range`) gives that origin. At most [`Tracer::MAX_COPIES`]
//! entries are held; those of dead containers go as the table grows.

use std::cell::RefCell;
use std::collections::BTreeMap;

// foldhash: the engine looks maps, functions and traced values up by the thousand per render.
use foldhash::HashMap;
use std::rc::{Rc, Weak};
use std::sync::Arc;

use crate::exec::Source;
use crate::value::{MAX_DEPTH, Shared, Value};

/// Where a piece of output came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Text of a template file (literal text, or a value the template computed there): the
    /// name it was parsed under, the 1-based line and the 1-based column (in characters).
    Template {
        file: Arc<str>,
        line: u32,
        column: u32,
    },
    /// A value below a traced root: its path (`a.b`, `l[0].name`, a dot in a key as `\.`).
    /// A map or list printed whole (`toYaml`) has the path of its root.
    Value { path: Arc<str> },
}

/// A byte range of a text and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub origin: Origin,
}

/// A text with the origins of its bytes: spans sorted by start, not overlapping, on
/// character boundaries, covering what could be traced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traced {
    pub text: String,
    pub spans: Vec<Span>,
}

/// How a function's result relates to its arguments, for provenance. Functions are
/// [`Trace::Computed`] unless the table says otherwise ([`crate::Funcs::set_trace`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Trace {
    /// Computed from the arguments: the origin is the call's position in the template.
    #[default]
    Computed,
    /// The last argument, converted or encoded (`toString`, `int`, `toYaml`, `b64enc`): its
    /// origin carries on (a text with spans of its own keeps them when it is unchanged).
    Last,
    /// The last argument's text indented (`indent`, `nindent`).
    Indent,
    /// A piece of the last argument's text (`trim`, `trimSuffix`, `trunc`).
    Piece,
    /// The last argument's text quoted (`quote`, `squote`).
    Quote,
    /// One of the arguments (`default`, `coalesce`, `ternary`): the last one equal to the
    /// result.
    Choice,
    /// `index M K...`, `get M K`: the path of M extended by the keys.
    Index,
    /// `printf`/`print`: with one verb and one argument (`printf "%s" x`), that argument;
    /// with `%s`/`%v` verbs of strings only (`printf "%s:%s" repo tag`), each argument's
    /// piece its origin and the format's text the action's.
    Printf,
    /// `dig K1 K2 ... DEFAULT M`: found, the path of M extended by the keys (or what its map
    /// holds for the last key); not found, the default's origin.
    Dig,
    /// Executes a template (`include NAME DATA`): the spans of what it printed.
    Include,
    /// Executes its first argument as a template (`tpl TEXT DATA`): the spans of what it
    /// printed, its literal text attributed to where the text came from.
    Tpl,
    /// Builds a map of its pairs of arguments (`dict K V ...`): each scalar entry holds its
    /// argument's origin ([`Held`]); the map itself is computed.
    Dict,
    /// Stores its last argument in the map of its first (`set M K V`), which it returns:
    /// the entry holds the argument's origin.
    Set,
    /// Builds a list of its arguments (`list A B ...`): each scalar item holds its origin.
    List,
    /// A new list of its first argument's items and the last argument (`append L X`): the
    /// items hold the origins they held in L, the new one its argument's.
    Append,
}

/// Where a scalar held in a map or a list came from, when what stored it knew: `dict`,
/// `set`, `list`, `append` of a traced argument, `fromYaml` of a traced text, copies of those.
/// Reading the entry back (a field, `index`, `get`, `range`) or printing the container with
/// `toYaml` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Held {
    /// Printed whole, the scalar is this.
    Origin(Origin),
    /// Printed as its text is (a string), its bytes have these origins (relative to it):
    /// `printf "%s:%s" repo tag` parsed back keeps both pieces.
    Pieces(Arc<Vec<Span>>),
}

/// An entry of a map or an item of a list.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    Key(String),
    Index(usize),
}

/// The roots whose values are traced, and every map and list below them by identity.
///
/// Besides the roots, a function may name a map or list it made as a copy of a traced one
/// ([`Tracer::trace_as`], through [`crate::Call::trace_as`]): Helm's `fromYaml` of what
/// `toYaml` printed. Those are held weakly (their allocation stays while the tracer lives,
/// so that the address is not reused, but not their contents), at most
/// [`Tracer::MAX_COPIES`] of them; dead ones are dropped as the table grows.
#[derive(Default)]
pub struct Tracer {
    /// Pointer -> (the value, kept alive so that the address is not reused; its path).
    known: HashMap<usize, (Value, Arc<str>)>,
    /// Pointer -> (the copy, held weakly; its path).
    copies: RefCell<Copies>,
    /// Path -> the path its value came from ([`Tracer::alias`]).
    aliases: RefCell<HashMap<String, Arc<str>>>,
    /// What the scalars of maps and lists were stored from ([`Tracer::hold`]).
    held: RefCell<HeldTable>,
}

/// Container pointer -> (the container, held weakly; slot -> (the scalar stored, where it
/// came from)).
#[derive(Default)]
struct HeldTable {
    table: HashMap<usize, (WeakRef, Slots)>,
    /// Entries in all containers.
    count: usize,
    /// The size under which the table is not swept for dead containers.
    sweep_at: usize,
}

/// What the slots of one container hold: (the scalar stored there, where it came from).
#[derive(Default)]
struct Slots {
    keys: HashMap<String, (Value, Stored)>,
    items: HashMap<usize, (Value, Stored)>,
}

impl Slots {
    fn len(&self) -> usize {
        self.keys.len() + self.items.len()
    }

    /// Whether the slot was empty.
    fn insert(&mut self, slot: Slot, entry: (Value, Stored)) -> bool {
        match slot {
            Slot::Key(k) => self.keys.insert(k, entry).is_none(),
            Slot::Index(i) => self.items.insert(i, entry).is_none(),
        }
    }

    /// Whether the slot held something.
    fn remove(&mut self, slot: &Slot) -> bool {
        match slot {
            Slot::Key(k) => self.keys.remove(k).is_some(),
            Slot::Index(i) => self.items.remove(i).is_some(),
        }
    }
}

/// A held origin as stored: one the template computed is worked out when read.
#[derive(Clone)]
enum Stored {
    Held(Held),
    At(Arc<Source>, usize),
}

impl Stored {
    /// The same origin (one the template computed by its text and byte).
    fn same(&self, other: &Stored) -> bool {
        match (self, other) {
            (Stored::Held(a), Stored::Held(b)) => a == b,
            (Stored::At(src, at), Stored::At(src2, at2)) => Arc::ptr_eq(src, src2) && at == at2,
            _ => false,
        }
    }

    fn get(&self) -> Held {
        match self {
            Stored::Held(h) => h.clone(),
            Stored::At(src, pos) => Held::Origin(src.origin_at(*pos)),
        }
    }
}

/// Whether `v` is a scalar an entry can hold an origin for.
pub(crate) fn holdable(v: &Value) -> bool {
    matches!(
        v,
        Value::String(_) | Value::Int(_) | Value::Int64(_) | Value::Float(_) | Value::Bool(_)
    )
}

/// Whether `a` is the very scalar `b` (a string by its allocation: an equal string stored
/// later from elsewhere is not it).
fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => Rc::ptr_eq(x, y),
        (Value::Int(x), Value::Int(y)) | (Value::Int64(x), Value::Int64(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Bool(x), Value::Bool(y)) => x == y,
        _ => false,
    }
}

/// Equal scalars of one Go type (a string by its text).
pub fn equal_scalar(a: &Value, b: &Value) -> bool {
    holdable(a) && a.identical_leaf(b)
}

fn weak_of(v: &Value) -> Option<WeakRef> {
    match v {
        Value::Map(m) => Some(WeakRef::Map(Rc::downgrade(m))),
        Value::List(l) => Some(WeakRef::List(Rc::downgrade(l))),
        _ => None,
    }
}

#[derive(Default)]
struct Copies {
    table: HashMap<usize, (WeakRef, Arc<str>)>,
    /// The size under which the table is not swept for dead entries.
    sweep_at: usize,
}

enum WeakRef {
    Map(Weak<Shared<BTreeMap<String, Value>>>),
    List(Weak<Shared<Vec<Value>>>),
}

impl WeakRef {
    fn alive(&self) -> bool {
        match self {
            WeakRef::Map(w) => w.strong_count() > 0,
            WeakRef::List(w) => w.strong_count() > 0,
        }
    }
}

impl Tracer {
    /// The most copies named by [`Tracer::trace_as`] alive at once; beyond it a copy is not
    /// traced (what is printed from it points at the template that computed it).
    pub const MAX_COPIES: usize = 1 << 18;

    pub fn new() -> Tracer {
        Tracer::default()
    }

    /// Traces `root` (a map or a list) as `path` ("" for the top), and each map and list
    /// below it by its path from there. A value known already keeps its first path, so add
    /// the roots whose names should win first.
    pub fn add_root(&mut self, root: &Value, path: &str) {
        crate::memo::forget_all();
        let mut stack = vec![(root.clone(), path.to_string(), 0usize)];
        while let Some((v, p, depth)) = stack.pop() {
            let Some(id) = identity(&v) else { continue };
            if depth > MAX_DEPTH || self.known.contains_key(&id) {
                continue;
            }
            match &v {
                Value::Map(m) => {
                    for (k, x) in m.borrow().iter() {
                        if identity(x).is_some() {
                            stack.push((x.clone(), join_key(&p, k), depth + 1));
                        }
                    }
                }
                Value::List(l) => {
                    for (i, x) in l.borrow().iter().enumerate() {
                        if identity(x).is_some() {
                            stack.push((x.clone(), join_index(&p, i), depth + 1));
                        }
                    }
                }
                _ => {}
            }
            self.known.insert(id, (v, Arc::from(p)));
        }
    }

    /// The path of a traced map or list.
    pub fn path_of(&self, v: &Value) -> Option<Arc<str>> {
        let id = identity(v)?;
        if let Some((_, p)) = self.known.get(&id) {
            return Some(p.clone());
        }
        let copies = self.copies.borrow();
        if copies.table.is_empty() {
            return None;
        }
        copies.table.get(&id).map(|(_, p)| p.clone())
    }

    /// Says that the value at `path` came from `from` (a merge copied a values entry into
    /// a map of another path: bjw-s' library merges the user's values into the chart
    /// defaults'); at most [`Tracer::MAX_COPIES`] of them.
    pub fn alias(&self, path: String, from: Arc<str>) {
        let mut aliases = self.aliases.borrow_mut();
        if path != *from && (aliases.len() < Self::MAX_COPIES || aliases.contains_key(&path)) {
            // Any template may resolve any path: a new alias is news to every kept include.
            if aliases.get(&path) != Some(&from) {
                crate::memo::aliases_changed();
            }
            aliases.insert(path, from);
        }
    }

    /// Whether a merge said that some value came from another path ([`Tracer::alias`]).
    pub fn has_aliases(&self) -> bool {
        crate::memo::read_aliases();
        !self.aliases.borrow().is_empty()
    }

    /// `path`, or where its value came from when a merge said so ([`Tracer::alias`]).
    pub fn resolve_alias(&self, path: &str) -> Arc<str> {
        crate::memo::read_aliases();
        let aliases = self.aliases.borrow();
        if aliases.is_empty() {
            return Arc::from(path);
        }
        match aliases.get(path) {
            Some(from) => from.clone(),
            None => Arc::from(path),
        }
    }

    /// Says that the scalar `v`, stored at `slot` of the map or list `container`, came from
    /// `held` (`None` forgets what the slot held). At most [`Tracer::MAX_COPIES`] entries are
    /// held at once; dead containers are dropped as the table grows.
    pub fn hold(&self, container: &Value, slot: Slot, v: &Value, held: Option<Held>) {
        let held = held.map(crate::memo::resolve);
        self.put(container, slot, v, held.map(Stored::Held));
    }

    /// [`Tracer::hold`] of what a template wrote or computed at byte `pos` of `src`, its
    /// origin worked out when read.
    pub(crate) fn hold_at(
        &self,
        container: &Value,
        slot: Slot,
        v: &Value,
        src: Arc<Source>,
        pos: usize,
    ) {
        self.put(container, slot, v, Some(Stored::At(src, pos)));
    }

    fn put(&self, container: &Value, slot: Slot, v: &Value, stored: Option<Stored>) {
        let (Some(id), Some(weak)) = (identity(container), weak_of(container)) else {
            return;
        };
        if let Some(n) = number(container)
            && crate::memo::watched(n)
            && !self.holds_already(id, &slot, v, stored.as_ref())
        {
            crate::memo::changed(n);
        }
        let mut t = self.held.borrow_mut();
        let Some(stored) = stored.filter(|_| holdable(v)) else {
            if let Some((_, slots)) = t.table.get_mut(&id)
                && slots.remove(&slot)
            {
                t.count -= 1;
            }
            return;
        };
        if t.table.len() >= t.sweep_at.max(1024) {
            t.table.retain(|_, (w, _)| w.alive());
            t.count = t.table.values().map(|(_, s)| s.len()).sum();
            t.sweep_at = t.table.len() * 2;
        }
        if t.count >= Self::MAX_COPIES {
            return;
        }
        let slots = &mut t
            .table
            .entry(id)
            .or_insert_with(|| (weak, Slots::default()))
            .1;
        if slots.insert(slot, (v.clone(), stored)) {
            t.count += 1;
        }
    }

    /// Whether the slot `slot` of container `id` holds `stored` for a scalar equal to `v`
    /// already (or nothing, and `stored` is nothing): putting it again changes nothing a
    /// template can read.
    fn holds_already(&self, id: usize, slot: &Slot, v: &Value, stored: Option<&Stored>) -> bool {
        let t = self.held.borrow();
        let entry = t.table.get(&id).and_then(|(_, slots)| match slot {
            Slot::Key(k) => slots.keys.get(k),
            Slot::Index(i) => slots.items.get(i),
        });
        match (entry, stored.filter(|_| holdable(v))) {
            (None, None) => true,
            (Some((old, was)), Some(now)) => equal_scalar(old, v) && was.same(now),
            _ => false,
        }
    }

    /// What the scalar `v` at `slot` of `container` came from, if it is still the scalar
    /// that was stored there with an origin.
    pub fn held(&self, container: &Value, slot: &Slot, v: &Value) -> Option<Held> {
        match slot {
            Slot::Key(k) => self.held_key(container, k, v),
            Slot::Index(i) => self.held_index(container, *i, v),
        }
    }

    /// [`Tracer::held`] at the key `key`.
    pub fn held_key(&self, container: &Value, key: &str, v: &Value) -> Option<Held> {
        let t = self.held.borrow();
        if t.table.is_empty() {
            return None;
        }
        let (_, slots) = t.table.get(&identity(container)?)?;
        let (stored, held) = slots.keys.get(key)?;
        same_scalar(stored, v).then(|| held.get())
    }

    /// [`Tracer::held`] at the index `i`.
    pub fn held_index(&self, container: &Value, i: usize, v: &Value) -> Option<Held> {
        let t = self.held.borrow();
        if t.table.is_empty() {
            return None;
        }
        let (_, slots) = t.table.get(&identity(container)?)?;
        let (stored, held) = slots.items.get(&i)?;
        same_scalar(stored, v).then(|| held.get())
    }

    /// Whether some slot of `container` holds an origin.
    pub fn holds(&self, container: &Value) -> bool {
        let t = self.held.borrow();
        !t.table.is_empty() && identity(container).is_some_and(|id| t.table.contains_key(&id))
    }

    /// Gives `to` (a copy of `from`, or a container that took some of its entries) what
    /// `from` held for the slots that hold the same scalars.
    pub fn copy_held(&self, from: &Value, to: &Value) {
        let Some(id) = identity(from) else { return };
        let entries: Vec<(Slot, Value, Stored)> = {
            let t = self.held.borrow();
            let Some((_, slots)) = t.table.get(&id) else {
                return;
            };
            let keys = slots
                .keys
                .iter()
                .map(|(k, (v, h))| (Slot::Key(k.clone()), v.clone(), h.clone()));
            let items = slots
                .items
                .iter()
                .map(|(i, (v, h))| (Slot::Index(*i), v.clone(), h.clone()));
            keys.chain(items).collect()
        };
        for (slot, v, stored) in entries {
            let current = match (to, &slot) {
                (Value::Map(m), Slot::Key(k)) => m.borrow().get(k).cloned(),
                (Value::List(l), Slot::Index(i)) => l.borrow().get(*i).cloned(),
                _ => None,
            };
            if current.is_some_and(|c| same_scalar(&c, &v)) {
                self.put(to, slot, &v, Some(stored));
            }
        }
    }

    /// Traces the map or list `v` (a fresh copy of a value traced as `path`) as `path`,
    /// without what is below it; false when it cannot be (not a map or list, already known,
    /// or [`Tracer::MAX_COPIES`] copies alive).
    pub fn trace_as(&self, v: &Value, path: Arc<str>) -> bool {
        let (Some(id), weak) = (
            identity(v),
            match v {
                Value::Map(m) => WeakRef::Map(Rc::downgrade(m)),
                Value::List(l) => WeakRef::List(Rc::downgrade(l)),
                _ => return false,
            },
        ) else {
            return false;
        };
        if self.known.contains_key(&id) {
            return false;
        }
        let mut copies = self.copies.borrow_mut();
        if copies.table.len() >= copies.sweep_at.max(1024) {
            copies.table.retain(|_, (w, _)| w.alive());
            copies.sweep_at = copies.table.len() * 2;
        }
        if copies.table.len() >= Self::MAX_COPIES {
            return false;
        }
        copies.table.insert(id, (weak, path));
        // A path for a container made before a kept include started: the include may have
        // asked for its path (it has none) without reading it.
        if number(v).is_some_and(crate::memo::watched) {
            crate::memo::forget_all();
        }
        true
    }
}

/// The number of a map or list ([`Shared::id`]).
fn number(v: &Value) -> Option<u64> {
    match v {
        Value::Map(m) => Some(m.id()),
        Value::List(l) => Some(l.id()),
        _ => None,
    }
}

fn identity(v: &Value) -> Option<usize> {
    match v {
        Value::Map(m) => Some(Rc::as_ptr(m).cast::<()>() as usize),
        Value::List(l) => Some(Rc::as_ptr(l).cast::<()>() as usize),
        _ => None,
    }
}

/// `spans` with `top` laid over them: where a span of `top` is, it wins. Both sorted and
/// not overlapping.
pub fn overlay(spans: &[Span], top: &[Span]) -> Vec<Span> {
    let mut out = Vec::with_capacity(spans.len() + top.len() * 2);
    let mut at = 0;
    let gap = |out: &mut Vec<Span>, a: usize, b: usize| {
        if a < b {
            out.extend(slice_spans(spans, a, b).into_iter().map(|s| Span {
                start: s.start + a,
                end: s.end + a,
                origin: s.origin,
            }));
        }
    };
    for t in top {
        if t.start < at || t.start >= t.end {
            continue;
        }
        gap(&mut out, at, t.start);
        out.push(t.clone());
        at = t.end;
    }
    gap(&mut out, at, spans.last().map_or(at, |s| s.end.max(at)));
    out
}

/// `path.key`, a dot in the key written `\.`.
pub fn join_key(path: &str, key: &str) -> String {
    // Built by hand: these paths are made for every value a render reads, and `format!` was a
    // twentieth of an app-template render.
    let mut out = String::with_capacity(path.len() + key.len() + 1);
    push_key(&mut out, path, key);
    out
}

/// Appends [`join_key`] of `path` and `key` to `out` (empty).
pub(crate) fn push_key(out: &mut String, path: &str, key: &str) {
    out.push_str(path);
    extend_key(out, key);
}

/// [`join_key`] in place: `path` becomes `path.key` (a dot in `key` escaped).
pub fn extend_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    // Keys are short and seldom hold a dot: a byte loop looks, no searcher is set up.
    if !key.bytes().any(|b| b == b'.') {
        path.push_str(key);
        return;
    }
    for (i, part) in key.split('.').enumerate() {
        if i > 0 {
            path.push_str("\\.");
        }
        path.push_str(part);
    }
}

/// `path[i]`.
pub fn join_index(path: &str, i: usize) -> String {
    let mut out = String::with_capacity(path.len() + 6);
    out.push_str(path);
    out.push('[');
    out.push_str(&i.to_string());
    out.push(']');
    out
}

impl Traced {
    /// Appends `text` whose spans are `spans` (relative to `text`).
    pub fn push_traced(&mut self, text: &str, spans: &[Span]) {
        let base = self.text.len();
        self.text.push_str(text);
        for s in spans {
            let (start, end) = (s.start.min(text.len()), s.end.min(text.len()));
            if start < end {
                self.spans.push(Span {
                    start: base + start,
                    end: base + end,
                    origin: s.origin.clone(),
                });
            }
        }
    }

    /// The text of `start..end` with its spans, cut at the ends.
    #[must_use]
    pub fn slice(&self, start: usize, end: usize) -> Traced {
        Traced {
            text: self.text.get(start..end).unwrap_or_default().to_string(),
            spans: slice_spans(&self.spans, start, end),
        }
    }

    /// Removes every occurrence of `pat`, as `str::replace(pat, "")` does, moving the spans
    /// with the text around it.
    pub fn remove_all(&mut self, pat: &str) {
        if pat.is_empty() || !self.text.contains(pat) {
            return;
        }
        if self.spans.is_empty() {
            self.text = self.text.replace(pat, "");
            return;
        }
        // The removed ranges in order. Span ends and starts come in increasing order, so one
        // cursor over the cuts moves each left by what was removed before it.
        let cuts: Vec<(usize, usize)> = self
            .text
            .match_indices(pat)
            .map(|(i, m)| (i, i + m.len()))
            .collect();
        let mut next = 0;
        let mut removed = 0;
        let mut map = |pos: usize| {
            while let Some(&(a, b)) = cuts.get(next) {
                if b > pos {
                    return pos - removed - pos.saturating_sub(a);
                }
                removed += b - a;
                next += 1;
            }
            pos - removed
        };
        let mut spans = Vec::with_capacity(self.spans.len());
        for s in std::mem::take(&mut self.spans) {
            let (start, end) = (map(s.start), map(s.end));
            if start < end {
                spans.push(Span {
                    start,
                    end,
                    origin: s.origin,
                });
            }
        }
        self.spans = spans;
        self.text = self.text.replace(pat, "");
    }
}

/// The spans of `start..end`, cut at the ends and moved to start at 0.
pub fn slice_spans(spans: &[Span], start: usize, end: usize) -> Vec<Span> {
    let first = spans.partition_point(|s| s.end <= start);
    spans[first..]
        .iter()
        .take_while(|s| s.start < end)
        .filter_map(|s| {
            let (a, b) = (s.start.max(start), s.end.min(end));
            (a < b).then(|| Span {
                start: a - start,
                end: b - start,
                origin: s.origin.clone(),
            })
        })
        .collect()
}

/// The spans of `output`, an edit of `input` (whose spans are `spans`) by a function of
/// the given trace; text the function added gets `added`.
pub(crate) fn map_edit(
    trace: Trace,
    input: &str,
    spans: &[Span],
    output: &str,
    added: &Origin,
) -> Vec<Span> {
    if input == output {
        return spans.to_vec();
    }
    let mapped = match trace {
        Trace::Indent => indent_map(input, spans, output, added),
        Trace::Piece => piece_map(input, spans, output),
        Trace::Quote => quote_map(input, spans, output, added),
        _ => None,
    };
    merge(mapped.unwrap_or_else(|| align(input, spans, output, added)))
}

/// Joins neighbouring spans of one origin.
fn merge(spans: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(last) if last.end == s.start && last.origin == s.origin => last.end = s.end,
            _ => out.push(s),
        }
    }
    out
}

/// `indent`/`nindent`: the output is an optional newline, then the input with `pad` before
/// each line.
fn indent_map(input: &str, spans: &[Span], output: &str, added: &Origin) -> Option<Vec<Span>> {
    // `nindent` puts a newline first, `indent` does not; an input that starts with one
    // leaves both possible.
    indent_map_lead(
        input,
        spans,
        output,
        added,
        usize::from(output.starts_with('\n')),
    )
    .or_else(|| indent_map_lead(input, spans, output, added, 0))
}

fn indent_map_lead(
    input: &str,
    spans: &[Span],
    output: &str,
    added: &Origin,
    lead: usize,
) -> Option<Vec<Span>> {
    let starts = line_starts(input);
    let extra = output.len().checked_sub(input.len() + lead)?;
    if extra % starts.len() != 0 {
        return None;
    }
    let pad = extra / starts.len();
    // The output must be the lead, then each input line (an empty last one too) after `pad`
    // spaces: compared piece by piece, nothing rebuilt.
    let (ib, ob) = (input.as_bytes(), output.as_bytes());
    if lead == 1 && ob.first() != Some(&b'\n') {
        return None;
    }
    let mut at = lead;
    for (n, &ls) in starts.iter().enumerate() {
        let le = starts.get(n + 1).copied().unwrap_or(input.len());
        if !ob.get(at..at + pad)?.iter().all(|&b| b == b' ') {
            return None;
        }
        at += pad;
        if ob.get(at..at + (le - ls))? != &ib[ls..le] {
            return None;
        }
        at += le - ls;
    }
    // Each input line moves right by the pads before it; the pads are the function's. The
    // spans are sorted: one pass cuts them at the line breaks.
    let mut out = Vec::new();
    let mut shift = lead;
    let mut cursor = 0;
    if lead == 1 {
        out.push(added_span(0, 1, added));
        cursor = 1;
    }
    let mut first = 0;
    for (n, &ls) in starts.iter().enumerate() {
        let le = starts.get(n + 1).copied().unwrap_or(input.len());
        shift += pad;
        if pad > 0 {
            out.push(added_span(cursor, cursor + pad, added));
        }
        while spans.get(first).is_some_and(|s| s.end <= ls) {
            first += 1;
        }
        for s in spans[first.min(spans.len())..]
            .iter()
            .take_while(|s| s.start < le)
        {
            let (a, b) = (s.start.max(ls), s.end.min(le));
            if a < b {
                out.push(Span {
                    start: a + shift,
                    end: b + shift,
                    origin: s.origin.clone(),
                });
            }
        }
        cursor = le + shift;
    }
    Some(out)
}

/// Where each line of `text` starts: 0, then one past each line feed (found with memchr's
/// vectorised search).
pub(crate) fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
        .collect()
}

/// The output is a substring of the input: the spans of that substring.
fn piece_map(input: &str, spans: &[Span], output: &str) -> Option<Vec<Span>> {
    let at = if input.starts_with(output) {
        0
    } else if input.ends_with(output) {
        input.len() - output.len()
    } else {
        input.find(output)?
    };
    Some(slice_spans(spans, at, at + output.len()))
}

/// The output is the input within one quote character on each side.
fn quote_map(input: &str, spans: &[Span], output: &str, added: &Origin) -> Option<Vec<Span>> {
    let q = output.chars().next()?;
    let inner = output.strip_prefix(q)?.strip_suffix(q)?;
    if inner != input {
        return None;
    }
    let mut out = vec![added_span(0, 1, added)];
    for s in spans {
        out.push(Span {
            start: s.start + 1,
            end: s.end + 1,
            origin: s.origin.clone(),
        });
    }
    out.push(added_span(output.len() - 1, output.len(), added));
    Some(out)
}

/// Character by character, when the function only inserted text (the output holds the
/// input in order) or only deleted some (the input holds the output in order): characters
/// of the input keep their origin, inserted ones are the function's. Otherwise the whole
/// output is the function's.
pub(crate) fn align(input: &str, spans: &[Span], output: &str, added: &Origin) -> Vec<Span> {
    let origin_at = |pos: usize| -> &Origin {
        let i = spans.partition_point(|s| s.end <= pos);
        spans
            .get(i)
            .filter(|s| s.start <= pos)
            .map_or(added, |s| &s.origin)
    };
    let mut out: Vec<Span> = Vec::new();
    let mut push = |start: usize, end: usize, origin: &Origin| match out.last_mut() {
        Some(last) if last.end == start && &last.origin == origin => last.end = end,
        _ => out.push(Span {
            start,
            end,
            origin: origin.clone(),
        }),
    };
    if output.len() >= input.len() {
        // Insertions: each output character is the next input one, or inserted.
        let mut inp = input.char_indices().peekable();
        let mut plan = Vec::new();
        for (j, c) in output.char_indices() {
            let from = inp.next_if(|&(_, d)| d == c).map(|(i, _)| i);
            plan.push((j, j + c.len_utf8(), from));
        }
        if inp.peek().is_none() {
            for (start, end, from) in plan {
                push(start, end, from.map_or(added, origin_at));
            }
            return out;
        }
    } else {
        // Deletions: each input character is the next output one, or deleted.
        let mut outp = output.char_indices().peekable();
        let mut plan = Vec::new();
        for (i, c) in input.char_indices() {
            if let Some((j, _)) = outp.next_if(|&(_, d)| d == c) {
                plan.push((j, j + c.len_utf8(), i));
            }
        }
        if outp.peek().is_none() {
            for (start, end, from) in plan {
                push(start, end, origin_at(from));
            }
            return out;
        }
    }
    out.clear();
    if !output.is_empty() {
        out.push(Span {
            start: 0,
            end: output.len(),
            origin: added.clone(),
        });
    }
    out
}

fn added_span(start: usize, end: usize, origin: &Origin) -> Span {
    Span {
        start,
        end,
        origin: origin.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values path notation the model matches against Flux's (which uses these very
    /// functions): keys joined with `.`, a dot inside a key escaped, list items in brackets.
    #[test]
    fn paths_join_keys_and_indices() {
        assert_eq!(join_key("", "a"), "a");
        assert_eq!(join_key("a", "b"), "a.b");
        assert_eq!(
            join_key("a", "app.kubernetes.io/name"),
            "a.app\\.kubernetes\\.io/name"
        );
        assert_eq!(join_key("", ".x."), "\\.x\\.");
        assert_eq!(join_index("a.b", 0), "a.b[0]");
        assert_eq!(join_index("", 12), "[12]");
        assert_eq!(join_key(&join_index("l", 3), "k"), "l[3].k");
    }

    fn v(path: &str) -> Origin {
        Origin::Value {
            path: Arc::from(path),
        }
    }

    fn t(line: u32) -> Origin {
        Origin::Template {
            file: Arc::from("f"),
            line,
            column: 1,
        }
    }

    #[test]
    fn nindent_moves_each_line() {
        let spans = vec![
            Span {
                start: 0,
                end: 4,
                origin: v("a"),
            },
            Span {
                start: 4,
                end: 8,
                origin: v("b"),
            },
        ];
        let out = map_edit(Trace::Indent, "a: 1\nb:2", &spans, "\n  a: 1\n  b:2", &t(9));
        let text = "\n  a: 1\n  b:2";
        let got: Vec<(&str, &Origin)> = out
            .iter()
            .map(|s| (&text[s.start..s.end], &s.origin))
            .collect();
        assert_eq!(
            got,
            vec![
                ("\n  ", &t(9)),
                ("a: 1", &v("a")),
                ("\n", &v("b")),
                ("  ", &t(9)),
                ("b:2", &v("b"))
            ]
        );
    }

    #[test]
    fn nindent_zero_and_a_leading_newline() {
        let spans = vec![Span {
            start: 0,
            end: 6,
            origin: v("a"),
        }];
        let out = map_edit(Trace::Indent, "kind: ", &spans, "\nkind: ", &t(3));
        assert_eq!((out[0].end, &out[0].origin), (1, &t(3)));
        assert_eq!((out[1].start, out[1].end, &out[1].origin), (1, 7, &v("a")));
        let out = map_edit(Trace::Indent, "\nx", &spans[..0], "\n  \n  x", &t(3));
        let got: Vec<(usize, usize)> = out.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(got, vec![(0, 3), (4, 6)]);
        // Neither an insertion nor a deletion: the function's.
        let out = map_edit(Trace::Last, "abc", &spans, "xyz", &t(3));
        assert_eq!(
            out,
            vec![Span {
                start: 0,
                end: 3,
                origin: t(3)
            }]
        );
        let out = map_edit(Trace::Last, "a<no value>b", &spans, "ab", &t(3));
        assert_eq!((out[0].start, out[0].end, &out[0].origin), (0, 1, &v("a")));
    }

    #[test]
    fn removal_moves_spans() {
        let mut tr = Traced {
            text: "a<no value>b".into(),
            spans: vec![
                Span {
                    start: 0,
                    end: 1,
                    origin: v("a"),
                },
                Span {
                    start: 1,
                    end: 11,
                    origin: v("x"),
                },
                Span {
                    start: 11,
                    end: 12,
                    origin: v("b"),
                },
            ],
        };
        tr.remove_all("<no value>");
        assert_eq!(tr.text, "ab");
        assert_eq!(tr.spans.len(), 2);
        assert_eq!((tr.spans[1].start, tr.spans[1].end), (1, 2));
    }

    #[test]
    fn roots_name_maps_by_identity() {
        let inner = Value::empty_map();
        let list = Value::list(vec![inner.clone()]);
        let root = Value::map([("a.b".to_string(), list)].into_iter().collect());
        let mut tr = Tracer::new();
        tr.add_root(&root, "");
        assert_eq!(tr.path_of(&inner).as_deref(), Some("a\\.b[0]"));
        assert_eq!(tr.path_of(&root).as_deref(), Some(""));
    }
}
