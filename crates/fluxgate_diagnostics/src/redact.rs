//! Never print a secret: a [`Redactor`] knows the values that came from Secrets and masks every
//! occurrence of them in text, and [`mask_encrypted`] masks what is recognisable as encrypted
//! without knowing any value (SOPS `ENC[...]`, Ansible Vault payloads).
//!
//! CI logs are often public, so every output of fluxgate passes through one of these before it
//! is printed. The structural masking (a Secret's `data` in a snippet, in `render`) is done
//! where the structure is known; this is the net under it, for values that a message
//! interpolates.
//!
//! ```
//! use fluxgate_diagnostics::redact::{Redactor, MASK};
//! let mut r = Redactor::default();
//! r.add("hunter2-but-longer");
//! assert_eq!(r.redact("password is hunter2-but-longer"), format!("password is {MASK}"));
//! ```

use std::borrow::Cow;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use crate::Diagnostic;

/// What a secret value is replaced with, everywhere.
pub const MASK: &str = "********";

/// Values shorter than this are not searched for in free text: a `1` or `on` from a Secret
/// cannot be told apart from the words and numbers of a message, and masking every `1` would
/// make the output unreadable without hiding anything worth hiding. Structural masking still
/// hides them where their place is known.
pub const MIN_SECRET_LEN: usize = 4;

/// A value cut short by a message (`"abc…"`, `...xyz`) is still the value when at least this
/// much of it is shown.
const MIN_PREFIX_LEN: usize = 8;

/// What a message or a snippet puts where it cut a text: the ellipsis, and the three dots of
/// the text renderer's long source lines.
const CUT_MARKS: [&str; 2] = ["…", "..."];

/// Words that a Secret may hold but that every output is full of.
const COMMON_WORDS: [&str; 8] = ["true", "false", "null", "none", "yes", "on", "off", "no"];

/// When the automaton is built: once the direct searches have covered this many bytes of
/// text times needles per byte of needles. A direct search costs well under an instruction
/// per byte of text and needle; building costs around a hundred per byte of needles (callgrind,
/// the certificates the Cilium chart renders into Secrets); so this builds it early.
const BUILD_COST: usize = 64;

/// The secret values of a run, and the masking of their occurrences.
#[derive(Debug, Default)]
pub struct Redactor {
    needles: Vec<String>,
    /// Values that are one plain word (`kubernetes`, a username): masked only where they stand
    /// alone, never inside a longer name (`app.kubernetes.io/name`).
    words: Vec<String>,
    /// The automaton over `needles`, built once the texts searched without it add up to about
    /// what building it costs: a run with certificates in its Secrets holds hundreds of needles
    /// (every line of every PEM), and usually masks a few short messages.
    matcher: OnceLock<Option<AhoCorasick>>,
    /// Bytes times needles searched without the automaton so far.
    searched: AtomicUsize,
}

impl Clone for Redactor {
    fn clone(&self) -> Redactor {
        Redactor {
            needles: self.needles.clone(),
            words: self.words.clone(),
            matcher: self.matcher.clone(),
            searched: AtomicUsize::new(self.searched.load(Ordering::Relaxed)),
        }
    }
}

