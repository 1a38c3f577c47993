//! What Helm installs (SPEC §3.4): each HelmRelease whose chart is in the chart cache renders
//! into the objects `helm template` prints for it, with the release name, namespace, values and
//! CRD policy helm-controller uses. The objects join the environment, so every rule, policy and
//! schema check sees them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use fluxgate_diagnostics::{Annotate, Location};
use fluxgate_flux::helm::Values;
use fluxgate_kustomize::Fs;
use fluxgate_yaml::{Node, Schema, Value, parse_stream};

use crate::problem::{Problem, ProblemKind};

/// The objects one HelmRelease installs.
#[derive(Clone, Debug)]
pub struct Installed {
    /// The chart that was rendered, as the cache names it (`charts/cilium-1.17.18.tgz`).
    pub chart: String,
    /// The Helm release name helm-controller uses.
    pub release_name: String,
    /// The namespace the objects go to.
    pub namespace: String,
    /// In Helm's install order; CRDs first unless the release skips them; hooks last.
    pub objects: Vec<Node>,
    /// Why the chart's values.schema.json could not be read offline, when it could not: the
    /// values were not checked against it.
    pub schema_unchecked: Option<String>,
}

/// A render, and the schemas it could not check against.
struct Render {
    manifests: Vec<fluxgate_helm::Manifest>,
    unchecked: Vec<String>,
}

/// Why a chart did not render.
enum Failed {
    Text(String),
    /// A template's parse or execution error, where Helm reports it, and its innermost cause.
    Template {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// The values fail the charts' values.schema.json: helm-controller's install fails.
    Schema(Box<fluxgate_helm::schema::SchemaFailure>),
}

/// The values that fail a chart's schema, each at the line that set it (the release's values
/// line, the chart default's), the release beside it.
fn schema_problems(
    f: &fluxgate_helm::schema::SchemaFailure,
    id: &str,
    source: &str,
    values: &Values,
    at: &Location,
) -> Vec<Problem> {
    f.violations
        .iter()
        .take(20)
        .map(|v| {
            let mut path = String::new();
            for seg in &v.path {
                if seg.parse::<usize>().is_ok() && !path.is_empty() {
                    path.push_str(&format!("[{seg}]"));
                } else {
                    path = join_key(&path, seg);
                }
            }
            let shown = if v.path.is_empty() {
                "the values".to_string()
            } else {
                format!("`{}`", v.path.join("."))
            };
            let place = origin_of(&values.origins, &path).unwrap_or_else(|| at.clone());
            let mut p = Problem::new(
                ProblemKind::ChartRender,
                format!(
                    "HelmRelease {id}: {shown} fails the values.schema.json of chart {} ({source}): {}",
                    v.chart, v.message
                ),
                Some(place.clone()),
            )
            .help("helm-controller validates the values against the chart's schema and fails the install");
            if place != *at {
                p = p.related(at.clone(), format!("HelmRelease {id} installs the chart here"));
            }
            p
        })
        .collect()
}

/// Upper bounds on what one chart may hold in the cache (it is read into memory).
const MAX_CHART_BYTES: usize = 256 << 20;
const MAX_CHART_FILES: usize = 20_000;
const MAX_DEPTH: usize = 32;
/// Stack for one render: `include` inside `tpl` inside `range` recurses deeply.
const STACK: usize = 256 << 20;

/// The files of the charts read so far, shared by every release of an environment that
/// installs the same chart (app-template above all).
#[derive(Default)]
pub(crate) struct ChartFiles {
    read: Mutex<HashMap<String, Arc<Result<Source, String>>>>,
}

enum Source {
    Archive(Vec<u8>),
    Folder(Vec<(String, Vec<u8>)>),
}

impl ChartFiles {
    fn get(&self, fs: &dyn Fs, root: &Path, rel: &str) -> Arc<Result<Source, String>> {
        let memo = || self.read.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(done) = memo().get(rel) {
            return done.clone();
        }
        let done = Arc::new(read_source(fs, root, rel));
        memo().insert(rel.to_string(), done.clone());
        done
    }
}

fn read_source(fs: &dyn Fs, root: &Path, rel: &str) -> Result<Source, String> {
    let path = root.join(rel);
    if fs.is_file(&path) {
        let bytes = fs.read_bytes(&path).map_err(|e| e.kind().to_string())?;
        return Ok(Source::Archive(bytes));
    }
    let mut out = Vec::new();
    let mut total = 0;
    walk(fs, &path, "", &mut out, &mut total, 0)?;
    Ok(Source::Folder(out))
}

fn walk(
    fs: &dyn Fs,
    dir: &Path,
    rel: &str,
    out: &mut Vec<(String, Vec<u8>)>,
    total: &mut usize,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{rel}: folders nest deeper than {MAX_DEPTH}"));
    }
    let shown = if rel.is_empty() {
        "the chart folder"
    } else {
        rel
    };
    let mut entries = fs
        .list_dir_kinds(dir)
        .map_err(|e| format!("{shown}: {}", e.kind()))?;
    entries.sort();
    for (path, is_dir) in entries {
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let member = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if is_dir {
            walk(fs, &path, &member, out, total, depth + 1)?;
            continue;
        }
        let data = fs
            .read_bytes(&path)
            .map_err(|e| format!("{member}: {}", e.kind()))?;
        *total += data.len();
        if *total > MAX_CHART_BYTES || out.len() >= MAX_CHART_FILES {
            return Err(format!(
                "the chart holds more than {} MiB or {MAX_CHART_FILES} files",
                MAX_CHART_BYTES >> 20
            ));
        }
        out.push((member, data));
    }
    Ok(())
}

