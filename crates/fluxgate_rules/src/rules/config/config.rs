//! `config`: a mistake in `fluxgate.yaml` (SPEC §2).

crate::declare_rule! {
    /// ## What it checks
    /// `fluxgate.yaml` itself: YAML that does not parse, a key fluxgate does not know (with the
    /// nearest known one), a path of an environment (`flux`, `ansible.inventory`, `charts`)
    /// that does not exist or leaves the repository, an environment without `flux` or
    /// `ansible`, a rule name under `rules:` that no rule has, and a key of `rules.<name>` that
    /// the rule does not have (a misspelled `enabeld`). These findings are made while the file
    /// is read, before any environment renders.
    ///
    /// ## Why it matters
    /// A mistyped setting is silently ignored otherwise: `enabeld: false` leaves the rule on,
    /// a misspelled `charts:` leaves every chart default unknown, a wrong `flux:` path renders
    /// nothing and the gate passes over an environment it never saw.
    ///
    /// ## Example
    /// ```yaml
    /// # fluxgate.yaml
    /// rules:
    ///   check-mode-probe:
    ///     enabeld: false      # unknown key in rules.check-mode-probe (did you mean `enabled`?)
    /// ```
    ///
    /// ## How to fix
    /// Correct the key or path at the line shown; `fluxgate rules` lists the rule names and
    /// `fluxgate envs` shows the environments fluxgate.yaml defines.
    pub static CONFIG = {
        name: "config",
        severity: Error,
        scope: Repository,
    }
}
