//! `substitution-undefined`: a `${VAR}` Flux's post-build substitution cannot fill (SPEC §5.6).

use fluxgate_diagnostics::Diagnostic;
use fluxgate_flux::substitute::RULE_UNDEFINED;

use crate::RuleContext;

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

/// A render diagnostic that is really Flux failing to parse a `${...}` form.
pub(crate) fn is_substitution_parse_error(d: &Diagnostic) -> bool {
    d.rule == "render"
        && d.message
            .starts_with("post-build substitution cannot parse")
}

/// The tree records every undefined reference while it substitutes (only in resources a
/// substituting Kustomization renders); this rule reports them and the parse errors.
fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    for d in &ctx.env.diagnostics {
        if d.rule == RULE_UNDEFINED || is_substitution_parse_error(d) {
            let mut d = d.clone();
            d.rule = SUBSTITUTION_UNDEFINED.name.to_string();
            if d.environment.is_none() {
                d.environment = Some(ctx.env.name().to_string());
            }
            out.push(d);
        }
    }
}
