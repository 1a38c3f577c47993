//! JSON patch (RFC 6902) over the YAML tree, as kustomize applies `op:` lists.
//!
//! Paths are RFC 6901 pointers (`~1` is `/`, `~0` is `~`); in arrays a number addresses an
//! element and `-` the end (for `add`, `move` and `copy` targets). `add` inserts into arrays
//! and sets (or overwrites) map keys; `remove`, `replace`, `move`'s `from` and `test` need the
//! path to exist. Values are the patch file's nodes, so the origin of everything a patch adds
//! is the patch file.

use fluxgate_yaml::{Node, Value};

use crate::Error;

/// Applies a sequence of operations to `target`. On error the target may be partly patched;
/// the message names the operation's index, op and path.
pub fn json6902(target: &mut Node, ops: &Node) -> Result<(), Error> {
    let Some(list) = ops.as_seq() else {
        return Err(Error::NotAnOperationList);
    };
    for (i, op) in list.iter().enumerate() {
        apply_op(target, op).map_err(|e| Error::Operation {
            index: i,
            op: op
                .get("op")
                .and_then(Node::as_str)
                .unwrap_or("?")
                .to_string(),
            path: op
                .get("path")
                .and_then(Node::as_str)
                .unwrap_or("")
                .to_string(),
            reason: Box::new(e),
        })?;
    }
    Ok(())
}

fn apply_op(target: &mut Node, op: &Node) -> Result<(), Error> {
    let name = op
        .get("op")
        .and_then(Node::as_str)
        .ok_or_else(|| missing("op"))?;
    let path = pointer(op, "path")?;
    let value = || op.get("value").cloned().ok_or_else(|| missing("value"));
    match name {
        "add" => add(target, &path, value()?),
        "remove" => remove(target, &path).map(drop),
        "replace" => {
            let slot = get_mut(target, &path)?;
            *slot = value()?;
            Ok(())
        }
        "move" => {
            let from = pointer(op, "from")?;
            if path.len() > from.len() && path[..from.len()] == from[..] {
                return Err(Error::MoveIntoChild);
            }
            let v = remove(target, &from)?;
            add(target, &path, v)
        }
        "copy" => {
            let from = pointer(op, "from")?;
            let v = get_mut(target, &from)?.clone();
            add(target, &path, v)
        }
        "test" => {
            let want = value()?;
            let got = get_mut(target, &path)?;
            if *got == want {
                Ok(())
            } else {
                Err(Error::TestFailed {
                    got: got.to_json().to_string(),
                    want: want.to_json().to_string(),
                })
            }
        }
        other => Err(Error::UnknownOp {
            op: other.to_string(),
        }),
    }
}

/// Splits an RFC 6901 pointer into unescaped tokens.
fn pointer(op: &Node, field: &str) -> Result<Vec<String>, Error> {
    let text = op
        .get(field)
        .and_then(Node::as_str)
        .ok_or_else(|| missing(field))?;
    parse_pointer(text)
}

fn parse_pointer(text: &str) -> Result<Vec<String>, Error> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Err(Error::NotAPointer {
            text: text.to_string(),
        });
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn index(token: &str, len: usize, allow_end: bool) -> Result<usize, Error> {
    if token == "-" {
        return if allow_end {
            Ok(len)
        } else {
            Err(Error::EndIsNoElement)
        };
    }
    let valid = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    let i: usize = if valid {
        token.parse().map_err(|_| Error::IndexTooLarge {
            token: token.to_string(),
        })?
    } else {
        return Err(Error::NotAnIndex {
            token: token.to_string(),
        });
    };
    let bound = if allow_end {
        len
    } else {
        len.saturating_sub(1)
    };
    if i > bound || (!allow_end && len == 0) {
        return Err(Error::IndexOutOfBounds { index: i, len });
    }
    Ok(i)
}

fn get_mut<'a>(mut node: &'a mut Node, path: &[String]) -> Result<&'a mut Node, Error> {
    for (depth, token) in path.iter().enumerate() {
        let here = || format!("/{}", path[..=depth].join("/"));
        node = match &mut node.value {
            Value::Map(m) => m
                .get_mut(token)
                .ok_or_else(|| Error::NoSuchPath { path: here() })?,
            Value::Seq(s) => {
                let len = s.len();
                let i = index(token, len, false).map_err(|e| Error::AtIndex {
                    path: here(),
                    reason: Box::new(e),
                })?;
                &mut s[i]
            }
            _ => return Err(Error::NoSuchPath { path: here() }),
        };
    }
    Ok(node)
}

fn missing(field: &str) -> Error {
    Error::MissingField {
        field: field.to_string(),
    }
}

fn add(target: &mut Node, path: &[String], value: Node) -> Result<(), Error> {
    let Some((last, parent_path)) = path.split_last() else {
        *target = value;
        return Ok(());
    };
    let parent = get_mut(target, parent_path)?;
    match &mut parent.value {
        Value::Map(m) => {
            if let Some(slot) = m.get_mut(last) {
                *slot = value;
            } else {
                m.insert(last.clone(), value);
            }
            Ok(())
        }
        Value::Seq(s) => {
            let i = index(last, s.len(), true)?;
            s.insert(i, value);
            Ok(())
        }
        _ => Err(Error::ParentNotContainer {
            path: format!("/{}", path.join("/")),
        }),
    }
}

