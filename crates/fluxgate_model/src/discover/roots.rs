//! The self-reconciling roots of a repository, one document at a time: Flux `Kustomization`s
//! whose `spec.path` contains the file that declares them, `FluxInstance`s (also inside a
//! `ResourceSet`), and the `instance` values of a flux-instance HelmRelease.

use std::collections::BTreeSet;
use std::path::Path;

use crate::RepoIndex;
use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Schema, parse_stream};
use indexmap::IndexMap;

/// One root found in a file.
#[derive(Clone, Debug)]
pub(crate) struct Root {
    /// The folder Flux reconciles, relative to the repository root.
    pub path: String,
    pub loc: Location,
    pub reason: String,
    /// The file that declares the root.
    pub file: String,
    /// A Kustomization root (a `flux bootstrap` sync or an app's own `ks.yaml`), as opposed to
    /// a Flux Operator instance: only these can be part of another root.
    pub kustomization: bool,
    /// The artifact source the root reconciles from and the folder of this repository it was
    /// built from (`OCIRepository` `cluster` -> `kubernetes`).
    pub source: Option<(String, String)>,
    /// The declaring object's `metadata.name`.
    pub name: String,
    /// The folder of the Git repository that this checkout is, when its `spec.path` names the
    /// root from the Git repository's top (`./tests/testdata/cluster/clusters/prod` for
    /// `clusters/prod` here): a subfolder of a larger repository checked on its own.
    pub prefix: Option<String>,
}

/// What the repository around a document holds: the folders that exist (to map an
/// artifact's paths) and the sources `fluxgate.yaml` maps.
pub(crate) struct Context<'a> {
    pub dirs: &'a BTreeSet<String>,
    pub sources: &'a IndexMap<String, String>,
}

pub(crate) fn clean(path: &str) -> String {
    let p = path.trim().trim_start_matches("./").trim_end_matches('/');
    if p == "." {
        String::new()
    } else {
        p.to_string()
    }
}

