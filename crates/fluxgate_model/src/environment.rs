//! One environment, rendered: what every rule reads. The steady state is the Flux tree
//! entered at `flux:` (objects after substitution, each Kustomization with its substitution
//! records), HelmRelease effective values over the chart cache, and the bootstrap: the
//! Ansible project with this environment's hosts.

use fluxgate_diagnostics::Annotate;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fluxgate_ansible::{
    Problem as AnsibleProblem, ProblemKind as AnsibleKind, Project, RenderedTemplate,
};
use fluxgate_flux::helm::{ChartCache, Values, effective_values_traced, replaced_map};
use fluxgate_flux::lookup::ObjectIndex;
use fluxgate_flux::substitute::Substituted;
use fluxgate_flux::tree::{Tree, TreeOptions, render_tree};
use fluxgate_flux::vars::{RuntimeCreator, builtin_creators};
use fluxgate_kustomize::Fs;
use fluxgate_yaml::Node;
use indexmap::IndexMap;
use rayon::prelude::*;

use crate::config::{Config, EnvConfig};
use crate::parity::GroupSources;
use crate::problem::{Problem, ProblemKind};
use crate::templates::Templates;

/// A HelmRelease of the environment with its effective values.
#[derive(Clone, Debug)]
pub struct Release {
    /// `namespace/name`.
    pub id: String,
    pub object: Node,
    pub values: Values,
    /// The default values of its chart, when the chart cache holds the chart.
    pub chart_defaults: Option<Arc<Node>>,
    /// The objects its chart installs, when the chart cache holds the chart and it renders.
    pub installed: Option<crate::charts::Installed>,
}

/// What one helmfile release installs, rendered from the chart cache.
#[derive(Clone, Debug)]
pub struct HelmfileInstall {
    /// The state file (relative to the repository).
    pub state: String,
    /// The release's `namespace/name`.
    pub release: String,
    pub installed: crate::charts::Installed,
}

/// The bootstrap side of an environment.
#[derive(Clone)]
pub struct Bootstrap {
    pub project: Project,
    /// The hosts of the environment's group (inventory order).
    pub hosts: Vec<String>,
    /// Every template the rules read, rendered while the environment loaded.
    pub templates: Templates,
}

impl Bootstrap {
    /// The template at `path` rendered for `host` by the load; `None` when the load did not
    /// render that pair.
    #[must_use]
    pub fn template(
        &self,
        path: &str,
        host: &str,
    ) -> Option<&Result<RenderedTemplate, AnsibleProblem>> {
        self.templates.get(path, host)
    }
}

/// One environment, rendered. Cloning is cheap next to rendering (mutation testing re-renders
/// only the environments a mutant reaches and clones the others).
#[derive(Clone)]
pub struct Environment {
    pub config: EnvConfig,
    pub tree: Tree,
    /// `namespace/name` -> release, in render order.
    pub releases: IndexMap<String, Release>,
    pub bootstrap: Option<Bootstrap>,
    /// The Talos layer (`talos:` of the environment, or discovered): nodes, endpoint, VIPs,
    /// KubePrism, certSANs, inline manifests.
    pub talos: Option<Arc<fluxgate_talos::Cluster>>,
    /// The helmfiles that bootstrap the environment (`helmfile:` of its configuration), each
    /// loaded: their releases are installed before Flux adopts them.
    pub helmfiles: Vec<fluxgate_helmfile::Helmfile>,
    /// What the helmfiles' releases install, for the releases whose chart the chart cache
    /// holds (in helmfile order): kept apart from [`Environment::objects`], which is the
    /// steady state Flux reconciles.
    pub helmfile_installs: Vec<HelmfileInstall>,
    /// Everything that could not be rendered, typed; the rules decide how each is reported
    /// (`render`, `substitution-undefined`).
    pub problems: Vec<Problem>,
    /// What creates Secrets and ConfigMaps at run time in this environment: the built-in
    /// operators and the `generators:` of fluxgate.yaml.
    pub creators: Vec<RuntimeCreator>,
    /// The sources of each `parity:` group of fluxgate.yaml (same order), loaded here.
    pub parity: Vec<GroupSources>,
}

impl Environment {
    #[must_use]
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Every rendered object of the steady state: the Flux tree's, then what each release's
    /// chart installs.
    pub fn objects(&self) -> impl Iterator<Item = &Node> {
        self.tree.objects().chain(self.installed_objects())
    }

