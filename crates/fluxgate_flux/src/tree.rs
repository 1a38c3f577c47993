//! The Flux Kustomization tree of one environment (SPEC §3.2).
//!
//! From the entry directory (its kustomization file, or the one Flux generates from every YAML
//! file below it), every Flux `Kustomization` whose source is this repository (the source the
//! environment's root Kustomization reconciles from) or a source mapped to a local folder is
//! rendered: its `spec.path` with its own spec applied the way kustomize-controller's
//! generator applies it (targetNamespace, namePrefix/nameSuffix, patches, images, components;
//! commonMetadata on every object), then post-build substitution. The Kustomizations that
//! appear in the output are rendered in turn until none is new. `dependsOn` targets that do
//! not exist, dependency cycles, duplicate Kustomizations and paths that leave the repository
//! are findings.
//!
//! The repository is read as source-controller archives it: `.sourceignore` files and the
//! GitRepository's `spec.ignore` (or, without any pattern, Flux's default excludes such as
//! `.git/`, `.github/`, `**/.sops.yaml`, `*.png`) hide files from every Kustomization, generated
//! or not (see [`crate::ignore`]).

use fluxgate_diagnostics::Annotate;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use fluxgate_diagnostics::Location;
use fluxgate_kustomize::{CachedFs, Fs, KUSTOMIZATION_FILES, Override, build_with, normalize};
use fluxgate_yaml::{Map, Node, Schema, Value, parse_one};

use rayon::prelude::*;

use crate::ignore::{IgnoreFs, SourceIgnore};
use crate::lookup::ObjectIndex;
use crate::problem::{Problem, ProblemKind};
use crate::substitute::{self, Options, Substituted};
use crate::vars::Vars;

/// How the tree is rendered.
#[derive(Clone, Debug, Default)]
pub struct TreeOptions {
    /// Flux sources that are not this repository: source name -> folder relative to the root.
    pub sources: BTreeMap<String, String>,
    /// Substitution options (strict by default).
    pub substitution: Options,
    /// Controllers fluxgate.yaml declares as creating Secrets or ConfigMaps at runtime, beside
    /// the built-in ones ([`crate::vars::builtin_creators`]).
    pub extra_creators: Vec<crate::vars::RuntimeCreator>,
    /// Keep each Kustomization's objects as kustomize built them, before post-build
    /// substitution and `commonMetadata` ([`FluxKustomization::built`]): for differential
    /// tests against `kubectl kustomize`.
    pub keep_built: bool,
    /// The folder of the Git repository that the rendered root is: a `spec.path` of this
    /// repository's sources that starts with it is read with it stripped.
    pub repo_prefix: Option<String>,
    /// Objects the bootstrap creates before Flux runs (a template a task runner applies): a
    /// `substituteFrom` source among them exists, its keys unknown offline.
    pub seeded: Vec<crate::vars::Seeded>,
}

/// One rendered Flux Kustomization.
#[derive(Clone, Debug)]
pub struct FluxKustomization {
    pub namespace: String,
    pub name: String,
    /// The Kustomization object itself, as the environment renders it.
    pub object: Node,
    /// The folder it renders, relative to the repository root.
    pub path: String,
    /// Its rendered (and substituted) objects.
    pub objects: Vec<Node>,
    /// For each of [`Self::objects`] (same index), the values its kustomize patches replaced:
    /// where the base had the value and which patch set it ([`Override`]).
    pub overrides: Vec<Vec<Override>>,
    /// Its objects as kustomize built them (before substitution and `commonMetadata`), when
    /// [`TreeOptions::keep_built`] is set; empty otherwise.
    pub built: Vec<Node>,
    /// Values that came from post-build variables.
    pub substituted: Vec<Substituted>,
    /// The post-build variables Flux had for it (inline `substitute` and `substituteFrom`,
    /// each with its origin), as substitution used them: recorded once here so that readers
    /// (parity's mirror files) never load them again.
    pub vars: Vars,
    /// Why Flux fails this Kustomization's build, if it does: a parse error or failed operator
    /// in one resource, a result that is no longer YAML, an unset variable in strict mode, a
    /// variable source that cannot load. Then nothing of it is applied; [`Self::objects`]
    /// still holds what fluxgate rendered, so that the rest can be checked.
    pub failure: Option<String>,
    /// The ConfigMaps and Secrets its `substituteFrom` read, when [`TreeOptions::keep_built`]
    /// is set (for the differential test against Flux's code); empty otherwise.
    pub var_sources: Vec<Node>,
}

impl FluxKustomization {
    #[must_use]
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// An environment's Flux tree.
#[derive(Clone, Debug, Default)]
pub struct Tree {
    /// The objects the entry directory renders when no Flux Kustomization reconciles it. When
    /// the environment's root Kustomization reconciles the entry (its `spec.path` is the entry),
    /// this is empty: the entry's objects are that Kustomization's, rendered with its spec and
    /// substitution, and appear once.
    pub entry_objects: Vec<Node>,
    /// Every Kustomization reached, in the order they were rendered.
    pub kustomizations: Vec<FluxKustomization>,
    pub problems: Vec<Problem>,
}

impl Tree {
    /// Every object of the environment: the entry's, then each Kustomization's.
    pub fn objects(&self) -> impl Iterator<Item = &Node> {
        self.entry_objects
            .iter()
            .chain(self.kustomizations.iter().flat_map(|k| k.objects.iter()))
    }

    /// For each of [`Self::kustomizations`] (same index), why Flux applies nothing of it:
    /// its own [`FluxKustomization::failure`], or that the Kustomization which declares it
    /// fails (a failed build applies no object, the child Kustomization included). `None`
    /// for those Flux applies.
    #[must_use]
    pub fn not_applied(&self) -> Vec<Option<String>> {
        let mut out: Vec<Option<String>> = Vec::with_capacity(self.kustomizations.len());
        for k in &self.kustomizations {
            let parent = self.kustomizations.iter().zip(&out).find(|(p, why)| {
                why.is_some()
                    && p.objects.iter().any(|o| {
                        is_flux_kustomization(o)
                            && o.str_at(&["metadata", "name"]) == Some(k.name.as_str())
                            && ns_of(o) == k.namespace
                    })
            });
            out.push(match (&k.failure, parent) {
                (Some(why), _) => Some(why.clone()),
                (None, Some((p, _))) => Some(format!(
                    "it is declared by Kustomization {}, which fails",
                    p.id()
                )),
                (None, None) => None,
            });
        }
        out
    }

