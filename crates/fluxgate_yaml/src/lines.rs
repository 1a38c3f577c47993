//! Lines of a text, found with a vectorised search for the line feed: rendered YAML is
//! megabytes of short lines, and a byte-at-a-time search per line was a good part of
//! reading it.

/// The pieces of `text` between line feeds, as `text.split('\n')` gives them.
pub fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut breaks = memchr::memchr_iter(b'\n', text.as_bytes());
    let mut start = Some(0);
    std::iter::from_fn(move || {
        let from = start?;
        if let Some(i) = breaks.next() {
            start = Some(i + 1);
            text.get(from..i)
        } else {
            start = None;
            text.get(from..)
        }
    })
}

/// The lines of `text`, as `text.lines()` gives them: a final line feed ends the last line
/// rather than starting an empty one, and a carriage return before a line feed is cut.
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    // Without its final line feed, every piece but the last is followed by one; the last is
    // too when the text ended with one.
    let ended = text.ends_with('\n');
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut pieces = split_lines(body)
        .filter(move |_| !text.is_empty())
        .peekable();
    std::iter::from_fn(move || {
        let piece = pieces.next()?;
        let followed = ended || pieces.peek().is_some();
        Some(match piece.strip_suffix('\r') {
            Some(cut) if followed => cut,
            _ => piece,
        })
    })
}

/// The byte offset where each line of `text` starts: 0, then one past each line feed.
pub fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_the_standard_library_splits() {
        let texts = [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "a\nb",
            "a\nb\n",
            "a\r\nb\r\n",
            "a\r",
            "\r\n",
            "x\n\ny\n\n",
            "é\nü\r\n😀",
        ];
        for t in texts {
            assert_eq!(
                split_lines(t).collect::<Vec<_>>(),
                t.split('\n').collect::<Vec<_>>(),
                "{t:?}"
            );
            assert_eq!(
                lines(t).collect::<Vec<_>>(),
                t.lines().collect::<Vec<_>>(),
                "{t:?}"
            );
            let want: Vec<usize> = std::iter::once(0)
                .chain(t.match_indices('\n').map(|(i, _)| i + 1))
                .collect();
            assert_eq!(line_starts(t), want, "{t:?}");
        }
        let long = "key: value\n".repeat(100);
        assert_eq!(lines(&long).count(), 100);
    }
}
