//! What Helm installs (SPEC §3.4): each HelmRelease whose chart is in the chart cache renders
//! into the objects `helm template` prints for it, with the release name, namespace, values and
//! CRD policy helm-controller uses. The objects join the environment, so every rule, policy and
//! schema check sees them.

mod failure;
mod files;
mod locate;
mod notes;

use std::path::Path;
use std::sync::Arc;

use fluxgate_flux::helm::Values;
use fluxgate_kustomize::Fs;
use fluxgate_yaml::Node;

use crate::problem::Problem;
use failure::{Failed, Render};
pub(crate) use files::ChartFiles;
use files::Source;
use locate::{Located, is_test_hook};
pub(crate) use notes::notes;

/// Stack for one render: `include` inside `tpl` inside `range` recurses deeply.
const STACK: usize = 256 << 20;

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
    let hex = digest.iter().take(6).fold(String::new(), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    });
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

/// Renders `chart` for `release` with its effective `values`: the objects it installs, or the
/// render findings that say why helm-controller's install would fail.
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
    let files = match &chart.archive {
        // A fetched chart, verified against the lock: already in memory.
        Some(bytes) => setup.files.fetched(bytes),
        None => setup.files.get(setup.fs, setup.root, source),
    };
    if let Err(e) = files.as_ref() {
        let message = format!("HelmRelease {id}: chart {source} cannot be read: {e}");
        return Err(vec![failure::at_release(message, &at)]);
    }
    let release_name = release_name(release);
    let namespace = release_namespace(release);
    let include_crds = installs_crds(release);
    let request = Request {
        source,
        release_name: release_name.clone(),
        namespace: namespace.clone(),
        values: values.user.clone(),
        include_crds,
        // helm-controller validates the values against the charts' values.schema.json unless
        // the release turns it off.
        skip_schema: release
            .path(&["spec", "install", "disableSchemaValidation"])
            .and_then(Node::as_bool)
            == Some(true),
    };
    let rendered = render(setup, files.clone(), request)
        .map_err(|failed| failure::problems(failed, &id, source, values, &at))?;
    let mut crds = Vec::new();
    let mut rest = Vec::new();
    for m in &rendered.manifests {
        if is_test_hook(m) || (m.crd && !include_crds) {
            continue;
        }
        let located = Located {
            source,
            manifest: m,
            values,
            last_file: std::cell::RefCell::default(),
        };
        let objects = located
            .objects()
            .map_err(|e| failure::problems(Failed::Text(e), &id, source, values, &at))?;
        for mut node in objects {
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
        schema_unchecked: rendered.unchecked.first().cloned(),
    })
}

/// What one render asks Helm for.
struct Request<'a> {
    source: &'a str,
    release_name: String,
    namespace: String,
    /// What helm-controller hands Helm ([`Values::user`]).
    values: Node,
    include_crds: bool,
    skip_schema: bool,
}

/// `helm template` of the chart in `files` for `request`, traced. A schema that cannot be read
/// offline (a `$ref` helm would fetch) is rendered without, and said.
fn render(
    setup: &Setup<'_>,
    files: Arc<Result<Source, files::ReadError>>,
    request: Request<'_>,
) -> Result<Render, Failed> {
    let source = request.source.to_string();
    let (kube_version, api_versions) = (setup.kube_version.clone(), setup.api_versions.clone());
    // Charts hold `Rc`s: each render makes its own copy on the thread it runs on.
    let work = move || -> Result<Render, Failed> {
        let source = source.as_str();
        let chart = loaded(&files, source)?;
        let opts = fluxgate_helm::Options {
            release_name: request.release_name,
            namespace: request.namespace,
            values: fluxgate_helm::convert::from_yaml_node(&request.values),
            kube_version,
            api_versions,
            skip_tests: true,
            include_crds: request.include_crds,
            skip_schema_validation: request.skip_schema,
            unloadable_schemas: fluxgate_helm::UnloadableSchemas::RenderPast,
        };
        let r = fluxgate_helm::render_manifests(chart, &opts).map_err(Failed::from)?;
        Ok(Render {
            manifests: r.manifests,
            unchecked: r.unchecked,
        })
    };
    if DEEP.get() {
        // A render that panics is that release's failure, not the run's.
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
            .unwrap_or_else(|_| Err(Failed::Text("the chart render panicked".into())));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(work());
    });
    let sent = RENDERERS
        .as_ref()
        .is_some_and(|queue| queue.lock().is_ok_and(|q| q.send(job).is_ok()));
    if !sent {
        return Err(Failed::Text("cannot start the chart render threads".into()));
    }
    // A render that panicked dropped its sender: that release's failure, not the run's.
    rx.recv()
        .unwrap_or_else(|_| Err(Failed::Text("the chart render panicked".into())))
}

/// How many loaded charts the process keeps.
const LOADED_CHARTS: usize = 8;

/// A chart loaded for the process: its source, the files it was loaded from (held, so that
/// the address is not reused) and the chart.
type LoadedChart = (String, files::Read, Arc<fluxgate_helm::Frozen>);

