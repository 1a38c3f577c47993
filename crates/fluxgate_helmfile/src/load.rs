//! Loading state files as helmfile v1 does: parts, the two-pass render of `.gotmpl`, `bases:`,
//! environments and their values, then each release (see the crate docs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fluxgate_diagnostics::{Annotate, Location};
use fluxgate_fs::{Fs, RealFs, normalize};
use fluxgate_gotemplate::Value;
use fluxgate_yaml::{Node, Schema, Value as Y, parse_stream};

use crate::funcs::{Ctx, LIMIT};
use crate::merge::{coalesce, merge_override};
use crate::render::{docs_with_origins, error_location, render, to_value};
use crate::state::{Helmfile, Need, Problem, ProblemKind, Release, State, ValuesFile};
use crate::{Options, hooks};

/// How deep `bases:` may nest (a base that names itself stops here).
const MAX_BASES: usize = 10;
/// helmfile renders a release's fields until they stop changing, at most this many times.
const MAX_PASSES: usize = 6;

/// Whether a file name is one helmfile reads as a state file.
pub fn is_helmfile_name(name: &str) -> bool {
    matches!(
        name,
        "helmfile.yaml" | "helmfile.yml" | "helmfile.yaml.gotmpl" | "helmfile.yml.gotmpl"
    )
}

/// Loads the state file or `helmfile.d` folder `opts.path` (see the crate docs). Never fails:
/// what cannot be read is a [`Problem`].
pub fn load(opts: &Options) -> Helmfile {
    let fs: Arc<dyn Fs> = opts
        .fs
        .clone()
        .unwrap_or_else(|| Arc::new(RealFs::new(&opts.root)));
    let root = normalize(&opts.root);
    let ctx = Ctx {
        fs,
        root: root.clone(),
        env: Arc::new(opts.env.clone()),
        log: Arc::new(Mutex::new(crate::funcs::Log::default())),
    };
    let mut out = Helmfile {
        path: opts.path.clone(),
        ..Helmfile::default()
    };
    let abs = normalize(&root.join(&opts.path));
    let files: Vec<PathBuf> = if ctx.fs.is_dir(&abs) {
        let mut f: Vec<PathBuf> = ctx
            .fs
            .list_dir_kinds(&abs)
            .unwrap_or_default()
            .into_iter()
            .filter(|(p, dir)| {
                !dir && p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.ends_with(".yaml") || n.ends_with(".yml") || n.ends_with(".gotmpl")
                })
            })
            .map(|(p, _)| p)
            .collect();
        f.sort();
        f
    } else {
        vec![abs]
    };
    for file in files {
        let mut loader = Loader {
            ctx: &ctx,
            env: &opts.environment,
            problems: &mut out.problems,
        };
        if let Some(state) = loader.state(&file) {
            out.states.push(state);
        }
    }
    fluxgate_diagnostics::problem::sort_and_dedup(&mut out.problems);
    out
}

/// A state file read and merged with its bases and parts, before its releases render.
#[derive(Default)]
struct Doc {
    /// Each release item with the folder of the file that wrote it.
    releases: Vec<(Node, PathBuf)>,
    templates: BTreeMap<String, (Node, PathBuf)>,
    default_inherit: Vec<String>,
    default_args: Vec<String>,
    default_wait: Option<bool>,
    values: Option<Node>,
}

struct Loader<'a> {
    ctx: &'a Ctx,
    env: &'a str,
    problems: &'a mut Vec<Problem>,
}

