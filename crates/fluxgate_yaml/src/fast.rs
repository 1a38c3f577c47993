//! A direct reader for the plain block YAML that tools print (`helm template`, `kubectl`,
//! `toYaml`): block mappings with simple keys, block sequences, one-line plain and quoted
//! scalars (double quotes with their escapes), literal block scalars, `[]` and `{}`, comments
//! and `---` markers.
//!
//! It builds the same [`Node`]s as the event-driven reader (values, locations, `implicit_null`)
//! at a fraction of the cost, or gives up: anything else (anchors, aliases, tags, flow
//! collections with content, folded or indented block scalars, escaped line breaks,
//! undefined escapes, multi-line scalars,
//! tabs, duplicate or merge keys, odd indentation) returns `None` and the caller parses the
//! text the general way, which also words every error. Agreement with the general reader is
//! tested over the corpus and fuzzed (`fast_matches_general`).

use std::sync::Arc;

use fluxgate_diagnostics::Location;
use foldhash::HashMap;

use crate::node::{Map, Node, Value};
use crate::scalar::{Schema, resolve_plain};

/// Gives up: the general reader decides.
struct GiveUp;

type R<T> = Result<T, GiveUp>;

/// One line of the text: its number (1-based), its indentation and what follows it. A
/// sequence entry's content (`- a: 1`) is read as a line of its own at its column.
#[derive(Clone, Copy)]
struct Line<'t> {
    no: u32,
    indent: usize,
    /// After the indentation, trailing spaces cut.
    rest: &'t str,
    /// After the indentation, as written (a literal block keeps trailing spaces).
    raw: &'t str,
}

impl Line<'_> {
    /// Blank, or only a comment.
    fn is_empty(&self) -> bool {
        self.rest.is_empty() || self.rest.starts_with('#')
    }
}

struct Reader<'t> {
    lines: Vec<Line<'t>>,
    at: usize,
    file: Arc<str>,
    schema: Schema,
    /// Nodes left before the general reader's budget would be reached.
    budget: usize,
    /// Collections open: past the general reader's bound it gives up (and this reader
    /// recurses no deeper than that).
    depth: usize,
    /// Whether the text ends with a line break (a literal block scalar on its last line
    /// keeps that break only when it does).
    terminated: bool,
    /// The entries of the mappings being read, innermost last: each becomes a map of exactly
    /// its size (grown entry by entry, a map kept room for up to twice its entries, and the
    /// entries of a chart's CRDs were a third of its memory).
    entries: Vec<(String, Node)>,
    /// The items of the sequences being read, as [`Reader::entries`].
    items: Vec<Node>,
    /// The anchored scalars of the document so far, by name (a later anchor of a name
    /// replaces the earlier).
    anchors: HashMap<&'t str, Node>,
    /// Bytes the aliases may still copy: the general reader's bound, spent as it spends it
    /// (past it, that reader reports an alias bomb, so this one leaves the text to it).
    alias_bytes: usize,
}

/// The documents of `text`, or `None` when the text is not of the plain kind this reads.
pub(crate) fn parse(file: &Arc<str>, text: &str, schema: Schema) -> Option<Vec<Node>> {
    // Only characters this reader prints as they are (the general reader refuses what YAML
    // cannot carry, and judges tabs and carriage returns).
    if !all_plain_printable(text) {
        return None;
    }
    // A document Helm renders, a patch written inline, an empty text: not every text ends
    // with a line break.
    let (body, terminated) = match text.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (text, false),
    };
    let mut lines = Vec::with_capacity(memchr::memchr_iter(b'\n', body.as_bytes()).count() + 1);
    for (i, raw) in crate::split_lines(body).enumerate() {
        // Spaces are one byte: the cuts fall between characters.
        let bytes = raw.as_bytes();
        let indent = bytes.iter().take_while(|&&b| b == b' ').count();
        let end = bytes.len()
            - bytes[indent..]
                .iter()
                .rev()
                .take_while(|&&b| b == b' ')
                .count();
        lines.push(Line {
            no: u32::try_from(i + 1).ok()?,
            indent,
            rest: &raw[indent..end],
            raw: &raw[indent..],
        });
    }
    let mut r = Reader {
        lines,
        at: 0,
        file: file.clone(),
        schema,
        budget: crate::parse::NODE_BUDGET,
        depth: 0,
        terminated,
        entries: Vec::new(),
        items: Vec::new(),
        anchors: HashMap::default(),
        alias_bytes: crate::parse::ALIAS_BYTE_BUDGET,
    };
    r.stream().ok()
}

