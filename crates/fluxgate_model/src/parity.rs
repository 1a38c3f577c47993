//! The sources of each `parity:` group, loaded once per environment while it loads: each a
//! values tree, the keys tagged `# [parity]` in it, and for every value the place that set it.
//! The `parity` rule compares them; it never reads or renders a source itself.

use std::collections::BTreeSet;
use std::path::Path;

use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_flux::envsubst;
use fluxgate_flux::vars::Vars;
use fluxgate_kustomize::Fs;
use fluxgate_yaml::{Comments, Node, Schema, Value, parse_stream};

use crate::config::{ParityGroup, ParitySource};
use crate::environment::{Bootstrap, Environment, Release};
use crate::problem::{Problem, ProblemKind};

/// A key path from the values root.
pub type KeyPath = Vec<String>;

/// Where a source's values came from, for finding where a value was set.
#[derive(Clone, Debug)]
enum Kind {
    /// Effective values: origins by dotted path, and where the release's values are written
    /// (a chart default is fixed there).
    Release(fluxgate_flux::helm::Origins, Location),
    /// A rendered template: rendered line -> template line; the template's text by line, and
    /// the host it was rendered for.
    Template {
        path: String,
        lines: Vec<u32>,
        source: Vec<String>,
        host: String,
    },
    /// A plain file: the raw text by line, and the Flux variables it was read with.
    File { lines: Vec<String>, vars: Vars },
}

#[derive(Clone, Debug)]
pub struct Loaded {
    /// `helmrelease kube-system/cilium`, `template roles/...j2 (k3s-prod-1)`, `file ...`.
    pub label: String,
    pub tree: Node,
    pub tagged: Vec<KeyPath>,
    /// The value depends on secrets fluxgate does not read: never compared.
    pub opaque: bool,
    kind: Kind,
}

impl Loaded {
    /// Where the value at `path` was set (the primary place of a finding), and where this
    /// source holds it when that is a different place.
    pub fn set_at(
        &self,
        env: &Environment,
        path: &KeyPath,
        node: &Node,
    ) -> (Location, Option<Location>) {
        match &self.kind {
            Kind::Release(origins, values_at) => {
                match origins.get(&dotted(path)).and_then(|c| c.first()) {
                    Some(o) if o.via.starts_with("chart default") => {
                        (values_at.clone(), Some(o.location.clone()))
                    }
                    Some(o) => (o.location.clone(), None),
                    None => (node.loc.clone(), None),
                }
            }
            Kind::Template {
                path: file,
                lines,
                source,
                host,
            } => {
                let line = lines
                    .get(node.loc.line.saturating_sub(1) as usize)
                    .copied()
                    .unwrap_or(node.loc.line);
                let here = Location::new(file.clone(), line, node.loc.column.max(1));
                let text = source
                    .get(line.saturating_sub(1) as usize)
                    .map_or("", String::as_str);
                let set = jinja_var(text).and_then(|var| {
                    let b = env.bootstrap.as_ref()?;
                    let r = b.project.resolve(host, &var).ok()?;
                    r.origin
                        .iter()
                        .rev()
                        .find(|o| o.location.line > 0)
                        .map(|o| o.location.clone())
                });
                match set {
                    Some(s) => (s, Some(here)),
                    None => (here, None),
                }
            }
            Kind::File { lines, vars } => {
                let text = lines
                    .get(node.loc.line.saturating_sub(1) as usize)
                    .map_or("", String::as_str);
                let def = flux_var(text)
                    .and_then(|v| vars.get(&v))
                    .map(|d| d.definition.clone());
                match def {
                    Some(d) => (d, Some(node.loc.clone())),
                    None => (node.loc.clone(), None),
                }
            }
        }
    }
}

/// Why a parity source could not be loaded: a template that failed to render (the renderer's
/// problem, reported as every render problem is), or a source fluxgate cannot read.
#[derive(Clone, Debug)]
pub enum SourceError {
    Render(Box<Problem>),
    Unreadable(Box<Diagnostic>),
}

/// The sources of one group in one environment, in the group's order: `Ok(None)` where the
/// source does not exist there.
pub type GroupSources = Vec<Result<Option<Loaded>, SourceError>>;

/// Loads the sources of every `parity:` group of `config` for `env` (whose tree, releases
/// and bootstrap are rendered), reading files through `fs` under `root`.
pub fn load_groups(
    env: &Environment,
    fs: &dyn Fs,
    root: &Path,
    groups: &[ParityGroup],
) -> Vec<GroupSources> {
    groups
        .iter()
        .map(|group| {
            let vars = group_vars(env, group);
            group
                .sources
                .iter()
                .map(|s| load(env, fs, root, s, &vars))
                .collect()
        })
        .collect()
}

