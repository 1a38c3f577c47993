//! The origins of what `fromYaml` (`fromYamlArray`, `fromJson`, `fromJsonArray`) parses out
//! of a traced text, and of the scalars `toYaml` prints out of maps that hold origins.
//!
//! bjw-s' library prints each container spec with a text template (`image: {{ include
//! "...image" . }}`, `env: {{ . | nindent 2 }}`) and reads it back with `fromYaml`; the text
//! has spans (the image's repository and tag pieces at their values paths), but a parse
//! makes fresh values that know nothing of them. So, when the execution traces, `fromYaml`
//! parses with the byte range of each node ([`fluxgate_yaml::Ranges`]) and:
//!
//! - a map or list whose bytes (whitespace aside) all come from one values path `P` (a
//!   block `toYaml` printed, indented or not) is traced as `P`, what is below it by its YAML
//!   path from there, as `fromYaml` of what `toYaml` printed is ([`crate::roundtrip`]);
//! - any other scalar holds the origins of its bytes ([`Held`]): when its text is what it
//!   parsed to (a plain string, or a quoted one without escapes), each piece keeps its own
//!   (`repo` + `:` + `tag`); otherwise the one origin of its non-blank bytes, if there is
//!   one, or nothing (it is the `fromYaml` action's, as before).
//!
//! `toYaml` of a map or list that is not traced itself but holds such scalars, or traced
//! maps below it, gives each of those scalars its origin in the printed text (where the
//! emitter wrote it, [`fluxgate_yaml::emit_node_scalars`]): a held one what it holds, one
//! below a traced map its path. A map or list traced itself prints as before, one span of its
//! path, but for the scalars that are not at their YAML path from there (held ones, those
//! below a map traced by another path, those a merge copied from another map): those get
//! spans of their own.
//!
//! Bounds: texts over [`MAX_TEXT`] bytes are not looked at; the walks stop at
//! [`MAX_WALK`] nodes and at [`fluxgate_yaml::MAX_DEPTH`] (printing, at the template
//! engine's [`MAX_DEPTH`]); what the tracer holds is bounded by
//! [`fluxgate_gotemplate::Tracer::MAX_COPIES`].

use std::ops::Range;
use std::sync::Arc;

use fluxgate_gotemplate::trace::{join_index, join_key, slice_spans};
use fluxgate_gotemplate::{Call, FuncError, Held, MAX_DEPTH, Origin, Slot, Span, Value};
use fluxgate_yaml::{Node, Ranges, Schema, Value as Y, go_yaml_key_order, parse_stream_ranges};

use crate::convert;
use crate::sprig::encoding::yaml_value;

/// Longest text whose origins are followed through a parse (the round trip's bound on one
/// text, [`crate::roundtrip::MAX_BYTES`] / 4).
pub const MAX_TEXT: usize = crate::roundtrip::MAX_BYTES / 4;
/// Most nodes one walk visits (the round trip's bound on one snapshot,
/// [`crate::roundtrip::MAX_NODES`] / 4).
pub const MAX_WALK: usize = crate::roundtrip::MAX_NODES / 4;

/// `fromYaml` of `text`, argument 0 of `c`: the parse, each scalar holding the origins of
/// its bytes (see the module doc). Without a tracer, or for a text without origins, a plain
/// parse.
pub(crate) fn from_yaml(c: &Call<'_, '_>, text: &str) -> Result<Value, FuncError> {
    let spans = if c.tracing() && text.len() <= MAX_TEXT {
        c.arg_spans(0, text).unwrap_or_default()
    } else {
        Vec::new()
    };
    if spans.is_empty() {
        return crate::sprig::encoding::parse_yaml(text);
    }
    let (stream, ranges) = parse_stream_ranges("fromYaml", text, Schema::GoYamlV2);
    let value = yaml_value(text, &stream)?;
    if let (Some(ranges), Some(doc)) = (ranges, stream.docs.first()) {
        keep_origins(c, text, &spans, doc, &ranges, &value);
    }
    Ok(value)
}

