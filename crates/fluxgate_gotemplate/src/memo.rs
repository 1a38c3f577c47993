//! The memo of `include`: what a template printed for the same data, kept while nothing it
//! read has changed since.
//!
//! Libraries such as bjw-s' common (app-template) rebuild the same lists again and again:
//! every probe of every container asks for the enabled Services, each time with
//! `include ... (dict "rootContext" $)`, and each time the whole list is worked out anew.
//! Go templates have no state but their data, so an include whose data is the same and
//! whose data has not changed prints the same text with the same origins; when it changed
//! nothing its caller can see, running it again would do nothing more.
//!
//! What "the same" means here:
//! - the same parsed template, in a set with the same added templates (`tpl` adds its text)
//!   and options;
//! - data that is the same scalar, map or list, or a small map (what `dict` makes at the
//!   call) whose entries are those same scalars (with the same held origins), maps, lists
//!   and host objects;
//! - dot's origin the same, or, when the recorded run did no more with a template's origin
//!   for dot than print it, any template's origin: a run whose dot has one runs with a
//!   stand-in for it (`enter`), what it printed of the stand-in gets each caller's origin,
//!   and a stand-in about to be held by a map or list is made the real origin first, which
//!   keeps the run for that origin only (`resolve`);
//! - nothing the recorded run read changed since: no map or list made before it started
//!   that it read (its entries, or the origins the tracer holds for them: `changed`), nor
//!   the tracer's aliases of paths when it resolved one.
//!
//! A run is kept only when it changed no map or list made before it started (storing a
//! scalar equal to the one there is no change), changed no alias, drew no random number
//! ([`unrepeatable`]) and succeeded. Maps and lists are numbered as they are made
//! ([`crate::Shared`]), so "made before it started" is a comparison; a change to one
//! made during the run is the run's own business (a template's scratch `dict`). A kept run
//! that went deeper than the executor allows from where it is asked for again runs again
//! (to fail as it should).
//!
//! The memo is the thread's and is emptied when a top-level execution starts
//! ([`crate::Templates::execute`]) and when the tracer gets a root (`forget_all`); it
//! holds at most [`MAX_BYTES`] of output. The one thing a kept run does not repeat is
//! holding origins in its own scratch maps, which count towards the tracer's bound
//! ([`Tracer::MAX_COPIES`]): past that bound a render with the memo keeps more origins
//! than one without it would.

use std::cell::{Cell, RefCell};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use foldhash::HashMap;

use crate::exec::{Failure, MAX_DEPTH, Prov, Template};
use crate::trace::{Held, Origin, Span, Traced, Tracer};
use crate::value::Value;
use crate::{MissingKey, Templates};

/// The most output bytes (text and spans) the memo holds; past it, it starts over.
pub const MAX_BYTES: usize = 32 << 20;

/// Maps with more entries than this are data by identity, not by their entries.
const MAX_ENTRIES: usize = 32;

/// Whether includes are kept (on unless [`set_enabled`] said otherwise).
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Includes answered from the memo, in all threads.
static HITS: AtomicU64 = AtomicU64::new(0);

/// Turns the memo on or off for the whole process (tests compare renders with and without).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// How many includes the memo answered so far, in all threads.
pub fn hits() -> u64 {
    HITS.load(Ordering::Relaxed)
}

std::thread_local! {
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
    /// Containers numbered below this matter when they change: to a running include or
    /// to a kept one. Zero when nothing is running or kept.
    static WATCH: Cell<u64> = const { Cell::new(0) };
    /// Containers numbered below this are read from before the innermost running include
    /// started. Zero when nothing is running.
    static READS: Cell<u64> = const { Cell::new(0) };
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// The number of a new map or list.
pub(crate) fn next_id() -> u64 {
    NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    })
}

/// Whether a change to container `id` would matter to the memo.
pub(crate) fn watched(id: u64) -> bool {
    id < WATCH.with(Cell::get)
}

/// Container `id` (or an origin the tracer holds for it) changed.
pub(crate) fn changed(id: u64) {
    if watched(id) {
        MEMO.with(|m| m.borrow_mut().changed(id));
    }
}

