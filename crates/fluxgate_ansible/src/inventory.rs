//! Inventories: YAML and INI files, directories of them, nested groups, host ranges and
//! `ansible_group_priority`, read the way ansible-core's `yaml` and `ini` plugins read them.

// Quote-scanning state machines keep one arm per state, even where two act alike.
#![allow(clippy::match_same_arms)]

use fluxgate_diagnostics::Annotate;
use std::path::Path;

use fluxgate_diagnostics::Location;

use crate::problem::{Problem, ProblemKind};
use fluxgate_yaml::{Node, Schema, Value, parse_stream};
use indexmap::IndexMap;

use crate::VarMap;

/// Upper bound on the hosts one range pattern may expand to, so that `h[1:999999999]`
/// cannot exhaust memory. A pattern past it is a finding (never cut silently).
pub const MAX_RANGE: usize = 10_000;

/// Upper bound on the hosts of a whole inventory (all files, all ranges): three ranges of
/// 4,000 hosts each pass [`MAX_RANGE`] one by one. Past it, a finding.
pub const MAX_HOSTS: usize = 10_000;

/// [`expand_hostname`], reporting a pattern that expands past [`MAX_RANGE`] at `loc`, and
/// keeping the inventory under [`MAX_HOSTS`] (reported once, where it is passed).
fn expand_checked(
    inv: &mut Inventory,
    pattern: &str,
    loc: &Location,
    diags: &mut Vec<Problem>,
) -> Vec<String> {
    let mut hosts = expand_hostname(pattern);
    let mut room = MAX_HOSTS.saturating_sub(inv.hosts.len());
    let before = hosts.len();
    hosts.retain(|h| {
        if inv.hosts.contains_key(h) {
            true
        } else if room > 0 {
            room -= 1;
            true
        } else {
            false
        }
    });
    if hosts.len() < before && !inv.capped {
        inv.capped = true;
        diags.push(Problem::new(
            ProblemKind::Invalid,
            format!(
                "the inventory has more than {MAX_HOSTS} hosts (at `{pattern}`): fluxgate checks \
                 only the first {MAX_HOSTS}, so this inventory is not fully checked"
            ),
            Some(loc.clone()),
        ));
    }
    if before >= MAX_RANGE {
        diags.push(Problem::new(
            ProblemKind::Invalid,
            format!(
                "host range `{pattern}` expands to {MAX_RANGE} hosts or more: fluxgate checks \
                 only the first {MAX_RANGE}, so this inventory is not fully checked"
            ),
            Some(loc.clone()),
        ));
    }
    hosts
}

/// How a representative host's name starts; the group's name follows.
pub const REPRESENTATIVE_PREFIX: &str = "representative-of-";

/// One host: the variables set on it in inventory files and its direct groups.
#[derive(Clone, Debug)]
pub struct Host {
    pub name: String,
    pub vars: VarMap,
    /// Where the host was first declared.
    pub loc: Location,
    /// A stand-in that fluxgate added for a group of an inventory without hosts (a template
    /// repository): its variables are the group's, and a variable nobody defines renders as
    /// [`crate::symbolic`] instead of failing.
    pub representative: bool,
}

/// One group, with its direct members.
#[derive(Clone, Debug, Default)]
pub struct Group {
    pub name: String,
    pub vars: VarMap,
    pub children: Vec<String>,
    pub parents: Vec<String>,
    pub hosts: Vec<String>,
    pub loc: Option<Location>,
}

/// A parsed inventory (all sources merged).
#[derive(Clone, Debug, Default)]
pub struct Inventory {
    pub hosts: IndexMap<String, Host>,
    pub groups: IndexMap<String, Group>,
    /// [`MAX_HOSTS`] was reached (and reported).
    pub capped: bool,
    /// (group, host) pairs of `groups[..].hosts`, so that adding a host stays linear.
    members: std::collections::HashSet<(String, String)>,
}

impl Inventory {
    fn group_mut(&mut self, name: &str) -> &mut Group {
        self.groups
            .entry(name.to_string())
            .or_insert_with(|| Group {
                name: name.to_string(),
                ..Group::default()
            })
    }

