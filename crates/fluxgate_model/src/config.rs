//! `fluxgate.yaml` (SPEC §2). Every key is optional except `environments.<name>.flux`;
//! unknown keys are findings (rule `config`), so typos surface instead of being ignored.

use fluxgate_diagnostics::Annotate;
use std::path::Path;
use std::sync::Arc;

use fluxgate_diagnostics::{Diagnostic, Location, Severity};
use fluxgate_kustomize::Fs;
use fluxgate_yaml::{Node, Schema, Value, parse_one};
use indexmap::IndexMap;

/// The whole configuration, from `fluxgate.yaml` or from discovery.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub environments: Vec<EnvConfig>,
    /// Flux source name -> local directory.
    pub sources: IndexMap<String, String>,
    pub charts: Option<String>,
    pub requirements: Option<String>,
    /// Every requirement id fluxgate.yaml names (rules, parity groups, contracts) and where:
    /// each must be in the `requirements:` registry.
    pub requirement_refs: Vec<(String, Location)>,
    pub rules: IndexMap<String, RuleConfig>,
    pub parity: Vec<ParityGroup>,
    pub contracts: Vec<Contract>,
    pub policies: Vec<String>,
    /// `schemas:` files or folders of CRD manifests and JSON Schemas (rule `schema`).
    pub schemas: Vec<String>,
    /// Controllers that create Secrets or ConfigMaps in the cluster, beside the built-in ones
    /// (ExternalSecret, ObjectBucketClaim, Certificate, ...): what they create is not missing.
    pub generators: Vec<Generator>,
    /// `flux_version:` the Flux the clusters run, when pinned; `None` means the newest that
    /// fluxgate knows (Flux 2.9, kustomize-controller v1.9).
    pub flux_version: Option<FluxVersion>,
    /// `kube_version:` the Kubernetes version charts see as `.Capabilities.KubeVersion`
    /// (`v1.32.0`); `None` means Helm's default (v1.37.0 for helm v4.3.2).
    pub kube_version: Option<String>,
    /// `api_versions:` what `.Capabilities.APIVersions` holds besides the built-in APIs and
    /// the environment's CRDs (`monitoring.coreos.com/v1`, `apps/v1/Deployment`).
    pub api_versions: Vec<String>,
    /// An Argo CD `Application` (or `ApplicationSet`) of the repository, found at load time,
    /// when no environment has a Flux root: the repository is managed by Argo CD, which
    /// fluxgate does not model, and a check must say so rather than pass.
    pub argo_cd: Option<Location>,
    /// The objects the repository's bootstrap templates create outside Flux, found at load
    /// time (`bootstrap/templates/resources.yaml.j2` applied by a task runner): present in
    /// the cluster before Flux runs.
    pub seeded: Vec<crate::discover::Seeded>,
    /// The folder of the Git repository that the checked folder is, when discovery found the
    /// roots' paths written from a larger repository's top (a monorepo's subfolder checked on
    /// its own): Flux paths of this repository's sources are read with it stripped.
    pub repo_prefix: Option<String>,
}