    /// The objects Flux applies: the entry's, then those of each Kustomization that does not
    /// fail ([`Self::not_applied`]).
    pub fn applied_objects(&self) -> impl Iterator<Item = &Node> {
        let not_applied = self.not_applied();
        self.entry_objects.iter().chain(
            self.kustomizations
                .iter()
                .zip(not_applied)
                .filter(|(_, why)| why.is_none())
                .flat_map(|(k, _)| k.objects.iter()),
        )
    }
}

/// Whether `obj` is a Flux Kustomization (not a kustomize `Kustomization` file).
#[must_use]
pub fn is_flux_kustomization(obj: &Node) -> bool {
    obj.str_at(&["kind"]) == Some("Kustomization")
        && obj
            .str_at(&["apiVersion"])
            .is_some_and(|a| a.starts_with("kustomize.toolkit.fluxcd.io/"))
}

/// Objects that `substituteFrom` can read, or that create one at runtime.
fn is_variable_source(obj: &Node) -> bool {
    matches!(
        obj.str_at(&["kind"]),
        Some("ConfigMap" | "Secret" | "ExternalSecret" | "SealedSecret")
    )
}

fn ns_of(obj: &Node) -> String {
    obj.str_at(&["metadata", "namespace"])
        .unwrap_or("flux-system")
        .to_string()
}

fn id_of(obj: &Node) -> String {
    format!(
        "{}/{}",
        ns_of(obj),
        obj.str_at(&["metadata", "name"]).unwrap_or_default()
    )
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A Flux Kustomization waiting to be rendered.
struct Pending {
    ks: Node,
    /// Deferred once already (its variables' source was missing).
    retried: bool,
    /// Its kustomize build, when done ahead.
    built: Option<Prebuilt>,
    /// Its build finished ahead (substituted) with the variables it had then.
    ahead: Option<Ahead>,
}

impl Pending {
    fn new(ks: Node, retried: bool) -> Pending {
        Pending {
            ks,
            retried,
            built: None,
            ahead: None,
        }
    }

    /// Whether nothing of it has been built yet.
    fn is_waiting(&self) -> bool {
        self.built.is_none() && self.ahead.is_none()
    }
}

/// A Kustomization rendered ahead of its turn, in parallel with the others of its level, with
/// the variables its sources gave before the level: used when its turn comes and the
/// variables are still those (a source rendered earlier in the level may change them; then
/// it is rendered again in turn), so the tree is the same as one rendered one by one.
struct Ahead {
    dir: PathBuf,
    vars: Vars,
    rendered: Option<FluxKustomization>,
    problems: Vec<Problem>,
}

/// A Kustomization's kustomize build: the folder it was built over, its objects (`None`: the
/// folder has nothing to build) and the problems of the build.
struct Prebuilt {
    dir: PathBuf,
    /// The objects, and for each the values patches replaced in it.
    objects: Option<(Vec<Node>, Vec<Vec<Override>>)>,
    diagnostics: Vec<Problem>,
}

struct Renderer<'a> {
    /// The repository as the source artifact holds it (ignore rules applied).
    /// Shared files (components, bases) are parsed once for the whole tree.
    fs: CachedFs<IgnoreFs<'a>>,
    root: PathBuf,
    opts: &'a TreeOptions,
    /// `Kind/ns/name` of the sources that are this repository.
    repo_sources: BTreeSet<String>,
    problems: Vec<Problem>,
    /// The entry folder, when the ignore rules leave it out of the artifact (reported once:
    /// the root Kustomization that reconciles it is not reported again).
    entry_left_out: Option<PathBuf>,
}

/// Renders the Flux tree entered at `entry` (a folder relative to `root`).
#[must_use]
pub fn render_tree(fs: &dyn Fs, root: &Path, entry: &str, opts: &TreeOptions) -> Tree {
    let root = normalize(root);
    // The GitRepository that is this repository is found in the files as committed: its own
    // `spec.ignore` may re-include what a `.sourceignore` leaves out (`/kubernetes/` in the
    // file, `!/kubernetes/kyak` in the spec), and bootstrap applies it either way.
    let mut r = Renderer {
        fs: CachedFs::new(IgnoreFs::new(fs, &root, SourceIgnore::nothing())),
        root: root.clone(),
        opts,
        repo_sources: BTreeSet::new(),
        problems: Vec::new(),
        entry_left_out: None,
    };
    let entry_dir = normalize(&root.join(entry));
    let entry_loc = Location::file(entry.trim_end_matches('/').to_string());
    let committed = r.render_entry(&entry_dir, &entry_loc);
    let root_ks = r.find_repo_sources(&committed, &entry_dir);
    // `spec.ignore` patterns name paths from the top of the Git repository: with a prefix
    // (this folder is a subfolder of it), they are read with it taken off.
    let spec_ignore = r
        .repo_spec_ignore(&committed)
        .map(|text| match &opts.repo_prefix {
            Some(prefix) => text.replace(&format!("/{prefix}/"), "/"),
            None => text,
        });
    let rules = SourceIgnore::load(fs, &root, spec_ignore.as_deref());
    r.fs = CachedFs::new(IgnoreFs::new(fs, &root, rules));
    r.problems.clear();
    if fs.is_dir(&entry_dir) && !r.fs.is_dir(&entry_dir) {
        r.entry_left_out = Some(entry_dir.clone());
        r.problems.push(Problem::new(
            ProblemKind::MissingPath {
                path: entry.trim_end_matches('/').to_string(),
            },
            format!(
                "the entry folder {} is left out of the source artifact by the ignore rules \
                 (.sourceignore, the GitRepository's spec.ignore): Flux finds no such path",
                entry.trim_end_matches('/')
            ),
            Some(entry_loc.clone()),
        ));
    }
    let raw_entry = r.render_entry(&entry_dir, &entry_loc);

    let mut tree = Tree::default();
    if root_ks.is_none() {
        tree.entry_objects.clone_from(&raw_entry);
    }
    let mut first_seen: BTreeMap<String, Location> = BTreeMap::new();
    // The self-reconciling root renders the entry itself, with its own spec (Flux applies those
    // objects once, through it): it goes first and its output seeds the queue. Without one, the
    // entry's objects stand on their own.
    let mut queue: VecDeque<Pending> = match &root_ks {
        Some(root_ks) => VecDeque::from([Pending::new(root_ks.clone(), false)]),
        None => raw_entry
            .iter()
            .filter(|o| is_flux_kustomization(o))
            .map(|o| Pending::new(o.clone(), false))
            .collect(),
    };
    let mut root_pending = root_ks.is_some();
    // The objects variables can come from, gathered as Kustomizations render (cloning the
    // whole environment for each Kustomization made the tree quadratic).
    // They are indexed for the lookups of `substituteFrom` (a scan per lookup was quadratic too).
    let mut creators = crate::vars::builtin_creators();
    creators.extend(opts.extra_creators.iter().cloned());
    let mut sources: ObjectIndex<Node> = ObjectIndex::new(
        tree.entry_objects
            .iter()
            .filter(|o| is_variable_source(o))
            .cloned(),
        &creators,
    );
    let mut deferred: Vec<Pending> = Vec::new();
    let mut source_problems: BTreeMap<(Option<Location>, String), usize> = BTreeMap::new();
    loop {
        if queue.front().is_some_and(Pending::is_waiting) {
            r.prebuild(&mut queue, &first_seen, (!root_pending).then_some(&sources));
        }
        let Some(Pending {
            ks,
            retried,
            built: prebuilt,
            ahead,
        }) = queue.pop_front()
        else {
            if deferred.is_empty() {
                break;
            }
            queue.extend(deferred.drain(..).map(|mut p| {
                p.retried = true;
                p
            }));
            continue;
        };
        let id = id_of(&ks);
        match first_seen.get(&id) {
            Some(loc) if *loc == ks.loc => continue,
            Some(loc) => {
                r.problems.push(
                    Problem::new(
                        ProblemKind::Invalid,
                        format!("Flux Kustomization {id} is defined twice in this environment"),
                        Some(ks.loc.clone()),
                    )
                    .related(loc.clone(), "first defined here"),
                );
                continue;
            }
            None => {}
        }
        let is_root = root_pending && root_ks.as_ref().is_some_and(|k| k.loc == ks.loc);
        let Some(dir) = r.source_dir(&ks) else {
            first_seen.insert(id, ks.loc.clone());
            continue;
        };
        // Until the root has rendered, the entry's own objects are what the cluster holds.
        let (vars, var_diags) = if root_pending {
            Vars::for_kustomization_with(&ks, &raw_entry, &creators)
        } else {
            Vars::for_kustomization_in(&ks, &sources)
        };
        let (vars, var_diags) = vars.with_seeded(var_diags, &opts.seeded, &ks);
        let missing_source = var_diags
            .iter()
            .any(|d| matches!(d.kind, ProblemKind::MissingObject { .. }));
        if missing_source && !retried && !is_root {
            // The variables' source may be rendered by a Kustomization not reached yet.
            deferred.push(Pending {
                ks,
                retried,
                built: prebuilt,
                ahead: None,
            });
            continue;
        }
        first_seen.insert(id, ks.loc.clone());
        // A problem of a variable source (an invalid key in `cluster-secrets`) is one finding
        // however many Kustomizations substitute from it; each of them is a related location.
        for d in var_diags {
            let key = (d.location.clone(), d.message.clone());
            if let Some(&i) = source_problems.get(&key) {
                let existing: &mut Problem = &mut r.problems[i];
                if existing.related.len() < 5 {
                    existing.related.push(fluxgate_diagnostics::Related {
                        location: ks.loc.clone(),
                        message: "also in this Kustomization".to_string(),
                    });
                }
            } else {
                source_problems.insert(key, r.problems.len());
                r.problems
                    .push(d.related(ks.loc.clone(), "in this Kustomization"));
            }
        }
        let mut rendered = match ahead.filter(|a| a.dir == dir && a.vars == vars) {
            Some(a) => {
                r.problems.extend(a.problems);
                a.rendered
            }
            None => r.render_one(&ks, &dir, &vars, prebuilt),
        };
        if let Some(k) = rendered.as_mut().filter(|_| opts.keep_built) {
            k.var_sources = named_sources(
                &ks,
                if root_pending {
                    &raw_entry
                } else {
                    sources.objects()
                },
            );
        }
        if is_root {
            root_pending = false;
            if rendered.is_none() {
                tree.entry_objects.clone_from(&raw_entry);
                for o in raw_entry.iter().filter(|o| is_variable_source(o)) {
                    sources.push(o.clone());
                }
                queue.extend(
                    raw_entry
                        .iter()
                        .filter(|o| is_flux_kustomization(o))
                        .map(|o| Pending::new(o.clone(), false)),
                );
            }
        }
        let Some(rendered) = rendered else {
            continue;
        };
        for o in rendered.objects.iter().filter(|o| is_flux_kustomization(o)) {
            queue.push_back(Pending::new(o.clone(), false));
        }
        for o in rendered.objects.iter().filter(|o| is_variable_source(o)) {
            sources.push(o.clone());
        }
        tree.kustomizations.push(rendered);
    }
    // Kustomizations of other sources (the Flux manifests from an OCIRepository) are not
    // rendered but exist: depending on them is fine.
    check_depends_on(&tree, first_seen.keys(), &mut r.problems);
    tree.problems = r.problems;
    fluxgate_diagnostics::problem::sort_and_dedup(&mut tree.problems);
    tree
}

impl Renderer<'_> {
    fn render_entry(&mut self, entry_dir: &Path, at: &Location) -> Vec<Node> {
        let mut diags = Vec::new();
        let out = match self.kustomization_for(entry_dir, at, &mut diags) {
            Some(k) => self.build(entry_dir, &k, &mut diags).0,
            None => Vec::new(),
        };
        self.problems.extend(diags);
        out
    }

