//! The build: reads a kustomization, accumulates its resources (files, nested kustomizations,
//! components), runs its generators and transformers in kustomize's order, and finishes at the
//! top with hash suffixes, name references and the output order.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_yaml::{Node, Schema, Value, parse_stream};

use crate::config::{self, Config};
use crate::fieldspec::FieldSpec;
use crate::fs::{Fs, normalize};
use crate::generate::{self, Options};
use crate::problem::{Problem, ProblemKind};
use crate::resource::{Behavior, ORDER_FIRST, ORDER_LAST, ResId, Resource, legacy_sort};
use crate::{nameref, patch, patches, plugins, replacements, transform, vars};

/// What [`ResId::same_as`] compares: group, version, kind, name and the namespace with `""`
/// read as `default`. Resources with equal keys are the same resource.
type IdKey = (String, String, String, String, String);

fn id_key(id: ResId) -> IdKey {
    let ns = if id.namespace.is_empty() {
        "default".to_string()
    } else {
        id.namespace
    };
    (id.group, id.version, id.kind, id.name, ns)
}

/// The file names kustomize accepts, in the order it looks for them.
pub const KUSTOMIZATION_FILES: &[&str] =
    &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Fields a kustomization may have; anything else is reported.
const KNOWN_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "resources",
    "bases",
    "components",
    "namespace",
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "images",
    "imageTags",
    "replicas",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "configMapGenerator",
    "secretGenerator",
    "generatorOptions",
    "sortOptions",
    "buildMetadata",
    "openapi",
    "crds",
    "configurations",
    "vars",
    "replacements",
    "helmCharts",
    "helmGlobals",
    "helmChartInflationGenerator",
    "generators",
    "transformers",
    "validators",
];

/// kustomize's "kustomization.yaml is empty": nothing but `apiVersion` and `kind` is set to
/// other than its zero value (null or `""`; an empty list or map is set), `bases` counting
/// only with entries (kustomize appends them to `resources` first). A file with no document,
/// only comments, or `{}` is empty too.
fn is_empty_kustomization(doc: &Node) -> bool {
    let Some(map) = doc.as_map() else {
        return false;
    };
    map.iter().all(|(k, v)| match k.as_str() {
        "apiVersion" | "kind" => true,
        "bases" => v.is_null() || v.as_seq().is_some_and(<[Node]>::is_empty),
        _ => v.is_null() || v.as_str() == Some(""),
    })
}

pub struct Builder<'a> {
    pub fs: &'a dyn Fs,
    pub root: PathBuf,
    /// kubectl kustomize's `LoadRestrictionsRootOnly`: a kustomization reads files only at or
    /// below its own folder (bases, being folders, may be anywhere under `root`).
    pub root_only: bool,
    pub diags: Vec<Problem>,
    /// Directories being built, outermost first: a directory met again is a cycle.
    stack: Vec<PathBuf>,
    /// Raw text of the kustomization files read, to place inline patches on their lines.
    pub texts: HashMap<String, String>,
    /// Every kustomization's `vars:`, resolved once at the end.
    pub vars: Vec<Node>,
    /// `configurations:` in force: those of the kustomization being built and of what it
    /// includes (at the end, all of them).
    pub config: Config,
    /// A remote resource, base or generator file was left out (Flux fetches those): what
    /// only it could satisfy (a patch target) is then unknown, not an error.
    pub skipped_remote: bool,
    /// Kustomization folders built so far (each inclusion counts: a folder two overlays
    /// include is built twice), against [`MAX_BUILDS`].
    builds: usize,
}

/// Upper bound on the kustomization folders one build may build, inclusions counted: 18
/// levels of two overlays of the same base build 2^19 folders and 262,144 objects (6.6 GB).
/// Past it, an error (the build is not checked), never a silent cut.
pub const MAX_BUILDS: usize = 4096;

