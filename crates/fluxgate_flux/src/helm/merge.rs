//! Values layering with origins: maps merge deeply, anything else replaces, and every leaf
//! remembers the chain of places that set it. Also `targetPath`, Helm's `--set` path syntax.

use std::collections::BTreeMap;

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Value};

use crate::Error;

/// One link of a value's history (the shared provenance type).
pub use fluxgate_diagnostics::Origin;

/// Leaf path -> its origin chain (the most direct first).
pub type Origins = BTreeMap<String, Vec<Origin>>;

/// `parent.key` (a dot in the key written `\.`, as Helm escapes it) and `parent[i]`: the
/// template engine's notation for traced values, which the model matches against these
/// paths, so there is one definition of it.
pub(crate) use fluxgate_gotemplate::trace::{join_index as index_path, join_key as child_path};

/// Records the leaves of `node` (scalars, empty maps and lists) under `path`.
pub(crate) fn record_leaves(
    node: &Node,
    path: &str,
    origins: &mut Origins,
    chain: &dyn Fn(&Node) -> Vec<Origin>,
) {
    match &node.value {
        Value::Map(m) if !m.is_empty() => {
            for (k, v) in m.iter() {
                record_leaves(v, &child_path(path, k), origins, chain);
            }
        }
        Value::Seq(s) if !s.is_empty() => {
            for (i, v) in s.iter().enumerate() {
                record_leaves(v, &index_path(path, i), origins, chain);
            }
        }
        _ => {
            origins.insert(path.to_string(), chain(node));
        }
    }
}

/// Forgets every leaf at or under `path`.
pub(crate) fn forget(path: &str, origins: &mut Origins) {
    if path.is_empty() {
        origins.clear();
        return;
    }
    origins.remove(path);
    // The paths under `path` sort together: from `path.` up to `path/` (`/` follows `.`),
    // and from `path[` up to `path\` (a backslash follows `[`). Removing those ranges keeps a
    // merge of a large chart's defaults linear (a scan of every origin per key was not).
    for (from, to) in [('.', '/'), ('[', '\\')] {
        let (lo, hi) = (format!("{path}{from}"), format!("{path}{to}"));
        let under: Vec<String> = origins
            .range::<str, _>((
                std::ops::Bound::Included(lo.as_str()),
                std::ops::Bound::Excluded(hi.as_str()),
            ))
            .map(|(k, _)| k.clone())
            .collect();
        for k in under {
            origins.remove(&k);
        }
    }
}

/// Merges `overlay` into `base` (Flux's MergeMaps: maps deeply, other values replace).
/// A `null` is kept here; [`drop_nulls`] applies Helm's "null deletes" at the end.
pub(crate) fn merge(
    base: &mut Node,
    overlay: &Node,
    path: &str,
    origins: &mut Origins,
    chain: &dyn Fn(&Node) -> Vec<Origin>,
) {
    if let (Value::Map(bm), Value::Map(om)) = (&mut base.value, &overlay.value) {
        if bm.is_empty() && !om.is_empty() {
            // An empty map was a leaf of its own; it now has children instead.
            forget(path, origins);
        }
        for (k, ov) in om.iter() {
            let p = child_path(path, k);
            if let Some(bv) = bm.get_mut(k) {
                merge(bv, ov, &p, origins, chain);
            } else {
                forget(&p, origins);
                record_leaves(ov, &p, origins, chain);
                bm.insert(k.clone(), ov.clone());
            }
        }
    } else {
        forget(path, origins);
        record_leaves(overlay, path, origins, chain);
        *base = overlay.clone();
    }
}

/// Helm's coalescing: a `null` in the user's values deletes the key (and its default).
pub(crate) fn drop_nulls(node: &mut Node, path: &str, origins: &mut Origins) {
    if let Value::Map(m) = &mut node.value {
        let nulls: Vec<String> = m
            .iter()
            .filter(|(_, v)| v.is_null())
            .map(|(k, _)| k.clone())
            .collect();
        for k in nulls {
            m.shift_remove(&k);
            forget(&child_path(path, &k), origins);
        }
        // Only a map can hold a null to drop.
        for (k, v) in m.iter_mut().filter(|(_, v)| v.as_map().is_some()) {
            drop_nulls(v, &child_path(path, k), origins);
        }
    }
}

