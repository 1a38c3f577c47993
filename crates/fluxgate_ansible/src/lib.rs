//! Ansible, read statically: inventories (YAML, INI, directories, host ranges), variables with
//! Ansible's precedence and origins, lazy Jinja2 templating with the Ansible filters, vault
//! values kept opaque, and the site playbook flattened into the bootstrap order.
//!
//! The reference is ansible-core: `tests/differential.rs` compares every variable of the
//! corpus inventories with it.
//!
//! ```
//! use fluxgate_ansible::{Options, Project};
//! let dir = std::env::temp_dir().join(format!("fg-ansible-doc-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("group_vars")).unwrap();
//! std::fs::write(dir.join("hosts.ini"), "[k3s]\nk3s-[1:2] k3s_node_ip=10.0.0.1\n").unwrap();
//! std::fs::write(dir.join("group_vars/all.yml"),
//!     "api: \"{{ hostvars[groups['k3s'][0]]['k3s_node_ip'] }}\"\nha: \"{{ 'no' | bool }}\"\n").unwrap();
//! let project = Project::load(&Options {
//!     root: dir.clone(),
//!     inventory: vec!["hosts.ini".into()],
//!     ..Options::default()
//! });
//! let api = project.resolve("k3s-2", "api").unwrap();
//! assert_eq!(api.value.as_str(), Some("10.0.0.1"));
//! assert_eq!(api.origin[0].location.file.as_ref(), "group_vars/all.yml");
//! assert_eq!(project.resolve("k3s-1", "ha").unwrap().value.as_bool(), Some(false));
//! # std::fs::remove_dir_all(dir).ok();
//! ```

mod cfg;
mod error;
mod files;
mod filters;
pub mod inventory;
mod linemap;
mod pattern;
pub mod playbook;
pub mod problem;
mod project;
mod resolve;
mod secrets;
mod values;
mod varfiles;

use fluxgate_diagnostics::Annotate;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Schema, parse_stream};
use indexmap::IndexMap;

pub use cfg::{AnsibleCfg, parse_cfg};
pub use error::Error;
pub use inventory::{
    Group, Host, Inventory, REPRESENTATIVE_PREFIX, expand_hostname, parse_inventory_text,
};
pub use playbook::{Play, Role, RoleRef, Task, TemplateUse};
pub use problem::{Problem, ProblemKind};
pub use project::Options;
pub use resolve::{Origin, ResolveError, Resolved, Scope};
pub use values::{OPAQUE, symbolic, symbolic_var};

/// Variables by name, in file order, each node knowing where it was written.
pub type VarMap = fluxgate_yaml::Map;

/// Every variable of one host, resolved: the values that resolved and the errors of those
/// that did not (one bad variable never hides the others).
#[derive(Clone, Debug, Default)]
pub struct HostVarsResolution {
    pub vars: IndexMap<String, Resolved>,
    pub errors: IndexMap<String, ResolveError>,
}

/// A template rendered for one host.
#[derive(Clone, Debug)]
pub struct RenderedTemplate {
    /// Path relative to the repository root.
    pub path: String,
    pub host: String,
    pub text: String,
    /// The text parsed as YAML when it is YAML (first document), located in the template:
    /// each node at the template line that wrote it ([`RenderedTemplate::lines`]).
    pub value: Option<Node>,
    /// Every YAML document of the text, located as `value` is; empty when the text is not
    /// YAML.
    pub docs: Vec<Node>,
    /// Whether a vault-encrypted value reached the output.
    pub opaque: bool,
    /// For each line of `text` (0-based index), the template line (1-based) that wrote it.
    pub lines: Vec<u32>,
    /// Whether `lines` is exact (the renderer traced every line); otherwise it comes from
    /// matching the output against the template text.
    pub exact_lines: bool,
}

impl RenderedTemplate {
    /// The template line (1-based) that wrote 1-based output line `line`.
    pub fn template_line(&self, line: u32) -> u32 {
        self.lines
            .get((line as usize).wrapping_sub(1))
            .copied()
            .unwrap_or(line)
    }
}

/// One play of the flattened bootstrap order.
#[derive(Clone, Debug)]
pub struct PlayOrder<'a> {
    pub index: usize,
    pub play: &'a Play,
    /// The hosts its pattern selects.
    pub hosts: &'a [String],
}