    fn add_host(&mut self, name: &str, loc: &Location) -> &mut Host {
        self.hosts.entry(name.to_string()).or_insert_with(|| Host {
            name: name.to_string(),
            vars: VarMap::default(),
            loc: loc.clone(),
            representative: false,
        })
    }

    /// Adds one representative host to each of `groups` that has no child group (creating
    /// the group when only its `group_vars` name it), for an inventory without hosts. Returns
    /// the groups that got one; the host is [`REPRESENTATIVE_PREFIX`] + the group's name.
    pub fn add_representatives(&mut self, groups: &[String], loc: &Location) -> Vec<String> {
        let mut added = Vec::new();
        for g in groups {
            if g == "all" || g == "ungrouped" {
                continue;
            }
            if self.groups.get(g).is_some_and(|x| !x.children.is_empty()) {
                continue;
            }
            let name = format!("{REPRESENTATIVE_PREFIX}{g}");
            self.add_host(&name, loc).representative = true;
            self.add_host_to_group(&name, g);
            added.push(g.clone());
        }
        self.reconcile();
        added
    }

    fn add_host_to_group(&mut self, host: &str, group: &str) {
        if self.members.insert((group.to_string(), host.to_string())) {
            self.group_mut(group).hosts.push(host.to_string());
        }
    }

    fn add_child(&mut self, parent: &str, child: &str) {
        if parent == child {
            return;
        }
        let p = self.group_mut(parent);
        if !p.children.iter().any(|c| c == child) {
            p.children.push(child.to_string());
        }
        let c = self.group_mut(child);
        if !c.parents.iter().any(|x| x == parent) {
            c.parents.push(parent.to_string());
        }
    }

    /// Makes `all` and `ungrouped` exist and attaches parentless groups to `all`, as
    /// ansible-core's `reconcile_inventory` does.
    pub fn reconcile(&mut self) {
        self.group_mut("all");
        self.group_mut("ungrouped");
        let orphans: Vec<String> = self
            .groups
            .values()
            .filter(|g| g.name != "all" && g.parents.is_empty())
            .map(|g| g.name.clone())
            .collect();
        for g in orphans {
            self.add_child("all", &g);
        }
        // Linear in the hosts: a set of those in a real group, one pass over `ungrouped`.
        let grouped: std::collections::HashSet<&String> = self
            .groups
            .values()
            .filter(|g| g.name != "all" && g.name != "ungrouped")
            .flat_map(|g| g.hosts.iter())
            .collect();
        let hosts: Vec<String> = self
            .hosts
            .keys()
            .filter(|h| !grouped.contains(h))
            .cloned()
            .collect();
        let eligible: std::collections::HashSet<&String> = hosts.iter().collect();
        let ungrouped = self.group_mut("ungrouped");
        ungrouped.hosts.retain(|h| eligible.contains(h));
        let present: std::collections::HashSet<String> = ungrouped.hosts.iter().cloned().collect();
        for h in hosts {
            if !present.contains(&h) {
                ungrouped.hosts.push(h.clone());
            }
        }
        let pairs: Vec<(String, String)> = ungrouped
            .hosts
            .iter()
            .map(|h| ("ungrouped".to_string(), h.clone()))
            .collect();
        self.members.retain(|(g, _)| g != "ungrouped");
        self.members.extend(pairs);
    }

    /// Depth of a group: the longest path from `all` (`all` is 0), cycles cut.
    #[must_use]
    pub fn depth(&self, group: &str) -> usize {
        fn walk(inv: &Inventory, g: &str, seen: &mut Vec<String>) -> usize {
            if seen.iter().any(|s| s == g) || seen.len() > 64 {
                return 0;
            }
            let Some(grp) = inv.groups.get(g) else {
                return 0;
            };
            seen.push(g.to_string());
            let d = grp
                .parents
                .iter()
                .map(|p| walk(inv, p, seen) + 1)
                .max()
                .unwrap_or(0);
            seen.pop();
            d
        }
        walk(self, group, &mut Vec::new())
    }

