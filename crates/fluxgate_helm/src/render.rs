//! Rendering a chart's templates as Helm's engine does: every template of the chart and its
//! enabled subcharts parsed into one set (deeper paths first, so that a parent's `define`s
//! win), each non-partial executed with its chart's values, `<no value>` removed; with
//! tracing, the values traced from the top (`crate::output` makes documents of the files).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use fluxgate_gotemplate::{Arity, Funcs, MissingKey, Templates, Trace, Traced, Tracer, Value};
use fluxgate_yaml::Node;
use foldhash::HashMap;

use crate::chart::Chart;
use crate::objects::{Capabilities, ChartMeta, Files, KubeVersion, META_FIELDS, api_versions};
use crate::{Error, Options, sprig};

/// Helm's limit on nested `include`s of one name.
const RECURSION_MAX: usize = 1000;

/// The function table Helm gives templates: Go's builtins, sprig, and Helm's own.
pub fn helm_funcs(seed: u64) -> Funcs {
    // Go's and sprig's functions, with Helm's origins, hold nothing of a render: built once,
    // shared by every table.
    static SHARED: LazyLock<Funcs> = LazyLock::new(|| {
        let mut f = sprig::shared();
        set_traces(&mut f);
        f.share()
    });
    let mut f = SHARED.clone();
    sprig::crypto::add_seeded(&mut f, seed);
    let included: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    f.insert("include", Arity::Exact(2), move |c, a| {
        let name = sprig::arg_str(a, 0)?;
        {
            let mut m = included.lock().unwrap_or_else(PoisonError::into_inner);
            let n = m.entry(name.clone()).or_insert(0);
            if *n > RECURSION_MAX {
                return Err(format!("rendering template has a nested reference name: {name}: unable to execute template").into());
            }
            *n += 1;
        }
        let out = c.execute_template(&name, &a[1]);
        if let Some(n) = included.lock().unwrap_or_else(PoisonError::into_inner).get_mut(&name) {
            *n = n.saturating_sub(1);
        }
        out.map(Value::from)
    });
    f.insert("tpl", Arity::Exact(2), |c, a| {
        let text = sprig::arg_str(a, 0)?;
        let out = c.execute_text("gotpl", &text, &a[1]).map_err(|e| {
            format!(
                "error during tpl function execution for {}: {e}",
                fluxgate_gotemplate::format::quote(&text)
            )
        })?;
        Ok(Value::from(strip_no_value(out)))
    });
    f.insert("required", Arity::Exact(2), |_, a| {
        let warn = sprig::arg_str(a, 0)?;
        match &a[1] {
            Value::Nil | Value::Missing => Err(format!("{WARN_START}{warn}{WARN_END}").into()),
            Value::String(s) if s.is_empty() => Err(format!("{WARN_START}{warn}{WARN_END}").into()),
            v => Ok(v.clone()),
        }
    });
    f.insert("fail", Arity::Exact(1), |_, a| {
        Err(format!("{WARN_START}{}{WARN_END}", sprig::arg_str(a, 0)?).into())
    });
    f.insert("lookup", Arity::Exact(4), |_, _| Ok(Value::empty_map()));
    for (name, params) in sprig::PARAMS {
        f.set_params(name, params);
    }
    set_traces(&mut f);
    f
}

fn set_traces(f: &mut Funcs) {
    for (names, trace) in TRACES {
        for name in *names {
            f.set_trace(name, *trace);
        }
    }
}

/// How the results of sprig's and Helm's functions relate to their arguments, for origins
/// (the others are computed: their origin is the action that called them). A value passed
/// through a conversion, an encoding or a change of case keeps the values path it came
/// from: the line that set it is what a finding about it should point at.
const TRACES: &[(&[&str], Trace)] = &[
    (
        &[
            "toString",
            "toStrings",
            "int",
            "int64",
            "float64",
            "atoi",
            "toDecimal",
            "toYaml",
            "mustToYaml",
            "toYamlPretty",
            "toJson",
            "mustToJson",
            "toPrettyJson",
            "mustToPrettyJson",
            "toRawJson",
            "mustToRawJson",
            "toToml",
            "b64enc",
            "b64dec",
            "b32enc",
            "b32dec",
            "upper",
            "lower",
            "title",
            "untitle",
            "snakecase",
            "kebabcase",
            "camelcase",
            "required",
            "deepCopy",
            "mustDeepCopy",
        ],
        Trace::Last,
    ),
    (&["indent", "nindent"], Trace::Indent),
    (
        &[
            "trim",
            "trimAll",
            "trimSuffix",
            "trimPrefix",
            "trunc",
            "substr",
        ],
        Trace::Piece,
    ),
    (&["quote", "squote"], Trace::Quote),
    (&["default", "coalesce", "ternary"], Trace::Choice),
    (&["get"], Trace::Index),
    (&["dig"], Trace::Dig),
    (&["dict"], Trace::Dict),
    (&["set"], Trace::Set),
    (&["list"], Trace::List),
    (&["append", "push", "mustAppend", "mustPush"], Trace::Append),
    (&["include"], Trace::Include),
    (&["tpl"], Trace::Tpl),
];

