//! Loading a project (inventory, ansible.cfg, playbook, roles, variable files) and the
//! precedence layers each host sees.

use fluxgate_diagnostics::Annotate;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fluxgate_diagnostics::Location;

use crate::problem::{Problem, ProblemKind};
use fluxgate_yaml::{Node, Value as Y};
use minijinja::{Environment, UndefinedBehavior, Value};

use crate::VarMap;
use crate::cfg::{AnsibleCfg, parse_cfg};
use crate::files::{Root, normalize};
use crate::inventory::{Inventory, parse_inventory_text};
use crate::playbook::{Loader, Playbook};
use crate::resolve::{Cache, Def, HostVars, Scope, Table};
use crate::values::py_str;

/// A file of variables that forms part of one precedence layer.
#[derive(Clone, Debug)]
pub struct VarFile {
    /// Path relative to the root.
    pub file: String,
    pub vars: VarMap,
}

/// One entry of a play's `vars_files`.
#[derive(Clone, Debug)]
pub enum VarsFileEntry {
    /// Found and loaded once: no candidate is templated.
    Loaded(VarFile),
    /// Not found (reported at load).
    Missing,
    /// Candidates (first found wins) of which one at least is templated: ansible-core
    /// templates them per host with the variables below the entry and the extra vars.
    PerHost(Vec<Node>),
}

/// What a templated `vars_files` entry gives one host.
#[derive(Clone, Debug)]
pub enum PerHostVarsFile {
    Loaded(VarFile),
    /// A name could not be templated: ansible-core skips the entry with a warning.
    Undefined(String),
    /// No candidate exists (the names tried).
    NotFound(Vec<String>),
    /// Reading the file found problems.
    Invalid(Vec<Problem>),
}

/// Everything loaded, shared by the lazy template objects.
pub struct Data {
    pub root: Root,
    /// `roles_path` of ansible.cfg (absolute), where roles a playbook names are looked up.
    pub roles_path: Vec<PathBuf>,
    pub inventory: Inventory,
    pub inventory_files: Vec<String>,
    pub playbook_dir: Option<PathBuf>,
    pub book: Playbook,
    /// group name -> files from `group_vars/` beside the inventory, then beside the playbook.
    pub group_vars_inv: indexmap::IndexMap<String, Vec<VarFile>>,
    pub group_vars_play: indexmap::IndexMap<String, Vec<VarFile>>,
    pub host_vars_inv: indexmap::IndexMap<String, Vec<VarFile>>,
    pub host_vars_play: indexmap::IndexMap<String, Vec<VarFile>>,
    /// Per play: its `vars_files` entries.
    pub play_vars_files: Vec<Vec<VarsFileEntry>>,
    /// Per play: the variables its static `include_vars` tasks load, in task order.
    pub play_include_vars: Vec<Vec<crate::varfiles::Included>>,
    /// Per play: the hosts its pattern selects.
    pub play_hosts: Vec<Vec<String>>,
    pub extra_vars: VarMap,
    pub env: Environment<'static>,
    pub cache: Cache,
    pub groups_value: Value,
    pub problems: Vec<Problem>,
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Data")
            .field("root", &self.root.dir)
            .finish_non_exhaustive()
    }
}

/// What to load. Paths are relative to `root` (or absolute inside it).
#[derive(Clone, Default)]
pub struct Options {
    pub root: PathBuf,
    /// The filesystem to read the project through (an overlay of the repository, for
    /// mutation testing); by default the real one, confined to `root`.
    pub fs: Option<std::sync::Arc<dyn fluxgate_fs::Fs>>,
    /// Inventory files or directories; when empty, ansible.cfg's `inventory`.
    pub inventory: Vec<PathBuf>,
    pub playbook: Option<PathBuf>,
    /// An ansible.cfg; when None, the nearest one above the inventory (or playbook) inside
    /// the root.
    pub config: Option<PathBuf>,
    /// Extra vars (`-e`), highest precedence.
    pub extra_vars: VarMap,
    /// When the inventory defines no host: add one representative host to each of its groups
    /// (the groups of the inventory and the names under `group_vars/`), whose undefined
    /// variables render as [`crate::symbolic`] values. ansible-core has no such thing; fluxgate's
    /// model uses it so that a template repository is still checked.
    pub representative_hosts: bool,
}

