//! Executing one helmfile template, and reading its output back as YAML whose every node is
//! located where it came from.

use std::collections::BTreeMap;
use std::path::Path;

use fluxgate_diagnostics::Location;
use fluxgate_gotemplate::{MissingKey, Origin, Templates, Traced, Tracer, Value};
use fluxgate_yaml::{Node, Schema, Value as Y, parse_stream};

use crate::funcs::{Ctx, funcs};

/// Renders `text` (the file `name`, relative to the repository) with `data` as dot, its
/// `readFile` relative to `base`; `pre_render` is helmfile's first pass. Helper templates
/// (`_*.tpl` beside `base`) are parsed first, as helmfile does.
pub(crate) fn render(
    ctx: &Ctx,
    base: &Path,
    name: &str,
    text: &str,
    data: &Value,
    pre_render: bool,
) -> Result<Traced, fluxgate_gotemplate::Error> {
    let mut set = Templates::new(funcs(ctx, base, pre_render));
    set.missing_key = if pre_render {
        MissingKey::Zero
    } else {
        MissingKey::Error
    };
    set.root_name = "stringTemplate".to_string();
    let mut helpers: Vec<_> = ctx
        .fs
        .list_dir_kinds(base)
        .unwrap_or_default()
        .into_iter()
        .filter(|(p, dir)| {
            !dir && p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with('_') && n.ends_with(".tpl")
            })
        })
        .map(|(p, _)| p)
        .collect();
    helpers.sort();
    for h in helpers {
        if let Ok(t) = ctx.fs.read(&h) {
            set.parse(&ctx.rel(&h), &t)?;
        }
    }
    set.parse(name, text)?;
    let mut tracer = Tracer::new();
    tracer.add_root(data, "");
    set.execute_traced(name, data, &tracer)
}

/// A YAML tree as a template value: go-yaml v3's types (integers stay integers).
pub(crate) fn to_value(n: &Node) -> Value {
    match &n.value {
        Y::Null => Value::Nil,
        Y::Bool(b) => Value::Bool(*b),
        Y::Int(i) => Value::Int(*i),
        Y::Float(f) => Value::Float(*f),
        Y::String(s) => Value::str(s),
        Y::Seq(items) => Value::list(items.iter().map(to_value).collect()),
        Y::Map(m) => Value::map(
            m.iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}

/// Where each line of a rendered text came from: the first traced value on it (located
/// through `values`, the tree `.Values` was made from), else the first template text on it.
pub(crate) fn line_origins(traced: &Traced, values: Option<&Node>) -> Vec<Option<Location>> {
    let mut starts = vec![0usize];
    starts.extend(
        traced
            .text
            .bytes()
            .enumerate()
            .filter(|(_, b)| *b == b'\n')
            .map(|(i, _)| i + 1),
    );
    let mut out: Vec<Option<Location>> = vec![None; starts.len()];
    let mut by_value: Vec<bool> = vec![false; starts.len()];
    for s in &traced.spans {
        let first = starts.partition_point(|&x| x <= s.start).saturating_sub(1);
        let last = starts
            .partition_point(|&x| x < s.end.max(s.start + 1))
            .saturating_sub(1);
        for line in first..=last.min(starts.len() - 1) {
            match &s.origin {
                Origin::Value { path } => {
                    if by_value[line] {
                        continue;
                    }
                    if let Some(n) = values.and_then(|v| value_at(v, path)) {
                        out[line] = Some(n.loc.clone());
                        by_value[line] = true;
                    }
                }
                Origin::Template {
                    file,
                    line: l,
                    column,
                } => {
                    if out[line].is_none() {
                        out[line] = Some(Location::new(file.to_string(), *l, *column));
                    }
                }
            }
        }
    }
    out
}

/// The node of `values` at a traced path (`Values.a.b`, `StateValues.l[0]`,
/// `Environment.Values.x`).
fn value_at<'n>(values: &'n Node, path: &str) -> Option<&'n Node> {
    let rest = path
        .strip_prefix("Values")
        .or_else(|| path.strip_prefix("StateValues"))
        .or_else(|| path.strip_prefix("Environment.Values"))?;
    let mut cur = values;
    let mut key = String::new();
    let mut chars = rest.chars().peekable();
    let step = |cur: &'n Node, key: &str| -> Option<&'n Node> {
        if key.is_empty() {
            return Some(cur);
        }
        cur.get(key)
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    key.push(n);
                }
            }
            '.' => {
                cur = step(cur, &key)?;
                key.clear();
            }
            '[' => {
                cur = step(cur, &key)?;
                key.clear();
                let idx: String = chars.by_ref().take_while(|c| *c != ']').collect();
                cur = cur.as_seq()?.get(idx.parse::<usize>().ok()?)?;
            }
            _ => key.push(c),
        }
    }
    step(cur, &key)
}

