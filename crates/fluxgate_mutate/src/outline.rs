//! A line outline of a block-style YAML (or YAML-shaped Jinja) file: for each line its key, its
//! dotted path in the document, its value's text and byte range, and its comment. Mutants are
//! text edits of the committed file (so a mutant looks like the diff a person would write),
//! and the outline says which lines hold which key, where a key's block ends, and which
//! comments tag it. Flow collections (`{a: 1}`) are one value; block scalars are skipped.

use std::collections::HashMap;

/// One line of the file.
#[derive(Clone, Debug, Default)]
pub struct Line {
    /// 1-based.
    pub no: u32,
    /// The column of the line's first character that is not a space or a `- ` marker.
    pub indent: usize,
    /// The column of the first `-` of a sequence item that starts on this line.
    pub dash: Option<usize>,
    /// `key` of `key: value` (unquoted).
    pub key: Option<String>,
    /// The path of the key or item in its document, `[n]` for the n-th item of a sequence.
    pub path: Vec<String>,
    /// The value's text as written (quotes kept), without a trailing comment; empty when the
    /// value is a block below the key.
    pub value: String,
    /// The byte range of `value` in the line.
    pub value_at: (usize, usize),
    /// The comment at the end of the line, or the whole line when it is only a comment.
    pub comment: Option<String>,
    /// The document index (`---` separates documents).
    pub doc: usize,
    /// Blank, comment-only, Jinja control or block-scalar content: no key, no value.
    pub inert: bool,
}

impl Line {
    /// Whether the line holds a scalar (a key's or a sequence item's) written on it.
    pub fn is_scalar(&self) -> bool {
        !self.inert
            && !self.value.is_empty()
            && !self.value.starts_with('|')
            && !self.value.starts_with('>')
            && !self.value.starts_with('{')
            && !self.value.starts_with('[')
            && !self.value.starts_with('&')
            && !self.value.starts_with('*')
    }

    /// The dotted path (`spec.values.ipam.mode`, `a[0].b`).
    pub fn dotted(&self) -> String {
        let mut out = String::new();
        for c in &self.path {
            if c.starts_with('[') || out.is_empty() {
                out.push_str(c);
            } else {
                out.push('.');
                out.push_str(c);
            }
        }
        out
    }
}

/// The outline of one file.
pub struct Outline {
    pub lines: Vec<Line>,
    raw: Vec<String>,
}

impl Outline {
    #[must_use]
    pub fn new(text: &str) -> Outline {
        let raw: Vec<String> = text.lines().map(str::to_string).collect();
        let mut lines = Vec::with_capacity(raw.len());
        let mut stack: Vec<(usize, String, bool)> = Vec::new();
        let mut counters: HashMap<String, usize> = HashMap::new();
        let mut doc = 0usize;
        // A block scalar's content: lines indented deeper than its key.
        let mut block_above: Option<usize> = None;
        for (i, text) in raw.iter().enumerate() {
            let no = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let indent_of = text.len() - text.trim_start().len();
            let trimmed = text.trim();
            if let Some(k) = block_above {
                if trimmed.is_empty() || indent_of > k {
                    lines.push(inert(no, doc, None));
                    continue;
                }
                block_above = None;
            }
            if trimmed == "---" || trimmed.starts_with("--- ") {
                doc += 1;
                stack.clear();
                counters.clear();
                lines.push(inert(no, doc, None));
                continue;
            }
            if trimmed.is_empty()
                || trimmed.starts_with('#')
                || trimmed.starts_with("{%")
                || trimmed.starts_with("{#")
                || trimmed == "..."
            {
                let comment = trimmed.starts_with('#').then(|| trimmed.to_string());
                lines.push(inert(no, doc, comment));
                continue;
            }
            // Sequence markers: `- `, possibly more than one (`- - a`).
            let mut col = indent_of;
            let mut dash = None;
            let mut rest = &text[col..];
            while rest == "-" || rest.starts_with("- ") {
                if dash.is_none() {
                    dash = Some(col);
                }
                let skip = 1 + rest[1..].len() - rest[1..].trim_start().len();
                col += skip;
                rest = &text[col..];
            }
            if let Some(d) = dash {
                while stack
                    .last()
                    .is_some_and(|(ind, _, item)| *ind > d || (*ind == d && *item))
                {
                    stack.pop();
                }
                let parent = path_key(&stack);
                let n = counters.entry(format!("{parent}@{d}")).or_insert(0);
                let comp = format!("[{n}]");
                *n += 1;
                stack.push((d, comp, true));
            }
            let (key, value_at) = split_key(rest);
            let mut line = Line {
                no,
                indent: col,
                dash,
                doc,
                ..Line::default()
            };
            if let Some((k, vstart)) = key {
                while stack
                    .last()
                    .is_some_and(|(ind, _, item)| *ind > col || (*ind == col && !*item))
                {
                    stack.pop();
                }
                // A key at the column of an item's dash belongs above that sequence.
                while stack
                    .last()
                    .is_some_and(|(ind, _, item)| *ind == col && *item)
                {
                    stack.pop();
                }
                stack.push((col, k.clone(), false));
                line.key = Some(k);
                let (v, c) = split_comment(&rest[vstart..]);
                let start =
                    col + vstart + (rest[vstart..].len() - rest[vstart..].trim_start().len());
                line.value = v.trim().to_string();
                line.value_at = (start, start + line.value.len());
                line.comment = c.map(str::to_string);
                if line.value.starts_with('|') || line.value.starts_with('>') {
                    block_above = Some(col);
                }
            } else {
                let _ = value_at;
                let (v, c) = split_comment(rest);
                line.value = v.trim().to_string();
                line.value_at = (col, col + line.value.len());
                line.comment = c.map(str::to_string);
                if dash.is_none() {
                    // A continuation of a multi-line scalar or flow value: not a key.
                    line.inert = true;
                }
            }
            line.path = stack.iter().map(|(_, c, _)| c.clone()).collect();
            lines.push(line);
        }
        Outline { lines, raw }
    }

