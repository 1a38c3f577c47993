//! Values as Helm v4.3 computes them: user values (`-f` files merged in order, then
//! `--set-json`, `--set`, `--set-string`), dependencies enabled by `condition`/`tags`,
//! aliases, and coalescing with the chart's defaults (user values win, maps merge, `null`
//! deletes a key, globals flow down to subcharts, each subchart sees its own section).

use std::collections::BTreeMap;

use fluxgate_gotemplate::{MapRef, Value};
use fluxgate_yaml::{Node, Schema, parse_stream_shared};

use crate::chart::Chart;
use crate::convert;

/// Why values could not be read, set or coalesced: Helm's text as it is.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct ValuesError(pub String);

impl From<String> for ValuesError {
    fn from(s: String) -> ValuesError {
        ValuesError(s)
    }
}

impl From<&str> for ValuesError {
    fn from(s: &str) -> ValuesError {
        ValuesError(s.to_string())
    }
}

impl From<ValuesError> for crate::Error {
    fn from(e: ValuesError) -> crate::Error {
        crate::Error::Values(e.0)
    }
}

/// A values file as `sigs.k8s.io/yaml` reads it (numbers float64); an empty file is `{}`.
pub fn parse_values(text: &str) -> Result<Value, ValuesError> {
    Ok(parse_values_node(text)?.map_or_else(Value::empty_map, |n| convert::from_yaml_node(&n)))
}

/// [`parse_values`] before the conversion: the mapping read, or `None` for an empty file
/// (or a `null` one).
pub(crate) fn parse_values_node(text: &str) -> Result<Option<Node>, ValuesError> {
    let stream = parse_stream_shared("values.yaml", text, Schema::GoYamlV2);
    if let Some(d) = stream.diagnostics.first() {
        return Err(format!(
            "line {}: {}",
            d.location.as_ref().map_or(0, |l| l.line),
            d.message
        )
        .into());
    }
    let Some(doc) = stream.docs.into_iter().next() else {
        return Ok(None);
    };
    if doc.as_map().is_some() {
        return Ok(Some(doc));
    }
    match convert::from_yaml_node(&doc) {
        Value::Nil => Ok(None),
        other => Err(format!(
            "error unmarshaling JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            other.kind_name()
        ).into()),
    }
}

fn as_map(v: &Value) -> Option<MapRef> {
    match v {
        Value::Map(m) => Some(m.clone()),
        _ => None,
    }
}

/// Helm's `mergeMaps` for user values: `b` over `a`, maps merged deeply.
pub fn merge_user(a: &Value, b: &Value) -> Value {
    let (Some(am), Some(bm)) = (as_map(a), as_map(b)) else {
        return b.clone();
    };
    let mut out: BTreeMap<String, Value> = am.borrow().clone();
    for (k, v) in bm.borrow().iter() {
        let merged = match (out.get(k), v) {
            (Some(old @ Value::Map(_)), Value::Map(_)) => merge_user(old, v),
            _ => v.clone(),
        };
        out.insert(k.clone(), merged);
    }
    Value::map(out)
}

/// `coalesceTablesFullKey`: `src` under `dst` (dst wins); with `merge` false a nil in dst
/// deletes the key.
fn coalesce_tables(dst: &MapRef, src: &MapRef, merge: bool, depth: usize) {
    if depth > fluxgate_gotemplate::MAX_DEPTH || std::rc::Rc::ptr_eq(dst, src) {
        return;
    }
    let src_non_nil: Vec<String> = src
        .borrow()
        .iter()
        .filter(|(_, v)| !v.is_nil())
        .map(|(k, _)| k.clone())
        .collect();
    let nil_keys: Vec<String> = dst
        .borrow()
        .iter()
        .filter(|(_, v)| v.is_nil())
        .map(|(k, _)| k.clone())
        .collect();
    for k in nil_keys {
        src.borrow_mut().insert(k, Value::Nil);
    }
    let entries: Vec<(String, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, sv) in entries {
        let dv = dst.borrow().get(&k).cloned();
        match dv {
            Some(d) if !merge && d.is_nil() && src_non_nil.contains(&k) => {
                dst.borrow_mut().remove(&k);
            }
            None => {
                dst.borrow_mut().insert(k, sv);
            }
            Some(Value::Map(dm)) => {
                if let Value::Map(sm) = &sv {
                    coalesce_tables(&dm, sm, merge, depth + 1);
                }
            }
            Some(_) => {}
        }
    }
}

/// `coalesceValues`: the chart's defaults under `v`.
fn coalesce_values(chart: &Chart, v: &MapRef, merge: bool) {
    let Value::Map(defaults) = chart.values.deep_copy() else {
        return;
    };
    let entries: Vec<(String, Value)> = defaults
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, val) in entries {
        let cur = v.borrow().get(&key).cloned();
        if let Some(value) = cur {
            {
                if value.is_nil() && !merge {
                    v.borrow_mut().remove(&key);
                } else if let (Value::Map(dest), Value::Map(src)) = (&value, &val) {
                    let merge = merge || chart.subcharts.iter().any(|c| c.name == key);
                    // Nils of the chart's defaults never leak into the result.
                    if !merge {
                        clean_nils(src, 0);
                    }
                    coalesce_tables(dest, src, merge, 0);
                }
            }
        } else {
            if !merge {
                if val.is_nil() {
                    continue;
                }
                if let Value::Map(sub) = &val {
                    clean_nils(sub, 0);
                }
            }
            v.borrow_mut().insert(key, val);
        }
    }
}