impl<'t> Reader<'t> {
    fn loc(&self, line: u32, col: usize) -> R<Location> {
        Ok(Location {
            file: self.file.clone(),
            line,
            column: u32::try_from(col + 1).map_err(|_| GiveUp)?,
        })
    }

    fn node(&mut self, value: Value, loc: Location) -> R<Node> {
        self.budget = self.budget.checked_sub(1).ok_or(GiveUp)?;
        Ok(Node::new(value, loc))
    }

    /// The next line with content, skipping blank and comment lines.
    fn peek(&mut self) -> Option<Line<'t>> {
        while let Some(l) = self.lines.get(self.at) {
            if l.is_empty() {
                self.at += 1;
            } else {
                return Some(*l);
            }
        }
        None
    }

    fn stream(&mut self) -> R<Vec<Node>> {
        let mut docs = Vec::new();
        // Whether a `---` opened a document that has no content yet.
        let mut opened = false;
        while let Some(l) = self.peek() {
            if l.indent == 0 && (l.rest == "---" || l.rest.starts_with("--- #")) {
                if opened {
                    // An empty document: the general reader words what it holds.
                    return Err(GiveUp);
                }
                opened = true;
                self.at += 1;
                continue;
            }
            if l.indent != 0
                || l.rest.starts_with('%')
                || l.rest.starts_with("...")
                || l.rest.starts_with("---")
            {
                return Err(GiveUp);
            }
            opened = false;
            self.anchors.clear();
            docs.push(self.block(0)?);
            if let Some(next) = self.peek()
                && !(next.indent == 0 && next.rest.starts_with("---"))
            {
                return Err(GiveUp);
            }
        }
        if opened {
            return Err(GiveUp);
        }
        Ok(docs)
    }

    /// The collection that starts at the next line, which is at `indent`.
    fn block(&mut self, indent: usize) -> R<Node> {
        if self.depth >= crate::parse::MAX_DEPTH / 2 {
            return Err(GiveUp);
        }
        self.depth += 1;
        let node = self.block_at(indent);
        self.depth -= 1;
        node
    }

    fn block_at(&mut self, indent: usize) -> R<Node> {
        let l = self.peek().ok_or(GiveUp)?;
        if l.indent != indent {
            return Err(GiveUp);
        }
        if is_entry(l.rest) {
            self.sequence(indent, false)
        } else if split_key(l.rest).is_some() {
            self.mapping(indent)
        } else if matches!(cut_comment(l.rest).0, "[]" | "{}") {
            // An empty collection written on the line below its key.
            self.at += 1;
            let loc = self.loc(l.no, l.indent)?;
            let value = if l.rest.starts_with('[') {
                Value::Seq(Vec::new())
            } else {
                Value::Map(Box::default())
            };
            self.node(value, loc)
        } else {
            Err(GiveUp)
        }
    }

    /// The sequence whose entries are at `indent`. `indentless`: a mapping's value at the
    /// key's indentation, which the general reader places at its first entry's content.
    fn sequence(&mut self, indent: usize, indentless: bool) -> R<Node> {
        let first = self.peek().ok_or(GiveUp)?;
        let loc = if indentless {
            let after = &first.rest[1..];
            let content = after.trim_start_matches(' ');
            if content.is_empty() || content.starts_with('#') {
                return Err(GiveUp);
            }
            self.loc(first.no, first.indent + 1 + after.len() - content.len())?
        } else {
            self.loc(first.no, first.indent)?
        };
        let base = self.items.len();
        while let Some(l) = self.peek() {
            if l.indent < indent
                || ends_document(l)
                || indentless && l.indent == indent && !is_entry(l.rest)
            {
                // Less indented, or (a sequence at its key's indentation) the next key.
                break;
            }
            if l.indent > indent || !is_entry(l.rest) {
                return Err(GiveUp);
            }
            let after = &l.rest[1..];
            let content = after.trim_start_matches(' ');
            if content.is_empty() || content.starts_with('#') && after.starts_with(' ') {
                // `-` alone: the item is the block below, or null.
                self.at += 1;
                let item = self.value_below(indent, None)?;
                self.items.push(item);
                continue;
            }
            let col = l.indent + 1 + (after.len() - content.len());
            if is_entry(content) || split_key(content).is_some() {
                // `- a: 1` or `- - a`: a collection at the content's column.
                self.lines[self.at] = Line {
                    no: l.no,
                    indent: col,
                    rest: content,
                    raw: &l.raw[col - l.indent..],
                };
                let item = self.block(col)?;
                self.items.push(item);
            } else {
                self.at += 1;
                let item = self.inline(content, l.no, col, indent)?;
                self.items.push(item);
            }
        }
        let items = self.items.drain(base..).collect();
        self.node(Value::Seq(items), loc)
    }

    fn mapping(&mut self, indent: usize) -> R<Node> {
        let first = self.peek().ok_or(GiveUp)?;
        let base = self.entries.len();
        while let Some(l) = self.peek() {
            if l.indent < indent || ends_document(l) {
                break;
            }
            if l.indent > indent {
                return Err(GiveUp);
            }
            let Some((key, value_at)) = split_key(l.rest) else {
                return Err(GiveUp);
            };
            let key = self.key(key)?;
            if key == "<<" {
                return Err(GiveUp);
            }
            self.budget = self.budget.checked_sub(1).ok_or(GiveUp)?;
            let rest = &l.rest[value_at..];
            let content = rest.trim_start_matches(' ');
            let col = l.indent + value_at + (rest.len() - content.len());
            self.at += 1;
            let value = if content.is_empty() || content.starts_with('#') && rest.starts_with(' ') {
                self.value_below(indent, Some((l.no, l.indent + value_at - 1)))?
            } else {
                self.inline(content, l.no, col, indent)?
            };
            self.entries.push((key, value));
        }
        let map = self.take_map(base)?;
        let loc = self.loc(first.no, first.indent)?;
        self.node(Value::Map(Box::new(map)), loc)
    }

    /// The entries read since `base` as a map of exactly their number.
    fn take_map(&mut self, base: usize) -> R<Map> {
        let mut map = Map::with_capacity_and_hasher(
            self.entries.len() - base,
            foldhash::fast::RandomState::default(),
        );
        for (key, value) in self.entries.drain(base..) {
            // A key written twice is the general reader's to report.
            if map.insert(key, value).is_some() {
                return Err(GiveUp);
            }
        }
        Ok(map)
    }

    /// A key's text: a plain word that reads as a string, or a one-line quoted string.
    fn key(&self, key: &str) -> R<String> {
        if key.starts_with(['\'', '"']) {
            return match quoted(key)? {
                (s, "") => Ok(s),
                _ => Err(GiveUp),
            };
        }
        match resolve_plain(key, self.schema) {
            Value::String(s) => Ok(s),
            _ => Err(GiveUp),
        }
    }

    /// The value of an entry with nothing after its indicator on line `no`: the block on the
    /// lines below (more indented; for a mapping's value, a sequence may also sit at the
    /// key's indentation), or an implicit null.
    /// `colon`: where a mapping entry's `:` is, where the general reader places an implicit
    /// null; `None` for a sequence entry (whose implicit null is its own).
    fn value_below(&mut self, indent: usize, colon: Option<(u32, usize)>) -> R<Node> {
        match self.peek() {
            Some(l) if l.indent > indent => self.block(l.indent),
            Some(l) if colon.is_some() && l.indent == indent && is_entry(l.rest) => {
                self.sequence(indent, true)
            }
            // Nothing below: an implicit null, at the indicator.
            _ => {
                let (no, col) = colon.ok_or(GiveUp)?;
                let loc = self.loc(no, col)?;
                let mut n = self.node(Value::Null, loc)?;
                n.implicit_null = true;
                Ok(n)
            }
        }
    }

    /// A value written on its line at column `col` (`content`, comment included), for an
    /// entry of the collection at `indent`.
    fn inline(&mut self, content: &'t str, no: u32, col: usize, indent: usize) -> R<Node> {
        let loc = self.loc(no, col)?;
        let value = match content.as_bytes()[0] {
            b'\'' | b'"' => {
                let (s, after) = quoted(content)?;
                if !(after.is_empty() || after.starts_with(" #")) {
                    return Err(GiveUp);
                }
                Value::String(s)
            }
            b'|' => return self.literal(content, indent),
            b'[' | b'{' => {
                // Columns are bytes here, characters for the general reader.
                if !content.is_ascii() {
                    return Err(GiveUp);
                }
                let (node, end) = self.flow(content, 0, no, col)?;
                let after = &content[end..];
                if !(after.is_empty() || after.starts_with(" #")) {
                    return Err(GiveUp);
                }
                // A collection continued on the lines below is the general reader's.
                if self.peek().is_some_and(|l| l.indent > indent) {
                    return Err(GiveUp);
                }
                return Ok(node);
            }
            b'&' => return self.anchored(content, no, col, indent),
            b'*' => return self.alias(content, indent),
            b'>' | b'!' | b'%' | b'@' | b'`' | b'?' | b':' | b',' | b']' | b'}' | b'#' => {
                return Err(GiveUp);
            }
            _ => {
                let (text, _) = cut_comment(content);
                // Scalars are short: a byte loop, no searcher set up for each.
                if text.as_bytes().windows(2).any(|w| w == b": ")
                    || text.ends_with(':')
                    || is_entry(text)
                {
                    return Err(GiveUp);
                }
                resolve_plain(text, self.schema)
            }
        };
        // A scalar continued on the lines below is the general reader's.
        if self.peek().is_some_and(|l| l.indent > indent) {
            return Err(GiveUp);
        }
        self.node(value, loc)
    }

    /// `&name value` at column `col`: a scalar written on its line, kept for the aliases
    /// below it (`*name`), which copy it whole, place included, as the general reader does.
    /// An anchored collection, or anything else, is the general reader's.
    fn anchored(&mut self, content: &'t str, no: u32, col: usize, indent: usize) -> R<Node> {
        let name = anchor_name(&content[1..]).ok_or(GiveUp)?;
        let after = &content[1 + name.len()..];
        let rest = after.trim_start_matches(' ');
        if rest.len() == after.len() || rest.is_empty() || rest.starts_with(['#', '&', '*', '|']) {
            return Err(GiveUp);
        }
        let mut node = self.inline(rest, no, col + content.len() - rest.len(), indent)?;
        if matches!(node.value, Value::Map(_) | Value::Seq(_)) {
            return Err(GiveUp);
        }
        node.loc = self.loc(no, col)?;
        self.anchors.insert(name, node.clone());
        Ok(node)
    }

    /// `*name`: a copy of the anchored node, spent from the budgets as the general reader
    /// spends it (the alias's own node, the copy's nodes, the copy's bytes).
    fn alias(&mut self, content: &str, indent: usize) -> R<Node> {
        let (text, _) = cut_comment(content);
        let node = anchor_name(&text[1..])
            .filter(|name| name.len() == text.len() - 1)
            .and_then(|name| self.anchors.get(name))
            .ok_or(GiveUp)?
            .clone();
        if self.peek().is_some_and(|l| l.indent > indent) {
            return Err(GiveUp);
        }
        self.alias_bytes = self
            .alias_bytes
            .checked_sub(node.text_bytes())
            .ok_or(GiveUp)?;
        self.budget = self.budget.checked_sub(1 + node.size()).ok_or(GiveUp)?;
        Ok(node)
    }

    /// The flow collection (`[a, "b"]`, `{ drop: ["ALL"] }`) that starts at byte `at` of
    /// `content` (ASCII, on line `no`, whose byte 0 is at column `col`), and the byte after
    /// it. Its scalars are quoted strings or plain words; it ends on its line. Anything else
    /// (a key without a value, a trailing comma, a plain scalar with other characters) is
    /// the general reader's.
    fn flow(&mut self, content: &str, at: usize, no: u32, col: usize) -> R<(Node, usize)> {
        if self.depth >= crate::parse::MAX_DEPTH / 2 {
            return Err(GiveUp);
        }
        self.depth += 1;
        let read = self.flow_at(content, at, no, col);
        self.depth -= 1;
        read
    }

    fn flow_at(&mut self, content: &str, at: usize, no: u32, col: usize) -> R<(Node, usize)> {
        let b = content.as_bytes();
        let skip = |at: &mut usize| {
            while b.get(*at) == Some(&b' ') {
                *at += 1;
            }
        };
        let loc = self.loc(no, col + at)?;
        let map = b.get(at) == Some(&b'{');
        let close = if map { b'}' } else { b']' };
        let (base_items, base_entries) = (self.items.len(), self.entries.len());
        let mut i = at + 1;
        skip(&mut i);
        if b.get(i) == Some(&close) {
            i += 1;
        } else {
            loop {
                if map {
                    let (key, after) = self.flow_key(content, i)?;
                    // `key: value`: a key alone, or one followed by anything but `: `, is
                    // the general reader's.
                    if b.get(after) != Some(&b':') || b.get(after + 1) != Some(&b' ') {
                        return Err(GiveUp);
                    }
                    if key == "<<" {
                        return Err(GiveUp);
                    }
                    self.budget = self.budget.checked_sub(1).ok_or(GiveUp)?;
                    i = after + 1;
                    skip(&mut i);
                    let (value, end) = self.flow_value(content, i, no, col)?;
                    self.entries.push((key, value));
                    i = end;
                } else {
                    let (item, end) = self.flow_value(content, i, no, col)?;
                    self.items.push(item);
                    i = end;
                }
                skip(&mut i);
                match b.get(i) {
                    Some(b',') => {
                        i += 1;
                        skip(&mut i);
                        if b.get(i).is_none_or(|&c| c == close) {
                            return Err(GiveUp);
                        }
                    }
                    Some(&c) if c == close => {
                        i += 1;
                        break;
                    }
                    _ => return Err(GiveUp),
                }
            }
        }
        let value = if map {
            Value::Map(Box::new(self.take_map(base_entries)?))
        } else {
            Value::Seq(self.items.drain(base_items..).collect())
        };
        Ok((self.node(value, loc)?, i))
    }

    /// A key of a flow mapping at byte `at`: a quoted string or a plain word that reads as a
    /// string, and the byte after it.
    fn flow_key(&self, content: &str, at: usize) -> R<(String, usize)> {
        let rest = &content[at..];
        if rest.starts_with(['\'', '"']) {
            let (s, after) = quoted(rest)?;
            return Ok((s, content.len() - after.len()));
        }
        let len = flow_word(rest).ok_or(GiveUp)?;
        Ok((self.key(&rest[..len])?, at + len))
    }

    /// A value of a flow collection at byte `at`: a nested collection, a quoted string or a
    /// plain word; and the byte after it.
    fn flow_value(&mut self, content: &str, at: usize, no: u32, col: usize) -> R<(Node, usize)> {
        let rest = &content[at..];
        let (value, end) = match rest.as_bytes().first() {
            Some(b'[' | b'{') => return self.flow(content, at, no, col),
            Some(b'\'' | b'"') => {
                let (s, after) = quoted(rest)?;
                (Value::String(s), content.len() - after.len())
            }
            _ => {
                let len = flow_word(rest).ok_or(GiveUp)?;
                (resolve_plain(&rest[..len], self.schema), at + len)
            }
        };
        let loc = self.loc(no, col + at)?;
        Ok((self.node(value, loc)?, end))
    }

    /// A literal block scalar (`|`, `|-`) whose header is `content`.
    fn literal(&mut self, content: &str, indent: usize) -> R<Node> {
        let (header, _) = cut_comment(content);
        let strip = match header {
            "|" => false,
            "|-" => true,
            _ => return Err(GiveUp),
        };
        // The content's indentation is its first line's; blank lines before it are the
        // general reader's (their spaces may set it).
        let first = self.lines.get(self.at).copied();
        // The general reader places the scalar at its first line's content; an empty one is
        // its own.
        let (width, loc) = match first {
            Some(l) if !l.rest.is_empty() && l.indent > indent => {
                (l.indent, self.loc(l.no, l.indent)?)
            }
            _ => return Err(GiveUp),
        };
        let mut out = String::new();
        let mut pending_breaks = 0usize;
        let mut any = false;
        while let Some(l) = self.lines.get(self.at) {
            if l.rest.is_empty() {
                if l.indent > width {
                    return Err(GiveUp);
                }
                pending_breaks += 1;
                self.at += 1;
                continue;
            }
            if l.indent < width {
                break;
            }
            if any {
                out.push('\n');
            }
            for _ in 0..pending_breaks {
                out.push('\n');
            }
            pending_breaks = 0;
            for _ in width..l.indent {
                out.push(' ');
            }
            out.push_str(l.raw);
            any = true;
            self.at += 1;
        }
        // Whether the last line's break is the scalar's is the general reader's to say.
        if !self.terminated && self.at == self.lines.len() {
            return Err(GiveUp);
        }
        if !strip && any {
            out.push('\n');
        }
        self.node(Value::String(out), loc)
    }
}

