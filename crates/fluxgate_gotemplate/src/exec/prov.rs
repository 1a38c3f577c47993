//! The origin each value carries through an execution with a tracer (nothing is computed
//! without one): how field chains, `range` items and function results get theirs, and how a
//! printed value becomes spans of the output.

use std::sync::Arc;

use super::{Source, State};
use crate::trace::{
    Held, Origin, Slot, Span, Trace, holdable, join_index, join_key, map_edit, overlay, push_key,
};
use crate::value::Value;

/// Where a value came from.
#[derive(Clone, Debug, Default)]
pub(crate) enum Prov {
    /// Nothing known (data that is not traced, a host object's field): printed, it is the
    /// printing action's.
    #[default]
    None,
    /// Reached from a traced root by this path.
    Path(Arc<str>),
    /// Written or computed at this byte of a template's text.
    At(Arc<Source>, usize),
    /// A string whose bytes have origins of their own (what `include` printed).
    Text(Arc<Vec<Span>>),
    /// A scalar a map or list held with this origin ([`Held::Origin`] of a template).
    Origin(Origin),
}

impl Prov {
    /// The same origin (a template position by its parsed text and byte).
    pub(crate) fn same(&self, other: &Prov) -> bool {
        match (self, other) {
            (Prov::None, Prov::None) => true,
            (Prov::Path(a), Prov::Path(b)) => a == b,
            (Prov::At(src, at), Prov::At(src2, at2)) => Arc::ptr_eq(src, src2) && at == at2,
            (Prov::Text(a), Prov::Text(b)) => Arc::ptr_eq(a, b) || a == b,
            (Prov::Origin(a), Prov::Origin(b)) => a == b,
            _ => false,
        }
    }

    /// The origin a scalar held as `held` has.
    fn of_held(held: Held) -> Prov {
        match held {
            Held::Origin(Origin::Value { path }) => Prov::Path(path),
            Held::Origin(o) => Prov::Origin(o),
            Held::Pieces(spans) => Prov::Text(spans),
        }
    }
}

/// A value and its origin.
pub(crate) type TV = (Value, Prov);