/// The Helm release name helm-controller gives `release`: `spec.releaseName`, else
/// `[targetNamespace-]name`, shortened as helm-controller shortens names over 53 characters.
#[must_use]
pub fn release_name(release: &Node) -> String {
    let name = release.str_at(&["metadata", "name"]).unwrap_or_default();
    if let Some(n) = release
        .str_at(&["spec", "releaseName"])
        .filter(|n| !n.is_empty())
    {
        return n.to_string();
    }
    let full = match release
        .str_at(&["spec", "targetNamespace"])
        .filter(|n| !n.is_empty())
    {
        Some(ns) => format!("{ns}-{name}"),
        None => name.to_string(),
    };
    shorten(&full)
}

/// helm-controller keeps a name of at most 53 characters; a longer one becomes its first 40
/// characters, `-`, and the first 12 hex digits of the SHA-256 of the whole name.
fn shorten(name: &str) -> String {
    use sha2::Digest;
    if name.len() <= 53 {
        return name.to_string();
    }
    let digest = sha2::Sha256::digest(name.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    let cut = name
        .char_indices()
        .take_while(|(i, _)| *i < 40)
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8());
    format!("{}-{hex}", &name[..cut])
}

/// The namespace the release installs into: `spec.targetNamespace`, else its own.
#[must_use]
pub fn release_namespace(release: &Node) -> String {
    release
        .str_at(&["spec", "targetNamespace"])
        .filter(|n| !n.is_empty())
        .or_else(|| release.str_at(&["metadata", "namespace"]))
        .unwrap_or("default")
        .to_string()
}

/// Whether helm-controller installs the chart's `crds/` for this release (`install.crds`:
/// `Create` by default, `Skip` leaves them out).
fn installs_crds(release: &Node) -> bool {
    release.str_at(&["spec", "install", "crds"]) != Some("Skip")
}

/// What the render needs besides the release.
pub(crate) struct Setup<'a> {
    pub fs: &'a dyn Fs,
    pub root: &'a Path,
    pub files: &'a ChartFiles,
    pub kube_version: Option<String>,
    /// `group/version` and `group/version/Kind` of the environment's CRDs.
    pub api_versions: Vec<String>,
}