/// A character YAML carries, other than the tab, the carriage return and the byte order mark
/// (which this reader leaves to the general one).
fn plain_printable(c: char) -> bool {
    crate::parse::yaml_printable(c) && !matches!(c, '\t' | '\r' | '\u{FEFF}')
}

/// Whether every character of `text` is [`plain_printable`]: printable ASCII and line feeds
/// are taken 32 bytes at a time (a loop without early exit, which the compiler turns into
/// vector compares); a block holding anything else is looked at character by character.
#[expect(
    clippy::needless_bitwise_bool,
    reason = "without branches, the block's compares are vectorised"
)]
fn all_plain_printable(text: &str) -> bool {
    const BLOCK: usize = 32;
    let b = text.as_bytes();
    let mut at = 0;
    while at < b.len() {
        let end = (at + BLOCK).min(b.len());
        let ascii = b[at..end].iter().fold(true, |ok, &c| {
            ok & ((c.wrapping_sub(b' ') < 0x7F - b' ') | (c == b'\n'))
        });
        if ascii {
            at = end;
            continue;
        }
        // `at` is on a character boundary: the block's characters, up to the one that
        // crosses its end.
        let Some(rest) = text.get(at..) else {
            return false;
        };
        for c in rest.chars() {
            if !plain_printable(c) {
                return false;
            }
            at += c.len_utf8();
            if at >= end {
                break;
            }
        }
    }
    true
}

