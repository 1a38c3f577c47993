//! Builds [`Node`] trees from saphyr-parser's event stream, with aliases expanded under a hard
//! budget, merge keys applied, duplicate keys reported and scalars resolved per [`Schema`].

use fluxgate_diagnostics::Annotate;
use foldhash::{HashMap, HashMapExt as _};
use std::sync::Arc;

use fluxgate_diagnostics::{Diagnostic, Location, Severity};
use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use crate::lenient;
use crate::node::{Map, Node, Value};
use crate::scalar::{Schema, resolve_plain};

/// Upper bound on nodes one stream may produce, aliases expanded: a billion-laughs document
/// stops here instead of exhausting memory.
pub const NODE_BUDGET: usize = 2_000_000;
/// Upper bound on the bytes that aliases of one stream may copy: a few long strings aliased
/// level upon level stay under [`NODE_BUDGET`] nodes and still reach gigabytes.
pub const ALIAS_BYTE_BUDGET: usize = 64 * 1024 * 1024;
/// What go-yaml's reader says of a character YAML cannot carry; the refusal's message starts
/// with it (Helm's wording of the error repeats it).
pub const CONTROL_CHARACTERS: &str = "control characters are not allowed";
/// Upper bound on nesting, so that no input can overflow the stack.
pub const MAX_DEPTH: usize = 256;

/// A parsed multi-document stream.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    pub docs: Vec<Node>,
    /// Syntax errors, duplicate keys, exhausted budgets. When one is an error the documents
    /// after the failure point are missing.
    pub diagnostics: Vec<Diagnostic>,
}

impl Stream {
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// Parses every document of `text`, naming locations after `file`.
#[must_use]
pub fn parse_stream(file: &str, text: &str, schema: Schema) -> Stream {
    let file: Arc<str> = Arc::from(file);
    if let Some(docs) = crate::fast::parse(&file, text, schema) {
        return Stream {
            docs,
            diagnostics: Vec::new(),
        };
    }
    parse_general(&file, text, schema, false).0
}

/// [`parse_stream`], and where each node was written in bytes of `text` ([`Ranges`]); none
/// when the text parses only once rewritten (the lenient reading of what go-yaml accepts) or
/// not at all. Always by the general reader, which knows the spans.
#[must_use]
pub fn parse_stream_ranges(file: &str, text: &str, schema: Schema) -> (Stream, Option<Ranges>) {
    parse_general(&Arc::from(file), text, schema, true)
}

/// [`parse_stream`] by the general (event-driven) reader alone.
pub(crate) fn parse_stream_general(file: &str, text: &str, schema: Schema) -> Stream {
    parse_general(&Arc::from(file), text, schema, false).0
}

fn parse_general(
    file: &Arc<str>,
    text: &str,
    schema: Schema,
    ranges: bool,
) -> (Stream, Option<Ranges>) {
    if let Some((at, c)) = first_unprintable(text) {
        // go-yaml's reader and PyYAML's refuse the stream (`yaml: control characters are not
        // allowed`, `special characters are not allowed`): so do kustomize, Flux, Helm and
        // Ansible, and nothing of it is read.
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before[before.rfind('\n').map_or(0, |i| i + 1)..]
            .chars()
            .count()
            + 1;
        let error = Failure {
            message: format!(
                "{CONTROL_CHARACTERS} (U+{:04X} at line {line}, column {column})",
                u32::from(c)
            ),
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
            at: None,
        };
        let stream = Stream {
            docs: Vec::new(),
            diagnostics: vec![error.into_diagnostic(file)],
        };
        return (stream, None);
    }
    let mut builder = Builder::new(text, file.clone(), schema, None);
    if ranges {
        builder.ranges = Some(HashMap::new());
    }
    let mut docs = Vec::new();
    if let Err(e) = builder.stream(&mut docs) {
        if (lenient::is_relaxable(&e.message)
            || e.message == lenient::COMMENT_UNSEPARATED
            || text.contains('*'))
            && let Some(stream) = parse_relaxed(text, file, schema)
        {
            return (stream, None);
        }
        builder.diagnostics.push(e.into_diagnostic(file));
        return (
            Stream {
                docs,
                diagnostics: builder.diagnostics,
            },
            None,
        );
    }
    let ranges = builder.ranges.take().map(|starts| Ranges {
        starts,
        bytes: (!text.is_ascii()).then(|| {
            text.char_indices()
                .map(|(i, _)| i)
                .chain([text.len()])
                .collect()
        }),
    });
    (
        Stream {
            docs,
            diagnostics: builder.diagnostics,
        },
        ranges,
    )
}

/// The first character a YAML stream cannot carry, and its byte offset. YAML 1.1 and 1.2 (and
/// go-yaml's and PyYAML's readers) allow tab, line feed, carriage return, the printable ASCII
/// characters, NEL (U+0085) and every other character from U+00A0 on but U+FFFE and U+FFFF
/// (surrogates cannot be in a `str`); the C0 and C1 controls and DEL are refused.
fn first_unprintable(text: &str) -> Option<(usize, char)> {
    // Only these bytes start a refused character: a C0 control, DEL, the lead byte of
    // U+0080..U+00BF (C1 controls) and of U+F000..U+FFFF.
    let suspect = |b: u8| {
        b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r') || b == 0x7F || b == 0xC2 || b == 0xEF
    };
    if !text.bytes().any(suspect) {
        return None;
    }
    text.char_indices().find(|&(_, c)| !yaml_printable(c))
}

/// Whether a YAML stream can carry `c` (see [`first_unprintable`]).
pub(crate) fn yaml_printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}')
        || ('\u{A0}'..='\u{FFFD}').contains(&c)
        || c >= '\u{10000}'
}