    /// Builds, in parallel, every Kustomization waiting in `queue` that has no build yet and
    /// will be rendered (not one already seen, not one whose source is elsewhere). A build
    /// depends only on the Kustomization and its folder. Substitution depends on what was
    /// rendered before: with `sources` (the variable sources rendered so far) each build is
    /// also finished ahead with the variables they give ([`Ahead`]); the loop takes that
    /// result in queue order only when the variables are the same then, so the output is
    /// the same as one by one.
    fn prebuild(
        &self,
        queue: &mut VecDeque<Pending>,
        seen: &BTreeMap<String, Location>,
        sources: Option<&ObjectIndex<Node>>,
    ) {
        let todo: Vec<(usize, PathBuf)> = queue
            .iter()
            .enumerate()
            .filter(|(_, p)| p.is_waiting() && !seen.contains_key(&id_of(&p.ks)))
            .filter_map(|(i, p)| Some((i, self.resolve_dir(&p.ks).ok()?)))
            .collect();
        let built: Vec<(usize, Option<Prebuilt>, Option<Ahead>)> = todo
            .into_par_iter()
            .map(|(i, dir)| {
                let ks = &queue[i].ks;
                let built = self.build_unit(ks, &dir);
                let Some(sources) = sources else {
                    return (i, Some(built), None);
                };
                let (vars, var_diags) = Vars::for_kustomization_in(ks, sources);
                // A missing source defers the Kustomization: it is finished in turn.
                if var_diags
                    .iter()
                    .any(|d| matches!(d.kind, ProblemKind::MissingObject { .. }))
                {
                    return (i, Some(built), None);
                }
                let mut problems = Vec::new();
                let rendered = self.finish(ks, &vars, built, &mut problems);
                let ahead = Ahead {
                    dir,
                    vars,
                    rendered,
                    problems,
                };
                (i, None, Some(ahead))
            })
            .collect();
        for (i, b, ahead) in built {
            queue[i].built = b;
            queue[i].ahead = ahead;
        }
    }