const WARN_START: &str = "HELM_ERR_START";
const WARN_END: &str = "HELM_ERR_END";

/// Helm's `reformatExecErrorMsg`: a `required`/`fail` message as `execution error at
/// (FILE:L:C): MSG`; a chain of `include`s that ends in an executor error as Helm's trace
/// (one `LOCATION / executing "NAME" at <NODE>: / MESSAGE` block per level); anything else
/// (a function's own error at the end of the chain) as Go's text.
fn reformat(err: &str) -> String {
    let tokens: Vec<&str> = err.splitn(3, ": ").collect();
    if tokens.len() == 3
        && let (Some(s), Some(e)) = (tokens[2].find(WARN_START), tokens[2].rfind(WARN_END))
        && s + WARN_START.len() <= e
    {
        return format!(
            "execution error at ({}): {}",
            tokens[1],
            &tokens[2][s + WARN_START.len()..e]
        );
    }
    trace(err).unwrap_or_else(|| err.replace(WARN_START, "").replace(WARN_END, ""))
}

fn trace(err: &str) -> Option<String> {
    let mut out = String::new();
    let mut cur = err;
    loop {
        let rest = cur.strip_prefix("template: ")?;
        if rest.starts_with("no template ") {
            out.push_str(cur);
            out.push('\n');
            break;
        }
        if let Some((loc, after)) = rest.split_once(": executing \"") {
            let end = after.find('"')?;
            let name = &after[..end];
            let after_at = after[end + 1..].strip_prefix(" at <")?;
            let (node, msg) = after_at.split_once(">: ")?;
            let shown = msg.find(" template:").map_or(msg, |i| &msg[..i]);
            out.push_str(&format!(
                "{loc}\n  executing \"{name}\" at <{node}>:\n    {shown}\n"
            ));
            // `error calling F: INNER`: INNER is the next level, or a function's own error.
            let Some(inner) = msg
                .strip_prefix("error calling ")
                .and_then(|m| m.split_once(": "))
                .map(|(_, i)| i)
            else {
                break;
            };
            cur = inner;
            continue;
        }
        let (loc, msg) = rest.rsplit_once(": ")?;
        let shown = msg.find(" template:").map_or(msg, |i| &msg[..i]);
        out.push_str(&format!("{loc}\n  {shown}\n"));
        break;
    }
    Some(out.trim().to_string())
}

/// One renderable template: its full name, text and the values it sees.
struct Renderable {
    name: String,
    text: Arc<str>,
    top: Value,
}

fn chart_meta(chart: &Chart, is_root: bool) -> Value {
    let mut m = BTreeMap::new();
    for (key, field) in META_FIELDS {
        let v = chart.meta.get(key).map(crate::convert::from_yaml_node);
        let v = match (*field, v) {
            ("Name", _) => Value::str(&chart.name),
            ("Deprecated", v) => v
                .filter(|x| matches!(x, Value::Bool(_)))
                .unwrap_or(Value::Bool(false)),
            (
                "Sources" | "Keywords" | "Maintainers" | "Tags" | "Dependencies" | "Annotations",
                v,
            ) => v.unwrap_or(Value::Nil),
            (_, Some(Value::String(s))) => Value::String(s),
            (_, Some(Value::Float(f))) => Value::from(fluxgate_gotemplate::format::format_float(f)),
            (_, Some(Value::Bool(b))) => Value::from(b.to_string()),
            _ => Value::str(""),
        };
        m.insert(*field, v);
    }
    m.insert("IsRoot", Value::Bool(is_root));
    Value::Object(Rc::new(ChartMeta(m)))
}