/// `1.32`, `v1.32.0`: what Helm's `--kube-version` takes.
fn is_kube_version(text: &str) -> bool {
    let parts: Vec<&str> = text.trim_start_matches('v').split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A Flux release, `2.8` (from `flux_version: "2.8"`, `"v2.8.3"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FluxVersion {
    pub major: u32,
    pub minor: u32,
}

impl FluxVersion {
    /// Parses `2.8`, `v2.8` or `2.8.3` (the patch is not needed).
    #[must_use]
    pub fn parse(text: &str) -> Option<FluxVersion> {
        let mut parts = text.trim().trim_start_matches('v').split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next().map_or(Some(0), |m| m.parse().ok())?;
        if parts.next().is_some_and(|p| p.parse::<u32>().is_err()) {
            return None;
        }
        Some(FluxVersion { major, minor })
    }

    /// Strict post-build substitution (an unset variable fails the Kustomization) is the
    /// default from Flux 2.9 (kustomize-controller v1.9.0) on; before, an unset variable
    /// became the empty string.
    #[must_use]
    pub fn strict_substitution(self) -> bool {
        self >= FluxVersion { major: 2, minor: 9 }
    }
}

/// `generators:` entry: objects of `kind` (apiVersion starting with `group`) create a
/// `creates` (`Secret` or `ConfigMap`) named by the first of `name` (dotted field paths) that
/// is set, else by the object's own name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generator {
    pub kind: String,
    pub group: String,
    pub creates: String,
    pub name: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct EnvConfig {
    pub name: String,
    /// The directory Flux reconciles first, relative to the repository root (`""` is the
    /// root itself). `None` only for a discovered bootstrap-only environment: a repository
    /// with an Ansible inventory and no Flux root.
    pub flux: Option<String>,
    pub vip: Option<String>,
    /// The line of `vip:` (rules locate the VIP there).
    pub vip_loc: Option<Location>,
    pub nodes: Option<u32>,
    /// `talos:` the cluster's Talos layer: a talhelper talconfig.yaml, or a folder of
    /// machine configs (or one holding talconfig.yaml), repository-relative.
    pub talos: Option<String>,
    pub ansible: Option<AnsibleConfig>,
    /// Where the environment was declared (or the file that made discovery find it).
    pub loc: Location,
    /// Why this environment exists: "fluxgate.yaml" or what discovery saw.
    pub reason: String,
    /// The Flux this environment runs, as the repository says (what installs it: see
    /// `discover`); `None` when nothing says, or for a range meaning the newest (`2.x`).
    /// `flux_version:` of fluxgate.yaml wins over it.
    pub flux_version: Option<FluxVersion>,
    /// The helmfiles that bootstrap this environment (`helmfile:` of fluxgate.yaml, or
    /// found by discovery: see `discover`).
    pub helmfile: Vec<HelmfileConfig>,
}

/// One helmfile of an environment: a state file or a folder of them (`helmfile.d`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelmfileConfig {
    /// Relative to the repository root.
    pub path: String,
    /// helmfile's `--environment` (`default` when none).
    pub environment: Option<String>,
    /// What the templates' `env` and `requiredEnv` read: this set only, never fluxgate's
    /// own environment.
    pub env: std::collections::BTreeMap<String, String>,
    pub loc: Location,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnsibleConfig {
    pub inventory: String,
    pub group: Option<String>,
    pub playbook: Option<String>,
    pub config: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct RuleConfig {
    pub enabled: Option<bool>,
    pub severity: Option<Severity>,
    pub requirements: Vec<String>,
    /// Rule-specific settings (for example the role names of `bootstrap-order`).
    pub settings: fluxgate_yaml::Map,
}

#[derive(Clone, Debug)]
pub struct ParityGroup {
    pub name: String,
    pub requirements: Vec<String>,
    pub sources: Vec<ParitySource>,
    pub keys: ParityKeys,
    pub loc: Location,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParitySource {
    HelmRelease {
        release: String,
        loc: Location,
    },
    Template {
        path: String,
        host: Option<String>,
        loc: Location,
    },
    File {
        path: String,
        loc: Location,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParityKeys {
    Tagged,
    Paths(Vec<String>),
}

#[derive(Clone, Debug)]
pub struct Contract {
    pub id: String,
    pub requirements: Vec<String>,
    pub description: Option<String>,
    pub environments: Option<Vec<String>>,
    pub assert: String,
    pub loc: Location,
}

impl Contract {
    /// The literal paths the assertion passes to `template(...)`: the templates the load
    /// renders for it.
    #[must_use]
    pub fn template_paths(&self) -> Vec<String> {
        static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r#"template\(\s*["']([^"']+)["']\s*\)"#).expect("static regex")
        });
        RE.captures_iter(&self.assert)
            .map(|c| c[1].to_string())
            .collect()
    }
}

/// Parses `fluxgate.yaml`. Problems are findings; whatever is valid is kept.
#[must_use]
pub fn parse_config(file: &str, text: &str) -> (Config, Vec<Diagnostic>) {
    let (cfg, diags, _) = read_config(file, text);
    (cfg, diags)
}

fn read_config(file: &str, text: &str) -> (Config, Vec<Diagnostic>, Vec<ConfigPath>) {
    let (root, mut diags) = parse_one(file, text, Schema::Kube);
    let mut p = Reader {
        diags: Vec::new(),
        file: Arc::from(file),
        paths: Vec::new(),
        requirement_refs: Vec::new(),
    };
    let mut cfg = Config::default();
    if let Some(root) = root {
        p.read(&root, &mut cfg);
    }
    cfg.requirement_refs = std::mem::take(&mut p.requirement_refs);
    diags.append(&mut p.diags);
    (cfg, diags, p.paths)
}

/// [`parse_config`] for the repository at `root`: every configured path must exist, be of
/// its kind and stay inside the repository; an environment whose `flux:` folder is missing,
/// outside or empty is left out (with its error), so that it is never checked as empty.
/// Paths are looked up through `fs`, the repository's confined filesystem.
#[must_use]
pub fn parse_config_in(
    fs: &dyn Fs,
    root: &Path,
    file: &str,
    text: &str,
) -> (Config, Vec<Diagnostic>) {
    let (mut cfg, mut diags, paths) = read_config(file, text);
    let root = fluxgate_kustomize::normalize(root);
    let mut bad_flux: Vec<String> = Vec::new();
    for p in &paths {
        let Some(problem) = path_problem(fs, &root, p) else {
            continue;
        };
        if p.what == "flux" {
            bad_flux.push(
                p.path
                    .trim_start_matches("./")
                    .trim_end_matches('/')
                    .to_string(),
            );
        }
        diags.push(
            Diagnostic::new(
                "config",
                Severity::Error,
                format!("{} `{}` {problem}", p.what, p.path),
            )
            .at(p.loc.clone()),
        );
    }
    cfg.environments
        .retain(|e| e.flux.as_ref().is_none_or(|f| !bad_flux.contains(f)));
    (cfg, diags)
}

/// Why a configured path cannot be used, or `None`.
fn path_problem(fs: &dyn Fs, root: &Path, p: &ConfigPath) -> Option<String> {
    let rel = p.path.trim_start_matches("./");
    if Path::new(rel).is_absolute() {
        return Some("must be relative to the repository root".to_string());
    }
    let full = fluxgate_kustomize::normalize(&root.join(rel));
    if !full.starts_with(root) || !fs.confines(&full) {
        return Some("is outside the repository".to_string());
    }
    let (dir, file) = (fs.is_dir(&full), fs.is_file(&full));
    if !dir && !file {
        return Some("does not exist".to_string());
    }
    match p.kind {
        PathKind::Dir if !dir => return Some("is not a directory".to_string()),
        PathKind::File if !file => return Some("is not a file".to_string()),
        _ => {}
    }
    if p.what == "flux" && !has_yaml(fs, &full) {
        return Some(
            "holds no YAML file: Flux would reconcile nothing there (is the path right?)"
                .to_string(),
        );
    }
    None
}

/// Whether a folder holds a YAML file at any depth (what Flux can build), walked as discovery
/// walks the repository.
fn has_yaml(fs: &dyn Fs, dir: &Path) -> bool {
    !crate::walk::files_where(fs, dir, |name| {
        [".yaml", ".yml", ".json"].iter().any(|x| name.ends_with(x)) || name == "Kustomization"
    })
    .is_empty()
}

/// Whether a `vip:` is an IP address, a DNS name, or an Ansible expression.
pub(crate) fn is_valid_vip(v: &str) -> bool {
    if v.contains("{{") || v.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let labels: Vec<&str> = v.trim_end_matches('.').split('.').collect();
    !v.is_empty()
        && v.len() <= 253
        && !labels.iter().all(|l| l.chars().all(|c| c.is_ascii_digit()))
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

struct Reader {
    diags: Vec<Diagnostic>,
    file: Arc<str>,
    paths: Vec<ConfigPath>,
    requirement_refs: Vec<(String, Location)>,
}

/// What a configured path must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PathKind {
    Dir,
    File,
    /// A file or a directory (an inventory, a policy folder).
    Any,
}

/// A path read from the configuration, with where it was written.
#[derive(Clone, Debug)]
struct ConfigPath {
    path: String,
    loc: Location,
    what: &'static str,
    kind: PathKind,
}

impl Reader {
    fn error(&mut self, loc: &Location, message: impl Into<String>) {
        self.diags
            .push(Diagnostic::new("config", Severity::Error, message).at(loc.clone()));
    }

    /// The entries of a mapping, reporting keys outside `known`.
    fn entries<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        known: &[&str],
    ) -> Vec<(&'n str, &'n Node)> {
        let Some(map) = node.as_map() else {
            if !node.is_null() {
                self.error(&node.loc, format!("{what} must be a mapping"));
            }
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, v) in map {
            if known.is_empty() || known.contains(&k.as_str()) {
                out.push((k.as_str(), v));
            } else {
                let hint = closest(k, known)
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                self.error(
                    &v.loc,
                    format!(
                        "unknown key `{k}` in {what}{hint}; known keys: {}",
                        known.join(", ")
                    ),
                );
            }
        }
        out
    }

    fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        if let Value::String(s) = &node.value {
            Some(s.clone())
        } else {
            self.error(&node.loc, format!("{what} must be a string"));
            None
        }
    }

    /// A path of the repository: a string, recorded to be checked against the tree
    /// ([`parse_config_in`]).
    fn path(&mut self, node: &Node, what: &'static str, kind: PathKind) -> Option<String> {
        let p = self.string(node, what)?;
        self.paths.push(ConfigPath {
            path: p.clone(),
            loc: node.loc.clone(),
            what,
            kind,
        });
        Some(p)
    }

    /// A list of mappings (`parity:`, `contracts:`); anything else is a finding.
    fn list<'n>(&mut self, node: &'n Node, what: &str) -> &'n [Node] {
        match &node.value {
            Value::Seq(items) => items,
            Value::Null => &[],
            _ => {
                self.error(&node.loc, format!("{what} must be a list"));
                &[]
            }
        }
    }

    /// A `requirements:` list of a rule, parity group or contract; each id is remembered
    /// with its location.
    fn requirement_ids(&mut self, node: &Node) -> Vec<String> {
        let items: Vec<&Node> = match &node.value {
            Value::Seq(items) => items.iter().collect(),
            Value::Null => Vec::new(),
            _ => vec![node],
        };
        let mut out = Vec::new();
        for item in items {
            if let Some(id) = self.string(item, "a requirement id") {
                self.requirement_refs.push((id.clone(), item.loc.clone()));
                out.push(id);
            }
        }
        out
    }

    fn strings(&mut self, node: &Node, what: &str) -> Vec<String> {
        match &node.value {
            Value::Seq(items) => items.iter().filter_map(|i| self.string(i, what)).collect(),
            Value::Null => Vec::new(),
            _ => self.string(node, what).into_iter().collect(),
        }
    }

    fn read(&mut self, root: &Node, cfg: &mut Config) {
        let top = [
            "environments",
            "sources",
            "charts",
            "requirements",
            "rules",
            "parity",
            "contracts",
            "policies",
            "schemas",
            "generators",
            "flux_version",
            "kube_version",
            "api_versions",
        ];
        for (key, v) in self.entries(root, "fluxgate.yaml", &top) {
            match key {
                "environments" => {
                    for (name, env) in self.entries(v, "environments", &[]) {
                        if let Some(e) = self.environment(name, env) {
                            cfg.environments.push(e);
                        }
                    }
                }
                "sources" => {
                    for (name, dir) in self.entries(v, "sources", &[]) {
                        if let Some(d) = self.path(dir, "source directory", PathKind::Dir) {
                            cfg.sources.insert(name.to_string(), d);
                        }
                    }
                }
                "charts" => cfg.charts = self.path(v, "charts", PathKind::Dir),
                "flux_version" => match v.as_str().and_then(FluxVersion::parse) {
                    Some(version) => cfg.flux_version = Some(version),
                    // Unquoted, `2.10` would read as the number 2.1.
                    None => self.error(
                        &v.loc,
                        "flux_version must be a quoted Flux version such as \"2.8\"",
                    ),
                },
                "kube_version" => match v.as_str().filter(|t| is_kube_version(t)) {
                    Some(t) => cfg.kube_version = Some(t.to_string()),
                    None => self.error(
                        &v.loc,
                        "kube_version must be a quoted Kubernetes version such as \"v1.32.0\"",
                    ),
                },
                "api_versions" => cfg.api_versions = self.strings(v, "api_versions"),
                "requirements" => {
                    cfg.requirements = self.path(v, "requirements", PathKind::File);
                }
                "rules" => {
                    for (name, r) in self.entries(v, "rules", &[]) {
                        let rc = self.rule(r);
                        cfg.rules.insert(name.to_string(), rc);
                    }
                }
                "parity" => {
                    for g in self.list(v, "parity") {
                        if let Some(g) = self.parity(g) {
                            cfg.parity.push(g);
                        }
                    }
                }
                "contracts" => {
                    for c in self.list(v, "contracts") {
                        if let Some(c) = self.contract(c) {
                            cfg.contracts.push(c);
                        }
                    }
                }
                "generators" => {
                    for g in self.list(v, "generators") {
                        if let Some(g) = self.generator(g) {
                            cfg.generators.push(g);
                        }
                    }
                }
                "schemas" => {
                    let items: Vec<Node> = match &v.value {
                        Value::Seq(items) => items.clone(),
                        Value::Null => Vec::new(),
                        _ => vec![v.clone()],
                    };
                    for item in &items {
                        if let Some(p) = self.path(item, "schema path", PathKind::Any) {
                            cfg.schemas.push(p);
                        }
                    }
                }
                "policies" => {
                    let items: Vec<Node> = match &v.value {
                        Value::Seq(items) => items.clone(),
                        Value::Null => Vec::new(),
                        _ => vec![v.clone()],
                    };
                    for item in &items {
                        if let Some(p) = self.path(item, "policy path", PathKind::Any) {
                            cfg.policies.push(p);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn environment(&mut self, name: &str, node: &Node) -> Option<EnvConfig> {
        let mut env = EnvConfig {
            name: name.to_string(),
            flux: None,
            vip: None,
            vip_loc: None,
            nodes: None,
            talos: None,
            ansible: None,
            loc: node.loc.clone(),
            reason: format!("declared in {}", self.file),
            flux_version: None,
            helmfile: Vec::new(),
        };
        for (k, v) in self.entries(
            node,
            &format!("environment `{name}`"),
            &["flux", "vip", "nodes", "ansible", "talos", "helmfile"],
        ) {
            match k {
                "flux" => {
                    env.flux = Some(
                        self.path(v, "flux", PathKind::Dir)?
                            .trim_start_matches("./")
                            .trim_end_matches('/')
                            .to_string(),
                    );
                }
                "vip" => {
                    env.vip = self.string(v, "vip");
                    env.vip_loc = Some(v.loc.clone());
                    if let Some(vip) = env.vip.as_deref().filter(|x| !is_valid_vip(x)) {
                        self.error(
                            &v.loc,
                            format!("vip `{vip}` is neither an IP address nor a DNS name"),
                        );
                        env.vip = None;
                    }
                }
                "talos" => {
                    env.talos = self
                        .path(v, "talos", PathKind::Any)
                        .map(|p| p.trim_start_matches("./").trim_end_matches('/').to_string());
                }
                "helmfile" => env.helmfile = self.helmfiles(v),
                "nodes" => match v.as_i64().and_then(|n| u32::try_from(n).ok()) {
                    Some(n) => env.nodes = Some(n),
                    None => self.error(&v.loc, "nodes must be a positive number"),
                },
                "ansible" => {
                    let mut a = AnsibleConfig {
                        inventory: String::new(),
                        group: None,
                        playbook: None,
                        config: None,
                    };
                    for (ak, av) in
                        self.entries(v, "ansible", &["inventory", "group", "playbook", "config"])
                    {
                        let s = match ak {
                            "inventory" => self.path(av, "ansible inventory", PathKind::Any),
                            "playbook" => self.path(av, "ansible playbook", PathKind::File),
                            "config" => self.path(av, "ansible config", PathKind::File),
                            _ => self.string(av, ak),
                        };
                        match ak {
                            "inventory" => a.inventory = s.unwrap_or_default(),
                            "group" => a.group = s,
                            "playbook" => a.playbook = s,
                            _ => a.config = s,
                        }
                    }
                    if a.inventory.is_empty() {
                        self.error(
                            &v.loc,
                            format!("environment `{name}`: ansible needs `inventory`"),
                        );
                    } else {
                        env.ansible = Some(a);
                    }
                }
                _ => {}
            }
        }
        if env.flux.is_none() {
            self.error(
                &node.loc,
                format!("environment `{name}` needs `flux`: the directory Flux reconciles first"),
            );
            return None;
        }
        Some(env)
    }

    /// `helmfile:` of an environment: a path, a mapping (`path`, `environment`, `env`), or a
    /// list of either.
    fn helmfiles(&mut self, node: &Node) -> Vec<HelmfileConfig> {
        let items: Vec<&Node> = match &node.value {
            Value::Seq(items) => items.iter().collect(),
            _ => vec![node],
        };
        let mut out = Vec::new();
        for item in items {
            if let Value::String(_) = &item.value {
                if let Some(path) = self.path(item, "helmfile", PathKind::Any) {
                    out.push(HelmfileConfig {
                        path: path.trim_start_matches("./").to_string(),
                        environment: None,
                        env: std::collections::BTreeMap::new(),
                        loc: item.loc.clone(),
                    });
                }
                continue;
            }
            let mut h = HelmfileConfig {
                path: String::new(),
                environment: None,
                env: std::collections::BTreeMap::new(),
                loc: item.loc.clone(),
            };
            for (k, v) in self.entries(item, "helmfile", &["path", "environment", "env"]) {
                match k {
                    "path" => {
                        h.path = self
                            .path(v, "helmfile", PathKind::Any)
                            .unwrap_or_default()
                            .trim_start_matches("./")
                            .to_string();
                    }
                    "environment" => h.environment = self.string(v, "helmfile environment"),
                    _ => {
                        for (name, value) in self.entries(v, "helmfile env", &[]) {
                            let text = value.scalar_text().unwrap_or_default();
                            h.env.insert(name.to_string(), text);
                        }
                    }
                }
            }
            if h.path.is_empty() {
                self.error(&item.loc, "helmfile needs `path`");
            } else {
                out.push(h);
            }
        }
        out
    }

    fn rule(&mut self, node: &Node) -> RuleConfig {
        let mut rc = RuleConfig::default();
        let Some(map) = node.as_map() else {
            self.error(&node.loc, "a rule's settings must be a mapping");
            return rc;
        };
        for (k, v) in map {
            match k.as_str() {
                "enabled" => match v.as_bool() {
                    Some(b) => rc.enabled = Some(b),
                    None => self.error(&v.loc, "enabled must be true or false"),
                },
                "severity" => match v.as_str().and_then(Severity::parse) {
                    Some(s) => rc.severity = Some(s),
                    None => self.error(&v.loc, "severity must be error, warning or note"),
                },
                "requirements" => rc.requirements = self.requirement_ids(v),
                _ => {
                    rc.settings.insert(k.clone(), v.clone());
                }
            }
        }
        rc
    }

    fn parity(&mut self, node: &Node) -> Option<ParityGroup> {
        let mut g = ParityGroup {
            name: String::new(),
            requirements: Vec::new(),
            sources: Vec::new(),
            keys: ParityKeys::Tagged,
            loc: node.loc.clone(),
        };
        for (k, v) in self.entries(
            node,
            "a parity group",
            &["name", "requirements", "sources", "keys"],
        ) {
            match k {
                "name" => g.name = self.string(v, "name").unwrap_or_default(),
                "requirements" => g.requirements = self.requirement_ids(v),
                "sources" => {
                    for s in v.as_seq().unwrap_or_default() {
                        let e = self.entries(
                            s,
                            "a parity source",
                            &["helmrelease", "template", "host", "file"],
                        );
                        let get = |n: &str| {
                            e.iter()
                                .find(|(k, _)| *k == n)
                                .and_then(|(_, v)| v.scalar_text())
                        };
                        let loc = s.loc.clone();
                        if let Some(r) = get("helmrelease") {
                            g.sources
                                .push(ParitySource::HelmRelease { release: r, loc });
                        } else if let Some(t) = get("template") {
                            g.sources.push(ParitySource::Template {
                                path: t,
                                host: get("host"),
                                loc,
                            });
                        } else if let Some(f) = get("file") {
                            g.sources.push(ParitySource::File { path: f, loc });
                        } else {
                            self.error(
                                &s.loc,
                                "a parity source needs `helmrelease`, `template` or `file`",
                            );
                        }
                    }
                }
                "keys" => {
                    g.keys = if v.as_str() == Some("tagged") {
                        ParityKeys::Tagged
                    } else if v.as_seq().is_some() {
                        ParityKeys::Paths(self.strings(v, "a dotted key path"))
                    } else {
                        self.error(&v.loc, "keys must be `tagged` or a list of dotted paths");
                        ParityKeys::Tagged
                    };
                }
                _ => {}
            }
        }
        if g.name.is_empty() {
            self.error(&node.loc, "a parity group needs a `name`");
            return None;
        }
        Some(g)
    }

    fn generator(&mut self, node: &Node) -> Option<Generator> {
        let mut g = Generator {
            kind: String::new(),
            group: String::new(),
            creates: String::new(),
            name: Vec::new(),
        };
        for (k, v) in self.entries(
            node,
            "a generator",
            &["kind", "apiVersion", "creates", "name"],
        ) {
            match k {
                "kind" => g.kind = self.string(v, "kind").unwrap_or_default(),
                "apiVersion" => g.group = self.string(v, "apiVersion").unwrap_or_default(),
                "creates" => g.creates = self.string(v, "creates").unwrap_or_default(),
                _ => g.name = self.strings(v, "a dotted field path"),
            }
        }
        if g.kind.is_empty() || !matches!(g.creates.as_str(), "Secret" | "ConfigMap") {
            self.error(
                &node.loc,
                "a generator needs `kind` and `creates: Secret` or `creates: ConfigMap`",
            );
            return None;
        }
        Some(g)
    }

    fn contract(&mut self, node: &Node) -> Option<Contract> {
        let mut c = Contract {
            id: String::new(),
            requirements: Vec::new(),
            description: None,
            environments: None,
            assert: String::new(),
            loc: node.loc.clone(),
        };
        for (k, v) in self.entries(
            node,
            "a contract",
            &[
                "id",
                "requirements",
                "description",
                "environments",
                "assert",
            ],
        ) {
            match k {
                "id" => c.id = self.string(v, "id").unwrap_or_default(),
                "requirements" => c.requirements = self.requirement_ids(v),
                "description" => c.description = self.string(v, "description"),
                "environments" => c.environments = Some(self.strings(v, "an environment name")),
                "assert" => {
                    c.assert = self.string(v, "assert").unwrap_or_default();
                    c.loc = v.loc.clone();
                }
                _ => {}
            }
        }
        if c.id.is_empty() || c.assert.is_empty() {
            self.error(&node.loc, "a contract needs `id` and `assert`");
            return None;
        }
        Some(c)
    }
}

/// The known key nearest to a typo, by edit distance, when it is close enough to suggest.
#[must_use]
pub fn closest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::levenshtein(word, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = "\
environments:
  prod:
    flux: ./clusters/prod/
    vip: 192.168.2.9
    nodes: 3
    ansible:
      inventory: infra/ansible/inventory/hosts.yml
      group: k3s_prod
sources:
  flux-manifests: vendor/flux
charts: charts
rules:
  rollout-blast-radius: {severity: error, requirements: [R-NET-02]}
  check-mode-probe: {enabled: false}
parity:
  - name: cilium
    sources:
      - helmrelease: kube-system/cilium
      - template: roles/cilium/templates/v.j2
        host: primary
    keys: tagged
contracts:
  - id: cni-dials-vip
    assert: env == 'prod'
policies: [policies/]
schemas: [schemas/crds, vendor/flux.yaml]
";

    #[test]
    fn full_example() {
        let (cfg, diags) = parse_config("fluxgate.yaml", FULL);
        assert!(diags.is_empty(), "{diags:?}");
        let prod = &cfg.environments[0];
        assert_eq!(prod.flux.as_deref(), Some("clusters/prod"));
        assert_eq!(prod.nodes, Some(3));
        assert_eq!(
            prod.ansible.as_ref().and_then(|a| a.group.as_deref()),
            Some("k3s_prod")
        );
        assert_eq!(cfg.rules["check-mode-probe"].enabled, Some(false));
        assert_eq!(cfg.parity[0].sources.len(), 2);
        assert_eq!(cfg.contracts[0].loc.line, 24);
        assert_eq!(cfg.policies, vec!["policies/"]);
        assert_eq!(cfg.schemas, vec!["schemas/crds", "vendor/flux.yaml"]);
    }

    #[test]
    fn unknown_keys_are_findings_with_a_hint() {
        let (_, mut diags) = parse_config(
            "fluxgate.yaml",
            "environments:\n  prod:\n    flux: a\n    vpi: 1.2.3.4\nchart: x\n",
        );
        fluxgate_diagnostics::sort_and_dedup(&mut diags);
        assert_eq!(diags.len(), 2);
        assert!(
            diags[0].message.contains("did you mean `vip`"),
            "{}",
            diags[0].message
        );
        assert_eq!(diags[0].location.as_ref().map(|l| l.line), Some(4));
        assert!(diags[1].message.contains("did you mean `charts`"));
    }

    #[test]
    fn flux_version_pins_substitution_mode() {
        let (cfg, diags) = parse_config(
            "fluxgate.yaml",
            "flux_version: \"2.8\"\nenvironments:\n  prod:\n    flux: a\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        let v = cfg.flux_version.expect("pinned");
        assert_eq!(v, FluxVersion { major: 2, minor: 8 });
        assert!(!v.strict_substitution());
        assert!(FluxVersion::parse("v2.9.1").is_some_and(FluxVersion::strict_substitution));
        assert!(FluxVersion::parse("2.10").is_some_and(FluxVersion::strict_substitution));
        let (_, diags) = parse_config(
            "fluxgate.yaml",
            "flux_version: 2.10\nenvironments:\n  prod:\n    flux: a\n",
        );
        assert!(diags[0].message.contains("quoted"), "{diags:?}");
    }

    #[test]
    fn chart_capabilities() {
        let (cfg, diags) = parse_config(
            "fluxgate.yaml",
            "kube_version: \"v1.32.0\"\napi_versions: [monitoring.coreos.com/v1]\nenvironments:\n  prod:\n    flux: a\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(cfg.kube_version.as_deref(), Some("v1.32.0"));
        assert_eq!(cfg.api_versions, ["monitoring.coreos.com/v1"]);
        let (_, diags) = parse_config(
            "fluxgate.yaml",
            "kube_version: latest\nenvironments:\n  prod:\n    flux: a\n",
        );
        assert!(diags[0].message.contains("kube_version"), "{diags:?}");
    }

    #[test]
    fn flux_is_required() {
        let (cfg, diags) = parse_config("fluxgate.yaml", "environments:\n  prod:\n    vip: x\n");
        assert!(cfg.environments.is_empty());
        assert!(diags[0].message.contains("needs `flux`"));
    }
}
