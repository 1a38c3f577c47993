//! The origin each value carries through an execution with a tracer (nothing is computed
//! without one): how field chains, `range` items and function results get theirs, and how a
//! printed value becomes spans of the output.

use std::sync::Arc;

use super::{Source, State};
use crate::trace::{Origin, Span, Trace, join_index, join_key, map_edit};
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
    fn joined(&self, path: String) -> Arc<str> {
        match self.trace {
            Some(t) => t.resolve_alias(path),
            None => Arc::from(path),
        }
    }

    /// The origin of `v`, the entry `key` of a value of origin `prev`.
    pub(super) fn step_prov(&self, prev: &Prov, key: &str, v: &Value) -> Prov {
        if let Some(p) = self.trace.and_then(|t| t.path_of(v)) {
            return Prov::Path(p);
        }
        match prev {
            Prov::Path(p) => Prov::Path(self.joined(join_key(p, key))),
            Prov::At(..) => prev.clone(),
            Prov::None | Prov::Text(_) => Prov::None,
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
        match (prev, container, key) {
            (Prov::Path(p), Value::List(_), _) => Prov::Path(Arc::from(join_index(p, i))),
            (Prov::Path(p), Value::Map(_), Value::String(k)) => {
                Prov::Path(self.joined(join_key(p, k)))
            }
            (Prov::At(..), Value::List(_) | Value::Map(_), _) => prev.clone(),
            _ => Prov::None,
        }
    }

    /// The origin a value of origin `prov` has when printed by the action at `pos`.
    pub(super) fn resolve(&self, prov: &Prov, pos: usize) -> Origin {
        match prov {
            Prov::Path(p) => Origin::Value { path: p.clone() },
            Prov::At(src, at) => src.origin_at(*at),
            Prov::None | Prov::Text(_) => self.tmpl.src.origin_at(pos),
        }
    }

    /// The spans of `text` (a value of origin `prov` printed by the action at `pos`),
    /// relative to `text`.
    pub(super) fn spans_of(&self, text: &str, prov: &Prov, pos: usize) -> Vec<Span> {
        if text.is_empty() {
            return Vec::new();
        }
        if let Prov::Text(spans) = prov {
            let mut out: Vec<Span> = spans
                .iter()
                .filter(|s| s.start < s.end && s.end <= text.len())
                .cloned()
                .collect();
            if out.len() == spans.len() {
                return out;
            }
            out.clear();
        }
        vec![Span {
            start: 0,
            end: text.len(),
            origin: self.resolve(prov, pos),
        }]
    }

    /// Records the spans of `text`, just written at `base`.
    pub(super) fn record(&mut self, base: usize, text: &str, prov: &Prov, pos: usize) {
        let spans = self.spans_of(text, prov, pos);
        self.spans.extend(spans.into_iter().map(|s| Span {
            start: base + s.start,
            end: base + s.end,
            origin: s.origin,
        }));
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
        let last = argv.len().wrapping_sub(1);
        match trace {
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
            Trace::Include | Trace::Tpl => {
                let out = self.pending.output.take();
                match (out, result) {
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

    fn index_prov(&self, argv: &[Value], provs: &[Prov], result: &Value, pos: usize) -> Prov {
        if let Some(p) = self.trace.and_then(|t| t.path_of(result)) {
            return Prov::Path(p);
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
                Prov::Path(self.joined(path))
            }
            Some(at @ Prov::At(..)) => at.clone(),
            _ => self.at(pos),
        }
    }
}

/// A format with one verb and nothing else (`%s`, `%v`, `%d`, `%q`).
fn is_single_verb(f: &str) -> bool {
    let b = f.as_bytes();
    b.len() == 2 && b[0] == b'%' && b[1].is_ascii_alphabetic()
}
