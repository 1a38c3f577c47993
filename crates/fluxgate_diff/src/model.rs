//! The comparison itself: both sides' environments paired by name, their objects by identity
//! (API group, kind, namespace, name), then leaf by leaf.

use std::collections::{BTreeMap, BTreeSet};

use fluxgate_diagnostics::Location;
use fluxgate_flux::tree::is_flux_kustomization;
use fluxgate_model::{Environment, Release};
use fluxgate_yaml::{Node, Value};

use crate::leaves::{leaves, line_changes, show};
use crate::{
    Category, CrdSummary, EnvDiff, FieldChange, HostChange, ImageChange, ObjectChange,
    ReleaseChange, Report, Source, Status,
};

/// Compares the environments of the base with those of the head.
#[must_use]
pub fn diff(base: &[Environment], head: &[Environment]) -> Report {
    diff_rooted(base, head, None)
}

/// [`diff`], where the two sides were read from different folders `(base, head)`: a value
/// that holds its side's folder (Ansible's `inventory_dir`, a path a role default derives
/// from `playbook_dir`) is compared with that folder replaced by the head's.
#[must_use]
pub fn diff_rooted(
    base: &[Environment],
    head: &[Environment],
    roots: Option<(&str, &str)>,
) -> Report {
    let mut report = Report::default();
    for h in head {
        match base.iter().find(|b| b.name() == h.name()) {
            Some(b) => report.environments.push(diff_env(b, h, roots)),
            None => report.environments_added.push(h.name().to_string()),
        }
    }
    report.environments_removed = base
        .iter()
        .filter(|b| !head.iter().any(|h| h.name() == b.name()))
        .map(|b| b.name().to_string())
        .collect();
    report
}

/// An object's identity across renders: the API group (not the version, so that a version
/// bump is a change), kind, namespace and name.
type Key = (String, String, Option<String>, String);

/// `file:line` in a repository.
type At = (String, u32);
/// A `${VAR}` use: the variable, where its value was set, and whether it is encrypted.
type Use = (String, Location, bool);
/// A variable's definition used: the variable, where `${VAR}` was written, the leaf's path,
/// and whether it is encrypted.
type Definition = (String, Location, String, bool);

/// One side of an environment, indexed.
struct Side<'a> {
    env: &'a Environment,
    /// Object -> (object, the Kustomization that renders it).
    objects: BTreeMap<Key, (&'a Node, String)>,
    /// `file:line` of each `${VAR}` -> the variable and where its value was set.
    substituted: BTreeMap<At, Vec<Use>>,
    /// `file:line` where a variable's value was set -> its uses: the variable, where
    /// `${VAR}` was written and the path of the leaf (a substituted leaf is located at the
    /// value's definition).
    definitions: BTreeMap<At, Vec<Definition>>,
    /// Where the values of Secrets are written: a value substituted from there is secret.
    secret_places: BTreeSet<At>,
}

impl<'a> Side<'a> {
    fn new(env: &'a Environment) -> Side<'a> {
        let mut objects = BTreeMap::new();
        let mut insert = |obj: &'a Node, ks: &str| {
            let mut key = key_of(obj);
            // Two objects of one identity (a render defect of its own): keep both apart.
            while objects.contains_key(&key) {
                key.3.push('\'');
            }
            objects.insert(key, (obj, ks.to_string()));
        };
        for obj in &env.tree.entry_objects {
            insert(obj, "(entry)");
        }
        let mut substituted: BTreeMap<At, Vec<Use>> = BTreeMap::new();
        let mut definitions: BTreeMap<At, Vec<Definition>> = BTreeMap::new();
        for k in &env.tree.kustomizations {
            let id = k.id();
            for obj in &k.objects {
                insert(obj, &id);
            }
            for s in &k.substituted {
                substituted
                    .entry((s.consumer.file.to_string(), s.consumer.line))
                    .or_default()
                    .push((s.var.clone(), s.definition.clone(), s.opaque));
                definitions
                    .entry((s.definition.file.to_string(), s.definition.line))
                    .or_default()
                    .push((s.var.clone(), s.consumer.clone(), s.path.clone(), s.opaque));
            }
        }
        // What the releases' charts install, owned by their release.
        for rel in env.releases.values() {
            if let Some(installed) = &rel.installed {
                let owner = format!("HelmRelease {}", rel.id);
                for obj in &installed.objects {
                    insert(obj, &owner);
                }
            }
        }
        let mut secret_places = BTreeSet::new();
        for (_, (obj, _)) in objects.iter().filter(|(_, (o, _))| is_secret(o)) {
            for field in ["data", "stringData"] {
                if let Some(m) = obj.get(field).and_then(Node::as_map) {
                    for v in m.values() {
                        secret_places.insert((v.loc.file.to_string(), v.loc.line));
                    }
                }
            }
        }
        Side {
            env,
            objects,
            substituted,
            definitions,
            secret_places,
        }
    }