/// The Flux variables of the Kustomization that renders the group's HelmRelease (else of the
/// first Kustomization that substitutes), as the tree recorded them.
fn group_vars(env: &Environment, group: &ParityGroup) -> Vars {
    let release = group.sources.iter().find_map(|s| match s {
        ParitySource::HelmRelease { release, .. } => env.releases.get(release),
        _ => None,
    });
    let tree = &env.tree;
    release
        .and_then(|r| {
            tree.kustomizations
                .iter()
                .find(|k| k.objects.iter().any(|o| o.loc == r.object.loc))
        })
        .or_else(|| {
            tree.kustomizations
                .iter()
                .find(|k| k.object.path(&["spec", "postBuild"]).is_some())
        })
        .map(|k| k.vars.clone())
        .unwrap_or_default()
}

/// Loads one source for `env`. `Ok(None)`: the source does not exist in this environment
/// (no such release, no bootstrap); `Err`: it could not be rendered.
fn load(
    env: &Environment,
    fs: &dyn Fs,
    root: &Path,
    source: &ParitySource,
    flux_vars: &Vars,
) -> Result<Option<Loaded>, SourceError> {
    match source {
        ParitySource::HelmRelease { release, .. } => Ok(env.releases.get(release).map(|r| {
            let raw = raw_document(fs, root, r);
            let tagged = raw
                .as_ref()
                .and_then(|(doc, text)| {
                    let values = doc.path(&["spec", "values"])?;
                    Some(tagged_keys(values, text))
                })
                .unwrap_or_default();
            Loaded {
                label: format!("helmrelease {release}"),
                tree: r.values.tree.clone(),
                tagged,
                opaque: false,
                kind: Kind::Release(
                    r.values.origins.clone(),
                    r.object
                        .path(&["spec", "values"])
                        .map_or_else(|| r.object.loc.clone(), |v| v.loc.clone()),
                ),
            }
        })),
        ParitySource::Template { path, host, .. } => {
            let Some(b) = &env.bootstrap else {
                return Ok(None);
            };
            let host = match host.as_deref() {
                None | Some("primary") => b.hosts.first().cloned(),
                Some(h) => Some(h.to_string()),
            };
            let Some(host) = host else {
                return Ok(None);
            };
            let t = match b.template(path, &host) {
                Some(Ok(t)) => t,
                Some(Err(p)) => {
                    return Err(SourceError::Render(Box::new(
                        p.clone().map_kind(ProblemKind::Ansible),
                    )));
                }
                None => {
                    return Err(SourceError::Unreadable(Box::new(Diagnostic::render_error(
                        format!("template {path} was not rendered for {host}"),
                        Some(Location::file(path.clone())),
                    ))));
                }
            };
            let stream = parse_stream(&t.path, &t.text, Schema::Yaml11);
            let Some(tree) = stream
                .docs
                .into_iter()
                .next()
                .filter(|_| stream.diagnostics.is_empty())
            else {
                return Err(SourceError::Unreadable(Box::new(Diagnostic::render_error(
                    format!(
                        "template {path} rendered for {host} is not YAML: parity cannot read it"
                    ),
                    Some(Location::file(path.clone())),
                ))));
            };
            let tagged = tagged_keys(&tree, &t.text);
            let source_text = source_of(b, &t.path);
            let source: Vec<String> = source_text.lines().map(str::to_string).collect();
            // The template line of each output line, as the renderer traced it.
            let lines = t.lines.clone();
            Ok(Some(Loaded {
                label: format!("template {} ({host})", t.path),
                tree,
                tagged,
                opaque: t.opaque,
                kind: Kind::Template {
                    path: t.path.clone(),
                    lines,
                    source,
                    host,
                },
            }))
        }
        ParitySource::File { path, loc } => {
            let text = fs.read(&root.join(path)).map_err(|e| {
                SourceError::Unreadable(Box::new(Diagnostic::render_error(
                    format!("cannot read parity source {path}: {e}"),
                    Some(loc.clone()),
                )))
            })?;
            // A mirror of substituted values may use the same `${VAR}`s: read it with the
            // environment's Flux variables, as the release it mirrors is read.
            let substituted = if text.contains("${") {
                let lookup = |n: &str| flux_vars.get(n).map(|d| d.value.clone());
                envsubst::expand(&text, &lookup).map_or_else(|_| text.clone(), |e| e.text)
            } else {
                text.clone()
            };
            let stream = parse_stream(path, &substituted, Schema::Kube);
            let Some(tree) = stream.docs.into_iter().next() else {
                return Ok(None);
            };
            let tagged = tagged_keys(&tree, &text);
            Ok(Some(Loaded {
                label: format!("file {path}"),
                tree,
                tagged,
                opaque: false,
                kind: Kind::File {
                    lines: text.lines().map(str::to_string).collect(),
                    vars: flux_vars.clone(),
                },
            }))
        }
    }
}

fn source_of(b: &Bootstrap, path: &str) -> String {
    b.templates.source(path).unwrap_or_default().to_string()
}