/// The charts loaded last, most recent last: the releases of one chart (app-template above
/// all) load it once, on whichever render thread they run, and so do the environments that
/// read the same files (compared whole: a mutant's overlay may change one).
static LOADED: std::sync::Mutex<Vec<LoadedChart>> = std::sync::Mutex::new(Vec::new());

/// The chart in `files`, loaded (or reused from the last loads), as a copy for one render.
fn loaded(files: &files::Read, source: &str) -> Result<fluxgate_helm::Chart, Failed> {
    // A poisoned memo still holds only charts that loaded.
    let memo = || {
        LOADED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let hit = {
        let mut memo = memo();
        let i = memo
            .iter()
            .position(|(s, f, _)| s == source && Arc::ptr_eq(f, files))
            .or_else(|| {
                memo.iter()
                    .position(|(s, f, _)| s == source && files::same_content(f, files))
            });
        i.map(|i| {
            let entry = memo.remove(i);
            let chart = entry.2.clone();
            memo.push(entry);
            chart
        })
    };
    if let Some(chart) = hit {
        return Ok(chart.thaw());
    }
    let chart = match files.as_ref() {
        Ok(Source::Archive(bytes)) => fluxgate_helm::Frozen::from_archive(bytes, source),
        Ok(Source::Folder(f)) => fluxgate_helm::Frozen::from_folder(f, source),
        Err(e) => return Err(Failed::Text(e.to_string())),
    }
    .map_err(|e| Failed::Text(e.to_string()))?;
    let chart = Arc::new(chart);
    let mut memo = memo();
    if !memo
        .iter()
        .any(|(s, f, _)| s == source && Arc::ptr_eq(f, files))
    {
        if memo.len() >= LOADED_CHARTS {
            memo.remove(0);
        }
        memo.push((source.to_string(), files.clone(), chart.clone()));
    }
    drop(memo);
    Ok(chart.thaw())
}

std::thread_local! {
    /// Whether this thread's stack is [`STACK`] deep: a worker of a pool [`deep_stacks`] set up.
    static DEEP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `pool` with workers that render charts in place, on stacks of [`STACK`] (address space:
/// the pages a render touches are all it costs). A render on any other thread is handed to
/// a render thread and waited for; on the worker that needs it, its memory is the worker's
/// own allocator heap, which the parse of what it printed and the next render reuse (a
/// render thread's heap was its alone: onedr0p with charts touched 900 pages more).
pub fn deep_stacks(pool: rayon::ThreadPoolBuilder) -> rayon::ThreadPoolBuilder {
    pool.stack_size(STACK).start_handler(|_| DEEP.set(true))
}

/// One render, run on a render thread.
type Job = Box<dyn FnOnce() + Send>;

/// The threads charts render on, with deep stacks, kept for the whole run (a fresh thread per
/// render paid for its allocator's fresh pages every time). A caller waits for its own render
/// and does nothing else meanwhile, so renders never nest on a caller's (small) stack.
static RENDERERS: std::sync::LazyLock<Option<std::sync::Mutex<std::sync::mpsc::Sender<Job>>>> =
    std::sync::LazyLock::new(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        // As many as the callers that can wait at once (each waits for its own render): one
        // more would only spread the renders' memory over another allocator heap.
        let threads = rayon::current_num_threads().max(1);
        for i in 0..threads {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("helm-release-{i}"))
                .stack_size(STACK)
                .spawn(move || {
                    loop {
                        let next = match rx.lock() {
                            Ok(queue) => queue.recv(),
                            Err(_) => return,
                        };
                        let Ok(job) = next else { return };
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    }
                })
                .ok()?;
        }
        Some(std::sync::Mutex::new(tx))
    });

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
    use fluxgate_yaml::{Schema, parse_stream};

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

    /// A loaded chart serves a later read of the same bytes (another environment's, on any
    /// render thread), not one whose files changed (a mutant's overlay, another version).
    #[test]
    fn loaded_charts_are_reused_only_for_the_same_files() {
        let read = |version: &str| -> files::Read {
            Arc::new(Ok(Source::Folder(vec![
                (
                    "Chart.yaml".into(),
                    Arc::from(
                        format!("apiVersion: v2\nname: demo\nversion: {version}\n").as_bytes(),
                    ),
                ),
                (
                    "templates/cm.yaml".into(),
                    Arc::from(&b"kind: ConfigMap\n"[..]),
                ),
            ])))
        };
        let load = |version: &str| {
            loaded(&read(version), "reuse-test").unwrap_or_else(|_| panic!("{version} loads"))
        };
        let (first, same, changed) = (load("1.0.0"), load("1.0.0"), load("2.0.0"));
        assert_eq!(
            (same.version.as_str(), changed.version.as_str()),
            ("1.0.0", "2.0.0")
        );
        // Reused: the template texts are the first load's, shared by address.
        assert!(Arc::ptr_eq(&first.templates[0].1, &same.templates[0].1));
        assert!(!Arc::ptr_eq(&first.templates[0].1, &changed.templates[0].1));
    }
}