    /// `ansible_group_priority` of a group (default 1).
    #[must_use]
    pub fn priority(&self, group: &str) -> i64 {
        self.groups
            .get(group)
            .and_then(|g| g.vars.get("ansible_group_priority"))
            .and_then(|n| match &n.value {
                Value::Int(i) => Some(*i),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            })
            .unwrap_or(1)
    }

    /// Every group the host belongs to, directly or through a parent, `all` included.
    #[must_use]
    pub fn host_groups(&self, host: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut todo: Vec<String> = self
            .groups
            .values()
            .filter(|g| self.members.contains(&(g.name.clone(), host.to_string())))
            .map(|g| g.name.clone())
            .collect();
        while let Some(g) = todo.pop() {
            if out.contains(&g) {
                continue;
            }
            if let Some(grp) = self.groups.get(&g) {
                todo.extend(grp.parents.iter().cloned());
            }
            out.push(g);
        }
        if !out.iter().any(|g| g == "all") {
            out.push("all".to_string());
        }
        out
    }

    /// The host's groups other than `all`, in the order their variables apply: by depth, then
    /// `ansible_group_priority`, then name (ansible-core's `sort_groups`).
    #[must_use]
    pub fn sorted_host_groups(&self, host: &str) -> Vec<String> {
        let mut gs: Vec<String> = self
            .host_groups(host)
            .into_iter()
            .filter(|g| g != "all")
            .collect();
        gs.sort_by(|a, b| {
            (self.depth(a), self.priority(a), a.as_str()).cmp(&(
                self.depth(b),
                self.priority(b),
                b.as_str(),
            ))
        });
        gs
    }

    /// The hosts of a group and of its descendants, in the order ansible-core lists them.
    #[must_use]
    pub fn group_hosts(&self, group: &str) -> Vec<String> {
        if group == "all" {
            return self.hosts.keys().cloned().collect();
        }
        let mut order: Vec<String> = vec![group.to_string()];
        let mut i = 0;
        while i < order.len() && order.len() < 100_000 {
            if let Some(g) = self.groups.get(&order[i]) {
                for c in &g.children {
                    if !order.contains(c) {
                        order.push(c.clone());
                    }
                }
            }
            i += 1;
        }
        let mut hosts: Vec<String> = Vec::new();
        let mut seen: std::collections::HashSet<&String> = std::collections::HashSet::new();
        for g in &order {
            if let Some(grp) = self.groups.get(g) {
                for h in &grp.hosts {
                    if seen.insert(h) {
                        hosts.push(h.clone());
                    }
                }
            }
        }
        hosts
    }
}

/// Expands a host pattern with ranges: `k3s-[1:3]`, `db[01:10:2]`, `node-[a:c]`.
#[must_use]
pub fn expand_hostname(pattern: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (pattern.find('['), pattern.find(']')) else {
        return vec![pattern.to_string()];
    };
    if close < open {
        return vec![pattern.to_string()];
    }
    let head = &pattern[..open];
    let body = &pattern[open + 1..close];
    let tail = &pattern[close + 1..];
    let parts: Vec<&str> = body.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return vec![pattern.to_string()];
    }
    let step: usize = match parts.get(2) {
        Some(s) => match s.trim().parse() {
            Ok(n) if n > 0 => n,
            _ => return vec![pattern.to_string()],
        },
        None => 1,
    };
    let (beg, end) = (parts[0].trim(), parts[1].trim());
    let mut items: Vec<String> = Vec::new();
    if let (Ok(b), Ok(e)) = (
        if beg.is_empty() {
            Ok(0)
        } else {
            beg.parse::<u64>()
        },
        end.parse::<u64>(),
    ) {
        let width = if beg.len() > 1 && beg.starts_with('0') {
            beg.len()
        } else {
            0
        };
        let mut i = b;
        while i <= e && items.len() < MAX_RANGE {
            items.push(format!("{i:0width$}"));
            i = i.saturating_add(step as u64);
            if i == u64::MAX {
                break;
            }
        }
    } else if beg.len() == 1 && end.len() == 1 {
        let (b, e) = (beg.as_bytes()[0], end.as_bytes()[0]);
        if b.is_ascii_alphabetic() && e.is_ascii_alphabetic() {
            let mut c = b;
            while c <= e {
                items.push((c as char).to_string());
                match c.checked_add(u8::try_from(step).unwrap_or(u8::MAX)) {
                    Some(n) => c = n,
                    None => break,
                }
            }
        }
    } else {
        return vec![pattern.to_string()];
    }
    let mut out = Vec::new();
    for it in items {
        for rest in expand_hostname(tail) {
            out.push(format!("{head}{it}{rest}"));
            if out.len() >= MAX_RANGE {
                return out;
            }
        }
    }
    out
}