impl<'a> Builder<'a> {
    pub fn new(fs: &'a dyn Fs, root: &Path) -> Builder<'a> {
        Builder {
            fs,
            root: normalize(root),
            root_only: false,
            diags: Vec::new(),
            stack: Vec::new(),
            texts: HashMap::new(),
            vars: Vec::new(),
            config: Config::default(),
            skipped_remote: false,
            builds: 0,
        }
    }

    /// A path as diagnostics show it: relative to the root.
    pub fn rel(&self, path: &Path) -> String {
        let p = normalize(path);
        match p.strip_prefix(&self.root) {
            Ok(r) if r.as_os_str().is_empty() => ".".to_string(),
            Ok(r) => r.to_string_lossy().into_owned(),
            Err(_) => p.to_string_lossy().into_owned(),
        }
    }

    /// Input kustomize refuses.
    pub fn error(&mut self, message: impl Into<String>, loc: Option<Location>) {
        self.problem(ProblemKind::Invalid, message, loc);
    }

    /// Input the build reads past.
    pub fn warn(&mut self, message: impl Into<String>, loc: Option<Location>) {
        self.problem(ProblemKind::Ignored, message, loc);
    }

    pub fn problem(
        &mut self,
        kind: ProblemKind,
        message: impl Into<String>,
        loc: Option<Location>,
    ) {
        self.diags.push(Problem::new(kind, message, loc));
    }

    /// What the YAML parser found in a file the build reads.
    pub fn yaml(&mut self, diagnostics: Vec<Diagnostic>) {
        self.diags
            .extend(diagnostics.into_iter().map(crate::problem::from_yaml));
    }

    /// A remote input is a warning that says what was not checked: Flux fetches it, fluxgate
    /// works offline.
    fn remote(&mut self, what: &str, target: &str, loc: &Location) {
        self.skipped_remote = true;
        self.problem(
            ProblemKind::RemoteSkipped {
                target: target.to_string(),
            },
            format!(
                "remote {what} {target:?} is not fetched (fluxgate works offline): what it \
                 contains is not checked; vendor it into the repository to check it"
            ),
            Some(loc.clone()),
        );
    }

    fn inside_root(&self, path: &Path) -> bool {
        normalize(path).starts_with(&self.root)
    }

    /// Resolves `target` (as written in a kustomization at `dir`) to a path inside the root,
    /// or reports why it cannot be used.
    pub fn resolve(
        &mut self,
        dir: &Path,
        target: &str,
        loc: &Location,
        what: &str,
    ) -> Option<PathBuf> {
        if is_remote(target) {
            self.remote(what, target, loc);
            return None;
        }
        let path = normalize(&dir.join(target));
        if !self.inside_root(&path) {
            self.problem(
                ProblemKind::OutsideRoot {
                    path: target.to_string(),
                },
                format!("{what} {target:?} is outside the repository root and is not read"),
                Some(loc.clone()),
            );
            return None;
        }
        Some(path)
    }

    /// With [`Builder::root_only`], whether the file `path` that the kustomization at `dir`
    /// names is below `dir`; if not, the error `kubectl kustomize` gives.
    fn file_allowed(
        &mut self,
        dir: &Path,
        path: &Path,
        target: &str,
        loc: &Location,
        what: &str,
    ) -> bool {
        if !self.root_only || normalize(path).starts_with(normalize(dir)) {
            return true;
        }
        let (file, folder) = (self.rel(path), self.rel(dir));
        self.error(
            format!(
                "{what} {target:?}: security; file '{file}' is not in or below '{folder}' \
                 (kustomize's load restrictor; `kubectl kustomize --load-restrictor \
                 LoadRestrictionsNone` would read it)"
            ),
            Some(loc.clone()),
        );
        false
    }

    /// Reads a file the kustomization at `dir` names.
    pub fn read_file(
        &mut self,
        dir: &Path,
        target: &str,
        loc: &Location,
        what: &str,
    ) -> Option<(String, String)> {
        let path = self.resolve(dir, target, loc, what)?;
        if !self.file_allowed(dir, &path, target, loc, what) {
            return None;
        }
        match self.fs.read(&path) {
            Ok(text) => Some((self.rel(&path), text)),
            Err(e) => {
                self.read_error(&e, target, loc, what);
                None
            }
        }
    }

    /// Reads a generator file, which need not be text.
    pub fn read_file_bytes(
        &mut self,
        dir: &Path,
        target: &str,
        loc: &Location,
        what: &str,
    ) -> Option<Vec<u8>> {
        let path = self.resolve(dir, target, loc, what)?;
        if !self.file_allowed(dir, &path, target, loc, what) {
            return None;
        }
        match self.fs.read_bytes(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                self.read_error(&e, target, loc, what);
                None
            }
        }
    }

    /// A generator's file, with its path as diagnostics show it: each value it gives keeps the
    /// file's own lines as its origin.
    fn read_generator_file(
        &mut self,
        dir: &Path,
        target: &str,
        loc: &Location,
    ) -> Option<(Vec<u8>, String)> {
        let bytes = self.read_file_bytes(dir, target, loc, "generator file")?;
        Some((bytes, self.rel(&dir.join(target))))
    }

    fn read_error(&mut self, e: &std::io::Error, target: &str, loc: &Location, what: &str) {
        let msg = if e.kind() == std::io::ErrorKind::NotFound {
            format!("{what} {target:?} not found")
        } else {
            format!("{what} {target:?} cannot be read: {e}")
        };
        let path = target.to_string();
        self.problem(ProblemKind::MissingFile { path }, msg, Some(loc.clone()));
    }

    /// The kustomization file of `dir`, if there is exactly one.
    pub fn find_kustomization(&mut self, dir: &Path, loc: Option<&Location>) -> Option<PathBuf> {
        let found: Vec<PathBuf> = KUSTOMIZATION_FILES
            .iter()
            .map(|f| dir.join(f))
            .filter(|p| self.fs.is_file(p))
            .collect();
        match found.len() {
            0 => {
                self.problem(
                    ProblemKind::MissingFile {
                        path: self.rel(dir),
                    },
                    format!(
                        "no kustomization.yaml, kustomization.yml or Kustomization in {}",
                        self.rel(dir)
                    ),
                    loc.cloned().or_else(|| Some(Location::file(self.rel(dir)))),
                );
                None
            }
            1 => found.into_iter().next(),
            _ => {
                self.error(
                    format!("more than one kustomization file in {}", self.rel(dir)),
                    loc.cloned().or_else(|| Some(Location::file(self.rel(dir)))),
                );
                None
            }
        }
    }