/// Whether JSON and Rust's `{:?}` print `s` as it is (no quote, backslash, control or
/// non-ASCII character to escape).
fn escapes_to_itself(s: &str) -> bool {
    s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

impl Redactor {
    /// Remembers a secret value: the value itself, each of its lines (a multi-line value is
    /// shown a line at a time in snippets), and the escaped forms a message may give it
    /// (JSON, Rust's `{:?}`).
    pub fn add(&mut self, value: &str) {
        let mut forms: Vec<String> = vec![value.to_string()];
        if value.contains('\n') {
            forms.extend(value.lines().map(|l| l.trim().to_string()));
        }
        let escaped: Vec<String> = forms
            .iter()
            .filter(|f| !escapes_to_itself(f))
            .flat_map(|f| {
                let json = serde_json::to_string(f).unwrap_or_default();
                let json = json
                    .strip_prefix('"')
                    .and_then(|j| j.strip_suffix('"'))
                    .unwrap_or_default()
                    .to_string();
                [json, f.escape_debug().to_string()]
            })
            .collect();
        forms.extend(escaped);
        for f in forms {
            let f = f.trim();
            if f.chars().count() >= MIN_SECRET_LEN
                && !COMMON_WORDS.contains(&f.to_ascii_lowercase().as_str())
            {
                if is_plain_word(f) {
                    self.words.push(f.to_string());
                } else {
                    self.needles.push(f.to_string());
                }
            }
        }
        self.matcher = OnceLock::new();
    }

    /// Settles the needles once all values are known.
    #[must_use]
    pub fn finish(mut self) -> Redactor {
        // Longest first, so that a value containing another is masked whole.
        self.needles
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.needles.dedup();
        self.matcher = OnceLock::new();
        self
    }

    /// The automaton, once searching without it has cost about what building it does.
    fn matcher(&self, text: &str) -> Option<&AhoCorasick> {
        if let Some(built) = self.matcher.get() {
            return built.as_ref();
        }
        let work = text.len().saturating_mul(self.needles.len());
        let searched = self.searched.fetch_add(work, Ordering::Relaxed) + work;
        let building: usize = self.needles.iter().map(String::len).sum();
        if searched < building.saturating_mul(BUILD_COST) {
            return None;
        }
        // A contiguous NFA, not the DFA the builder would pick for few needles: a run builds
        // one redactor per mutant (`mutate`), and building the DFA cost more than the texts
        // it searches.
        self.matcher
            .get_or_init(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .kind(Some(AhoCorasickKind::ContiguousNFA))
                    .build(&self.needles)
                    .ok()
            })
            .as_ref()
    }

    /// `text` with the needles masked as the automaton masks them (leftmost-longest), without
    /// it: every occurrence of every needle, then from the left the longest at each place.
    fn mask_needles_directly(&self, text: &str) -> Option<String> {
        let mut hits: Vec<(usize, usize)> = Vec::new();
        let bytes = text.as_bytes();
        for n in self.needles.iter().map(String::as_bytes) {
            // Where the first byte is, then the rest compared: a substring searcher costs the
            // needle's length to set up, and a certificate's needles are kilobytes.
            let Some(&first) = n.first().filter(|_| n.len() <= bytes.len()) else {
                continue;
            };
            let last_start = bytes.len() - n.len();
            // Overlapping occurrences too (a needle starts on a character: its first byte is
            // no continuation byte, so neither is a match's).
            hits.extend(
                bytes[..=last_start]
                    .iter()
                    .enumerate()
                    .filter(|&(at, &b)| b == first && bytes[at..].starts_with(n))
                    .map(|(at, _)| (at, n.len())),
            );
        }
        if hits.is_empty() {
            return None;
        }
        hits.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut out = String::with_capacity(text.len());
        let mut done = 0;
        for (at, len) in hits {
            if at >= done {
                out.push_str(&text[done..at]);
                out.push_str(MASK);
                done = at + len;
            }
        }
        out.push_str(&text[done..]);
        Some(out)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty() && self.words.is_empty()
    }

    /// `text` with every known secret value, every value cut short with `…`, and everything
    /// [`mask_encrypted`] recognises replaced by [`MASK`].
    #[must_use]
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out: Cow<'a, str> = Cow::Borrowed(text);
        if !self.needles.is_empty() {
            let replaced = match self.matcher(text) {
                Some(m) if m.is_match(text) => {
                    Some(m.replace_all(text, &vec![MASK; self.needles.len()]))
                }
                Some(_) => None,
                None => self.mask_needles_directly(text),
            };
            if let Some(r) = replaced {
                out = Cow::Owned(r);
            }
            if CUT_MARKS.iter().any(|m| out.contains(m)) {
                out = Cow::Owned(self.mask_cut_values(&out));
            }
        }
        for w in &self.words {
            if out.contains(w.as_str())
                && let Some(masked) = mask_standalone(&out, w)
            {
                out = Cow::Owned(masked);
            }
        }
        if let Cow::Owned(masked) = mask_encrypted(&out) {
            return Cow::Owned(masked);
        }
        out
    }

    /// Parts of a value around a cut (issue 26 §1): the shown prefix before a cut mark
    /// (`"first 80 characters…`), the shown suffix after one (`...last characters` of a long
    /// source line cut on the left), and a piece between two marks, each of at least
    /// [`MIN_PREFIX_LEN`] characters of a known value.
    fn mask_cut_values(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        let mut after_mark = false;
        loop {
            let next = CUT_MARKS
                .iter()
                .filter_map(|m| rest.find(m).map(|at| (at, *m)))
                .min_by_key(|(at, _)| *at);
            let piece = next.map_or(rest, |(at, _)| &rest[..at]);
            let before_mark = next.is_some();
            let longest = |f: fn(&str, &str) -> Option<usize>| {
                self.needles
                    .iter()
                    .filter_map(|n| f(piece, n))
                    .max()
                    .unwrap_or(0)
            };
            let start = if after_mark {
                longest(longest_suffix_prefix)
            } else {
                0
            };
            let end = piece.len()
                - if before_mark {
                    longest(longest_prefix_suffix)
                } else {
                    0
                };
            let inside = after_mark
                && before_mark
                && piece.chars().count() >= MIN_PREFIX_LEN
                && self.needles.iter().any(|n| n.contains(piece));
            if inside || start >= end && start > 0 {
                out.push_str(MASK);
            } else {
                if start > 0 {
                    out.push_str(MASK);
                }
                out.push_str(&piece[start..end]);
                if end < piece.len() {
                    out.push_str(MASK);
                }
            }
            let Some((at, mark)) = next else { break };
            out.push_str(mark);
            rest = &rest[at + mark.len()..];
            after_mark = true;
        }
        out
    }

    /// Masks the message, notes, help and related labels of a diagnostic (locations are paths,
    /// never values).
    pub fn redact_diagnostic(&self, d: &mut Diagnostic) {
        let fix = |s: &mut String| {
            if let Cow::Owned(r) = self.redact(s) {
                *s = r;
            }
        };
        fix(&mut d.message);
        d.notes.iter_mut().for_each(fix);
        if let Some(h) = &mut d.help {
            fix(h);
        }
        for r in &mut d.related {
            fix(&mut r.message);
        }
    }
}