/// The documents of a rendered text, each node moved to where its line came from. A
/// document that equals a subtree of a file the template read (`readFile`) takes that
/// subtree's locations: the values a template copied from a HelmRelease point at it.
pub(crate) fn docs_with_origins(
    ctx: &Ctx,
    file: &str,
    traced: &Traced,
    values: Option<&Node>,
    reads: &[String],
) -> Result<Vec<Node>, Box<fluxgate_diagnostics::Diagnostic>> {
    let stream = parse_stream(file, &traced.text, Schema::Kube);
    if let Some(d) = stream
        .diagnostics
        .into_iter()
        .find(|d| d.severity == fluxgate_diagnostics::Severity::Error)
    {
        return Err(Box::new(d));
    }
    let origins = line_origins(traced, values);
    let fallback = Location::new(file.to_string(), 1, 1);
    let mut docs = stream.docs;
    for d in &mut docs {
        relocate_by_line(d, &origins, &fallback);
    }
    if !reads.is_empty() {
        let mut sources: Vec<Node> = Vec::new();
        for r in reads {
            if let Ok(text) = ctx.fs.read(&ctx.root.join(r)) {
                sources.extend(parse_stream(r, &text, Schema::Kube).docs);
            }
        }
        let mut subtrees: Vec<&Node> = Vec::new();
        for s in &sources {
            collect_subtrees(s, &mut subtrees);
        }
        for d in &mut docs {
            adopt(d, &subtrees);
        }
    }
    Ok(docs)
}

fn relocate_by_line(n: &mut Node, origins: &[Option<Location>], fallback: &Location) {
    let line = n.loc.line as usize;
    n.loc = origins
        .get(line.saturating_sub(1))
        .cloned()
        .flatten()
        .unwrap_or_else(|| fallback.clone());
    match &mut n.value {
        Y::Seq(s) => s
            .iter_mut()
            .for_each(|x| relocate_by_line(x, origins, fallback)),
        Y::Map(m) => m
            .values_mut()
            .for_each(|x| relocate_by_line(x, origins, fallback)),
        _ => {}
    }
}

fn collect_subtrees<'n>(n: &'n Node, out: &mut Vec<&'n Node>) {
    match &n.value {
        Y::Seq(s) if !s.is_empty() => {
            out.push(n);
            for x in s {
                collect_subtrees(x, out);
            }
        }
        Y::Map(m) if !m.is_empty() => {
            out.push(n);
            for x in m.values() {
                collect_subtrees(x, out);
            }
        }
        _ => {}
    }
}

/// Takes the locations of an equal subtree of the files read, else tries each child.
fn adopt(n: &mut Node, subtrees: &[&Node]) {
    let size = n.size();
    if size > 1
        && let Some(src) = subtrees.iter().find(|s| s.size() == size && **s == n)
    {
        *n = (*src).clone();
        return;
    }
    match &mut n.value {
        Y::Seq(s) => s.iter_mut().for_each(|x| adopt(x, subtrees)),
        Y::Map(m) => m.values_mut().for_each(|x| adopt(x, subtrees)),
        _ => {}
    }
}

/// The message of a template error as helmfile's prefix-free text, and where it is.
pub(crate) fn error_location(e: &fluxgate_gotemplate::Error, file: &str) -> Location {
    e.position().map_or_else(
        || Location::new(file.to_string(), 1, 1),
        |f| {
            Location::new(
                f.file,
                u32::try_from(f.line).unwrap_or(1),
                u32::try_from(f.column).unwrap_or(1),
            )
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::parse_one;

    #[test]
    fn value_paths_find_their_nodes() {
        let v = parse_one("env.yaml", "a:\n  b.c: [1, {d: 2}]\n", Schema::Kube)
            .0
            .unwrap();
        let n = value_at(&v, "Values.a.b\\.c[1].d").unwrap();
        assert_eq!(n.as_i64(), Some(2));
        assert!(value_at(&v, "Release.Name").is_none());
    }
}
