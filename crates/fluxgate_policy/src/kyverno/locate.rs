//! The fields a Kyverno rule's variables read, for the location of its findings:
//! `{{ request.object.spec.containers[0].image }}` reads `spec/containers/0/image`,
//! `{{ element.securityContext.privileged }}` a field of the foreach element.

use serde_json::Value as Json;

use crate::FieldPath;

/// Every string of `v` (not keys).
pub(super) fn strings<'a>(v: &'a Json, out: &mut Vec<&'a str>) {
    match v {
        Json::String(s) => out.push(s),
        Json::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Json::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// Whether some string of `v` holds a `{{ }}` variable.
pub(super) fn has_variables(v: &Json) -> bool {
    match v {
        Json::String(s) => s.contains("{{"),
        Json::Array(a) => a.iter().any(has_variables),
        Json::Object(m) => m.values().any(has_variables),
        _ => false,
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The field chain after `root` that starts at `i` (just past `root`): `.name`, `."quoted
/// name"` and `[index]` steps; it ends at anything else (a projection, a filter, a pipe).
fn chain(chars: &[char], mut i: usize) -> (FieldPath, usize) {
    let mut path = Vec::new();
    loop {
        match chars.get(i) {
            Some('.') if chars.get(i + 1) == Some(&'"') => {
                let start = i + 2;
                let Some(len) = chars[start..].iter().position(|c| *c == '"') else {
                    break;
                };
                path.push(chars[start..start + len].iter().collect());
                i = start + len + 1;
            }
            Some('.') => {
                let start = i + 1;
                let len = chars[start..].iter().take_while(|c| is_ident(**c)).count();
                if len == 0 {
                    break;
                }
                path.push(chars[start..start + len].iter().collect());
                i = start + len;
            }
            Some('[') => {
                let start = i + 1;
                let len = chars[start..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if len == 0 || chars.get(start + len) != Some(&']') {
                    break;
                }
                path.push(chars[start..start + len].iter().collect());
                i = start + len + 1;
            }
            _ => break,
        }
    }
    (path, i)
}

/// The field chains read after each `root` (`request.object`, `element`) in `text`.
pub(super) fn variable_paths(text: &str, root: &str) -> Vec<FieldPath> {
    let chars: Vec<char> = text.chars().collect();
    let root: Vec<char> = root.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + root.len() <= chars.len() {
        let starts = chars[i..i + root.len()] == root[..]
            && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == '.'))
            && matches!(chars.get(i + root.len()), Some('.' | '['));
        if !starts {
            i += 1;
            continue;
        }
        let (path, end) = chain(&chars, i + root.len());
        if !path.is_empty() {
            out.push(path);
        }
        i = end.max(i + 1);
    }
    out
}

/// The chain of `expr` when it is nothing but `root` and field steps.
pub(super) fn plain_path(expr: &str, root: &str) -> Option<FieldPath> {
    let expr = expr.trim();
    let rest = expr.strip_prefix(root)?;
    let chars: Vec<char> = rest.chars().collect();
    let (path, end) = chain(&chars, 0);
    (end == chars.len()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(parts: &[&str]) -> FieldPath {
        parts.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn variable_chains() {
        assert_eq!(
            variable_paths(
                "{{ request.object.metadata.labels.\"app.kubernetes.io/name\" || '' }}",
                "request.object"
            ),
            vec![p(&["metadata", "labels", "app.kubernetes.io/name"])]
        );
        assert_eq!(
            variable_paths(
                "{{ request.object.spec.containers[0].image }}",
                "request.object"
            ),
            vec![p(&["spec", "containers", "0", "image"])]
        );
        assert_eq!(
            variable_paths(
                "{{ request.object.spec.containers[].image }}",
                "request.object"
            ),
            vec![p(&["spec", "containers"])]
        );
        assert_eq!(
            variable_paths(
                "{{ element.ports[?hostPort] }} {{ elementIndex }}",
                "element"
            ),
            vec![p(&["ports"])]
        );
        assert!(variable_paths("{{ myrequest.object.x }}", "request.object").is_empty());
    }

    #[test]
    fn plain_paths() {
        assert_eq!(
            plain_path("request.object.spec.containers", "request.object"),
            Some(p(&["spec", "containers"]))
        );
        assert_eq!(
            plain_path("element.volumeMounts", "element"),
            Some(p(&["volumeMounts"]))
        );
        assert_eq!(
            plain_path(
                "request.object.spec.[containers, initContainers][]",
                "request.object"
            ),
            None
        );
    }
}
