//! Playbooks: the `import_playbook` tree flattened into the bootstrap order, plays with their
//! roles (meta dependencies first) and statically imported tasks.

// Quote-scanning state machines keep one arm per state, even where two act alike.
#![allow(clippy::match_same_arms)]

use fluxgate_diagnostics::Annotate;
use std::path::{Path, PathBuf};

use fluxgate_diagnostics::Location;

use crate::problem::{Problem, ProblemKind};
use fluxgate_yaml::{Node, Value};
use indexmap::IndexMap;

use crate::VarMap;
use crate::files::Root;

/// Keywords a task may carry besides its module.
const TASK_KEYWORDS: &[&str] = &[
    "name",
    "when",
    "register",
    "changed_when",
    "failed_when",
    "check_mode",
    "become",
    "become_user",
    "become_method",
    "become_flags",
    "tags",
    "vars",
    "loop",
    "loop_control",
    "with_items",
    "with_dict",
    "with_list",
    "with_fileglob",
    "with_first_found",
    "with_together",
    "with_nested",
    "with_sequence",
    "with_subelements",
    "with_random_choice",
    "with_indexed_items",
    "notify",
    "delegate_to",
    "delegate_facts",
    "run_once",
    "ignore_errors",
    "ignore_unreachable",
    "no_log",
    "environment",
    "until",
    "retries",
    "delay",
    "args",
    "diff",
    "any_errors_fatal",
    "async",
    "poll",
    "listen",
    "throttle",
    "timeout",
    "connection",
    "local_action",
    "module_defaults",
    "collections",
    "debugger",
    "remote_user",
    "port",
    "vars_files",
];

/// Keywords a block (or a static import, or a role reference) passes down to its tasks when
/// the task does not set them itself. `when`, `tags` and `vars` are combined instead.
const INHERITED_KEYWORDS: &[&str] = &[
    "check_mode",
    "become",
    "become_user",
    "become_method",
    "become_flags",
    "become_exe",
    "connection",
    "port",
    "remote_user",
    "module_defaults",
    "environment",
    "no_log",
    "run_once",
    "ignore_errors",
    "ignore_unreachable",
    "diff",
    "any_errors_fatal",
    "throttle",
    "timeout",
    "debugger",
    "collections",
    "delegate_to",
    "delegate_facts",
    "notify",
];

/// What an enclosing block, task import or role reference gives the tasks it holds, as
/// Ansible does: conditions are ANDed (outermost first), tags are added, the enclosing vars
/// come before the task's own, other keywords apply when the task leaves them unset.
#[derive(Clone, Debug, Default)]
struct Inherit {
    when: Vec<Node>,
    tags: Vec<Node>,
    vars: VarMap,
    /// Where the enclosing `vars:` was written.
    vars_loc: Option<Location>,
    keywords: VarMap,
}

/// The items of a keyword that may be one value or a list of them.
fn items(n: &Node) -> Vec<Node> {
    match &n.value {
        Value::Seq(s) => s.clone(),
        Value::Null => Vec::new(),
        _ => vec![n.clone()],
    }
}

impl Inherit {
    /// Everything a block or a static import (`import_tasks`, `import_role`, a play's
    /// `roles:` entry) passes down.
    fn all(keywords: &VarMap) -> Inherit {
        let mut out = Inherit {
            when: keywords.get("when").map(items).unwrap_or_default(),
            tags: keywords.get("tags").map(items).unwrap_or_default(),
            vars: keywords
                .get("vars")
                .and_then(Node::as_map)
                .cloned()
                .unwrap_or_default(),
            vars_loc: keywords.get("vars").map(|v| v.loc.clone()),
            keywords: VarMap::default(),
        };
        for k in INHERITED_KEYWORDS {
            if let Some(v) = keywords.get(*k) {
                out.keywords.insert((*k).to_string(), v.clone());
            }
        }
        out
    }

