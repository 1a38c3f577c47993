//! `substitution-undefined`: a `${VAR}` Flux's post-build substitution cannot fill (SPEC §5.6).

use fluxgate_diagnostics::Diagnostic;

use crate::RuleContext;
use crate::problems::classify;

crate::declare_rule! {
    /// ## What it checks
    /// A `${VAR}` without a default, in a resource that a Flux Kustomization with post-build
    /// substitution renders, whose variable the environment never defines (neither in
    /// `postBuild.substitute` nor in any `substituteFrom` ConfigMap or Secret); and any
    /// `${...}` form Flux cannot parse (`${VAR-default}`, `${A[@]}`, `${X.Y}`). Text in
    /// resources that no substituting Kustomization renders, and resources labelled or
    /// annotated `kustomize.toolkit.fluxcd.io/substitute: disabled`, are never flagged.
    ///
    /// ## Why it matters
    /// Since Flux 2.9 an undefined variable fails the whole Kustomization; before, it became
    /// the empty string and the resource was applied. An empty `k8sServiceHost` made Cilium
    /// fall back to the API's ClusterIP, which only the agent itself can route: the agents
    /// deadlocked, two of three nodes at once. A parse error rejects the resource outright.
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
    /// literal `${`, write `$${`.
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
