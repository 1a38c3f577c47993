//! One `helm template` run from plain arguments: reads the values files, applies `--set*`,
//! loads the chart and renders it on a thread with a large stack (templates nest deeply).

use std::path::PathBuf;

use fluxgate_gotemplate::Value;

use crate::{Chart, Error, Options, Rendered, setvals, values};

/// The arguments of `fluxgate template` (all owned, so that a render can move to a thread).
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub release_name: String,
    pub chart: PathBuf,
    pub namespace: String,
    pub values_files: Vec<PathBuf>,
    pub set: Vec<String>,
    pub set_string: Vec<String>,
    pub set_json: Vec<String>,
    /// `--set-file K=PATH`: the file's content as the value.
    pub set_file: Vec<String>,
    /// `--set-literal K=V`: V as one string, commas and all.
    pub set_literal: Vec<String>,
    pub kube_version: Option<String>,
    pub api_versions: Vec<String>,
    pub skip_tests: bool,
    pub include_crds: bool,
    /// `--skip-schema-validation`.
    pub skip_schema_validation: bool,
}

/// Stack for one render: `include` inside `tpl` inside `range` recurses through the
/// executor many frames deep.
const STACK: usize = 256 << 20;

/// Renders `req`: what `helm template` prints.
pub fn run(req: &Request) -> Result<String, Error> {
    on_render_thread(req, crate::template)
}

/// Renders `req` into documents with the origins of their pieces
/// ([`crate::render_manifests`]).
pub fn run_manifests(req: &Request) -> Result<Rendered, Error> {
    on_render_thread(req, crate::render_manifests)
}

fn on_render_thread<T: Send + 'static>(
    req: &Request,
    render: fn(Chart, &Options) -> Result<T, Error>,
) -> Result<T, Error> {
    let req = req.clone();
    let handle = std::thread::Builder::new()
        .name("helm-template".into())
        .stack_size(STACK)
        .spawn(move || {
            let (chart, opts) = prepare(&req)?;
            render(chart, &opts)
        })
        .map_err(|e| Error::Usage(format!("cannot start the render thread: {e}")))?;
    handle
        .join()
        .unwrap_or_else(|_| Err(Error::Render("the render thread panicked".into())))
}

/// Helm's order of user values: `-f` files merged in order, then `--set-json`, `--set`,
/// `--set-string`, `--set-file`, `--set-literal`.
pub fn user_values(req: &Request) -> Result<Value, Error> {
    let mut vals = Value::empty_map();
    for f in &req.values_files {
        let text = std::fs::read_to_string(f).map_err(|e| Error::Io {
            path: f.display().to_string(),
            message: e.to_string(),
        })?;
        let v = values::parse_values(&text)
            .map_err(|e| Error::Values(format!("failed to parse {}: {e}", f.display())))?;
        vals = values::merge_user(&vals, &v);
    }
    for s in &req.set_json {
        setvals::apply_set(&vals, s, false, true)?;
    }
    for s in &req.set {
        setvals::apply_set(&vals, s, false, false)
            .map_err(|e| Error::Values(format!("failed parsing --set data: {e}")))?;
    }
    for s in &req.set_string {
        setvals::apply_set(&vals, s, true, false)
            .map_err(|e| Error::Values(format!("failed parsing --set-string data: {e}")))?;
    }
    let read =
        |p: &str| std::fs::read_to_string(p).map_err(|e| values::ValuesError(format!("{p}: {e}")));
    for s in &req.set_file {
        setvals::apply_file(&vals, s, &read)
            .map_err(|e| Error::Values(format!("failed parsing --set-file data: {e}")))?;
    }
    for s in &req.set_literal {
        setvals::apply_literal(&vals, s)
            .map_err(|e| Error::Values(format!("failed parsing --set-literal data: {e}")))?;
    }
    Ok(vals)
}

/// Helm's release name check: a DNS-1123 subdomain of at most 53 characters.
fn check_release_name(name: &str) -> Result<(), Error> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() <= 53 && !name.is_empty() && name.split('.').all(label_ok) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "release name check failed: release name {}: invalid release name, must match regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the length must not be longer than 53",
        fluxgate_gotemplate::format::quote(name)
    )))
}

fn prepare(req: &Request) -> Result<(Chart, Options), Error> {
    check_release_name(&req.release_name)?;
    let chart = Chart::load(&req.chart)?;
    let opts = Options {
        release_name: req.release_name.clone(),
        namespace: req.namespace.clone(),
        values: user_values(req)?,
        kube_version: req.kube_version.clone(),
        api_versions: req.api_versions.clone(),
        skip_tests: req.skip_tests,
        include_crds: req.include_crds,
        skip_schema_validation: req.skip_schema_validation,
        unloadable_schemas: crate::UnloadableSchemas::Fail,
    };
    Ok((chart, opts))
}