    /// Reads and parses the kustomization file of `dir`.
    pub fn load_kustomization(&mut self, dir: &Path, loc: Option<&Location>) -> Option<Node> {
        let file = self.find_kustomization(dir, loc)?;
        let rel = self.rel(&file);
        let parsed = match crate::fs::parse(self.fs, &file, &rel) {
            Ok(p) => p,
            Err(e) => {
                self.error(
                    format!("cannot read {rel}: {e}"),
                    Some(Location::file(rel.clone())),
                );
                return None;
            }
        };
        let failed = parsed.stream.has_errors();
        let (text, docs, diagnostics) = parsed.into_parts();
        self.yaml(diagnostics);
        self.texts.insert(rel.clone(), text);
        if failed {
            return None;
        }
        // kustomize reads the first document only.
        let doc = docs.into_iter().next().filter(|d| !d.is_null());
        let go_type = match doc.as_ref().map(|d| &d.value) {
            Some(Value::Map(_) | Value::Null) | None => None,
            Some(Value::Seq(_)) => Some("array"),
            Some(Value::String(_)) => Some("string"),
            Some(Value::Bool(_)) => Some("bool"),
            Some(Value::Int(_) | Value::Float(_)) => Some("number"),
        };
        if let (Some(go_type), Some(d)) = (go_type, &doc) {
            self.error(
                format!(
                    "invalid Kustomization: json: cannot unmarshal {go_type} into Go value of \
                     type types.Kustomization (a kustomization must be a mapping)"
                ),
                Some(d.loc.clone()),
            );
            return None;
        }
        match doc {
            Some(d) if !is_empty_kustomization(&d) => Some(d),
            _ => {
                self.error(
                    format!(
                        "kustomization.yaml is empty: {rel} sets no field, which kustomize \
                         refuses to build"
                    ),
                    Some(Location::new(rel, 1, 1)),
                );
                None
            }
        }
    }

    /// Builds the kustomization in `dir` (whose content is `kust`). `incoming` holds the
    /// resources a component applies to; a kustomization starts from none.
    pub fn build_dir(&mut self, dir: &Path, kust: &Node, incoming: Vec<Resource>) -> Vec<Resource> {
        let dir = normalize(dir);
        if self.stack.contains(&dir) {
            let chain: Vec<String> = self.stack.iter().map(|d| self.rel(d)).collect();
            self.error(
                format!(
                    "cyclic kustomization: {} includes itself again ({} -> {})",
                    self.rel(&dir),
                    chain.join(" -> "),
                    self.rel(&dir)
                ),
                Some(kust.loc.clone()),
            );
            return incoming;
        }
        self.builds += 1;
        if self.builds > MAX_BUILDS {
            if self.builds == MAX_BUILDS + 1 {
                self.error(
                    format!(
                        "the build includes more than {MAX_BUILDS} kustomization folders \
                         (overlays of overlays fanning out?): fluxgate stops here, so this \
                         build is not fully checked"
                    ),
                    Some(kust.loc.clone()),
                );
            }
            return incoming;
        }
        self.stack.push(dir.clone());
        let outer = std::mem::take(&mut self.config);
        self.config = config::load(self, &dir, kust);
        let out = self.build_dir_inner(&dir, kust, incoming);
        let mine = std::mem::replace(&mut self.config, outer);
        self.config.extend(mine);
        self.vars.extend(seq(kust.get("vars")).iter().cloned());
        self.stack.pop();
        out
    }

    fn build_dir_inner(
        &mut self,
        dir: &Path,
        kust: &Node,
        incoming: Vec<Resource>,
    ) -> Vec<Resource> {
        self.check_fields(kust);
        self.load_openapi(dir, kust);
        let mut acc = incoming;
        let entries: Vec<Node> = seq(kust.get("resources"))
            .iter()
            .chain(seq(kust.get("bases")))
            .cloned()
            .collect();
        let mut present = acc.iter().map(|r| id_key(r.id())).collect();
        for entry in &entries {
            let loaded = self.load_resource(dir, entry);
            self.add_resources(&mut acc, &mut present, loaded);
        }
        self.run_generators(dir, kust, &mut acc);
        self.run_plugin_generators(dir, kust, &mut acc);
        for entry in seq(kust.get("components")).to_vec() {
            let Some(target) = entry.as_str() else {
                continue;
            };
            let Some(path) = self.resolve(dir, target, &entry.loc, "component") else {
                continue;
            };
            if !self.fs.is_dir(&path) {
                self.error(
                    format!("component {target:?} is not a directory"),
                    Some(entry.loc.clone()),
                );
                continue;
            }
            let Some(ck) = self.load_kustomization(&path, Some(&entry.loc)) else {
                continue;
            };
            // A component kustomize cannot load is left out (the error says why).
            if ck.str_at(&["kind"]) == Some("Component") && !self.api_version_ok(&ck) {
                continue;
            }
            if ck.str_at(&["kind"]) != Some("Component") {
                self.error(
                    format!("{target:?} is listed under components but its kind is not Component"),
                    Some(entry.loc.clone()),
                );
                continue;
            }
            acc = self.build_dir(&path, &ck, acc);
        }
        self.run_transformers(dir, kust, &mut acc);
        acc
    }