/// Renders the chart `source` (a cache path) for `release` with its effective `values`.
pub(crate) fn install(
    setup: &Setup<'_>,
    chart: &fluxgate_flux::helm::Chart,
    release: &Node,
    values: &Values,
) -> Result<Installed, Vec<Problem>> {
    let source = chart.source.as_str();
    let at = values
        .chart
        .as_ref()
        .map_or_else(|| release.loc.clone(), |c| c.location.clone());
    let id = crate::environment::object_id(release);
    let problem = |message: String| {
        Box::new(
            Problem::new(ProblemKind::ChartRender, message, Some(at.clone()))
                .help("run `fluxgate template` on the chart with the release's values to see the whole error"),
        )
    };
    let text_problem = |e: &str| {
        let mut p = problem(format!("HelmRelease {id}: chart {source}: {e}"));
        // Helm's text names the template line that failed: the finding's place, beside the
        // release.
        if let Some(line) = template_position(source, e) {
            p.location = Some(line);
            *p = p.related(
                at.clone(),
                format!("HelmRelease {id} installs the chart here"),
            );
        }
        p
    };
    let files = match &chart.archive {
        // A fetched chart, verified against the lock: already in memory.
        Some(bytes) => Arc::new(Ok(Source::Archive(bytes.to_vec()))),
        None => setup.files.get(setup.fs, setup.root, source),
    };
    let files = match files.as_ref() {
        Ok(f) => f,
        Err(e) => {
            return Err(vec![*problem(format!(
                "HelmRelease {id}: chart {source} cannot be read: {e}"
            ))]);
        }
    };
    let release_name = release_name(release);
    let namespace = release_namespace(release);
    let include_crds = installs_crds(release);
    let values_tree = values.user.clone();
    let kube_version = setup.kube_version.clone();
    let api_versions = setup.api_versions.clone();
    let (name, ns) = (release_name.clone(), namespace.clone());
    // helm-controller validates the values against the charts' values.schema.json unless
    // the release turns it off.
    let skip_schema = release
        .path(&["spec", "install", "disableSchemaValidation"])
        .and_then(Node::as_bool)
        == Some(true);
    // Charts hold `Rc`s: each render loads its own copy on a thread with a deep stack.
    let rendered = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("helm-release".into())
            .stack_size(STACK)
            .spawn_scoped(scope, move || -> Result<Render, Failed> {
                let chart = match files {
                    Source::Archive(bytes) => fluxgate_helm::Chart::from_archive(bytes, source),
                    Source::Folder(f) => fluxgate_helm::Chart::from_folder(f.clone(), source),
                }
                .map_err(|e| Failed::Text(e.to_string()))?;
                let opts = fluxgate_helm::Options {
                    release_name: name,
                    namespace: ns,
                    values: fluxgate_helm::convert::from_yaml_node(&values_tree),
                    kube_version,
                    api_versions,
                    skip_tests: true,
                    include_crds,
                    skip_schema_validation: skip_schema,
                };
                match fluxgate_helm::render_manifests(chart.clone(), &opts) {
                    Ok(r) => Ok(Render {
                        manifests: r.manifests,
                        unchecked: Vec::new(),
                    }),
                    // Only schemas that cannot be read offline (a `$ref` helm would fetch):
                    // rendered without them, and said.
                    Err(fluxgate_helm::Error::Schema(f)) if f.violations.is_empty() => {
                        let opts = fluxgate_helm::Options {
                            skip_schema_validation: true,
                            ..opts
                        };
                        let r = fluxgate_helm::render_manifests(chart, &opts)
                            .map_err(|e| Failed::Text(e.to_string()))?;
                        Ok(Render {
                            manifests: r.manifests,
                            unchecked: f.unloadable.iter().map(|u| u.message.clone()).collect(),
                        })
                    }
                    Err(fluxgate_helm::Error::Schema(f)) => Err(Failed::Schema(f)),
                    Err(fluxgate_helm::Error::Template {
                        file,
                        line,
                        column,
                        message,
                        ..
                    }) => Err(Failed::Template {
                        file,
                        line,
                        column,
                        message,
                    }),
                    Err(e) => Err(Failed::Text(e.to_string())),
                }
            })
            .map_err(|e| Failed::Text(format!("cannot start the render thread: {e}")))?
            .join()
            .unwrap_or_else(|_| Err(Failed::Text("the chart render panicked".into())))
    });
    let rendered = match rendered {
        Ok(r) => r,
        Err(Failed::Schema(f)) => {
            return Err(schema_problems(&f, &id, source, values, &at));
        }
        Err(Failed::Text(e)) => return Err(vec![*text_problem(&e)]),
        // The template line Helm names is the finding's place, the release beside it.
        Err(Failed::Template {
            file,
            line,
            column,
            message,
        }) => {
            let at_template = Location::new(
                cache_file(source, &file),
                u32::try_from(line).unwrap_or(u32::MAX),
                u32::try_from(column).unwrap_or(u32::MAX),
            );
            let p = *problem(format!("HelmRelease {id}: chart {source}: {message}"));
            let mut p = p.related(
                at.clone(),
                format!("HelmRelease {id} installs the chart here"),
            );
            p.location = Some(at_template);
            return Err(vec![p]);
        }
    };
    let schema_unchecked = rendered.unchecked.first().cloned();
    let manifests = rendered.manifests;
    let mut crds = Vec::new();
    let mut rest = Vec::new();
    for m in &manifests {
        if is_test_hook(m) || (m.crd && !include_crds) {
            continue;
        }
        let located = Located {
            source,
            manifest: m,
            values,
        };
        for mut node in located.objects() {
            set_namespace(&mut node, &namespace);
            if m.crd {
                crds.push(node);
            } else {
                rest.push(node);
            }
        }
    }
    let mut objects = crds;
    objects.extend(crate::postrender::post_render(release, rest).map_err(|p| vec![*p])?);
    Ok(Installed {
        chart: source.to_string(),
        release_name,
        namespace,
        objects,
        schema_unchecked,
    })
}