    /// The kustomize build of `ks` over `dir`, with the Flux spec applied.
    fn build_unit(&self, ks: &Node, dir: &Path) -> Prebuilt {
        let at = Location::file(rel(&self.root, dir));
        let mut diagnostics = Vec::new();
        let objects = self
            .kustomization_for(dir, &at, &mut diagnostics)
            .map(|mut kust| {
                apply_flux_spec(&mut kust, ks);
                self.build(dir, &kust, &mut diagnostics)
            });
        Prebuilt {
            dir: dir.to_path_buf(),
            objects,
            diagnostics,
        }
    }

    /// `spec.ignore` of the GitRepository that is this repository, when the environment
    /// defines it and it has one.
    fn repo_spec_ignore(&self, entry_objects: &[Node]) -> Option<String> {
        entry_objects
            .iter()
            .filter(|o| o.str_at(&["kind"]) == Some("GitRepository"))
            .find(|o| {
                let key = format!("GitRepository/{}", id_of(o));
                self.repo_sources.contains(&key)
            })
            .and_then(|o| o.str_at(&["spec", "ignore"]))
            .map(str::to_string)
    }

    /// The sources the environment's root Kustomization reconciles from: the root is the
    /// Kustomization whose path contains the entry folder. Returns the root when its path is
    /// the entry folder itself (the self-reconciling root that `flux bootstrap` writes).
    fn find_repo_sources(&mut self, entry_objects: &[Node], entry_dir: &Path) -> Option<Node> {
        // Candidates: Kustomizations from a Git source whose path contains the entry folder and
        // the file that declares them; the most specific path wins.
        let mut best: Option<((usize, String), &Node)> = None;
        for ks in entry_objects.iter().filter(|o| is_flux_kustomization(o)) {
            let path = self.strip_prefix(ks.str_at(&["spec", "path"]).unwrap_or("./"));
            let dir = normalize(&self.root.join(path.trim_start_matches('/')));
            let declared_in = normalize(&self.root.join(ks.loc.file.as_ref()));
            if !entry_dir.starts_with(&dir) || !declared_in.starts_with(&dir) {
                continue;
            }
            let key = source_key(ks);
            if !key.starts_with("GitRepository/") {
                // An artifact source's `./` is the artifact's root, not this repository.
                continue;
            }
            let rank = (dir.components().count(), key);
            if best.as_ref().is_none_or(|(b, _)| rank > *b) {
                best = Some((rank, ks));
            }
        }
        // A Flux Operator `FluxInstance` creates the source it syncs from (named by
        // `spec.sync.name`, `flux-system` by default, in its own namespace): that source is
        // this repository.
        for fi in entry_objects.iter().filter(|o| {
            o.str_at(&["kind"]) == Some("FluxInstance")
                && o.str_at(&["apiVersion"])
                    .is_some_and(|a| a.starts_with("fluxcd.controlplane.io/"))
        }) {
            let kind = fi
                .str_at(&["spec", "sync", "kind"])
                .unwrap_or("GitRepository");
            let name = fi
                .str_at(&["spec", "sync", "name"])
                .unwrap_or("flux-system");
            let ns = fi
                .str_at(&["metadata", "namespace"])
                .unwrap_or("flux-system");
            self.repo_sources.insert(format!("{kind}/{ns}/{name}"));
        }
        let mut root = None;
        if let Some(((depth, key), ks)) = best {
            self.repo_sources.insert(key);
            if depth == entry_dir.components().count() {
                root = Some(ks.clone());
            }
        }
        if self.repo_sources.is_empty() {
            // No self-reconciling root: the bootstrap's conventional name.
            self.repo_sources
                .insert("GitRepository/flux-system/flux-system".into());
        }
        root
    }

    /// The folder of this repository a Kustomization's `spec.path` names, as
    /// [`Renderer::resolve_dir`] reads it for this repository's sources.
    fn path_dir(&self, ks: &Node) -> PathBuf {
        let path = self.strip_prefix(ks.str_at(&["spec", "path"]).unwrap_or("./"));
        normalize(&self.root.join(path.trim_start_matches('/')))
    }