/// Whether `rest` starts a sequence entry (`-` then a space or nothing).
fn is_entry(rest: &str) -> bool {
    rest == "-" || rest.starts_with("- ")
}

/// A line that ends the document's top block: a marker (`---`, `...`) at the start of a line,
/// which [`Reader::stream`] then reads or leaves to the general reader.
fn ends_document(l: Line<'_>) -> bool {
    l.indent == 0
        && (l.rest.starts_with("---") || l.rest.starts_with("..."))
        && matches!(l.rest.as_bytes().get(3), None | Some(b' '))
}

/// The bytes a plain key read directly may hold: ASCII letters and digits, `_`, `/`, `.`
/// and `-` (not first).
const KEY_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'/' | b'.' | b'-');
        c += 1;
    }
    t
};

/// `key: value` (or `key:` at the end): the key's text and where the value starts (after
/// the colon), for a plain key of simple characters or a one-line quoted key.
fn split_key(rest: &str) -> Option<(&str, usize)> {
    let end = if rest.starts_with(['\'', '"']) {
        let q = rest.as_bytes()[0];
        let mut i = 1;
        let b = rest.as_bytes();
        loop {
            match b.get(i) {
                None | Some(b'\\') => return None,
                Some(&c) if c == q => {
                    if q == b'\'' && b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    break i + 1;
                }
                Some(_) => i += 1,
            }
        }
    } else {
        // One pass up to the colon, stopping at the first character a simple key cannot
        // have (a line of text stops at its first space).
        let b = rest.as_bytes();
        if b.first() == Some(&b'-') {
            return None;
        }
        // The key's characters, one table lookup each.
        let end = b
            .iter()
            .position(|&c| !KEY_BYTES[usize::from(c)])
            .unwrap_or(b.len());
        if end == 0 || b.get(end) != Some(&b':') {
            return None;
        }
        end
    };
    // YAML bounds an implicit key at 1024 characters; the general reader words it. Columns
    // here are bytes, the general reader's characters: a key not in ASCII moves what follows.
    if end > 1000 || !rest[..end].is_ascii() {
        return None;
    }
    let after = &rest[end..];
    let after = after.strip_prefix(':')?;
    if !(after.is_empty() || after.starts_with(' ')) {
        return None;
    }
    Some((&rest[..end], end + 1))
}