/// `fromJson` of `text`, argument 0 of `c` ([`convert::from_json`]), its values holding the
/// origins of their bytes as [`from_yaml`]'s do: JSON is YAML, so the YAML parse of the text
/// says where each value was written (a text the YAML parser does not read as the JSON
/// parser does is not followed).
pub(crate) fn from_json(c: &Call<'_, '_>, text: &str) -> Result<Value, FuncError> {
    let value = convert::from_json(text).map_err(|e| FuncError(e.0))?;
    if !c.tracing() || text.len() > MAX_TEXT || !matches!(value, Value::Map(_) | Value::List(_)) {
        return Ok(value);
    }
    let spans = c.arg_spans(0, text).unwrap_or_default();
    if spans.is_empty() {
        return Ok(value);
    }
    let (stream, ranges) = parse_stream_ranges("fromJson", text, Schema::GoYamlV2);
    if let (Some(ranges), Some(doc), true) =
        (ranges, stream.docs.first(), stream.diagnostics.is_empty())
        && yaml_value(text, &stream).is_ok_and(|y| y == value)
    {
        keep_origins(c, text, &spans, doc, &ranges, &value);
    }
    Ok(value)
}

/// Has `value` (parsed from `text`, of origins `spans`, as `doc`) hold the origins of its
/// bytes, or be traced by the path of the block it was printed from.
fn keep_origins(
    c: &Call<'_, '_>,
    text: &str,
    spans: &[Span],
    doc: &Node,
    ranges: &Ranges,
    value: &Value,
) {
    let mut parse = Parsed {
        c,
        text,
        spans,
        ranges,
        budget: MAX_WALK,
    };
    if let Some(Uniform::Path(p)) = parse.walk(doc, value, 0) {
        trace_below(c, value, &p, 0);
    }
}

/// What a node's bytes (whitespace aside) came from, when one origin: a values path, or
/// something else.
#[derive(Clone, PartialEq)]
enum Uniform {
    Path(Arc<str>),
    Other,
}

struct Parsed<'c, 'x, 'y> {
    c: &'c Call<'x, 'y>,
    text: &'c str,
    spans: &'c [Span],
    ranges: &'c Ranges,
    budget: usize,
}

/// What [`Parsed::walk_node`] found of a node.
struct Walked {
    start: usize,
    end: usize,
    /// The one origin of its bytes, when they have one; `None` when they do not.
    uniform: Option<Uniform>,
    /// A null: its bytes do not decide whether its container is one block.
    neutral: bool,
    /// For a scalar, what it holds.
    held: Option<Held>,
}