/// The template position in Helm's error text (`execution error at (c/templates/x.yaml:6:14)`,
/// `template: c/templates/x.yaml:3:4: ...`, `parse error at (c/templates/x.yaml:2): ...`), as a
/// place in the cache.
fn template_position(source: &str, error: &str) -> Option<Location> {
    static POSITION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?:^|\(|template: )([^\s():]+\.[A-Za-z]+):(\d+)(?::(\d+))?")
            .expect("static regex")
    });
    let caps = POSITION.captures(error)?;
    let line = caps[2].parse().ok()?;
    let column = caps
        .get(3)
        .and_then(|c| c.as_str().parse().ok())
        .unwrap_or(1);
    Some(Location::new(cache_file(source, &caps[1]), line, column))
}

/// The file a `# Source:` path of the output lives at in the cache: inside an archive the
/// members keep the chart's folder (`charts/cilium-1.17.18.tgz/cilium/templates/x.yaml`); an
/// unpacked chart's folder stands for it (`charts/cilium/templates/x.yaml`).
fn cache_file(source: &str, template: &str) -> String {
    if Path::new(source)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tgz"))
    {
        format!("{source}/{template}")
    } else {
        let rest = template.split_once('/').map_or(template, |(_, r)| r);
        format!("{source}/{rest}")
    }
}

/// A test hook runs on `helm test` (Flux's `spec.test`), not on install.
fn is_test_hook(m: &fluxgate_helm::Manifest) -> bool {
    m.hook.as_deref().is_some_and(|h| {
        h.split(',')
            .any(|e| matches!(e.trim(), "test" | "test-success"))
    })
}

/// One rendered document and what locates its values.
struct Located<'a> {
    source: &'a str,
    manifest: &'a fluxgate_helm::Manifest,
    values: &'a Values,
}