/// A one-line quoted scalar at the start of `s`: its value and what follows the closing quote.
/// Double quotes take YAML's escapes (`toJson` of a dashboard prints hundreds of kilobytes of
/// `\n` and `\"` on one line); an escaped line break or an escape YAML does not define is left
/// to the general reader.
fn quoted(s: &str) -> R<(String, &str)> {
    let q = s.as_bytes()[0];
    let body = &s[1..];
    if q == b'"' {
        let mut out = String::new();
        let mut rest = body;
        loop {
            let end = memchr::memchr2(b'"', b'\\', rest.as_bytes()).ok_or(GiveUp)?;
            out.push_str(&rest[..end]);
            if rest.as_bytes()[end] == b'"' {
                return Ok((out, &rest[end + 1..]));
            }
            let (c, used) = escape(&rest[end + 1..]).ok_or(GiveUp)?;
            out.push(c);
            rest = &rest[end + 1 + used..];
        }
    }
    let mut out = String::new();
    let mut rest = body;
    loop {
        let end = memchr::memchr(b'\'', rest.as_bytes()).ok_or(GiveUp)?;
        out.push_str(&rest[..end]);
        if rest[end + 1..].starts_with('\'') {
            out.push('\'');
            rest = &rest[end + 2..];
        } else {
            return Ok((out, &rest[end + 1..]));
        }
    }
}

