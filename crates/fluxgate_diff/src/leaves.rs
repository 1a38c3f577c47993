//! Objects flattened to their leaves, so that two renders compare path by path.
//!
//! A path is dotted (`spec.replicas`); a key with a dot or bracket is quoted
//! (`metadata.annotations["a.b/c"]`); a list whose items are all mappings with distinct
//! `name`s is keyed by name (`containers[name=app].image`), so that inserting a container
//! does not shift every later one; other lists by index (`args[0]`). An empty mapping or list
//! is a leaf of its own.

use fluxgate_yaml::{Node, Value};

/// Every leaf of `node` below `prefix`, in document order.
pub fn leaves<'a>(node: &'a Node, prefix: &str, out: &mut Vec<(String, &'a Node)>) {
    match &node.value {
        Value::Map(m) if !m.is_empty() => {
            for (k, v) in m.iter() {
                leaves(v, &join_key(prefix, k), out);
            }
        }
        Value::Seq(items) if !items.is_empty() => {
            let names: Option<Vec<&str>> = items
                .iter()
                .map(|i| i.get("name").and_then(Node::as_str))
                .collect();
            let keyed = names.as_ref().filter(|n| {
                let mut sorted = (*n).clone();
                sorted.sort_unstable();
                sorted.dedup();
                sorted.len() == n.len()
            });
            for (i, item) in items.iter().enumerate() {
                let step = match keyed {
                    Some(names) => format!("{prefix}[name={}]", names[i]),
                    None => format!("{prefix}[{i}]"),
                };
                leaves(item, &step, out);
            }
        }
        _ => out.push((prefix.to_string(), node)),
    }
}

/// `prefix.key`, quoting a key that would read as more than one step.
pub fn join_key(prefix: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$'));
    match (prefix.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{prefix}.{key}"),
        (_, false) => format!("{prefix}[{key:?}]"),
    }
}

/// A value as one line: strings as written when they are plain, quoted otherwise; a
/// multi-line string by its line count; mappings and lists as compact JSON, cut at 120
/// characters.
pub fn show(n: &Node) -> String {
    let text = match &n.value {
        Value::String(s) if s.contains('\n') => {
            return format!("({} lines of text)", s.lines().count());
        }
        Value::String(s) if !s.is_empty() && !s.starts_with(' ') && !s.ends_with(' ') => {
            if looks_like_other_type(s) {
                format!("{s:?}")
            } else {
                s.clone()
            }
        }
        Value::String(s) => format!("{s:?}"),
        Value::Seq(_) | Value::Map(_) => serde_json::to_string(&n.to_json()).unwrap_or_default(),
        _ => n.scalar_text().unwrap_or_default(),
    };
    cut(&text, 120)
}

/// A string that a reader would take for a number, a boolean or null if shown bare.
fn looks_like_other_type(s: &str) -> bool {
    s.parse::<f64>().is_ok()
        || matches!(
            s,
            "true" | "false" | "null" | "~" | "yes" | "no" | "on" | "off" | "True" | "False"
        )
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max).collect();
    s.push('…');
    s
}

/// The lines removed from `old` and added in `new`, in order (a longest-common-subsequence
/// line diff; past 2,000 lines on a side, the lines of one not in the other).
pub fn line_changes(old: &str, new: &str) -> Vec<(char, String)> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a.len() > 2000 || b.len() > 2000 {
        let mut out: Vec<(char, String)> = a
            .iter()
            .filter(|l| !b.contains(l))
            .map(|l| ('-', (*l).to_string()))
            .collect();
        out.extend(
            b.iter()
                .filter(|l| !a.contains(l))
                .map(|l| ('+', (*l).to_string())),
        );
        return out;
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(('+', b[j].to_string()));
            j += 1;
        } else {
            out.push(('-', a[i].to_string()));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_one};

    fn paths(text: &str) -> Vec<String> {
        let (node, _) = parse_one("t.yaml", text, Schema::Kube);
        let node = node.expect("yaml");
        let mut out = Vec::new();
        leaves(&node, "", &mut out);
        out.into_iter()
            .map(|(p, n)| format!("{p}={}", show(n)))
            .collect()
    }

    #[test]
    fn named_lists_are_keyed_by_name_and_odd_keys_quoted() {
        assert_eq!(
            paths(
                "spec:\n  containers:\n    - name: app\n      image: a:1\n  args: [x, '1']\n\
                 metadata:\n  annotations:\n    a.b/c: 'yes'\n  labels: {}\n"
            ),
            [
                "spec.containers[name=app].name=app",
                "spec.containers[name=app].image=a:1",
                "spec.args[0]=x",
                "spec.args[1]=\"1\"",
                "metadata.annotations[\"a.b/c\"]=\"yes\"",
                "metadata.labels={}",
            ]
        );
    }

    #[test]
    fn line_changes_are_the_lines_that_moved() {
        assert_eq!(
            line_changes("a\nb\nc\n", "a\nB\nc\nd\n"),
            [
                ('+', "B".to_string()),
                ('-', "b".to_string()),
                ('+', "d".to_string())
            ]
        );
    }
}