    /// The objects the releases' charts install (each release in render order).
    pub fn installed_objects(&self) -> impl Iterator<Item = &Node> {
        self.releases
            .values()
            .filter_map(|r| r.installed.as_ref())
            .flat_map(|i| i.objects.iter())
    }

    /// The object of this environment whose operator creates the `kind` (Secret, ConfigMap)
    /// `namespace/name` at run time, by the environment's creators (the built-in operators
    /// and the `generators:` of fluxgate.yaml).
    #[must_use]
    pub fn created_by(&self, kind: &str, namespace: &str, name: &str) -> Option<&Node> {
        fluxgate_flux::vars::created_by(self.objects(), &self.creators, kind, namespace, name)
    }
}

/// `namespace/name` of an object, with the namespace a Flux Kustomization gave it.
#[must_use]
pub fn object_id(obj: &Node) -> String {
    let ns = obj.str_at(&["metadata", "namespace"]).unwrap_or("default");
    let name = obj.str_at(&["metadata", "name"]).unwrap_or("");
    format!("{ns}/{name}")
}

/// Renders one environment of the repository at `root`. The Flux tree and the chart cache
/// read through `fs`; the Ansible project reads the repository itself (confined to `root`).
/// [`load_environment_in`] sends every reader through one filesystem.
pub fn load_environment(fs: &dyn Fs, root: &Path, config: &Config, env: &EnvConfig) -> Environment {
    load(fs, None, root, config, env)
}

/// [`load_environment`] with every renderer, the Ansible project included, reading through
/// `fs`: an [`fluxgate_fs::Overlay`] (a mutant) is then seen by all of them.
pub fn load_environment_in(
    fs: &Arc<dyn Fs>,
    root: &Path,
    config: &Config,
    env: &EnvConfig,
) -> Environment {
    load(fs.as_ref(), Some(fs.clone()), root, config, env)
}

