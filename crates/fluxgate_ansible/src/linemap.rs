//! Which template line produced each line of a rendered template, found by the renderer.
//!
//! The template is rendered a second time with a marker (private-use characters around the
//! line number) written at the end of every line whose end is template text, not inside a
//! `{{ }}`, `{% %}` or `{# #}` tag. A line that ends with a block or comment tag gets no marker:
//! the engine's `trim_blocks` must still see the newline right after the tag. Each output line
//! then carries the markers of the template lines that wrote it; the last one names the line
//! that ended it (a loop repeats its body's markers, a block tag's line writes none), and
//! lines an expression wrote (a multi-line `to_nice_yaml`) take the line of the marker that
//! follows them, the expression's own line. The map is used only when the marked render,
//! markers removed, is the plain render byte for byte; otherwise (a captured `{% set %}`
//! block compared as a string, say) there is no exact map and [`align`] stands in.

const OPEN: char = '\u{F8F0}';
const CLOSE: char = '\u{F8F1}';

/// The template with a marker at the end of every line that ends in template text, or `None`
/// when the template already holds a marker character.
pub(crate) fn mark(template: &str) -> Option<String> {
    if template.contains(OPEN) || template.contains(CLOSE) {
        return None;
    }
    let mut out = String::with_capacity(template.len() + template.len() / 8);
    // Inside which tag the scan is: its closing delimiter.
    let mut inside: Option<&str> = None;
    let mut line = 1u32;
    let bytes = template.as_bytes();
    let mut i = 0;
    // Whether the text since the last newline ended with a block or comment tag.
    let mut ends_with_block = false;
    while i < bytes.len() {
        let rest = &template[i..];
        if let Some(close) = inside {
            if rest.starts_with(close) {
                out.push_str(close);
                i += close.len();
                ends_with_block = close != "}}";
                inside = None;
                continue;
            }
        } else if rest.starts_with("{{") || rest.starts_with("{%") || rest.starts_with("{#") {
            inside = Some(match &rest[..2] {
                "{{" => "}}",
                "{%" => "%}",
                _ => "#}",
            });
            out.push_str(&rest[..2]);
            i += 2;
            continue;
        }
        let c = rest.chars().next().expect("not at the end");
        if c == '\n' {
            if inside.is_none() && !ends_with_block {
                out.push(OPEN);
                out.push_str(&line.to_string());
                out.push(CLOSE);
            }
            line += 1;
            ends_with_block = false;
        } else if inside.is_none() && !c.is_whitespace() {
            ends_with_block = false;
        }
        out.push(c);
        i += c.len_utf8();
    }
    Some(out)
}

/// The output without its markers, and the template line (1-based) of each output line
/// (`0` when no marker follows it).
pub(crate) fn unmark(marked: &str) -> (String, Vec<u32>) {
    let mut text = String::with_capacity(marked.len());
    let mut lines = Vec::new();
    // Output lines waiting for the next marker, and the last marker of the current line.
    let mut pending = 0usize;
    let mut last: Option<u32> = None;
    let mut chars = marked.chars();
    while let Some(c) = chars.next() {
        match c {
            OPEN => {
                let digits: String = chars.by_ref().take_while(|&d| d != CLOSE).collect();
                let n = digits.parse().unwrap_or(0);
                // The lines an expression wrote before this marker are its line's too.
                for l in lines.iter_mut().rev().take(pending) {
                    *l = n;
                }
                pending = 0;
                last = Some(n);
            }
            '\n' => {
                text.push('\n');
                if let Some(n) = last.take() {
                    lines.push(n);
                } else {
                    lines.push(0);
                    pending += 1;
                }
            }
            _ => text.push(c),
        }
    }
    if !text.is_empty() && !text.ends_with('\n') {
        lines.push(last.unwrap_or(0));
    }
    (text, lines)
}

/// Maps each rendered line to the template line it came from by walking both in order and
/// matching the text a line has before its first expression: the fallback when the marked
/// render differs from the plain one.
pub(crate) fn align(template: &str, rendered: &str) -> Vec<u32> {
    let template: Vec<&str> = template.lines().collect();
    let mut out = Vec::new();
    let mut p = 0usize;
    for r in rendered.lines() {
        let found = (p..template.len().min(p + 60)).find(|&t| {
            let line = template[t];
            let sig = if line.contains("{%") || line.contains("{#") {
                ""
            } else {
                line.split("{{").next().unwrap_or_default().trim_end()
            };
            (!sig.is_empty() && r.starts_with(sig))
                || (sig.is_empty() && r.is_empty() && line.is_empty())
        });
        match found {
            Some(t) => {
                out.push(u32::try_from(t + 1).unwrap_or(u32::MAX));
                p = t + 1;
            }
            None => out.push(u32::try_from(p + 1).unwrap_or(u32::MAX)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_go_where_template_text_ends_a_line() {
        let t = "a: {{ x }}\n{% if y %}\nb: 1\n{# c\n #}\nd: {{ z\n }}\n";
        let m = mark(t).unwrap();
        assert_eq!(
            m,
            "a: {{ x }}\u{F8F0}1\u{F8F1}\n{% if y %}\nb: 1\u{F8F0}3\u{F8F1}\n{# c\n #}\nd: {{ z\n }}\u{F8F0}7\u{F8F1}\n"
        );
    }

    #[test]
    fn expression_lines_take_the_following_marker() {
        let (text, lines) =
            unmark("k:\u{F8F0}1\u{F8F1}\n  a: 1\n  b: 2\u{F8F0}2\u{F8F1}\nx\u{F8F0}3\u{F8F1}\n");
        assert_eq!(text, "k:\n  a: 1\n  b: 2\nx\n");
        assert_eq!(lines, vec![1, 2, 2, 3]);
    }

    #[test]
    fn the_last_marker_of_a_line_names_it() {
        let (text, lines) = unmark("\u{F8F0}4\u{F8F1}item\u{F8F0}5\u{F8F1}\n");
        assert_eq!((text.as_str(), lines), ("item\n", vec![5]));
    }

    #[test]
    fn alignment_skips_jinja_comments() {
        let template = "{# header #}\n{% if a %}\n\nk: v\nx: {{ y }}\nz: 1\n";
        assert_eq!(align(template, "k: v\nx: 2\nz: 1\n"), vec![4, 5, 6]);
    }
}