/// One step of a `targetPath`.
#[derive(Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Splits `a.b\.c[0].d` into keys and list indices.
fn parse_target_path(path: &str) -> Result<Vec<Seg>, Error> {
    let mut segs = Vec::new();
    let mut key = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => key.push(n),
                None => return Err(Error::TrailingBackslash),
            },
            '.' => {
                if !key.is_empty() {
                    segs.push(Seg::Key(std::mem::take(&mut key)));
                }
            }
            '[' => {
                if !key.is_empty() {
                    segs.push(Seg::Key(std::mem::take(&mut key)));
                }
                let mut digits = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    digits.push(d);
                }
                let i = digits.parse::<usize>().map_err(|_| Error::NotAListIndex {
                    text: digits.clone(),
                })?;
                if i > 65_536 {
                    return Err(Error::ListIndexTooLarge { index: i });
                }
                segs.push(Seg::Index(i));
            }
            c => key.push(c),
        }
    }
    if !key.is_empty() {
        segs.push(Seg::Key(key));
    }
    if segs.is_empty() {
        return Err(Error::EmptyTargetPath);
    }
    Ok(segs)
}

/// The value of `--set path=value` as Helm's strvals types it: quoted text is a string
/// (quotes removed), `true`/`false`/`null` and integers are typed, anything else a string.
/// A backslash takes the next character literally (`\,` is a comma inside the value); an
/// unescaped comma would start a second assignment. The value itself never appears in the
/// error: it may come from a Secret.
pub(crate) fn typed_value(raw: &str, loc: &Location) -> Result<Node, Error> {
    let quoted = raw.len() >= 2
        && ((raw.starts_with('"') && raw.ends_with('"'))
            || (raw.starts_with('\'') && raw.ends_with('\'')));
    if quoted {
        let inner = raw.trim_matches(|c| c == '"' || c == '\'');
        return Ok(Node::string(inner, loc.clone()));
    }
    let unescaped = unescape_strvals(raw)?;
    let raw = unescaped.as_str();
    let value = match raw {
        _ if raw.eq_ignore_ascii_case("true") => Value::Bool(true),
        _ if raw.eq_ignore_ascii_case("false") => Value::Bool(false),
        "null" => Value::Null,
        "0" => Value::Int(0),
        _ if !raw.starts_with('0') && !raw.starts_with('+') => raw
            .parse::<i64>()
            .map_or_else(|_| Value::String(raw.to_string()), Value::Int),
        _ => Value::String(raw.to_string()),
    };
    Ok(Node::new(value, loc.clone()))
}