fn load(
    fs: &dyn Fs,
    ansible_fs: Option<Arc<dyn Fs>>,
    root: &Path,
    config: &Config,
    env: &EnvConfig,
) -> Environment {
    let extra_creators: Vec<RuntimeCreator> = config
        .generators
        .iter()
        .map(|g| {
            let fields: Vec<&str> = g.name.iter().map(String::as_str).collect();
            RuntimeCreator::new(&g.kind, &g.group, &g.creates, &fields)
        })
        .collect();
    let mut creators = builtin_creators();
    creators.extend(extra_creators.iter().cloned());
    let opts = TreeOptions {
        sources: config
            .sources
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        extra_creators,
        repo_prefix: config.repo_prefix.clone(),
        seeded: config
            .seeded
            .iter()
            .map(|s| fluxgate_flux::vars::Seeded {
                kind: s.kind.clone(),
                namespace: s.namespace.clone(),
                name: s.name.clone(),
                at: s.loc.clone(),
            })
            .collect(),
        // The pinned Flux decides how an unset variable substitutes, else the one the
        // repository installs for this environment; when neither says, the newest.
        substitution: fluxgate_flux::substitute::Options {
            strict: config
                .flux_version
                .or(env.flux_version)
                .is_none_or(crate::config::FluxVersion::strict_substitution),
        },
        ..TreeOptions::default()
    };
    let tree = env
        .flux
        .as_deref()
        .map_or_else(Tree::default, |entry| render_tree(fs, root, entry, &opts));
    let lift = |p: &fluxgate_flux::problem::Problem| p.clone().map_kind(ProblemKind::Flux);
    let mut problems: Vec<Problem> = tree.problems.iter().map(lift).collect();

    let charts = config
        .charts
        .as_deref()
        .map_or_else(ChartCache::none, |dir| ChartCache::with_fs(fs, root, dir));
    // What `fluxgate fetch` pinned in fluxgate.lock, verified against the lock before use.
    let charts = match fluxgate_fetch::FetchedCharts::open(root, None) {
        // Only what the sources ask for now: a GitRepository whose ref was edited since the
        // fetch has no chart until it is fetched again.
        Ok(Some(fetched)) => {
            let (requests, _) = fluxgate_fetch::sources::chart_requests(tree.objects());
            // A source the lock pins, edited since: the lock does not match it (fail closed).
            for r in fetched.outdated(&requests) {
                problems.push(
                    Problem::new(
                        ProblemKind::ChartRender,
                        format!(
                            "{}: chart {} is pinned in {}, but not for what {} asks now ({}): the lock does not match the repository's sources",
                            fluxgate_fetch::display_url(&r.source),
                            r.chart,
                            fluxgate_fetch::LOCK_FILE,
                            r.source_object,
                            want_text(&r.want),
                        ),
                        Some(fluxgate_diagnostics::Location::file(
                            fluxgate_fetch::LOCK_FILE,
                        )),
                    )
                    .help("run `fluxgate fetch` to resolve it again and commit the updated lock"),
                );
            }
            charts.with_fetched(Arc::new(fetched.restricted_to(&requests)))
        }
        Ok(None) => charts,
        Err(e) => {
            problems.push(
                Problem::new(
                    ProblemKind::ChartRender,
                    format!(
                        "{}: the fetched charts cannot be used: {e}",
                        fluxgate_fetch::LOCK_FILE
                    ),
                    Some(fluxgate_diagnostics::Location::file(
                        fluxgate_fetch::LOCK_FILE,
                    )),
                )
                .help("set FLUXGATE_CACHE to the folder `fluxgate fetch` filled, or run it again"),
            );
            charts
        }
    };
    // One index for every release's `valuesFrom` and `chartRef` lookups.
    let objects = ObjectIndex::new(tree.objects(), &creators);
    let helm_releases: Vec<&Node> = objects
        .objects()
        .iter()
        .copied()
        .filter(|obj| {
            obj.str_at(&["kind"]) == Some("HelmRelease")
                && obj
                    .str_at(&["apiVersion"])
                    .is_some_and(|a| a.starts_with("helm.toolkit.fluxcd.io/"))
        })
        .collect();
    // Each release (values merged over its chart's defaults) is a unit of parallel work; the
    // results are kept in render order.
    // What the renderers recorded: the values substitution produced in each release's
    // Kustomization (keyed by the object's address in the tree) and what kustomize patches
    // replaced anywhere in the environment, so each value's origin is its whole chain.
    let substituted: HashMap<usize, &[Substituted]> = tree
        .kustomizations
        .iter()
        .flat_map(|k| {
            k.objects
                .iter()
                .map(move |o| (std::ptr::from_ref(o).addr(), k.substituted.as_slice()))
        })
        .collect();
    let replaced = replaced_map(
        tree.kustomizations
            .iter()
            .flat_map(|k| k.overrides.iter().flatten()),
    );
    let values: Vec<Values> = helm_releases
        .par_iter()
        .map(|obj| {
            let subs = substituted
                .get(&std::ptr::from_ref(*obj).addr())
                .copied()
                .unwrap_or(&[]);
            effective_values_traced(obj, &objects, &charts, subs, &replaced)
        })
        .collect();
    let setup = crate::charts::Setup {
        fs,
        root,
        files: &crate::charts::ChartFiles::default(),
        kube_version: config.kube_version.clone(),
        api_versions: crate::charts::api_versions(tree.objects())
            .into_iter()
            .chain(config.api_versions.iter().cloned())
            .collect(),
    };
    let found: Vec<Option<Arc<fluxgate_flux::helm::Chart>>> = values
        .iter()
        .map(|values| {
            let c = values.chart.as_ref().filter(|c| c.found.is_some())?;
            charts.lookup(&c.name, c.found_version.as_deref().or(c.version.as_deref()))
        })
        .collect();
    // Each chart renders on its own: a unit of parallel work, kept in render order.
    let installed: Vec<Option<Result<crate::charts::Installed, Vec<Problem>>>> = helm_releases
        .par_iter()
        .zip(values.par_iter())
        .zip(found.par_iter())
        .map(|((obj, values), chart)| {
            // A chart the cache could not read whole is reported there, and not rendered.
            let chart = chart.as_ref().filter(|c| c.problems.is_empty())?;
            Some(crate::charts::install(&setup, chart, obj, values))
        })
        .collect();
    let mut releases = IndexMap::new();
    let mut defaults: HashMap<String, Option<Arc<Node>>> = HashMap::new();
    for (((obj, values), chart), installed) in helm_releases
        .into_iter()
        .zip(values)
        .zip(found)
        .zip(installed)
    {
        problems.extend(values.problems.iter().map(lift));
        let id = object_id(obj);
        // The chart's defaults were read, so the chart is there: its templates must render, or
        // what the release installs is unknown and must not pass unseen.
        if let Some(c) = values.chart.as_ref().filter(|c| c.found.is_some())
            && chart.is_none()
        {
            problems.push(
                Problem::new(
                    ProblemKind::ChartRender,
                    format!(
                        "HelmRelease {id}: the default values of chart {} were read, but the chart itself cannot be looked up to render what it installs",
                        c.name
                    ),
                    Some(c.location.clone()),
                )
                .help("check that the chart cache (or fluxgate.lock) names the chart and version the release asks for"),
            );
        }
        // One copy per chart (by what was opened), shared by its releases (app-template:
        // dozens).
        let chart_defaults = chart.and_then(|c| {
            defaults
                .entry(c.source.clone())
                .or_insert_with(|| {
                    c.values.clone().map(|mut v| {
                        drop_nulls(&mut v);
                        Arc::new(v)
                    })
                })
                .clone()
        });
        let installed = match installed {
            Some(Ok(i)) => Some(i),
            Some(Err(p)) => {
                problems.extend(p);
                None
            }
            None => None,
        };
        releases.insert(
            id.clone(),
            Release {
                id,
                object: obj.clone(),
                values,
                chart_defaults,
                installed,
            },
        );
    }

    drop(objects);
    problems.extend(crate::charts::notes(&releases));

    let helmfile_fs = ansible_fs.clone();
    let bootstrap = env.ansible.as_ref().map(|a| {
        let project = Project::load(&fluxgate_ansible::Options {
            root: root.to_path_buf(),
            inventory: vec![PathBuf::from(&a.inventory)],
            playbook: a.playbook.as_ref().map(PathBuf::from),
            config: a.config.as_ref().map(PathBuf::from),
            representative_hosts: true,
            fs: ansible_fs,
            ..fluxgate_ansible::Options::default()
        });
        problems.extend(
            project
                .problems()
                .iter()
                .map(|p| p.clone().map_kind(ProblemKind::Ansible)),
        );
        let hosts = match &a.group {
            Some(g) => project.group_hosts(g),
            None => project.hosts(),
        };
        problems.extend(template_problems(&project, &hosts));
        let templates = Templates::render(&project, &hosts, config);
        Bootstrap {
            project,
            hosts,
            templates,
        }
    });

    let talos = env.talos.as_deref().map(|path| {
        let cluster = fluxgate_talos::load(fs, root, path);
        problems.extend(
            cluster
                .problems
                .iter()
                .map(|p| p.clone().map_kind(ProblemKind::Talos)),
        );
        Arc::new(cluster)
    });
    let helmfiles: Vec<fluxgate_helmfile::Helmfile> = env
        .helmfile
        .iter()
        .map(|h| {
            let mut opts = fluxgate_helmfile::Options::new(root, h.path.as_str());
            if let Some(e) = &h.environment {
                opts.environment.clone_from(e);
            }
            opts.env.clone_from(&h.env);
            opts.fs.clone_from(&helmfile_fs);
            fluxgate_helmfile::load(&opts)
        })
        .collect();
    for hf in &helmfiles {
        problems.extend(
            hf.problems
                .iter()
                .map(|p| p.clone().map_kind(ProblemKind::Helmfile)),
        );
    }
    let helmfile_installs = helmfile_installs(&setup, &charts, &helmfiles, &mut problems);

    let mut environment = Environment {
        config: env.clone(),
        tree,
        releases,
        bootstrap,
        talos,
        helmfiles,
        helmfile_installs,
        problems,
        creators,
        parity: Vec::new(),
    };
    environment.parity = crate::parity::load_groups(&environment, fs, root, &config.parity);
    environment
}

