//! Merging a list the schema marks as merged, step for step as kyaml (kustomize v5.5.0) does
//! it, because its corner cases are what `kubectl kustomize` prints:
//!
//! 1. collect the key values of every element, the patch's elements first, each once (for
//!    lists keyed by several fields, values that differ only by a missing field are unified);
//! 2. for each, walk the target's and the patch's matching elements together and set the
//!    result into a new list (a null or empty result removes the target's element instead);
//! 3. re-set the target's elements into the new list by their keys.
//!
//! So the patch's elements come first, then the target's untouched ones. An element without
//! its merge key makes every keyed element match (an empty value matches any), which is why a
//! keyless patch element empties the list; `$patch: replace` on an element keeps the
//! target's element, as step 3 puts it back.

use fluxgate_yaml::{Node, Value};

use super::merge_keys::Schema;
use super::smp::{Kind, is_empty, is_empty_map, kind_of, raw, walk, wrong_kind};
use crate::Error;

/// Merges the patch's `origin` elements into the target's `dest` elements. `keys` empty:
/// a list of scalars merged as a set.
pub(super) fn merge(
    mut dest: Vec<Node>,
    origin: Option<&[Node]>,
    keys: &[String],
    elem_schema: Option<&Schema>,
    path: &mut Vec<String>,
) -> Result<Vec<Node>, Error> {
    let mut values = element_values(origin, &dest, keys);
    let scalar_key = [String::new()];
    let keys: &[String] = if values.is_empty() && keys.is_empty() {
        values = primitive_values(origin, &dest);
        &scalar_key
    } else {
        keys
    };
    if keys.len() > 1 {
        unify_values(&mut values);
    }
    let mut items: Vec<Node> = Vec::new();
    let mut last_keys = keys.to_vec();
    for value in &values {
        if value.is_empty() {
            continue;
        }
        let (vk, vv) = valid_keys(&values, value, keys);
        let (lk, lv) = valid_keys(std::slice::from_ref(&vv), &vv, &vk);
        let dest_idx = element_index(&dest, &lk, &lv);
        let dest_elem = dest_idx.map(|i| dest[i].clone());
        let origin_elem = origin.and_then(|o| element_index(o, &lk, &lv).map(|i| o[i].clone()));
        path.push(format!("[{}]", vv.join(",")));
        let out = walk(dest_elem, origin_elem, elem_schema, path)?;
        let Some(mut val) = out.node.filter(|v| !v.is_null() && !is_empty_map(v)) else {
            set_element(&mut dest, None, &vk, &vv, path)?;
            path.pop();
            last_keys = vk;
            continue;
        };
        for (k, v) in vk.iter().zip(&vv) {
            if v.is_empty() {
                continue;
            }
            let loc = val.loc.clone();
            let is_scalar = kind_of(&val) == Kind::Scalar;
            match &mut val.value {
                Value::Map(m) if !k.is_empty() => {
                    if !m.contains_key(k) {
                        m.insert(k.clone(), Node::string(v.clone(), loc));
                    }
                }
                // kyaml re-sets a set's element from its text, as a string.
                value if k.is_empty() && is_scalar => *value = Value::String(v.clone()),
                _ => {
                    let want = if k.is_empty() {
                        Kind::Scalar
                    } else {
                        Kind::Map
                    };
                    let err = wrong_kind(want, &val, path);
                    path.pop();
                    return Err(err);
                }
            }
        }
        if out.in_place
            && let Some(i) = dest_idx
        {
            dest[i] = val.clone();
        }
        set_element(&mut items, Some(val), &vk, &vv, path)?;
        path.pop();
        last_keys = vk;
    }
    if values.is_empty() {
        return Ok(dest);
    }
    append_elements(&mut items, &dest, &last_keys, path)?;
    Ok(items)
}