    /// Where a leaf of this side was set, with the substitution variable that produced it.
    /// `path` is the leaf's path in its object.
    fn source(&self, node: &Node, path: &str) -> (Source, bool) {
        let at = (node.loc.file.to_string(), node.loc.line);
        // A leaf substituted whole is located at its variable's definition: its source is
        // where `${VAR}` was written, through the variable.
        if let Some(uses) = self.definitions.get(&at) {
            let want = normalise_path(path);
            if let Some((var, consumer, _, opaque)) =
                uses.iter().find(|(_, _, p, _)| normalise_path(p) == want)
            {
                let def = if node.loc.line == 0 {
                    node.loc.file.to_string()
                } else {
                    format!("{}:{}", node.loc.file, node.loc.line)
                };
                let secret = *opaque || self.secret_places.contains(&at);
                return (
                    Source {
                        file: consumer.file.to_string(),
                        line: consumer.line,
                        via: Some(format!("${{{var}}} set at {def}")),
                    },
                    secret,
                );
            }
        }
        let subs = self.substituted.get(&at);
        let secret = subs.is_some_and(|s| {
            s.iter().any(|(_, def, opaque)| {
                *opaque
                    || self
                        .secret_places
                        .contains(&(def.file.to_string(), def.line))
            })
        });
        let via = subs.map(|s| {
            let vars: Vec<String> = s
                .iter()
                .map(|(var, def, _)| {
                    if def.file.is_empty() {
                        format!("${{{var}}}")
                    } else if def.line == 0 {
                        format!("${{{var}}} set at {}", def.file)
                    } else {
                        format!("${{{var}}} set at {}:{}", def.file, def.line)
                    }
                })
                .collect();
            vars.join(", ")
        });
        (
            Source {
                file: node.loc.file.to_string(),
                line: node.loc.line,
                via,
            },
            secret,
        )
    }
}

fn key_of(obj: &Node) -> Key {
    let api = obj.str_at(&["apiVersion"]).unwrap_or("");
    let group = api.rsplit_once('/').map_or("", |(g, _)| g);
    (
        group.to_string(),
        obj.str_at(&["kind"]).unwrap_or("").to_string(),
        obj.str_at(&["metadata", "namespace"]).map(str::to_string),
        obj.str_at(&["metadata", "name"]).unwrap_or("").to_string(),
    )
}

fn is_secret(obj: &Node) -> bool {
    obj.str_at(&["kind"]) == Some("Secret") && obj.str_at(&["apiVersion"]).is_none_or(|a| a == "v1")
}

fn is_helm_release(obj: &Node) -> bool {
    obj.str_at(&["kind"]) == Some("HelmRelease")
        && obj
            .str_at(&["apiVersion"])
            .is_some_and(|a| a.starts_with("helm.toolkit.fluxcd.io/"))
}

fn is_crd(obj: &Node) -> bool {
    obj.str_at(&["kind"]) == Some("CustomResourceDefinition")
}

fn category(obj: &Node) -> Category {
    if is_flux_kustomization(obj) {
        Category::Kustomization
    } else if is_helm_release(obj) {
        Category::HelmRelease
    } else if is_crd(obj) {
        Category::Crd
    } else {
        Category::Object
    }
}

fn diff_env(base: &Environment, head: &Environment, roots: Option<(&str, &str)>) -> EnvDiff {
    let b = Side::new(base);
    let h = Side::new(head);
    let mut out = EnvDiff {
        name: head.name().to_string(),
        ..EnvDiff::default()
    };
    let keys: BTreeSet<&Key> = b.objects.keys().chain(h.objects.keys()).collect();
    for key in keys {
        let change = match (b.objects.get(key), h.objects.get(key)) {
            (None, Some((obj, ks))) => Some(whole(obj, ks, Status::Added, &h)),
            (Some((obj, ks)), None) => Some(whole(obj, ks, Status::Removed, &b)),
            (Some((old, _)), Some((new, ks))) => changed(old, new, ks, &b, &h),
            (None, None) => None,
        };
        out.objects.extend(change);
        let (old, new) = (
            b.objects.get(key).map(|(o, _)| *o),
            h.objects.get(key).map(|(o, _)| *o),
        );
        out.images.extend(images(old, new));
    }
    out.objects.sort_by(|x, y| {
        (x.category, &x.kind, &x.namespace, &x.name).cmp(&(
            y.category,
            &y.kind,
            &y.namespace,
            &y.name,
        ))
    });
    out.releases = releases(base, head, &b, &h);
    out.hosts = hosts(base, head, roots);
    out
}

