//! sprig's list functions, and the logic ones (`default`, `empty`, `coalesce`, `ternary`,
//! `all`, `any`), and the type ones (`typeOf`, `kindOf`, `kindIs`, `typeIs`).

use fluxgate_gotemplate::{Arity, FuncError, Funcs, Value};

use super::{empty, to_i64};

fn items(v: &Value, func: &str) -> Result<Vec<Value>, FuncError> {
    match v {
        Value::List(l) => Ok(l.borrow().clone()),
        Value::Bytes(b) => Ok(b.iter().map(|x| Value::Int(i64::from(*x))).collect()),
        // A host slice type (Helm's `VersionSet`).
        Value::Object(o) if o.entries().is_some() => Ok(o
            .entries()
            .unwrap_or_default()
            .into_iter()
            .map(|(_, v)| v)
            .collect()),
        // sprig asks reflect for the kind of a nil interface: Go's nil dereference.
        Value::Nil | Value::Missing => {
            Err("runtime error: invalid memory address or nil pointer dereference".into())
        }
        other => Err(format!("Cannot {func} on type {}", other.kind_name()).into()),
    }
}

fn list(v: Vec<Value>) -> Result<Value, FuncError> {
    Ok(Value::list(v))
}

pub fn add(f: &mut Funcs) {
    f.insert("list", Arity::AtLeast(0), |_, a| list(a.to_vec()));
    f.insert("tuple", Arity::AtLeast(0), |_, a| list(a.to_vec()));
    f.insert("first", Arity::Exact(1), |_, a| {
        Ok(items(&a[0], "find first")?
            .first()
            .cloned()
            .unwrap_or(Value::Nil))
    });
    f.insert("mustFirst", Arity::Exact(1), |_, a| {
        Ok(items(&a[0], "find first")?
            .first()
            .cloned()
            .unwrap_or(Value::Nil))
    });
    f.insert("last", Arity::Exact(1), |_, a| {
        Ok(items(&a[0], "find last")?
            .last()
            .cloned()
            .unwrap_or(Value::Nil))
    });
    f.insert("mustLast", Arity::Exact(1), |_, a| {
        Ok(items(&a[0], "find last")?
            .last()
            .cloned()
            .unwrap_or(Value::Nil))
    });
    f.insert("rest", Arity::Exact(1), |_, a| {
        let v = items(&a[0], "find rest")?;
        if v.is_empty() {
            // sprig v3.3 returns an empty slice here (printed `[]`), not nil.
            list(Vec::new())
        } else {
            list(v[1..].to_vec())
        }
    });
    f.insert("initial", Arity::Exact(1), |_, a| {
        let v = items(&a[0], "find initial")?;
        if v.is_empty() {
            list(Vec::new())
        } else {
            list(v[..v.len() - 1].to_vec())
        }
    });
    for name in ["append", "push", "mustAppend", "mustPush"] {
        f.insert(name, Arity::Exact(2), |_, a| {
            let mut v = items(&a[0], "push")?;
            v.push(a[1].clone());
            list(v)
        });
    }
    for name in ["prepend", "mustPrepend"] {
        f.insert(name, Arity::Exact(2), |_, a| {
            let mut v = vec![a[1].clone()];
            v.extend(items(&a[0], "prepend")?);
            list(v)
        });
    }
    f.insert("concat", Arity::AtLeast(0), |_, a| {
        let mut out = Vec::new();
        for l in a {
            match l {
                Value::List(x) => out.extend(x.borrow().iter().cloned()),
                other => {
                    return Err(format!("Cannot concat type {} as list", other.kind_name()).into());
                }
            }
        }
        list(out)
    });
    for name in ["reverse", "mustReverse"] {
        f.insert(name, Arity::Exact(1), |_, a| {
            let mut v = items(&a[0], "find reverse")?;
            v.reverse();
            list(v)
        });
    }
    for name in ["uniq", "mustUniq"] {
        f.insert(name, Arity::Exact(1), |_, a| {
            let mut out: Vec<Value> = Vec::new();
            for x in items(&a[0], "find uniq")? {
                if !out.contains(&x) {
                    out.push(x);
                }
            }
            list(out)
        });
    }
    for name in ["without", "mustWithout"] {
        f.insert(name, Arity::AtLeast(1), |_, a| {
            let v = items(&a[0], "find without")?;
            list(v.into_iter().filter(|x| !a[1..].contains(x)).collect())
        });
    }
    for name in ["has", "mustHas"] {
        f.insert(name, Arity::Exact(2), |_, a| match &a[1] {
            Value::Nil | Value::Missing => Ok(Value::Bool(false)),
            hay => Ok(Value::Bool(items(hay, "find has")?.contains(&a[0]))),
        });
    }
    for name in ["compact", "mustCompact"] {
        f.insert(name, Arity::Exact(1), |_, a| {
            list(
                items(&a[0], "compact")?
                    .into_iter()
                    .filter(|x| !empty(x))
                    .collect(),
            )
        });
    }
    // sprig replaces Go's builtin `slice`: lists only, bounds as ints.
    f.insert("slice", Arity::AtLeast(1), |_, a| {
        let v = match &a[0] {
            Value::List(l) => l.borrow().clone(),
            // Go's reflect.TypeOf(nil).Kind() dereferences a nil type.
            Value::Nil | Value::Missing => {
                return Err(
                    "runtime error: invalid memory address or nil pointer dereference".into(),
                );
            }
            other => {
                return Err(format!(
                    "list should be type of slice or array but {}",
                    other.kind_name()
                )
                .into());
            }
        };
        if v.is_empty() {
            return Ok(Value::Nil);
        }
        let start = a.get(1).map_or(0, to_i64);
        let end = a.get(2).map_or(i64::try_from(v.len()).unwrap_or(0), to_i64);
        match (usize::try_from(start), usize::try_from(end)) {
            (Ok(s), Ok(e)) if s <= e && e <= v.len() => list(v[s..e].to_vec()),
            _ => Err(format!("runtime error: slice bounds out of range [{start}:{end}]").into()),
        }
    });
    f.insert("until", Arity::Exact(1), |_, a| {
        range_list(0, to_i64(&a[0]), 1)
    });
    f.insert("untilStep", Arity::Exact(3), |_, a| {
        range_list(to_i64(&a[0]), to_i64(&a[1]), to_i64(&a[2]))
    });
    f.insert("seq", Arity::AtLeast(0), |_, a| {
        let n: Vec<i64> = a.iter().map(to_i64).collect();
        let (start, step, end) = match n.as_slice() {
            [] => return Ok(Value::str("")),
            [end] => (1, 1, *end),
            [start, end] => (*start, if start <= end { 1 } else { -1 }, *end),
            [start, step, end, ..] => (*start, *step, *end),
        };
        let mut out = Vec::new();
        let mut i = start;
        while step != 0
            && ((step > 0 && i <= end) || (step < 0 && i >= end))
            && out.len() < 1_000_000
        {
            out.push(i.to_string());
            i += step;
        }
        Ok(Value::from(out.join(" ")))
    });

    f.insert("default", Arity::AtLeast(1), |_, a| match a.get(1) {
        Some(given) if !empty(given) => Ok(given.clone()),
        _ => Ok(a[0].clone()),
    });
    f.insert("empty", Arity::Exact(1), |_, a| {
        Ok(Value::Bool(empty(&a[0])))
    });
    f.insert("coalesce", Arity::AtLeast(0), |_, a| {
        Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Nil))
    });
    f.insert("all", Arity::AtLeast(0), |_, a| {
        Ok(Value::Bool(a.iter().all(|v| !empty(v))))
    });
    f.insert("any", Arity::AtLeast(0), |_, a| {
        Ok(Value::Bool(a.iter().any(|v| !empty(v))))
    });
    f.insert("ternary", Arity::Exact(3), |_, a| match &a[2] {
        Value::Bool(b) => Ok(if *b { a[0].clone() } else { a[1].clone() }),
        other => Err(format!(
            "wrong type for value; expected bool; got {}",
            other.type_name()
        )
        .into()),
    });
    f.insert("typeOf", Arity::Exact(1), |_, a| {
        Ok(Value::from(a[0].type_name()))
    });
    f.insert("kindOf", Arity::Exact(1), |_, a| {
        Ok(Value::str(a[0].kind_name()))
    });
    f.insert("typeIs", Arity::Exact(2), |_, a| {
        Ok(Value::Bool(super::strval(&a[0]) == a[1].type_name()))
    });
    f.insert("typeIsLike", Arity::Exact(2), |_, a| {
        let t = super::strval(&a[0]);
        let n = a[1].type_name();
        Ok(Value::Bool(t == n || t == format!("*{n}")))
    });
    f.insert("kindIs", Arity::Exact(2), |_, a| {
        Ok(Value::Bool(super::strval(&a[0]) == a[1].kind_name()))
    });
    f.insert("deepEqual", Arity::Exact(2), |_, a| {
        Ok(Value::Bool(a[0] == a[1]))
    });
}

fn range_list(start: i64, stop: i64, step: i64) -> Result<Value, FuncError> {
    let mut out = Vec::new();
    if step == 0 {
        return list(out);
    }
    let mut i = start;
    while ((step > 0 && i < stop) || (step < 0 && i > stop)) && out.len() < 1_000_000 {
        out.push(Value::Int(i));
        i += step;
    }
    list(out)
}