impl Loader<'_> {
    fn invalid(&mut self, message: String, at: Location) {
        self.problems
            .push(Problem::new(ProblemKind::Invalid, message, Some(at)));
    }

    /// A template failure: the template's defect, or (when a limit of fluxgate's stopped it)
    /// something not evaluated.
    fn template_failure(&mut self, what: &str, e: &fluxgate_gotemplate::Error, file: &str) {
        let text = e.to_string();
        let limited = text.contains(LIMIT);
        let log = self.ctx.take();
        let mut p = Problem::new(
            if limited {
                ProblemKind::Unevaluated
            } else {
                ProblemKind::Invalid
            },
            if limited {
                format!("{what} was not rendered: {text}; what it sets is not checked")
            } else {
                format!("{what} does not render: {text}")
            },
            Some(error_location(e, file)),
        );
        for n in log.unevaluated {
            p = p.note(n);
        }
        // `fromYaml` of a file of several documents reads the first one only.
        for r in &log.reads {
            let docs = self
                .ctx
                .fs
                .read(&self.ctx.root.join(r))
                .map_or(0, |t| parse_stream(r, &t, Schema::Kube).docs.len());
            if docs > 1 && !limited {
                p = p.note(format!(
                    "{r} holds {docs} YAML documents; fromYaml reads the first one only"
                ));
            }
        }
        self.problems.push(p);
    }

    fn state(&mut self, file: &Path) -> Option<State> {
        let doc = self.doc(file, None, 0)?;
        let rel = self.ctx.rel(file);
        let values = doc
            .values
            .clone()
            .unwrap_or_else(|| Node::map(Location::file(rel.clone())));
        let mut releases = Vec::new();
        for (item, base) in &doc.releases {
            if let Some(r) = self.release(&doc, item, base, &values) {
                releases.push(r);
            }
        }
        // `needs:` resolve within the state: `ns/name`, or a bare name.
        let ids: Vec<(String, String)> = releases
            .iter()
            .map(|r: &Release| (r.id(), r.name.clone()))
            .collect();
        for r in &mut releases {
            for n in &mut r.needs {
                let parts: Vec<&str> = n.raw.split('/').collect();
                let want = match parts.as_slice() {
                    [_ctx, ns, name] => format!("{ns}/{name}"),
                    _ => n.raw.clone(),
                };
                n.target = ids.iter().position(|(id, _)| *id == want).or_else(|| {
                    let named: Vec<usize> = ids
                        .iter()
                        .enumerate()
                        .filter(|(_, (_, name))| *name == want)
                        .map(|(i, _)| i)
                        .collect();
                    (named.len() == 1).then(|| named[0])
                });
            }
        }
        Some(State {
            file: rel,
            environment: self.env.to_string(),
            values,
            default_args: doc.default_args,
            releases,
        })
    }

    /// Reads `file` with the environment values `inherited` (a base gets its includer's).
    fn doc(&mut self, file: &Path, inherited: Option<&Node>, depth: usize) -> Option<Doc> {
        let rel = self.ctx.rel(file);
        let Ok(text) = self.ctx.fs.read(file) else {
            self.invalid(
                format!("{rel}: no such state file"),
                Location::file(rel.clone()),
            );
            return None;
        };
        let dir = file.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        let gotmpl = rel.ends_with(".gotmpl");
        let text = text.replace("\r\n", "\n");
        let mut out = Doc {
            values: inherited.cloned(),
            ..Doc::default()
        };
        // Parts are split at "\n---\n"; their line numbers continue the file's.
        let mut offset = 0u32;
        for part in text.split("\n---\n") {
            let lines = u32::try_from(part.matches('\n').count()).unwrap_or(0) + 1;
            let node = if gotmpl {
                self.render_part(file, &rel, &dir, part, offset, &mut out)
            } else {
                parse_part(&rel, part, offset)
                    .map_err(|d| {
                        self.problems
                            .push(Problem::from_diagnostic(ProblemKind::Invalid, *d));
                    })
                    .ok()
                    .flatten()
            };
            offset += lines;
            let Some(node) = node else {
                continue;
            };
            // A later part's releases replace the earlier parts' (mergo with override).
            let earlier = std::mem::take(&mut out.releases);
            self.part(&node, &rel, &dir, depth, &mut out);
            if out.releases.is_empty() {
                out.releases = earlier;
            }
        }
        Some(out)
    }

    /// helmfile's two passes over a `.gotmpl` part: the first (no file reads, missing keys
    /// zero) only to read `environments:`, the second with the environment's values.
    fn render_part(
        &mut self,
        file: &Path,
        rel: &str,
        dir: &Path,
        part: &str,
        offset: u32,
        out: &mut Doc,
    ) -> Option<Node> {
        // The part's text at its own lines of the file.
        let padded = format!("{}{part}", "\n".repeat(offset as usize));
        let values = out.values.clone();
        let data = state_data(self.env, values.as_ref());
        if let Ok(first) = render(self.ctx, dir, rel, &padded, &data, true) {
            self.ctx.take();
            if let Ok(docs) = docs_with_origins(self.ctx, rel, &first, values.as_ref(), &[])
                && let Some(n) = docs.first()
            {
                let mut pre = Doc {
                    values: out.values.clone(),
                    ..Doc::default()
                };
                self.env_values(n, dir, &mut pre);
                out.values = pre.values;
            }
        }
        let data = state_data(self.env, out.values.as_ref());
        let _ = file;
        match render(self.ctx, dir, rel, &padded, &data, false) {
            Ok(t) => {
                let log = self.ctx.take();
                for n in log.unevaluated {
                    self.problems.push(Problem::new(
                        ProblemKind::Unevaluated,
                        format!("{rel}: {n}; what depends on it is not checked"),
                        Some(Location::file(rel.to_string())),
                    ));
                }
                match docs_with_origins(self.ctx, rel, &t, out.values.as_ref(), &log.reads) {
                    Ok(docs) => docs.into_iter().next(),
                    Err(d) => {
                        let mut p = Problem::from_diagnostic(ProblemKind::Invalid, *d);
                        p.message = format!("{rel} renders to invalid YAML: {}", p.message);
                        self.problems.push(p);
                        None
                    }
                }
            }
            Err(e) => {
                self.template_failure(rel, &e, rel);
                None
            }
        }
    }

    /// Merges one part into the document: its bases first, then its own keys.
    fn part(&mut self, node: &Node, rel: &str, dir: &Path, depth: usize, out: &mut Doc) {
        if let Some(bases) = node.get("bases").and_then(Node::as_seq) {
            for b in bases {
                let Some(p) = b.scalar_text() else { continue };
                if depth >= MAX_BASES {
                    self.invalid(format!("bases nest deeper than {MAX_BASES}"), b.loc.clone());
                    continue;
                }
                let Ok(abs) = self.ctx.inside(dir, &p) else {
                    self.problems.push(Problem::new(
                        ProblemKind::Unevaluated,
                        format!("base {p} is outside the repository: not read"),
                        Some(b.loc.clone()),
                    ));
                    continue;
                };
                if !self.ctx.fs.is_file(&abs) {
                    self.invalid(
                        format!("base {p} does not exist ({})", self.ctx.rel(&abs)),
                        b.loc.clone(),
                    );
                    continue;
                }
                let values = out.values.clone();
                if let Some(base) = self.doc(&abs, values.as_ref(), depth + 1) {
                    out.releases.extend(base.releases);
                    out.templates.extend(base.templates);
                    if !base.default_inherit.is_empty() {
                        out.default_inherit = base.default_inherit;
                    }
                    if !base.default_args.is_empty() {
                        out.default_args = base.default_args;
                    }
                    out.default_wait = base.default_wait.or(out.default_wait);
                    out.values = base.values;
                }
            }
        }
        self.env_values(node, dir, out);
        if let Some(rs) = node.get("releases").and_then(Node::as_seq) {
            for r in rs {
                out.releases.push((r.clone(), dir.to_path_buf()));
            }
        }
        if let Some(m) = node.get("templates").and_then(Node::as_map) {
            for (k, v) in m {
                out.templates
                    .insert(k.clone(), (v.clone(), dir.to_path_buf()));
            }
        }
        if let Some(d) = node.get("defaultInherit") {
            out.default_inherit = match d.as_seq() {
                Some(s) => s.iter().filter_map(Node::scalar_text).collect(),
                None => d.scalar_text().into_iter().collect(),
            };
        }
        if let Some(w) = node.path(&["helmDefaults", "wait"]).and_then(Node::as_bool) {
            out.default_wait = Some(w);
        }
        if let Some(a) = node.path(&["helmDefaults", "args"]).and_then(Node::as_seq) {
            out.default_args = a.iter().filter_map(Node::scalar_text).collect();
        }
        for (key, what) in [
            ("helmfiles", "sub-helmfiles (`helmfiles:`) are not read"),
            ("secrets", "`secrets:` files are never decrypted"),
        ] {
            if let Some(n) = node.get(key) {
                self.problems.push(Problem::new(
                    ProblemKind::Unsupported,
                    format!("{rel}: {what}; what they set is not checked"),
                    Some(n.loc.clone()),
                ));
            }
        }
        if let Some(envs) = node.get("environments").and_then(Node::as_map)
            && !envs.contains_key(self.env)
            && self.env != "default"
        {
            self.invalid(
                format!("environment \"{}\" is not defined in {rel}", self.env),
                node.get("environments")
                    .map_or_else(|| Location::file(rel.to_string()), |n| n.loc.clone()),
            );
        }
    }

    /// The state's `values:` then `environments.<env>.values`, merged over what `out` has.
    fn env_values(&mut self, node: &Node, dir: &Path, out: &mut Doc) {
        let mut entries: Vec<&Node> = Vec::new();
        if let Some(v) = node.get("values").and_then(Node::as_seq) {
            entries.extend(v);
        }
        if let Some(v) = node
            .path(&["environments", self.env, "values"])
            .and_then(Node::as_seq)
        {
            entries.extend(v);
        }
        // Values files render with the values this state inherited, not with the entries
        // before them in the same list (helmfile's default merge strategy).
        let inherited = out.values.clone();
        for e in entries {
            let layer = match &e.value {
                Y::Map(_) => Some(vec![e.clone()]),
                Y::String(p) => {
                    let so_far = inherited.clone();
                    let data = state_data(self.env, so_far.as_ref());
                    self.values_file(p, &e.loc, dir, &data, so_far.as_ref())
                }
                _ => None,
            };
            for l in layer.into_iter().flatten() {
                match out.values.as_mut() {
                    Some(v) => merge_override(v, &l),
                    None => out.values = Some(l),
                }
            }
        }
    }

    /// A values file (relative to `dir`), rendered when it is `.gotmpl` with `data`.
    fn values_file(
        &mut self,
        path: &str,
        at: &Location,
        dir: &Path,
        data: &Value,
        values: Option<&Node>,
    ) -> Option<Vec<Node>> {
        let Ok(abs) = self.ctx.inside(dir, path) else {
            self.problems.push(Problem::new(
                ProblemKind::Unevaluated,
                format!("values file {path} is outside the repository: not read, what it sets is not checked"),
                Some(at.clone()),
            ));
            return None;
        };
        let rel = self.ctx.rel(&abs);
        let Ok(text) = self.ctx.fs.read(&abs) else {
            self.invalid(
                format!("values file {path} does not exist ({rel}): helmfile fails"),
                at.clone(),
            );
            return None;
        };
        if !rel.ends_with(".gotmpl") {
            let stream = parse_stream(&rel, &text, Schema::Kube);
            if let Some(d) = stream
                .diagnostics
                .into_iter()
                .find(|d| d.severity == fluxgate_diagnostics::Severity::Error)
            {
                self.problems
                    .push(Problem::from_diagnostic(ProblemKind::Invalid, d));
                return None;
            }
            return Some(stream.docs);
        }
        let base = abs.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        match render(self.ctx, &base, &rel, &text, data, false) {
            Ok(t) => {
                let log = self.ctx.take();
                match docs_with_origins(self.ctx, &rel, &t, values, &log.reads) {
                    Ok(docs) => {
                        if !log.unevaluated.is_empty() {
                            let mut p = Problem::new(
                                ProblemKind::Unevaluated,
                                format!(
                                    "values file {rel}: part of it was not evaluated; the values it sets are not checked"
                                ),
                                Some(at.clone()),
                            );
                            for n in log.unevaluated {
                                p = p.note(n);
                            }
                            self.problems.push(p);
                            return None;
                        }
                        Some(docs)
                    }
                    Err(d) => {
                        let mut p = Problem::from_diagnostic(ProblemKind::Invalid, *d);
                        p.message = format!("{rel} renders to invalid YAML: {}", p.message);
                        self.problems.push(p.related(at.clone(), "used here"));
                        None
                    }
                }
            }
            Err(e) => {
                self.template_failure(&format!("values file {rel}"), &e, &rel);
                if let Some(p) = self.problems.last_mut() {
                    p.related.push(fluxgate_diagnostics::Related {
                        location: at.clone(),
                        message: "the release's values entry".to_string(),
                    });
                }
                None
            }
        }
    }

    /// One release: inherited templates, fields rendered to a fixed point, values merged.
    fn release(&mut self, doc: &Doc, item: &Node, base: &Path, values: &Node) -> Option<Release> {
        let merged = self.inherit(doc, item)?;
        let field = |k: &str| {
            merged
                .get(k)
                .and_then(Node::scalar_text)
                .unwrap_or_default()
        };
        let mut fields: BTreeMap<&str, String> = ["name", "namespace", "chart", "version"]
            .into_iter()
            .map(|k| (k, field(k)))
            .collect();
        let installed_raw = merged.get("installed").and_then(Node::scalar_text);
        let mut installed = installed_raw.clone().unwrap_or_else(|| "true".to_string());
        let file = item.loc.file.to_string();
        let mut converged = false;
        for _ in 0..MAX_PASSES {
            let data = release_data(self.env, values, &fields);
            let mut next = fields.clone();
            for (k, v) in &mut next {
                if v.contains("{{") {
                    match render(self.ctx, base, &file, v, &data, false) {
                        Ok(t) => *v = t.text.trim().to_string(),
                        Err(e) => {
                            let name = fields.get("name").cloned().unwrap_or_default();
                            self.template_failure(
                                &format!("release \"{name}\" field `{k}`"),
                                &e,
                                &file,
                            );
                            return None;
                        }
                    }
                }
            }
            if installed.contains("{{") {
                installed = render(self.ctx, base, &file, &installed, &data, false)
                    .map_or_else(|_| "true".to_string(), |t| t.text.trim().to_string());
            }
            if next == fields {
                converged = true;
                break;
            }
            fields = next;
        }
        let name = fields.get("name").cloned().unwrap_or_default();
        if !converged {
            self.invalid(
                format!("release \"{name}\": recursive references can't be resolved"),
                item.loc.clone(),
            );
            return None;
        }
        let chart = fields.get("chart").cloned().unwrap_or_default();
        if chart.is_empty() {
            self.invalid(
                format!("encountered empty chart while reading release \"{name}\""),
                item.loc.clone(),
            );
            return None;
        }
        let log = self.ctx.take();
        let mut unevaluated = log.unevaluated;
        let data = release_data(self.env, values, &fields);
        let mut merged_values = Node::map(item.loc.clone());
        let mut values_files = Vec::new();
        for v in merged.get("values").and_then(Node::as_seq).unwrap_or(&[]) {
            match &v.value {
                Y::String(raw) => {
                    let path = if raw.contains("{{") {
                        render(self.ctx, base, &file, raw, &data, false)
                            .map_or_else(|_| raw.clone(), |t| t.text.trim().to_string())
                    } else {
                        raw.clone()
                    };
                    let before = self.problems.len();
                    let layers = self.values_file(&path, &v.loc, base, &data, Some(values));
                    if self.problems[before..]
                        .iter()
                        .any(|p| p.kind == ProblemKind::Unevaluated)
                    {
                        unevaluated.push(format!("values file {path}"));
                    }
                    values_files.push(ValuesFile {
                        path: self.ctx.inside(base, &path).ok().map(|p| self.ctx.rel(&p)),
                        loc: v.loc.clone(),
                        rendered: path.ends_with(".gotmpl"),
                    });
                    for l in layers.into_iter().flatten() {
                        coalesce(&mut merged_values, &l);
                    }
                }
                Y::Map(_) => {
                    values_files.push(ValuesFile {
                        path: None,
                        loc: v.loc.clone(),
                        rendered: false,
                    });
                    coalesce(&mut merged_values, v);
                }
                _ => {}
            }
        }
        for s in merged.get("set").and_then(Node::as_seq).unwrap_or(&[]) {
            apply_set(&mut merged_values, s);
        }
        let needs = merged
            .get("needs")
            .and_then(Node::as_seq)
            .unwrap_or(&[])
            .iter()
            .filter_map(|n| {
                Some(Need {
                    raw: n.scalar_text()?,
                    target: None,
                    loc: n.loc.clone(),
                })
            })
            .collect();
        let hooks = hooks::read(self.ctx, base, &merged, &data);
        self.ctx.take();
        let loc_of = |k: &str| {
            merged
                .get(k)
                .map_or_else(|| item.loc.clone(), |n| n.loc.clone())
        };
        let version = fields.get("version").cloned().filter(|v| !v.is_empty());
        Some(Release {
            namespace: fields.get("namespace").cloned().unwrap_or_default(),
            chart,
            chart_loc: loc_of("chart"),
            version,
            version_loc: loc_of("version"),
            loc: item
                .get("name")
                .map_or_else(|| item.loc.clone(), |n| n.loc.clone()),
            installed: !matches!(installed.as_str(), "false" | "False" | "FALSE"),
            wait: merged
                .get("wait")
                .and_then(Node::as_bool)
                .or(doc.default_wait)
                .unwrap_or(false),
            values: merged_values,
            values_files,
            needs,
            hooks,
            unevaluated,
            name,
        })
    }

    /// The release item with its templates inherited (`defaultInherit:` first, then its own
    /// `inherit:`): the template's fields win where both set one, lists append.
    fn inherit(&mut self, doc: &Doc, item: &Node) -> Option<Node> {
        let mut names: Vec<(String, Vec<String>, Location)> = doc
            .default_inherit
            .iter()
            .map(|n| (n.clone(), Vec::new(), item.loc.clone()))
            .collect();
        for i in item.get("inherit").and_then(Node::as_seq).unwrap_or(&[]) {
            let Some(t) = i.str_at(&["template"]) else {
                continue;
            };
            let except: Vec<String> = i
                .get("except")
                .and_then(Node::as_seq)
                .map(|s| s.iter().filter_map(Node::scalar_text).collect())
                .unwrap_or_default();
            names.retain(|(n, _, _)| n != t);
            names.push((t.to_string(), except, i.loc.clone()));
        }
        let mut merged = Node::map(item.loc.clone());
        for (name, except, at) in names {
            let Some((t, _)) = doc.templates.get(&name) else {
                self.invalid(
                    format!(
                        "release \"{}\" tried to inherit inexistent release template \"{name}\"",
                        item.str_at(&["name"]).unwrap_or_default()
                    ),
                    at,
                );
                return None;
            };
            let mut t = t.clone();
            if let Some(m) = t.as_map_mut() {
                m.retain(|k, _| !except.contains(k) && k != "inherit");
            }
            fill(&mut merged, &t);
        }
        let mut own = item.clone();
        if let Some(m) = own.as_map_mut() {
            m.shift_remove("inherit");
        }
        overlay(&mut merged, &own);
        Some(merged)
    }
}

