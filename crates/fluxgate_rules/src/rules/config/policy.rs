//! `policy`: layer L0, admission policies evaluated offline; each finding's rule is
//! `policy:<name>/<rule>` (SPEC §7). The evaluation lives in the `fluxgate_policy` crate.

crate::declare_rule! {
    /// ## What it checks
    /// Every rendered object of each environment against the admission policies of
    /// `policies:` in fluxgate.yaml and those the environment itself renders: Kubernetes
    /// `ValidatingAdmissionPolicy` (through its bindings), Kyverno `ValidatingPolicy` and
    /// Kyverno `ClusterPolicy`/`Policy` validate rules, with Kyverno's rules for pod
    /// controllers. A finding's rule is `policy:<policy>/<rule>` (`validation-<i>` for the
    /// CEL kinds), at the offending field (where a pattern mismatched, the foreach element,
    /// the field a failing expression reads), with the policy's message. A Deny/Enforce policy
    /// gives an error, Warn and Audit a warning; an expression that cannot be evaluated
    /// fails closed. Rules that need the cluster (API calls, image verification, mutate,
    /// generate) are listed as notes: not evaluated offline. A policy of `policies:` names
    /// the requirements it guards with the annotation `fluxgate.dev/requirements:
    /// "R-SEC-01, R-SEC-02"` or its file's `Serves:` header; `fluxgate coverage` counts them
    /// covered by `policy:<name>` (deferred when every rule needs the cluster).
    ///
    /// ## Why it matters
    /// The cluster's admission control rejects what these policies deny, after the merge:
    /// the Flux Kustomization then fails to apply and the change is stuck half-rolled-out.
    ///
    /// ## Example
    /// ```yaml
    /// # fluxgate.yaml
    /// policies: [policies/]
    /// # policies/disallow-latest-tag.yaml: a ClusterPolicy whose pattern is
    /// #   image: "!*:latest"
    /// # a Deployment with image nginx:latest is an error at its line.
    /// ```
    ///
    /// ## How to fix
    /// Change the object as the message says, or the policy when it is the policy that is
    /// wrong; `fluxgate policy test DIR` runs a policy's Kyverno CLI tests.
    pub static POLICY = {
        name: "policy",
        severity: Error,
        scope: Environment,
    }
}