impl State<'_> {
    /// The origin of something the current template writes or computes at `pos`.
    pub(super) fn at(&self, pos: usize) -> Prov {
        if self.trace.is_some() {
            Prov::At(self.tmpl.src.clone(), pos)
        } else {
            Prov::None
        }
    }

    /// The path of `v` when it is a traced map or list.
    pub(super) fn known(&self, v: &Value) -> Prov {
        match self.trace.and_then(|t| t.path_of(v)) {
            Some(p) => Prov::Path(p),
            None => Prov::None,
        }
    }

    /// A path built by joining keys, or where a merge said its value came from.
    fn joined(&self, path: &str) -> Arc<str> {
        match self.trace {
            Some(t) => t.resolve_alias(path),
            None => Arc::from(path),
        }
    }

    /// [`State::joined`] of `path` and `key` ([`join_key`]), built in a buffer that is kept:
    /// a path is joined for every value a render reads, and the result is the only allocation.
    fn joined_key(&self, path: &str, key: &str) -> Arc<str> {
        std::thread_local! {
            static JOINED: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        JOINED.with_borrow_mut(|buf| {
            buf.clear();
            push_key(buf, path, key);
            self.joined(buf)
        })
    }

    /// What `container` holds for the scalar `v` at `slot` ([`crate::Tracer::held`]).
    fn held_prov(&self, container: &Value, slot: &Slot, v: &Value) -> Option<Prov> {
        if !holdable(v) {
            return None;
        }
        self.trace?.held(container, slot, v).map(Prov::of_held)
    }

    /// [`State::held_prov`] at a key.
    fn held_key_prov(&self, container: &Value, key: &str, v: &Value) -> Option<Prov> {
        if !holdable(v) {
            return None;
        }
        self.trace?.held_key(container, key, v).map(Prov::of_held)
    }

    /// The origin of `v`, the entry `key` of `parent`, a value of origin `prev`.
    pub(super) fn step_prov(&self, prev: &Prov, parent: &Value, key: &str, v: &Value) -> Prov {
        if let Some(p) = self.trace.and_then(|t| t.path_of(v)) {
            return Prov::Path(p);
        }
        if let Some(p) = self.held_key_prov(parent, key, v) {
            return p;
        }
        match prev {
            Prov::Path(p) => Prov::Path(self.joined_key(p, key)),
            Prov::At(..) | Prov::Origin(_) => prev.clone(),
            Prov::None | Prov::Text(_) => Prov::None,
        }
    }

    /// What a function of trace `trace` stored, called with `argv` of origins `provs`,
    /// returning `result`: the origins its map or list holds ([`crate::Tracer::hold`]).
    fn hold_stored(
        &self,
        trace: Trace,
        argv: &[Value],
        provs: &[Prov],
        result: &Value,
        pos: usize,
    ) {
        let Some(t) = self.trace else { return };
        let hold = |container: &Value, slot: Slot, i: usize| match &provs[i] {
            Prov::At(src, at) => t.hold_at(container, slot, &argv[i], src.clone(), *at),
            prov => t.hold(container, slot, &argv[i], self.held_of(&argv[i], prov, pos)),
        };
        match trace {
            Trace::Dict => {
                for i in (0..argv.len().saturating_sub(1)).step_by(2) {
                    if let (Value::String(k), true) = (&argv[i], holdable(&argv[i + 1])) {
                        hold(result, Slot::Key(k.to_string()), i + 1);
                    }
                }
            }
            Trace::Set => {
                if let [m, Value::String(k), _] = argv {
                    hold(m, Slot::Key(k.to_string()), 2);
                }
            }
            Trace::List => {
                for (i, v) in argv.iter().enumerate() {
                    if holdable(v) {
                        hold(result, Slot::Index(i), i);
                    }
                }
            }
            Trace::Append => {
                if let ([l, x], Value::List(items)) = (argv, result) {
                    t.copy_held(l, result);
                    let n = items.borrow().len();
                    if n > 0 && holdable(x) {
                        hold(result, Slot::Index(n - 1), 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// What a scalar `v` of origin `prov`, stored by the action at `pos`, holds.
    fn held_of(&self, v: &Value, prov: &Prov, pos: usize) -> Option<Held> {
        if !holdable(v) {
            return None;
        }
        match prov {
            Prov::None => None,
            Prov::Path(p) => Some(Held::Origin(Origin::Value { path: p.clone() })),
            Prov::At(src, at) => Some(Held::Origin(src.origin_at(*at))),
            Prov::Origin(o) => Some(Held::Origin(o.clone())),
            Prov::Text(_) => {
                let Value::String(text) = v else {
                    return None;
                };
                let spans = self.spans_of(text, prov, pos);
                match spans.as_slice() {
                    [one] if one.start == 0 && one.end == text.len() => {
                        Some(Held::Origin(one.origin.clone()))
                    }
                    [] => None,
                    _ => Some(Held::Pieces(Arc::new(spans))),
                }
            }
        }
    }

    /// The origin of item `i` (`key`, `elem`) of `container`, of origin `prev`, in `range`.
    pub(super) fn item_prov(
        &self,
        prev: &Prov,
        container: &Value,
        i: usize,
        key: &Value,
        elem: &Value,
    ) -> Prov {
        if let Some(p) = self.trace.and_then(|t| t.path_of(elem)) {
            return Prov::Path(p);
        }
        let held = match (container, key) {
            (Value::List(_), _) => self.held_prov(container, &Slot::Index(i), elem),
            (Value::Map(_), Value::String(k)) => self.held_key_prov(container, k, elem),
            _ => None,
        };
        if let Some(p) = held {
            return p;
        }
        match (prev, container, key) {
            (Prov::Path(p), Value::List(_), _) => Prov::Path(Arc::from(join_index(p, i))),
            (Prov::Path(p), Value::Map(_), Value::String(k)) => Prov::Path(self.joined_key(p, k)),
            (Prov::At(..) | Prov::Origin(_), Value::List(_) | Value::Map(_), _) => prev.clone(),
            _ => Prov::None,
        }
    }

    /// The origin a value of origin `prov` has when printed by the action at `pos`.
    pub(super) fn resolve(&self, prov: &Prov, pos: usize) -> Origin {
        match prov {
            Prov::Path(p) => Origin::Value { path: p.clone() },
            Prov::At(src, at) => src.origin_at(*at),
            Prov::Origin(o) => o.clone(),
            Prov::None | Prov::Text(_) => self.tmpl.src.origin_at(pos),
        }
    }

    /// The spans of `text` (a value of origin `prov` printed by the action at `pos`),
    /// relative to `text`.
    pub(super) fn spans_of(&self, text: &str, prov: &Prov, pos: usize) -> Vec<Span> {
        if text.is_empty() {
            return Vec::new();
        }
        if let Some(spans) = own_spans(text, prov) {
            return spans.to_vec();
        }
        vec![Span {
            start: 0,
            end: text.len(),
            origin: self.resolve(prov, pos),
        }]
    }

    /// Records the spans of `text`, just written at `base` ([`State::spans_of`], without a
    /// list of its own).
    pub(super) fn record(&mut self, base: usize, text: &str, prov: &Prov, pos: usize) {
        if text.is_empty() {
            return;
        }
        if let Some(spans) = own_spans(text, prov) {
            self.spans.extend(spans.iter().map(|s| Span {
                start: base + s.start,
                end: base + s.end,
                origin: s.origin.clone(),
            }));
            return;
        }
        let origin = self.resolve(prov, pos);
        self.spans.push(Span {
            start: base,
            end: base + text.len(),
            origin,
        });
    }

    /// The origin of what a function of trace `trace` returned, called at `pos` with
    /// `argv` of origins `provs`.
    pub(super) fn result_prov(
        &mut self,
        trace: Trace,
        argv: &[Value],
        provs: &[Prov],
        result: &Value,
        pos: usize,
    ) -> Prov {
        let prov = self.result_prov_of(trace, argv, provs, result, pos);
        // A function that said where the pieces of its text came from (`toYaml` of a map
        // holding traced scalars): those, over what the result is otherwise.
        match (self.pending.result.take(), result) {
            (Some(top), Value::String(text)) => {
                let base = self.spans_of(text, &prov, pos);
                Prov::Text(Arc::new(overlay(&base, &top)))
            }
            _ => prov,
        }
    }

    fn result_prov_of(
        &mut self,
        trace: Trace,
        argv: &[Value],
        provs: &[Prov],
        result: &Value,
        pos: usize,
    ) -> Prov {
        let last = argv.len().wrapping_sub(1);
        match trace {
            Trace::Dict | Trace::Set | Trace::List | Trace::Append => {
                self.hold_stored(trace, argv, provs, result, pos);
                match self.trace.and_then(|t| t.path_of(result)) {
                    Some(p) => Prov::Path(p),
                    None => self.at(pos),
                }
            }
            // A traced map or list a function returned (`fromYaml` of a traced map's
            // `toYaml`, `first` of a traced list) is reached by its path.
            Trace::Computed => match self.trace.and_then(|t| t.path_of(result)) {
                Some(p) => Prov::Path(p),
                None => self.at(pos),
            },
            Trace::Last | Trace::Indent | Trace::Piece | Trace::Quote => {
                self.pass(trace, argv, provs, last, result, pos)
            }
            Trace::Choice => match argv.iter().rposition(|a| a == result) {
                Some(i) => self.pass(Trace::Last, argv, provs, i, result, pos),
                None => self.at(pos),
            },
            Trace::Printf => {
                let single = match argv {
                    [_] => Some(0),
                    [Value::String(f), _] if is_single_verb(f) => Some(1),
                    _ => None,
                };
                match single {
                    Some(i) => self.pass(Trace::Last, argv, provs, i, result, pos),
                    None => self
                        .printf_pieces(argv, provs, result, pos)
                        .unwrap_or_else(|| self.at(pos)),
                }
            }
            Trace::Index => self.index_prov(argv, provs, result, pos),
            Trace::Dig => self.dig_prov(argv, provs, result, pos),
            Trace::Include | Trace::Tpl => {
                let out = self.pending.output.take();
                match (out, result) {
                    // What was printed, returned as it is: its spans as they are.
                    (Some(out), Value::String(s)) if out.text == **s => {
                        Prov::Text(Arc::new(out.spans))
                    }
                    (Some(out), Value::String(s)) => {
                        let added = self.tmpl.src.origin_at(pos);
                        Prov::Text(Arc::new(map_edit(
                            Trace::Piece,
                            &out.text,
                            &out.spans,
                            s,
                            &added,
                        )))
                    }
                    _ => self.at(pos),
                }
            }
        }
    }

    /// The origin of a result that is argument `i` passed on (maybe edited as `trace` says).
    fn pass(
        &self,
        trace: Trace,
        argv: &[Value],
        provs: &[Prov],
        i: usize,
        result: &Value,
        pos: usize,
    ) -> Prov {
        let Some(p) = provs.get(i) else {
            return self.at(pos);
        };
        match p {
            Prov::Text(spans) => match (argv.get(i), result) {
                (Some(Value::String(input)), Value::String(out)) => {
                    let added = self.tmpl.src.origin_at(pos);
                    Prov::Text(Arc::new(map_edit(trace, input, spans, out, &added)))
                }
                _ => self.at(pos),
            },
            other => other.clone(),
        }
    }

    /// `printf` of a format whose verbs are all `%s`/`%v` of strings (`printf "%s:%s" repo
    /// tag`): each argument's piece keeps its origin, the format's text is the action's.
    fn printf_pieces(
        &self,
        argv: &[Value],
        provs: &[Prov],
        result: &Value,
        pos: usize,
    ) -> Option<Prov> {
        let (Some(Value::String(format)), Value::String(out)) = (argv.first(), result) else {
            return None;
        };
        let added = self.tmpl.src.origin_at(pos);
        let mut text = String::with_capacity(out.len());
        let mut spans = Vec::new();
        let mut literal_from = 0;
        let mut next_arg = 1;
        let mut chars = format.char_indices();
        let flush = |text: &mut String, spans: &mut Vec<Span>, lit: &str| {
            if !lit.is_empty() {
                spans.push(Span {
                    start: text.len(),
                    end: text.len() + lit.len(),
                    origin: added.clone(),
                });
                text.push_str(lit);
            }
        };
        while let Some((i, c)) = chars.next() {
            if c != '%' {
                continue;
            }
            flush(&mut text, &mut spans, &format[literal_from..i]);
            match chars.next() {
                Some((j, '%')) => literal_from = j,
                Some((j, 's' | 'v')) => {
                    let Value::String(arg) = argv.get(next_arg)? else {
                        return None;
                    };
                    let base = text.len();
                    for sp in self.spans_of(arg, provs.get(next_arg)?, pos) {
                        spans.push(Span {
                            start: base + sp.start,
                            end: base + sp.end,
                            origin: sp.origin,
                        });
                    }
                    text.push_str(arg);
                    next_arg += 1;
                    literal_from = j + 1;
                }
                _ => return None,
            }
        }
        flush(&mut text, &mut spans, &format[literal_from..]);
        (next_arg == argv.len() && text == **out).then(|| Prov::Text(Arc::new(spans)))
    }

    fn dig_prov(&self, argv: &[Value], provs: &[Prov], result: &Value, pos: usize) -> Prov {
        let n = argv.len();
        if n < 3 {
            return self.at(pos);
        }
        let mut prov = match provs.get(n - 1) {
            None | Some(Prov::None) => self.known(&argv[n - 1]),
            Some(p) => p.clone(),
        };
        let mut cur = argv[n - 1].clone();
        for k in &argv[..n - 2] {
            let next = match (k, &cur) {
                (Value::String(k), Value::Map(m)) => m.borrow().get(&**k).cloned(),
                _ => None,
            };
            let (Some(next), Value::String(k)) = (next, k) else {
                // Not found: the default.
                return self.pass(Trace::Last, argv, provs, n - 2, result, pos);
            };
            prov = self.step_prov(&prov, &cur, k, &next);
            cur = next;
        }
        match prov {
            Prov::None => self.at(pos),
            p => p,
        }
    }

    fn index_prov(&self, argv: &[Value], provs: &[Prov], result: &Value, pos: usize) -> Prov {
        if let Some(p) = self.trace.and_then(|t| t.path_of(result)) {
            return Prov::Path(p);
        }
        let held = match argv {
            [m, Value::String(k)] => self.held_key_prov(m, k, result),
            [m, Value::Int(i) | Value::Int64(i)] => usize::try_from(*i)
                .ok()
                .and_then(|i| self.held_prov(m, &Slot::Index(i), result)),
            _ => None,
        };
        if let Some(p) = held {
            return p;
        }
        match provs.first() {
            Some(Prov::Path(base)) => {
                let mut path = base.to_string();
                for k in argv.iter().skip(1) {
                    path = match k {
                        Value::String(s) => join_key(&path, s),
                        Value::Int(i) | Value::Int64(i) => {
                            join_index(&path, usize::try_from(*i).unwrap_or(0))
                        }
                        _ => return self.at(pos),
                    };
                }
                Prov::Path(self.joined(&path))
            }
            Some(at @ (Prov::At(..) | Prov::Origin(_))) => at.clone(),
            _ => self.at(pos),
        }
    }
}

/// A format with one verb and nothing else (`%s`, `%v`, `%d`, `%q`).
fn is_single_verb(f: &str) -> bool {
    let b = f.as_bytes();
    b.len() == 2 && b[0] == b'%' && b[1].is_ascii_alphabetic()
}

/// The spans `prov` gives `text` when it holds its own and every one of them lies inside
/// the text (otherwise the text is one span of the action's origin).
fn own_spans<'p>(text: &str, prov: &'p Prov) -> Option<&'p [Span]> {
    match prov {
        Prov::Text(spans) if spans.iter().all(|s| s.start < s.end && s.end <= text.len()) => {
            Some(spans)
        }
        _ => None,
    }
}