/// The release over its inherited templates: its own fields win, lists append to the
/// templates' (what helmfile v1 does, checked against it).
fn overlay(dst: &mut Node, src: &Node) {
    let (Some(d), Some(s)) = (dst.as_map_mut(), src.as_map()) else {
        return;
    };
    for (k, v) in s {
        match d.get_mut(k) {
            None => {
                d.insert(k.clone(), v.clone());
            }
            Some(existing) => match (&mut existing.value, &v.value) {
                (Y::Seq(a), Y::Seq(b)) => a.extend(b.iter().cloned()),
                (Y::Map(_), Y::Map(_)) => overlay(existing, v),
                (_, Y::Null) => {}
                (_, Y::String(x)) if x.is_empty() => {}
                _ => *existing = v.clone(),
            },
        }
    }
}

/// mergo's merge without override: keys `dst` lacks (or has empty) are taken from `src`,
/// lists append.
fn fill(dst: &mut Node, src: &Node) {
    let (Some(d), Some(s)) = (dst.as_map_mut(), src.as_map()) else {
        return;
    };
    for (k, v) in s {
        match d.get_mut(k) {
            None => {
                d.insert(k.clone(), v.clone());
            }
            Some(existing) => match (&mut existing.value, &v.value) {
                (Y::Seq(a), Y::Seq(b)) => a.extend(b.iter().cloned()),
                (Y::Map(_), Y::Map(_)) => fill(existing, v),
                (Y::Null, _) => *existing = v.clone(),
                (Y::String(x), _) if x.is_empty() => *existing = v.clone(),
                _ => {}
            },
        }
    }
}

