//! go-yaml's leniencies. kustomize, kubectl and Flux read YAML with go-yaml v3, which (as
//! libyaml) checks no indentation inside flow collections or quoted scalars and takes a tab
//! after a `:` indicator as a separator; saphyr follows the YAML spec there and refuses, e.g.
//!
//! ```yaml
//! spec:
//!   args: [
//!     "--port", "80"
//!   ]
//! ```
//!
//! where the `]` sits at the key's indentation. Such a text is rewritten into one saphyr
//! accepts with the same meaning: lines that start inside a flow collection or inside a
//! quoted scalar are indented further (the leading white space of such a line is never part
//! of a value), and a tab after `:` becomes a space. The rewrite is tried only when the
//! strict parse failed on one of these errors, and it is kept only if the rewritten text's
//! own parse confirms every edit: each indented line lies inside a flow collection or a quoted
//! scalar, and no replaced tab lies inside a scalar. Locations point into the original text.

use std::collections::HashMap;

/// The saphyr error for a `#` written right after a token, which go-yaml reads as a comment
/// (`[a, b]#c`, `"x"#c`): the rewrite puts a space before that `#`.
pub(crate) const COMMENT_UNSEPARATED: &str =
    "comments must be separated from other tokens by whitespace";

/// The saphyr errors [`relax`] may lift.
#[must_use]
pub(crate) fn is_relaxable(message: &str) -> bool {
    message.starts_with("invalid indentation")
        || message == "':' must be followed by a valid YAML whitespace"
}

/// A rewritten text and what was changed, in the rewritten text's coordinates (1-based lines,
/// 0-based character columns).
#[derive(Debug, Default)]
pub(crate) struct Relaxed {
    pub text: String,
    /// Lines indented further, and by how many spaces.
    pub pads: HashMap<usize, usize>,
    /// Tabs after a `:` replaced by spaces.
    pub tabs: Vec<(usize, usize)>,
    /// Spaces put before a `#` (where saphyr's own scan found the comment), in the order made,
    /// each in the coordinates of the text it was made in.
    pub spaces: Vec<(usize, usize)>,
}

impl Relaxed {
    /// The column in the original text of `col` on `line` of the rewritten text. Pads are made
    /// first, at line starts; spaces after, each after a token (so never before a pad).
    #[must_use]
    pub fn original_col(&self, line: usize, col: usize) -> usize {
        let mut col = col;
        for &(l, c) in self.spaces.iter().rev() {
            if l == line && col > c {
                col -= 1;
            }
        }
        let pad = self.pads.get(&line).copied().unwrap_or(0);
        col.saturating_sub(pad)
    }

    /// Puts a space before the character at `index` (a `#` saphyr reported at `line`, `col`).
    pub fn separate_comment(&mut self, index: usize, line: usize, col: usize) -> bool {
        let Some((at, _)) = self.text.char_indices().nth(index) else {
            return false;
        };
        if !self.text[at..].starts_with('#') {
            return false;
        }
        self.text.insert(at, ' ');
        self.spaces.push((line, col));
        true
    }
}

impl Relaxed {
    /// Puts a space between an alias used as a block mapping key and its `:` (`*app: x`, or
    /// `- *app: x`). go-yaml ends an alias name at the first character that is not a letter,
    /// digit, `_` or `-`, so it reads the alias `app` as the key; saphyr reads the alias
    /// `app:` and then misses the `:`. Whether anything changed.
    pub fn separate_alias_keys(&mut self) -> bool {
        let mut out = String::with_capacity(self.text.len() + 16);
        let mut changed = false;
        for (i, raw) in self.text.split_inclusive('\n').enumerate() {
            let body = raw.trim_start_matches([' ', '\t']);
            let indent = raw.len() - body.len();
            let dash = body
                .strip_prefix("- ")
                .map_or(0, |rest| 2 + (rest.len() - rest.trim_start().len()));
            let key = &body[dash..];
            let name_len = key.strip_prefix('*').map_or(0, |rest| {
                rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                    .unwrap_or(rest.len())
            });
            let colon = indent + dash + 1 + name_len;
            let is_alias_key = name_len > 0
                && raw[colon..].starts_with(':')
                && raw[colon + 1..].starts_with([' ', '\t', '\n', '\r']);
            if is_alias_key {
                out.push_str(&raw[..colon]);
                out.push(' ');
                out.push_str(&raw[colon..]);
                // Lines and columns as the other edits count them (1-based, characters).
                self.spaces.push((i + 1, raw[..colon].chars().count()));
                changed = true;
            } else {
                out.push_str(raw);
            }
        }
        self.text = out;
        changed
    }
}

/// What the rewritten text's parse found: flow collections and quoted scalars by their first
/// and last line, and the span of every scalar.
#[derive(Debug, Default)]
pub(crate) struct Evidence {
    pub flows: Vec<(usize, usize)>,
    pub quoted: Vec<(usize, usize)>,
    pub scalars: Vec<((usize, usize), (usize, usize))>,
}