    /// `path` with [`TreeOptions::repo_prefix`] taken off its front, when it starts with it.
    fn strip_prefix<'p>(&self, path: &'p str) -> &'p str {
        let Some(prefix) = self.opts.repo_prefix.as_deref() else {
            return path;
        };
        let clean = path.trim_start_matches("./").trim_start_matches('/');
        match clean.strip_prefix(prefix) {
            Some("") => ".",
            Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/'),
            _ => path,
        }
    }

    /// The folder a Kustomization's source stands for, or `None` (with a note) when it is
    /// neither this repository nor a mapped source.
    fn source_dir(&mut self, ks: &Node) -> Option<PathBuf> {
        match self.resolve_dir(ks) {
            Ok(dir) => Some(dir),
            Err(d) => {
                // The entry folder left out by the ignore rules is one defect, reported once.
                let entry_again = matches!(d.kind, ProblemKind::MissingPath { .. })
                    && self.entry_left_out.as_ref() == Some(&self.path_dir(ks));
                if !entry_again {
                    self.problems.push(d);
                }
                None
            }
        }
    }

    /// [`Renderer::source_dir`] without recording the problem.
    // A Problem is the error currency of renderers (as in fluxgate_ansible); boxing it adds
    // noise for a function called once per Kustomization.
    #[allow(clippy::result_large_err)]
    fn resolve_dir(&self, ks: &Node) -> Result<PathBuf, Problem> {
        let key = source_key(ks);
        let name = ks
            .str_at(&["spec", "sourceRef", "name"])
            .unwrap_or_default();
        let ours = self.repo_sources.contains(&key);
        let base = if ours {
            self.root.clone()
        } else if let Some(dir) = self.opts.sources.get(name) {
            normalize(&self.root.join(dir))
        } else {
            return Err(Problem::new(
                ProblemKind::Offline,
                format!(
                    "Flux Kustomization {} reconciles from {key}, which is not this \
                     repository: not rendered (map it under `sources:` in fluxgate.yaml)",
                    id_of(ks)
                ),
                Some(
                    ks.path(&["spec", "sourceRef"])
                        .map_or_else(|| ks.loc.clone(), |n| n.loc.clone()),
                ),
            ));
        };
        let path_node = ks.path(&["spec", "path"]);
        let path = path_node.and_then(Node::as_str).unwrap_or("./");
        let read = if ours { self.strip_prefix(path) } else { path };
        let dir = normalize(&base.join(read.trim_start_matches('/')));
        if !dir.starts_with(&base) || !dir.starts_with(&self.root) {
            return Err(Problem::new(
                ProblemKind::Invalid,
                format!("spec.path `{path}` leaves the source's root: Flux refuses it"),
                Some(path_node.map_or_else(|| ks.loc.clone(), |n| n.loc.clone())),
            ));
        }
        if !self.fs.is_dir(&dir) {
            return Err(Problem::new(
                ProblemKind::MissingPath {
                    path: path.to_string(),
                },
                format!("spec.path `{path}` does not exist in the source"),
                Some(path_node.map_or_else(|| ks.loc.clone(), |n| n.loc.clone())),
            ));
        }
        Ok(dir)
    }

    /// The folder's kustomization file, or the one Flux generates: every `.yaml`/`.yml` file
    /// below it, and each sub-folder that has a kustomization file of its own (not entered).
    fn kustomization_for(
        &self,
        dir: &Path,
        at: &Location,
        diagnostics: &mut Vec<Problem>,
    ) -> Option<Node> {
        for f in KUSTOMIZATION_FILES {
            let p = dir.join(f);
            if self.fs.is_file(&p) {
                let file = rel(&self.root, &p);
                let text = match self.fs.read(&p) {
                    Ok(t) => t,
                    Err(e) => {
                        diagnostics.push(Problem::new(
                            ProblemKind::Invalid,
                            format!("cannot read {file}: {e}"),
                            Some(Location::file(file)),
                        ));
                        return None;
                    }
                };
                let (node, diags) = parse_one(&file, &text, Schema::Kube);
                diagnostics.extend(diags.into_iter().map(crate::problem::from_yaml));
                return Some(node.unwrap_or_else(|| Node::map(Location::file(file))));
            }
        }
        let mut resources = Vec::new();
        self.scan(dir, dir, &mut resources);
        let mut m = Map::default();
        m.insert(
            "resources".into(),
            Node::new(
                Value::Seq(
                    resources
                        .into_iter()
                        .map(|r| Node::string(r, at.clone()))
                        .collect(),
                ),
                at.clone(),
            ),
        );
        Some(Node::new(Value::Map(Box::new(m)), at.clone()))
    }

    fn scan(&self, base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = self.fs.list_dir_kinds(dir) else {
            return;
        };
        let mut entries = entries;
        entries.sort();
        for (p, is_dir) in entries {
            let relative = format!("./{}", rel(base, &p));
            if is_dir {
                if KUSTOMIZATION_FILES
                    .iter()
                    .any(|f| self.fs.is_file(&p.join(f)))
                {
                    out.push(relative);
                } else {
                    self.scan(base, &p, out);
                }
            } else if p
                .extension()
                // Flux compares the extension case-sensitively: `.YAML` is not read.
                .is_some_and(|e| e == "yaml" || e == "yml")
            {
                out.push(relative);
            }
        }
    }

    fn build(
        &self,
        dir: &Path,
        kust: &Node,
        diagnostics: &mut Vec<Problem>,
    ) -> (Vec<Node>, Vec<Vec<Override>>) {
        let b = build_with(&self.fs, &self.root, dir, kust);
        diagnostics.extend(
            b.problems
                .into_iter()
                .map(|p| p.map_kind(ProblemKind::from)),
        );
        (b.objects, b.overrides)
    }

    fn render_one(
        &mut self,
        ks: &Node,
        dir: &Path,
        vars: &Vars,
        prebuilt: Option<Prebuilt>,
    ) -> Option<FluxKustomization> {
        let built = match prebuilt {
            Some(b) if b.dir == dir => b,
            _ => self.build_unit(ks, dir),
        };
        let mut problems = Vec::new();
        let rendered = self.finish(ks, vars, built, &mut problems);
        self.problems.extend(problems);
        rendered
    }

    /// The Flux Kustomization `ks` made of its kustomize build: post-build substitution with
    /// `vars`, then the common metadata. Its problems (the build's, then substitution's) go
    /// to `problems`, in that order.
    fn finish(
        &self,
        ks: &Node,
        vars: &Vars,
        built: Prebuilt,
        problems: &mut Vec<Problem>,
    ) -> Option<FluxKustomization> {
        let dir = built.dir;
        problems.extend(built.diagnostics);
        let (mut objects, overrides) = built.objects?;
        let built = if self.opts.keep_built {
            objects.clone()
        } else {
            Vec::new()
        };
        let mut substituted = Vec::new();
        let mut failure = None;
        let post = ks.path(&["spec", "postBuild"]);
        let always = post.and_then(|p| p.str_at(&["substituteStrategy"])) == Some("Always");
        if post.is_some() && (!vars.is_empty() || always) {
            let load_failure = vars.load_failure();
            for o in &mut objects {
                let out = substitute::substitute_resource(o, vars, self.opts.substitution);
                // Flux loads the variables for every resource it substitutes, stops at the
                // first one that fails, and then applies nothing of the Kustomization.
                let why = match out.status {
                    substitute::Status::Disabled => None,
                    _ if load_failure.is_some() => load_failure.clone(),
                    substitute::Status::Failed => {
                        Some(format!("post build failed for {}", resource_id(o)))
                    }
                    _ if self.opts.substitution.strict && !out.undefined.is_empty() => {
                        Some(format!(
                            "post build failed for {}: variable not set (strict mode): {:?}",
                            resource_id(o),
                            out.undefined[0].var
                        ))
                    }
                    _ => None,
                };
                if failure.is_none() {
                    failure = why;
                }
                problems.extend(
                    out.problems.into_iter().map(|d| {
                        d.related(ks.loc.clone(), "substituted by this Flux Kustomization")
                    }),
                );
                substituted.extend(out.substituted);
                *o = out.resource;
            }
        }
        // kustomize-controller sets the common metadata when it applies, after substitution.
        if let Some(meta) = ks.path(&["spec", "commonMetadata"]) {
            for o in &mut objects {
                apply_common_metadata(o, meta);
            }
        }
        Some(FluxKustomization {
            namespace: ns_of(ks),
            name: ks
                .str_at(&["metadata", "name"])
                .unwrap_or_default()
                .to_string(),
            object: ks.clone(),
            path: rel(&self.root, &dir),
            objects,
            overrides,
            built,
            substituted,
            vars: vars.clone(),
            failure,
            var_sources: Vec::new(),
        })
    }
}