/// Helm strvals' value escapes: `\x` is `x`; an unescaped `,` ends the value (an error here,
/// since what follows would be read as another `key=value`).
fn unescape_strvals(raw: &str) -> Result<String, Error> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, next)) = chars.next() {
                    out.push(next);
                }
            }
            ',' => {
                return Err(Error::UnescapedComma { len: raw.len(), at });
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Sets `value` at `target` inside `root`, creating maps and lists on the way; returns the
/// dotted path of the value.
pub(crate) fn set_path(root: &mut Node, target: &str, value: Node) -> Result<String, Error> {
    let segs = parse_target_path(target)?;
    let loc = value.loc.clone();
    let mut cur = root;
    let mut dotted = String::new();
    for (n, seg) in segs.iter().enumerate() {
        let last = n + 1 == segs.len();
        match seg {
            Seg::Key(k) => {
                dotted = child_path(&dotted, k);
                if cur.as_map().is_none() {
                    *cur = Node::map(loc.clone());
                }
                let m = cur.as_map_mut().expect("made a map above");
                if last {
                    m.insert(k.clone(), value);
                    return Ok(dotted);
                }
                let next_is_index = matches!(segs.get(n + 1), Some(Seg::Index(_)));
                cur = m.entry(k.clone()).or_insert_with(|| {
                    if next_is_index {
                        Node::new(Value::Seq(Vec::new()), loc.clone())
                    } else {
                        Node::map(loc.clone())
                    }
                });
            }
            Seg::Index(i) => {
                dotted = index_path(&dotted, *i);
                if cur.as_seq().is_none() {
                    *cur = Node::new(Value::Seq(Vec::new()), loc.clone());
                }
                let s = cur.as_seq_mut().expect("made a list above");
                while s.len() <= *i {
                    s.push(Node::null(loc.clone()));
                }
                if last {
                    s[*i] = value;
                    return Ok(dotted);
                }
                cur = &mut s[*i];
            }
        }
    }
    Ok(dotted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_stream};

    fn doc(file: &str, text: &str) -> Node {
        parse_stream(file, text, Schema::Kube).docs.remove(0)
    }

    fn via(label: &'static str) -> impl Fn(&Node) -> Vec<Origin> {
        move |n: &Node| vec![Origin::new(n.loc.clone(), label)]
    }

    #[test]
    fn forget_removes_exactly_the_leaves_under_a_path() {
        let keys = [
            "a", "a.b", "a.b.c", "a[0]", "a[1].x", "a\\.b", "ab", "a-b", "a/b", "b.a",
        ];
        let mut origins: Origins = keys
            .iter()
            .map(|k| ((*k).to_string(), Vec::new()))
            .collect();
        forget("a", &mut origins);
        let left: Vec<&str> = origins.keys().map(String::as_str).collect();
        assert_eq!(left, ["a-b", "a/b", "a\\.b", "ab", "b.a"]);
        forget("a\\.b", &mut origins);
        forget("", &mut BTreeMap::new());
        let left: Vec<&str> = origins.keys().map(String::as_str).collect();
        assert_eq!(left, ["a-b", "a/b", "ab", "b.a"]);
    }

    #[test]
    fn maps_merge_lists_replace_nulls_delete() {
        let mut base = doc(
            "chart.yaml",
            "a:\n  b: 1\n  c: [1, 2]\n  d: keep\n  gone: x\n",
        );
        let mut origins = Origins::new();
        record_leaves(&base, "", &mut origins, &via("chart default"));
        let user = doc("hr.yaml", "a:\n  b: 2\n  c: [3]\n  gone: null\n");
        merge(&mut base, &user, "", &mut origins, &via("inline values"));
        drop_nulls(&mut base, "", &mut origins);
        let a = base.get("a").expect("a");
        assert_eq!(a.get("b").and_then(Node::as_i64), Some(2));
        assert_eq!(
            a.get("c").and_then(Node::as_seq).map(<[Node]>::len),
            Some(1)
        );
        assert!(a.get("gone").is_none());
        assert_eq!(origins["a.b"][0].via, "inline values");
        assert_eq!(origins["a.d"][0].via, "chart default");
        assert_eq!(origins["a.c[0]"][0].location.file.as_ref(), "hr.yaml");
        assert!(!origins.contains_key("a.c[1]"));
        assert!(!origins.contains_key("a.gone"));
    }

    #[test]
    fn target_paths() {
        let loc = Location::new("cm.yaml", 3, 1);
        let mut root = Node::map(loc.clone());
        let p = set_path(&mut root, "a.b\\.c[1].d", Node::string("x", loc.clone()));
        assert_eq!(p.as_deref(), Ok("a.b\\.c[1].d"));
        let list = root
            .path(&["a", "b.c"])
            .and_then(Node::as_seq)
            .expect("list");
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].str_at(&["d"]), Some("x"));
        assert!(set_path(&mut root, "a[x]", Node::null(loc)).is_err());
    }

    #[test]
    fn strvals_typing() {
        let loc = Location::new("cm.yaml", 1, 1);
        let t = |s: &str| typed_value(s, &loc).map(|n| n.value);
        assert_eq!(t("true"), Ok(Value::Bool(true)));
        assert_eq!(t("42"), Ok(Value::Int(42)));
        assert_eq!(t("042"), Ok(Value::String("042".into())));
        assert_eq!(t("1.5"), Ok(Value::String("1.5".into())));
        assert_eq!(t("\"42\""), Ok(Value::String("42".into())));
        assert_eq!(t("null"), Ok(Value::Null));
        assert!(t("a,b").is_err());
        // A backslash escapes the comma (Cloudflare IP lists written as `a\,b`).
        assert_eq!(
            t("10.0.0.0/8\\,fd00::/8\n"),
            Ok(Value::String("10.0.0.0/8,fd00::/8\n".into()))
        );
        let err = t("hunter2,more").unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "the value is never echoed: {err}");
    }
}