    /// kustomize refuses a kustomization whose apiVersion is not its kind's.
    fn api_version_ok(&mut self, kust: &Node) -> bool {
        let Some(api) = kust.get("apiVersion").and_then(Node::as_str) else {
            return true;
        };
        let kind = kust.str_at(&["kind"]).unwrap_or("Kustomization");
        let want = if kind == "Component" {
            "kustomize.config.k8s.io/v1alpha1"
        } else {
            "kustomize.config.k8s.io/v1beta1"
        };
        if api.is_empty() || api == want {
            return true;
        }
        self.error(
            format!("apiVersion for {kind} should be {want}"),
            kust.get("apiVersion").map(|n| n.loc.clone()),
        );
        false
    }

    fn check_fields(&mut self, kust: &Node) {
        let Some(map) = kust.as_map() else { return };
        self.api_version_ok(kust);
        for (key, value) in map {
            let loc = Some(value.loc.clone());
            match key.as_str() {
                "helmCharts" | "helmGlobals" | "helmChartInflationGenerator" => self.problem(
                    ProblemKind::Unsupported,
                    format!("{key}: Helm charts are not inflated (fluxgate runs no helper binaries and fetches nothing)"),
                    loc,
                ),
                "validators" => {
                    for e in seq(Some(value)) {
                        self.problem(
                            ProblemKind::Unsupported,
                            format!(
                                "{key}: plugin {} is not run (fluxgate runs no kustomize plugins)",
                                e.scalar_text().unwrap_or_else(|| "(inline)".into())
                            ),
                            Some(e.loc.clone()),
                        );
                    }
                }
                "crds"
                    if value.as_seq().is_some_and(|s| !s.is_empty()) =>
                {
                    self.problem(ProblemKind::Unsupported, format!("{key} is not supported yet"), loc);
                }
                k if !KNOWN_FIELDS.contains(&k) => self.warn(format!("unknown kustomization field {k:?}"), loc),
                _ => {}
            }
        }
    }

    /// `openapi: {path: ...}`: the first custom schema loaded in a build becomes the schema
    /// strategic merges read (kustomize keeps one global schema); `version:` picks a built-in
    /// schema, and fluxgate has only kustomize's default one.
    fn load_openapi(&mut self, dir: &Path, kust: &Node) {
        let Some(openapi) = kust.get("openapi") else {
            return;
        };
        if let Some(v) = openapi.get("version") {
            self.warn(
                "openapi: only kustomize's default built-in schema is known; the version is ignored",
                Some(v.loc.clone()),
            );
        }
        let Some(path) = openapi.get("path") else {
            return;
        };
        if patch::custom_schema_is_active() {
            return;
        }
        let Some(target) = path.as_str() else {
            self.error("openapi: path must be a string", Some(path.loc.clone()));
            return;
        };
        let Some((rel, text)) = self.read_file(dir, target, &path.loc, "openapi schema") else {
            return;
        };
        let stream = parse_stream(&rel, &text, Schema::Kube);
        let failed = stream.has_errors();
        self.yaml(stream.diagnostics);
        if failed {
            return;
        }
        match stream
            .docs
            .first()
            .and_then(|d| patch::CustomSchema::from_json(&d.to_json()))
        {
            Some(schema) => patch::set_custom_schema(Some(std::sync::Arc::new(schema))),
            None => self.error(
                format!("openapi: {target:?} has no definitions"),
                Some(path.loc.clone()),
            ),
        }
    }

    /// Adds resources, reporting an id that is already there.
    /// `present` holds the [`id_key`]s of `acc` and is kept in step with it.
    fn add_resources(
        &mut self,
        acc: &mut Vec<Resource>,
        present: &mut HashSet<IdKey>,
        loaded: Vec<Resource>,
    ) {
        for r in loaded {
            let id = r.id();
            if !present.insert(id_key(id.clone())) {
                self.error(
                    format!(
                        "{} is defined more than once (kustomize refuses duplicate ids)",
                        id.display()
                    ),
                    Some(r.node.loc.clone()),
                );
                continue;
            }
            acc.push(r);
        }
    }