/// `cleanNilValues`: nil entries removed, deeply.
fn clean_nils(m: &MapRef, depth: usize) {
    if depth > fluxgate_gotemplate::MAX_DEPTH {
        return;
    }
    m.borrow_mut().retain(|_, v| !v.is_nil());
    let subs: Vec<MapRef> = m.borrow().values().filter_map(as_map).collect();
    for sub in subs {
        clean_nils(&sub, depth + 1);
    }
}

/// `coalesceGlobals`: the parent's `global` into the subchart's.
fn coalesce_globals(dest: &MapRef, src: &MapRef) {
    let dg = match dest.borrow().get("global") {
        None => Some(Value::empty_map()),
        Some(v @ Value::Map(_)) => Some(v.clone()),
        Some(_) => None,
    };
    let sg = match src.borrow().get("global") {
        None => Some(Value::empty_map()),
        Some(v @ Value::Map(_)) => Some(v.clone()),
        Some(_) => None,
    };
    let (Some(Value::Map(dg)), Some(Value::Map(sg))) = (dg, sg) else {
        return;
    };
    let entries: Vec<(String, Value)> = sg
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, val) in entries {
        if let Value::Map(vm) = &val {
            let vv = val.deep_copy();
            let Value::Map(vvm) = &vv else { continue };
            let existing = dg.borrow().get(&k).cloned();
            match existing {
                None => {
                    dg.borrow_mut().insert(k, vv.clone());
                }
                Some(Value::Map(destv)) => {
                    coalesce_tables(vvm, &destv, true, 0);
                    dg.borrow_mut().insert(k, vv.clone());
                }
                Some(_) => {}
            }
            let _ = vm;
        } else if matches!(dg.borrow().get(&k), Some(Value::Map(_))) {
            // A table in the destination is kept.
        } else {
            dg.borrow_mut().insert(k, val);
        }
    }
    dest.borrow_mut().insert("global".into(), Value::Map(dg));
}

/// `coalesce`: the chart's defaults and its subcharts' under `dest`.
pub fn coalesce(chart: &Chart, dest: &MapRef, merge: bool) -> Result<(), ValuesError> {
    coalesce_values(chart, dest, merge);
    for sub in &chart.subcharts {
        let cur = dest.borrow().get(&sub.name).cloned();
        let dv = match cur {
            None => {
                let m = Value::empty_map();
                dest.borrow_mut().insert(sub.name.clone(), m.clone());
                m
            }
            Some(v @ Value::Map(_)) => v,
            Some(other) => {
                return Err(format!(
                    "type mismatch on {}: {}",
                    sub.name,
                    // Helm formats the value with `%t`.
                    fluxgate_gotemplate::format::sprintf("%t", std::slice::from_ref(&other))
                )
                .into());
            }
        };
        let Value::Map(dvm) = &dv else { continue };
        coalesce_globals(dvm, dest);
        coalesce(sub, dvm, merge)?;
    }
    Ok(())
}

/// `CoalesceValues(chart, vals)` on a copy of `vals`.
pub fn coalesce_values_copy(chart: &Chart, vals: &Value) -> Result<Value, ValuesError> {
    let copy = vals.deep_copy();
    let Value::Map(m) = &copy else {
        return Ok(copy);
    };
    coalesce(chart, m, false)?;
    Ok(copy)
}

fn path_value(vals: &Value, path: &str) -> Option<Value> {
    let mut cur = vals.clone();
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    Some(cur)
}