impl Relaxed {
    /// Whether the parse of the rewritten text confirms every edit.
    #[must_use]
    pub fn confirmed_by(&self, ev: &Evidence) -> bool {
        let inside = |spans: &[(usize, usize)], line: usize| {
            spans
                .iter()
                .any(|&(start, end)| start < line && line <= end)
        };
        self.pads
            .keys()
            .all(|&l| inside(&ev.flows, l) || inside(&ev.quoted, l))
            && self
                .tabs
                .iter()
                .all(|&p| !ev.scalars.iter().any(|&(start, end)| start <= p && p < end))
    }
}

/// Where the scan is at the start of a line.
#[derive(Default)]
struct State {
    /// Columns (in the rewritten text) of the open `[` and `{`.
    flows: Vec<usize>,
    /// The open quote and its column (in the rewritten text).
    quote: Option<(char, usize)>,
    /// Inside a block scalar: the indentation its header line had, and that of its content
    /// once its first non-empty line has set it.
    block: Option<(usize, Option<usize>)>,
    /// A plain scalar in block context was open at the end of a line indented this much:
    /// lines indented further continue it.
    plain: Option<usize>,
}

/// Rewrites `text` as described in the module documentation (indentation and tabs).
#[must_use]
pub(crate) fn relax(text: &str) -> Relaxed {
    let mut out = Relaxed {
        text: String::with_capacity(text.len() + 64),
        ..Relaxed::default()
    };
    let mut st = State::default();
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let line_no = i + 1;
        let body = raw.trim_end_matches(['\n', '\r']);
        let ending = &raw[body.len()..];
        let mut chars: Vec<char> = body.chars().collect();
        let indent = chars
            .iter()
            .position(|c| !matches!(c, ' ' | '\t'))
            .unwrap_or(chars.len());
        let first = chars.get(indent).copied();
        if let Some((header, content)) = st.block {
            let inside = match content {
                _ if first.is_none() => true,
                Some(content) => indent >= content,
                None => indent > header,
            };
            if inside {
                if content.is_none() && first.is_some() {
                    st.block = Some((header, Some(indent)));
                }
                out.text.push_str(raw);
                continue;
            }
            st.block = None;
        }
        if let Some(from) = st.plain.take()
            && first.is_some_and(|c| c != '#')
            && indent > from
        {
            st.plain = Some(from);
            out.text.push_str(raw);
            continue;
        }
        let target = match (st.quote, st.flows.first()) {
            (Some((_, col)), _) => Some(col),
            (None, Some(&col)) if first != Some('#') => Some(col + 1),
            _ => None,
        };
        let mut pad = 0;
        if let Some(t) = target
            && first.is_some()
            && indent < t
            && !(indent == 0 && is_document_marker(&chars))
        {
            pad = t - indent;
            out.pads.insert(line_no, pad);
        }
        scan_line(&mut chars, indent, pad, line_no, &mut st, &mut out.tabs);
        out.text.extend(std::iter::repeat_n(' ', pad));
        out.text.extend(chars);
        out.text.push_str(ending);
    }
    out
}

fn is_document_marker(chars: &[char]) -> bool {
    (chars.starts_with(&['-', '-', '-']) || chars.starts_with(&['.', '.', '.']))
        && chars.get(3).is_none_or(|c| matches!(c, ' ' | '\t'))
}

fn is_blank(c: Option<&char>) -> bool {
    c.is_none_or(|c| matches!(c, ' ' | '\t' | '\r'))
}

fn is_flow_indicator(c: Option<&char>) -> bool {
    c.is_some_and(|c| matches!(c, ',' | '[' | ']' | '{' | '}'))
}