/// A value made of ASCII letters only, short enough to be an ordinary word of a manifest.
fn is_plain_word(s: &str) -> bool {
    s.len() < 16 && s.chars().all(|c| c.is_ascii_alphabetic())
}

/// `text` with the occurrences of `word` that stand alone (not part of a longer name: no
/// letter, digit, `.`, `-`, `_` or `/` on either side) masked; `None` when there is none.
fn mask_standalone(text: &str, word: &str) -> Option<String> {
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/');
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut changed = false;
    for (at, _) in text.match_indices(word) {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        if before.is_some_and(part_of_name) || after.is_some_and(part_of_name) {
            continue;
        }
        out.push_str(&text[last..at]);
        out.push_str(MASK);
        last = at + word.len();
        changed = true;
    }
    changed.then(|| {
        out.push_str(&text[last..]);
        out
    })
}

/// The byte length of the longest prefix of `needle` (at least [`MIN_PREFIX_LEN`] characters)
/// that `text` ends with.
fn longest_prefix_suffix(text: &str, needle: &str) -> Option<usize> {
    let mut ends: Vec<usize> = needle.char_indices().map(|(i, _)| i).skip(1).collect();
    ends.push(needle.len());
    ends.into_iter()
        .rev()
        .filter(|&end| needle[..end].chars().count() >= MIN_PREFIX_LEN)
        .find(|&end| text.ends_with(&needle[..end]))
}

/// The byte length of the longest suffix of `needle` (at least [`MIN_PREFIX_LEN`] characters)
/// that `text` starts with.
fn longest_suffix_prefix(text: &str, needle: &str) -> Option<usize> {
    needle
        .char_indices()
        .map(|(i, _)| i)
        .filter(|&start| needle[start..].chars().count() >= MIN_PREFIX_LEN)
        .find(|&start| text.starts_with(&needle[start..]))
        .map(|start| needle.len() - start)
}

