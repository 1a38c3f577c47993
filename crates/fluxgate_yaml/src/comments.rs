//! Comments by line, for `# [parity]` tags and similar annotations. saphyr's scanner drops
//! comments, so they are found in the source text: a whole-line comment, or a trailing comment
//! after a value (a `#` preceded by whitespace and outside quotes).

use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
pub struct Comments {
    /// line (1-based) -> (comment text without `#`, whole-line?)
    by_line: BTreeMap<u32, (String, bool)>,
}

impl Comments {
    #[must_use]
    pub fn scan(text: &str) -> Comments {
        let mut by_line = BTreeMap::new();
        let mut in_block: Option<usize> = None;
        for (i, line) in text.lines().enumerate() {
            let indent = line.len() - line.trim_start().len();
            let trimmed = line.trim_start();
            if let Some(block_indent) = in_block {
                if trimmed.is_empty() || indent > block_indent {
                    continue;
                }
                in_block = None;
            }
            let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
            if let Some(rest) = trimmed.strip_prefix('#') {
                by_line.insert(line_no, (rest.trim().to_string(), true));
                continue;
            }
            if let Some(at) = trailing_comment(line) {
                by_line.insert(line_no, (line[at + 1..].trim().to_string(), false));
            }
            let body = trailing_comment(line)
                .map_or(line, |at| &line[..at])
                .trim_end();
            if body.ends_with('|')
                || body.ends_with('>')
                || body.ends_with("|-")
                || body.ends_with(">-")
                || body.ends_with("|+")
                || body.ends_with(">+")
            {
                in_block = Some(indent);
            }
        }
        Comments { by_line }
    }

    /// The comments that annotate `line`: its trailing comment and the whole-line comments
    /// directly above it.
    #[must_use]
    pub fn for_line(&self, line: u32) -> Vec<&str> {
        let mut out = Vec::new();
        if let Some((text, false)) = self.by_line.get(&line) {
            out.push(text.as_str());
        }
        let mut l = line;
        while l > 1 {
            l -= 1;
            match self.by_line.get(&l) {
                Some((text, true)) => out.push(text.as_str()),
                _ => break,
            }
        }
        out
    }

    /// Whether `line` carries a `[tag]` marker such as `[parity]`: in its trailing comment,
    /// or opening one of the whole-line comments directly above it. Prose that mentions the
    /// marker inside a comment above (a file's head comment explaining what `[parity]` means)
    /// tags nothing.
    #[must_use]
    pub fn has_tag(&self, line: u32, tag: &str) -> bool {
        let marker = format!("[{tag}]");
        if let Some((text, false)) = self.by_line.get(&line)
            && text.contains(&marker)
        {
            return true;
        }
        let mut l = line;
        while l > 1 {
            l -= 1;
            match self.by_line.get(&l) {
                Some((text, true)) if text.starts_with(&marker) => return true,
                Some((_, true)) => {}
                _ => break,
            }
        }
        false
    }
}

fn trailing_comment(line: &str) -> Option<usize> {
    // Most lines have no `#` at all: a byte search settles them.
    if !line.contains('#') {
        return None;
    }
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
        } else if c == '#' && (prev == ' ' || prev == '\t') {
            return Some(i);
        } else if (c == '"' || c == '\'') && matches!(prev, ' ' | ':' | '[' | '{' | ',' | '-') {
            quote = Some(c);
        }
        prev = c;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn above_and_trailing() {
        let c =
            Comments::scan("# [parity] both\n# more\nkey: 1\nother: \"a # b\" # [parity]\nx: 2\n");
        assert!(c.has_tag(3, "parity"));
        assert!(c.has_tag(4, "parity"));
        assert!(!c.has_tag(5, "parity"));
        assert_eq!(c.for_line(4), vec!["[parity]"]);
    }

    #[test]
    fn prose_mentioning_a_tag_tags_nothing() {
        let c = Comments::scan(
            "# Keys marked [parity] must match the HelmRelease.\napiVersion: v1\n# [parity] why\nkey: 1\n",
        );
        assert!(!c.has_tag(2, "parity"));
        assert!(c.has_tag(4, "parity"));
    }

    #[test]
    fn block_scalars_hold_no_comments() {
        let c = Comments::scan("a: |\n  # not a comment\nb: 1 # yes\n");
        assert!(c.for_line(2).is_empty());
        assert_eq!(c.for_line(3), vec!["yes"]);
    }
}