    /// What a dynamic `include_tasks`/`include_role` passes down: its condition (the
    /// included tasks run only when it holds), its vars, and the keywords of `apply:`.
    fn dynamic(keywords: &VarMap, args: &Node) -> Inherit {
        let mut out = args
            .get("apply")
            .and_then(Node::as_map)
            .map(Inherit::all)
            .unwrap_or_default();
        let mut when = keywords.get("when").map(items).unwrap_or_default();
        when.append(&mut out.when);
        out.when = when;
        if let Some(vm) = keywords.get("vars").and_then(Node::as_map) {
            let mut vars = vm.clone();
            for (k, v) in std::mem::take(&mut out.vars) {
                vars.insert(k, v);
            }
            out.vars = vars;
            out.vars_loc = keywords.get("vars").map(|v| v.loc.clone());
        }
        out
    }

    fn is_empty(&self) -> bool {
        self.when.is_empty()
            && self.tags.is_empty()
            && self.vars.is_empty()
            && self.keywords.is_empty()
    }

    fn apply_all(&self, tasks: &mut [Task]) {
        if self.is_empty() {
            return;
        }
        for t in tasks {
            self.apply(t);
        }
    }

    fn apply(&self, task: &mut Task) {
        if let Some(first) = self.when.first() {
            let own = task.when.take();
            let loc = own
                .as_ref()
                .map_or_else(|| first.loc.clone(), |w| w.loc.clone());
            let mut conds = self.when.clone();
            conds.extend(own.as_ref().map(items).unwrap_or_default());
            let node = Node::new(Value::Seq(conds), loc);
            task.keywords.insert("when".into(), node.clone());
            task.when = Some(node);
        }
        if let Some(first) = self.tags.first() {
            let own = task.keywords.get("tags");
            let loc = own.map_or_else(|| first.loc.clone(), |t| t.loc.clone());
            let mut tags = self.tags.clone();
            tags.extend(own.map(items).unwrap_or_default());
            task.keywords
                .insert("tags".into(), Node::new(Value::Seq(tags), loc));
        }
        if let Some(vars_loc) = self.vars_loc.as_ref().filter(|_| !self.vars.is_empty()) {
            let own = task.keywords.get("vars");
            let loc = own.map_or_else(|| vars_loc.clone(), |v| v.loc.clone());
            let mut vars = self.vars.clone();
            for (k, v) in own.and_then(Node::as_map).into_iter().flatten() {
                vars.insert(k.clone(), v.clone());
            }
            task.keywords
                .insert("vars".into(), Node::new(Value::Map(Box::new(vars)), loc));
        }
        for (k, v) in &self.keywords {
            if !task.keywords.contains_key(k) {
                task.keywords.insert(k.clone(), v.clone());
                if k == "check_mode" {
                    task.check_mode = Some(v.clone());
                }
            }
        }
    }
}

/// A statically known `template` task: what it renders and where to.
#[derive(Clone, Debug)]
pub struct TemplateUse {
    /// `src` as written.
    pub src: String,
    /// The file it resolves to, relative to the repository root (None when not found).
    pub resolved: Option<String>,
    pub dest: Option<String>,
}

/// One task, after static imports are expanded.
#[derive(Clone, Debug)]
pub struct Task {
    pub name: Option<String>,
    /// The module as written (`ansible.builtin.command`, `shell`, ...).
    pub module: String,
    pub args: Node,
    pub loc: Location,
    /// The role whose tasks these are, if any.
    pub role: Option<String>,
    pub register: Option<String>,
    pub changed_when: Option<Node>,
    pub check_mode: Option<Node>,
    pub when: Option<Node>,
    /// The remaining keywords (`become`, `delegate_to`, `failed_when`, ...).
    pub keywords: VarMap,
    pub template: Option<TemplateUse>,
}

impl Task {
    /// The module without its collection prefix (`ansible.builtin.shell` → `shell`).
    #[must_use]
    pub fn short_module(&self) -> &str {
        self.module.rsplit('.').next().unwrap_or(&self.module)
    }
}