fn resource_id(o: &Node) -> String {
    format!(
        "{}/{}",
        o.str_at(&["kind"]).unwrap_or_default(),
        o.str_at(&["metadata", "name"]).unwrap_or_default()
    )
}

/// The objects of `pool` that `ks`'s `substituteFrom` names.
fn named_sources(ks: &Node, pool: &[Node]) -> Vec<Node> {
    let ns = ns_of(ks);
    let wanted: Vec<(&str, &str)> = ks
        .path(&["spec", "postBuild", "substituteFrom"])
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| Some((e.str_at(&["kind"])?, e.str_at(&["name"])?)))
        .collect();
    pool.iter()
        .filter(|o| {
            ns_of(o) == ns
                && wanted.iter().any(|(k, n)| {
                    o.str_at(&["kind"]) == Some(*k) && o.str_at(&["metadata", "name"]) == Some(*n)
                })
        })
        .cloned()
        .collect()
}

fn source_key(ks: &Node) -> String {
    let kind = ks
        .str_at(&["spec", "sourceRef", "kind"])
        .unwrap_or("GitRepository");
    let name = ks
        .str_at(&["spec", "sourceRef", "name"])
        .unwrap_or_default();
    let ns = ks
        .str_at(&["spec", "sourceRef", "namespace"])
        .map_or_else(|| ns_of(ks), str::to_string);
    format!("{kind}/{ns}/{name}")
}

/// What kustomize-controller writes into the kustomization before it builds.
fn apply_flux_spec(kust: &mut Node, ks: &Node) {
    let Some(spec) = ks.get("spec") else {
        return;
    };
    let Some(m) = kust.as_map_mut() else {
        return;
    };
    if let Some(ns) = spec
        .get("targetNamespace")
        .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
    {
        m.insert("namespace".into(), ns.clone());
    }
    for field in ["namePrefix", "nameSuffix"] {
        if let Some(v) = spec.get(field).filter(|n| n.as_str().is_some()) {
            m.insert(field.into(), v.clone());
        }
    }
    for field in [
        "patches",
        "patchesStrategicMerge",
        "patchesJson6902",
        "components",
    ] {
        let Some(items) = spec.get(field).and_then(Node::as_seq) else {
            continue;
        };
        let entry = m
            .entry(field.to_string())
            .or_insert_with(|| Node::new(Value::Seq(Vec::new()), spec.loc.clone()));
        if entry.as_seq().is_none() {
            *entry = Node::new(Value::Seq(Vec::new()), spec.loc.clone());
        }
        if let Some(seq) = entry.as_seq_mut() {
            seq.extend(items.iter().cloned());
        }
    }
    if let Some(images) = spec.get("images").and_then(Node::as_seq) {
        let entry = m
            .entry("images".to_string())
            .or_insert_with(|| Node::new(Value::Seq(Vec::new()), spec.loc.clone()));
        if let Some(seq) = entry.as_seq_mut() {
            for img in images {
                let name = img.str_at(&["name"]);
                match seq.iter_mut().find(|i| i.str_at(&["name"]) == name) {
                    Some(existing) => *existing = img.clone(),
                    None => seq.push(img.clone()),
                }
            }
        }
    }
}

fn apply_common_metadata(obj: &mut Node, meta: &Node) {
    for field in ["labels", "annotations"] {
        let Some(add) = meta.get(field).and_then(Node::as_map) else {
            continue;
        };
        let Some(m) = obj.as_map_mut() else {
            return;
        };
        let md = m
            .entry("metadata".to_string())
            .or_insert_with(|| Node::map(meta.loc.clone()));
        let Some(mdm) = md.as_map_mut() else {
            continue;
        };
        let target = mdm
            .entry(field.to_string())
            .or_insert_with(|| Node::map(meta.loc.clone()));
        if let Some(tm) = target.as_map_mut() {
            for (k, v) in add {
                tm.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Missing `dependsOn` targets and dependency cycles.
fn check_depends_on<'a>(
    tree: &Tree,
    defined: impl Iterator<Item = &'a String>,
    diags: &mut Vec<Problem>,
) {
    let mut ids: BTreeSet<String> = tree
        .kustomizations
        .iter()
        .map(FluxKustomization::id)
        .collect();
    ids.extend(defined.cloned());
    let mut edges: BTreeMap<String, Vec<(String, Location)>> = BTreeMap::new();
    for k in &tree.kustomizations {
        let deps = k
            .object
            .path(&["spec", "dependsOn"])
            .and_then(Node::as_seq)
            .unwrap_or_default();
        for d in deps {
            let name = d.str_at(&["name"]).unwrap_or_default();
            let ns = d.str_at(&["namespace"]).unwrap_or(&k.namespace);
            let target = format!("{ns}/{name}");
            if !ids.contains(&target) {
                diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!(
                        "{} depends on Flux Kustomization {target}, which this environment does \
                         not define: Flux waits for it forever",
                        k.id()
                    ),
                    Some(d.loc.clone()),
                ));
            }
            edges
                .entry(k.id())
                .or_default()
                .push((target, d.loc.clone()));
        }
    }
    // Depth-first search; a back edge closes a cycle, reported once by its smallest member.
    let mut state: BTreeMap<String, u8> = BTreeMap::new();
    let mut reported: BTreeSet<Vec<String>> = BTreeSet::new();
    for start in edges.keys() {
        let mut stack: Vec<String> = Vec::new();
        visit(start, &edges, &mut state, &mut stack, &mut reported, diags);
    }
}

fn visit(
    node: &str,
    edges: &BTreeMap<String, Vec<(String, Location)>>,
    state: &mut BTreeMap<String, u8>,
    stack: &mut Vec<String>,
    reported: &mut BTreeSet<Vec<String>>,
    diags: &mut Vec<Problem>,
) {
    match state.get(node) {
        Some(2) => return,
        Some(1) => {
            let Some(pos) = stack.iter().position(|s| s == node) else {
                return;
            };
            let mut cycle: Vec<String> = stack[pos..].to_vec();
            let min = cycle
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.as_str())
                .map_or(0, |(i, _)| i);
            cycle.rotate_left(min);
            if reported.insert(cycle.clone()) {
                let first = &cycle[0];
                let next = cycle.get(1).unwrap_or(first);
                let loc = edges
                    .get(first)
                    .and_then(|es| es.iter().find(|(t, _)| t == next))
                    .map(|(_, l)| l.clone());
                let mut chain = cycle.join(" -> ");
                chain.push_str(" -> ");
                chain.push_str(first);
                diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("dependsOn cycle: {chain}; none of them can become ready"),
                    loc,
                ));
            }
            return;
        }
        _ => {}
    }
    state.insert(node.to_string(), 1);
    stack.push(node.to_string());
    for (t, _) in edges.get(node).map(Vec::as_slice).unwrap_or_default() {
        visit(t, edges, state, stack, reported, diags);
    }
    stack.pop();
    state.insert(node.to_string(), 2);
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_kustomize::MemFs;

    const ROOT: &str = "/repo";

    fn repo(files: &[(&str, &str)]) -> MemFs {
        let mut fs = MemFs::new();
        for (p, t) in files {
            fs.insert(format!("{ROOT}/{p}"), *t);
        }
        fs
    }

    fn render(fs: &MemFs) -> Tree {
        render_tree(
            fs,
            Path::new(ROOT),
            "clusters/prod",
            &TreeOptions::default(),
        )
    }

    const SYNC: &str = "\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: home, namespace: flux-system}