    /// One `resources:` entry: a file (every document) or a directory with a kustomization.
    fn load_resource(&mut self, dir: &Path, entry: &Node) -> Vec<Resource> {
        let Some(target) = entry.as_str() else {
            self.error("a resource entry must be a string", Some(entry.loc.clone()));
            return Vec::new();
        };
        let Some(path) = self.resolve(dir, target, &entry.loc, "resource") else {
            return Vec::new();
        };
        if self.fs.is_dir(&path) {
            let Some(k) = self.load_kustomization(&path, Some(&entry.loc)) else {
                return Vec::new();
            };
            if k.str_at(&["kind"]) == Some("Component") {
                self.error(
                    format!("{target:?} is a Component: list it under components, not resources"),
                    Some(entry.loc.clone()),
                );
                return Vec::new();
            }
            return self.build_dir(&path, &k, Vec::new());
        }
        if !self.fs.is_file(&path) && looks_like_host(target) {
            self.remote("resource", target, &entry.loc);
            return Vec::new();
        }
        if !self.file_allowed(dir, &path, target, &entry.loc, "resource") {
            return Vec::new();
        }
        let rel = self.rel(&path);
        let parsed = match crate::fs::parse(self.fs, &path, &rel) {
            Ok(p) => p,
            Err(e) => {
                self.read_error(&e, target, &entry.loc, "resource");
                return Vec::new();
            }
        };
        let (_, docs, diagnostics) = parsed.into_parts();
        self.yaml(diagnostics);
        let mut out = Vec::new();
        for doc in docs {
            self.push_object(doc, &mut out);
        }
        out
    }

    fn push_object(&mut self, doc: Node, out: &mut Vec<Resource>) {
        match &doc.value {
            Value::Null => {}
            Value::Map(m) if m.is_empty() => {}
            Value::Map(_) => {
                let kind = doc.str_at(&["kind"]).unwrap_or("");
                if kind.ends_with("List") && doc.get("items").and_then(Node::as_seq).is_some() {
                    if let Some(items) = doc.get("items").and_then(Node::as_seq) {
                        for item in items.iter().cloned() {
                            self.push_object(item, out);
                        }
                    }
                    return;
                }
                if kind.is_empty() {
                    self.error("object without kind", Some(doc.loc.clone()));
                    return;
                }
                let mut doc = doc;
                stringify_metadata_maps(&mut doc);
                out.push(Resource::new(doc));
            }
            _ => self.error(
                "a resource document must be a mapping",
                Some(doc.loc.clone()),
            ),
        }
    }

    fn run_generators(&mut self, dir: &Path, kust: &Node, acc: &mut Vec<Resource>) {
        let global = Options::from_node(kust.get("generatorOptions"));
        for (field, secret) in [("configMapGenerator", false), ("secretGenerator", true)] {
            for entry in seq(kust.get(field)).to_vec() {
                let mut diags = Vec::new();
                let generated = {
                    let mut read = |p: &str, loc: &Location| self.read_generator_file(dir, p, loc);
                    generate::generate(&entry, secret, &global, &mut read, &mut diags)
                };
                self.diags.extend(diags);
                let Some(g) = generated else { continue };
                let id = g.resource.id();
                let existing = acc.iter().position(|r| r.matches_any_id(&id));
                match (g.behavior, existing) {
                    (Behavior::Create, None) => acc.push(g.resource),
                    (Behavior::Create, Some(_)) => self.error(
                        format!(
                            "{} already exists: use behavior merge or replace",
                            id.display()
                        ),
                        Some(entry.loc.clone()),
                    ),
                    (b, Some(i)) => generate::merge_into(&mut acc[i], g.resource, b),
                    (_, None) => self.error(
                        format!("{} not found to merge or replace", id.display()),
                        Some(entry.loc.clone()),
                    ),
                }
            }
        }
    }

    /// The configs listed under `generators:` or `transformers:`: built-in plugin configs
    /// (`apiVersion: builtin`) are returned; anything else (exec or container plugins, KRM
    /// functions, directories of configs) is a finding and is not run.
    fn plugin_configs(
        &mut self,
        dir: &Path,
        kust: &Node,
        field: &str,
        supported: &[&str],
    ) -> Vec<Node> {
        let mut out = Vec::new();
        // kustomize reads the inline configs first, then the files and directories, each
        // group in the order listed.
        let mut entries = seq(kust.get(field)).to_vec();
        entries.sort_by_key(|e| !e.as_str().is_some_and(|t| t.contains('\n')));
        for e in entries {
            let Some(text) = e.as_str() else { continue };
            let docs = if text.contains('\n') {
                parse_stream(&e.loc.file, text, Schema::Kube).docs
            } else {
                let Some(path) = self.resolve(dir, text, &e.loc, "plugin config") else {
                    continue;
                };
                // A kustomization directory: its build's objects are the configs.
                if self.fs.is_dir(&path)
                    && KUSTOMIZATION_FILES
                        .iter()
                        .any(|f| self.fs.is_file(&path.join(f)))
                {
                    let Some(k) = self.load_kustomization(&path, Some(&e.loc)) else {
                        continue;
                    };
                    let built = self.build_dir(&path, &k, Vec::new());
                    for r in built {
                        self.check_plugin_kind(field, &r.node, text, &e.loc, supported, &mut out);
                    }
                    continue;
                }
                if !self.fs.is_file(&path) {
                    self.error(
                        format!("{field}: plugin {text:?} is not run (fluxgate runs no kustomize plugins)"),
                        Some(e.loc.clone()),
                    );
                    continue;
                }
                let Some((rel, body)) = self.read_file(dir, text, &e.loc, "plugin config") else {
                    continue;
                };
                let stream = parse_stream(&rel, &body, Schema::Kube);
                self.yaml(stream.diagnostics);
                stream.docs
            };
            for d in docs.into_iter().filter(|d| !d.is_null()) {
                self.check_plugin_kind(field, &d, text, &e.loc, supported, &mut out);
            }
        }
        out
    }