/// One plain part of a state file, its lines counted from `offset`.
fn parse_part(
    rel: &str,
    part: &str,
    offset: u32,
) -> Result<Option<Node>, Box<fluxgate_diagnostics::Diagnostic>> {
    let padded = format!("{}{part}", "\n".repeat(offset as usize));
    let stream = parse_stream(rel, &padded, Schema::Kube);
    if let Some(d) = stream
        .diagnostics
        .into_iter()
        .find(|d| d.severity == fluxgate_diagnostics::Severity::Error)
    {
        return Err(Box::new(d));
    }
    Ok(stream.docs.into_iter().find(|d| !d.is_null()))
}

/// `set:` entries: `name` with `value` (or `values`, a list), each set where it was written.
fn apply_set(values: &mut Node, s: &Node) {
    let Some(name) = s.str_at(&["name"]) else {
        return;
    };
    let value = match (s.get("value"), s.get("values")) {
        (Some(v), _) | (None, Some(v)) => v.clone(),
        _ => return,
    };
    let keys = split_set_key(name);
    let mut cur = values;
    for (i, k) in keys.iter().enumerate() {
        if cur.as_map().is_none() {
            *cur = Node::map(s.loc.clone());
        }
        let m = cur.as_map_mut().expect("made a map above");
        if i + 1 == keys.len() {
            m.insert(k.clone(), value);
            return;
        }
        cur = m
            .entry(k.clone())
            .or_insert_with(|| Node::map(s.loc.clone()));
    }
}