/// Renders the chart of each installed helmfile release the chart cache holds, with the
/// release's values, as `helm install` would (a render failure is the install's failure).
fn helmfile_installs(
    setup: &crate::charts::Setup<'_>,
    charts: &ChartCache<'_>,
    helmfiles: &[fluxgate_helmfile::Helmfile],
    problems: &mut Vec<Problem>,
) -> Vec<HelmfileInstall> {
    let mut out = Vec::new();
    for hf in helmfiles {
        for state in hf.states.iter().filter(|s| !s.crds_only()) {
            for r in state.releases.iter().filter(|r| r.installed) {
                let Some(chart) = charts
                    .lookup(r.chart_name(), r.version.as_deref())
                    .filter(|c| c.problems.is_empty())
                else {
                    continue;
                };
                // The release as helm-controller would name it: what the chart renderer reads.
                let at = r.loc.clone();
                let mut meta = fluxgate_yaml::Map::default();
                meta.insert("name".into(), Node::string(r.name.clone(), at.clone()));
                meta.insert(
                    "namespace".into(),
                    Node::string(
                        if r.namespace.is_empty() {
                            "default".to_string()
                        } else {
                            r.namespace.clone()
                        },
                        at.clone(),
                    ),
                );
                let mut spec = fluxgate_yaml::Map::default();
                spec.insert(
                    "releaseName".into(),
                    Node::string(r.name.clone(), at.clone()),
                );
                let mut obj = fluxgate_yaml::Map::default();
                obj.insert("kind".into(), Node::string("HelmRelease", at.clone()));
                obj.insert(
                    "metadata".into(),
                    Node::new(fluxgate_yaml::Value::Map(Box::new(meta)), at.clone()),
                );
                obj.insert(
                    "spec".into(),
                    Node::new(fluxgate_yaml::Value::Map(Box::new(spec)), at.clone()),
                );
                let obj = Node::new(fluxgate_yaml::Value::Map(Box::new(obj)), at);
                let values = Values {
                    tree: r.values.clone(),
                    origins: fluxgate_flux::helm::Origins::default(),
                    user: r.values.clone(),
                    chart: Some(fluxgate_flux::helm::ChartRef {
                        name: r.chart_name().to_string(),
                        version: r.version.clone(),
                        found: Some(chart.source.clone()),
                        found_version: Some(chart.version.clone()),
                        location: r.chart_loc.clone(),
                    }),
                    problems: Vec::new(),
                };
                match crate::charts::install(setup, &chart, &obj, &values) {
                    Ok(installed) => out.push(HelmfileInstall {
                        state: state.file.clone(),
                        release: r.id(),
                        installed,
                    }),
                    Err(p) => problems.extend(p),
                }
            }
        }
    }
    out
}