/// The most text one template may render to (the engine's fuel bounds the work; this bounds
/// what is kept and parsed).
pub const MAX_TEMPLATE_OUTPUT: usize = 64 * 1024 * 1024;

/// A loaded inventory + playbook. Cheap to clone; resolution is lazy and memoised.
#[derive(Clone, Debug)]
pub struct Project {
    data: Arc<project::Data>,
    /// Load problems, then those only the hosts reveal (templated `vars_files`).
    problems: Arc<Vec<Problem>>,
    /// Templates rendered so far, by (path, host): several rules read the same renders.
    rendered: Arc<Mutex<TemplateMemo>>,
    /// How many times a template was actually rendered (memo misses).
    renders: Arc<std::sync::atomic::AtomicUsize>,
    /// [`Project::secret_values`] by the hosts asked for: every run of `mutate` whose mutant
    /// does not reach the Ansible side shares the project, and asks again.
    secrets: Arc<Mutex<SecretMemo>>,
}

/// Secret values by the hosts they were asked for.
type SecretMemo = HashMap<Vec<String>, Arc<Vec<String>>>;

/// One cell per (template, host): readers on other threads wait for the render in progress
/// instead of rendering it again.
type TemplateMemo =
    HashMap<(String, String), Arc<std::sync::OnceLock<Result<RenderedTemplate, Problem>>>>;

impl Project {
    /// Loads the inventory, ansible.cfg, playbook tree, roles and variable files. Problems
    /// are in [`Project::problems`]; loading itself never fails.
    #[must_use]
    pub fn load(opts: &Options) -> Project {
        let data = Arc::new(project::load(opts));
        let mut problems = data.problems.clone();
        problems.extend(project::late_problems(&data));
        Project {
            data,
            problems: Arc::new(problems),
            rendered: Arc::default(),
            renders: Arc::default(),
            secrets: Arc::default(),
        }
    }

    /// Problems found while loading (unreadable files, YAML errors, missing roles...).
    #[must_use]
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    #[must_use]
    pub fn inventory(&self) -> &Inventory {
        &self.data.inventory
    }

    /// The inventory files read, relative to the root.
    #[must_use]
    pub fn inventory_files(&self) -> &[String] {
        &self.data.inventory_files
    }

    /// Every host, in inventory order.
    #[must_use]
    pub fn hosts(&self) -> Vec<String> {
        self.data.inventory.hosts.keys().cloned().collect()
    }

    /// The hosts of a group (descendants included); `all` gives every host.
    #[must_use]
    pub fn group_hosts(&self, group: &str) -> Vec<String> {
        self.data.inventory.group_hosts(group)
    }

    /// The names of the variables a host sees (in [`Scope::Host`]).
    #[must_use]
    pub fn var_names(&self, host: &str) -> Vec<String> {
        self.data
            .table(&Scope::Host, host)
            .keys()
            .cloned()
            .collect()
    }

    /// The names of the variables a host sees in one scope.
    #[must_use]
    pub fn var_names_in(&self, scope: &Scope, host: &str) -> Vec<String> {
        self.data.table(scope, host).keys().cloned().collect()
    }

    /// Whether `host` is a representative host of a group (an inventory without hosts; see
    /// [`Options::representative_hosts`]).
    #[must_use]
    pub fn is_representative(&self, host: &str) -> bool {
        self.data
            .inventory
            .hosts
            .get(host)
            .is_some_and(|h| h.representative)
    }

    /// Resolves one variable of a host across all plays that target it.
    pub fn resolve(&self, host: &str, var: &str) -> Result<Resolved, ResolveError> {
        self.resolve_in(&Scope::Host, host, var)
    }

    /// Resolves one variable in a given scope.
    pub fn resolve_in(
        &self,
        scope: &Scope,
        host: &str,
        var: &str,
    ) -> Result<Resolved, ResolveError> {
        if !self.data.inventory.hosts.contains_key(host) {
            return Err(ResolveError {
                reason: Error::UnknownHost {
                    host: host.to_string(),
                },
                chain: Vec::new(),
            });
        }
        resolve::resolve(&self.data, scope, host, var).map(|r| (*r).clone())
    }