pub fn new_env() -> Environment<'static> {
    let mut env = Environment::new();
    // minijinja's debug mode (on by default in debug builds) looks up every variable of a
    // failing template to describe it, and those lookups would land in the list of missing
    // names that says which variable was undefined: debug and release builds would name
    // different variables. Off in every build.
    env.set_debug(false);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let mut syntax = minijinja::syntax::SyntaxConfig::builder();
    syntax.trim_blocks(true).keep_trailing_newline(true);
    if let Ok(s) = syntax.build() {
        env.set_syntax(s);
    }
    env.set_recursion_limit(200);
    env.set_fuel(Some(5_000_000));
    env.set_formatter(|out, _state, value| {
        if value.is_undefined() {
            return Err(minijinja::Error::from(minijinja::ErrorKind::UndefinedError));
        }
        out.write_str(&py_str(value))
            .map_err(|_| minijinja::Error::from(minijinja::ErrorKind::WriteFailure))
    });
    crate::filters::register(&mut env);
    env
}

fn find_cfg(root: &Root, start: &Path) -> Option<PathBuf> {
    let mut dir = Some(normalize(start));
    while let Some(d) = dir {
        if !d.starts_with(&root.dir) {
            break;
        }
        let c = d.join("ansible.cfg");
        if root.is_file(&c) {
            return Some(c);
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    None
}

/// Loads everything `opts` names.
pub fn load(opts: &Options) -> Data {
    let root = match &opts.fs {
        Some(fs) => Root::with_fs(&opts.root, fs.clone()),
        None => Root::new(&opts.root),
    };
    let abs = |p: &Path| {
        if p.is_absolute() {
            normalize(p)
        } else {
            normalize(&root.dir.join(p))
        }
    };
    let mut diags = Vec::new();
    let inventory_paths: Vec<PathBuf> = opts.inventory.iter().map(|p| abs(p)).collect();
    let start = inventory_paths
        .first()
        .cloned()
        .or_else(|| opts.playbook.as_deref().map(abs))
        .unwrap_or_else(|| root.dir.clone());
    let cfg_path = opts.config.as_deref().map(abs).or_else(|| {
        let start_dir = if root.is_dir(&start) {
            start.clone()
        } else {
            start.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        find_cfg(&root, &start_dir)
    });
    let cfg = match &cfg_path {
        Some(p) => {
            if let Some(text) = root.read(p) {
                parse_cfg(&text, p.parent().unwrap_or(Path::new(".")))
            } else {
                diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("cannot read {}", root.rel(p)),
                    Some(Location::file(root.rel(p))),
                ));
                AnsibleCfg::default()
            }
        }
        None => AnsibleCfg::default(),
    };
    let sources: Vec<PathBuf> = if inventory_paths.is_empty() {
        cfg.inventory.iter().map(|p| normalize(p)).collect()
    } else {
        inventory_paths
    };
    let mut inventory = Inventory::default();
    let mut inventory_files = Vec::new();
    let mut inv_dirs: Vec<PathBuf> = Vec::new();
    for src in &sources {
        if root.is_dir(src) {
            inv_dirs.push(src.clone());
            for f in root.walk(src) {
                let rel_in = f.strip_prefix(src).unwrap_or(&f);
                let skip = rel_in
                    .components()
                    .any(|c| matches!(c.as_os_str().to_str(), Some("group_vars" | "host_vars")))
                    || matches!(
                        f.extension().and_then(|e| e.to_str()),
                        Some(
                            "md" | "txt" | "cfg" | "retry" | "pyc" | "orig" | "ini~" | "sh" | "py"
                        )
                    )
                    || f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with('.'));
                if skip {
                    continue;
                }
                read_inventory(&root, &f, &mut inventory, &mut inventory_files, &mut diags);
            }
        } else if root.is_file(src) {
            inv_dirs.push(src.parent().map(Path::to_path_buf).unwrap_or_default());
            read_inventory(&root, src, &mut inventory, &mut inventory_files, &mut diags);
        } else {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("inventory {} not found", root.rel(src)),
                Some(Location::file(root.rel(src))),
            ));
        }
    }
    inventory.reconcile();
    if opts.representative_hosts && inventory.hosts.is_empty() {
        add_representatives(&root, &mut inventory, &inv_dirs, opts, &abs, &mut diags);
    }

    let group_names: Vec<String> = inventory.groups.keys().cloned().collect();
    let host_names: Vec<String> = inventory.hosts.keys().cloned().collect();
    let mut group_vars_inv = indexmap::IndexMap::new();
    let mut host_vars_inv = indexmap::IndexMap::new();
    for d in &inv_dirs {
        collect_named(
            &root,
            &d.join("group_vars"),
            &group_names,
            &mut group_vars_inv,
            &mut diags,
        );
        collect_named(
            &root,
            &d.join("host_vars"),
            &host_names,
            &mut host_vars_inv,
            &mut diags,
        );
    }

    let mut book = Playbook::default();
    let mut playbook_dir = None;
    let mut group_vars_play = indexmap::IndexMap::new();
    let mut host_vars_play = indexmap::IndexMap::new();
    if let Some(pb) = opts.playbook.as_deref().map(abs) {
        let dir = pb.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut loader = Loader {
            root: &root,
            roles_path: cfg.roles_path.clone(),
            diags: Vec::new(),
            book: Playbook::default(),
        };
        loader.load(&pb);
        diags.append(&mut loader.diags);
        book = loader.book;
        if !inv_dirs.contains(&dir) {
            collect_named(
                &root,
                &dir.join("group_vars"),
                &group_names,
                &mut group_vars_play,
                &mut diags,
            );
            collect_named(
                &root,
                &dir.join("host_vars"),
                &host_names,
                &mut host_vars_play,
                &mut diags,
            );
        }
        playbook_dir = Some(dir);
    }

    let groups_value = Value::from_pairs(
        group_names
            .iter()
            .map(|g| {
                let hosts: Vec<Value> = inventory
                    .group_hosts(g)
                    .into_iter()
                    .map(Value::from)
                    .collect();
                (g.clone(), hosts.into_iter().collect::<Value>())
            })
            .collect::<Vec<_>>(),
    );
    let play_vars_files: Vec<Vec<VarsFileEntry>> = book
        .plays
        .iter()
        .map(|p| {
            p.vars_files
                .iter()
                .map(|vf| static_vars_file(&root, p, vf, &mut diags))
                .collect()
        })
        .collect();
    let play_include_vars = book
        .plays
        .iter()
        .map(|p| crate::varfiles::include_vars(&root, &book, p, &mut diags))
        .collect();
    let mut data = Data {
        roles_path: cfg.roles_path.clone(),
        root,
        inventory,
        inventory_files,
        playbook_dir,
        book,
        group_vars_inv,
        group_vars_play,
        host_vars_inv,
        host_vars_play,
        play_vars_files,
        play_include_vars,
        play_hosts: Vec::new(),
        extra_vars: opts.extra_vars.clone(),
        env: new_env(),
        cache: Cache::default(),
        groups_value,
        problems: diags,
    };
    let mut play_hosts = Vec::new();
    let mut more = Vec::new();
    for p in &data.book.plays {
        let (hosts, d) = crate::pattern::select(&data, &p.hosts, &p.loc);
        more.extend(d);
        play_hosts.push(hosts);
    }
    data.play_hosts = play_hosts;
    data.problems.extend(more);
    data
}