impl Located<'_> {
    /// The document's objects, every node at the line that set it: a value from the chart's
    /// values at that value's origin (the release's values line, the chart's values.yaml
    /// line), a literal at its template line.
    fn objects(&self) -> Vec<Node> {
        let file = cache_file(self.source, &self.manifest.source);
        let text = &self.manifest.text;
        let stream = parse_stream(&file, text, Schema::Kube);
        let lines: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut out = Vec::new();
        for mut node in stream.docs {
            if node.as_map().is_none() {
                continue;
            }
            let top = Location::file(file.clone());
            self.locate(&mut node, &lines, None, &top);
            out.push(node);
        }
        out
    }

    /// Locates `node` and what is below it. `block`: the span the parent was written by and
    /// the values path the parent has in it, when that span printed values.
    fn locate(
        &self,
        node: &mut Node,
        lines: &[usize],
        block: Option<(usize, &str)>,
        parent: &Location,
    ) {
        let text = &self.manifest.text;
        let offset = lines
            .get(node.loc.line.saturating_sub(1) as usize)
            .map(|start| {
                let col = node.loc.column.saturating_sub(1) as usize;
                text[*start..]
                    .char_indices()
                    .nth(col)
                    .map_or(text.len(), |(i, _)| start + i)
            });
        let spans = &self.manifest.spans;
        let found = offset.and_then(|o| {
            let i = spans.partition_point(|s| s.end <= o);
            spans.get(i).filter(|s| s.start <= o).map(|s| (i, s))
        });
        let mut here: Option<(usize, String)> = None;
        node.loc = match found {
            Some((
                _,
                fluxgate_helm::Span {
                    start,
                    origin: fluxgate_helm::SpanOrigin::Template { file, line, column },
                    ..
                },
            )) => {
                // The span starts at `line:column` of the template: the node's own column is
                // further right when the span's text before it is on the same line.
                let before = offset.and_then(|o| text.get(*start..o)).unwrap_or_default();
                let column = if before.contains('\n') {
                    *column
                } else {
                    column.saturating_add(u32::try_from(before.chars().count()).unwrap_or(0))
                };
                Location::new(cache_file(self.source, file), *line, column)
            }
            Some((
                i,
                fluxgate_helm::Span {
                    origin: fluxgate_helm::SpanOrigin::Values { path },
                    ..
                },
            )) => {
                // Inside a block printed whole (`toYaml .Values.x`) the path continues from
                // the parent's; a node that starts a span starts at the span's path.
                let at = match block {
                    Some((b, p)) if b == i => p.to_string(),
                    _ => path.clone(),
                };
                let loc = self.origin(&at).unwrap_or_else(|| parent.clone());
                here = Some((i, at));
                loc
            }
            None => parent.clone(),
        };
        let here_loc = node.loc.clone();
        match &mut node.value {
            Value::Map(m) => {
                for (k, v) in m.iter_mut() {
                    let child = here.as_ref().map(|(i, p)| (*i, join_key(p, k)));
                    self.locate(
                        v,
                        lines,
                        child.as_ref().map(|(i, p)| (*i, p.as_str())),
                        &here_loc,
                    );
                }
            }
            Value::Seq(items) => {
                for (n, v) in items.iter_mut().enumerate() {
                    let child = here.as_ref().map(|(i, p)| (*i, format!("{p}[{n}]")));
                    self.locate(
                        v,
                        lines,
                        child.as_ref().map(|(i, p)| (*i, p.as_str())),
                        &here_loc,
                    );
                }
            }
            _ => {}
        }
    }

    /// Where the value at `path` of the release's values was set: the most direct origin of
    /// that leaf, else of the first leaf below it.
    fn origin(&self, path: &str) -> Option<Location> {
        origin_of(&self.values.origins, path)
    }
}

/// Where the value at `path` of a release's values was set: the most direct origin of that
/// leaf, else of the first leaf below it.
fn origin_of(origins: &fluxgate_flux::helm::Origins, path: &str) -> Option<Location> {
    if let Some(chain) = origins.get(path) {
        return chain.first().map(|o| o.location.clone());
    }
    let below = [format!("{path}."), format!("{path}[")];
    origins
        .range(path.to_string()..)
        .take_while(|(k, _)| k.starts_with(path))
        .find(|(k, _)| below.iter().any(|b| k.starts_with(b.as_str())))
        .and_then(|(_, chain)| chain.first())
        .map(|o| o.location.clone())
}