/// The running templates did something that must happen again whenever they run (drew a
/// random number): none of the includes running now is kept.
pub fn unrepeatable() {
    MEMO.with(|m| {
        for f in &mut m.borrow_mut().frames {
            f.kept = false;
        }
    });
}

/// The tracer's aliases of paths changed: a running include that did it is not kept, and
/// every kept run that resolved a path through them goes.
pub(crate) fn aliases_changed() {
    MEMO.with(|m| m.borrow_mut().aliases_changed());
}

/// The running templates resolved a path through the tracer's aliases.
pub(crate) fn read_aliases() {
    if READS.with(Cell::get) != 0 {
        MEMO.with(|m| m.borrow_mut().read(&[], true));
    }
}

/// Container `id` is read.
pub(crate) fn read(id: u64) {
    if id < READS.with(Cell::get) {
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            if let Some(f) = m.frames.last_mut()
                && f.reads.last() != Some(&id)
            {
                f.reads.push(id);
            }
        });
    }
}

/// Something changed that any template could read (a new traced root): no running include
/// is kept and every kept one goes.
pub(crate) fn forget_all() {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        for f in &mut m.frames {
            f.kept = false;
        }
        m.clear();
    });
}

/// A top-level execution starts: what was kept for another goes, and so do the includes a
/// panic left running.
pub(crate) fn start_over() {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        // Includes still running here were left by a render that panicked (the callers catch
        // it): nothing will end them.
        m.frames.clear();
        m.deepest = 0;
        m.clear();
    });
}

/// How many includes are running on this thread (for tests).
#[cfg(test)]
pub(crate) fn running() -> usize {
    MEMO.with(|m| m.borrow().frames.len())
}

/// Execution reached call depth `depth` (a template was entered).
pub(crate) fn reached(depth: usize) {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        m.deepest = m.deepest.max(depth);
    });
}

#[derive(Default)]
struct Memo {
    /// The includes running now, outermost first (their starts only grow).
    frames: Vec<Running>,
    /// The runs kept (a slot emptied when one goes).
    kept: Vec<Option<Kept>>,
    /// Key hash -> the slots of `kept` under it.
    by_hash: HashMap<u64, Vec<usize>>,
    /// Container number -> the slots of the runs that read it.
    readers: HashMap<u64, Vec<usize>>,
    /// The slots of the runs that resolved a path through the tracer's aliases.
    alias_readers: Vec<usize>,
    /// The latest start of a kept run.
    latest: u64,
    bytes: usize,
    /// The deepest call depth reached since the innermost running include started.
    deepest: usize,
    /// Stand-ins made for dot's origin.
    stand_ins: u64,
}

struct Running {
    /// The number of the first container made during the run.
    start: u64,
    /// Whether the run can still be kept.
    kept: bool,
    /// `deepest` when the run started.
    outer_deepest: usize,
    /// The containers made before the run that it read (repeats possible).
    reads: Vec<u64>,
    /// Whether it resolved a path through the tracer's aliases.
    aliases: bool,
    /// The stand-in the run has for dot's origin, and that origin (`enter`).
    dot: Option<(Origin, Origin)>,
    /// Whether dot's origin went where it cannot be told apart (`resolve`): then the run
    /// is kept for that origin only.
    dot_used: bool,
}

struct Kept {
    key: Key,
    out: Traced,
    /// How much deeper than its own depth the run went.
    below: usize,
    /// What it read, for the runs that include it and find it kept.
    reads: Box<[u64]>,
    aliases: bool,
    /// The stand-in for dot's origin in `out` (`enter`), when any dot of a template's
    /// origin will do.
    stand_in: Option<Origin>,
}

impl Memo {
    fn changed(&mut self, id: u64) {
        for f in self.frames.iter_mut().rev() {
            if f.start <= id {
                break;
            }
            f.kept = false;
        }
        if let Some(slots) = self.readers.remove(&id) {
            for i in slots {
                self.drop_slot(i);
            }
        }
    }

