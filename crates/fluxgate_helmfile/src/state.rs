//! What a loaded helmfile is: its states, their releases, and what could not be read.

use fluxgate_diagnostics::Location;
use fluxgate_yaml::Node;

/// A problem of the helmfile layer.
pub type Problem = fluxgate_diagnostics::Problem<ProblemKind>;

/// The kinds of problem [`crate::load`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// Something helmfile itself fails on: bad YAML, a template error, a values file or base
    /// that does not exist, a release without a chart, an inherited template that is not
    /// defined.
    Invalid,
    /// Something fluxgate does not evaluate (a program `exec` would run, an environment
    /// variable outside the explicit set, a secret reference): what depends on it is not
    /// checked.
    Unevaluated,
    /// A part of helmfile fluxgate does not read (sub-`helmfiles:`, `secrets:`): shown, not
    /// checked.
    Unsupported,
}

/// A loaded helmfile: one state per state file (a `helmfile.d` folder has several).
#[derive(Clone, Debug, Default)]
pub struct Helmfile {
    /// The state file or folder, relative to the repository.
    pub path: String,
    pub states: Vec<State>,
    pub problems: Vec<Problem>,
}

impl Helmfile {
    /// Every release of every state, in order.
    pub fn releases(&self) -> impl Iterator<Item = &Release> {
        self.states.iter().flat_map(|s| s.releases.iter())
    }
}

/// One state file, its bases and parts merged.
#[derive(Clone, Debug)]
pub struct State {
    /// Relative to the repository.
    pub file: String,
    /// The environment it was rendered for.
    pub environment: String,
    /// The environment's values (each with where it was set).
    pub values: Node,
    /// `helmDefaults.args`: `--include-crds`/`--no-hooks` mark a state used only to extract
    /// CRDs with `helmfile template`.
    pub default_args: Vec<String>,
    pub releases: Vec<Release>,
}

impl State {
    /// A state whose every release is only templated for its CRDs (`helmDefaults.args` has
    /// `--include-crds` and `--no-hooks`): its releases are not installed.
    pub fn crds_only(&self) -> bool {
        let has = |a: &str| self.default_args.iter().any(|x| x == a);
        has("--include-crds") && has("--no-hooks")
    }
}

/// One release, rendered.
#[derive(Clone, Debug)]
pub struct Release {
    pub name: String,
    pub namespace: String,
    /// `chart:` as rendered (`repo/name`, `oci://...`, a path).
    pub chart: String,
    pub chart_loc: Location,
    pub version: Option<String>,
    pub version_loc: Location,
    /// The release's item in the state file (or the base it came from).
    pub loc: Location,
    /// `installed:` (true unless it says false).
    pub installed: bool,
    /// helm waits for its resources to be ready (`wait:`, else `helmDefaults.wait`): what
    /// `needs` it waits for that too.
    pub wait: bool,
    /// The values helm gets: the values files and inline values merged in order, then
    /// `set:`; every node's location is where it was set.
    pub values: Node,
    pub values_files: Vec<ValuesFile>,
    pub needs: Vec<Need>,
    pub hooks: Vec<Hook>,
    /// What in this release's rendering was not evaluated (see [`ProblemKind::Unevaluated`]):
    /// its values may differ from what helmfile would give.
    pub unevaluated: Vec<String>,
}

impl Release {
    /// `namespace/name`, as `needs:` names it.
    pub fn id(&self) -> String {
        if self.namespace.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }

    /// The chart's own name: the last segment of `chart:` (`oci://r/charts/cilium` ->
    /// `cilium`).
    pub fn chart_name(&self) -> &str {
        self.chart
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(&self.chart)
    }
}

/// One entry of a release's `values:`.
#[derive(Clone, Debug)]
pub struct ValuesFile {
    /// Relative to the repository; `None` for inline values.
    pub path: Option<String>,
    pub loc: Location,
    /// Rendered as a template (`.gotmpl`).
    pub rendered: bool,
}

/// One entry of `needs:`.
#[derive(Clone, Debug)]
pub struct Need {
    /// As written.
    pub raw: String,
    /// The release of the same state it names (index in [`State::releases`]), when one does.
    pub target: Option<usize>,
    pub loc: Location,
}

/// One hook: shown, never run.
#[derive(Clone, Debug)]
pub struct Hook {
    pub name: Option<String>,
    pub events: Vec<String>,
    pub command: String,
    pub args: Vec<String>,
    pub loc: Location,
    /// The files the command would read or run, checked against the repository.
    pub paths: Vec<HookPath>,
}

/// A path a hook's command runs or reads (a script, `kubectl apply -f FILE`).
#[derive(Clone, Debug)]
pub struct HookPath {
    /// As the hook wrote it (after rendering).
    pub written: String,
    /// Relative to the repository (hooks run in the state file's folder).
    pub resolved: String,
    pub exists: bool,
    /// The command line's part it came from (the command, or an argument).
    pub loc: Location,
    /// A script the command runs (not a file it reads).
    pub script: bool,
}