/// An object added or removed: its identity, and for a Kustomization what it renders.
fn whole(obj: &Node, ks: &str, status: Status, side: &Side) -> ObjectChange {
    let mut change = object_change(obj, ks, status);
    if is_crd(obj) {
        let (versions, fields) = crd_shape(obj);
        let mut summary = CrdSummary::default();
        if status == Status::Added {
            summary.versions_new = versions;
            summary.fields_added = fields;
        } else {
            summary.versions_old = versions;
            summary.fields_removed = fields;
        }
        change.crd = Some(summary);
    }
    if let Some(n) = rendered_count(obj, side) {
        change.notes.push(format!("renders {n} objects"));
    }
    change
}

fn object_change(obj: &Node, ks: &str, status: Status) -> ObjectChange {
    let (_, kind, namespace, name) = key_of(obj);
    ObjectChange {
        category: category(obj),
        api_version: obj.str_at(&["apiVersion"]).unwrap_or("").to_string(),
        kind,
        namespace,
        name,
        status,
        kustomization: ks.to_string(),
        file: obj.loc.file.to_string(),
        fields: Vec::new(),
        crd: None,
        notes: Vec::new(),
    }
}

/// The objects a Flux Kustomization object renders on a side, when it was rendered.
fn rendered_count(obj: &Node, side: &Side) -> Option<usize> {
    if !is_flux_kustomization(obj) {
        return None;
    }
    let ns = obj
        .str_at(&["metadata", "namespace"])
        .unwrap_or("flux-system");
    let name = obj.str_at(&["metadata", "name"])?;
    side.env
        .tree
        .kustomizations
        .iter()
        .find(|k| k.namespace == ns && k.name == name)
        .map(|k| k.objects.len())
}

fn build_failure(obj: &Node, side: &Side) -> Option<String> {
    let ns = obj
        .str_at(&["metadata", "namespace"])
        .unwrap_or("flux-system");
    let name = obj.str_at(&["metadata", "name"])?;
    side.env
        .tree
        .kustomizations
        .iter()
        .find(|k| k.namespace == ns && k.name == name)
        .and_then(|k| k.failure.clone())
}

/// Fields a dedicated section reports instead of the leaf list.
fn covered_elsewhere(obj: &Node, path: &str) -> bool {
    (is_helm_release(obj)
        && (path == "spec.values"
            || path.starts_with("spec.values.")
            || path.starts_with("spec.values[")))
        || (is_crd(obj) && (path.starts_with("spec.versions")))
}

fn changed(old: &Node, new: &Node, ks: &str, b: &Side, h: &Side) -> Option<ObjectChange> {
    let secret = is_secret(new) || is_secret(old);
    let mut change = object_change(new, ks, Status::Changed);
    change.fields = field_changes(old, new, b, h, secret, |p| covered_elsewhere(new, p));
    if is_crd(new) {
        let (vo, fo) = crd_shape(old);
        let (vn, fn_) = crd_shape(new);
        if vo != vn || fo != fn_ {
            let fo_set: BTreeSet<&String> = fo.iter().collect();
            let fn_set: BTreeSet<&String> = fn_.iter().collect();
            change.crd = Some(CrdSummary {
                fields_added: fn_
                    .iter()
                    .filter(|f| !fo_set.contains(f))
                    .cloned()
                    .collect(),
                fields_removed: fo.iter().filter(|f| !fn_set.contains(f)).cloned().collect(),
                versions_old: vo,
                versions_new: vn,
            });
        }
    }
    if is_flux_kustomization(new) {
        let (was, now) = (rendered_count(old, b), rendered_count(new, h));
        if was != now {
            change.notes.push(format!(
                "renders {} objects (was {})",
                now.map_or_else(|| "no".to_string(), |n| n.to_string()),
                was.map_or_else(|| "none".to_string(), |n| n.to_string())
            ));
        }
        match (build_failure(old, b), build_failure(new, h)) {
            (None, Some(f)) => change.notes.push(format!("now fails to build: {f}")),
            (Some(_), None) => change.notes.push("builds again".to_string()),
            _ => {}
        }
    }
    if change.fields.is_empty() && change.crd.is_none() && change.notes.is_empty() {
        return None;
    }
    Some(change)
}