/// The character a double-quoted escape stands for (what follows the backslash), and how many
/// bytes it took: YAML 1.2's escapes, hexadecimal ones only for a Unicode scalar value.
fn escape(s: &str) -> Option<(char, usize)> {
    let hex = |n: usize| {
        let digits = s.get(1..=n)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let c = char::from_u32(u32::from_str_radix(digits, 16).ok()?)?;
        Some((c, 1 + n))
    };
    let c = match s.as_bytes().first()? {
        b'0' => '\0',
        b'a' => '\u{7}',
        b'b' => '\u{8}',
        b't' | b'\t' => '\t',
        b'n' => '\n',
        b'v' => '\u{b}',
        b'f' => '\u{c}',
        b'r' => '\r',
        b'e' => '\u{1b}',
        b' ' => ' ',
        b'"' => '"',
        b'/' => '/',
        b'\\' => '\\',
        b'N' => '\u{85}',
        b'_' => '\u{a0}',
        b'L' => '\u{2028}',
        b'P' => '\u{2029}',
        b'x' => return hex(2),
        b'u' => return hex(4),
        b'U' => return hex(8),
        _ => return None,
    };
    Some((c, 1))
}

/// A plain value and its comment (` #...`), the value's trailing spaces cut.
/// The anchor or alias name at the start of `s`, of the characters this reader takes (the
/// general reader judges any other).
fn anchor_name(s: &str) -> Option<&str> {
    let end = s
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The length of the plain word `s` starts with, in a flow collection: letters, digits and
/// `_/.-` (not first), so that it cannot hold an indicator; `None` when it starts with none.
fn flow_word(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if !b
        .first()
        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'/' | b'.'))
    {
        return None;
    }
    Some(
        b.iter()
            .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'/' | b'.' | b'-')))
            .unwrap_or(b.len()),
    )
}