    /// Jinja syntax errors in the tasks of the play order (issue 26 §3): a `when:` that is
    /// not an expression, a task argument whose `{{ }}`/`{% %}` does not parse. ansible-core
    /// fails the task on each whatever the host, so each is a defect at its line.
    #[must_use]
    pub fn task_syntax_problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for po in self.order() {
            for task in &po.play.tasks {
                if !seen.insert(task.loc.clone()) {
                    continue;
                }
                let mut conditions: Vec<&fluxgate_yaml::Node> = Vec::new();
                match task.when.as_ref().map(|w| &w.value) {
                    Some(fluxgate_yaml::Value::Seq(items)) => conditions.extend(items),
                    Some(_) => conditions.extend(task.when.as_ref()),
                    None => {}
                }
                for c in conditions {
                    let Some(text) = c.as_str() else { continue };
                    let expr = text
                        .trim()
                        .strip_prefix("{{")
                        .and_then(|t| t.strip_suffix("}}"))
                        .unwrap_or(text);
                    if let Err(e) = self.data.env.compile_expression(expr) {
                        out.push(Problem::new(
                            ProblemKind::TemplateSyntax,
                            format!("`when: {text}` is not a Jinja expression: {e}; ansible-core fails the task"),
                            Some(c.loc.clone()),
                        ));
                    }
                }
                let mut strings = Vec::new();
                string_nodes(&task.args, &mut strings);
                for n in strings {
                    let Some(text) = n.as_str() else { continue };
                    if !(text.contains("{{") || text.contains("{%")) {
                        continue;
                    }
                    if let Err(e) = self.data.env.template_from_str(text) {
                        out.push(Problem::new(
                            ProblemKind::TemplateSyntax,
                            format!("a task argument's template does not parse: {e}; ansible-core fails the task"),
                            Some(n.loc.clone()),
                        ));
                    }
                }
            }
        }
        out
    }

    /// Resolves every variable of a host.
    #[must_use]
    pub fn host_vars(&self, host: &str) -> HostVarsResolution {
        let mut out = HostVarsResolution::default();
        for name in self.var_names(host) {
            match self.resolve(host, &name) {
                Ok(r) => {
                    out.vars.insert(name, r);
                }
                Err(e) => {
                    out.errors.insert(name, e);
                }
            }
        }
        out
    }

    /// The flattened play order with each play's selected hosts.
    #[must_use]
    pub fn order(&self) -> Vec<PlayOrder<'_>> {
        self.data
            .book
            .plays
            .iter()
            .enumerate()
            .map(|(index, play)| PlayOrder {
                index,
                play,
                hosts: self.data.play_hosts.get(index).map_or(&[], Vec::as_slice),
            })
            .collect()
    }

    /// The `include_vars` tasks of a play that were applied statically (in task order): the
    /// task's location and the file or folder it loaded, relative to the root. Their
    /// variables rank above role and play vars for the play's hosts, in this play and the
    /// later ones.
    #[must_use]
    pub fn included_vars(&self, play: usize) -> Vec<(Location, String)> {
        self.data
            .play_include_vars
            .get(play)
            .into_iter()
            .flatten()
            .map(|i| (i.task.clone(), i.vars.file.clone()))
            .collect()
    }

    /// The playbook files in import order.
    #[must_use]
    pub fn playbook_files(&self) -> &[String] {
        &self.data.book.files
    }

    /// Roles loaded by the playbook, by name.
    #[must_use]
    pub fn roles(&self) -> &IndexMap<String, Role> {
        &self.data.book.roles
    }

    /// Where Ansible's search path finds a template that a variable names (not a task of the
    /// playbook: an external role renders it, such as xanmanning.k3s'
    /// `k3s_server_manifests_templates`): a loaded role's `templates/`, a role folder of
    /// `roles_path`, the playbook folder's `templates/` or the playbook folder. The path is
    /// relative to the root; only paths inside it.
    #[must_use]
    pub fn find_template(&self, name: &str) -> Option<String> {
        let name = name.trim_start_matches("./");
        let mut candidates: Vec<std::path::PathBuf> = self
            .data
            .book
            .roles
            .values()
            .map(|r| r.abs.join("templates").join(name))
            .collect();
        for dir in &self.data.roles_path {
            let roles = self.data.root.folders(dir);
            candidates.extend(roles.into_iter().map(|r| r.join("templates").join(name)));
        }
        if let Some(dir) = &self.data.playbook_dir {
            candidates.push(dir.join("templates").join(name));
            candidates.push(dir.join(name));
        }
        candidates.into_iter().find_map(|c| {
            let c = files::normalize(&c);
            (c.starts_with(&self.data.root.dir) && self.data.root.read(&c).is_some())
                .then(|| self.data.root.rel(&c))
        })
    }

    /// The text of a file of the project (path relative to the root), as the renderers read it.
    #[must_use]
    pub fn read_source(&self, path: &str) -> Option<String> {
        self.data
            .root
            .read(&files::normalize(&self.data.root.dir.join(path)))
    }

    /// Whether `name` is a variable a template at `path` (relative to the root) sees for
    /// `host`: a variable of its scope or a magic variable.
    #[must_use]
    pub fn template_sees(&self, path: &str, host: &str, name: &str) -> bool {
        let scope = self.template_scope(path, host);
        self.data.table(&scope, host).contains_key(name)
            || self.data.magic(&scope, host, name).is_some()
    }

    /// The scope a template is rendered in: the role that owns it (in the first play that
    /// runs that role on the host), else the host's playbook-wide scope.
    fn template_scope(&self, rel: &str, host: &str) -> Scope {
        for (name, role) in &self.data.book.roles {
            if rel.starts_with(&format!("{}/", role.path)) {
                for (i, p) in self.data.book.plays.iter().enumerate() {
                    let targets = self
                        .data
                        .play_hosts
                        .get(i)
                        .is_some_and(|h| h.iter().any(|x| x == host));
                    if targets && p.roles.iter().any(|r| r == name) {
                        return Scope::Role(i, name.clone());
                    }
                }
            }
        }
        Scope::Host
    }

    /// Renders a template file (path relative to the root) for one host. Errors are findings
    /// at the template's line, with the chain of variables that led there.
    // A Problem is the crate's error currency; boxing it would only add noise at call sites.
    #[allow(clippy::result_large_err)]
    pub fn render_template(&self, path: &str, host: &str) -> Result<RenderedTemplate, Problem> {
        let key = (path.to_string(), host.to_string());
        // A poisoned memo still holds only whole cells.
        let cell = self
            .rendered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_init(|| {
            self.renders
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.render_template_once(path, host)
        })
        .clone()
    }

    /// How many template renders this project performed, and for how many distinct
    /// (template, host) pairs: every reader shares one render per pair.
    #[must_use]
    pub fn render_counts(&self) -> (usize, usize) {
        let pairs = self
            .rendered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        (
            self.renders.load(std::sync::atomic::Ordering::Relaxed),
            pairs,
        )
    }

    // As for render_template: a Problem is the error currency.
    #[allow(clippy::result_large_err)]
    fn render_template_once(&self, path: &str, host: &str) -> Result<RenderedTemplate, Problem> {
        let abs = files::normalize(&self.data.root.dir.join(path));
        let rel = self.data.root.rel(&abs);
        if !self.data.inventory.hosts.contains_key(host) {
            return Err(Problem::new(
                ProblemKind::Invalid,
                format!("host '{host}' is not in the inventory"),
                None,
            ));
        }
        let Some(text) = self.data.root.read(&abs) else {
            // A file that is there but not text: ansible-core's template module fails on
            // invalid UTF-8 as on a syntax error.
            if self.data.root.is_file(&abs) {
                return Err(Problem::new(
                    ProblemKind::TemplateSyntax,
                    format!("template {rel} is not UTF-8 text: ansible-core fails the task"),
                    Some(Location::file(rel)),
                ));
            }
            return Err(Problem::new(
                ProblemKind::Invalid,
                format!("template {rel} not found"),
                Some(Location::file(rel)),
            ));
        };
        let scope = self.template_scope(&rel, host);
        let locals = vec![(
            "template_path".to_string(),
            minijinja::Value::from(abs.display().to_string()),
        )];
        let before = resolve::opaque_probe_start();
        let rendered = match resolve::render_text(&self.data, &scope, host, &text, &locals) {
            Ok(s) => s,
            Err((e, line)) => {
                let loc = Location::new(rel.clone(), line.unwrap_or(0), u32::from(line.is_some()));
                let mut d = Problem::new(
                    ProblemKind::of_template_error(&e),
                    format!("cannot render {rel} for {host}: {}", e.reason),
                    Some(loc),
                );
                for o in &e.chain {
                    d = d.related(
                        o.location.clone(),
                        format!("'{}' ({})", o.var_name(), o.via),
                    );
                }
                return Err(d);
            }
        };
        if rendered.len() > MAX_TEMPLATE_OUTPUT {
            return Err(Problem::new(
                ProblemKind::Invalid,
                format!(
                    "cannot render {rel} for {host}: its output exceeds 64 MiB ({} bytes); \
                     fluxgate does not check it",
                    rendered.len()
                ),
                Some(Location::file(rel)),
            ));
        }
        let opaque = resolve::opaque_probe_end(before) || rendered.contains(OPAQUE);
        let (lines, exact_lines) = self.trace_lines(&scope, host, &text, &locals, &rendered);
        let stream = parse_stream(&rel, &rendered, Schema::Yaml11);
        let docs = if stream.has_errors() {
            Vec::new()
        } else {
            let source: Vec<&str> = text.lines().collect();
            let output: Vec<&str> = rendered.lines().collect();
            let mut docs = stream.docs;
            for d in &mut docs {
                relocate(d, &lines, &source, &output);
            }
            docs
        };
        Ok(RenderedTemplate {
            path: rel,
            host: host.to_string(),
            text: rendered,
            value: docs.first().cloned(),
            docs,
            opaque,
            lines,
            exact_lines,
        })
    }

    /// The template line of each output line: traced by a marked second render when it
    /// renders to the same text, else aligned by text ([`linemap`]).
    fn trace_lines(
        &self,
        scope: &Scope,
        host: &str,
        template: &str,
        locals: &[(String, minijinja::Value)],
        rendered: &str,
    ) -> (Vec<u32>, bool) {
        let aligned = linemap::align(template, rendered);
        let traced = linemap::mark(template).and_then(|marked| {
            let before = resolve::opaque_probe_start();
            let out = resolve::render_text(&self.data, scope, host, &marked, locals).ok();
            // The probe belongs to the plain render; this one only traces lines.
            let _ = resolve::opaque_probe_end(before);
            let (text, lines) = linemap::unmark(&out?);
            (text == rendered).then_some(lines)
        });
        match traced {
            Some(mut lines) => {
                for (l, a) in lines.iter_mut().zip(&aligned) {
                    if *l == 0 {
                        *l = *a;
                    }
                }
                (lines, true)
            }
            None => (aligned, false),
        }
    }
}