    /// The outline's document numbers that hold content, in order: the n-th is the n-th
    /// document a YAML parser returns (an empty document before a leading `---` is none).
    pub fn content_docs(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .lines
            .iter()
            .filter(|l| !l.inert)
            .map(|l| l.doc)
            .collect();
        out.dedup();
        out
    }

    /// The line with 1-based number `no`.
    pub fn line(&self, no: u32) -> Option<&Line> {
        self.lines.get((no as usize).checked_sub(1)?)
    }

    /// The raw text of line `no`.
    pub fn raw(&self, no: u32) -> &str {
        self.raw
            .get((no as usize).saturating_sub(1))
            .map_or("", String::as_str)
    }

    /// The first line of document `doc` whose path is `path`.
    pub fn find(&self, doc: usize, path: &[&str]) -> Option<&Line> {
        self.lines.iter().find(|l| {
            !l.inert
                && l.doc == doc
                && l.path.len() == path.len()
                && l.path.iter().zip(path).all(|(a, b)| a == b)
        })
    }

    /// The lines (1-based, inclusive) of the block the key or item on line `no` starts: the
    /// line and every deeper-indented line after it (trailing comments and blanks excluded).
    pub fn block(&self, no: u32) -> (u32, u32) {
        let Some(start) = self.line(no) else {
            return (no, no);
        };
        let own = start.dash.unwrap_or(start.indent);
        let key_col = start.indent;
        let mut end = no;
        for l in &self.lines[no as usize..] {
            if l.doc != start.doc {
                break;
            }
            let raw = self.raw(l.no);
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let col = raw.len() - raw.trim_start().len();
            let deeper = col > own
                // `key:\n- item`: items at the key's own column belong to it.
                || (start.dash.is_none() && start.value.is_empty() && l.dash == Some(key_col) && col == key_col);
            if !(deeper || l.inert && col > own) {
                break;
            }
            end = l.no;
        }
        (no, end)
    }