/// `parent.key`, a dot in the key escaped as the values paths write it.
fn join_key(parent: &str, key: &str) -> String {
    let key = key.replace('.', "\\.");
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

fn set_namespace(obj: &mut Node, namespace: &str) {
    let api = obj.str_at(&["apiVersion"]).unwrap_or_default();
    let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
    let kind = obj.str_at(&["kind"]).unwrap_or_default();
    if fluxgate_kustomize::is_cluster_scoped(group, version, kind)
        || obj
            .str_at(&["metadata", "namespace"])
            .is_some_and(|n| !n.is_empty())
    {
        return;
    }
    let loc = obj.loc.clone();
    let Some(m) = obj.as_map_mut() else {
        return;
    };
    let md = m
        .entry("metadata".to_string())
        .or_insert_with(|| Node::map(loc.clone()));
    if let Some(md) = md.as_map_mut() {
        md.insert("namespace".into(), Node::string(namespace, loc));
    }
}

/// What `.Capabilities.APIVersions` holds for the charts of an environment: the
/// `group/version` and `group/version/Kind` of every CustomResourceDefinition among `objects`
/// and of every object they are (an API the environment applies objects of is one the cluster
/// serves, or Flux would fail to apply them: a chart's `.Capabilities.APIVersions.Has
/// "monitoring.coreos.com/v1"` holds where the repository has ServiceMonitors).
pub(crate) fn api_versions<'a>(objects: impl Iterator<Item = &'a Node>) -> Vec<String> {
    let mut out = Vec::new();
    for obj in objects {
        if let (Some(api), Some(kind)) = (obj.str_at(&["apiVersion"]), obj.str_at(&["kind"]))
            && api.contains('/')
        {
            out.push(api.to_string());
            out.push(format!("{api}/{kind}"));
        }
        if obj.str_at(&["kind"]) != Some("CustomResourceDefinition") {
            continue;
        }
        let (Some(group), Some(kind)) = (
            obj.str_at(&["spec", "group"]),
            obj.str_at(&["spec", "names", "kind"]),
        ) else {
            continue;
        };
        for v in obj
            .path(&["spec", "versions"])
            .and_then(Node::as_seq)
            .into_iter()
            .flatten()
        {
            if let Some(name) = v.str_at(&["name"]) {
                out.push(format!("{group}/{name}"));
                out.push(format!("{group}/{name}/{kind}"));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hr(yaml: &str) -> Node {
        parse_stream("hr.yaml", yaml, Schema::Kube)
            .docs
            .into_iter()
            .next()
            .unwrap()
    }

    #[test]
    fn release_names_follow_helm_controller() {
        assert_eq!(
            release_name(&hr("metadata: {name: cilium, namespace: kube-system}")),
            "cilium"
        );
        assert_eq!(
            release_name(&hr(
                "metadata: {name: app, namespace: flux-system}\nspec: {targetNamespace: media}"
            )),
            "media-app"
        );
        assert_eq!(
            release_name(&hr(
                "metadata: {name: app}\nspec: {targetNamespace: media, releaseName: x}"
            )),
            "x"
        );
        let long = release_name(&hr(&format!("metadata: {{name: {}}}", "a".repeat(60))));
        assert_eq!(long.len(), 53);
        assert!(long.starts_with(&"a".repeat(40)));
    }

    #[test]
    fn helm_errors_name_their_template_line() {
        let at = |e: &str| template_position("charts/vip", e).map(|l| l.to_string());
        assert_eq!(
            at("execution error at (vip/templates/cm.yaml:6:14): config.address is required")
                .as_deref(),
            Some("charts/vip/templates/cm.yaml:6:14")
        );
        assert_eq!(
            at("parse error at (vip/templates/_helpers.tpl:2): unexpected EOF").as_deref(),
            Some("charts/vip/templates/_helpers.tpl:2:1")
        );
        assert_eq!(
            at("template: vip/templates/x.yaml:3:4: executing \"x\" at <.a.b>: nil pointer")
                .as_deref(),
            Some("charts/vip/templates/x.yaml:3:4")
        );
        assert_eq!(
            at("app/templates/common.yaml:14:3\n  executing \"app/templates/common.yaml\"")
                .as_deref(),
            Some("charts/vip/templates/common.yaml:14:3")
        );
        assert_eq!(at("chart dependencies processing failed"), None);
    }

    #[test]
    fn archive_members_keep_the_chart_folder() {
        assert_eq!(
            cache_file("charts/cilium-1.17.18.tgz", "cilium/templates/a.yaml"),
            "charts/cilium-1.17.18.tgz/cilium/templates/a.yaml"
        );
        assert_eq!(
            cache_file("charts/cilium-1.16.5", "cilium/templates/a.yaml"),
            "charts/cilium-1.16.5/templates/a.yaml"
        );
    }
}