/// Follows one line's tokens well enough to know, at its end, the open flow collections, an
/// open quoted scalar or a block scalar header; replaces tabs after `:` indicators.
fn scan_line(
    chars: &mut [char],
    indent: usize,
    pad: usize,
    line_no: usize,
    st: &mut State,
    tabs: &mut Vec<(usize, usize)>,
) {
    let mut i = indent;
    let mut node_start = true;
    let mut plain = false;
    // The indentation of the block collection a plain scalar ending this line would be in:
    // its key's column, or its `-`'s.
    let mut collection = indent;
    let mut token = indent;
    while i < chars.len() {
        let c = chars[i];
        if let Some((q, _)) = st.quote {
            if q == '\'' && c == '\'' {
                if chars.get(i + 1) == Some(&'\'') {
                    i += 2;
                    continue;
                }
                st.quote = None;
                node_start = false;
            } else if q == '"' && c == '\\' {
                i += 1;
            } else if q == '"' && c == '"' {
                st.quote = None;
                node_start = false;
            }
            i += 1;
            continue;
        }
        let in_flow = !st.flows.is_empty();
        let next = chars.get(i + 1);
        if matches!(c, ' ' | '\t' | '\r') {
            i += 1;
            continue;
        }
        if c == '#' && (i == 0 || matches!(chars[i - 1], ' ' | '\t') || !node_start && !plain) {
            return;
        }
        let value_indicator = c == ':' && (is_blank(next) || (in_flow && is_flow_indicator(next)));
        if value_indicator {
            if !in_flow {
                collection = token;
            }
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j], ' ' | '\t') {
                if chars[j] == '\t' {
                    chars[j] = ' ';
                    tabs.push((line_no, j + pad));
                }
                j += 1;
            }
            plain = false;
            node_start = true;
            i = j;
            continue;
        }
        if in_flow && is_flow_indicator(Some(&c)) {
            plain = false;
            match c {
                '[' | '{' => st.flows.push(i + pad),
                ']' | '}' => {
                    st.flows.pop();
                }
                _ => {}
            }
            node_start = c != ']' && c != '}';
            i += 1;
            continue;
        }
        if plain || !node_start {
            plain = true;
            i += 1;
            continue;
        }
        token = i;
        match c {
            '-' | '?' if is_blank(next) => {
                if !in_flow {
                    collection = i;
                }
            }
            '[' | '{' => st.flows.push(i + pad),
            '\'' | '"' => st.quote = Some((c, i + pad)),
            '&' | '!' | '*' => {
                while i + 1 < chars.len()
                    && !is_blank(chars.get(i + 1))
                    && !(in_flow && is_flow_indicator(chars.get(i + 1)))
                {
                    i += 1;
                }
                node_start = c != '*';
            }
            '|' | '>' if !in_flow => {
                // An explicit indentation indicator: every more-indented line is content.
                let explicit = chars[i + 1..].iter().any(char::is_ascii_digit);
                st.block = Some((indent, explicit.then_some(indent + 1)));
                return;
            }
            '%' if i == 0 => return,
            _ if i == 0 && is_document_marker(chars) => i += 2,
            _ => plain = true,
        }
        i += 1;
    }
    if plain && st.flows.is_empty() {
        st.plain = Some(collection);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_inside_flows_and_quotes_are_indented_past_the_opening() {
        let r = relax("a:\n  b: [\n1,\n  ]\nc: \"x\ny\"\nd: |\n  [\ne: 1\n");
        assert_eq!(
            r.text,
            "a:\n  b: [\n      1,\n      ]\nc: \"x\n   y\"\nd: |\n  [\ne: 1\n"
        );
        assert_eq!(r.pads.get(&3), Some(&6));
        assert_eq!(r.original_col(3, 6), 0);
        assert!(r.tabs.is_empty());
    }

    #[test]
    fn block_scalars_end_where_their_content_indentation_ends() {
        let r = relax("- patch: |-\n    kind: X\n  target:\t[\nx]\nk: |2\n   [\n");
        assert_eq!(
            r.text,
            "- patch: |-\n    kind: X\n  target: [\n           x]\nk: |2\n   [\n"
        );
    }

    #[test]
    fn plain_scalars_continue_on_more_indented_lines() {
        let r = relax("a: one\n [two\nb:\tc\n- k: v\n  c:\td\n");
        assert_eq!(r.text, "a: one\n [two\nb: c\n- k: v\n  c: d\n");
        assert!(r.pads.is_empty());
    }

    #[test]
    fn tabs_after_colons_become_spaces_outside_scalars() {
        let r = relax("a:\tb\nc: 'x:\ty'\n");
        assert_eq!(r.text, "a: b\nc: 'x:\ty'\n");
        assert_eq!(r.tabs, vec![(1, 2)]);
    }

    #[test]
    fn well_indented_text_is_left_alone() {
        let text = "a: [1, 2]\nb: 'it''s'\nc: [\n     1]#c\n";
        let r = relax(text);
        assert_eq!(r.text, text);
        assert!(r.pads.is_empty() && r.tabs.is_empty());
    }

    #[test]
    fn spaces_before_comments_map_back() {
        let mut r = relax("a: [\n1]#c\n");
        assert!(r.separate_comment(11, 2, 6));
        assert_eq!(r.text, "a: [\n    1] #c\n");
        assert_eq!(r.original_col(2, 7), 2);
        assert_eq!(r.original_col(2, 4), 0);
        assert!(!r.separate_comment(0, 1, 0));
    }

    #[test]
    fn an_edit_outside_a_flow_or_quote_is_not_confirmed() {
        let r = relax("a: [\n1]\n");
        let mut ev = Evidence::default();
        assert!(!r.confirmed_by(&ev));
        ev.flows.push((1, 2));
        assert!(r.confirmed_by(&ev));
    }
}