/// A role reference in a play or in a role's `meta/main.yml`.
#[derive(Clone, Debug)]
pub struct RoleRef {
    pub name: String,
    pub loc: Location,
    /// Role parameters (keys of the reference other than `role`, `name`, `when`, `tags`...).
    pub params: VarMap,
    /// The keywords of the reference (`when`, `tags`, `become`...), which the role's tasks
    /// inherit.
    pub keywords: VarMap,
}

/// A loaded role.
#[derive(Clone, Debug, Default)]
pub struct Role {
    pub name: String,
    /// Path relative to the repository root.
    pub path: String,
    pub abs: PathBuf,
    pub defaults: Vec<(String, VarMap)>,
    pub vars: Vec<(String, VarMap)>,
    pub dependencies: Vec<RoleRef>,
    pub tasks: Vec<Task>,
}

/// One play of the flattened order.
#[derive(Clone, Debug)]
pub struct Play {
    /// The playbook file holding the play, relative to the repository root.
    pub file: String,
    pub loc: Location,
    pub name: Option<String>,
    /// The `hosts` pattern as written.
    pub hosts: String,
    pub vars: VarMap,
    /// `vars_files` entries as written, with their locations.
    pub vars_files: Vec<Node>,
    /// The roles of the play, dependencies first, each once.
    pub roles: Vec<String>,
    /// Role references as written.
    pub role_refs: Vec<RoleRef>,
    /// pre_tasks, role tasks, tasks, post_tasks, in run order.
    pub tasks: Vec<Task>,
    /// The `import_playbook` lines that led here, outermost first.
    pub imported_via: Vec<Location>,
    /// Directory of the playbook file (absolute).
    pub dir: PathBuf,
}

/// The site playbook, flattened.
#[derive(Clone, Debug, Default)]
pub struct Playbook {
    pub plays: Vec<Play>,
    pub roles: IndexMap<String, Role>,
    /// Every playbook file in import order (the entry first).
    pub files: Vec<String>,
}

/// Loads playbooks and roles.
pub struct Loader<'a> {
    pub root: &'a Root,
    pub roles_path: Vec<PathBuf>,
    pub diags: Vec<Problem>,
    pub book: Playbook,
}

