//! Rendering a chart as `helm template` does: every template of the chart and its enabled
//! subcharts parsed into one set (deeper paths first, so that a parent's `define`s win),
//! each non-partial executed with its chart's values, `<no value>` removed, `NOTES.txt`
//! dropped, documents split at `---`, hooks separated from manifests, manifests sorted by
//! Helm's install order of kinds, then printed with `# Source:` lines.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};

use fluxgate_gotemplate::{Arity, Funcs, MissingKey, Templates, Value};
use fluxgate_yaml::{Node, Schema, parse_stream};

use crate::chart::Chart;
use crate::objects::{Capabilities, ChartMeta, Files, KubeVersion, META_FIELDS, api_versions};
use crate::{Error, Options, sprig, values};

/// Helm's limit on nested `include`s of one name.
const RECURSION_MAX: usize = 1000;

/// Helm's install order of kinds; other kinds come after these, by name.
const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// The function table Helm gives templates: Go's builtins, sprig, and Helm's own.
pub fn helm_funcs(seed: u64) -> Funcs {
    let mut f = Funcs::new();
    sprig::add(&mut f);
    sprig::crypto::add_seeded(&mut f, seed);
    let included: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    f.insert("include", Arity::Exact(2), move |c, a| {
        let name = sprig::arg_str(a, 0)?;
        {
            let mut m = included.lock().unwrap_or_else(PoisonError::into_inner);
            let n = m.entry(name.clone()).or_insert(0);
            if *n > RECURSION_MAX {
                return Err(format!("rendering template has a nested reference name: {name}: unable to execute template"));
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
            Value::Nil | Value::Missing => Err(format!("{WARN_START}{warn}{WARN_END}")),
            Value::String(s) if s.is_empty() => Err(format!("{WARN_START}{warn}{WARN_END}")),
            v => Ok(v.clone()),
        }
    });
    f.insert("fail", Arity::Exact(1), |_, a| {
        Err(format!("{WARN_START}{}{WARN_END}", sprig::arg_str(a, 0)?))
    });
    f.insert("lookup", Arity::Exact(4), |_, _| Ok(Value::empty_map()));
    for (name, params) in sprig::PARAMS {
        f.set_params(name, params);
    }
    f
}

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
    text: String,
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
    names.sort_by(|a, b| {
        let (ca, cb) = (a.name.matches('/').count(), b.name.matches('/').count());
        cb.cmp(&ca).then_with(|| b.name.cmp(&a.name))
    });
}