/// A `vars_files` entry: loaded now when no name is templated, else kept for the hosts.
fn static_vars_file(
    root: &Root,
    play: &crate::playbook::Play,
    entry: &Node,
    diags: &mut Vec<Problem>,
) -> VarsFileEntry {
    let candidates: Vec<Node> = match &entry.value {
        Y::Seq(s) => s.clone(),
        _ => vec![entry.clone()],
    };
    let mut names = Vec::new();
    for c in &candidates {
        let Some(name) = c.scalar_text() else {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                "a vars_files entry must be a file name or a list of file names",
                Some(c.loc.clone()),
            ));
            return VarsFileEntry::Missing;
        };
        if name.contains("{{") || name.contains("{%") {
            return VarsFileEntry::PerHost(candidates);
        }
        names.push(name);
    }
    for name in &names {
        let found = crate::varfiles::search_candidates(
            std::slice::from_ref(&play.dir),
            &play.dir,
            "vars",
            name,
        )
        .into_iter()
        .find(|c| root.is_file(c));
        if let Some(path) = found {
            return match root.load_vars_file(&path, diags) {
                Some(vars) => VarsFileEntry::Loaded(VarFile {
                    file: root.rel(&path),
                    vars,
                }),
                None => VarsFileEntry::Missing,
            };
        }
    }
    diags.push(Problem::new(
        ProblemKind::Invalid,
        format!("vars_files entry '{}' not found", names.join("', '")),
        Some(entry.loc.clone()),
    ));
    VarsFileEntry::Missing
}

