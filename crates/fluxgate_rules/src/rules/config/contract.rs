//! `contract`: the user's own CEL assertions; each finding's rule is `contract:<id>` (SPEC §6).

crate::declare_rule! {
    /// ## What it checks
    /// Each entry of `contracts:` in fluxgate.yaml, evaluated in CEL over every environment it
    /// applies to; a finding's rule is `contract:<id>`. An assertion that is false, that does
    /// not parse, that does not evaluate to a bool, or that cannot be evaluated (a missing key,
    /// a type error) is an error that says why. The variables are `env`, `nodes`, `vars`,
    /// `hosts`, `objects`, `releases`, `playbook` and the function `template(path)`.
    ///
    /// ## Why it matters
    /// Contracts hold the invariants of this platform that no built-in rule knows: that Cilium
    /// dials the control-plane VIP and never a node, that the bootstrap and Flux install the
    /// same chart version. A contract that fails is the platform breaking its own requirement.
    ///
    /// ## Example
    /// ```yaml
    /// # fluxgate.yaml
    /// contracts:
    ///   - id: cni-dials-vip
    ///     requirements: [R-NET-01]
    ///     environments: [prod]
    ///     assert: >
    ///       releases["kube-system/cilium"].k8sServiceHost == vars.kube_vip_address
    /// ```
    ///
    /// ## How to fix
    /// Fix the value the contract reads (the finding says which environment failed), or the
    /// assertion when it is the contract that is wrong; `fluxgate values` and
    /// `fluxgate ansible vars` show the values a contract sees.
    pub static CONTRACT = {
        name: "contract",
        severity: Error,
        scope: Environment,
    }
}