/// The release as written in its file (before patches and substitution), with the file's
/// text.
fn raw_document(fs: &dyn Fs, root: &Path, release: &Release) -> Option<(Node, String)> {
    let obj = &release.object;
    let file = obj.loc.file.as_ref();
    let text = fs.read(&root.join(file)).ok()?;
    let name = obj.str_at(&["metadata", "name"]);
    let kind = obj.str_at(&["kind"]);
    let doc = parse_stream(file, &text, Schema::Kube)
        .docs
        .into_iter()
        .find(|d| d.str_at(&["kind"]) == kind && d.str_at(&["metadata", "name"]) == name)?;
    Some((doc, text))
}

/// Key paths tagged `# [parity]` on the key's line or the comment lines right above it.
pub fn tagged_keys(root: &Node, text: &str) -> Vec<KeyPath> {
    let comments = Comments::scan(text);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    walk_tags(root, &mut Vec::new(), &comments, &lines, &mut out);
    out
}

fn walk_tags(
    node: &Node,
    path: &mut KeyPath,
    comments: &Comments,
    lines: &[&str],
    out: &mut Vec<KeyPath>,
) {
    let Value::Map(m) = &node.value else {
        return;
    };
    for (k, v) in m.iter() {
        path.push(k.clone());
        let tagged = key_line(k, v, lines).is_some_and(|l| comments.has_tag(l, "parity"));
        if tagged {
            out.push(path.clone());
        } else {
            walk_tags(v, path, comments, lines, out);
        }
        path.pop();
    }
}

/// The line of key `k` whose value is `v`: the value's own line when the key is written
/// there (scalars, flow collections), else the nearest line above that starts with the key.
fn key_line(k: &str, v: &Node, lines: &[&str]) -> Option<u32> {
    let starts = |line: &str| {
        let t = line.trim_start().trim_start_matches("- ");
        t.starts_with(&format!("{k}:"))
            || t.starts_with(&format!("\"{k}\":"))
            || t.starts_with(&format!("'{k}':"))
    };
    let at = v.loc.line;
    if at == 0 {
        return None;
    }
    if lines.get(at as usize - 1).is_some_and(|l| starts(l)) {
        return Some(at);
    }
    let mut l = at;
    while l > 1 && at - l < 20 {
        l -= 1;
        let text = lines.get(l as usize - 1)?;
        if starts(text) {
            return Some(l);
        }
    }
    None
}

/// The variable of a line's single `{{ name }}` expression.
fn jinja_var(line: &str) -> Option<String> {
    let start = line.find("{{")? + 2;
    let end = line[start..].find("}}")? + start;
    let expr = line[start..end].trim();
    is_identifier(expr).then(|| expr.to_string())
}

/// The variable of a line's `${NAME}` (or `${NAME:=default}`).
fn flux_var(line: &str) -> Option<String> {
    let start = line.find("${")? + 2;
    let name: String = line[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    is_identifier(&name).then_some(name)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Helm's dotted form of a key path (dots inside keys escaped).
pub fn dotted(path: &KeyPath) -> String {
    path.iter()
        .map(|k| k.replace('.', "\\."))
        .collect::<Vec<_>>()
        .join(".")
}

/// The node at `path` below `root`.
pub fn at_path<'n>(root: &'n Node, path: &KeyPath) -> Option<&'n Node> {
    path.iter().try_fold(root, |n, k| n.get(k))
}

/// The leaf paths at or below `path` in `root` (maps descend; lists, scalars and empty maps
/// are leaves), into `out`.
pub fn leaves(root: &Node, path: &KeyPath, out: &mut BTreeSet<KeyPath>) {
    let Some(node) = at_path(root, path) else {
        return;
    };
    match &node.value {
        Value::Map(m) if !m.is_empty() => {
            for k in m.keys() {
                let mut p = path.clone();
                p.push(k.clone());
                leaves(root, &p, out);
            }
        }
        _ => {
            out.insert(path.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(text: &str) -> Vec<String> {
        let tree = parse_stream("v.yaml", text, Schema::Kube).docs.remove(0);
        tagged_keys(&tree, text).iter().map(dotted).collect()
    }

    #[test]
    fn tags_above_on_the_line_and_on_mappings() {
        let t = "# [parity] why\na: 1\nb: 2 # [parity]\nc:  # [parity]\n  d: 1\n# [parity]\ne:\n  f: 1\ng: 3\nh:\n  # [parity]\n  i: 1\n";
        assert_eq!(tags(t), vec!["a", "b", "c", "e", "h.i"]);
    }

    #[test]
    fn variables_of_a_line() {
        assert_eq!(
            jinja_var("k: \"{{ k3s_api }}\"").as_deref(),
            Some("k3s_api")
        );
        assert_eq!(jinja_var("k: {{ a | default(1) }}"), None);
        assert_eq!(
            flux_var("h: ${K3S_API_HOST}").as_deref(),
            Some("K3S_API_HOST")
        );
    }
}