/// Problems only the hosts reveal: templated `vars_files` names that do not resolve, or
/// resolve to no file, for some host. One finding per entry and kind, naming the hosts.
pub fn late_problems(data: &Arc<Data>) -> Vec<Problem> {
    let mut out: Vec<Problem> = Vec::new();
    for (p, entries) in data.play_vars_files.iter().enumerate() {
        let Some(play) = data.book.plays.get(p) else {
            continue;
        };
        for (i, e) in entries.iter().enumerate() {
            if !matches!(e, VarsFileEntry::PerHost(_)) {
                continue;
            }
            let Some(node) = play.vars_files.get(i) else {
                continue;
            };
            let shown = match &node.value {
                Y::Seq(s) => s
                    .iter()
                    .filter_map(Node::scalar_text)
                    .collect::<Vec<_>>()
                    .join("', '"),
                _ => node.scalar_text().unwrap_or_default(),
            };
            // message -> hosts
            let mut undefined: indexmap::IndexMap<String, Vec<String>> = indexmap::IndexMap::new();
            let mut missing: indexmap::IndexMap<String, Vec<String>> = indexmap::IndexMap::new();
            for host in data.play_hosts.get(p).into_iter().flatten() {
                match &*data.vars_file_for(p, i, host) {
                    PerHostVarsFile::Loaded(_) => {}
                    PerHostVarsFile::Undefined(m) => {
                        undefined.entry(m.clone()).or_default().push(host.clone());
                    }
                    PerHostVarsFile::NotFound(names) => {
                        missing
                            .entry(names.join("', '"))
                            .or_default()
                            .push(host.clone());
                    }
                    PerHostVarsFile::Invalid(d) => out.extend(d.iter().cloned()),
                }
            }
            for (m, hosts) in undefined {
                out.push(Problem::new(
                    ProblemKind::Skipped,
                    format!(
                        "vars_files entry '{shown}' cannot be templated for {}: {m}; \
                         ansible-core skips it with a warning",
                        hosts.join(", ")
                    ),
                    Some(node.loc.clone()),
                ));
            }
            for (names, hosts) in missing {
                out.push(Problem::new(
                    ProblemKind::Invalid,
                    format!(
                        "vars_files entry '{shown}' not found for {} (looked for '{names}')",
                        hosts.join(", ")
                    ),
                    Some(node.loc.clone()),
                ));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|d| seen.insert((d.message.clone(), d.location.clone())));
    out
}

fn read_inventory(
    root: &Root,
    path: &Path,
    inv: &mut Inventory,
    files: &mut Vec<String>,
    diags: &mut Vec<Problem>,
) {
    let rel = root.rel(path);
    match root.read(path) {
        Some(text) => {
            parse_inventory_text(inv, &rel, &text, diags);
            files.push(rel);
        }
        None => diags.push(Problem::new(
            ProblemKind::Invalid,
            format!("cannot read inventory {rel}"),
            Some(Location::file(rel)),
        )),
    }
}

/// Representative hosts for an inventory without hosts: one per group of the inventory or
/// named under a `group_vars/` folder (beside the inventory or the playbook), with a warning
/// that says so at the inventory.
fn add_representatives(
    root: &Root,
    inventory: &mut Inventory,
    inv_dirs: &[PathBuf],
    opts: &Options,
    abs: &dyn Fn(&Path) -> PathBuf,
    diags: &mut Vec<Problem>,
) {
    let mut dirs: Vec<PathBuf> = inv_dirs.iter().map(|d| d.join("group_vars")).collect();
    if let Some(pb) = opts.playbook.as_deref().map(abs)
        && let Some(dir) = pb.parent()
    {
        dirs.push(dir.join("group_vars"));
    }
    let mut groups: Vec<String> = inventory
        .groups
        .keys()
        .filter(|g| *g != "all" && *g != "ungrouped")
        .cloned()
        .collect();
    for d in &dirs {
        for n in root.entry_names(d) {
            if n != "all" && !groups.contains(&n) {
                groups.push(n);
            }
        }
    }
    if groups.is_empty() {
        return;
    }
    let at = inv_dirs
        .first()
        .map_or_else(|| Location::file(""), |d| Location::file(root.rel(d)));
    let listed = inventory.add_representatives(&groups, &at);
    if listed.is_empty() {
        return;
    }
    diags.push(
        Problem::new(
            ProblemKind::Representative,
            format!(
                "the inventory defines no hosts: fluxgate checks one representative host for each \
                 of its groups ({}), and a variable nobody defines stands for itself, so two values \
                 from the same variable are the same address",
                listed.join(", ")
            ),
            Some(at),
        )
        .help("checks that need real addresses (node IPs, a node count) see only what the groups' variables say; add an inventory, or `nodes:` and `vip:` in fluxgate.yaml"),
    );
}

fn collect_named(
    root: &Root,
    dir: &Path,
    names: &[String],
    out: &mut indexmap::IndexMap<String, Vec<VarFile>>,
    diags: &mut Vec<Problem>,
) {
    if !root.is_dir(dir) {
        return;
    }
    for n in names {
        for (file, vars) in root.load_named_vars(dir, n, diags) {
            out.entry(n.clone())
                .or_default()
                .push(VarFile { file, vars });
        }
    }
}

fn push_layer(table: &mut Table, vars: &VarMap, source: &str) {
    let source: Arc<str> = Arc::from(source);
    for (k, v) in vars {
        table.insert(
            k.clone(),
            Def {
                node: v.clone(),
                source: source.clone(),
            },
        );
    }
}

impl Data {
    /// The plays (by index) whose pattern selects `host`, or the one play of the scope.
    fn plays_for(&self, scope: &Scope, host: &str) -> Vec<usize> {
        match scope {
            Scope::Host => (0..self.book.plays.len())
                .filter(|i| {
                    self.play_hosts
                        .get(*i)
                        .is_some_and(|h| h.iter().any(|x| x == host))
                })
                .collect(),
            Scope::Play(p) | Scope::Role(p, _) | Scope::VarsFile(p, _) => vec![*p],
        }
    }

    /// The plays whose `include_vars` a scope sees: ansible-core keeps included variables on
    /// the host for the rest of the run, so every play up to the scope's that targets it.
    fn include_plays(&self, scope: &Scope, host: &str) -> Vec<usize> {
        let last = match scope {
            Scope::Host => self.book.plays.len(),
            Scope::Play(p) | Scope::Role(p, _) => p + 1,
            Scope::VarsFile(..) => 0,
        };
        (0..last.min(self.book.plays.len()))
            .filter(|i| {
                self.play_hosts
                    .get(*i)
                    .is_some_and(|h| h.iter().any(|x| x == host))
            })
            .collect()
    }

    /// `inventory_file` and `inventory_dir`: ansible-core sets them on each host from the
    /// inventory source that declared it first.
    fn inventory_source_vars(&self, h: &crate::inventory::Host) -> VarMap {
        let file = normalize(&self.root.dir.join(&*h.loc.file));
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut m = VarMap::default();
        m.insert(
            "inventory_file".into(),
            Node::string(file.display().to_string(), h.loc.clone()),
        );
        m.insert(
            "inventory_dir".into(),
            Node::string(dir.display().to_string(), h.loc.clone()),
        );
        m
    }

    /// A templated `vars_files` entry for one host: its names templated with what lies below
    /// the entry (and the extra vars), the first that exists loaded. Memoised.
    pub fn vars_file_for(self: &Arc<Self>, p: usize, i: usize, host: &str) -> Arc<PerHostVarsFile> {
        let key = (p, i, host.to_string());
        if let Some(hit) = self
            .cache
            .vars_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return hit.clone();
        }
        let outcome = Arc::new(self.compute_vars_file(p, i, host));
        self.cache
            .vars_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, outcome.clone());
        outcome
    }

    fn compute_vars_file(self: &Arc<Self>, p: usize, i: usize, host: &str) -> PerHostVarsFile {
        let (Some(play), Some(VarsFileEntry::PerHost(cands))) = (
            self.book.plays.get(p),
            self.play_vars_files.get(p).and_then(|v| v.get(i)),
        ) else {
            return PerHostVarsFile::NotFound(Vec::new());
        };
        let scope = Scope::VarsFile(p, i);
        let mut tried = Vec::new();
        for c in cands {
            let Some(text) = c.scalar_text() else {
                continue;
            };
            let name = if text.contains("{{") || text.contains("{%") {
                match crate::resolve::render_value(self, &scope, host, &text, &[]) {
                    Ok(v) => v.as_str().map_or_else(|| py_str(&v), str::to_string),
                    Err(e) => return PerHostVarsFile::Undefined(e.reason.to_string()),
                }
            } else {
                text
            };
            let found = crate::varfiles::search_candidates(
                std::slice::from_ref(&play.dir),
                &play.dir,
                "vars",
                &name,
            )
            .into_iter()
            .find(|c| self.root.is_file(c));
            if let Some(path) = found {
                let mut diags = Vec::new();
                return match self.root.load_vars_file(&path, &mut diags) {
                    Some(vars) if diags.is_empty() => PerHostVarsFile::Loaded(VarFile {
                        file: self.root.rel(&path),
                        vars,
                    }),
                    _ => PerHostVarsFile::Invalid(diags),
                };
            }
            tried.push(name);
        }
        PerHostVarsFile::NotFound(tried)
    }

    /// The winning definition of every variable for (scope, host), built once.
    pub fn table(self: &Arc<Self>, scope: &Scope, host: &str) -> Arc<Table> {
        let key = (scope.clone(), host.to_string());
        if let Some(t) = self
            .cache
            .tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return t.clone();
        }
        let t = Arc::new(self.build_table(scope, host));
        self.cache
            .tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, t.clone());
        t
    }

    fn role_layers<'a>(&'a self, plays: &[usize]) -> Vec<&'a crate::playbook::Role> {
        let mut out: Vec<&crate::playbook::Role> = Vec::new();
        for p in plays {
            if let Some(play) = self.book.plays.get(*p) {
                for r in &play.roles {
                    if let Some(role) = self.book.roles.get(r) {
                        out.push(role);
                    }
                }
            }
        }
        out
    }

    fn build_table(self: &Arc<Self>, scope: &Scope, host: &str) -> Table {
        let mut t = Table::new();
        let plays = self.plays_for(scope, host);
        let roles = self.role_layers(&plays);
        for role in &roles {
            for vf in &role.defaults {
                push_layer(&mut t, &vf.1, &format!("role defaults ({})", role.name));
            }
        }
        if let Scope::Role(_, name) = scope
            && let Some(role) = self.book.roles.get(name)
        {
            for dep in self.role_deps(name) {
                for vf in &dep.defaults {
                    push_layer(&mut t, &vf.1, &format!("role defaults ({})", dep.name));
                }
            }
            for vf in &role.defaults {
                push_layer(&mut t, &vf.1, &format!("role defaults ({})", role.name));
            }
        }
        let groups = self.inventory.sorted_host_groups(host);
        // Inventory file group vars: `all`, then the host's groups in order.
        if let Some(g) = self.inventory.groups.get("all") {
            push_layer(&mut t, &g.vars, "inventory vars (all)");
        }
        for g in &groups {
            if let Some(grp) = self.inventory.groups.get(g) {
                push_layer(&mut t, &grp.vars, &format!("inventory vars ({g})"));
            }
        }
        for (map, label) in [
            (&self.group_vars_inv, "group_vars/all"),
            (&self.group_vars_play, "playbook group_vars/all"),
        ] {
            for vf in map.get("all").into_iter().flatten() {
                push_layer(&mut t, &vf.vars, label);
            }
        }
        for (map, label) in [
            (&self.group_vars_inv, "group_vars"),
            (&self.group_vars_play, "playbook group_vars"),
        ] {
            for g in &groups {
                for vf in map.get(g).into_iter().flatten() {
                    push_layer(&mut t, &vf.vars, &format!("{label}/{g}"));
                }
            }
        }
        if let Some(h) = self.inventory.hosts.get(host) {
            push_layer(
                &mut t,
                &self.inventory_source_vars(h),
                "inventory host vars",
            );
            push_layer(&mut t, &h.vars, "inventory host vars");
        }
        for (map, label) in [
            (&self.host_vars_inv, "host_vars"),
            (&self.host_vars_play, "playbook host_vars"),
        ] {
            for vf in map.get(host).into_iter().flatten() {
                push_layer(&mut t, &vf.vars, label);
            }
        }
        let upto = match scope {
            Scope::VarsFile(_, i) => *i,
            _ => usize::MAX,
        };
        for p in &plays {
            if let Some(play) = self.book.plays.get(*p) {
                push_layer(&mut t, &play.vars, "play vars");
                let entries = self.play_vars_files.get(*p).into_iter().flatten();
                for (i, e) in entries.enumerate().take(upto) {
                    match e {
                        VarsFileEntry::Loaded(vf) => push_layer(&mut t, &vf.vars, "vars_files"),
                        VarsFileEntry::PerHost(_) => {
                            if let PerHostVarsFile::Loaded(vf) = &*self.vars_file_for(*p, i, host) {
                                push_layer(&mut t, &vf.vars, "vars_files");
                            }
                        }
                        VarsFileEntry::Missing => {}
                    }
                }
            }
        }
        if let Scope::VarsFile(..) = scope {
            push_layer(&mut t, &self.extra_vars, "extra vars");
            return t;
        }
        for role in &roles {
            for vf in &role.vars {
                push_layer(&mut t, &vf.1, &format!("role vars ({})", role.name));
            }
        }
        if let Scope::Role(_, name) = scope
            && let Some(role) = self.book.roles.get(name)
        {
            for vf in &role.vars {
                push_layer(&mut t, &vf.1, &format!("role vars ({})", role.name));
            }
        }
        for p in self.include_plays(scope, host) {
            for inc in self.play_include_vars.get(p).into_iter().flatten() {
                push_layer(&mut t, &inc.vars.vars, "include_vars");
            }
        }
        push_layer(&mut t, &self.extra_vars, "extra vars");
        t
    }

    fn role_deps(&self, name: &str) -> Vec<&crate::playbook::Role> {
        let mut out = Vec::new();
        let mut todo: Vec<&str> = vec![name];
        let mut seen: Vec<String> = Vec::new();
        while let Some(n) = todo.pop() {
            if seen.iter().any(|s| s == n) || seen.len() > 64 {
                continue;
            }
            seen.push(n.to_string());
            if let Some(r) = self.book.roles.get(n) {
                for d in &r.dependencies {
                    if let Some(dr) = self.book.roles.get(&d.name) {
                        out.push(dr);
                        todo.push(&d.name);
                    }
                }
            }
        }
        out.reverse();
        out
    }

    /// Ansible's magic variables.
    pub fn magic(self: &Arc<Self>, scope: &Scope, host: &str, name: &str) -> Option<Value> {
        Some(match name {
            "inventory_hostname" => Value::from(host),
            "inventory_hostname_short" => Value::from(host.split('.').next().unwrap_or(host)),
            "groups" => self.groups_value.clone(),
            "group_names" => {
                let mut g: Vec<String> = self
                    .inventory
                    .host_groups(host)
                    .into_iter()
                    .filter(|g| g != "all")
                    .collect();
                g.sort();
                g.into_iter().map(Value::from).collect()
            }
            "hostvars" => Value::from_object(HostVars {
                data: self.clone(),
                scope: scope.clone(),
            }),
            "playbook_dir" => Value::from(self.playbook_dir.as_ref()?.display().to_string()),
            "role_path" | "role_name" => {
                let Scope::Role(_, r) = scope else {
                    return None;
                };
                let role = self.book.roles.get(r)?;
                if name == "role_name" {
                    Value::from(role.name.clone())
                } else {
                    Value::from(role.abs.display().to_string())
                }
            }
            "ansible_play_hosts" | "ansible_play_batch" | "play_hosts" => {
                let p = match scope {
                    Scope::Play(p) | Scope::Role(p, _) | Scope::VarsFile(p, _) => *p,
                    Scope::Host => return None,
                };
                self.play_hosts
                    .get(p)?
                    .iter()
                    .map(|h| Value::from(h.as_str()))
                    .collect()
            }
            _ => return None,
        })
    }
}