    /// Keeps a config of a built-in plugin fluxgate runs; reports any other.
    fn check_plugin_kind(
        &mut self,
        field: &str,
        d: &Node,
        text: &str,
        loc: &Location,
        supported: &[&str],
        out: &mut Vec<Node>,
    ) {
        let kind = d.str_at(&["kind"]).unwrap_or("");
        if d.str_at(&["apiVersion"]) == Some("builtin") && supported.contains(&kind) {
            out.push(d.clone());
        } else {
            self.error(
                format!("{field}: plugin {kind} from {text:?} is not run (fluxgate runs no kustomize plugins)"),
                Some(loc.clone()),
            );
        }
    }

    fn run_plugin_generators(&mut self, dir: &Path, kust: &Node, acc: &mut Vec<Resource>) {
        let global = Options::from_node(kust.get("generatorOptions"));
        for cfg in self.plugin_configs(
            dir,
            kust,
            "generators",
            &["ConfigMapGenerator", "SecretGenerator"],
        ) {
            // A built-in generator config is a generator entry with its name in metadata.
            let mut entry = cfg.clone();
            if let Some(m) = entry.as_map_mut() {
                for k in ["name", "namespace"] {
                    if let Some(v) = cfg.path(&["metadata", k]) {
                        m.insert(k.to_string(), v.clone());
                    }
                }
            }
            let secret = cfg.str_at(&["kind"]) == Some("SecretGenerator");
            let mut diags = Vec::new();
            let generated = {
                let mut read = |p: &str, loc: &Location| self.read_generator_file(dir, p, loc);
                generate::generate(&entry, secret, &global, &mut read, &mut diags)
            };
            self.diags.extend(diags);
            if let Some(g) = generated {
                let loaded = vec![g.resource];
                let mut present = acc.iter().map(|r| id_key(r.id())).collect();
                self.add_resources(acc, &mut present, loaded);
            }
        }
    }

    fn run_plugin_transformers(&mut self, dir: &Path, kust: &Node, acc: &mut Vec<Resource>) {
        for cfg in self.plugin_configs(dir, kust, "transformers", plugins::TRANSFORMERS) {
            plugins::transform(self, dir, &cfg, acc);
        }
    }

    fn run_transformers(&mut self, dir: &Path, kust: &Node, acc: &mut Vec<Resource>) {
        patches::legacy_strategic_merge(self, dir, kust, acc);
        patches::patches(self, dir, kust, acc);
        if let Some(ns) = kust
            .get("namespace")
            .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
        {
            let mut specs = transform::namespace_specs();
            specs.extend(self.config.namespace.iter().cloned());
            let run = transform::NamespaceRun {
                namespace: ns.as_str().unwrap_or_default(),
                specs: &specs,
                unset_only: false,
                subjects: transform::Subjects::DefaultOnly,
            };
            transform::namespace(acc, &run, &ns.loc);
        }
        let prefix = kust.get("namePrefix");
        let suffix = kust.get("nameSuffix");
        let loc = prefix
            .or(suffix)
            .map_or_else(|| kust.loc.clone(), |n| n.loc.clone());
        transform::prefix_suffix(
            acc,
            prefix.and_then(Node::as_str).unwrap_or(""),
            suffix.and_then(Node::as_str).unwrap_or(""),
            &loc,
        );
        self.labels(kust, acc);
        if let Some(ann) = kust.get("commonAnnotations") {
            let entries = generate::string_entries(Some(ann));
            let mut specs = transform::annotation_specs();
            specs.extend(self.config.common_annotations.iter().cloned());
            transform::set_map_entries(acc, &entries, &specs, &ann.loc);
        }
        patches::legacy_json6902(self, dir, kust, acc);
        for r in seq(kust.get("replicas")).to_vec() {
            if let (Some(name), Some(count)) = (r.str_at(&["name"]), r.get("count")) {
                transform::replicas(acc, name, count);
            }
        }
        let rules: Vec<transform::ImageRule> = seq(kust.get("images"))
            .iter()
            .chain(seq(kust.get("imageTags")))
            .filter_map(|i| {
                Some(transform::ImageRule {
                    name: i.str_at(&["name"])?.to_string(),
                    new_name: i.get("newName").cloned(),
                    new_tag: i.get("newTag").cloned(),
                    digest: i.get("digest").cloned(),
                    loc: i.loc.clone(),
                })
            })
            .collect();
        transform::images(acc, &rules);
        transform::images_at(acc, &rules, &self.config.images);
        replacements::run(self, dir, kust, acc);
        self.run_plugin_transformers(dir, kust, acc);
    }