impl Parsed<'_, '_, '_> {
    /// Walks `node` (parsed as `v`); whether its bytes all came from one values path.
    fn walk(&mut self, node: &Node, v: &Value, depth: usize) -> Option<Uniform> {
        self.walk_node(node, v, depth)?.uniform
    }

    /// Walks `node` (parsed as `v`), bottom-up: a map or list that is not one block of
    /// values has its scalars hold their origins and its blocks traced.
    fn walk_node(&mut self, node: &Node, v: &Value, depth: usize) -> Option<Walked> {
        let r = self.ranges.of(node)?;
        if self.budget == 0 || depth > fluxgate_yaml::MAX_DEPTH {
            return None;
        }
        self.budget -= 1;
        let is_container = matches!(node.value, Y::Map(_) | Y::Seq(_));
        if !is_container {
            if matches!(v, Value::Nil | Value::Missing) {
                let uniform = one_origin(self.text, self.spans, r.clone()).map(uniform_of);
                return Some(Walked {
                    start: r.start,
                    end: r.end,
                    neutral: uniform.is_none(),
                    uniform,
                    held: None,
                });
            }
            let held = self.held(r.clone(), v);
            let uniform = match &held {
                Some(Held::Origin(o)) => Some(uniform_of(o.clone())),
                _ => None,
            };
            return Some(Walked {
                start: r.start,
                end: r.end,
                uniform,
                neutral: false,
                held,
            });
        }
        let mut children: Vec<(Slot, Value, Option<Walked>)> = Vec::new();
        match (&node.value, v) {
            (Y::Map(m), Value::Map(vm)) => {
                for (k, n) in m.iter() {
                    let Some(cv) = vm.borrow().get(k).cloned() else {
                        continue;
                    };
                    let w = self.walk_node(n, &cv, depth + 1);
                    children.push((Slot::Key(k.clone()), cv, w));
                }
            }
            (Y::Seq(items), Value::List(vl)) => {
                for (i, n) in items.iter().enumerate() {
                    let Some(cv) = vl.borrow().get(i).cloned() else {
                        continue;
                    };
                    let w = self.walk_node(n, &cv, depth + 1);
                    children.push((Slot::Index(i), cv, w));
                }
            }
            _ => return None,
        }
        let end = children
            .iter()
            .filter_map(|(_, _, w)| w.as_ref().map(|w| w.end))
            .fold(r.start, usize::max);
        // One block of values when every child is of one path `P`, and so are the
        // container's own bytes (keys, indicators) between them.
        let mut path: Option<&Arc<str>> = None;
        let mut block = !children.is_empty();
        for (_, _, w) in &children {
            match w {
                Some(w) if w.neutral => {}
                Some(Walked {
                    uniform: Some(Uniform::Path(p)),
                    ..
                }) if path.is_none_or(|q| q == p) => path = Some(p),
                _ => block = false,
            }
        }
        if let (true, Some(p)) = (block, path) {
            let mut at = r.start;
            let mut own = Vec::new();
            let mut inner: Vec<(usize, usize)> = children
                .iter()
                .filter_map(|(_, _, w)| w.as_ref().map(|w| (w.start, w.end)))
                .collect();
            inner.sort_unstable();
            for (a, b) in inner {
                if a > at {
                    own.push(at..a);
                }
                at = at.max(b);
            }
            if end > at {
                own.push(at..end);
            }
            if own
                .into_iter()
                .all(|g| all_from(self.text, self.spans, g, p))
            {
                let p = p.clone();
                return Some(Walked {
                    start: r.start,
                    end,
                    uniform: Some(Uniform::Path(p)),
                    neutral: false,
                    held: None,
                });
            }
        }
        // Not one block of values: each child keeps its own.
        for (slot, cv, w) in children {
            let Some(w) = w else { continue };
            match (&cv, w.uniform, w.held) {
                (Value::Map(_) | Value::List(_), Some(Uniform::Path(p)), _) => {
                    trace_below(self.c, &cv, &p, 0);
                }
                (Value::Map(_) | Value::List(_), ..) => {}
                (_, _, held) => self.c.hold(v, slot, &cv, held),
            }
        }
        Some(Walked {
            start: r.start,
            end,
            uniform: None,
            neutral: false,
            held: None,
        })
    }

    /// What the scalar `v`, written at `r`, holds.
    fn held(&self, r: Range<usize>, v: &Value) -> Option<Held> {
        if let Value::String(s) = v
            && let Some(inner) = same_text(self.text, r.clone(), s)
        {
            let pieces = slice_spans(self.spans, inner.start, inner.end);
            return match pieces.as_slice() {
                [] => None,
                [one] if one.start == 0 && one.end == s.len() => {
                    Some(Held::Origin(one.origin.clone()))
                }
                _ => Some(Held::Pieces(Arc::new(pieces))),
            };
        }
        one_origin(self.text, self.spans, r).map(Held::Origin)
    }
}

fn uniform_of(o: Origin) -> Uniform {
    match o {
        Origin::Value { path } => Uniform::Path(path),
        Origin::Template { .. } => Uniform::Other,
    }
}

