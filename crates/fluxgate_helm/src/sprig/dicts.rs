//! sprig's dictionary functions, with Go's aliasing: `set`, `unset` and `merge` change the
//! map they are given (and every variable that holds it), `merge` and `mergeOverwrite`
//! follow mergo's rules (empty values are filled, nil in the source is skipped or, when
//! overwriting, written).

use std::collections::BTreeMap;
use std::sync::Arc;

use fluxgate_gotemplate::trace::join_key;
use fluxgate_gotemplate::{
    Arity, Call, FuncError, Funcs, Held, MAX_DEPTH, MapRef, Origin, Slot, Value,
};

use super::{empty, strval};

fn map_arg(a: &[Value], i: usize) -> Result<MapRef, FuncError> {
    match a.get(i) {
        Some(Value::Map(m)) => Ok(m.clone()),
        Some(other) => Err(format!(
            "wrong type for value; expected map[string]interface {{}}; got {}",
            other.type_name()
        )
        .into()),
        None => Err("invalid value; expected map[string]interface {}".into()),
    }
}

/// mergo's `Merge` (and with `overwrite`, `WithOverride`) of `src` into `dst`.
pub fn mergo(dst: &MapRef, src: &MapRef, overwrite: bool, depth: usize) {
    mergo_with(dst, src, overwrite, depth, &mut |_, _, _| {});
}

/// [`mergo`], telling `copied` of each entry other than a map or list it copies from a
/// map of `src` into a map of `dst` (the maps and the key).
fn mergo_with(
    dst: &MapRef,
    src: &MapRef,
    overwrite: bool,
    depth: usize,
    copied: &mut dyn FnMut(&MapRef, &MapRef, &str),
) {
    if depth > fluxgate_gotemplate::MAX_DEPTH || std::rc::Rc::ptr_eq(dst, src) {
        return;
    }
    let entries: Vec<(String, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, sv) in entries {
        let dv = dst.borrow().get(&k).cloned();
        if sv.is_nil() {
            if overwrite {
                dst.borrow_mut().insert(k, Value::Nil);
            }
            continue;
        }
        if let (Value::Map(sm), Some(Value::Map(dm))) = (&sv, &dv) {
            mergo_with(dm, sm, overwrite, depth + 1, copied);
        }
        if let Some(d) = &dv
            && !empty(d)
            && (matches!(sv, Value::List(_)) || matches!((&sv, d), (Value::Map(_), Value::Map(_))))
        {
            {
                if matches!(sv, Value::List(_)) && overwrite {
                    dst.borrow_mut().insert(k, sv);
                }
                continue;
            }
        }
        if overwrite || dv.as_ref().is_none_or(empty) {
            if !matches!(sv, Value::Map(_) | Value::List(_)) {
                copied(dst, src, &k);
            }
            dst.borrow_mut().insert(k, sv);
        }
    }
}