    /// The file's text with lines `from..=to` removed.
    pub fn without(&self, from: u32, to: u32) -> String {
        let mut out = String::new();
        for (i, l) in self.raw.iter().enumerate() {
            let no = u32::try_from(i + 1).unwrap_or(u32::MAX);
            if no < from || no > to {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    /// The file's text with the value on line `no` replaced by `value`.
    pub fn with_value(&self, no: u32, value: &str) -> Option<String> {
        let line = self.line(no)?;
        let raw = self.raw(no);
        let (a, b) = line.value_at;
        let mut changed = String::with_capacity(raw.len() + value.len());
        changed.push_str(raw.get(..a)?);
        changed.push_str(value);
        changed.push_str(raw.get(b..)?);
        Some(self.with_line(no, &changed))
    }

    /// The file's text with line `no` replaced by `text`.
    pub fn with_line(&self, no: u32, text: &str) -> String {
        let mut out = String::new();
        for (i, l) in self.raw.iter().enumerate() {
            if i + 1 == no as usize {
                out.push_str(text);
            } else {
                out.push_str(l);
            }
            out.push('\n');
        }
        out
    }

    /// The file's text with lines `a` and `b` exchanged.
    pub fn swapped(&self, a: u32, b: u32) -> String {
        let mut raw = self.raw.clone();
        raw.swap(a as usize - 1, b as usize - 1);
        let mut out = raw.join("\n");
        out.push('\n');
        out
    }

    /// The comment lines directly above line `no` (nearest last), up to a blank or content line.
    pub fn comments_above(&self, no: u32) -> Vec<&str> {
        let mut out = Vec::new();
        let mut i = no as usize - 1;
        while i > 0 {
            let raw = self.raw[i - 1].trim();
            if raw.starts_with('#') {
                out.push(raw);
                i -= 1;
            } else {
                break;
            }
        }
        out.reverse();
        out
    }
}

fn inert(no: u32, doc: usize, comment: Option<String>) -> Line {
    Line {
        no,
        doc,
        comment,
        inert: true,
        ..Line::default()
    }
}

fn path_key(stack: &[(usize, String, bool)]) -> String {
    stack
        .iter()
        .map(|(_, c, _)| c.as_str())
        .collect::<Vec<_>>()
        .join("/")
}

/// `key: rest` -> the unquoted key and the byte offset of what follows the colon.
fn split_key(s: &str) -> (Option<(String, usize)>, usize) {
    let bytes = s.as_bytes();
    let (key, after) = match bytes.first() {
        Some(b'"' | b'\'') => {
            let q = bytes[0];
            let Some(end) = s[1..].find(q as char) else {
                return (None, 0);
            };
            (s[1..=end].to_string(), end + 2)
        }
        Some(b'{' | b'[' | b'&' | b'*' | b'!' | b'|' | b'>') | None => return (None, 0),
        _ => {
            let mut found = None;
            for (i, c) in s.char_indices() {
                if c == ':'
                    && s[i + 1..]
                        .chars()
                        .next()
                        .is_none_or(|n| n == ' ' || n == '\t')
                {
                    found = Some(i);
                    break;
                }
                if c == '#' && i > 0 && s[..i].ends_with(' ') {
                    break;
                }
                if c == '{' && s[i + 1..].starts_with('{') {
                    // A Jinja expression before any colon: a value, not a key.
                    break;
                }
            }
            let Some(i) = found else {
                return (None, 0);
            };
            (s[..i].trim_end().to_string(), i)
        }
    };
    if !s[after..].starts_with(':') {
        return (None, 0);
    }
    if key.is_empty() || key.contains(' ') && !matches!(bytes[0], b'"' | b'\'') {
        return (None, 0);
    }
    (Some((key, after + 1)), after + 1)
}

/// A value and its trailing comment (` # ...` outside quotes and Jinja).
fn split_comment(s: &str) -> (&str, Option<&str>) {
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' if prev == ' ' || i == 0 => quote = Some(c),
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                '#' if depth == 0 && (prev == ' ' || prev == '\t' || i == 0) => {
                    return (&s[..i], Some(s[i..].trim()));
                }
                _ => {}
            },
        }
        prev = c;
    }
    (s, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# header
apiVersion: v1
spec:
  values:
    # [parity] a tagged block
    bpf:  # [parity]
      masquerade: true
    list:
      - 10.42.0.0/16
      - name: x
        value: \"1\"
    hostRoot: /sys/fs/cgroup # trailing
  other:
  - a
  - b
---
kind: Second
";

    #[test]
    fn paths_values_and_comments() {
        let o = Outline::new(TEXT);
        let l = o.find(0, &["spec", "values", "bpf", "masquerade"]).unwrap();
        assert_eq!((l.no, l.value.as_str()), (7, "true"));
        assert_eq!(o.line(6).unwrap().comment.as_deref(), Some("# [parity]"));
        assert_eq!(o.comments_above(6), ["# [parity] a tagged block"]);
        let item = o.line(9).unwrap();
        assert_eq!(item.dotted(), "spec.values.list[0]");
        assert_eq!(item.value, "10.42.0.0/16");
        assert_eq!(o.line(11).unwrap().dotted(), "spec.values.list[1].value");
        assert_eq!(o.line(12).unwrap().value, "/sys/fs/cgroup");
        assert_eq!(o.line(15).unwrap().dotted(), "spec.other[1]");
        assert_eq!(o.find(1, &["kind"]).unwrap().no, 17);
    }

    #[test]
    fn blocks_end_where_the_indentation_returns() {
        let o = Outline::new(TEXT);
        assert_eq!(o.block(6), (6, 7));
        assert_eq!(o.block(8), (8, 11));
        assert_eq!(o.block(13), (13, 15));
        assert_eq!(o.block(4), (4, 12));
        let edited = o.with_value(12, "/x").unwrap();
        assert!(edited.contains("    hostRoot: /x # trailing\n"));
        assert!(!o.without(6, 7).contains("masquerade"));
    }
}