/// Collects the templates of `chart` (full path `path`) and its subcharts.
fn collect(
    chart: &Chart,
    path: &str,
    values: &Value,
    shared: &Value,
    out: &mut Vec<Renderable>,
    is_root: bool,
) -> Value {
    let subcharts = Value::empty_map();
    let mut top = BTreeMap::new();
    top.insert("Chart".to_string(), chart_meta(chart, is_root));
    top.insert(
        "Files".to_string(),
        Value::Object(Rc::new(Files(Rc::new(chart.files.clone())))),
    );
    top.insert(
        "Release".to_string(),
        shared.get("Release").unwrap_or_default(),
    );
    top.insert(
        "Capabilities".to_string(),
        shared.get("Capabilities").unwrap_or_default(),
    );
    top.insert("Values".to_string(), values.clone());
    top.insert("Subcharts".to_string(), subcharts.clone());
    let top = Value::map(top);
    for sub in &chart.subcharts {
        let sub_values = match values.get(&sub.name) {
            Some(v @ Value::Map(_)) => v,
            _ => Value::empty_map(),
        };
        let sub_top = collect(
            sub,
            &format!("{path}/charts/{}", sub.name),
            &sub_values,
            shared,
            out,
            false,
        );
        if let Value::Map(m) = &subcharts {
            m.borrow_mut().insert(sub.name.clone(), sub_top);
        }
    }
    let library = chart.meta.get("type").and_then(Node::as_str) == Some("library");
    for (name, text) in &chart.templates {
        let base = name.rsplit('/').next().unwrap_or(name);
        if library && !base.starts_with('_') {
            continue;
        }
        out.push(Renderable {
            name: format!("{path}/{name}"),
            text: text.clone(),
            top: top.clone(),
        });
    }
    top
}

/// Helm's order for parsing and executing: more `/` first, then reverse lexical order.
fn sort_templates(names: &mut [Renderable]) {
    names.sort_by_cached_key(|r| {
        (
            std::cmp::Reverse(r.name.bytes().filter(|&b| b == b'/').count()),
            std::cmp::Reverse(r.name.clone()),
        )
    });
}

/// Renders `chart` into the files Helm's engine returns (name -> text), before sorting;
/// with `trace`, each text with the origins of its pieces.
pub(crate) fn render_files(
    chart: &Chart,
    vals: &Value,
    opts: &Options,
    trace: bool,
) -> Result<Vec<(String, Traced)>, Error> {
    let kube = KubeVersion::parse(
        opts.kube_version
            .as_deref()
            .unwrap_or(crate::DEFAULT_KUBE_VERSION),
    )
    .ok_or_else(|| Error::Usage(format!("invalid kube version {:?}", opts.kube_version)))?;
    let caps = Capabilities {
        kube: Rc::new(kube),
        api: Rc::new(api_versions(&opts.api_versions)),
    };
    let release = Value::map(BTreeMap::from([
        ("Name".to_string(), Value::str(&opts.release_name)),
        ("Namespace".to_string(), Value::str(&opts.namespace)),
        ("IsUpgrade".to_string(), Value::Bool(false)),
        ("IsInstall".to_string(), Value::Bool(true)),
        ("Revision".to_string(), Value::Int(1)),
        ("Service".to_string(), Value::str("Helm")),
    ]));
    let shared = Value::map(BTreeMap::from([
        ("Release".to_string(), release),
        ("Capabilities".to_string(), Value::Object(Rc::new(caps))),
    ]));
    // What `toYaml` printed, for `fromYaml` to read back without a parse, for this render.
    let _round_trip = crate::roundtrip::Scope::install();
    let mut list = Vec::new();
    collect(chart, &chart.name, vals, &shared, &mut list, true);
    sort_templates(&mut list);
    let seed = crate::seed(&opts.release_name, &opts.namespace);
    let mut set = Templates::new(helm_funcs(seed));
    set.missing_key = MissingKey::Zero;
    set.root_name = "gotpl".into();
    add_values_methods(&mut set);
    for r in &list {
        let parsed = crate::parsed::parse(&set, &r.name, &r.text)
            .map_err(|e| template_error(&e, parse_error(&r.name, &e)))?;
        set.add(&parsed);
    }
    let tracer = trace.then(|| values_tracer(chart, vals));
    let mut out = Vec::new();
    for r in &list {
        let base = r.name.rsplit('/').next().unwrap_or(&r.name);
        if base.starts_with('_') {
            continue;
        }
        let base_path = r
            .name
            .rsplit_once("/templates/")
            .map_or(String::new(), |(p, _)| format!("{p}/templates"));
        if let Value::Map(m) = &r.top {
            m.borrow_mut().insert(
                "Template".into(),
                Value::map(BTreeMap::from([
                    ("Name".to_string(), Value::str(&r.name)),
                    ("BasePath".to_string(), Value::from(base_path)),
                ])),
            );
        }
        let executed = match &tracer {
            Some(t) => set.execute_traced(&r.name, &r.top, t),
            None => set.execute(&r.name, &r.top).map(|text| Traced {
                text,
                spans: Vec::new(),
            }),
        };
        let mut text = executed.map_err(|e| template_error(&e, reformat(&e.to_string())))?;
        text.remove_all("<no value>");
        out.push((r.name.clone(), text));
    }
    Ok(out)
}