/// A chart's defaults as Helm coalesces them: a `null` in values.yaml leaves the key unset.
fn drop_nulls(node: &mut Node) {
    if let Some(m) = node.as_map_mut() {
        m.retain(|_, v| !v.is_null());
        m.values_mut().for_each(drop_nulls);
    }
}

/// Renders every template that a `template` task of the site playbook writes, for each of the
/// environment's hosts its play targets (renders are memoised in the project, so the rules
/// reuse them). A syntax error, or a variable that the template's scope does not define at
/// all, in a task that always runs, is the template's defect, at its line; a failure fluxgate
/// cannot judge offline (a conditional or looped task, a value built from facts gathered at
/// run time, a filter it lacks) is [`ProblemKind::TemplateUnchecked`], whose message says the
/// template was not checked. Once per template line however many hosts fail on it.
fn template_problems(project: &Project, env_hosts: &[String]) -> Vec<Problem> {
    let mut out: Vec<Problem> = Vec::new();
    let mut failing: IndexMap<(String, Option<fluxgate_diagnostics::Location>), (usize, usize)> =
        IndexMap::new();
    out.extend(
        project
            .task_syntax_problems()
            .into_iter()
            .map(|p| p.map_kind(ProblemKind::Ansible)),
    );
    let env_hosts: std::collections::HashSet<&String> = env_hosts.iter().collect();
    let mut missing_src = std::collections::HashSet::new();
    for po in project.order() {
        for task in &po.play.tasks {
            // A static `src` that resolves to no file: ansible-core fails the task when it
            // runs (an error when it always runs; a conditional task may never).
            if let Some(t) = &task.template
                && t.resolved.is_none()
                && !t.src.contains("{{")
                && missing_src.insert(task.loc.clone())
            {
                let conditional = task.when.is_some()
                    || task
                        .keywords
                        .keys()
                        .any(|k| k == "loop" || k.starts_with("with_"));
                out.push(
                    Problem::new(
                        if conditional {
                            ProblemKind::TemplateUnchecked(AnsibleKind::Invalid)
                        } else {
                            ProblemKind::Ansible(AnsibleKind::Invalid)
                        },
                        format!(
                            "template task `{}` names src `{}`, which is in no templates folder \
                             it searches: ansible-core fails the task",
                            task.name.as_deref().unwrap_or(&task.module),
                            t.src
                        ),
                        Some(task.loc.clone()),
                    )
                    .help("fix the src path, or add the file to the role's templates/ folder"),
                );
            }
            let Some(path) = task.template.as_ref().and_then(|t| t.resolved.clone()) else {
                continue;
            };
            for host in po.hosts.iter().filter(|h| env_hosts.contains(h)) {
                let Err(failure) = project.render_template(&path, host) else {
                    continue;
                };
                let certain = is_certain_template_defect(project, task, &path, host, &failure);
                let mut d = failure.map_kind(if certain {
                    ProblemKind::Ansible
                } else {
                    ProblemKind::TemplateUnchecked
                });
                if !certain {
                    d.message.push_str(
                        "; fluxgate could not render it offline, so what it writes is not checked",
                    );
                    d.help = Some(
                        "facts gathered at run time, registered results, loop variables and \
                         task conditions are unknown offline; give the variables a default to \
                         make the template checkable"
                            .to_string(),
                    );
                }
                if let Some((_, hosts)) = failing.get_mut(&(path.clone(), d.location.clone())) {
                    *hosts += 1;
                } else {
                    failing.insert((path.clone(), d.location.clone()), (out.len(), 1));
                    out.push(d);
                }
            }
        }
    }
    for (i, hosts) in failing.into_values() {
        if hosts > 1 {
            out[i]
                .notes
                .push(format!("the same error on {hosts} hosts"));
        }
    }
    out
}