/// The leaves that differ between two versions of an object (or of values), each with its
/// head origin. `secret`: the object is a Secret, so its `data`/`stringData` values are not
/// carried.
fn field_changes(
    old: &Node,
    new: &Node,
    b: &Side,
    h: &Side,
    secret: bool,
    skip: impl Fn(&str) -> bool,
) -> Vec<FieldChange> {
    let mut ol = Vec::new();
    leaves(old, "", &mut ol);
    let mut nl = Vec::new();
    leaves(new, "", &mut nl);
    let old_map: BTreeMap<&str, &Node> = ol.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    let new_paths: BTreeSet<&str> = nl.iter().map(|(p, _)| p.as_str()).collect();
    let mut out = Vec::new();
    let is_secret_value = |p: &str| {
        secret
            && (p.starts_with("data.")
                || p.starts_with("data[")
                || p.starts_with("stringData.")
                || p.starts_with("stringData["))
    };
    for (path, n) in &nl {
        if skip(path) {
            continue;
        }
        match old_map.get(path.as_str()) {
            Some(o) if same(o, n) => {}
            o => {
                let (src, sub_secret) = h.source(n, path);
                let base = o.map(|o| b.source(o, path));
                let hidden =
                    is_secret_value(path) || sub_secret || base.as_ref().is_some_and(|(_, s)| *s);
                out.push(field(
                    path,
                    o.copied(),
                    Some(n),
                    Some(src),
                    base.map(|(s, _)| s),
                    hidden,
                ));
            }
        }
    }
    for (path, o) in &ol {
        if skip(path) || new_paths.contains(path.as_str()) {
            continue;
        }
        let (src, sub_secret) = b.source(o, path);
        let hidden = is_secret_value(path) || sub_secret;
        out.push(field(path, Some(o), None, None, Some(src), hidden));
    }
    out
}

/// Equal values, ints and floats as JSON compares them.
fn same(a: &Node, b: &Node) -> bool {
    a == b
}

fn field(
    path: &str,
    old: Option<&Node>,
    new: Option<&Node>,
    origin: Option<Source>,
    base_origin: Option<Source>,
    secret: bool,
) -> FieldChange {
    let status = match (old, new) {
        (None, _) => Status::Added,
        (_, None) => Status::Removed,
        _ => Status::Changed,
    };
    let text = |n: &Node| n.as_str().filter(|s| s.contains('\n')).map(str::to_string);
    let lines = match (old.and_then(text), new.and_then(text)) {
        _ if secret => Vec::new(),
        (Some(a), Some(b)) => line_changes(&a, &b),
        _ => Vec::new(),
    };
    FieldChange {
        path: path.to_string(),
        status,
        old: if secret { None } else { old.map(show) },
        new: if secret { None } else { new.map(show) },
        origin: origin.or_else(|| base_origin.clone()),
        base_origin,
        secret,
        lines,
    }
}

/// A CRD's version names and its schema's field paths (`v1.spec.size`).
fn crd_shape(obj: &Node) -> (Vec<String>, Vec<String>) {
    let mut versions = Vec::new();
    let mut fields = Vec::new();
    for v in obj
        .path(&["spec", "versions"])
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        let name = v.str_at(&["name"]).unwrap_or("?").to_string();
        if let Some(schema) = v.path(&["schema", "openAPIV3Schema"]) {
            schema_fields(schema, &name, &mut fields);
        }
        versions.push(name);
    }
    (versions, fields)
}

fn schema_fields(schema: &Node, prefix: &str, out: &mut Vec<String>) {
    if let Some(props) = schema.get("properties").and_then(Node::as_map) {
        for (k, v) in props {
            let p = format!("{prefix}.{k}");
            out.push(p.clone());
            schema_fields(v, &p, out);
        }
    }
    if let Some(items) = schema.get("items") {
        schema_fields(items, &format!("{prefix}[]"), out);
    }
}