pub fn add(f: &mut Funcs) {
    f.insert("dict", Arity::AtLeast(0), |_, a| {
        let mut m = BTreeMap::new();
        for pair in a.chunks(2) {
            let key = strval(&pair[0]);
            m.insert(key, pair.get(1).cloned().unwrap_or_else(|| Value::str("")));
        }
        Ok(Value::map(m))
    });
    f.insert("get", Arity::Exact(2), |_, a| {
        let m = map_arg(a, 0)?;
        let k = super::arg_str(a, 1)?;
        Ok(m.borrow()
            .get(&k)
            .cloned()
            .unwrap_or_else(|| Value::str("")))
    });
    f.insert("set", Arity::Exact(3), |_, a| {
        let m = map_arg(a, 0)?;
        let k = super::arg_str(a, 1)?;
        m.set(k, a[2].clone());
        Ok(Value::Map(m))
    });
    f.insert("unset", Arity::Exact(2), |_, a| {
        let m = map_arg(a, 0)?;
        let k = super::arg_str(a, 1)?;
        m.borrow_mut().remove(&k);
        Ok(Value::Map(m))
    });
    f.insert("hasKey", Arity::Exact(2), |_, a| {
        let m = map_arg(a, 0)?;
        let k = super::arg_str(a, 1)?;
        Ok(Value::Bool(m.borrow().contains_key(&k)))
    });
    f.insert("pluck", Arity::AtLeast(1), |_, a| {
        let k = super::arg_str(a, 0)?;
        let mut out = Vec::new();
        for i in 1..a.len() {
            if let Some(v) = map_arg(a, i)?.borrow().get(&k) {
                out.push(v.clone());
            }
        }
        Ok(Value::list(out))
    });
    // Go ranges over a map in random order; sorted here, so that output is stable.
    f.insert("keys", Arity::AtLeast(0), |_, a| {
        let mut out = Vec::new();
        for i in 0..a.len() {
            out.extend(map_arg(a, i)?.borrow().keys().map(|k| Value::str(k)));
        }
        Ok(Value::list(out))
    });
    f.insert("values", Arity::Exact(1), |_, a| {
        Ok(Value::list(
            map_arg(a, 0)?.borrow().values().cloned().collect(),
        ))
    });
    f.insert("pick", Arity::AtLeast(1), |c, a| {
        let m = map_arg(a, 0)?;
        let mut out = BTreeMap::new();
        for k in &a[1..] {
            let k = strval(k);
            if let Some(v) = m.borrow().get(&k) {
                out.insert(k, v.clone());
            }
        }
        let out = Value::map(out);
        hold_copied(c, &a[0], &out);
        Ok(out)
    });
    f.insert("omit", Arity::AtLeast(1), |c, a| {
        let m = map_arg(a, 0)?;
        let drop: Vec<String> = a[1..].iter().map(strval).collect();
        let out = Value::map(
            m.borrow()
                .iter()
                .filter(|(k, _)| !drop.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
        hold_copied(c, &a[0], &out);
        Ok(out)
    });
    for (name, overwrite) in [
        ("merge", false),
        ("mustMerge", false),
        ("mergeOverwrite", true),
        ("mustMergeOverwrite", true),
    ] {
        f.insert(name, Arity::AtLeast(1), move |c, a| {
            let dst = map_arg(a, 0)?;
            for i in 1..a.len() {
                let src = map_arg(a, i)?;
                if c.tracing() {
                    // An entry of a traced map copied into another traced map points at
                    // where it was set (the user's values merged into the chart defaults);
                    // a scalar copied into any map holds where it came from.
                    mergo_with(&dst, &src, overwrite, 0, &mut |d, s, k| {
                        let (d, s) = (Value::Map(d.clone()), Value::Map(s.clone()));
                        let Some(v) = s.get(k) else { return };
                        let slot = Slot::Key(k.to_string());
                        let sp = c.path_of(&s);
                        let held = c.held(&s, &slot, &v).or_else(|| {
                            sp.as_ref().map(|sp| {
                                Held::Origin(Origin::Value {
                                    path: c.resolve_alias(&join_key(sp, k)),
                                })
                            })
                        });
                        c.hold(&d, slot, &v, held);
                        if let (Some(dp), Some(sp)) = (c.path_of(&d), sp) {
                            c.alias(join_key(&dp, k), Arc::from(join_key(&sp, k)));
                        }
                    });
                } else {
                    mergo(&dst, &src, overwrite, 0);
                }
            }
            Ok(Value::Map(dst))
        });
    }
    for name in ["deepCopy", "mustDeepCopy"] {
        f.insert(name, Arity::Exact(1), |c, a| match &a[0] {
            // copystructure asks reflect for the type of a nil interface.
            Value::Nil | Value::Missing => {
                Err("reflect: call of reflect.Value.Type on zero Value".into())
            }
            v if c.tracing() => Ok(traced_deep_copy(c, v, 0)),
            v => Ok(v.deep_copy()),
        });
    }
    f.insert("dig", Arity::AtLeast(3), |_, a| {
        let n = a.len();
        // sprig converts the last argument with a type assertion: Go's panic text.
        let mut cur = match &a[n - 1] {
            Value::Map(m) => m.clone(),
            Value::Nil | Value::Missing => {
                return Err(
                    "interface conversion: interface {} is nil, not map[string]interface {}".into(),
                );
            }
            other => {
                return Err(format!(
                    "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                    other.type_name()
                )
                .into());
            }
        };
        let def = a[n - 2].clone();
        let keys = &a[..n - 2];
        for (i, k) in keys.iter().enumerate() {
            let Value::String(k) = k else {
                return Err(format!(
                    "interface conversion: interface {{}} is {}, not string",
                    k.type_name()
                )
                .into());
            };
            let step = cur.borrow().get(&**k).cloned();
            let Some(step) = step else { return Ok(def) };
            if i == keys.len() - 1 {
                return Ok(step);
            }
            cur = match step {
                Value::Map(m) => m,
                other => {
                    return Err(format!(
                        "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                        other.type_name()
                    )
                    .into());
                }
            };
        }
        Ok(def)
    });
}

/// [`Value::deep_copy`], each map and list of the copy traced as its original is: charts
/// copy their values (bjw-s' common library merges `deepCopy`s of them into `.Values`), and
/// what is printed from the copy should still point at the values.
fn traced_deep_copy(c: &Call<'_, '_>, v: &Value, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return Value::Nil;
    }
    let copy = match v {
        Value::List(l) => Value::list(
            l.borrow()
                .iter()
                .map(|x| traced_deep_copy(c, x, depth + 1))
                .collect(),
        ),
        Value::Map(m) => Value::map(
            m.borrow()
                .iter()
                .map(|(k, x)| (k.clone(), traced_deep_copy(c, x, depth + 1)))
                .collect(),
        ),
        other => return other.clone(),
    };
    if let Some(p) = c.path_of(v) {
        c.trace_as(&copy, p);
    }
    c.copy_held(v, &copy);
    copy
}

/// `to` took entries of the map `from` (`pick`, `omit`): each scalar it took holds what it
/// held in `from`, or its path there when `from` is traced.
fn hold_copied(c: &Call<'_, '_>, from: &Value, to: &Value) {
    if !c.tracing() {
        return;
    }
    if let (Some(p), Value::Map(m)) = (c.path_of(from), to) {
        for (k, x) in m.borrow().iter() {
            if !matches!(
                x,
                Value::Map(_) | Value::List(_) | Value::Nil | Value::Missing
            ) {
                let origin = Origin::Value {
                    path: c.resolve_alias(&join_key(&p, k)),
                };
                c.hold(to, Slot::Key(k.clone()), x, Some(Held::Origin(origin)));
            }
        }
    }
    c.copy_held(from, to);
}