/// The key values of every element, the patch's first, each once.
fn element_values(origin: Option<&[Node]>, dest: &[Node], keys: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for elem in origin.unwrap_or_default().iter().chain(dest) {
        let v: Vec<String> = keys
            .iter()
            .map(|k| match elem.get(k) {
                Some(f) if !is_empty(Some(f)) => raw(f),
                _ => String::new(),
            })
            .collect();
        if !v.is_empty() && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The texts of a set's elements, the patch's first, each once.
fn primitive_values(origin: Option<&[Node]>, dest: &[Node]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for elem in origin.unwrap_or_default().iter().chain(dest) {
        let v = vec![raw(elem)];
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// kyaml's `mergeValues`: two key tuples that agree where both are set (and share one value)
/// both become their union, e.g. `[8080, ""]` and `[8080, TCP]`.
fn unify_values(values: &mut [Vec<String>]) {
    for i in 0..values.len() {
        for j in 0..values.len() {
            if let Some(u) = unify(&values[i], &values[j]) {
                values[i].clone_from(&u);
                values[j] = u;
            }
        }
    }
}

fn unify(a: &[String], b: &[String]) -> Option<Vec<String>> {
    if a.len() != b.len() {
        return None;
    }
    let mut common = false;
    let mut out = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(b) {
        if x == y {
            common = true;
            out.push(x.clone());
        } else if !x.is_empty() && !y.is_empty() {
            return None;
        } else if x.is_empty() {
            out.push(y.clone());
        } else {
            out.push(x.clone());
        }
    }
    common.then_some(out)
}

/// kyaml's `validateKeys`: the keys that have a value in any of `all`, with this tuple's
/// values for them; all keys when none has.
fn valid_keys(
    all: &[Vec<String>],
    values: &[String],
    keys: &[String],
) -> (Vec<String>, Vec<String>) {
    let used = |i: usize| all.iter().any(|v| v.get(i).is_some_and(|s| !s.is_empty()));
    if !(0..keys.len()).any(used) {
        return (keys.to_vec(), values.to_vec());
    }
    let k = (0..keys.len())
        .filter(|&i| used(i))
        .map(|i| keys[i].clone())
        .collect();
    let v = values
        .iter()
        .enumerate()
        .filter(|(i, v)| !v.is_empty() || used(*i))
        .map(|(_, v)| v.clone())
        .collect();
    (k, v)
}

/// kyaml's `ElementMatcher`: the first element whose keys have these values (for a set, whose
/// text is the value).
fn element_index(list: &[Node], keys: &[String], values: &[String]) -> Option<usize> {
    if keys.first().is_none_or(String::is_empty) {
        let want = values.first().map_or("", String::as_str);
        return list.iter().position(|e| raw(e) == want);
    }
    list.iter().position(|e| {
        e.as_map().is_some_and(|m| {
            keys.len() == values.len()
                && keys
                    .iter()
                    .zip(values)
                    .all(|(k, v)| m.get(k).is_some_and(|f| raw(f) == *v))
        })
    })
}

/// kyaml's `FieldMatcher` as `ElementSetter` uses it: an empty value matches any element
/// that has the key at all.
fn field_matches(elem: &Node, key: &str, value: &str, path: &[String]) -> Result<bool, Error> {
    if elem.is_null() {
        return Ok(false);
    }
    if key.is_empty() {
        if kind_of(elem) != Kind::Scalar {
            return Err(wrong_kind(Kind::Scalar, elem, path));
        }
        return Ok(raw(elem) == value);
    }
    let Some(m) = elem.as_map() else {
        return Err(wrong_kind(Kind::Map, elem, path));
    };
    Ok(m.get(key)
        .is_some_and(|f| value.is_empty() || raw(f) == value))
}

/// kyaml's `ElementSetter`: drops empty elements, replaces (or, with no element, removes)
/// the ones matching every key, appends when none matched. With no values at all, every
/// element is dropped before the append.
pub(super) fn set_element(
    list: &mut Vec<Node>,
    element: Option<Node>,
    keys: &[String],
    values: &[String],
    path: &[String],
) -> Result<(), Error> {
    let scalar_key = [String::new()];
    let keys = if keys.is_empty() {
        &scalar_key[..]
    } else {
        keys
    };
    let mapping_setter = !keys[0].is_empty() && values.first().is_some_and(|v| !v.is_empty());
    let mut kept = Vec::with_capacity(list.len());
    let mut matched_any = false;
    for elem in std::mem::take(list) {
        if elem.is_null() || is_empty_map(&elem) {
            continue;
        }
        if elem.as_map().is_none() && mapping_setter {
            kept.push(elem);
            continue;
        }
        // Like kyaml, a key past the end of `values` reuses the previous key's answer.
        let mut found = false;
        let mut all = true;
        for (j, key) in keys.iter().enumerate() {
            if let Some(v) = values.get(j) {
                found = field_matches(&elem, key, v, path)?;
            }
            if !found {
                all = false;
                break;
            }
        }
        if !all {
            if !values.is_empty() {
                kept.push(elem);
            }
            continue;
        }
        matched_any = true;
        if let Some(e) = &element {
            kept.push(e.clone());
        }
    }
    *list = kept;
    if let Some(e) = element.filter(|e| !e.is_null())
        && !matched_any
    {
        list.push(e);
    }
    Ok(())
}

/// kyaml's `appendListNode`: re-sets each of the target's elements into the merged list by
/// its key values; an element missing a key is also appended as is.
fn append_elements(
    dst: &mut Vec<Node>,
    src: &[Node],
    keys: &[String],
    path: &[String],
) -> Result<(), Error> {
    for elem in src {
        if keys.first().is_none_or(String::is_empty) {
            set_element(
                dst,
                Some(elem.clone()),
                &[String::new()],
                &[raw(elem)],
                path,
            )?;
            continue;
        }
        let mut v = Vec::new();
        for key in keys {
            let field = if elem.is_null() {
                None
            } else {
                let Some(m) = elem.as_map() else {
                    return Err(wrong_kind(Kind::Map, elem, path));
                };
                m.get(key)
            };
            match field {
                Some(f) => v.push(raw(f)),
                None => dst.push(elem.clone()),
            }
        }
        if keys.len() > 1 {
            set_element(dst, None, keys, &v, path)?;
        }
        set_element(dst, Some(elem.clone()), keys, &v, path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_string()).collect()
    }

    #[test]
    fn unify_and_valid_keys() {
        let mut values = vec![s(&["8080", ""]), s(&["8080", "TCP"]), s(&["9090", ""])];
        unify_values(&mut values);
        assert_eq!(
            values,
            vec![s(&["8080", "TCP"]), s(&["8080", "TCP"]), s(&["9090", ""])]
        );
        let keys = s(&["containerPort", "protocol"]);
        assert_eq!(
            valid_keys(&values, &s(&["9090", ""]), &keys),
            (keys.clone(), s(&["9090", ""]))
        );
        let only_ports = vec![s(&["1", ""]), s(&["2", ""])];
        assert_eq!(
            valid_keys(&only_ports, &s(&["1", ""]), &keys),
            (s(&["containerPort"]), s(&["1"]))
        );
        let none = vec![s(&["", ""])];
        assert_eq!(
            valid_keys(&none, &s(&["", ""]), &keys),
            (keys.clone(), s(&["", ""]))
        );
    }
}