/// Masks what is encrypted whatever its key: SOPS values (`ENC[AES256_GCM,...]` becomes
/// `ENC[********]`) and the hex payload of Ansible Vault (the lines after `$ANSIBLE_VAULT;`).
/// Line structure and indentation are kept, so snippets stay aligned.
#[must_use]
pub fn mask_encrypted(text: &str) -> Cow<'_, str> {
    if !text.contains("ENC[") && !text.contains("$ANSIBLE_VAULT") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut in_vault = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let eol = &line[body.len()..];
        let trimmed = body.trim();
        let hex = is_hex(trimmed);
        if hex && in_vault {
            out.push_str(&body[..body.len() - body.trim_start().len()]);
            out.push_str(MASK);
        } else {
            out.push_str(&mask_sops_values(body));
        }
        out.push_str(eol);
        in_vault = body.contains("$ANSIBLE_VAULT;") || (in_vault && (hex || trimmed.is_empty()));
    }
    Cow::Owned(out)
}

/// [`mask_encrypted`] for one line seen without its neighbours (a snippet line): a line of
/// nothing but 32 or more hex digits is taken for a Vault payload line.
#[must_use]
pub fn mask_encrypted_line(line: &str) -> Cow<'_, str> {
    let trimmed = line.trim();
    if trimmed.len() >= 32 && is_hex(trimmed) {
        let indent = &line[..line.len() - line.trim_start().len()];
        return Cow::Owned(format!("{indent}{MASK}"));
    }
    mask_encrypted(line)
}

fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `ENC[...]` -> `ENC[********]` (an unclosed one is masked to the end of the line).
fn mask_sops_values(line: &str) -> Cow<'_, str> {
    if !line.contains("ENC[") {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("ENC[") {
        out.push_str(&rest[..at + 4]);
        out.push_str(MASK);
        let after = &rest[at + 4..];
        match after.find(']') {
            Some(end) => rest = &after[end..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// `line` with everything from character column `column` (1-based) on replaced by [`MASK`];
/// a column past the end leaves the line as it is.
#[must_use]
pub fn mask_from_column(line: &str, column: usize) -> String {
    let at = line
        .char_indices()
        .nth(column.saturating_sub(1))
        .map(|(i, _)| i);
    match at {
        Some(i) if !line[i..].trim().is_empty() => format!("{}{MASK}", &line[..i]),
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Annotate;

    #[test]
    fn a_plain_word_is_masked_only_where_it_stands_alone() {
        let mut r = Redactor::default();
        r.add("kubernetes");
        r.add("s3cr3t-Pa55");
        let r = r.finish();
        assert_eq!(
            r.redact("app.kubernetes.io/name: x, user: kubernetes, \"kubernetes\" s3cr3t-Pa55"),
            "app.kubernetes.io/name: x, user: ********, \"********\" ********"
        );
    }
    use crate::{Location, Severity};

    fn redactor(values: &[&str]) -> Redactor {
        let mut r = Redactor::default();
        for v in values {
            r.add(v);
        }
        r.finish()
    }

    #[test]
    fn masks_values_and_their_lines_longest_first() {
        let r = redactor(&[
            "s3cr3t-token",
            "s3cr3t-token-and-more",
            "line one\nsecond line",
        ]);
        assert_eq!(
            r.redact("a s3cr3t-token-and-more b s3cr3t-token"),
            "a ******** b ********"
        );
        assert_eq!(r.redact("shows: second line"), "shows: ********");
    }

    #[test]
    fn short_and_common_values_are_left_to_structural_masking() {
        let r = redactor(&["1", "on", "true", "abc"]);
        assert!(r.is_empty());
        assert_eq!(r.redact("1 error, true"), "1 error, true");
    }

    #[test]
    fn escaped_and_cut_forms_are_masked() {
        let r = redactor(&["quote\"inside-secret", "0123456789abcdefghijklmnop"]);
        assert_eq!(
            r.redact(r#"got String("quote\"inside-secret")"#),
            "got String(\"********\")"
        );
        assert_eq!(r.redact("has \"0123456789abc…"), "has \"********…");
        assert_eq!(r.redact("short 0123…"), "short 0123…");
        // A long source line cut on both sides around the span.
        assert_eq!(
            r.redact("...efghijklmnop\" and more..."),
            "...********\" and more..."
        );
        assert_eq!(r.redact("a: 012345678..."), "a: ********...");
        assert_eq!(r.redact("...3456789abcde..."), "...********...");
        assert_eq!(r.redact("...mnop..."), "...mnop...");
    }

    #[test]
    fn diagnostics_keep_locations() {
        let r = redactor(&["10.77.77.77"]);
        let mut d = Diagnostic::new("ha-endpoint", Severity::Error, "dials 10.77.77.77")
            .at(Location::new("a.yaml", 3, 5))
            .related(
                Location::new("b.yaml", 1, 1),
                "the bootstrap sets 10.77.77.77",
            )
            .note("endpoints: 10.77.77.77")
            .help("not 10.77.77.77");
        r.redact_diagnostic(&mut d);
        assert_eq!(d.message, "dials ********");
        assert_eq!(d.related[0].message, "the bootstrap sets ********");
        assert_eq!(d.notes[0], "endpoints: ********");
        assert_eq!(d.help.as_deref(), Some("not ********"));
        assert_eq!(d.location, Some(Location::new("a.yaml", 3, 5)));
    }

    #[test]
    fn sops_and_vault_payloads() {
        let text = "  token: ENC[AES256_GCM,data:abc,iv:x,type:str] # c\nv: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  3563\n  3736\nnext: 1\n";
        assert_eq!(
            mask_encrypted(text),
            "  token: ENC[********] # c\nv: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  ********\n  ********\nnext: 1\n"
        );
        let lone =
            "    35653931626137666165613263656233376232343436623538383032306630363434623163623437";
        assert_eq!(mask_encrypted_line(lone), "    ********");
        assert_eq!(mask_encrypted(lone), lone);
        assert!(matches!(
            mask_encrypted("a: 1\nb: cafe\n"),
            Cow::Borrowed(_)
        ));
    }

    /// The direct search masks what the automaton masks: leftmost, then longest, never
    /// overlapping, occurrences that overlap each other included.
    #[test]
    fn the_direct_search_masks_as_the_automaton_does() {
        // Two letters make overlaps common; a two-byte letter keeps the steps on characters.
        let alphabet = ['a', 'b', 'a', 'b', 'a', 'b', 'a', '\u{e9}'];
        let mut seed = 0x2545_f491_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n).unwrap_or(0)
        };
        for _ in 0..3000 {
            let chars: Vec<char> = (0..8 + next(24)).map(|_| alphabet[next(8)]).collect();
            let text: String = chars.iter().collect();
            // Needles cut from the text itself, so that they occur and overlap.
            let needles: Vec<String> = (0..=next(3))
                .map(|_| {
                    let len = 4 + next(3);
                    let at = next((chars.len() - len + 1) as u64);
                    chars[at..at + len].iter().collect()
                })
                .collect();
            let mut r = Redactor::default();
            for n in &needles {
                r.add(n);
            }
            let r = r.finish();
            let direct = r
                .mask_needles_directly(&text)
                .unwrap_or_else(|| text.clone());
            let automaton = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&r.needles)
                .unwrap()
                .replace_all(&text, &vec![MASK; r.needles.len()]);
            assert_eq!(direct, automaton, "{needles:?} in {text:?}");
        }
    }

    #[test]
    fn a_long_text_builds_the_automaton_and_masks_the_same() {
        let r = redactor(&["s3cr3t-token", "line one\nsecond line"]);
        let short = "a s3cr3t-token";
        assert_eq!(r.redact(short), "a ********");
        assert!(
            r.matcher.get().is_none(),
            "a short text is searched directly"
        );
        let long = format!("{}second line", "x".repeat(4096));
        assert_eq!(r.redact(&long), format!("{}********", "x".repeat(4096)));
        assert!(r.matcher.get().is_some_and(Option::is_some));
        assert_eq!(r.clone().redact(short), "a ********");
    }

    #[test]
    fn column_masking() {
        assert_eq!(
            mask_from_column("  password: hunter2", 13),
            "  password: ********"
        );
        assert_eq!(mask_from_column("  password:", 13), "  password:");
    }
}