/// Traces the map or list `v` as `path` and what is below it by its path from there.
fn trace_below(c: &Call<'_, '_>, v: &Value, path: &Arc<str>, depth: usize) {
    if depth > fluxgate_yaml::MAX_DEPTH || !c.trace_as(v, path.clone()) {
        return;
    }
    match v {
        Value::Map(m) => {
            for (k, x) in m.borrow().iter() {
                if matches!(x, Value::Map(_) | Value::List(_)) {
                    trace_below(c, x, &Arc::from(join_key(path, k)), depth + 1);
                }
            }
        }
        Value::List(l) => {
            for (i, x) in l.borrow().iter().enumerate() {
                if matches!(x, Value::Map(_) | Value::List(_)) {
                    trace_below(c, x, &Arc::from(join_index(path, i)), depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Where, in `text[r]` (a scalar as written), the string `s` it parsed to is spelled out:
/// all of it, or what is within its quotes.
fn same_text(text: &str, r: Range<usize>, s: &str) -> Option<Range<usize>> {
    let src = text.get(r.clone())?;
    if src == s {
        return Some(r);
    }
    let q = src.chars().next().filter(|q| matches!(q, '"' | '\''))?;
    let inner = src.strip_prefix(q)?.strip_suffix(q)?;
    (inner == s && !inner.contains(q) && !(q == '"' && inner.contains('\\')))
        .then(|| r.start + 1..r.end - 1)
}

/// Whether byte `b` of a scalar as written says nothing of where it came from: a blank,
/// a quote.
fn blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'')
}

/// `r` without a block scalar's header (`|-`, `>2` up to its line's end).
fn content(text: &str, r: Range<usize>) -> Range<usize> {
    let bytes = text.as_bytes();
    let mut start = r.start;
    if matches!(bytes.get(start), Some(b'|' | b'>')) {
        while start < r.end && bytes[start] != b'\n' {
            start += 1;
        }
    }
    start..r.end.min(bytes.len())
}

/// The origins of the pieces of `text[r]` that hold more than blanks, in order; `None` for a
/// piece no span covers. `each` returns false to stop.
fn each_origin<'s>(
    text: &str,
    spans: &'s [Span],
    r: Range<usize>,
    each: &mut dyn FnMut(Option<&'s Origin>) -> bool,
) {
    let bytes = text.as_bytes();
    let r = content(text, r);
    let has_content = |a: usize, b: usize| bytes[a..b].iter().any(|&c| !blank(c));
    let mut at = r.start;
    let mut i = spans.partition_point(|s| s.end <= at);
    while at < r.end {
        let next = spans.get(i).filter(|s| s.start < r.end);
        let covered = next.map_or(r.end, |s| s.start.max(at));
        if covered > at && has_content(at, covered) && !each(None) {
            return;
        }
        let Some(s) = next else { return };
        let seg_end = s.end.min(r.end);
        if seg_end > covered && has_content(covered, seg_end) && !each(Some(&s.origin)) {
            return;
        }
        at = seg_end.max(at);
        i += 1;
    }
}

/// The one origin of the non-blank bytes of `text[r]`, if they have one and all have it.
fn one_origin(text: &str, spans: &[Span], r: Range<usize>) -> Option<Origin> {
    let mut found: Option<&Origin> = None;
    let mut one = true;
    each_origin(text, spans, r, &mut |o| {
        match (o, found) {
            (None, _) => one = false,
            (Some(o), None) => found = Some(o),
            (Some(o), Some(f)) => one = o == f,
        }
        one
    });
    found.filter(|_| one).cloned()
}

/// Whether every non-blank byte of `text[r]` came from the values path `p`.
fn all_from(text: &str, spans: &[Span], r: Range<usize>, p: &Arc<str>) -> bool {
    let mut all = true;
    each_origin(text, spans, r, &mut |o| {
        all = matches!(o, Some(Origin::Value { path }) if path == p);
        all
    });
    all
}

/// Helm's `toYaml` of `v` ([`convert::to_yaml`]), and the origins of the scalars printed
/// that are not where the printed block alone says they are.
///
/// A block printed from a traced map or list is one span of its path, what is below it at its
/// YAML path from there; the scalars that came from elsewhere (held, below a map traced by
/// another path, copied by a merge) get spans of their own over it. A map or list not traced
/// itself is the action's, and the scalars it holds or that are below traced maps get theirs.
pub(crate) fn to_yaml(c: &Call<'_, '_>, v: &Value) -> (String, Option<Vec<Span>>) {
    if !c.tracing() || !matches!(v, Value::Map(_) | Value::List(_)) {
        return (convert::to_yaml(v), None);
    }
    let root = c.path_of(v);
    let mut budget = MAX_WALK;
    let needed = match &root {
        None => has_origins(c, v, 0, &mut budget),
        Some(r) => diverges(c, v, r, 0, &mut budget),
    };
    if !needed {
        return (convert::to_yaml(v), None);
    }
    let (text, ranges) = convert::to_yaml_scalars(v);
    if text.len() > MAX_TEXT {
        return (text, None);
    }
    let mut printed = Printed {
        c,
        text: &text,
        ranges: ranges.into_iter(),
        out: Vec::new(),
        budget: MAX_WALK,
    };
    // Out of budget, what was found so far is still right.
    let _ = printed.walk(v, root.clone(), root.as_deref(), 0);
    let mut spans = printed.out;
    spans.sort_by_key(|s| s.start);
    (text, Some(spans))
}

/// Whether something below `v` (printed as a block at path `at`) is not at its YAML path from
/// there: a map or list holds origins, one is traced by another path, or a merge copied an
/// entry from elsewhere.
fn diverges(c: &Call<'_, '_>, v: &Value, at: &str, depth: usize, budget: &mut usize) -> bool {
    if *budget == 0 || depth > fluxgate_yaml::MAX_DEPTH {
        return false;
    }
    *budget -= 1;
    if c.holds(v) {
        return true;
    }
    let aliases = c.has_aliases();
    let check = |x: &Value, below: String, budget: &mut usize| match x {
        Value::Map(_) | Value::List(_) => {
            c.path_of(x).is_some_and(|p| *p != *below) || diverges(c, x, &below, depth + 1, budget)
        }
        _ => aliases && *c.resolve_alias(&below) != *below,
    };
    match v {
        Value::Map(m) => m
            .borrow()
            .iter()
            .any(|(k, x)| check(x, join_key(at, k), budget)),
        Value::List(l) => l
            .borrow()
            .iter()
            .enumerate()
            .any(|(i, x)| check(x, join_index(at, i), budget)),
        _ => false,
    }
}

/// Whether `v` is a scalar a map or list can hold an origin for.
fn is_scalar(v: &Value) -> bool {
    !matches!(
        v,
        Value::Map(_) | Value::List(_) | Value::Nil | Value::Missing | Value::Object(_)
    )
}

/// Whether a map or list of `v` holds origins or is traced.
fn has_origins(c: &Call<'_, '_>, v: &Value, depth: usize, budget: &mut usize) -> bool {
    if *budget == 0 || depth > fluxgate_yaml::MAX_DEPTH {
        return false;
    }
    *budget -= 1;
    let container = |x: &Value| matches!(x, Value::Map(_) | Value::List(_));
    let below = match v {
        Value::Map(m) => m
            .borrow()
            .values()
            .any(|x| container(x) && has_origins(c, x, depth + 1, budget)),
        Value::List(l) => l
            .borrow()
            .iter()
            .any(|x| container(x) && has_origins(c, x, depth + 1, budget)),
        _ => return false,
    };
    below || c.holds(v) || (depth > 0 && c.path_of(v).is_some())
}

/// The scalars `toYaml` printed, walked in the order it wrote them.
struct Printed<'c, 'x, 'y> {
    c: &'c Call<'x, 'y>,
    text: &'c str,
    /// Where each scalar was written, in order.
    ranges: std::vec::IntoIter<Range<usize>>,
    out: Vec<Span>,
    budget: usize,
}

impl Printed<'_, '_, '_> {
    /// Walks the non-empty map or list `v` (traced below `path`, when known; at `block` in the
    /// block printed, when that is traced) as `toYaml` printed it; `None` when out of budget
    /// or out of step with the printed scalars.
    fn walk(
        &mut self,
        v: &Value,
        path: Option<Arc<str>>,
        block: Option<&str>,
        depth: usize,
    ) -> Option<()> {
        if self.budget == 0 || depth >= MAX_DEPTH {
            return None;
        }
        self.budget -= 1;
        let path = self.c.path_of(v).or(path);
        let holds = self.c.holds(v);
        match v {
            Value::Map(m) => {
                let m = m.borrow();
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                entries.sort_by(|a, b| go_yaml_key_order(a.0, b.0));
                for (k, cv) in entries {
                    let held = if holds && is_scalar(cv) {
                        self.c.held_key(v, k, cv)
                    } else {
                        None
                    };
                    let at = |p: &str| join_key(p, k);
                    self.child(cv, held, path.as_ref(), block, &at, depth)?;
                }
            }
            Value::List(l) => {
                for (i, cv) in l.borrow().iter().enumerate() {
                    let held = if holds && is_scalar(cv) {
                        self.c.held(v, &Slot::Index(i), cv)
                    } else {
                        None
                    };
                    let at = |p: &str| join_index(p, i);
                    self.child(cv, held, path.as_ref(), block, &at, depth)?;
                }
            }
            _ => {}
        }
        Some(())
    }

    /// One entry `cv` of a map or list walked (below `path`, at `block` in a traced block;
    /// `at` joins a path to its slot); `held` what its container holds for it.
    fn child(
        &mut self,
        cv: &Value,
        held: Option<Held>,
        path: Option<&Arc<str>>,
        block: Option<&str>,
        at: &dyn Fn(&str) -> String,
        depth: usize,
    ) -> Option<()> {
        let block = block.map(at);
        let nonempty = match cv {
            Value::Map(m) => !m.borrow().is_empty(),
            Value::List(l) => !l.borrow().is_empty(),
            _ => false,
        };
        if nonempty {
            let inherited = match (path, self.c.path_of(cv)) {
                (Some(p), None) => Some(Arc::from(at(p))),
                _ => None,
            };
            return self.walk(cv, inherited, block.as_deref(), depth + 1);
        }
        let r = self.ranges.next()?;
        if !is_scalar(cv) {
            return Some(());
        }
        let held = held.or_else(|| {
            path.map(|p| {
                Held::Origin(Origin::Value {
                    path: self.c.resolve_alias(&at(p)),
                })
            })
        });
        // In a traced block, a scalar at its place in the block has the block's span already.
        let in_place = |h: &Held| matches!((h, &block), (Held::Origin(Origin::Value { path }), Some(b)) if **path == **b);
        if let Some(held) = held.filter(|h| !in_place(h)) {
            self.emit(held, r, cv);
        }
        Some(())
    }

    /// The spans of the scalar `v`, printed at `r`, that holds `held`.
    fn emit(&mut self, held: Held, r: Range<usize>, v: &Value) {
        let pieces = match held {
            Held::Origin(origin) => {
                self.out.push(Span {
                    start: r.start,
                    end: r.end,
                    origin,
                });
                return;
            }
            Held::Pieces(p) => p,
        };
        if let Value::String(s) = v
            && let Some(inner) = same_text(self.text, r.clone(), s)
        {
            for p in pieces.iter() {
                let (start, end) = (inner.start + p.start, (inner.start + p.end).min(inner.end));
                if start < end {
                    self.out.push(Span {
                        start,
                        end,
                        origin: p.origin.clone(),
                    });
                }
            }
            return;
        }
        if let Some(first) = pieces.first()
            && pieces.iter().all(|p| p.origin == first.origin)
        {
            self.out.push(Span {
                start: r.start,
                end: r.end,
                origin: first.origin.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fluxgate_gotemplate::{MissingKey, Origin, Templates, Traced, Tracer, Value};

    use crate::test_values::{map, s};

    /// Runs `prog` with `.Values` traced as `Values`, without the round trip table (every
    /// `fromYaml` parses).
    fn run(prog: &str, values: &Value) -> Traced {
        let data = map(&[("Values", values.clone())]);
        let mut tracer = Tracer::new();
        tracer.add_root(values, "Values");
        let mut t = Templates::new(crate::helm_funcs(0));
        t.missing_key = MissingKey::Zero;
        t.parse("t", prog).unwrap();
        t.execute_traced("t", &data, &tracer).unwrap()
    }

    /// The origins of the bytes of the first `needle` after `after`, merged where equal.
    fn origins(out: &Traced, after: &str, needle: &str) -> Vec<(String, Origin)> {
        let from = after.len()
            + out
                .text
                .find(after)
                .unwrap_or_else(|| panic!("{after:?} in {:?}", out.text));
        let at = from + out.text[from..].find(needle).unwrap();
        let end = at + needle.len();
        let mut got: Vec<(String, Origin)> = Vec::new();
        for sp in &out.spans {
            let (a, b) = (sp.start.max(at), sp.end.min(end));
            if a < b {
                got.push((out.text[a..b].to_string(), sp.origin.clone()));
            }
        }
        got
    }

    fn value(p: &str) -> Origin {
        Origin::Value { path: Arc::from(p) }
    }

    fn template_line(o: &Origin) -> Option<u32> {
        match o {
            Origin::Template { line, .. } => Some(*line),
            Origin::Value { .. } => None,
        }
    }

    const VALUES_PIECES: &str = r#"{{- define "spec" -}}
name: {{ .Values.name }}
image: {{ printf "%s:%s" .Values.image.repository .Values.image.tag }}
quoted: "{{ .Values.name }}"
port: {{ .Values.port }}
ports: {{ toYaml .Values.ports | nindent 2 }}
env: {{ list (dict "name" "TZ" "value" .Values.tz) | toYaml | nindent 2 }}
{{- end -}}
"#;

    fn values() -> Value {
        map(&[
            ("name", s("web")),
            (
                "image",
                map(&[("repository", s("ghcr.io/acme/demo")), ("tag", s("v1.2.3"))]),
            ),
            ("port", Value::Float(8080.0)),
            (
                "ports",
                Value::list(vec![map(&[
                    ("containerPort", Value::Float(80.0)),
                    ("name", s("http")),
                ])]),
            ),
            ("tz", s("UTC")),
        ])
    }

    /// `fromYaml` of a text template that printed values: each scalar keeps the origins of its
    /// bytes (pieces of a plain one kept), a block printed from one values path is that path;
    /// field access, `toYaml` of what holds it and copies carry them on.
    #[test]
    fn from_yaml_of_a_traced_text_keeps_origins() {
        let prog = format!(
            "{VALUES_PIECES}{}",
            r#"{{- $c := include "spec" . | fromYaml -}}
{{- $copy := deepCopy $c -}}
{{- $m := merge (dict) (omit $c "quoted") -}}
field: {{ $c.image }} {{ $c.port }} {{ (index $c.ports 0).containerPort }} {{ get $c "quoted" }}
{{- range $c.env }} range: {{ .value }}{{ end }}
printed:
{{ list $c | toYaml }}
copied: {{ $copy.name }} {{ $m.image }}
"#
        );
        let out = run(&prog, &values());
        let repo = value("Values.image.repository");
        let tag = value("Values.image.tag");
        // Field access: the image's pieces, the port, a port of the block, a quoted scalar.
        let image = origins(&out, "field:", "ghcr.io/acme/demo:v1.2.3");
        assert_eq!(image[0], ("ghcr.io/acme/demo".to_string(), repo.clone()));
        assert_eq!(image[1].0, ":");
        assert_eq!(template_line(&image[1].1), Some(3), "printf's");
        assert_eq!(image[2], ("v1.2.3".to_string(), tag.clone()));
        assert_eq!(origins(&out, "field:", "8080")[0].1, value("Values.port"));
        assert_eq!(
            origins(&out, "8080 ", "80")[0].1,
            value("Values.ports[0].containerPort")
        );
        assert_eq!(origins(&out, "8080 80", "web")[0].1, value("Values.name"));
        // `range` over a list the text printed with `toYaml` of a `dict`.
        assert_eq!(origins(&out, "range:", "UTC")[0].1, value("Values.tz"));
        // `toYaml` of a list holding the parsed map: each scalar where it came from.
        let printed = |after: &str, needle: &str| origins(&out, after, needle);
        assert_eq!(printed("printed:", "ghcr.io/acme/demo")[0].1, repo);
        assert_eq!(printed("printed:", "v1.2.3")[0].1, tag);
        assert_eq!(
            printed("containerPort:", "80")[0].1,
            value("Values.ports[0].containerPort")
        );
        assert_eq!(
            printed("- name: ", "http")[0].1,
            value("Values.ports[0].name")
        );
        assert_eq!(printed("value: ", "UTC")[0].1, value("Values.tz"));
        assert_eq!(printed("port: ", "8080")[0].1, value("Values.port"));
        assert_eq!(printed("quoted: ", "web")[0].1, value("Values.name"));
        // The keys are the `toYaml` action's.
        assert_eq!(template_line(&printed("printed:", "image:")[0].1), Some(15));
        // Copies: `deepCopy`, `omit` then `merge`.
        assert_eq!(origins(&out, "copied:", "web")[0].1, value("Values.name"));
        let merged = origins(&out, "copied: web", "ghcr.io/acme/demo:v1.2.3");
        assert_eq!(merged[0].1, repo);
        assert_eq!(merged[2].1, tag);
    }

    /// A block printed from a traced map keeps its one span; what a merge copied into it
    /// from elsewhere gets its own.
    #[test]
    fn a_traced_block_marks_what_came_from_elsewhere() {
        let vals = map(&[
            (
                "defaults",
                map(&[("a", Value::Float(1.0)), ("sub", map(&[("x", s("d"))]))]),
            ),
            ("user", map(&[("b", Value::Float(2.0))])),
        ]);
        let prog = "{{- $_ := merge .Values.user .Values.defaults -}}\n{{ toYaml .Values.user }}";
        let out = run(prog, &vals.deep_copy());
        assert_eq!(out.text, "a: 1\nb: 2\nsub:\n  x: d");
        assert_eq!(origins(&out, "a: ", "1")[0].1, value("Values.defaults.a"));
        assert_eq!(
            origins(&out, "x: ", "d")[0].1,
            value("Values.defaults.sub.x")
        );
        // The user's own entry and the keys are the block's.
        let b = origins(&out, "", "b: 2");
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(b[0].1, value("Values.user"));
        // Nothing from elsewhere: one span, as before.
        let out = run("{{ toYaml .Values.defaults }}", &vals);
        assert_eq!(out.spans.len(), 1, "{:?}", out.spans);
    }

    /// `fromJson` of a text a template printed: as `fromYaml`'s.
    #[test]
    fn from_json_of_a_traced_text_keeps_origins() {
        let prog = r#"{{- define "json" -}}
{"name": {{ .Values.name | toJson }}, "ports": {{ .Values.ports | toJson }}, "n": {{ .Values.port }}}
{{- end -}}
{{- $j := include "json" . | fromJson -}}
name={{ $j.name }} n={{ $j.n }} port={{ (index $j.ports 0).containerPort }}"#;
        let out = run(prog, &values());
        assert_eq!(out.text, "name=web n=8080 port=80");
        assert_eq!(origins(&out, "name=", "web")[0].1, value("Values.name"));
        assert_eq!(origins(&out, "n=", "8080")[0].1, value("Values.port"));
        assert_eq!(
            origins(&out, "port=", "80")[0].1,
            value("Values.ports[0].containerPort")
        );
    }

    /// `dig` passes on the path of what it found, or its default's origin.
    #[test]
    fn dig_passes_the_path_on() {
        let prog =
            r#"a={{ dig "image" "tag" "none" .Values }}|b={{ dig "image" "nope" "none" .Values }}"#;
        let out = run(prog, &values());
        assert_eq!(out.text, "a=v1.2.3|b=none");
        assert_eq!(
            origins(&out, "a=", "v1.2.3")[0].1,
            value("Values.image.tag")
        );
        let default = &origins(&out, "b=", "none")[0].1;
        assert!(
            matches!(
                default,
                Origin::Template {
                    line: 1,
                    column: 66,
                    ..
                }
            ),
            "the default's literal: {default:?}"
        );
    }

    /// A scalar whose text is not what it parsed to (an escape, a number spelled another
    /// way) keeps one origin when its bytes have one, else it is the printing action's; the
    /// text is never changed.
    #[test]
    fn scalars_spelled_otherwise_keep_one_origin_or_none() {
        let vals = map(&[("a", s("x")), ("b", s("y")), ("n", s("1e3"))]);
        let prog = r#"{{- define "spec" -}}
esc: "{{ .Values.a }}\t{{ .Values.b }}"
num: {{ .Values.n }}
{{- end -}}
{{- $c := include "spec" . | fromYaml -}}
esc={{ $c.esc }}|num={{ $c.num }}|{{ list $c | toYaml }}"#;
        let out = run(prog, &vals);
        assert!(out.text.starts_with("esc=x\ty|num=1000|"), "{:?}", out.text);
        // Two values in one escaped string: the action that parsed it.
        let esc = origins(&out, "esc=", "x\ty");
        assert_eq!(esc.len(), 1);
        assert_eq!(template_line(&esc[0].1), Some(5));
        assert_eq!(origins(&out, "num=", "1000")[0].1, value("Values.n"));
        assert_eq!(origins(&out, "- esc: ", "1000")[0].1, value("Values.n"));
    }
}