/// Whether a file looks like a YAML inventory (by extension or content).
fn is_yaml_name(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yml" | "yaml" | "json")
    )
}

/// Parses one inventory file's text, adding to `inv`. `file` names locations.
pub fn parse_inventory_text(inv: &mut Inventory, file: &str, text: &str, diags: &mut Vec<Problem>) {
    let looks_yaml = is_yaml_name(Path::new(file))
        || text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
            .is_some_and(|l| l == "---" || (l.ends_with(':') && !l.starts_with('[')));
    if looks_yaml {
        parse_yaml(inv, file, text, diags);
    } else {
        parse_ini(inv, file, text, diags);
    }
}

fn parse_yaml(inv: &mut Inventory, file: &str, text: &str, diags: &mut Vec<Problem>) {
    let stream = parse_stream(file, text, Schema::Yaml11);
    diags.extend(
        stream
            .diagnostics
            .into_iter()
            .map(crate::problem::from_yaml),
    );
    let Some(doc) = stream.docs.into_iter().next() else {
        return;
    };
    let Some(map) = doc.as_map() else {
        if !doc.is_null() {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                "an inventory must be a mapping of groups",
                Some(doc.loc.clone()),
            ));
        }
        return;
    };
    for (name, node) in map {
        yaml_group(inv, name, node, None, diags, 0);
    }
}

fn yaml_group(
    inv: &mut Inventory,
    name: &str,
    node: &Node,
    parent: Option<&str>,
    diags: &mut Vec<Problem>,
    depth: usize,
) {
    if depth > 64 {
        diags.push(Problem::new(
            ProblemKind::Invalid,
            format!("inventory group '{name}' is nested too deeply"),
            Some(node.loc.clone()),
        ));
        return;
    }
    {
        let g = inv.group_mut(name);
        if g.loc.is_none() {
            g.loc = Some(node.loc.clone());
        }
    }
    if let Some(p) = parent {
        inv.add_child(p, name);
    }
    let Some(map) = node.as_map() else {
        if !node.is_null() {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("inventory group '{name}' must be a mapping"),
                Some(node.loc.clone()),
            ));
        }
        return;
    };
    for (key, value) in map {
        match key.as_str() {
            "hosts" => match &value.value {
                Value::Map(hosts) => {
                    for (pattern, hvars) in hosts.iter() {
                        for h in expand_checked(inv, pattern, &hvars.loc, diags) {
                            let host = inv.add_host(&h, &hvars.loc);
                            if let Some(vars) = hvars.as_map() {
                                for (k, v) in vars {
                                    host.vars.insert(k.clone(), v.clone());
                                }
                            }
                            inv.add_host_to_group(&h, name);
                        }
                    }
                }
                Value::Null => {}
                _ => diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("'hosts' of group '{name}' must be a mapping"),
                    Some(value.loc.clone()),
                )),
            },
            "vars" => match &value.value {
                Value::Map(vars) => {
                    let g = inv.group_mut(name);
                    for (k, v) in vars.iter() {
                        g.vars.insert(k.clone(), v.clone());
                    }
                }
                Value::Null => {}
                _ => diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("'vars' of group '{name}' must be a mapping"),
                    Some(value.loc.clone()),
                )),
            },
            "children" => match &value.value {
                Value::Map(children) => {
                    for (child, cnode) in children.iter() {
                        yaml_group(inv, child, cnode, Some(name), diags, depth + 1);
                    }
                }
                Value::Null => {}
                _ => diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("'children' of group '{name}' must be a mapping"),
                    Some(value.loc.clone()),
                )),
            },
            other => diags.push(
                Problem::new(
                    ProblemKind::Invalid,
                    format!("unexpected key '{other}' in inventory group '{name}'"),
                    Some(value.loc.clone()),
                )
                .help("a group takes only hosts, vars and children"),
            ),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum IniSection {
    Hosts,
    Vars,
    Children,
}