fn cut_comment(s: &str) -> (&str, &str) {
    // A byte loop: lines are short, and a two-byte pattern searcher costs more to set up.
    match s.as_bytes().windows(2).position(|w| w == b" #") {
        Some(i) => (s[..i].trim_end_matches(' '), &s[i..]),
        None => (s, ""),
    }
}

/// Why `a` and `b` differ, if they do (equality of nodes ignores locations).
fn differ(a: &Node, b: &Node, at: &str) -> Option<String> {
    if a.loc != b.loc || a.tag != b.tag || a.implicit_null != b.implicit_null {
        return Some(format!(
            "{at}: {:?}/{:?}/{} against {:?}/{:?}/{}",
            a.loc, a.tag, a.implicit_null, b.loc, b.tag, b.implicit_null
        ));
    }
    match (&a.value, &b.value) {
        (Value::Map(x), Value::Map(y)) => {
            if !x.keys().eq(y.keys()) {
                return Some(format!("{at}: keys {:?} against {:?}", x.keys(), y.keys()));
            }
            x.iter()
                .zip(y.values())
                .find_map(|((k, v), w)| differ(v, w, &format!("{at}.{k}")))
        }
        (Value::Seq(x), Value::Seq(y)) => {
            if x.len() != y.len() {
                return Some(format!("{at}: {} items against {}", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (v, w))| differ(v, w, &format!("{at}[{i}]")))
        }
        (Value::String(x), Value::String(y)) if x != y => {
            Some(format!("{at}: {x:?} against {y:?}"))
        }
        (x, y) if std::mem::discriminant(x) != std::mem::discriminant(y) || a != b => {
            Some(format!("{at}: {x:?} against {y:?}"))
        }
        _ => None,
    }
}

/// Whether the direct reader took `text`, and what it read differently from the general
/// reader, if anything (for the tests and fuzzing that hold the two to the same trees).
#[doc(hidden)]
#[must_use]
pub fn compare_readers(file: &str, text: &str, schema: Schema) -> (bool, Option<String>) {
    let Some(direct) = parse(&Arc::from(file), text, schema) else {
        return (false, None);
    };
    let general = crate::parse::parse_stream_general(file, text, schema);
    if !general.diagnostics.is_empty() {
        return (
            true,
            Some(format!("the general reader says {:?}", general.diagnostics)),
        );
    }
    if direct.len() != general.docs.len() {
        return (
            true,
            Some(format!(
                "{} documents against {}",
                direct.len(),
                general.docs.len()
            )),
        );
    }
    let d = direct
        .iter()
        .zip(&general.docs)
        .enumerate()
        .find_map(|(i, (a, b))| differ(a, b, &format!("doc {i}")));
    (true, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block scan decides as the character test does, wherever the odd character falls
    /// (first, last, across a block's end) and whatever it is.
    #[test]
    fn block_scan_agrees_with_the_character_test() {
        let odd = [
            "\t", "\r", "\u{1}", "\u{7f}", "\u{85}", "\u{9f}", "é", "\u{feff}", "\u{fffe}", "😀",
            "\u{2028}", "\u{e000}",
        ];
        let mut seen = [false; 2];
        for len in [0, 1, 30, 31, 32, 33, 63, 64, 65, 100] {
            for at in [0, 1, 15, 30, 31, 32, 33, 62, 63, 64] {
                for c in odd {
                    let base = "ab: c\n".repeat(20);
                    let mut s: String = base.chars().take(len).collect();
                    let at = at.min(s.len());
                    s.insert_str(at, c);
                    let want = s.chars().all(plain_printable);
                    assert_eq!(all_plain_printable(&s), want, "{s:?}");
                    seen[usize::from(want)] = true;
                }
            }
        }
        assert_eq!(seen, [true, true]);
        assert!(all_plain_printable(&"key: value\n".repeat(50)));
    }
}