fn remove(target: &mut Node, path: &[String]) -> Result<Node, Error> {
    let Some((last, parent_path)) = path.split_last() else {
        return Err(Error::RemoveWholeDocument);
    };
    let parent = get_mut(target, parent_path)?;
    match &mut parent.value {
        Value::Map(m) => m.shift_remove(last).ok_or_else(|| Error::NoSuchPath {
            path: format!("/{}", path.join("/")),
        }),
        Value::Seq(s) => {
            let i = index(last, s.len(), false)?;
            Ok(s.remove(i))
        }
        _ => Err(Error::NoSuchPath {
            path: format!("/{}", path.join("/")),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_stream};

    fn yaml(file: &str, text: &str) -> Node {
        parse_stream(file, text, Schema::Kube).docs.remove(0)
    }

    const DOC: &str = "\
metadata:
  name: web
  annotations:
    a/b: x
    t~x: y
spec:
  replicas: 1
  list: [a, b, c]
";

    fn run(ops: &str) -> Result<serde_json::Value, Error> {
        let mut doc = yaml("doc.yaml", DOC);
        json6902(&mut doc, &yaml("ops.yaml", ops))?;
        Ok(doc.to_json())
    }

    #[test]
    fn operations() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "replace scalar",
                "- {op: replace, path: /spec/replicas, value: 3}",
                r#"{"metadata":{"name":"web","annotations":{"a/b":"x","t~x":"y"}},"spec":{"replicas":3,"list":["a","b","c"]}}"#,
            ),
            (
                "add new key and escaped keys",
                "- {op: add, path: /metadata/annotations/a~1b, value: z}\n- {op: add, path: /metadata/annotations/t~0x, value: w}\n- {op: add, path: /metadata/labels, value: {k: v}}",
                r#"{"metadata":{"name":"web","annotations":{"a/b":"z","t~x":"w"},"labels":{"k":"v"}},"spec":{"replicas":1,"list":["a","b","c"]}}"#,
            ),
            (
                "add inserts into arrays and appends with -",
                "- {op: add, path: /spec/list/1, value: x}\n- {op: add, path: /spec/list/-, value: z}\n- {op: add, path: /spec/list/5, value: end}",
                r#"{"metadata":{"name":"web","annotations":{"a/b":"x","t~x":"y"}},"spec":{"replicas":1,"list":["a","x","b","c","z","end"]}}"#,
            ),
            (
                "remove key and element",
                "- {op: remove, path: /metadata/annotations}\n- {op: remove, path: /spec/list/0}",
                r#"{"metadata":{"name":"web"},"spec":{"replicas":1,"list":["b","c"]}}"#,
            ),
            (
                "move and copy",
                "- {op: copy, from: /metadata/name, path: /spec/name}\n- {op: move, from: /spec/list/2, path: /spec/list/0}",
                r#"{"metadata":{"name":"web","annotations":{"a/b":"x","t~x":"y"}},"spec":{"replicas":1,"list":["c","a","b"],"name":"web"}}"#,
            ),
            (
                "test that passes",
                "- {op: test, path: /spec/list, value: [a, b, c]}\n- {op: test, path: /spec/replicas, value: 1}",
                r#"{"metadata":{"name":"web","annotations":{"a/b":"x","t~x":"y"}},"spec":{"replicas":1,"list":["a","b","c"]}}"#,
            ),
        ];
        for (name, ops, want) in cases {
            let got = run(ops).unwrap_or_else(|e| panic!("{name}: {e}"));
            let want: serde_json::Value = serde_json::from_str(want).expect("valid json");
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn errors_name_the_operation() {
        let cases: &[(&str, &str)] = &[
            (
                "- {op: test, path: /spec/replicas, value: 2}",
                "operation 0 (test /spec/replicas): test failed",
            ),
            (
                "- {op: replace, path: /spec/nope, value: 2}",
                "operation 0 (replace /spec/nope): path /spec/nope does not exist",
            ),
            (
                "- {op: remove, path: /spec/list/3}",
                "operation 0 (remove /spec/list/3): array index 3 is out of bounds",
            ),
            (
                "- {op: add, path: /spec/list/4, value: x}",
                "array index 4 is out of bounds",
            ),
            (
                "- {op: add, path: /nope/x, value: x}",
                "path /nope does not exist",
            ),
            (
                "- {op: add, path: /spec/list/01, value: x}",
                "`01` is not an array index",
            ),
            (
                "- {op: test, path: /spec/replicas, value: 1}\n- {op: frob, path: /x}",
                "operation 1 (frob /x): unknown op `frob`",
            ),
            ("- {op: add, path: spec, value: 1}", "is not a JSON pointer"),
            ("- {op: move, from: /spec, path: /spec/x}", "own children"),
            ("- {op: add, path: /spec/x}", "missing `value`"),
            ("op: add", "must be a list"),
        ];
        for (ops, want) in cases {
            let err = run(ops).expect_err(ops).to_string();
            assert!(err.contains(want), "{ops}: {err}");
        }
    }

    #[test]
    fn added_values_keep_the_patch_location() {
        let mut doc = yaml("doc.yaml", DOC);
        let ops = yaml(
            "ops.yaml",
            "- op: add\n  path: /spec/extra\n  value:\n    k: v\n",
        );
        json6902(&mut doc, &ops).expect("applies");
        let added = doc.path(&["spec", "extra", "k"]).expect("added");
        assert_eq!(&*added.loc.file, "ops.yaml");
        assert_eq!(added.loc.line, 4);
        let kept = doc.path(&["spec", "replicas"]).expect("kept");
        assert_eq!(&*kept.loc.file, "doc.yaml");
    }

    #[test]
    fn whole_document_replace() {
        let mut doc = yaml("doc.yaml", DOC);
        json6902(
            &mut doc,
            &yaml("ops.yaml", "- {op: add, path: '', value: {a: 1}}"),
        )
        .expect("ok");
        assert_eq!(doc.to_json(), serde_json::json!({"a": 1}));
    }
}