/// `ProcessDependencies`: aliases applied, disabled subcharts (by tags, then conditions)
/// removed, recursively.
pub fn process_dependencies(
    chart: &mut Chart,
    vals: &Value,
    path: &str,
) -> Result<(), ValuesError> {
    if chart.dependencies.is_empty() {
        return Ok(());
    }
    // Subcharts that Chart.yaml lists get its alias; others are kept as they are.
    let mut kept = Vec::new();
    let listed = |c: &Chart| chart.dependencies.iter().any(|d| d.name == c.name);
    for c in &chart.subcharts {
        if !listed(c) {
            kept.push(c.clone());
        }
    }
    for d in &mut chart.dependencies {
        if let Some(c) = chart.subcharts.iter().find(|c| c.name == d.name) {
            let mut c = c.clone();
            if !d.alias.is_empty() {
                c.name.clone_from(&d.alias);
            }
            kept.push(c);
        }
        if !d.alias.is_empty() {
            d.name = d.alias.clone();
        }
        d.enabled = true;
    }
    chart.subcharts = kept;
    let cvals = coalesce_values_copy(chart, vals)?;
    let tags = cvals.get("tags");
    for d in &mut chart.dependencies {
        let (mut has_true, mut has_false) = (false, false);
        for t in &d.tags {
            match tags.as_ref().and_then(|m| m.get(t)) {
                Some(Value::Bool(true)) => has_true = true,
                Some(Value::Bool(false)) => has_false = true,
                _ => {}
            }
        }
        if !has_true && has_false {
            d.enabled = false;
        } else if has_true || !has_false {
            d.enabled = true;
        }
        for c in d.condition.trim().split(',') {
            if c.is_empty() {
                continue;
            }
            if let Some(Value::Bool(b)) = path_value(&cvals, &format!("{path}{c}")) {
                d.enabled = b;
                break;
            }
        }
    }
    let disabled: Vec<String> = chart
        .dependencies
        .iter()
        .filter(|d| !d.enabled)
        .map(|d| d.name.clone())
        .collect();
    chart.subcharts.retain(|c| !disabled.contains(&c.name));
    chart.dependencies.retain(|d| d.enabled);
    for sub in &mut chart.subcharts {
        let sub_path = format!("{path}{}.", sub.name);
        process_dependencies(sub, &cvals, &sub_path)?;
    }
    Ok(())
}

/// `processDependencyImportValues`: each chart's `import-values` (children first) copied
/// from its subcharts' values into its own, below the values it sets itself.
pub fn process_import_values(chart: &mut Chart) -> Result<(), ValuesError> {
    for sub in &mut chart.subcharts {
        process_import_values(sub)?;
    }
    if chart
        .dependencies
        .iter()
        .all(|d| d.import_values.is_empty())
    {
        return Ok(());
    }
    let cvals = Value::empty_map();
    let Value::Map(cm) = &cvals else {
        return Ok(());
    };
    coalesce(chart, cm, true)?;
    let b = Value::empty_map();
    let Value::Map(bm) = &b else { return Ok(()) };
    for d in &chart.dependencies {
        for (child, parent) in &d.import_values {
            let Some(Value::Map(table)) = path_value(&cvals, &format!("{}.{child}", d.name)) else {
                continue;
            };
            let mut data = Value::Map(table).deep_copy();
            if parent != "." {
                for key in parent.rsplit('.') {
                    data = Value::map(BTreeMap::from([(key.to_string(), data)]));
                }
            }
            if let Value::Map(dm) = &data {
                coalesce_tables(bm, dm, true, 0);
            }
        }
    }
    let merged = cvals.deep_copy();
    if let Value::Map(mm) = &merged {
        coalesce_tables(mm, bm, true, 0);
    }
    chart.values = merged;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(name: &str, values: &str) -> Chart {
        Chart {
            meta: fluxgate_yaml::Node::null(fluxgate_diagnostics::Location::new("c", 1, 1)),
            name: name.into(),
            version: "1".into(),
            templates: vec![],
            files: BTreeMap::new(),
            values: parse_values(values).unwrap(),
            dependencies: vec![],
            subcharts: vec![],
            schema: None,
        }
    }

    #[test]
    fn import_values_and_globals() {
        let mut parent = chart("p", "own: 1\nfromchild: {keep: parent}\nglobal: {g: 1}\n");
        parent.subcharts.push(chart(
            "c",
            "exports:\n  data: {fromchild: {keep: child, extra: 2}}\ninner: {x: 1}\n",
        ));
        parent.dependencies.push(crate::Dependency {
            name: "c".into(),
            enabled: true,
            import_values: vec![
                ("exports.data".into(), ".".into()),
                ("inner".into(), "imported.inner".into()),
            ],
            ..crate::Dependency::default()
        });
        process_import_values(&mut parent).unwrap();
        let out = coalesce_values_copy(&parent, &Value::empty_map()).unwrap();
        let s = fluxgate_gotemplate::format::sprint_value;
        assert_eq!(
            s(&out.get("fromchild").unwrap()),
            "map[extra:2 keep:parent]"
        );
        assert_eq!(s(&out.get("imported").unwrap()), "map[inner:map[x:1]]");
        assert_eq!(s(&out.get("c").unwrap().get("global").unwrap()), "map[g:1]");
    }

    #[test]
    fn null_deletes_and_maps_merge() {
        let user = parse_values("a:\n  x: null\n  w: 2\nb: null\n").unwrap();
        let defaults = parse_values("a:\n  x: 1\n  z: 3\nb: 4\nc: 5\n").unwrap();
        let chart = Chart {
            meta: fluxgate_yaml::Node::null(fluxgate_diagnostics::Location::new("c", 1, 1)),
            name: "c".into(),
            version: "1".into(),
            templates: vec![],
            files: BTreeMap::new(),
            values: defaults,
            dependencies: vec![],
            subcharts: vec![],
            schema: None,
        };
        let out = coalesce_values_copy(&chart, &user).unwrap();
        assert_eq!(
            fluxgate_gotemplate::format::sprint_value(&out),
            "map[a:map[w:2 z:3] c:5]"
        );
    }
}