/// A `--set` key split at unescaped dots.
fn split_set_key(name: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().expect("never empty").push(n);
                }
            }
            '.' => out.push(String::new()),
            _ => out.last_mut().expect("never empty").push(c),
        }
    }
    out
}

fn environment(env: &str, values: &Value) -> Value {
    Value::map(BTreeMap::from([
        ("Name".to_string(), Value::from(env)),
        ("KubeContext".to_string(), Value::from("")),
        ("Values".to_string(), values.clone()),
    ]))
}

/// What a state template sees: `.Environment`, `.Values`, `.StateValues`, `.Namespace`.
fn state_data(env: &str, values: Option<&Node>) -> Value {
    let v = values.map_or_else(Value::empty_map, to_value);
    Value::map(BTreeMap::from([
        ("Environment".to_string(), environment(env, &v)),
        ("Values".to_string(), v.clone()),
        ("StateValues".to_string(), v),
        ("Namespace".to_string(), Value::from("")),
        ("KubeContext".to_string(), Value::from("")),
    ]))
}

/// What a release's fields and values templates see: the state's data and `.Release`.
fn release_data(env: &str, values: &Node, fields: &BTreeMap<&str, String>) -> Value {
    let d = state_data(env, Some(values));
    let f = |k: &str| Value::from(fields.get(k).cloned().unwrap_or_default());
    if let Value::Map(m) = &d {
        m.borrow_mut().insert(
            "Release".to_string(),
            Value::map(BTreeMap::from([
                ("Name".to_string(), f("name")),
                ("Namespace".to_string(), f("namespace")),
                ("Chart".to_string(), f("chart")),
                ("ChartVersion".to_string(), f("version")),
                ("KubeContext".to_string(), Value::from("")),
                ("Labels".to_string(), Value::empty_map()),
            ])),
        );
        m.borrow_mut().insert("Chart".to_string(), Value::from(""));
    }
    d
}