    fn labels(&self, kust: &Node, acc: &mut [Resource]) {
        let common = || {
            let mut specs = transform::common_label_specs();
            specs.extend(self.config.common_labels.iter().cloned());
            specs
        };
        if let Some(cl) = kust.get("commonLabels") {
            let entries = generate::string_entries(Some(cl));
            transform::set_map_entries(acc, &entries, &common(), &cl.loc);
        }
        for l in seq(kust.get("labels")) {
            let entries = generate::string_entries(l.get("pairs"));
            let selectors = l
                .get("includeSelectors")
                .and_then(Node::as_bool)
                .unwrap_or(false);
            let templates = l
                .get("includeTemplates")
                .and_then(Node::as_bool)
                .unwrap_or(false);
            let mut specs = if selectors {
                common()
            } else if templates {
                transform::template_label_specs()
            } else {
                vec![FieldSpec::new("", "", "metadata/labels", true)]
            };
            specs.extend(seq(l.get("fields")).iter().filter_map(FieldSpec::from_node));
            transform::set_map_entries(acc, &entries, &specs, &l.loc);
        }
    }

    /// The last steps, done once for the whole build: hash suffixes, name references, order.
    pub fn finish(
        kust: &Node,
        mut resources: Vec<Resource>,
        vars: &[Node],
        config: &Config,
        diags: &mut Vec<Problem>,
    ) -> (Vec<Node>, Vec<Vec<crate::resource::Override>>) {
        for r in &mut resources {
            if r.needs_hash {
                let hash = generate::content_hash(&r.node);
                let id = r.id();
                r.remember_id();
                let loc = r
                    .node
                    .path(&["metadata", "name"])
                    .map_or_else(|| r.node.loc.clone(), |n| n.loc.clone());
                r.set_meta("name", &format!("{}-{hash}", id.name), &loc);
            }
        }
        nameref::fix_references(&mut resources, &config.name_reference);
        vars::resolve(vars, &config.var_reference, &mut resources, diags);
        let order = kust.str_at(&["sortOptions", "order"]).unwrap_or("legacy");
        if order != "fifo" {
            let list = |key: &str, default: &[&str]| -> Vec<String> {
                match kust
                    .path(&["sortOptions", "legacySortOptions", key])
                    .and_then(Node::as_seq)
                {
                    Some(s) => s.iter().filter_map(Node::scalar_text).collect(),
                    None => default.iter().map(|s| (*s).to_string()).collect(),
                }
            };
            legacy_sort(
                &mut resources,
                &list("orderFirst", ORDER_FIRST),
                &list("orderLast", ORDER_LAST),
            );
        }
        resources.into_iter().map(|r| (r.node, r.overrides)).unzip()
    }
}

/// kustomize reads labels and annotations as strings: `happy: true` comes out as `"true"`.
pub fn stringify_metadata_maps(doc: &mut Node) {
    let Some(meta) = doc.get_mut("metadata").and_then(Node::as_map_mut) else {
        return;
    };
    for key in ["labels", "annotations"] {
        if let Some(m) = meta.get_mut(key).and_then(Node::as_map_mut) {
            for v in m.values_mut() {
                if !matches!(v.value, Value::String(_) | Value::Map(_) | Value::Seq(_))
                    && let Some(t) = v.scalar_text()
                {
                    v.value = Value::String(t);
                }
            }
        }
    }
}

pub fn seq(node: Option<&Node>) -> &[Node] {
    node.and_then(Node::as_seq).unwrap_or(&[])
}

/// A URL or a git address: never fetched.
#[must_use]
pub fn is_remote(target: &str) -> bool {
    target.contains("://")
        || target.starts_with("git@")
        || target.starts_with("github.com/")
        || target.starts_with("gitlab.com/")
        || target.starts_with("bitbucket.org/")
        || target.contains("?ref=")
        || target.contains(".git//")
}