    fn aliases_changed(&mut self) {
        for f in &mut self.frames {
            f.kept = false;
        }
        for i in std::mem::take(&mut self.alias_readers) {
            self.drop_slot(i);
        }
    }

    fn drop_slot(&mut self, i: usize) {
        if let Some(k) = self.kept.get_mut(i).and_then(Option::take) {
            self.bytes -= k.bytes();
        }
    }

    fn clear(&mut self) {
        self.kept.clear();
        self.by_hash.clear();
        self.readers.clear();
        self.alias_readers.clear();
        self.latest = 0;
        self.bytes = 0;
        self.watch();
    }

    /// Sets [`WATCH`] and [`READS`] from the running includes and the kept runs.
    fn watch(&self) {
        let running = self.frames.last().map_or(0, |f| f.start);
        WATCH.with(|w| w.set(running.max(self.latest)));
        READS.with(|w| w.set(running));
    }

    /// The innermost running include read `reads` (and the aliases when `aliases`).
    fn read(&mut self, reads: &[u64], aliases: bool) {
        if let Some(f) = self.frames.last_mut() {
            f.reads.extend(reads.iter().filter(|&&id| id < f.start));
            f.aliases |= aliases;
        }
    }
}

impl Kept {
    fn bytes(&self) -> usize {
        self.out.text.len() + self.out.spans.len() * std::mem::size_of::<crate::trace::Span>()
    }
}

/// What an include is kept under: the template, the set, the data and dot's origin.
pub(crate) struct Key {
    hash: u64,
    template: Arc<Template>,
    added: Vec<Arc<Template>>,
    missing: MissingKey,
    max_output: usize,
    data: Data,
    dot: Prov,
}

enum Data {
    /// A scalar, or a map or list by identity.
    Whole(Part),
    /// A small map's entries: key, value (containers by identity), the scalar's held origin.
    Entries(Vec<(String, Part, Option<Held>)>),
}

/// A value as a key holds it: a map or list by its number only (holding it would keep it,
/// and all below it, alive as long as the memo).
enum Part {
    Value(Value),
    Map(u64),
    List(u64),
}

impl Part {
    fn of(v: &Value) -> Part {
        match v {
            Value::Map(m) => Part::Map(m.id()),
            Value::List(l) => Part::List(l.id()),
            other => Part::Value(other.clone()),
        }
    }

    fn same(&self, o: &Part) -> bool {
        match (self, o) {
            (Part::Value(a), Part::Value(b)) => a.identical_leaf(b),
            (Part::Map(a), Part::Map(b)) | (Part::List(a), Part::List(b)) => a == b,
            _ => false,
        }
    }
}

impl Key {
    /// The key of including `t` of `set` with `data`, whose origin is `dot`.
    pub(crate) fn new(
        set: &Templates,
        t: &Arc<Template>,
        data: &Value,
        dot: &Prov,
        trace: Option<&Tracer>,
    ) -> Key {
        let mut h = foldhash::fast::FixedState::with_seed(0x6d65_6d6f).build_hasher();
        (Arc::as_ptr(t) as usize).hash(&mut h);
        for a in &set.added {
            (Arc::as_ptr(a) as usize).hash(&mut h);
        }
        let data = match data {
            Value::Map(m) if m.borrow().len() <= MAX_ENTRIES => {
                let m = m.borrow();
                let mut entries = Vec::with_capacity(m.len());
                for (k, v) in m.iter() {
                    k.hash(&mut h);
                    hash_value(v, &mut h);
                    let held = match trace {
                        Some(tr) if crate::trace::holdable(v) => tr.held_key(data, k, v),
                        _ => None,
                    };
                    entries.push((k.clone(), Part::of(v), held));
                }
                Data::Entries(entries)
            }
            v => {
                hash_value(v, &mut h);
                Data::Whole(Part::of(v))
            }
        };
        Key {
            hash: h.finish(),
            template: t.clone(),
            added: set.added.clone(),
            missing: set.missing_key,
            max_output: set.max_output,
            data,
            dot: dot.clone(),
        }
    }