/// Whether a template failure is the template's own defect: a syntax error, or (in a task
/// that always runs, without loop or task vars) a name on the failing line that nothing
/// defines for the host.
fn is_certain_template_defect(
    project: &Project,
    task: &fluxgate_ansible::Task,
    path: &str,
    host: &str,
    d: &fluxgate_ansible::Problem,
) -> bool {
    if d.kind == AnsibleKind::TemplateSyntax {
        return true;
    }
    // A variable cycle fails wherever it is read (ansible-core: "recursive loop detected"),
    // and a value past fluxgate's bounds (one value, or all rendering of the run: "fluxgate
    // stops") is not checked: both errors, unless the task may not run.
    let runs_always = task.when.is_none()
        && !task
            .keywords
            .keys()
            .any(|k| k == "loop" || k.starts_with("with_"));
    if runs_always
        && (d.message.contains("recursive loop detected") || d.message.contains("fluxgate stops"))
    {
        return true;
    }
    let conditional = task.when.is_some()
        || task
            .keywords
            .keys()
            .any(|k| k == "loop" || k == "vars" || k == "loop_control" || k.starts_with("with_"));
    if conditional || d.kind != AnsibleKind::TemplateUndefined {
        return false;
    }
    let Some(line) = d.location.as_ref().map(|l| l.line).filter(|l| *l > 0) else {
        return false;
    };
    let Some(text) = project.read_source(path) else {
        return false;
    };
    let Some(src) = text.lines().nth(line as usize - 1) else {
        return false;
    };
    expression_heads(src)
        .iter()
        .any(|name| !name.starts_with("ansible_") && !project.template_sees(path, host, name))
}

/// The first name of each `{{ expression }}` on a line (`{{ x | default(1) }}` -> `x`).
fn expression_heads(line: &str) -> Vec<&str> {
    line.split("{{")
        .skip(1)
        .filter_map(|rest| {
            let rest = rest.trim_start();
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let name = &rest[..end];
            let call = rest[end..].trim_start().starts_with('(');
            let literal = matches!(
                name,
                "true" | "false" | "none" | "True" | "False" | "None" | "not" | "omit"
            );
            (!name.is_empty()
                && !call
                && !literal
                && !name.starts_with(|c: char| c.is_ascii_digit()))
            .then_some(name)
        })
        .collect()
}

/// What a chart request asks for, as a message names it.
fn want_text(want: &fluxgate_fetch::sources::Want) -> String {
    use fluxgate_fetch::sources::Want;
    match want {
        Want::Semver(c) => format!("version `{c}`"),
        Want::Tag(t) => format!("tag `{t}`"),
        Want::Digest(d) => format!("digest `{d}`"),
        Want::GitRev(rev) => format!("ref `{rev}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::expression_heads;

    #[test]
    fn expression_heads_are_the_names_a_line_reads() {
        assert_eq!(
            expression_heads(
                "a: {{ x | default(1) }} {{ y.z }} {{ lookup('env', 'H') }} {{ 'lit' }} {{ true }}"
            ),
            ["x", "y"]
        );
    }
}