spec: {url: https://example.com/repo.git}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec:
  path: ./clusters/prod
  sourceRef: {kind: GitRepository, name: home}
";

    const VARS: &str = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-vars, namespace: flux-system}
data:
  K3S_API_HOST: 192.168.2.9
";

    const PLATFORM_KS: &str = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: platform, namespace: flux-system}
spec:
  path: ./platform
  targetNamespace: kube-system
  sourceRef: {kind: GitRepository, name: home}
  dependsOn:
    - name: flux-system
  postBuild:
    substituteFrom:
      - {kind: ConfigMap, name: cluster-vars}
";

    const HR: &str = "\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: cilium}
spec:
  values:
    k8sServiceHost: ${K3S_API_HOST}
";

    #[test]
    fn generated_entry_nested_kustomization_substituted() {
        let fs = repo(&[
            ("clusters/prod/flux-system/gotk-sync.yaml", SYNC),
            ("clusters/prod/vars.yaml", VARS),
            ("clusters/prod/platform.yaml", PLATFORM_KS),
            ("clusters/prod/.sops.yaml", "creation_rules: []\n"),
            ("platform/helmrelease.yaml", HR),
        ]);
        let tree = render(&fs);
        assert!(tree.problems.is_empty(), "{:?}", tree.problems);
        let ids: Vec<String> = tree
            .kustomizations
            .iter()
            .map(FluxKustomization::id)
            .collect();
        assert_eq!(ids, ["flux-system/flux-system", "flux-system/platform"]);
        let platform = &tree.kustomizations[1];
        assert_eq!(platform.path, "platform");
        let hr = &platform.objects[0];
        assert_eq!(hr.str_at(&["metadata", "namespace"]), Some("kube-system"));
        let host = hr
            .path(&["spec", "values", "k8sServiceHost"])
            .expect("host");
        assert_eq!(host.as_str(), Some("192.168.2.9"));
        assert_eq!(host.loc.file.as_ref(), "clusters/prod/vars.yaml");
        assert_eq!(
            platform.substituted[0].consumer.file.as_ref(),
            "platform/helmrelease.yaml"
        );
    }

    #[test]
    fn self_reconciling_root_renders_the_entry_once_with_its_spec() {
        // The root substitutes from a ConfigMap that the entry itself holds.
        let sync = SYNC.replace(
            "  sourceRef: {kind: GitRepository, name: home}\n",
            "  sourceRef: {kind: GitRepository, name: home}\n  postBuild:\n    substituteFrom:\n      - {kind: ConfigMap, name: cluster-vars}\n",
        );
        let fs = repo(&[
            ("clusters/prod/flux-system/gotk-sync.yaml", &sync),
            ("clusters/prod/vars.yaml", VARS),
            (
                "clusters/prod/endpoint.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: endpoint, namespace: flux-system}\ndata:\n  host: ${K3S_API_HOST}\n",
            ),
        ]);
        let tree = render(&fs);
        assert!(tree.problems.is_empty(), "{:?}", tree.problems);
        assert!(tree.entry_objects.is_empty());
        let ids: Vec<String> = tree
            .objects()
            .map(|o| {
                format!(
                    "{}/{}",
                    o.str_at(&["kind"]).unwrap_or_default(),
                    o.str_at(&["metadata", "name"]).unwrap_or_default()
                )
            })
            .collect();
        let unique: BTreeSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "each object once: {ids:?}");
        assert_eq!(ids.len(), 4, "{ids:?}");
        let endpoint = tree
            .objects()
            .find(|o| o.str_at(&["metadata", "name"]) == Some("endpoint"))
            .expect("rendered");
        assert_eq!(endpoint.str_at(&["data", "host"]), Some("192.168.2.9"));
        assert_eq!(tree.kustomizations[0].id(), "flux-system/flux-system");
        assert_eq!(tree.kustomizations[0].path, "clusters/prod");
    }

    #[test]
    fn git_repository_spec_ignore_hides_files_from_the_artifact() {
        let sync = SYNC.replace(
            "spec: {url: https://example.com/repo.git}",
            "spec:\n  url: https://example.com/repo.git\n  ignore: |\n    /clusters/prod/drafts/\n    /platform/*.yaml\n    !/platform/helmrelease.yaml",
        );
        let fs = repo(&[
            ("clusters/prod/flux-system/gotk-sync.yaml", &sync),
            ("clusters/prod/vars.yaml", VARS),
            ("clusters/prod/platform.yaml", PLATFORM_KS),
            (
                "clusters/prod/drafts/broken.yaml",
                "kind: [this is not a resource\n",
            ),
            ("platform/helmrelease.yaml", HR),
            (
                "platform/scratch.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: scratch}\n",
            ),
        ]);
        let tree = render(&fs);
        assert!(tree.problems.is_empty(), "{:?}", tree.problems);
        let platform = tree
            .kustomizations
            .iter()
            .find(|k| k.name == "platform")
            .expect("rendered");
        assert_eq!(platform.objects.len(), 1);
        assert_eq!(platform.objects[0].str_at(&["kind"]), Some("HelmRelease"));
    }

    #[test]
    fn spec_ignore_re_includes_what_a_sourceignore_leaves_out() {
        // The onedr0p template's shape: the root `.sourceignore` excludes `/clusters/`, the
        // GitRepository's own spec.ignore excludes all then re-includes its cluster (last
        // pattern wins, each path on its own, as go-git's matcher does).
        let sync = SYNC.replace(
            "spec: {url: https://example.com/repo.git}",
            "spec:\n  url: https://example.com/repo.git\n  ignore: |\n    /*\n    !/clusters/prod\n    !/platform",
        );
        let files = [
            (".sourceignore", "/clusters/\n/platform/\n"),
            ("clusters/prod/flux-system/gotk-sync.yaml", sync.as_str()),
            ("clusters/prod/vars.yaml", VARS),
            ("clusters/prod/platform.yaml", PLATFORM_KS),
            ("platform/helmrelease.yaml", HR),
        ];
        let tree = render(&repo(&files));
        assert!(tree.problems.is_empty(), "{:?}", tree.problems);
        assert!(tree.kustomizations.iter().any(|k| k.name == "platform"));
        assert!(
            tree.objects()
                .any(|o| o.str_at(&["kind"]) == Some("HelmRelease"))
        );

        // Without the spec's re-include, the entry is not in the artifact: an error, never an
        // empty environment that passes.
        let sync = sync.replace("    !/clusters/prod\n", "");
        let files = [
            (".sourceignore", "/clusters/\n"),
            ("clusters/prod/flux-system/gotk-sync.yaml", sync.as_str()),
        ];
        let tree = render(&repo(&files));
        assert!(
            tree.problems
                .iter()
                .any(|d| d.message.contains("left out of the source artifact")),
            "{:?}",
            tree.problems
        );
    }

    #[test]
    fn without_a_root_the_entry_objects_stand_alone() {
        let fs = repo(&[
            ("clusters/prod/vars.yaml", VARS),
            (
                "clusters/prod/platform.yaml",
                &PLATFORM_KS.replace("name: home", "name: flux-system"),
            ),
            ("platform/helmrelease.yaml", HR),
        ]);
        let tree = render(&fs);
        assert_eq!(tree.entry_objects.len(), 2);
        assert_eq!(tree.kustomizations.len(), 1);
        assert_eq!(tree.objects().count(), 3);
    }

    #[test]
    fn depends_on_missing_cycles_duplicates_and_escapes() {
        let apps = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  path: ./apps
  sourceRef: {kind: GitRepository, name: home}
  dependsOn: [{name: infra}, {name: nowhere}, {name: elsewhere}]
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra, namespace: flux-system}
spec:
  path: ./apps
  sourceRef: {kind: GitRepository, name: home}
  dependsOn: [{name: apps}]
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: escape, namespace: flux-system}
spec:
  path: ../outside
  sourceRef: {kind: GitRepository, name: home}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: elsewhere, namespace: flux-system}
