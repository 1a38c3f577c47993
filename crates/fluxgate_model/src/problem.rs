//! What could not be rendered in an environment, typed: the Flux and Ansible layers' problems
//! and the model's own. The rules layer (`render`, `substitution-undefined`) maps each kind to
//! its rule and severity.

pub use fluxgate_ansible::ProblemKind as AnsibleKind;
pub use fluxgate_flux::problem::ProblemKind as FluxKind;
pub use fluxgate_helmfile::ProblemKind as HelmfileKind;
pub use fluxgate_kustomize::ProblemKind as KustomizeKind;

/// A problem of one environment.
pub type Problem = fluxgate_diagnostics::Problem<ProblemKind>;

/// The kinds of problem an environment carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// From the Flux tree or a HelmRelease's values (kustomize builds included).
    Flux(fluxgate_flux::problem::ProblemKind),
    /// From loading the Ansible project or rendering one of its templates.
    Ansible(fluxgate_ansible::ProblemKind),
    /// Charts the releases install that the chart cache lacks: their defaults are unknown.
    ChartsNotCached,
    /// A cached chart that does not render for a release (a template's `fail` or `required`,
    /// a parse or execution error, an unreadable archive): helm-controller's install fails.
    ChartRender,
    /// A chart's values.schema.json that cannot be read offline (a `$ref` helm would fetch):
    /// the release's values were not checked against it.
    ChartSchemaUnchecked,
    /// A template that fails to render offline where the failure may be fluxgate's (a task
    /// condition or loop, a fact gathered at run time): what it writes is not checked. The
    /// kind is the failure's own.
    TemplateUnchecked(fluxgate_ansible::ProblemKind),
    /// From reading the Talos layer (talconfig.yaml, machine configs, patches).
    Talos(fluxgate_talos::ProblemKind),
    /// From loading a helmfile that bootstraps the environment.
    Helmfile(fluxgate_helmfile::ProblemKind),
}

impl From<fluxgate_flux::problem::ProblemKind> for ProblemKind {
    fn from(kind: fluxgate_flux::problem::ProblemKind) -> Self {
        ProblemKind::Flux(kind)
    }
}

impl From<fluxgate_kustomize::ProblemKind> for ProblemKind {
    fn from(kind: fluxgate_kustomize::ProblemKind) -> Self {
        ProblemKind::Flux(kind.into())
    }
}

impl From<fluxgate_helmfile::ProblemKind> for ProblemKind {
    fn from(kind: fluxgate_helmfile::ProblemKind) -> Self {
        ProblemKind::Helmfile(kind)
    }
}

impl From<fluxgate_ansible::ProblemKind> for ProblemKind {
    fn from(kind: fluxgate_ansible::ProblemKind) -> Self {
        ProblemKind::Ansible(kind)
    }
}
