//! The HTML report of `fluxgate check --format html`: one self-contained page (inline CSS and
//! SVG, a three-line script, no network) with the decision, the findings, and per environment
//! the Flux dependsOn graph, the cold-bootstrap order, the failure domains and the images and
//! charts; then requirement coverage and, when mutants ran, the kill matrix.
//!
//! [`Report`] is plain data: [`build`] fills it from a run (the model, the findings, masked),
//! [`html::page`] draws it. The diagnostics crate stays free of the model; the page's text is
//! masked where it is built, before it is HTML-escaped (an escaped secret would slip past the
//! redactor that every output passes through at the end).

pub mod build;
mod graph;
pub mod html;
mod layout;

/// Everything the page shows, already masked.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub passed: bool,
    pub environments: Vec<String>,
    /// `(layer, what happened)`: `("L2", "skipped: no cluster")`.
    pub layers: Vec<(String, String)>,
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
    /// `Conformance: 5 / 7 requirements covered ...`, with a requirements file.
    pub conformance: Option<String>,
    /// Sorted as every format sorts them.
    pub findings: Vec<Finding>,
    pub envs: Vec<EnvReport>,
    pub coverage: Option<Vec<CoverageRow>>,
    pub kills: Option<Kills>,
}

/// One finding as the text format shows it.
#[derive(Clone, Debug, Default)]
pub struct Finding {
    pub rule: String,
    pub severity: String,
    /// The environments it was seen in (empty: the repository).
    pub environments: Vec<String>,
    pub message: String,
    /// The primary location first, then the related ones.
    pub locations: Vec<Shown>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    pub requirements: Vec<String>,
}

/// A location with its source line (masked) and label.
#[derive(Clone, Debug, Default)]
pub struct Shown {
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// `None` for the primary location.
    pub label: Option<String>,
    pub source: Option<String>,
}

/// What the page shows of one environment.
#[derive(Clone, Debug, Default)]
pub struct EnvReport {
    pub name: String,
    /// Every Flux Kustomization and HelmRelease, edges from dependency to dependent.
    pub flux: Graph,
    /// The cold-bootstrap order, first step at the top.
    pub bootstrap: Graph,
    pub domains: Domains,
    pub images: Vec<ImageRow>,
    pub charts: Vec<ChartRow>,
}

/// A graph to draw.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
    /// `(from, to, kind)`: `from` is drawn above `to`.
    pub edges: Vec<(usize, usize, EdgeKind)>,
}

/// What a node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeKind {
    Kustomization,
    HelmRelease,
    /// An Ansible play of the site playbook.
    Play,
    /// A manifest k3s applies from its auto-deploy folder.
    AutoDeploy,
    /// A release of a helmfile that bootstraps the environment.
    Helmfile,
    /// Flux taking over: the steady state.
    Flux,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Kustomization => "Kustomization",
            NodeKind::HelmRelease => "HelmRelease",
            NodeKind::Play => "play",
            NodeKind::AutoDeploy => "k3s auto-deploy",
            NodeKind::Helmfile => "helmfile release",
            NodeKind::Flux => "Flux",
        }
    }

    /// The CSS class of its box.
    pub fn class(self) -> &'static str {
        match self {
            NodeKind::Kustomization => "ks",
            NodeKind::HelmRelease => "hr",
            NodeKind::Play => "play",
            NodeKind::AutoDeploy => "auto",
            NodeKind::Helmfile => "helmfile",
            NodeKind::Flux => "flux",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EdgeKind {
    /// `spec.dependsOn`, or the next step of a bootstrap.
    Order,
    /// A Kustomization renders (declares) the object.
    Declares,
}

/// One box of a graph.
#[derive(Clone, Debug, Default)]
pub struct Node {
    /// `namespace/name`, or the play's name: unique in its graph.
    pub id: String,
    pub kind: Option<NodeKind>,
    /// What the page collapses it into (a namespace or a folder).
    pub group: String,
    /// Findings (errors and warnings) located at it, or why Flux applies nothing of it.
    pub failures: Vec<String>,
    /// One line shown on hover: the path it renders, the chart, the play's roles.
    pub detail: String,
}

/// The failure domains of an environment.
#[derive(Clone, Debug, Default)]
pub struct Domains {
    pub hosts: Vec<HostRow>,
    /// How many nodes the rules count, and from where (`3 from the Ansible inventory`).
    pub node_count: Option<(usize, String)>,
    /// The most nodes a critical DaemonSet may replace at once.
    pub limit: Option<usize>,
    pub vips: Vec<(String, String)>,
    pub daemonsets: Vec<DaemonSetRow>,
}

#[derive(Clone, Debug, Default)]
pub struct HostRow {
    pub name: String,
    pub address: String,
    pub role: String,
}

/// A critical DaemonSet and how many nodes a rollout of it replaces at once.
#[derive(Clone, Debug, Default)]
pub struct DaemonSetRow {
    pub id: String,
    /// Where it comes from: the Flux tree, a HelmRelease's chart, the bootstrap.
    pub source: String,
    /// `maxUnavailable` as written (`unset: 1`, `2 (chart default)`, `OnDelete`).
    pub max_unavailable: String,
    pub at_once: Option<usize>,
    /// Whether `at_once` is over the limit.
    pub over: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ImageRow {
    pub image: String,
    /// The objects that run it (`Deployment apps/podinfo`), at most a few named.
    pub used_by: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChartRow {
    pub release: String,
    pub chart: String,
    pub version: String,
    /// Whether the chart cache holds it (its defaults and objects are known).
    pub cached: bool,
}

/// One requirement of the coverage matrix.
#[derive(Clone, Debug, Default)]
pub struct CoverageRow {
    pub id: String,
    pub title: String,
    pub safety_critical: bool,
    /// `covered`, `deferred` or `gap`.
    pub status: String,
    pub checks: Vec<String>,
    pub why: Option<String>,
}

/// The mutants of a mutation run: the score, then each mutant.
#[derive(Clone, Debug, Default)]
pub struct Kills {
    pub score: String,
    /// The rules that killed a mutant, sorted: the matrix's columns.
    pub rules: Vec<String>,
    /// Per operator: how many of its mutants each of [`Self::rules`] killed, then how many
    /// survived, were equivalent and were skipped.
    pub matrix: Vec<(String, Vec<usize>, [usize; 3])>,
    pub mutants: Vec<KillRow>,
}

#[derive(Clone, Debug, Default)]
pub struct KillRow {
    pub operator: String,
    pub file: String,
    pub line: u32,
    pub what: String,
    pub status: String,
    pub killed_by: Vec<String>,
}