fn inside(file: &str, dir: &str) -> bool {
    // No allocation: discovery asks this for every pair of Kustomizations.
    dir.is_empty()
        || file
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn join(base: &str, path: &str) -> String {
    match (base.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (false, true) => base.to_string(),
        (false, false) => format!("{base}/{path}"),
    }
}

/// The roots one document declares.
pub(crate) fn roots_of(doc: &Node, file: &str, cx: &Context<'_>) -> Vec<Root> {
    let api = doc.str_at(&["apiVersion"]).unwrap_or_default();
    let kind = doc.str_at(&["kind"]).unwrap_or_default();
    let root = |path: String, loc: Location, reason: String| Root {
        path,
        loc,
        reason,
        file: file.to_string(),
        kustomization: false,
        source: None,
        name: doc
            .str_at(&["metadata", "name"])
            .unwrap_or_default()
            .to_string(),
        prefix: None,
    };
    match kind {
        "Kustomization" if api.starts_with("kustomize.toolkit.fluxcd.io/") => {
            kustomization_root(doc, file, cx).into_iter().collect()
        }
        "FluxInstance" => instance_root(doc, file, cx, None).into_iter().collect(),
        "ResourceSet" if api.starts_with("fluxcd.controlplane.io/") => {
            resource_set_roots(doc, file, cx)
        }
        "HelmRelease" => doc
            .path(&["spec", "values", "instance", "sync", "path"])
            .and_then(|node| {
                Some(root(
                    clean(node.as_str()?),
                    node.loc.clone(),
                    "flux-instance HelmRelease values instance.sync.path".to_string(),
                ))
            })
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// The folder of this repository that a Flux Kustomization reconciles, when it reconciles
/// one (a `GitRepository` source, or an artifact mapped to a folder as for roots): the
/// Kustomizations of the repository reach these folders and every Kustomization inside.
pub(crate) fn reach_of(doc: &Node, cx: &Context<'_>) -> Option<String> {
    let api = doc.str_at(&["apiVersion"]).unwrap_or_default();
    if doc.str_at(&["kind"]) != Some("Kustomization")
        || !api.starts_with("kustomize.toolkit.fluxcd.io/")
    {
        return None;
    }
    let path = clean(doc.str_at(&["spec", "path"])?);
    let kind = doc
        .str_at(&["spec", "sourceRef", "kind"])
        .unwrap_or("GitRepository");
    if kind == "GitRepository" {
        return Some(path);
    }
    if !matches!(kind, "OCIRepository" | "ExternalArtifact") || path.is_empty() {
        return None;
    }
    let source = doc.str_at(&["spec", "sourceRef", "name"]).unwrap_or("?");
    let (base, _) = artifact_base(&path, source, kind, cx)?;
    Some(join(&base, &path))
}

/// Whether a Kustomization root is a bootstrap entry on its face: `flux bootstrap`'s
/// `flux-system` Kustomization, or one kept in a `flux-system` folder.
pub(crate) fn bootstrap_entry(root: &Root) -> bool {
    root.name == "flux-system"
        || root.file.starts_with("flux-system/")
        || root.file.contains("/flux-system/")
}

/// Whether `file` lies in the folder `dir` (the repository root when empty).
pub(crate) fn lies_in(file: &str, dir: &str) -> bool {
    inside(file, dir)
}

fn kustomization_root(doc: &Node, file: &str, cx: &Context<'_>) -> Option<Root> {
    let node = doc.path(&["spec", "path"])?;
    let path = clean(node.as_str()?);
    let name = doc.str_at(&["metadata", "name"]).unwrap_or("?");
    let kind = doc
        .str_at(&["spec", "sourceRef", "kind"])
        .unwrap_or("GitRepository");
    let reason = format!("Kustomization `{name}` reconciles the directory that declares it");
    let mut root = Root {
        path: path.clone(),
        loc: node.loc.clone(),
        reason,
        file: file.to_string(),
        kustomization: true,
        source: None,
        name: name.to_string(),
        prefix: None,
    };
    if kind == "GitRepository" {
        if inside(file, &path) {
            return Some(root);
        }
        // The path may name the folder from the top of a larger Git repository whose
        // subfolder this is: the longest tail of the path that holds the file and exists.
        let parts: Vec<&str> = path.split('/').collect();
        for i in 1..parts.len() {
            let tail = parts[i..].join("/");
            if inside(file, &tail) && cx.dirs.contains(&tail) {
                let prefix = parts[..i].join("/");
                root.reason = format!(
                    "{}, its spec.path `{path}` read from the top of the Git repository, of \
                     which this folder is `{prefix}`",
                    root.reason
                );
                root.path = tail;
                root.prefix = Some(prefix);
                return Some(root);
            }
        }
        return None;
    }
    if !matches!(kind, "OCIRepository" | "ExternalArtifact") || path.is_empty() {
        // An artifact's `./` (the Flux manifests from an OCIRepository) says nothing about
        // this repository.
        return None;
    }
    let source = doc.str_at(&["spec", "sourceRef", "name"]).unwrap_or("?");
    let (base, how) = artifact_base(&path, source, kind, cx)?;
    root.path = join(&base, &path);
    if !inside(file, &root.path) {
        return None;
    }
    root.reason = format!("{}, {how}", root.reason);
    root.source = Some((source.to_string(), base));
    Some(root)
}

/// The folder of this repository an artifact source was built from, when `path` (relative
/// to the artifact) tells: `sources:` in fluxgate.yaml first, else the repository root when
/// the folder is there, else the one subfolder below which it is.
fn artifact_base(
    path: &str,
    source: &str,
    kind: &str,
    cx: &Context<'_>,
) -> Option<(String, String)> {
    if let Some(dir) = cx.sources.get(source) {
        let dir = clean(dir);
        return Some((
            dir.clone(),
            format!("from {kind} `{source}` mapped to `{dir}` by `sources:` in fluxgate.yaml"),
        ));
    }
    if cx.dirs.contains(path) {
        return Some((
            String::new(),
            format!("from {kind} `{source}` built from the repository root"),
        ));
    }
    let suffix = format!("/{path}");
    let below: Vec<&String> = cx.dirs.iter().filter(|d| d.ends_with(&suffix)).collect();
    match below.as_slice() {
        [one] => {
            let base = one[..one.len() - suffix.len()].to_string();
            let how = format!(
                "from {kind} `{source}`, taken as built from `{base}`: `{path}` is not at the \
                 repository root but only below `{base}` (map `{source}` under `sources:` in \
                 fluxgate.yaml to change it)"
            );
            Some((base, how))
        }
        _ => None,
    }
}

/// A FluxInstance's `spec.sync.path`; `made_by` names the ResourceSet that creates it, with
/// the input that fills its template.
fn instance_root(
    doc: &Node,
    file: &str,
    cx: &Context<'_>,
    made_by: Option<(&str, &Node)>,
) -> Option<Root> {
    let node = doc.path(&["spec", "sync", "path"])?;
    let path = clean(&made_by.map_or_else(
        || node.as_str().map(str::to_string),
        |(_, input)| node.as_str().map(|p| fill(p, input)),
    )?);
    if path.contains("<<") {
        // A template input that no input fills in.
        return None;
    }
    let mut reason = made_by.map_or_else(
        || "FluxInstance spec.sync.path".to_string(),
        |(by, _)| format!("FluxInstance made by {by}, spec.sync.path"),
    );
    let mut root = Root {
        path: path.clone(),
        loc: node.loc.clone(),
        reason: String::new(),
        file: file.to_string(),
        kustomization: false,
        source: None,
        name: doc
            .str_at(&["metadata", "name"])
            .unwrap_or_default()
            .to_string(),
        prefix: None,
    };
    let kind = doc
        .str_at(&["spec", "sync", "kind"])
        .unwrap_or("GitRepository");
    if kind == "OCIRepository" && !path.is_empty() && !cx.dirs.contains(&path) {
        let source = doc
            .str_at(&["spec", "sync", "name"])
            .unwrap_or("flux-system");
        if let Some((base, how)) = artifact_base(&path, source, kind, cx) {
            root.path = join(&base, &path);
            reason = format!("{reason}, {how}");
            root.source = Some((source.to_string(), base));
        }
    }
    root.reason = reason;
    Some(root)
}

/// The FluxInstances a Flux Operator `ResourceSet` creates: its `spec.resources` and its
/// `spec.resourcesTemplate`, once per entry of `spec.inputs` (`<< inputs.key >>` filled in).
fn resource_set_roots(doc: &Node, file: &str, cx: &Context<'_>) -> Vec<Root> {
    let name = doc.str_at(&["metadata", "name"]).unwrap_or("?");
    let empty = Node::map(doc.loc.clone());
    let inputs: Vec<&Node> = match doc.path(&["spec", "inputs"]).and_then(Node::as_seq) {
        Some(list) if !list.is_empty() => list.iter().collect(),
        _ => vec![&empty],
    };
    let mut out: Vec<Root> = Vec::new();
    let mut push = |r: Root| {
        if !out.iter().any(|o| o.path == r.path) {
            out.push(r);
        }
    };
    for input in &inputs {
        for res in doc
            .path(&["spec", "resources"])
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            if res.str_at(&["kind"]) != Some("FluxInstance") {
                continue;
            }
            let by = format!("ResourceSet `{name}` (spec.resources)");
            if let Some(r) = instance_root(res, file, cx, Some((&by, input))) {
                push(r);
            }
        }
        let Some(template) = doc.path(&["spec", "resourcesTemplate"]) else {
            continue;
        };
        let Some(text) = template.as_str() else {
            continue;
        };
        if !text.contains("FluxInstance") {
            continue;
        }
        for res in parse_stream(file, &fill(text, input), Schema::Kube).docs {
            if res.str_at(&["kind"]) != Some("FluxInstance") {
                continue;
            }
            let by = format!("ResourceSet `{name}` (spec.resourcesTemplate)");
            if let Some(mut r) = instance_root(&res, file, cx, Some((&by, input))) {
                // Lines inside the template text are not lines of the file.
                r.loc = template.loc.clone();
                push(r);
            }
        }
    }
    out
}

/// `text` with each `<< inputs.key >>` replaced by that input's value; other expressions
/// stay as written, so a path that needs them is seen as unknown.
fn fill(text: &str, input: &Node) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<<") {
        let Some(len) = rest[start..].find(">>") else {
            break;
        };
        let expr = rest[start + 2..start + len].trim();
        let value = expr
            .strip_prefix("inputs.")
            .and_then(|key| input.get(key))
            .and_then(Node::scalar_text);
        out.push_str(&rest[..start]);
        match value {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[start..start + len + 2]),
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// The `instance.sync.path` of a flux-instance HelmRelease whose values come from a ConfigMap
/// that a kustomization generates from a file (`configMapGenerator` with
/// `files: [values.yaml=./helm-values.yaml]`), the layout that keeps the Flux sync path only in
/// that file: the kustomization beside the release, else every kustomization of the repository
/// that generates that ConfigMap (each cluster's overlay of a shared release, one root each).
pub(crate) fn instance_values_roots(index: &RepoIndex, doc: &Node, file: &str) -> Vec<Root> {
    if doc.str_at(&["kind"]) != Some("HelmRelease") {
        return Vec::new();
    }
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    let beside = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
        .iter()
        .find_map(|k| {
            let rel = dir.join(k).to_string_lossy().replace('\\', "/");
            index.read(&rel).ok().map(|f| (rel, f))
        });
    if let Some((rel, kfile)) = beside
        && let Some(kdoc) = kfile.docs().first()
    {
        let found = generated_roots(index, doc, file, &rel, kdoc);
        if !found.is_empty() {
            return found;
        }
    }
    let mut out: Vec<Root> = Vec::new();
    for f in index.files() {
        let name = f.path.rsplit('/').next().unwrap_or(&f.path);
        if !matches!(
            name,
            "kustomization.yaml" | "kustomization.yml" | "Kustomization"
        ) || !f.text.contains("configMapGenerator")
        {
            continue;
        }
        if let Some(kdoc) = f.docs().first() {
            for r in generated_roots(index, doc, file, &f.path, kdoc) {
                if !out.iter().any(|x| x.path == r.path) {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// The roots that the kustomization `kfile` (`kdoc`) gives the release `doc` (at `file`):
/// the `instance.sync.path` of each values file it generates a ConfigMap of the release's
/// `valuesFrom` from.
fn generated_roots(
    index: &RepoIndex,
    doc: &Node,
    file: &str,
    kfile: &str,
    kdoc: &Node,
) -> Vec<Root> {
    let mut out = Vec::new();
    let kdir = Path::new(kfile).parent().unwrap_or(Path::new(""));
    let Some(generators) = kdoc.get("configMapGenerator").and_then(Node::as_seq) else {
        return out;
    };
    let froms = doc
        .path(&["spec", "valuesFrom"])
        .and_then(Node::as_seq)
        .unwrap_or_default();
    for from in froms {
        if from.str_at(&["kind"]) != Some("ConfigMap") || from.get("targetPath").is_some() {
            continue;
        }
        let Some(name) = from.str_at(&["name"]) else {
            continue;
        };
        let key = from.str_at(&["valuesKey"]).unwrap_or("values.yaml");
        let Some(generator) = generators
            .iter()
            .find(|g| g.str_at(&["name"]) == Some(name))
        else {
            continue;
        };
        for f in generator
            .get("files")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            let Some(spec) = f.as_str() else { continue };
            let (k, path) = spec
                .split_once('=')
                .unwrap_or((spec.rsplit('/').next().unwrap_or(spec), spec));
            if k != key {
                continue;
            }
            let values_rel =
                fluxgate_kustomize::normalize(&kdir.join(path.trim_start_matches("./")));
            let Ok(values_file) = index.read(&values_rel.to_string_lossy().replace('\\', "/"))
            else {
                continue;
            };
            let Some(values) = values_file.docs().first() else {
                continue;
            };
            let Some(node) = values.path(&["instance", "sync", "path"]) else {
                continue;
            };
            let Some(path) = node.as_str() else {
                continue;
            };
            out.push(Root {
                path: clean(path),
                loc: node.loc.clone(),
                reason: format!(
                    "flux-instance HelmRelease values instance.sync.path, from ConfigMap {name} \
                     generated by {kfile} from {}",
                    values_file.path
                ),
                file: file.to_string(),
                kustomization: false,
                source: None,
                name: name.to_string(),
                prefix: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(file: &str, text: &str, dirs: &[&str]) -> Vec<Root> {
        let dirs: BTreeSet<String> = dirs.iter().map(|d| (*d).to_string()).collect();
        let sources = IndexMap::new();
        let cx = Context {
            dirs: &dirs,
            sources: &sources,
        };
        parse_stream(file, text, Schema::Kube)
            .docs
            .iter()
            .flat_map(|d| roots_of(d, file, &cx))
            .collect()
    }

    #[test]
    fn resource_set_resources_make_one_instance_per_input() {
        let text = "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata: {name: clusters}\nspec:\n  inputs:\n    - {cluster: prod}\n    - {cluster: test}\n  resources:\n    - apiVersion: fluxcd.controlplane.io/v1\n      kind: FluxInstance\n      metadata: {name: flux}\n      spec:\n        sync: {kind: GitRepository, path: \"./clusters/<< inputs.cluster >>\"}\n";
        let r = roots("bootstrap/rs.yaml", text, &[]);
        let paths: Vec<&str> = r.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["clusters/prod", "clusters/test"]);
        assert!(
            r[0].reason
                .contains("FluxInstance made by ResourceSet `clusters` (spec.resources)"),
            "{}",
            r[0].reason
        );
        assert!(!r[0].kustomization);
    }

    #[test]
    fn resource_set_template_makes_instances_too() {
        let text = "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata: {name: flux}\nspec:\n  inputs:\n    - {env: staging}\n  resourcesTemplate: |\n    apiVersion: fluxcd.controlplane.io/v1\n    kind: FluxInstance\n    metadata:\n      name: flux\n    spec:\n      sync:\n        path: kubernetes/<< inputs.env >>/flux\n";
        let r = roots("flux/rs.yaml", text, &[]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].path, "kubernetes/staging/flux");
        assert!(
            r[0].reason.contains("spec.resourcesTemplate"),
            "{}",
            r[0].reason
        );
        assert_eq!(r[0].loc.line, 8, "where the template text starts");
    }

    #[test]
    fn a_path_no_input_fills_is_no_root() {
        let text = "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata: {name: x}\nspec:\n  inputsFrom: [{kind: ResourceSetInputProvider, name: p}]\n  resources:\n    - kind: FluxInstance\n      spec: {sync: {path: \"<< inputs.path >>\"}}\n";
        assert!(roots("rs.yaml", text, &[]).is_empty());
        assert_eq!(
            fill(
                "a/<< inputs.x >>/<< inputs.y | lower >>",
                &parse_stream("i", "x: 1", Schema::Kube).docs[0]
            ),
            "a/1/<< inputs.y | lower >>"
        );
    }

    #[test]
    fn external_artifact_and_oci_instance_map_to_their_subfolder() {
        let ks = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: root}\nspec:\n  path: ./clusters/x\n  sourceRef: {kind: ExternalArtifact, name: repo}\n";
        let r = roots(
            "deploy/clusters/x/root.yaml",
            ks,
            &["deploy", "deploy/clusters", "deploy/clusters/x"],
        );
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].path, "deploy/clusters/x");
        assert_eq!(r[0].source, Some(("repo".into(), "deploy".into())));
        // The artifact's own `./` (Flux's manifests) is no root of this repository.
        let whole = ks.replace("./clusters/x", "./");
        assert!(roots("deploy/clusters/x/root.yaml", &whole, &["deploy"]).is_empty());

        let fi = "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata: {name: flux}\nspec:\n  sync: {kind: OCIRepository, url: oci://ghcr.io/x/manifests, path: ./clusters/x}\n";
        let r = roots(
            "bootstrap/flux.yaml",
            fi,
            &["deploy/clusters/x", "deploy/clusters"],
        );
        assert_eq!(r[0].path, "deploy/clusters/x");
        assert!(
            r[0].reason.contains("only below `deploy`"),
            "{}",
            r[0].reason
        );
        let r = roots(
            "bootstrap/flux.yaml",
            fi,
            &["deploy/clusters/x", "old/clusters/x"],
        );
        assert_eq!(r[0].path, "clusters/x", "two candidates: left as written");
    }
}