spec:
  path: ./x
  sourceRef: {kind: GitRepository, name: other-repo}
";
        let fs = repo(&[
            ("clusters/prod/flux-system/gotk-sync.yaml", SYNC),
            ("clusters/prod/apps.yaml", apps),
            // Rendered by `apps`: a second `infra`, at another place.
            (
                "apps/dup.yaml",
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: infra, namespace: flux-system}\nspec: {path: ./apps, sourceRef: {kind: GitRepository, name: home}}\n",
            ),
            (
                "apps/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            ),
        ]);
        let tree = render(&fs);
        let msgs: Vec<&str> = tree.problems.iter().map(|d| d.message.as_str()).collect();
        let has = |s: &str| msgs.iter().any(|m| m.contains(s));
        assert!(
            has("depends on Flux Kustomization flux-system/nowhere"),
            "{msgs:#?}"
        );
        assert!(
            has("dependsOn cycle: flux-system/apps -> flux-system/infra -> flux-system/apps"),
            "{msgs:#?}"
        );
        assert!(has("defined twice"), "{msgs:#?}");
        // `elsewhere` is not rendered (another source) but exists: no missing target.
        assert!(!has("flux-system/elsewhere, which"), "{msgs:#?}");
        assert!(has("leaves the source's root"), "{msgs:#?}");
        assert!(has("not this repository"), "{msgs:#?}");
        let notes = tree
            .problems
            .iter()
            .filter(|d| d.kind == ProblemKind::Offline)
            .count();
        assert_eq!(notes, 1);
    }

    #[test]
    fn flux_spec_is_applied_over_an_existing_kustomization() {
        let ks = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: flux-system}
spec:
  path: ./app
  sourceRef: {kind: GitRepository, name: home}
  namePrefix: prod-
  images: [{name: nginx, newTag: '1.27'}]
  commonMetadata:
    labels: {team: platform}
  patches:
    - target: {kind: Deployment}
      patch: |
        - op: replace
          path: /spec/replicas
          value: 3
";
        let fs = repo(&[
            ("clusters/prod/flux-system/gotk-sync.yaml", SYNC),
            ("clusters/prod/app.yaml", ks),
            (
                "app/kustomization.yaml",
                "resources: [deploy.yaml]\nimages: [{name: nginx, newTag: '1.25'}]\n",
            ),
            (
                "app/deploy.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers: [{name: web, image: nginx}]\n",
            ),
        ]);
        let tree = render(&fs);
        assert!(tree.problems.is_empty(), "{:?}", tree.problems);
        let app = tree
            .kustomizations
            .iter()
            .find(|k| k.name == "app")
            .expect("rendered");
        let d = &app.objects[0];
        assert_eq!(d.str_at(&["metadata", "name"]), Some("prod-web"));
        assert_eq!(d.str_at(&["metadata", "labels", "team"]), Some("platform"));
        assert_eq!(
            d.path(&["spec", "replicas"]).and_then(Node::as_i64),
            Some(3)
        );
        let image = d
            .path(&["spec", "template", "spec", "containers"])
            .and_then(Node::as_seq)
            .map(|c| c[0].str_at(&["image"]));
        assert_eq!(image, Some(Some("nginx:1.27")));
    }
}