/// Renders `chart` into the files Helm's engine returns (name -> text), before sorting.
pub fn render_files(
    chart: &Chart,
    vals: &Value,
    opts: &Options,
) -> Result<Vec<(String, String)>, Error> {
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
    let mut list = Vec::new();
    collect(chart, &chart.name, vals, &shared, &mut list, true);
    sort_templates(&mut list);
    let seed = crate::seed(&opts.release_name, &opts.namespace);
    let mut set = Templates::new(helm_funcs(seed));
    set.missing_key = MissingKey::Zero;
    set.root_name = "gotpl".into();
    add_values_methods(&mut set);
    for r in &list {
        set.parse(&r.name, &r.text)
            .map_err(|e| Error::Render(parse_error(&r.name, &e)))?;
    }
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
        let text = set
            .execute(&r.name, &r.top)
            .map_err(|e| Error::Render(reformat(&e.to_string())))?;
        out.push((r.name.clone(), strip_no_value(text)));
    }
    Ok(out)
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
    set.map_methods.insert("AsMap".into(), |m, _| Ok(m.clone()));
    set.map_methods.insert("YAML".into(), |m, _| {
        Ok(Value::from(crate::convert::to_yaml(m) + "\n"))
    });
    set.map_methods.insert("Table".into(), |m, a| {
        let name = sprig::arg_str(a, 0)?;
        let mut cur = m.clone();
        for part in name.split('.') {
            cur = match cur.get(part) {
                Some(v @ Value::Map(_)) => v,
                _ => return Err(format!("no table named {name:?}")),
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

/// One document of the output.
struct Manifest {
    source: String,
    content: String,
    kind: String,
    hook: Option<String>,
}

/// `SplitManifests`: documents at lines starting `---`, leading whitespace removed.
fn split_manifests(text: &str) -> Vec<String> {
    let text = text.trim_start();
    let mut docs = Vec::new();
    let mut cur = String::new();
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("---") {
            docs.push(std::mem::take(&mut cur));
            // What follows `---` and its spaces on the same line starts the next document.
            cur.push_str(rest.trim_start_matches([' ', '\t']));
        } else {
            cur.push_str(line);
        }
    }
    docs.push(cur);
    docs.into_iter()
        .filter(|d| !d.trim().is_empty())
        .map(|d| d.trim_start().to_string())
        .collect()
}

fn head(doc: &str) -> (String, Option<String>) {
    let stream = parse_stream("manifest", doc, Schema::GoYamlV2);
    let Some(d) = stream.docs.first() else {
        return (String::new(), None);
    };
    let kind = d
        .get("kind")
        .and_then(Node::scalar_text)
        .unwrap_or_default();
    let hook = d
        .path(&["metadata", "annotations", "helm.sh/hook"])
        .and_then(Node::scalar_text);
    (kind, hook)
}

fn kind_rank(kind: &str) -> (usize, String) {
    match INSTALL_ORDER.iter().position(|k| *k == kind) {
        Some(i) => (i, String::new()),
        None => (INSTALL_ORDER.len(), kind.to_string()),
    }
}

/// `helm template`'s output for the rendered `files`.
pub fn assemble(chart: &Chart, files: Vec<(String, String)>, opts: &Options) -> String {
    let mut files: Vec<(String, String)> = files
        .into_iter()
        .filter(|(n, _)| !n.ends_with("NOTES.txt"))
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut manifests = Vec::new();
    for (name, text) in files {
        let base = name.rsplit('/').next().unwrap_or(&name);
        if base.starts_with('_') || text.trim().is_empty() {
            continue;
        }
        for doc in split_manifests(&text) {
            let (kind, hook) = head(&doc);
            manifests.push(Manifest {
                source: name.clone(),
                content: doc,
                kind,
                hook,
            });
        }
    }
    let (hooks, mut generic): (Vec<Manifest>, Vec<Manifest>) =
        manifests.into_iter().partition(|m| m.hook.is_some());
    generic.sort_by_key(|m| kind_rank(&m.kind));
    let mut hooks = hooks;
    hooks.sort_by_key(|m| kind_rank(&m.kind));
    let mut body = String::new();
    if opts.include_crds {
        for (path, data) in crds(chart, &chart.name) {
            body.push_str(&format!("---\n# Source: {path}\n{data}\n"));
        }
    }
    for m in &generic {
        body.push_str(&format!("---\n# Source: {}\n{}\n", m.source, m.content));
    }
    let mut out = body.trim().to_string();
    out.push('\n');
    for h in &hooks {
        let is_test = h.hook.as_deref().is_some_and(|e| {
            e.split(',')
                .any(|x| matches!(x.trim(), "test" | "test-success"))
        });
        if opts.skip_tests && is_test {
            continue;
        }
        out.push_str(&format!("---\n# Source: {}\n{}\n", h.source, h.content));
    }
    out
}

/// The CRD files of a chart and its subcharts (`crds/`), subcharts first as Helm lists them.
fn crds(chart: &Chart, path: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, data) in &chart.files {
        if name.starts_with("crds/")
            && (name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json"))
        {
            out.push((
                format!("{path}/{name}"),
                String::from_utf8_lossy(data).into_owned(),
            ));
        }
    }
    for sub in &chart.subcharts {
        out.extend(crds(sub, &format!("{path}/charts/{}", sub.name)));
    }
    out
}

/// Renders `chart` with `opts`: what `helm template` prints.
pub fn template(mut chart: Chart, opts: &Options) -> Result<String, Error> {
    let user = opts.values.deep_copy();
    values::process_dependencies(&mut chart, &user, "")
        .map_err(|e| Error::Values(format!("chart dependencies processing failed: {e}")))?;
    values::process_import_values(&mut chart).map_err(Error::Values)?;
    let vals = values::coalesce_values_copy(&chart, &user).map_err(Error::Values)?;
    if !opts.skip_schema_validation {
        crate::schema::validate(&chart, &vals).map_err(|f| Error::Schema(Box::new(f)))?;
    }
    let files = render_files(&chart, &vals, opts)?;
    Ok(assemble(&chart, files, opts))
}

#[allow(dead_code)] // kept for callers that hold values in a RefCell
type Shared = Rc<RefCell<Value>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_split_like_helm() {
        assert_eq!(
            split_manifests("\n---\na: 1\n---  \nb: 2\n\n---\n"),
            vec!["a: 1\n", "b: 2\n\n"]
        );
    }

    #[test]
    fn errors_reformat() {
        let e = "template: c/templates/x.yaml:3:4: executing \"c/templates/x.yaml\" at <required \"m\" .x>: error calling required: HELM_ERR_STARTA value!HELM_ERR_END";
        assert_eq!(
            reformat(e),
            "execution error at (c/templates/x.yaml:3:4): A value!"
        );
    }
}