/// Where the nodes of a parse were written: for a scalar the bytes of its text as written
/// (quotes, block header and indentation included), for a sequence or a mapping where it
/// starts. A node copied by an alias or a merge key is found at its anchor's text.
#[derive(Debug, Default)]
pub struct Ranges {
    /// (line, column, kind) of a node's [`Node::loc`] -> its range in characters.
    starts: NodeStarts,
    /// Character index -> byte offset, when the text is not ASCII.
    bytes: Option<Vec<usize>>,
}

impl Ranges {
    /// The byte range of `node` in the parsed text (empty for a sequence or a mapping: where
    /// it starts).
    #[must_use]
    pub fn of(&self, node: &Node) -> Option<std::ops::Range<usize>> {
        let kind = match node.value {
            Value::Seq(_) => 1,
            Value::Map(_) => 2,
            _ => 0,
        };
        let &(start, end) = self.starts.get(&(node.loc.line, node.loc.column, kind))?;
        match &self.bytes {
            None => Some(start..end),
            Some(b) => Some(*b.get(start)?..*b.get(end)?),
        }
    }
}

/// How many unseparated comments one stream may have put right ([`parse_relaxed`] parses
/// once more for each).
const MAX_COMMENT_FIXES: usize = 32;

/// The parse of `text` rewritten as go-yaml would read it (see [`lenient`]), when the rewrite
/// parses and its parse confirms every edit.
fn parse_relaxed(text: &str, file: &Arc<str>, schema: Schema) -> Option<Stream> {
    let mut relaxed = lenient::relax(text);
    relaxed.separate_alias_keys();
    for _ in 0..=MAX_COMMENT_FIXES {
        let chars: Vec<char> = relaxed.text.chars().collect();
        let mut builder = Builder::new(&relaxed.text, file.clone(), schema, Some(&relaxed));
        builder.evidence = Some((lenient::Evidence::default(), chars));
        let mut docs = Vec::new();
        match builder.stream(&mut docs) {
            Ok(()) => {
                let (evidence, _) = builder.evidence.take()?;
                if !relaxed.confirmed_by(&evidence) {
                    return None;
                }
                return Some(Stream {
                    docs,
                    diagnostics: builder.diagnostics,
                });
            }
            Err(e) if e.message == lenient::COMMENT_UNSEPARATED => {
                let (index, line, col) = e.at?;
                drop(builder);
                if !relaxed.separate_comment(index, line, col) {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
    None
}

/// Parses a single-document file; an empty file is `None`.
#[must_use]
pub fn parse_one(file: &str, text: &str, schema: Schema) -> (Option<Node>, Vec<Diagnostic>) {
    first_doc(parse_stream(file, text, schema))
}

/// The first document of `s`, and a warning when there are more.
fn first_doc(mut s: Stream) -> (Option<Node>, Vec<Diagnostic>) {
    let extra = s.docs.len().saturating_sub(1);
    if extra > 0 {
        let loc = s.docs[1].loc.clone();
        s.diagnostics.push(
            Diagnostic::new(
                "render",
                Severity::Warning,
                "only the first YAML document is read",
            )
            .at(loc),
        );
    }
    (s.docs.into_iter().next(), s.diagnostics)
}

/// Texts shorter than this are parsed each time: copying a small tree saves nothing.
const SHARED_MIN_BYTES: usize = 16 * 1024;
/// Upper bound on the text the shared parses keep (the oldest go first).
const SHARED_MAX_BYTES: usize = 64 << 20;

/// One kept parse: what was parsed, and what it gave.
struct SharedParse {
    file: Box<str>,
    schema: Schema,
    text: Box<str>,
    parsed: Stream,
}

/// [`parse_one`] through [`parse_stream_shared`].
#[must_use]
pub fn parse_one_shared(file: &str, text: &str, schema: Schema) -> (Option<Node>, Vec<Diagnostic>) {
    first_doc(parse_stream_shared(file, text, schema))
}

/// [`parse_stream`], with the parses of large files kept for the process: the same file
/// name, schema and text (compared whole) give a copy of the first parse. Every environment
/// of a repository, and every thread that renders a chart, reads the same chart
/// `values.yaml`, and copying its tree costs a fraction of parsing it again.
#[must_use]
pub fn parse_stream_shared(file: &str, text: &str, schema: Schema) -> Stream {
    use std::sync::{LazyLock, Mutex, PoisonError};
    static SHARED: LazyLock<Mutex<std::collections::VecDeque<SharedParse>>> =
        LazyLock::new(Mutex::default);
    if text.len() < SHARED_MIN_BYTES || text.len() > SHARED_MAX_BYTES {
        return parse_stream(file, text, schema);
    }
    let kept = |e: &SharedParse| *e.file == *file && e.schema == schema && *e.text == *text;
    if let Some(e) = SHARED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|e| kept(e))
    {
        return e.parsed.clone();
    }
    let parsed = parse_stream(file, text, schema);
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if !shared.iter().any(kept) {
        let mut held: usize = shared.iter().map(|e| e.text.len()).sum();
        while held + text.len() > SHARED_MAX_BYTES {
            let Some(old) = shared.pop_front() else { break };
            held -= old.text.len();
        }
        shared.push_back(SharedParse {
            file: file.into(),
            schema,
            text: text.into(),
            parsed: parsed.clone(),
        });
    }
    parsed
}

struct Failure {
    message: String,
    line: u32,
    column: u32,
    /// For scanner errors: saphyr's character index, line and 0-based column.
    at: Option<(usize, usize, usize)>,
}

impl Failure {
    fn into_diagnostic(self, file: &Arc<str>) -> Diagnostic {
        Diagnostic::render_error(
            format!("invalid YAML: {}", self.message),
            Some(Location::new(file.clone(), self.line, self.column)),
        )
    }
}

struct Builder<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    file: Arc<str>,
    schema: Schema,
    anchors: HashMap<usize, Node>,
    budget: usize,
    /// Bytes aliases may still copy.
    alias_bytes: usize,
    diagnostics: Vec<Diagnostic>,
    /// Parsing a rewritten text: its edits, to give locations in the original.
    relaxed: Option<&'a lenient::Relaxed>,
    /// Parsing a rewritten text: what its parse found, and its characters (to tell flow
    /// collections from block ones by their first character).
    evidence: Option<(lenient::Evidence, Vec<char>)>,
    /// When the text does not end with a line break: its length in characters, and whether
    /// its last line is blank, and then its width.
    unterminated_end: Option<(usize, Option<usize>)>,
    /// Where each node starts and ends, when asked ([`Ranges`]).
    ranges: Option<NodeStarts>,
}

/// (line, column, kind) of a node -> its range in characters ([`Ranges`]).
type NodeStarts = HashMap<(u32, u32, u8), (usize, usize)>;

fn pos(span: &Span) -> (u32, u32) {
    (span.start.line() as u32, span.start.col() as u32 + 1)
}

impl<'a> Builder<'a> {
    fn new(
        text: &'a str,
        file: Arc<str>,
        schema: Schema,
        relaxed: Option<&'a lenient::Relaxed>,
    ) -> Builder<'a> {
        Builder {
            parser: Parser::new_from_str(text),
            file,
            schema,
            anchors: HashMap::new(),
            budget: NODE_BUDGET,
            alias_bytes: ALIAS_BYTE_BUDGET,
            diagnostics: Vec::new(),
            relaxed,
            evidence: None,
            ranges: None,
            unterminated_end: (!text.ends_with(['\n', '\r'])).then(|| {
                let last = text.rsplit('\n').next().unwrap_or(text);
                let blank = last.chars().all(|c| c == ' ');
                (text.chars().count(), blank.then(|| last.chars().count()))
            }),
        }
    }

    /// Records a scalar's span for [`lenient::Relaxed::confirmed_by`].
    fn saw_scalar(&mut self, span: &Span, style: ScalarStyle) {
        if let Some((ev, _)) = &mut self.evidence {
            let at = |m: &saphyr_parser::Marker| (m.line(), m.col());
            ev.scalars.push((at(&span.start), at(&span.end)));
            if matches!(style, ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted) {
                ev.quoted.push((span.start.line(), span.end.line()));
            }
        }
    }

    /// Records a collection from its start to its end event when it is a flow collection.
    fn saw_collection(&mut self, start: &Span, end: &Span) {
        if let Some((ev, chars)) = &mut self.evidence {
            let opens = matches!(chars.get(start.start.index()), Some('[' | '{'));
            let closes = matches!(chars.get(end.start.index()), Some(']' | '}'));
            if opens && closes {
                ev.flows.push((start.start.line(), end.start.line()));
            }
        }
    }

    fn next(&mut self) -> Result<Option<(Event<'_>, Span)>, Failure> {
        match self.parser.next_event() {
            None => Ok(None),
            Some(Ok(ev)) => Ok(Some(ev)),
            Some(Err(e)) => Err(Failure {
                message: e.info().to_string(),
                line: e.marker().line() as u32,
                column: e.marker().col() as u32 + 1,
                at: Some((e.marker().index(), e.marker().line(), e.marker().col())),
            }),
        }
    }

    fn loc(&self, span: &Span) -> Location {
        let (line, mut column) = pos(span);
        if let Some(r) = self.relaxed {
            let col = r.original_col(span.start.line(), span.start.col());
            column = u32::try_from(col + 1).unwrap_or(u32::MAX);
        }
        Location {
            file: self.file.clone(),
            line,
            column,
        }
    }

    fn stream(&mut self, docs: &mut Vec<Node>) -> Result<(), Failure> {
        loop {
            let Some((ev, span)) = self.next()? else {
                return Ok(());
            };
            match ev {
                Event::StreamEnd => return Ok(()),
                Event::DocumentStart(_) => {
                    self.anchors.clear();
                    let first = self.next()?;
                    let Some((ev, span)) = first else {
                        return Ok(());
                    };
                    if matches!(ev, Event::DocumentEnd) {
                        continue;
                    }
                    let ev = owned_event(ev);
                    let node = self.node(ev, span, 0)?;
                    docs.push(node);
                    // DocumentEnd
                    self.next()?;
                }
                _ => {
                    let _ = span;
                }
            }
        }
    }

    fn spend(&mut self, n: usize, span: &Span) -> Result<(), Failure> {
        if n > self.budget {
            let (line, column) = pos(span);
            return Err(Failure {
                message: format!(
                    "the document expands to more than {NODE_BUDGET} nodes (an alias bomb?)"
                ),
                line,
                column,
                at: None,
            });
        }
        self.budget -= n;
        Ok(())
    }

    fn node(&mut self, ev: OwnedEvent, span: Span, depth: usize) -> Result<Node, Failure> {
        if depth > MAX_DEPTH {
            let (line, column) = pos(&span);
            return Err(Failure {
                message: format!("nesting deeper than {MAX_DEPTH}"),
                line,
                column,
                at: None,
            });
        }
        self.spend(1, &span)?;
        let loc = self.loc(&span);
        if let Some(ranges) = &mut self.ranges {
            let (kind, end) = match ev {
                OwnedEvent::Scalar(..) => (0, span.end.index()),
                OwnedEvent::SeqStart(..) => (1, span.start.index()),
                OwnedEvent::MapStart(..) => (2, span.start.index()),
                OwnedEvent::Alias(_) | OwnedEvent::Other => (3, 0),
            };
            if kind < 3 {
                ranges
                    .entry((loc.line, loc.column, kind))
                    .or_insert((span.start.index(), end));
            }
        }
        match ev {
            OwnedEvent::Alias(id) => {
                let Some(n) = self.anchors.get(&id) else {
                    let (line, column) = pos(&span);
                    return Err(Failure {
                        message: "unknown anchor".into(),
                        line,
                        column,
                        at: None,
                    });
                };
                let bytes = n.text_bytes();
                if bytes > self.alias_bytes {
                    let (line, column) = pos(&span);
                    return Err(Failure {
                        message: format!(
                            "the aliases of the document copy more than {} MiB (an alias bomb?)",
                            ALIAS_BYTE_BUDGET / (1024 * 1024)
                        ),
                        line,
                        column,
                        at: None,
                    });
                }
                self.alias_bytes -= bytes;
                let n = n.clone();
                self.spend(n.size(), &span)?;
                Ok(n)
            }
            OwnedEvent::Scalar(text, style, anchor, tag) => {
                self.saw_scalar(&span, style);
                let mut value = self.scalar(&text, style, tag.as_deref());
                // saphyr ends a block scalar that runs into the end of an unterminated text with
                // a line break the text does not have (when the last line is content, or blank
                // but as indented as the content); go-yaml (as the spec) does not.
                if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded)
                    && let Some((end, blank_width)) = self.unterminated_end
                    && end == span.end.index()
                    && blank_width.is_none_or(|w| w >= span.start.col())
                    && let Value::String(s) = &mut value
                    && s.ends_with('\n')
                {
                    s.pop();
                }
                let mut node = Node::new(value, loc);
                node.implicit_null =
                    tag.is_none() && style == ScalarStyle::Plain && text.is_empty();
                if let Some(t) = tag.filter(|t| !t.starts_with("tag:yaml.org,2002:")) {
                    node.tag = Some(Arc::from(t.as_str()));
                }
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            OwnedEvent::SeqStart(anchor, tag) => {
                let mut items = Vec::new();
                while let Some((ev, item_span)) = self.next()? {
                    if matches!(ev, Event::SequenceEnd) {
                        self.saw_collection(&span, &item_span);
                        break;
                    }
                    let ev = owned_event(ev);
                    items.push(self.node(ev, item_span, depth + 1)?);
                }
                let mut node = Node::new(Value::Seq(items), loc);
                node.tag = tag
                    .filter(|t| !t.starts_with("tag:yaml.org,2002:"))
                    .map(|t| Arc::from(t.as_str()));
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            OwnedEvent::MapStart(anchor, tag) => {
                let node = self.mapping(loc, &span, depth)?;
                let mut node = node;
                node.tag = tag
                    .filter(|t| !t.starts_with("tag:yaml.org,2002:"))
                    .map(|t| Arc::from(t.as_str()));
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            OwnedEvent::Other => {
                let (line, column) = pos(&span);
                Err(Failure {
                    message: "unexpected event".into(),
                    line,
                    column,
                    at: None,
                })
            }
        }
    }

    fn mapping(&mut self, loc: Location, start: &Span, depth: usize) -> Result<Node, Failure> {
        let mut map = Map::default();
        let mut merges: Vec<Node> = Vec::new();
        while let Some((ev, kspan)) = self.next()? {
            if matches!(ev, Event::MappingEnd) {
                self.saw_collection(start, &kspan);
                break;
            }
            let kev = owned_event(ev);
            let key = self.node(kev, kspan, depth + 1)?;
            let Some((ev, vspan)) = self.next()? else {
                break;
            };
            let vev = owned_event(ev);
            let value = self.node(vev, vspan, depth + 1)?;
            let key_text = match &key.value {
                Value::String(s) => s.clone(),
                Value::Seq(_) | Value::Map(_) => {
                    self.diagnostics.push(
                        Diagnostic::new(
                            "render",
                            Severity::Warning,
                            "a complex mapping key is ignored",
                        )
                        .at(key.loc.clone()),
                    );
                    continue;
                }
                Value::Null if self.schema == Schema::GoYamlV2 => {
                    // sigs.k8s.io/yaml turns go-yaml v2's map into JSON: a null key has no
                    // JSON form and fails the conversion.
                    self.diagnostics.push(Diagnostic::render_error(
                        "a null mapping key: JSON has no form for it",
                        Some(key.loc.clone()),
                    ));
                    continue;
                }
                _ => key.scalar_text().unwrap_or_default(),
            };
            if key_text == "<<" && key.tag.is_none() && matches!(key.value, Value::String(_)) {
                merges.push(value);
                continue;
            }
            // go-yaml v2 reading into a map keeps the last value (in the first one's place)
            // without a word.
            if let (at, Some(previous)) = map.insert_full(key_text, value) {
                let severity = if self.schema == Schema::Kube {
                    Severity::Error
                } else {
                    Severity::Warning
                };
                let key_text = map.get_index(at).map_or("", |(k, _)| k.as_str());
                self.diagnostics.push(
                    Diagnostic::new("render", severity, format!("duplicate key `{key_text}`"))
                        .at(key.loc.clone())
                        .related(previous.loc.clone(), "first defined here"),
                );
            }
        }
        if merges.is_empty() {
            return Ok(Node::new(Value::Map(Box::new(map)), loc));
        }
        let mut merged = Map::default();
        for m in merges {
            let sources: Vec<Node> = match m.value {
                Value::Map(_) => vec![m],
                Value::Seq(items) => items,
                _ => {
                    self.diagnostics.push(Diagnostic::render_error(
                        "a merge key `<<` needs a mapping or a list of mappings",
                        Some(m.loc),
                    ));
                    continue;
                }
            };
            for s in sources {
                if let Value::Map(entries) = s.value {
                    for (k, v) in *entries {
                        merged.entry(k).or_insert(v);
                    }
                }
            }
        }
        for (k, v) in map {
            merged.insert(k, v);
        }
        Ok(Node::new(Value::Map(Box::new(merged)), loc))
    }

    fn scalar(&mut self, text: &str, style: ScalarStyle, tag: Option<&str>) -> Value {
        if let Some(tag) = tag {
            if let Some(core) = tag.strip_prefix("tag:yaml.org,2002:") {
                return match core {
                    "str" | "binary" | "timestamp" => Value::String(text.to_string()),
                    "null" => Value::Null,
                    _ => match resolve_plain(text, self.schema) {
                        v @ (Value::Bool(_) | Value::Int(_) | Value::Float(_))
                            if matches!(core, "bool" | "int" | "float") =>
                        {
                            v
                        }
                        _ => Value::String(text.to_string()),
                    },
                };
            }
            if tag == "!" {
                return Value::String(text.to_string());
            }
        }
        match style {
            ScalarStyle::Plain => resolve_plain(text, self.schema),
            ScalarStyle::Folded if matches!(self.schema, Schema::Kube | Schema::GoYamlV2) => {
                Value::String(go_yaml_folded(text))
            }
            _ => Value::String(text.to_string()),
        }
    }
}

/// go-yaml v3 (which kustomize and Flux read with) departs from the YAML spec in one folding
/// case: where a more-indented line (one starting with a space or tab) follows a line that is
/// not more-indented, it keeps one line break more than the spec (`>-` over `a` / `  b` gives
/// `"a\n\n  b"`, the spec `"a\n  b"`). The parser folds as the spec says; this adds the break.
fn go_yaml_folded(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    // Whether the last non-empty line started with a blank; None before the first.
    let mut last_blank_led: Option<bool> = None;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.is_empty() {
            continue;
        }
        let blank_led = line.starts_with([' ', '\t']);
        if blank_led && last_blank_led == Some(false) {
            // Before the empty lines already written: the count is all that matters.
            out.push('\n');
        }
        last_blank_led = Some(blank_led);
        out.push_str(line);
    }
    out
}

/// Events without borrowed data, so that the builder can hold them across `next()` calls.
enum OwnedEvent {
    Alias(usize),
    Scalar(String, ScalarStyle, usize, Option<String>),
    SeqStart(usize, Option<String>),
    MapStart(usize, Option<String>),
    Other,
}

fn tag_text(tag: Option<&saphyr_parser::Tag>) -> Option<String> {
    tag.map(|t| {
        if t.handle == "!!" {
            format!("tag:yaml.org,2002:{}", t.suffix)
        } else {
            format!("{}{}", t.handle, t.suffix)
        }
    })
}

fn owned_event(ev: Event<'_>) -> OwnedEvent {
    match ev {
        Event::Alias(id) => OwnedEvent::Alias(id),
        Event::Scalar(text, style, anchor, tag) => {
            OwnedEvent::Scalar(text.into_owned(), style, anchor, tag_text(tag.as_deref()))
        }
        Event::SequenceStart(anchor, tag) => OwnedEvent::SeqStart(anchor, tag_text(tag.as_deref())),
        Event::MappingStart(anchor, tag) => OwnedEvent::MapStart(anchor, tag_text(tag.as_deref())),
        _ => OwnedEvent::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Node {
        let s = parse_stream("t.yaml", text, Schema::Kube);
        assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
        s.docs.into_iter().next().expect("a document")
    }

    #[test]
    fn ranges_are_bytes_of_the_text() {
        let text = "a:\n  - é: \"x y\"\n    p: 80\nb: plain text # c\n";
        let (s, ranges) = parse_stream_ranges("t.yaml", text, Schema::GoYamlV2);
        let ranges = ranges.expect("ranges");
        let doc = &s.docs[0];
        let at = |n: &Node| &text[ranges.of(n).unwrap()];
        let item = &doc.get("a").unwrap().as_seq().unwrap()[0];
        assert_eq!(at(item.get("é").unwrap()), "\"x y\"");
        assert_eq!(at(item.get("p").unwrap()), "80");
        assert_eq!(at(doc.get("b").unwrap()), "plain text");
        let r = ranges.of(item).unwrap();
        assert_eq!(&text[r.start..r.start + 2], "é");
        let r = ranges.of(doc.get("a").unwrap()).unwrap();
        assert!(text[r.start..].starts_with("- é"));
    }

    #[test]
    fn shared_parses_are_the_parses_of_the_same_text() {
        let keys = (0..2000).fold(String::new(), |mut s, i| {
            use std::fmt::Write as _;
            let _ = writeln!(s, "k{i}: v{i}");
            s
        });
        let big = |v: &str| format!("{keys}last: {v}\n");
        let (a, b) = (big("one"), big("two"));
        assert!(a.len() >= SHARED_MIN_BYTES);
        for _ in 0..2 {
            for (text, last) in [(&a, "one"), (&b, "two")] {
                let s = parse_stream_shared("values.yaml", text, Schema::Kube);
                assert_eq!(s.docs[0].get("last").and_then(Node::as_str), Some(last));
                assert_eq!(s.docs[0].get("last").map(|n| n.loc.line), Some(2001));
            }
        }
        // Another name or schema is another parse (locations name the file).
        let other = parse_stream_shared("other.yaml", &a, Schema::Kube);
        assert_eq!(&*other.docs[0].loc.file, "other.yaml");
        // A second document is still a warning of parse_one's.
        let two = format!("{a}---\nx: 1\n");
        let (first, d) = parse_one_shared("values.yaml", &two, Schema::Kube);
        assert!(first.is_some());
        assert_eq!(d.len(), 1, "{d:?}");
    }

    #[test]
    fn an_alias_is_a_mapping_key_as_go_yaml_reads_it() {
        // go-yaml ends an alias name at the `:`; saphyr alone takes `app:` as the name.
        let n = one("labels:\n  app: &app emqx\ndata:\n  *app: enabled\n  list:\n    - *app: x\n");
        assert_eq!(n.str_at(&["data", "emqx"]), Some("enabled"));
        let item = n
            .path(&["data", "list"])
            .and_then(Node::as_seq)
            .and_then(|l| l.first())
            .expect("a list item");
        assert_eq!(item.str_at(&["emqx"]), Some("x"));
        // Locations stay those of the original text.
        let v = n.path(&["data", "emqx"]).expect("the value");
        assert_eq!((v.loc.line, v.loc.column), (4, 9));
    }

    #[test]
    fn folded_scalars_keep_go_yaml_breaks_before_more_indented_lines() {
        // Values as `kubectl kustomize` (go-yaml v3) read them.
        let n = one(concat!(
            "a: >-\n  one\n    two\n  three\n",
            "b: >-\n  one\n\n    two\n  three\n",
            "c: >\n  one\n  two\n\n  three\n    four\n\n    five\n  six\n",
            "d: >2-\n    first\n  second\n  third\n",
            "e: >-\n  one\n  \ttab\n  three\n",
            "f: |-\n  one\n    two\n",
        ));
        let got = |k: &str| n.str_at(&[k]).expect("a string").to_string();
        assert_eq!(got("a"), "one\n\n  two\nthree");
        assert_eq!(got("b"), "one\n\n\n  two\nthree");
        assert_eq!(got("c"), "one two\nthree\n\n  four\n\n  five\nsix\n");
        assert_eq!(got("d"), "  first\nsecond third");
        assert_eq!(got("e"), "one\n\n\ttab\nthree");
        assert_eq!(got("f"), "one\n  two");
        // Ansible reads with PyYAML, which folds as the spec says.
        let s = parse_stream("t.yaml", "a: >-\n  one\n    two\n", Schema::Yaml11);
        assert_eq!(s.docs[0].str_at(&["a"]), Some("one\n  two"));
    }

    #[test]
    fn block_scalars_at_an_unterminated_end_have_no_extra_line_break() {
        // Values as go-yaml v3 reads them.
        let cases = [
            ("a: |\n  x", "x"),
            ("a: |+\n  x", "x"),
            ("a: >\n  x\n  y", "x y"),
            ("a: |-\n  x", "x"),
            ("a: |\n  x\n  ", "x\n"),
            ("a: |+\n  x\n\n  ", "x\n\n"),
            ("a: |\n  x\n# c", "x\n"),
            ("a: |\n  x\n", "x\n"),
            ("a:\n  b: |\n      x\n  ", "x\n"),
            ("a: |\n  x\n ", "x\n"),
        ];
        for (text, want) in cases {
            let n = one(text);
            let got = n.str_at(&["a"]).or_else(|| n.str_at(&["a", "b"]));
            assert_eq!(got, Some(want), "{text:?}");
        }
        let s = parse_stream("t.yaml", "- |\n  x\n- |\n  y", Schema::Kube);
        assert_eq!(s.docs[0].to_json(), serde_json::json!(["x\n", "y"]));
    }

    #[test]
    fn nulls_written_as_nothing_are_marked() {
        let n = one("a:\nb: null\nc: ~\nd: ''\n");
        let implicit = |k: &str| n.get(k).expect("key").implicit_null;
        assert!(implicit("a"));
        assert!(!implicit("b") && !implicit("c") && !implicit("d"));
        assert_eq!(n.get("a"), n.get("b"));
    }

    #[test]
    fn locations_are_one_based() {
        let n = one("a: 1\nb:\n  c: hello\n");
        let c = n.path(&["b", "c"]).expect("b.c");
        assert_eq!((c.loc.line, c.loc.column), (3, 6));
    }

    #[test]
    fn multi_doc_and_empty_docs() {
        let s = parse_stream("t.yaml", "---\na: 1\n---\n---\nb: 2\n...\n", Schema::Kube);
        assert_eq!(s.docs.len(), 3);
        assert!(s.docs[1].is_null());
    }

    #[test]
    fn merge_keys_and_aliases() {
        let n = one("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n");
        assert_eq!(n.path(&["d", "x"]).and_then(Node::as_i64), Some(1));
        assert_eq!(n.path(&["d", "y"]).and_then(Node::as_i64), Some(3));
    }

    #[test]
    fn alias_bomb_is_a_finding() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = i - 1;
            let refs = vec![format!("*a{p}"); 10].join(", ");
            text += &format!("a{i}: &a{i} [{refs}]\n");
        }
        let s = parse_stream("bomb.yaml", &text, Schema::Kube);
        assert!(s.has_errors());
        assert!(s.diagnostics[0].message.contains("alias bomb"));
    }

    /// Issue 26 §4: ten 2 KB strings aliased five levels deep stay far under the node
    /// budget and copy gigabytes; the bytes are budgeted too.
    #[test]
    fn alias_bytes_are_budgeted() {
        let mut text = format!("s: &s \"{}\"\n", "y".repeat(2048));
        let mut prev = "s".to_string();
        for level in 0..6 {
            let refs = vec![format!("*{prev}"); 10].join(", ");
            text += &format!("l{level}: &l{level} [{refs}]\n");
            prev = format!("l{level}");
        }
        let s = parse_stream("bytes.yaml", &text, Schema::Kube);
        assert!(s.has_errors());
        assert!(
            s.diagnostics[0].message.contains("MiB"),
            "{:?}",
            s.diagnostics
        );
    }

    #[test]
    fn duplicate_keys_are_reported() {
        let s = parse_stream("t.yaml", "a: 1\na: 2\n", Schema::Kube);
        assert_eq!(s.diagnostics.len(), 1);
        assert_eq!(s.diagnostics[0].location.as_ref().map(|l| l.line), Some(2));
    }

    #[test]
    fn flow_collections_ignore_indentation_as_go_yaml_does() {
        // Values as go-yaml v3 reads them; each text is one saphyr alone refuses.
        let n = one(concat!(
            "spec:\n",
            "  args: [\n",
            "    \"--port\", \"80\"\n",
            "  ]\n",
            "  map: {\n",
            "    x: 1,\n",
            " y: 2\n",
            "}\n",
            "  list:\n",
            "  - args: [\n",
            "a,\n",
            "    ]\n",
            "top: [\n",
            "1, [2,\n",
            " 3]\n",
            "]\n",
        ));
        assert_eq!(
            n.to_json(),
            serde_json::json!({"spec": {"args": ["--port", "80"], "map": {"x": 1, "y": 2},
                "list": [{"args": ["a"]}]}, "top": [1, [2, 3]]})
        );
        // Locations are those of the original text.
        let y = n.path(&["spec", "map", "y"]).expect("y");
        assert_eq!((y.loc.line, y.loc.column), (7, 5));
        let a = &n
            .path(&["spec", "list"])
            .expect("list")
            .as_seq()
            .expect("seq")[0];
        let a0 = &a.get("args").and_then(Node::as_seq).expect("args")[0];
        assert_eq!((a0.loc.line, a0.loc.column), (11, 1));
    }

    #[test]
    fn quoted_scalars_continue_at_any_indentation() {
        let n = one("a:\n  b: \"one\ntwo\"\n  c: 'three\n four'\n");
        assert_eq!(n.path(&["a", "b"]).and_then(Node::as_str), Some("one two"));
        assert_eq!(
            n.path(&["a", "c"]).and_then(Node::as_str),
            Some("three four")
        );
    }

    #[test]
    fn a_tab_after_a_colon_separates() {
        let n = one("a:\tb\nc :\tvalue\nd: 'x:\ty'\n");
        assert_eq!(n.get("a").and_then(Node::as_str), Some("b"));
        assert_eq!(n.get("c").and_then(Node::as_str), Some("value"));
        assert_eq!(n.get("d").and_then(Node::as_str), Some("x:\ty"));
    }

    #[test]
    fn a_comment_may_follow_a_quote_or_bracket_unseparated() {
        let n = one("a: [1, 2]#c\nb: \"x\"#d\nc: {k: v}#e\nd: x#notacomment\n");
        assert_eq!(
            n.to_json(),
            serde_json::json!({"a": [1, 2], "b": "x",
            "c": {"k": "v"}, "d": "x#notacomment"})
        );
    }

    #[test]
    fn leniency_does_not_reach_block_indentation() {
        // go-yaml refuses these too.
        for text in [
            "a:\n    b: 1\n  c: 2\n",
            "a: [\n1,\n",
            "a:\n  b: |\n  x\n",
            "a: \"x\n---\ny\"\n",
            "a: [1]#c\n  b: 2\n",
        ] {
            let s = parse_stream("t.yaml", text, Schema::Kube);
            assert!(s.has_errors(), "{text:?} parsed: {:?}", s.docs);
        }
    }

    #[test]
    fn syntax_error_has_line() {
        let s = parse_stream("t.yaml", "a: 1\nb: [\n", Schema::Kube);
        assert!(s.has_errors());
    }

    /// What go-yaml's and PyYAML's readers refuse is refused, where it stands; what they read
    /// is read.
    #[test]
    fn characters_yaml_cannot_carry_fail_the_stream() {
        for c in [
            '\u{1}', '\u{b}', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}', '\u{fffe}', '\u{ffff}',
        ] {
            for (text, line, column) in [
                (format!("a: 1\nb: x{c}y\n"), 2, 5),
                (format!("a: \"\u{e9}{c}\"\n"), 1, 6),
                (format!("# {c}\na: 1\n"), 1, 3),
                (format!("a: |\n  x{c}\n"), 2, 4),
            ] {
                for schema in [Schema::Kube, Schema::GoYamlV2, Schema::Yaml11] {
                    let s = parse_stream("t.yaml", &text, schema);
                    assert!(s.docs.is_empty(), "{text:?}");
                    let [d] = &s.diagnostics[..] else {
                        panic!("{text:?}: {:?}", s.diagnostics)
                    };
                    assert_eq!(
                        d.message,
                        format!(
                            "invalid YAML: control characters are not allowed (U+{:04X} at line {line}, column {column})",
                            u32::from(c)
                        )
                    );
                    let at = d.location.as_ref().unwrap();
                    assert_eq!((at.line, at.column), (line, column), "{text:?}");
                }
            }
        }
        assert!(
            parse_stream("t.yaml", "a: x\r\nb: y\r\n", Schema::Kube)
                .diagnostics
                .is_empty()
        );
        for c in [
            '\t',
            '\u{85}',
            '\u{a0}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{fffd}',
            '\u{1f600}',
        ] {
            let text = format!("a: \"x{c}y\"\n");
            let s = parse_stream("t.yaml", &text, Schema::Kube);
            assert!(s.diagnostics.is_empty(), "{text:?}: {:?}", s.diagnostics);
            assert_eq!(s.docs.len(), 1);
        }
    }

    #[test]
    fn tags() {
        let n = one("a: !!str 123\nb: !vault |\n  $ANSIBLE_VAULT;1.1\n");
        assert_eq!(n.get("a").and_then(Node::as_str), Some("123"));
        assert_eq!(n.get("b").and_then(|b| b.tag.as_deref()), Some("!vault"));
    }

    #[test]
    fn yaml11_for_ansible() {
        let s = parse_stream("t.yml", "a: yes\nmode: 0644\n", Schema::Yaml11);
        assert_eq!(s.docs[0].get("a").and_then(Node::as_bool), Some(true));
        assert_eq!(s.docs[0].get("mode").and_then(Node::as_i64), Some(420));
    }
}