fn parse_ini(inv: &mut Inventory, file: &str, text: &str, diags: &mut Vec<Problem>) {
    let mut group = "ungrouped".to_string();
    let mut section = IniSection::Hosts;
    for (idx, raw) in text.lines().enumerate() {
        let lineno = u32::try_from(idx + 1).unwrap_or(u32::MAX);
        let loc = Location::new(file, lineno, 1);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') {
            let Some(end) = line.find(']') else {
                diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("invalid section header: {line}"),
                    Some(loc),
                ));
                continue;
            };
            let header = &line[1..end];
            let (name, kind) = match header.split_once(':') {
                Some((n, "vars")) => (n, IniSection::Vars),
                Some((n, "children")) => (n, IniSection::Children),
                Some((n, other)) => {
                    diags.push(Problem::new(
                        ProblemKind::Invalid,
                        format!("unknown section type ':{other}' for group {n}"),
                        Some(loc),
                    ));
                    continue;
                }
                None => (header, IniSection::Hosts),
            };
            group = name.trim().to_string();
            section = kind;
            let g = inv.group_mut(&group);
            if g.loc.is_none() {
                g.loc = Some(loc);
            }
            continue;
        }
        match section {
            IniSection::Hosts => {
                let tokens = shell_split(line);
                let Some((first, rest)) = tokens.split_first() else {
                    continue;
                };
                let mut hvars = VarMap::default();
                for t in rest {
                    match t.split_once('=') {
                        Some((k, v)) => {
                            hvars.insert(k.to_string(), Node::new(ini_literal(v), loc.clone()));
                        }
                        None => diags.push(Problem::new(
                            ProblemKind::Invalid,
                            format!("expected key=value host variable, got '{t}'"),
                            Some(loc.clone()),
                        )),
                    }
                }
                let (name_part, port) = split_port(first);
                for h in expand_checked(inv, name_part, &loc, diags) {
                    let host = inv.add_host(&h, &loc);
                    if let Some(p) = port {
                        host.vars
                            .insert("ansible_port".into(), Node::new(Value::Int(p), loc.clone()));
                    }
                    for (k, v) in &hvars {
                        host.vars.insert(k.clone(), v.clone());
                    }
                    inv.add_host_to_group(&h, &group);
                }
            }
            IniSection::Vars => match line.split_once('=') {
                Some((k, v)) => {
                    let g = inv.group_mut(&group);
                    g.vars.insert(
                        k.trim().to_string(),
                        Node::string(v.trim().to_string(), loc.clone()),
                    );
                }
                None => diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("expected key=value in [{group}:vars], got '{line}'"),
                    Some(loc),
                )),
            },
            IniSection::Children => {
                let child = line.split_whitespace().next().unwrap_or(line).to_string();
                inv.group_mut(&child);
                inv.add_child(&group, &child);
            }
        }
    }
}

/// `host:port`, but not an IPv6 address.
fn split_port(token: &str) -> (&str, Option<i64>) {
    if token.matches(':').count() == 1
        && let Some((h, p)) = token.rsplit_once(':')
        && let Ok(n) = p.parse()
    {
        return (h, Some(n));
    }
    (token, None)
}

/// Splits a line like Python's `shlex.split` with comments (the INI host line reader).
fn shell_split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut has = false;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                has = true;
            }
            None if c == '#' && cur.is_empty() => break,
            None if c.is_whitespace() => {
                if has || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            None => cur.push(c),
        }
    }
    if has || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A host-line value: Python literals (numbers, True/False/None, quoted strings), otherwise