impl Loader<'_> {
    /// Loads the entry playbook and everything it imports.
    pub fn load(&mut self, entry: &Path) {
        self.playbook(entry, &mut Vec::new(), 0);
    }

    fn playbook(&mut self, path: &Path, via: &mut Vec<Location>, depth: usize) {
        let rel = self.root.rel(path);
        if depth > 32 || via.len() > 32 {
            self.diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("import_playbook nesting too deep at {rel}"),
                via.last().cloned(),
            ));
            return;
        }
        if !self.root.is_file(path) {
            self.diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("playbook {rel} not found"),
                via.last().cloned().or(Some(Location::file(rel))),
            ));
            return;
        }
        self.book.files.push(rel.clone());
        let Some(doc) = self.root.load_yaml(path, &mut self.diags) else {
            return;
        };
        let Some(items) = doc.as_seq() else {
            if !doc.is_null() {
                self.diags.push(Problem::new(
                    ProblemKind::Invalid,
                    "a playbook must be a list of plays",
                    Some(doc.loc.clone()),
                ));
            }
            return;
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for item in items {
            let import = item
                .get("import_playbook")
                .or_else(|| item.get("ansible.builtin.import_playbook"));
            if let Some(target) = import {
                let Some(t) = target.as_str() else {
                    self.diags.push(Problem::new(
                        ProblemKind::Invalid,
                        "import_playbook needs a file name",
                        Some(target.loc.clone()),
                    ));
                    continue;
                };
                if t.contains("{{") {
                    self.diags.push(Problem::new(
                        ProblemKind::Invalid,
                        format!("templated import_playbook '{t}' cannot be followed statically"),
                        Some(target.loc.clone()),
                    ));
                    continue;
                }
                via.push(target.loc.clone());
                self.playbook(&dir.join(t), via, depth + 1);
                via.pop();
                continue;
            }
            if item.as_map().is_none() {
                self.diags.push(Problem::new(
                    ProblemKind::Invalid,
                    "a play must be a mapping",
                    Some(item.loc.clone()),
                ));
                continue;
            }
            let play = self.play(item, &rel, &dir, via);
            self.book.plays.push(play);
        }
    }

    fn play(&mut self, item: &Node, file: &str, dir: &Path, via: &[Location]) -> Play {
        let hosts = match item.get("hosts").map(|n| &n.value) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Seq(s)) => s
                .iter()
                .filter_map(Node::scalar_text)
                .collect::<Vec<_>>()
                .join(","),
            Some(other) => Node::new(other.clone(), item.loc.clone())
                .scalar_text()
                .unwrap_or_default(),
            None => {
                self.diags.push(Problem::new(
                    ProblemKind::Invalid,
                    "play has no 'hosts'",
                    Some(item.loc.clone()),
                ));
                String::new()
            }
        };
        let vars = item
            .get("vars")
            .and_then(Node::as_map)
            .cloned()
            .unwrap_or_default();
        let vars_files = match item.get("vars_files") {
            Some(n) => match &n.value {
                Value::Seq(s) => s.clone(),
                Value::String(_) => vec![n.clone()],
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        let mut role_refs = Vec::new();
        if let Some(list) = item.get("roles").and_then(Node::as_seq) {
            for r in list {
                if let Some(rr) = self.role_ref(r) {
                    role_refs.push(rr);
                }
            }
        }
        let mut roles = Vec::new();
        let mut tasks = Vec::new();
        self.task_list(item.get("pre_tasks"), dir, None, &mut tasks, &mut roles, 0);
        for rr in &role_refs {
            let inherit = Inherit::all(&rr.keywords);
            self.use_role(&rr.name, &rr.loc, &inherit, dir, &mut roles, &mut tasks, 0);
        }
        self.task_list(item.get("tasks"), dir, None, &mut tasks, &mut roles, 0);
        self.task_list(item.get("post_tasks"), dir, None, &mut tasks, &mut roles, 0);
        Play {
            file: file.to_string(),
            loc: item.loc.clone(),
            name: item.get("name").and_then(Node::scalar_text),
            hosts,
            vars,
            vars_files,
            roles,
            role_refs,
            tasks,
            imported_via: via.to_vec(),
            dir: dir.to_path_buf(),
        }
    }

    fn role_ref(&mut self, r: &Node) -> Option<RoleRef> {
        match &r.value {
            Value::String(s) => Some(RoleRef {
                name: s.clone(),
                loc: r.loc.clone(),
                params: VarMap::default(),
                keywords: VarMap::default(),
            }),
            Value::Map(m) => {
                let name = m
                    .get("role")
                    .or_else(|| m.get("name"))
                    .and_then(Node::as_str)?
                    .to_string();
                let mut params = VarMap::default();
                let mut keywords = VarMap::default();
                for (k, v) in m.iter() {
                    if matches!(k.as_str(), "role" | "name" | "vars") {
                        continue;
                    }
                    if k == "when" || k == "tags" || INHERITED_KEYWORDS.contains(&k.as_str()) {
                        keywords.insert(k.clone(), v.clone());
                    } else {
                        params.insert(k.clone(), v.clone());
                    }
                }
                if let Some(vm) = m.get("vars").and_then(Node::as_map) {
                    for (k, v) in vm {
                        params.insert(k.clone(), v.clone());
                    }
                }
                Some(RoleRef {
                    name,
                    loc: r.loc.clone(),
                    params,
                    keywords,
                })
            }
            _ => {
                self.diags.push(Problem::new(
                    ProblemKind::Invalid,
                    "a role reference must be a name or a mapping",
                    Some(r.loc.clone()),
                ));
                None
            }
        }
    }

    /// Finds a role directory: the roles path from ansible.cfg, then `roles/` beside the
    /// playbook, then the playbook directory itself.
    fn find_role(&self, name: &str, dir: &Path) -> Option<PathBuf> {
        let short = name.rsplit('.').next().unwrap_or(name);
        let mut candidates: Vec<PathBuf> = Vec::new();
        for base in self
            .roles_path
            .iter()
            .map(PathBuf::as_path)
            .chain([dir.join("roles").as_path(), dir])
        {
            candidates.push(base.join(name));
            if short != name {
                candidates.push(base.join(short));
            }
        }
        candidates
            .into_iter()
            .find(|c| self.root.is_dir(c) && !name.contains(".."))
    }

    /// The `requirements.yml` (beside the playbook, in its `roles/` folder, or one or two
    /// folders up, inside the root) that lists role `name` for ansible-galaxy to install, by
    /// `name:` or by `src:` (a Galaxy `namespace.role`), in the list form or under `roles:`.
    fn required_role(&self, name: &str, dir: &Path) -> Option<String> {
        let mut dirs = vec![dir.to_path_buf(), dir.join("roles")];
        let mut up = dir.parent();
        for _ in 0..2 {
            let Some(d) = up else { break };
            dirs.push(d.to_path_buf());
            up = d.parent();
        }
        for d in dirs {
            for file in ["requirements.yml", "requirements.yaml"] {
                let p = d.join(file);
                if !self.root.is_file(&p) {
                    continue;
                }
                let Some(text) = self.root.read(&p) else {
                    continue;
                };
                let stream = fluxgate_yaml::parse_stream(
                    &self.root.rel(&p),
                    &text,
                    fluxgate_yaml::Schema::Yaml11,
                );
                let Some(doc) = stream.docs.first() else {
                    continue;
                };
                let list = doc.get("roles").unwrap_or(doc).as_seq().unwrap_or_default();
                let listed = list.iter().any(|e| {
                    ["name", "src"].iter().any(|k| e.str_at(&[k]) == Some(name))
                        || e.as_str() == Some(name)
                });
                if listed {
                    return Some(self.root.rel(&p));
                }
            }
        }
        None
    }

    /// Loads a role once and adds it (dependencies first) to `roles`, its tasks (with what
    /// the reference passes down) to `tasks`.
    // One argument per piece of the walk's state; bundling them would only move the noise.
    #[allow(clippy::too_many_arguments)]
    fn use_role(
        &mut self,
        name: &str,
        at: &Location,
        inherit: &Inherit,
        dir: &Path,
        roles: &mut Vec<String>,
        tasks: &mut Vec<Task>,
        depth: usize,
    ) {
        if depth > 16 {
            self.diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("role dependencies nest too deeply at role '{name}' (a cycle?)"),
                Some(at.clone()),
            ));
            return;
        }
        if !self.book.roles.contains_key(name) {
            let Some(path) = self.find_role(name, dir) else {
                let p = if let Some(req) = self.required_role(name, dir) {
                    Problem::new(
                        ProblemKind::External,
                        format!(
                            "role '{name}' is installed by ansible-galaxy from {req}, not kept in \
                             the repository: its tasks and defaults are not checked"
                        ),
                        Some(at.clone()),
                    )
                    .help("vendor the role into a roles folder to have its tasks checked")
                } else {
                    Problem::new(
                        ProblemKind::Invalid,
                        format!("role '{name}' not found"),
                        Some(at.clone()),
                    )
                };
                self.diags.push(p);
                return;
            };
            let role = self.load_role(name, &path);
            self.book.roles.insert(name.to_string(), role);
        }
        let Some(role) = self.book.roles.get(name).cloned() else {
            return;
        };
        let mut inner = Vec::new();
        for dep in &role.dependencies {
            let dep_inherit = Inherit::all(&dep.keywords);
            self.use_role(
                &dep.name,
                &dep.loc,
                &dep_inherit,
                dir,
                roles,
                &mut inner,
                depth + 1,
            );
        }
        if !roles.iter().any(|r| r == name) {
            roles.push(name.to_string());
        }
        inner.extend(role.tasks.iter().cloned());
        inherit.apply_all(&mut inner);
        tasks.extend(inner);
    }

    fn load_role(&mut self, name: &str, path: &Path) -> Role {
        let mut role = Role {
            name: name.to_string(),
            path: self.root.rel(path),
            abs: path.to_path_buf(),
            ..Role::default()
        };
        role.defaults = self
            .root
            .load_named_vars(&path.join("defaults"), "main", &mut self.diags);
        role.vars = self
            .root
            .load_named_vars(&path.join("vars"), "main", &mut self.diags);
        for ext in ["main.yml", "main.yaml"] {
            let meta = path.join("meta").join(ext);
            if self.root.is_file(&meta) {
                if let Some(doc) = self.root.load_yaml(&meta, &mut self.diags)
                    && let Some(deps) = doc.get("dependencies").and_then(Node::as_seq)
                {
                    for d in deps {
                        if let Some(r) = self.role_ref(d) {
                            role.dependencies.push(r);
                        }
                    }
                }
                break;
            }
        }
        let mut tasks = Vec::new();
        let mut unused = Vec::new();
        for ext in ["main.yml", "main.yaml"] {
            let main = path.join("tasks").join(ext);
            if self.root.is_file(&main) {
                self.task_file(&main, Some((name, path)), &mut tasks, &mut unused, 0);
                break;
            }
        }
        role.tasks = tasks;
        role
    }

    fn task_file(
        &mut self,
        file: &Path,
        role: Option<(&str, &Path)>,
        tasks: &mut Vec<Task>,
        roles: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > 16 {
            self.diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("task imports nest too deeply at {}", self.root.rel(file)),
                None,
            ));
            return;
        }
        let Some(doc) = self.root.load_yaml(file, &mut self.diags) else {
            return;
        };
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        self.task_list(Some(&doc), &dir, role, tasks, roles, depth + 1);
    }

    fn task_list(
        &mut self,
        list: Option<&Node>,
        dir: &Path,
        role: Option<(&str, &Path)>,
        tasks: &mut Vec<Task>,
        roles: &mut Vec<String>,
        depth: usize,
    ) {
        let Some(items) = list.and_then(Node::as_seq) else {
            return;
        };
        for item in items {
            let Some(map) = item.as_map() else {
                self.diags.push(Problem::new(
                    ProblemKind::Invalid,
                    "a task must be a mapping",
                    Some(item.loc.clone()),
                ));
                continue;
            };
            if map.contains_key("block") {
                let mut inner = Vec::new();
                for key in ["block", "rescue", "always"] {
                    self.task_list(map.get(key), dir, role, &mut inner, roles, depth + 1);
                }
                Inherit::all(map).apply_all(&mut inner);
                tasks.extend(inner);
                continue;
            }
            let Some(task) = self.task(item, dir, role) else {
                continue;
            };
            match task.short_module() {
                "import_tasks" | "include_tasks" => {
                    let file = task
                        .args
                        .as_str()
                        .map(str::to_string)
                        .or_else(|| task.args.str_at(&["file"]).map(str::to_string));
                    if let Some(f) = file.filter(|f| !f.contains("{{")) {
                        let base = role.map_or_else(|| dir.to_path_buf(), |(_, p)| p.join("tasks"));
                        let mut target = base.join(&f);
                        if !self.root.is_file(&target) {
                            target = dir.join(&f);
                        }
                        if self.root.is_file(&target) {
                            let inherit = if task.short_module() == "import_tasks" {
                                Inherit::all(&task.keywords)
                            } else {
                                Inherit::dynamic(&task.keywords, &task.args)
                            };
                            tasks.push(task);
                            let mut inner = Vec::new();
                            self.task_file(&target, role, &mut inner, roles, depth + 1);
                            inherit.apply_all(&mut inner);
                            tasks.extend(inner);
                        } else {
                            self.diags.push(Problem::new(
                                ProblemKind::Invalid,
                                format!("imported task file '{f}' not found"),
                                Some(task.loc.clone()),
                            ));
                            tasks.push(task);
                        }
                    } else {
                        tasks.push(task);
                    }
                }
                "import_role" | "include_role" => {
                    let name = task.args.str_at(&["name"]).map(str::to_string);
                    let loc = task.loc.clone();
                    let inherit = if task.short_module() == "import_role" {
                        Inherit::all(&task.keywords)
                    } else {
                        Inherit::dynamic(&task.keywords, &task.args)
                    };
                    tasks.push(task);
                    if let Some(n) = name.filter(|n| !n.contains("{{")) {
                        self.use_role(&n, &loc, &inherit, dir, roles, tasks, depth + 1);
                    }
                }
                _ => tasks.push(task),
            }
        }
    }

    fn task(&mut self, item: &Node, dir: &Path, role: Option<(&str, &Path)>) -> Option<Task> {
        let map = item.as_map()?;
        let mut module = None;
        let mut keywords = VarMap::default();
        for (k, v) in map {
            if TASK_KEYWORDS.contains(&k.as_str()) {
                keywords.insert(k.clone(), v.clone());
            } else if module.is_none() {
                module = Some((k.clone(), v.clone()));
            } else {
                keywords.insert(k.clone(), v.clone());
            }
        }
        let Some((module, mut args)) = module else {
            self.diags.push(Problem::new(
                ProblemKind::Invalid,
                "task has no module",
                Some(item.loc.clone()),
            ));
            return None;
        };
        if let (Value::String(s), true) = (&args.value, is_free_form_kv(&module)) {
            args = kv_args(s, &args.loc);
        }
        let take = |k: &str| keywords.get(k).cloned();
        let template = if matches!(module.rsplit('.').next(), Some("template")) {
            args.str_at(&["src"]).map(|src| TemplateUse {
                src: src.to_string(),
                resolved: self.resolve_template(src, dir, role),
                dest: args.str_at(&["dest"]).map(str::to_string),
            })
        } else {
            None
        };
        Some(Task {
            name: map.get("name").and_then(Node::scalar_text),
            register: take("register").and_then(|n| n.scalar_text()),
            changed_when: take("changed_when"),
            check_mode: take("check_mode"),
            when: take("when"),
            template,
            module,
            args,
            loc: item.loc.clone(),
            role: role.map(|(n, _)| n.to_string()),
            keywords,
        })
    }

    /// A template `src`: the role's `templates/`, the role, the playbook's `templates/`, the
    /// playbook directory.
    fn resolve_template(
        &self,
        src: &str,
        dir: &Path,
        role: Option<(&str, &Path)>,
    ) -> Option<String> {
        if src.contains("{{") {
            return None;
        }
        let mut cands = Vec::new();
        if let Some((_, r)) = role {
            cands.push(r.join("templates").join(src));
            cands.push(r.join(src));
        }
        cands.push(dir.join("templates").join(src));
        cands.push(dir.join(src));
        cands
            .into_iter()
            .find(|c| self.root.is_file(c))
            .map(|c| self.root.rel(&c))
    }
}

fn is_free_form_kv(module: &str) -> bool {
    !matches!(
        module.rsplit('.').next(),
        Some(
            "command"
                | "shell"
                | "raw"
                | "script"
                | "import_tasks"
                | "include_tasks"
                | "include_vars"
                | "meta"
        )
    )
}

/// `key=value key2="v 2"` module arguments as a mapping; other text is left as it is.
fn kv_args(s: &str, loc: &Location) -> Node {
    let mut map = VarMap::default();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut parts = Vec::new();
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c.is_whitespace() => {
                if !cur.is_empty() {
                    parts.push(std::mem::take(&mut cur));
                }
            }
            None => cur.push(c),
        }
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    for p in parts {
        match p.split_once('=') {
            Some((k, v)) => {
                map.insert(k.to_string(), Node::string(v, loc.clone()));
            }
            None => return Node::string(s, loc.clone()),
        }
    }
    Node::new(Value::Map(Box::new(map)), loc.clone())
}