fn has_extension(name: &str, ext: &str) -> bool {
    Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// A path whose first segment looks like a host name (`example.com/repo`): kustomize would
/// try it as a remote when no such local file exists.
fn looks_like_host(target: &str) -> bool {
    let first = target.split('/').next().unwrap_or("");
    target.contains('/')
        && first.contains('.')
        && first != "."
        && first != ".."
        && !has_extension(first, "yaml")
        && !has_extension(first, "yml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emptiness_is_kustomize_s_zero_value_check() {
        // Each checked with kubectl kustomize: empty, or built (to nothing or something).
        let empty = |text: &str| {
            let doc = parse_stream("k.yaml", text, Schema::Kube).docs.remove(0);
            is_empty_kustomization(&doc)
        };
        assert!(empty("{}\n"));
        assert!(empty("kind: Kustomization\n"));
        assert!(empty("namespace: \"\"\nnamePrefix:\nresources: ~\n"));
        assert!(empty("bases: []\n"));
        assert!(!empty("resources: []\n"));
        assert!(!empty("commonLabels: {}\n"));
        assert!(!empty("sortOptions:\n  order: fifo\n"));
        assert!(!empty("bases: [../x]\n"));
    }

    #[test]
    fn remote_addresses_are_recognised() {
        assert!(is_remote("https://github.com/a/b//x?ref=v1"));
        assert!(is_remote("github.com/kubernetes-sigs/kustomize/examples"));
        assert!(!is_remote("../base"));
        assert!(looks_like_host("example.com/foo/bar"));
        assert!(!looks_like_host("./base"));
    }

    #[test]
    fn duplicate_ids_are_refused_with_default_namespace_equal_to_none() {
        let mut fs = crate::MemFs::new();
        fs.insert(
            "/r/kustomization.yaml",
            "resources: [a.yaml, b.yaml, c.yaml]\n",
        );
        fs.insert(
            "/r/a.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        );
        fs.insert(
            "/r/b.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n",
        );
        fs.insert(
            "/r/c.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: other}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n",
        );
        let out = crate::build(&fs, Path::new("/r"), Path::new("/r"));
        let dups: Vec<_> = out
            .problems
            .iter()
            .filter(|d| d.message.contains("defined more than once"))
            .map(|d| d.location.as_ref().map(|l| (l.file.to_string(), l.line)))
            .collect();
        assert_eq!(
            dups,
            [
                Some(("b.yaml".to_string(), 1)),
                Some(("c.yaml".to_string(), 9))
            ]
        );
        assert_eq!(out.objects.len(), 3);
    }

    /// Issue 26 §4: two overlays of the next level, level upon level, double the folders
    /// built each time; past [`MAX_BUILDS`] the build stops with an error, quickly.
    #[test]
    fn fan_out_is_bounded() {
        let mut fs = crate::MemFs::new();
        let levels = 16;
        for l in 0..levels {
            fs.insert(format!("/r/l{l}/kustomization.yaml"), "resources: [a, b]\n");
            for side in ["a", "b"] {
                let next = if l + 1 == levels {
                    "../leaf".to_string()
                } else {
                    format!("../../l{}", l + 1)
                };
                fs.insert(
                    format!("/r/l{l}/{side}/kustomization.yaml"),
                    format!("namePrefix: {side}-\nresources: [{next}]\n"),
                );
            }
        }
        fs.insert(
            format!("/r/l{}/leaf/kustomization.yaml", levels - 1),
            "resources: [cm.yaml]\n",
        );
        fs.insert(
            format!("/r/l{}/leaf/cm.yaml", levels - 1),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leaf}\n",
        );
        let start = std::time::Instant::now();
        let out = crate::build(&fs, Path::new("/r"), Path::new("/r/l0"));
        assert!(
            out.problems
                .iter()
                .any(|p| p.message.contains("not fully checked")),
            "{:?}",
            out.problems
        );
        assert!(start.elapsed().as_secs() < 30, "{:?}", start.elapsed());
    }

    #[test]
    fn root_only_refuses_files_above_the_kustomization_but_not_bases() {
        let mut fs = crate::MemFs::new();
        let cm =
            |name: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n");
        fs.insert(
            "/r/app/kustomization.yaml",
            "resources: [../outside.yaml, ../base, inside.yaml]\nconfigMapGenerator:\n  - name: g\n    files: [../outside.txt]\n",
        );
        fs.insert("/r/app/inside.yaml", cm("inside"));
        fs.insert("/r/outside.yaml", cm("outside"));
        fs.insert("/r/outside.txt", "x");
        fs.insert("/r/base/kustomization.yaml", "resources: [base.yaml]\n");
        fs.insert("/r/base/base.yaml", cm("base"));
        let names = |b: &crate::Build| -> Vec<String> {
            b.objects
                .iter()
                .filter_map(|o| o.str_at(&["metadata", "name"]).map(str::to_string))
                .collect()
        };
        let (root, dir) = (Path::new("/r"), Path::new("/r/app"));
        let open = crate::build(&fs, root, dir);
        assert!(
            names(&open).contains(&"outside".to_string()),
            "{:?}",
            open.problems
        );
        let strict = crate::build_restricted(&fs, root, dir, crate::LoadRestrictor::RootOnly);
        let got = names(&strict);
        assert!(!got.contains(&"outside".to_string()), "{got:?}");
        assert!(got.contains(&"base".to_string()) && got.contains(&"inside".to_string()));
        let refused: Vec<_> = strict
            .problems
            .iter()
            .filter(|d| d.message.contains("is not in or below 'app'"))
            .map(|d| d.location.as_ref().map(|l| l.line))
            .collect();
        assert_eq!(refused, [Some(1), Some(4)], "{:?}", strict.problems);
    }
}