/// Moves a node parsed from a template's output (and its children) to the template line that
/// wrote it. The column stays where the output has it when the template line reads the same
/// up to there; a node written by an expression is at that line's first `{{`.
fn relocate(node: &mut Node, lines: &[u32], source: &[&str], output: &[&str]) {
    let out_line = node.loc.line;
    if let Some(&t) = lines.get((out_line as usize).wrapping_sub(1)) {
        let src = source
            .get((t as usize).wrapping_sub(1))
            .copied()
            .unwrap_or("");
        let out = output
            .get((out_line as usize).wrapping_sub(1))
            .copied()
            .unwrap_or("");
        let col = node.loc.column as usize;
        let prefix_same = col > 0
            && out
                .get(..col - 1)
                .is_some_and(|p| src.get(..col - 1) == Some(p))
            && src.find("{{").is_none_or(|e| e >= col - 1);
        node.loc.line = t;
        if !prefix_same {
            node.loc.column = src.find("{{").map_or(node.loc.column, |e| e as u32 + 1);
        }
    }
    match &mut node.value {
        fluxgate_yaml::Value::Map(m) => m
            .values_mut()
            .for_each(|v| relocate(v, lines, source, output)),
        fluxgate_yaml::Value::Seq(s) => s
            .iter_mut()
            .for_each(|v| relocate(v, lines, source, output)),
        _ => {}
    }
}

/// Whether a variable is a secret by its name: `*password*`, `*passwd*`, `*token*`,
/// `*secret*`, `vault_*`, `*_key` (case-insensitive).
#[must_use]
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["password", "passwd", "token", "secret"]
        .iter()
        .any(|w| n.contains(w))
        || n.starts_with("vault_")
        || n.ends_with("_key")
}

pub(crate) fn string_nodes<'a>(n: &'a fluxgate_yaml::Node, out: &mut Vec<&'a fluxgate_yaml::Node>) {
    match &n.value {
        fluxgate_yaml::Value::Map(m) => m.values().for_each(|v| string_nodes(v, out)),
        fluxgate_yaml::Value::Seq(s) => s.iter().for_each(|v| string_nodes(v, out)),
        fluxgate_yaml::Value::String(_) => out.push(n),
        _ => {}
    }
}