/// The images of an object's containers, by container (`initContainers/name`).
fn container_images(obj: &Node) -> BTreeMap<String, String> {
    fn walk(n: &Node, out: &mut BTreeMap<String, String>) {
        match &n.value {
            Value::Map(m) => {
                for (k, v) in m.iter() {
                    if matches!(
                        k.as_str(),
                        "containers" | "initContainers" | "ephemeralContainers"
                    ) && let Some(items) = v.as_seq()
                    {
                        for (i, c) in items.iter().enumerate() {
                            if let Some(img) = c.str_at(&["image"]) {
                                let name = c
                                    .str_at(&["name"])
                                    .map_or_else(|| i.to_string(), str::to_string);
                                let label = if k == "containers" {
                                    name
                                } else {
                                    format!("{k}/{name}")
                                };
                                out.insert(label, img.to_string());
                            }
                        }
                    } else {
                        walk(v, out);
                    }
                }
            }
            Value::Seq(s) => s.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    // A HelmRelease's values are not a pod spec; their images are in its values diff.
    if !is_helm_release(obj) {
        walk(obj, &mut out);
    }
    out
}

fn images(old: Option<&Node>, new: Option<&Node>) -> Vec<ImageChange> {
    let o = old.map(container_images).unwrap_or_default();
    let n = new.map(container_images).unwrap_or_default();
    let Some(label) = new.or(old).map(|x| {
        let (_, kind, ns, name) = key_of(x);
        match ns {
            Some(ns) => format!("{kind} {ns}/{name}"),
            None => format!("{kind} {name}"),
        }
    }) else {
        return Vec::new();
    };
    let names: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
    names
        .into_iter()
        .filter(|c| o.get(*c) != n.get(*c))
        .map(|c| ImageChange {
            object: label.clone(),
            container: c.clone(),
            old: o.get(c).cloned(),
            new: n.get(c).cloned(),
        })
        .collect()
}

fn releases(base: &Environment, head: &Environment, b: &Side, h: &Side) -> Vec<ReleaseChange> {
    let mut out = Vec::new();
    let ids: BTreeSet<&String> = base.releases.keys().chain(head.releases.keys()).collect();
    for id in ids {
        let (old, new) = (base.releases.get(id), head.releases.get(id));
        let status = match (old, new) {
            (None, Some(_)) => Status::Added,
            (Some(_), None) => Status::Removed,
            _ => Status::Changed,
        };
        let chart_of = |r: Option<&Release>| r.and_then(|r| r.values.chart.clone());
        let (co, cn) = (chart_of(old), chart_of(new));
        let chart = cn
            .as_ref()
            .or(co.as_ref())
            .map_or_else(String::new, |c| c.name.clone());
        let vo = co.as_ref().and_then(|c| c.version.clone());
        let vn = cn.as_ref().and_then(|c| c.version.clone());
        let version = (status == Status::Changed
            && (vo != vn || co.as_ref().map(|c| &c.name) != cn.as_ref().map(|c| &c.name)))
        .then(|| (vo.clone(), vn.clone()));
        let values = release_values(old, new, b, h);
        if status == Status::Changed && version.is_none() && values.is_empty() {
            continue;
        }
        out.push(ReleaseChange {
            id: id.clone(),
            status,
            chart,
            version,
            defaults_known: cn.or(co).is_some_and(|c| c.found.is_some()),
            values,
        });
    }
    out
}

/// The effective values leaf by leaf, with the origin chain of each head value (chart
/// defaults included when the chart is cached); a value from a `valuesFrom` Secret is secret.
fn release_values(
    old: Option<&Release>,
    new: Option<&Release>,
    b: &Side,
    h: &Side,
) -> Vec<FieldChange> {
    let empty = Node::map(Location::file(""));
    let ot = old.map_or(&empty, |r| &r.values.tree);
    let nt = new.map_or(&empty, |r| &r.values.tree);
    let mut changes = field_changes(ot, nt, b, h, false, |_| false);
    let secret_path = |r: Option<&Release>, path: &str| {
        r.is_some_and(|r| {
            r.values
                .origins
                .iter()
                .filter(|(p, _)| same_leaf(p, path))
                .any(|(_, chain)| {
                    chain
                        .iter()
                        .any(|o| o.via.starts_with("valuesFrom Secret/"))
                })
        })
    };
    let chain_via = |r: Option<&Release>, path: &str| {
        r.and_then(|r| {
            r.values
                .origins
                .iter()
                .find(|(p, _)| same_leaf(p, path))
                .and_then(|(_, chain)| chain.first())
                .map(|o| o.via.clone())
        })
    };
    for c in &mut changes {
        if secret_path(old, &c.path) || secret_path(new, &c.path) {
            c.secret = true;
            c.old = None;
            c.new = None;
            c.lines.clear();
        }
        let via_new = chain_via(new, &c.path);
        if let (Some(src), Some(via)) = (c.origin.as_mut(), via_new)
            && c.status != Status::Removed
            && src.via.is_none()
        {
            src.via = Some(via);
        }
    }
    changes
}

/// Whether a values origin key (`a.b[0].c`, dots in keys as `\.`) names the leaf path of
/// [`leaves`] (`a.b[0].c`, `a["x.y"]`, named lists as `[name=n]`). Compared step by step on
/// the key names, so a named list matches its index in the origins by position only when
/// the names agree.
fn same_leaf(origin_key: &str, leaf: &str) -> bool {
    normalise_path(origin_key) == normalise_path(leaf)
}

/// A path as its steps' names: `a.b[0]` and `a["b"][name=x]` both become `a/b/#`.
fn normalise_path(p: &str) -> String {
    let mut out = String::new();
    let mut chars = p.chars().peekable();
    let mut cur = String::new();
    let flush = |cur: &mut String, out: &mut String| {
        if !cur.is_empty() {
            out.push('/');
            out.push_str(cur);
            cur.clear();
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '.' => flush(&mut cur, &mut out),
            '[' => {
                flush(&mut cur, &mut out);
                let mut inner = String::new();
                for n in chars.by_ref() {
                    if n == ']' {
                        break;
                    }
                    inner.push(n);
                }
                let step = if inner.starts_with('"') {
                    inner.trim_matches('"').to_string()
                } else {
                    "#".to_string()
                };
                out.push('/');
                out.push_str(&step);
            }
            c => cur.push(c),
        }
    }
    flush(&mut cur, &mut out);
    out
}

/// The Ansible variables of each host of the environment that changed.
fn hosts(base: &Environment, head: &Environment, roots: Option<(&str, &str)>) -> Vec<HostChange> {
    let (Some(bb), Some(hb)) = (&base.bootstrap, &head.bootstrap) else {
        return Vec::new();
    };
    let names: BTreeSet<&String> = bb.hosts.iter().chain(hb.hosts.iter()).collect();
    let mut out = Vec::new();
    for host in names {
        let old = bb.hosts.contains(host).then(|| {
            let mut vars = bb.project.host_vars(host).vars;
            if let Some((from, to)) = roots {
                for r in vars.values_mut() {
                    rebase(&mut r.value, from, to);
                }
            }
            vars
        });
        let new = hb
            .hosts
            .contains(host)
            .then(|| hb.project.host_vars(host).vars);
        let status = match (&old, &new) {
            (None, Some(_)) => Status::Added,
            (Some(_), None) => Status::Removed,
            _ => Status::Changed,
        };
        let (old, new) = (old.unwrap_or_default(), new.unwrap_or_default());
        let mut vars = Vec::new();
        let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for k in keys {
            let (o, n) = (old.get(k), new.get(k));
            if let (Some(o), Some(n)) = (o, n)
                && o.value == n.value
                && o.opaque == n.opaque
            {
                continue;
            }
            let src = |r: &fluxgate_ansible::Resolved| {
                r.origin.first().map(|o| Source {
                    file: o.location.file.to_string(),
                    line: o.location.line,
                    via: (!o.via.is_empty()).then(|| o.via.clone()),
                })
            };
            let secret = o.is_some_and(|r| r.opaque) || n.is_some_and(|r| r.opaque);
            let mut f = field(
                k,
                o.map(|r| &r.value),
                n.map(|r| &r.value),
                n.and_then(src),
                o.and_then(src),
                secret,
            );
            if f.origin.is_none() {
                f.origin.clone_from(&f.base_origin);
            }
            vars.push(f);
        }
        if status == Status::Changed && vars.is_empty() {
            continue;
        }
        out.push(HostChange {
            host: host.clone(),
            status,
            vars,
        });
    }
    out
}

/// Every string under `n` with the folder `from` replaced by `to`.
fn rebase(n: &mut Node, from: &str, to: &str) {
    match &mut n.value {
        Value::String(s) if s.contains(from) => *s = s.replace(from, to),
        Value::Map(m) => m.values_mut().for_each(|v| rebase(v, from, to)),
        Value::Seq(items) => items.iter_mut().for_each(|v| rebase(v, from, to)),
        _ => {}
    }
}