    /// The same include; dot's origin need only be a template's when `any_dot` (what the
    /// recorded run did with it was to print it).
    fn same(&self, o: &Key, any_dot: bool) -> bool {
        self.hash == o.hash
            && Arc::ptr_eq(&self.template, &o.template)
            && self.added.len() == o.added.len()
            && self
                .added
                .iter()
                .zip(&o.added)
                .all(|(a, b)| Arc::ptr_eq(a, b))
            && self.missing == o.missing
            && self.max_output == o.max_output
            && (if any_dot {
                stands_in(&self.dot) && stands_in(&o.dot)
            } else {
                self.dot.same(&o.dot)
            })
            && match (&self.data, &o.data) {
                (Data::Whole(a), Data::Whole(b)) => a.same(b),
                (Data::Entries(a), Data::Entries(b)) => {
                    a.len() == b.len()
                        && a.iter()
                            .zip(b)
                            .all(|((k1, v1, h1), (k2, v2, h2))| k1 == k2 && v1.same(v2) && h1 == h2)
                }
                _ => false,
            }
    }
}

/// Hashes what [`same_value`] compares.
fn hash_value(v: &Value, h: &mut impl Hasher) {
    std::mem::discriminant(v).hash(h);
    match v {
        Value::Missing | Value::Nil => {}
        Value::Bool(b) => b.hash(h),
        Value::Int(i) | Value::Int64(i) => i.hash(h),
        Value::Float(f) => f.to_bits().hash(h),
        Value::String(s) => s.hash(h),
        Value::Bytes(b) => b.hash(h),
        Value::List(l) => l.id().hash(h),
        Value::Map(m) => m.id().hash(h),
        Value::Object(o) => (std::rc::Rc::as_ptr(o).cast::<()>() as usize).hash(h),
    }
}

/// What a run kept under `key` printed, when it can stand for a run at `depth` (one that
/// went deeper than [`MAX_DEPTH`] from here runs again, to fail as it should).
pub(crate) fn get(key: &Key, depth: usize) -> Option<Traced> {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        let m = &mut *m;
        let found = m.by_hash.get(&key.hash).and_then(|slots| {
            slots
                .iter()
                .filter_map(|&i| m.kept.get(i)?.as_ref())
                .find(|k| k.key.same(key, k.stand_in.is_some()))
        });
        let k = found?;
        let deepest = depth + k.below;
        if deepest > MAX_DEPTH {
            return None;
        }
        let mut out = k.out.clone();
        if let (Some(marker), Some(dot)) = (&k.stand_in, origin_of(&key.dot)) {
            replace(&mut out.spans, marker, &dot);
        }
        let (reads, aliases) = (k.reads.clone(), k.aliases);
        m.deepest = m.deepest.max(deepest);
        m.read(&reads, aliases);
        HITS.fetch_add(1, Ordering::Relaxed);
        Some(out)
    })
}

/// Whether a run with dot of origin `dot` can run with a stand-in for it: a template's
/// origin (what `dict` makes at the call), which values below dot fall back to as it is.
fn stands_in(dot: &Prov) -> bool {
    matches!(dot, Prov::At(..) | Prov::Origin(_))
}

fn origin_of(dot: &Prov) -> Option<Origin> {
    match dot {
        Prov::At(src, pos) => Some(src.origin_at(*pos)),
        Prov::Origin(o) => Some(o.clone()),
        _ => None,
    }
}

std::thread_local! {
    /// The name of the file a stand-in origin names: no template is parsed under it. A
    /// stand-in is known by this very allocation.
    static STAND_IN_FILE: Arc<str> = Arc::from("\u{0}dot of a kept include");
}

fn is_stand_in(o: &Origin) -> bool {
    matches!(o, Origin::Template { file, .. } if STAND_IN_FILE.with(|f| Arc::ptr_eq(f, file)))
}

fn replace(spans: &mut [Span], from: &Origin, to: &Origin) {
    for s in spans {
        if s.origin == *from {
            s.origin = to.clone();
        }
    }
}