/// the text.
fn ini_literal(v: &str) -> Value {
    match v {
        "True" => return Value::Bool(true),
        "False" => return Value::Bool(false),
        "None" => return Value::Null,
        _ => {}
    }
    if let Ok(i) = v.parse::<i64>() {
        return Value::Int(i);
    }
    if (v.contains('.') || v.contains('e'))
        && let Ok(f) = v.parse::<f64>()
        && v.chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '.')
    {
        return Value::Float(f);
    }
    Value::String(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand() {
        assert_eq!(
            expand_hostname("k3s-[1:3]"),
            vec!["k3s-1", "k3s-2", "k3s-3"]
        );
        assert_eq!(expand_hostname("db[01:03:2]"), vec!["db01", "db03"]);
        assert_eq!(expand_hostname("n[a:c].x"), vec!["na.x", "nb.x", "nc.x"]);
        assert_eq!(expand_hostname("h[1:999999999]").len(), MAX_RANGE);
    }

    /// Issue 26 §4: the cap holds over the whole inventory (three ranges of 4,000 hosts
    /// each pass the per-range bound), and adding hosts stays linear (this took 102 s).
    #[test]
    fn host_cap_is_over_the_whole_inventory() {
        let mut inv = Inventory::default();
        let mut d = Vec::new();
        let text = "all:\n  children:\n    k3s:\n      hosts:\n        a[0001:4000]:\n        b[0001:4000]:\n        c[0001:4000]:\n";
        let start = std::time::Instant::now();
        parse_inventory_text(&mut inv, "hosts.yml", text, &mut d);
        inv.reconcile();
        assert_eq!(inv.hosts.len(), MAX_HOSTS);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message.contains("not fully checked"),
            "{}",
            d[0].message
        );
        assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    }

    #[test]
    fn ranges_past_the_bound_are_a_finding_not_a_silent_cut() {
        for (file, text, line) in [
            ("hosts.ini", "[k3s]\nnode-[1:20000]\n", 2),
            ("hosts.yml", "all:\n  hosts:\n    node-[1:20000]: {}\n", 3),
        ] {
            let mut inv = Inventory::default();
            let mut d = Vec::new();
            parse_inventory_text(&mut inv, file, text, &mut d);
            assert_eq!(d.len(), 1, "{file}: {d:?}");
            assert!(
                d[0].message.contains("not fully checked"),
                "{}",
                d[0].message
            );
            assert_eq!(d[0].location.as_ref().map(|l| l.line), Some(line), "{file}");
        }
        let mut inv = Inventory::default();
        let mut d = Vec::new();
        parse_inventory_text(&mut inv, "hosts.ini", "[k3s]\nnode-[1:300]\n", &mut d);
        assert!(d.is_empty());
    }

    #[test]
    fn ini_groups_children_and_vars() {
        let mut inv = Inventory::default();
        let mut d = Vec::new();
        parse_inventory_text(
            &mut inv,
            "hosts.ini",
            "lone\n[master]\nm[1:2] ansible_host=10.0.0.1 n=5\n[node]\nw1:2222\n[k3s:children]\nmaster\nnode\n[k3s:vars]\nx=yes\n",
            &mut d,
        );
        inv.reconcile();
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(inv.group_hosts("k3s"), vec!["m1", "m2", "w1"]);
        assert_eq!(inv.hosts["m1"].vars["n"].value, Value::Int(5));
        assert_eq!(inv.hosts["w1"].vars["ansible_port"].value, Value::Int(2222));
        assert_eq!(inv.groups["k3s"].vars["x"].as_str(), Some("yes"));
        assert_eq!(inv.group_hosts("ungrouped"), vec!["lone"]);
        assert_eq!(inv.depth("master"), 2);
        assert_eq!(inv.sorted_host_groups("m1"), vec!["k3s", "master"]);
    }

    #[test]
    fn yaml_nested() {
        let mut inv = Inventory::default();
        let mut d = Vec::new();
        parse_inventory_text(
            &mut inv,
            "hosts.yml",
            "all:\n  children:\n    k3s:\n      children:\n        server:\n          hosts:\n            s1: {ansible_host: 1.2.3.4}\n      vars:\n        a: 1\n",
            &mut d,
        );
        inv.reconcile();
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(inv.host_groups("s1").len(), 3);
        assert_eq!(inv.depth("server"), 2);
    }
}
