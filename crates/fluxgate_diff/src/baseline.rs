//! Findings against a baseline (`fluxgate check --base`): each finding is `new` or
//! `existing`, matched by a fingerprint that survives line shifts, reformatting and moving a
//! file: the rule, the environment, the object the finding's line belongs to (kind,
//! namespace, name) and the key path of that line inside it, and the message with file
//! paths and line numbers taken out. Not the line number, nor the folder of the file.
//!
//! ```
//! use fluxgate_diagnostics::{Annotate, Diagnostic, Location, Severity};
//! use fluxgate_diff::baseline::{fingerprints, split};
//! let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";
//! let shifted = format!("# a comment\n{text}");
//! let at = |line| vec![Diagnostic::new("r", Severity::Error, "bad k").at(Location::new("x.yaml", line, 3))];
//! let base = fingerprints(&at(6), &|_| Some(text.to_string()));
//! let head = fingerprints(&at(7), &|_| Some(shifted.clone()));
//! assert_eq!(split(&head, &base), (vec![false], 0));
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;

use fluxgate_diagnostics::Diagnostic;
use fluxgate_yaml::{Node, Schema, Value, parse_stream};
use sha2::{Digest, Sha256};

use crate::leaves::join_key;

/// The key under which SARIF carries the fingerprint (`partialFingerprints`).
pub const SARIF_KEY: &str = "fluxgate/v1";

/// The fingerprint of each diagnostic; `read` gives a repository file's text by its path
/// (relative, as in the diagnostic), or `None`.
#[must_use]
pub fn fingerprints(diags: &[Diagnostic], read: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let parsed: RefCell<BTreeMap<String, Vec<Node>>> = RefCell::new(BTreeMap::new());
    diags
        .iter()
        .map(|d| {
            let anchor = d.location.as_ref().map_or_else(String::new, |l| {
                let mut cache = parsed.borrow_mut();
                let docs = cache.entry(l.file.to_string()).or_insert_with(|| {
                    read(&l.file)
                        .map_or_else(Vec::new, |t| parse_stream(&l.file, &t, Schema::Kube).docs)
                });
                anchor(docs, l.line).unwrap_or_else(|| basename(&l.file).to_string())
            });
            fingerprint(d, &anchor)
        })
        .collect()
}

/// The fingerprint of one finding with its anchor (object identity and key path).
#[must_use]
pub fn fingerprint(d: &Diagnostic, anchor: &str) -> String {
    let mut h = Sha256::new();
    for part in [
        d.rule.as_str(),
        d.environment.as_deref().unwrap_or(""),
        anchor,
        &normalise_message(&d.message),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().take(8).fold(String::new(), |mut s, b| {
        s.push_str(&format!("{b:02x}"));
        s
    })
}

/// Which head findings are new (`true`) and how many base findings the head no longer has.
/// Fingerprints are counted: a second finding with the fingerprint of one the base had once
/// is new.
#[must_use]
pub fn split(head: &[String], base: &[String]) -> (Vec<bool>, usize) {
    let mut left: BTreeMap<&str, usize> = BTreeMap::new();
    for f in base {
        *left.entry(f.as_str()).or_default() += 1;
    }
    let new = head
        .iter()
        .map(|f| match left.get_mut(f.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect();
    let fixed = left.values().sum();
    (new, fixed)
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `Kind namespace/name#key.path` of the document and node a line belongs to: the last node,
/// in document order, that starts at or before the line.
fn anchor(docs: &[Node], line: u32) -> Option<String> {
    if line == 0 {
        return None;
    }
    let doc = docs.iter().rev().find(|d| d.loc.line <= line)?;
    let mut best = String::new();
    walk(doc, "", line, &mut best);
    let kind = doc.str_at(&["kind"]).unwrap_or("");
    let ns = doc.str_at(&["metadata", "namespace"]).unwrap_or("");
    let name = doc.str_at(&["metadata", "name"]).unwrap_or("");
    Some(format!("{kind} {ns}/{name}#{best}"))
}

fn walk(n: &Node, path: &str, line: u32, best: &mut String) {
    if n.loc.line > line {
        return;
    }
    path.clone_into(best);
    match &n.value {
        Value::Map(m) => {
            for (k, v) in m.iter() {
                walk(v, &join_key(path, k), line, best);
            }
        }
        Value::Seq(items) => {
            for (i, v) in items.iter().enumerate() {
                let step = match v.get("name").and_then(Node::as_str) {
                    Some(name) => format!("{path}[name={name}]"),
                    None => format!("{path}[{i}]"),
                };
                walk(v, &step, line, best);
            }
        }
        _ => {}
    }
}

/// A message with what moves taken out: `dir/file.yaml:12:3` and `dir/file.yaml` become
/// `file.yaml`, `line 12` becomes `line N`, runs of white space one space.
#[must_use]
pub fn normalise_message(message: &str) -> String {
    let mut words = Vec::new();
    let mut after_line = false;
    for word in message.split_whitespace() {
        let (core, tail) = split_punct(word);
        let mut w = core.to_string();
        if after_line && !core.is_empty() && core.chars().all(|c| c.is_ascii_digit()) {
            w = "N".to_string();
        }
        after_line = core == "line" || core == "lines";
        // `file.yaml:12:3` -> `file.yaml`
        let mut stripped = w.as_str();
        while let Some((head, num)) = stripped.rsplit_once(':') {
            if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) {
                break;
            }
            stripped = head;
        }
        if stripped.len() < w.len() && is_file_name(stripped) {
            w = stripped.to_string();
        }
        if w.contains('/') && !w.contains("://") && w.contains('.') {
            w = basename(&w).to_string();
        }
        words.push(format!("{w}{tail}"));
    }
    words.join(" ")
}

/// A path whose last segment has a file extension (`a/b.yaml`), not an address
/// (`10.0.0.1`, `https://host`).
fn is_file_name(word: &str) -> bool {
    !word.contains("://")
        && basename(word).rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && !ext.is_empty()
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        })
}

/// A word without its trailing punctuation (`,` `;` `)` `.` after a path), and that
/// punctuation.
fn split_punct(word: &str) -> (&str, &str) {
    let end = word.trim_end_matches([',', ';', ')', '`', '\'', '"']).len();
    word.split_at(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_diagnostics::Annotate;
    use fluxgate_diagnostics::{Location, Severity};

    #[test]
    fn messages_lose_paths_and_line_numbers() {
        assert_eq!(
            normalise_message("`${A}` at apps/base/x.yaml:12:3 (see line 4), twice"),
            "`${A}` at x.yaml (see line N), twice"
        );
        assert_eq!(
            normalise_message("dials https://10.0.0.1:6443 not the VIP"),
            "dials https://10.0.0.1:6443 not the VIP"
        );
    }

    #[test]
    fn a_moved_file_keeps_the_fingerprint_and_another_key_does_not() {
        let text = "kind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n  j: w\n";
        let d = |file: &str, line| {
            vec![Diagnostic::new("r", Severity::Error, "m").at(Location::new(file, line, 3))]
        };
        let read = |_: &str| Some(text.to_string());
        let base = fingerprints(&d("apps/a.yaml", 5), &read);
        assert_eq!(fingerprints(&d("moved/a.yaml", 5), &read), base);
        assert_ne!(fingerprints(&d("apps/a.yaml", 6), &read), base);
        assert_eq!(
            split(&fingerprints(&d("apps/a.yaml", 6), &read), &base),
            (vec![true], 1)
        );
    }
}