/// A run of an include at `depth` with dot of origin `dot` starts: the origin to run it
/// with. A template's origin is given a stand-in, so that what the run prints of it can be
/// told apart and the run kept for any other (when tracing).
pub(crate) fn enter(depth: usize, dot: Prov, tracing: bool) -> Prov {
    let start = NEXT_ID.with(Cell::get);
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        let outer_deepest = m.deepest;
        m.deepest = depth;
        let stand_in = match origin_of(&dot) {
            Some(real) if tracing => {
                m.stand_ins += 1;
                let n = m.stand_ins;
                let marker = Origin::Template {
                    file: STAND_IN_FILE.with(Arc::clone),
                    line: (n >> 32) as u32,
                    column: n as u32,
                };
                Some((marker, real))
            }
            _ => None,
        };
        let run_dot = match &stand_in {
            Some((marker, _)) => Prov::Origin(marker.clone()),
            None => dot,
        };
        m.frames.push(Running {
            start,
            kept: true,
            outer_deepest,
            reads: Vec::new(),
            aliases: false,
            dot: stand_in,
            dot_used: false,
        });
        m.watch();
        run_dot
    })
}

/// The run of an include at `depth` ended with `out`: kept under `key` when it can be; what
/// it printed with dot's own origin for the stand-in.
pub(crate) fn leave(
    depth: usize,
    key: Key,
    out: Result<Traced, Failure>,
) -> Result<Traced, Failure> {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        let Some(mut f) = m.frames.pop() else {
            return out;
        };
        let below = m.deepest.saturating_sub(depth);
        m.deepest = m.deepest.max(f.outer_deepest);
        f.reads.sort_unstable();
        f.reads.dedup();
        m.read(&f.reads, f.aliases);
        let mut out = out;
        let raw = match (&mut out, &f.dot) {
            (Ok(out), Some((marker, real))) => {
                let raw = (f.kept && !f.dot_used).then(|| out.clone());
                replace(&mut out.spans, marker, real);
                raw
            }
            _ => None,
        };
        if let (true, Ok(printed)) = (f.kept, &out) {
            let stand_in = raw
                .is_some()
                .then(|| f.dot.take().map(|(marker, _)| marker))
                .flatten();
            let kept = Kept {
                key,
                out: raw.unwrap_or_else(|| printed.clone()),
                below,
                reads: f.reads.into_boxed_slice(),
                aliases: f.aliases,
                stand_in,
            };
            if m.bytes + kept.bytes() > MAX_BYTES {
                m.clear();
            }
            m.bytes += kept.bytes();
            let i = m.kept.len();
            m.by_hash.entry(kept.key.hash).or_default().push(i);
            for &id in &kept.reads {
                m.readers.entry(id).or_default().push(i);
            }
            if kept.aliases {
                m.alias_readers.push(i);
            }
            m.latest = m.latest.max(f.start);
            m.kept.push(Some(kept));
        }
        m.watch();
        out
    })
}

/// `held`, about to be held by a container, with dot's own origin for a stand-in: the run
/// that stands in for it is then kept for that origin only.
pub(crate) fn resolve(held: Held) -> Held {
    match held {
        Held::Origin(o) if is_stand_in(&o) => Held::Origin(resolve_origin(o)),
        Held::Pieces(spans) if spans.iter().any(|s| is_stand_in(&s.origin)) => {
            let spans = spans
                .iter()
                .map(|s| Span {
                    origin: resolve_origin(s.origin.clone()),
                    ..s.clone()
                })
                .collect();
            Held::Pieces(Arc::new(spans))
        }
        other => other,
    }
}

fn resolve_origin(mut o: Origin) -> Origin {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        // A stand-in of an inner run may stand for one of an outer run's: down to the real.
        for f in m.frames.iter_mut().rev() {
            if let Some((marker, real)) = &f.dot
                && *marker == o
            {
                f.dot_used = true;
                o = real.clone();
            }
        }
        o
    })
}
