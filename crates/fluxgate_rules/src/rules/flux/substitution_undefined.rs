//! `substitution-undefined`: a `${VAR}` Flux's post-build substitution cannot fill (SPEC §5.6).

use fluxgate_diagnostics::Diagnostic;

use crate::RuleContext;
use crate::problems::classify;

crate::declare_rule! {
    /// ## What it checks
    /// A `${VAR}` without a default, in a resource that a Flux Kustomization with post-build
    /// substitution renders, whose variable the environment never defines (neither in
    /// `postBuild.substitute` nor in any `substituteFrom` ConfigMap or Secret), an operator on
    /// an unset variable (`${VAR^^}`, `${VAR:1}`, `${VAR#p}`, `${#VAR}`), an unset variable
    /// nested in a default (`${SET:=${UNSET}}`: Flux evaluates the argument first); any `${...}`
    /// form Flux cannot parse (`${VAR-default}`, `${VAR+x}`, `${A[@]}`, `${X.Y}`); and an
    /// operator that makes Flux fail (`${V:1:-2}`, a negative length cutting before the
    /// offset); and a value that is a bare `$NAME` naming a variable the Kustomization
    /// defines (`k8sServiceHost: $CONTROLPLANE_IP`): Flux substitutes only `${NAME}`, so the
    /// literal reaches the consumer. Text in resources that no substituting Kustomization renders, and resources
    /// labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled`, are never
    /// flagged: a Flux Kustomization with `postBuild` that defines no variable at all is not
    /// substituted either (unless `substituteStrategy: Always`), and its literal `${...}` is
    /// often intended (a Grafana dashboard keeps `${DS_PROMETHEUS}` by an empty
    /// `substitute: {}`); a `${...}` left in an object's name or namespace is the `schema`
    /// rule's, since the API server refuses it. The finding is at the line of the offending
    /// `${...}`; the Kustomization that substitutes it is a related location.
    ///
    /// ## Which Flux does what
    /// - Flux 2.9 (kustomize-controller v1.9.0 and later, fluxcd/pkg envsubst v1.7.0): strict
    ///   by default. An unset variable without a default fails the whole Kustomization:
    ///   nothing of it is applied, and the error names the first resource.
    /// - Flux before 2.9, or a v1.9 controller started with the feature gate
    ///   `--feature-gates=StrictPostBuildSubstitutions=false`: lax. An unset variable becomes
    ///   the empty string and the resource is applied (`k8sServiceHost: ""`).
    /// - Every version: a parse error or a failed operator fails the whole Kustomization, and
    ///   so does a defined variable whose name is not `^[_[:alpha:]][_[:alpha:][:digit:]]*$`
    ///   (a ConfigMap key `app.conf`) or a `substituteFrom` source that does not exist without
    ///   `optional: true`. The substituted text is the resource re-serialised by go-yaml v2
    ///   and parsed back as YAML 1.1: `"${FLAG}"` with `FLAG=yes` is applied as the boolean
    ///   `true`, `'${PORT}'` as a number, whatever the quotes in the file.
    ///
    /// fluxgate grades by the Flux each environment runs: `flux_version:` in `fluxgate.yaml`
    /// when pinned, else what the repository installs (a `gotk-components.yaml` header, a
    /// FluxInstance's `distribution.version`, the flux-instance chart's values, the
    /// flux-manifests OCIRepository tag, the flux2 install manifests a kustomization pulls),
    /// else the newest (strict). Where Flux fails the Kustomization it is an error; where an
    /// older Flux renders the variable empty it is a warning (a commented-out line of a
    /// script or config file is blanked harmlessly; a value another rule guards, such as an
    /// API endpoint, is judged by that rule). A parse error or a failed operator is an error
    /// under every version. A cluster that opts out with the feature gate is pinned as
    /// `flux_version: "2.8"`.
    ///
    /// ## Why it matters
    /// An empty `k8sServiceHost` made Cilium fall back to the API's ClusterIP, which only the
    /// agent itself can route: the agents deadlocked, two of three nodes at once. Under strict
    /// substitution the same typo stops every object of the Kustomization instead.
    ///
    /// ## Example
    /// ```yaml
    /// # platform/cilium/helmrelease.yaml, rendered by a Kustomization with
    /// # postBuild.substituteFrom: [{kind: ConfigMap, name: cluster-vars}]
    /// values:
    ///   k8sServiceHost: ${K3S_API_HOST}   # cluster-vars has K3S_APIHOST (typo)
    /// ```
    ///
    /// ## How to fix
    /// Define the variable in the environment (`postBuild.substitute`, or the ConfigMap or
    /// Secret named in `substituteFrom`), or give it a default: `${VAR:=value}`. For a
    /// literal `${`, write `$${`. Flux's defaults all mean "the value if it is non-empty, else
    /// the argument" (`${VAR:+x}` is not bash's alternative value).
    pub static SUBSTITUTION_UNDEFINED = {
        name: "substitution-undefined",
        severity: Error,
        scope: Environment,
        check: check,
    }
}

/// The tree records every undefined reference while it substitutes (only in resources a
/// substituting Kustomization renders) and every `${...}` it cannot parse; [`classify`] gives
/// both to this rule.
fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    for p in &ctx.env.problems {
        let (rule, severity) = classify(&p.kind);
        if rule.name == SUBSTITUTION_UNDEFINED.name {
            out.push(
                p.clone()
                    .into_diagnostic(rule.name, severity)
                    .in_env(ctx.env.name()),
            );
        }
    }
}