/// The tracer of a render's values: every subchart's `global` as `global` (Helm copies the
/// parent's globals into each subchart), then the whole tree from the top, so that a
/// subchart's `.Values.x` is `<alias-or-name>.x`.
fn values_tracer(chart: &Chart, vals: &Value) -> Tracer {
    fn globals(chart: &Chart, vals: &Value, tracer: &mut Tracer) {
        for sub in &chart.subcharts {
            if let Some(sv @ Value::Map(_)) = vals.get(&sub.name) {
                if let Some(g @ Value::Map(_)) = sv.get("global") {
                    tracer.add_root(&g, "global");
                }
                globals(sub, &sv, tracer);
            }
        }
    }
    let mut tracer = Tracer::new();
    if let Some(g @ Value::Map(_)) = vals.get("global") {
        tracer.add_root(&g, "global");
    }
    globals(chart, vals, &mut tracer);
    tracer.add_root(vals, "");
    tracer
}

/// A template error as data: where Helm reports it (the outermost action, as its message
/// starts), the innermost cause, and Helm's text. Errors without a position stay text.
fn template_error(e: &fluxgate_gotemplate::Error, text: String) -> Error {
    let Some(at) = e.position() else {
        return Error::Render(text);
    };
    let cause = e
        .frames()
        .last()
        .map_or(at.message.as_str(), |f| f.message.as_str());
    let message = match (cause.find(WARN_START), cause.rfind(WARN_END)) {
        (Some(s), Some(end)) if s + WARN_START.len() <= end => {
            cause[s + WARN_START.len()..end].to_string()
        }
        _ => cause.to_string(),
    };
    Error::Template {
        file: at.file,
        line: at.line,
        column: at.column,
        message,
        text,
    }
}

/// Helm removes `<no value>` from what a template printed; most texts hold none, and keep
/// their allocation.
fn strip_no_value(text: String) -> String {
    if text.contains("<no value>") {
        text.replace("<no value>", "")
    } else {
        text
    }
}

/// The methods of Helm's `Values` type that charts call (`.Values.AsMap`, `.Values.Table`,
/// `.Values.YAML`).
fn add_values_methods(set: &mut Templates) {
    let methods = Arc::make_mut(&mut set.map_methods);
    methods.insert("AsMap".into(), |m, _| Ok(m.clone()));
    methods.insert("YAML".into(), |m, _| {
        Ok(Value::from(crate::convert::to_yaml(m) + "\n"))
    });
    methods.insert("Table".into(), |m, a| {
        let name = sprig::arg_str(a, 0)?;
        let mut cur = m.clone();
        for part in name.split('.') {
            cur = match cur.get(part) {
                Some(v @ Value::Map(_)) => v,
                _ => return Err(format!("no table named {name:?}").into()),
            };
        }
        Ok(cur)
    });
}

fn parse_error(name: &str, e: &fluxgate_gotemplate::Error) -> String {
    match e {
        fluxgate_gotemplate::Error::Parse { line, message, .. } => {
            format!("parse error at ({name}:{line}): {message}")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_reformat() {
        let e = "template: c/templates/x.yaml:3:4: executing \"c/templates/x.yaml\" at <required \"m\" .x>: error calling required: HELM_ERR_STARTA value!HELM_ERR_END";
        assert_eq!(
            reformat(e),
            "execution error at (c/templates/x.yaml:3:4): A value!"
        );
    }
}
