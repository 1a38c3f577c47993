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
        check: check,
    }
}

use fluxgate_diagnostics::Diagnostic;
use fluxgate_model::config::ParitySource;

use crate::RepoContext;

/// What fluxgate.yaml names that the rendered repository does not have (issue 26 §3): a
/// parity group's `helmrelease:` that no environment renders, a contract's `environments:`
/// entry that is no environment. Either would otherwise leave the group or contract checking
/// nothing, silently: an error at the config line.
fn check(ctx: &RepoContext<'_>, out: &mut Vec<Diagnostic>) {
    // Only over a full run (every configured environment rendered), so that `--env` does
    // not report a release of an environment that was not selected.
    if ctx.envs.len() != ctx.config.environments.len() {
        return;
    }
    for group in &ctx.config.parity {
        for source in &group.sources {
            let ParitySource::HelmRelease { release, loc } = source else {
                continue;
            };
            if !ctx.envs.iter().any(|e| e.releases.contains_key(release)) {
                out.push(
                    ctx.finding(format!(
                        "parity group `{}` names helmrelease `{release}`, which no environment \
                         renders: the group compares nothing there",
                        group.name
                    ))
                    .at(loc.clone())
                    .help("write the release as NAMESPACE/NAME, as `fluxgate envs` and `fluxgate values` show it"),
                );
            }
        }
    }
    for contract in &ctx.config.contracts {
        for env in contract.environments.iter().flatten() {
            if !ctx.config.environments.iter().any(|e| &e.name == env) {
                out.push(
                    ctx.finding(format!(
                        "contract `{}` names environment `{env}`, which fluxgate.yaml does not \
                         define: the contract checks nothing there",
                        contract.id
                    ))
                    .at(contract.loc.clone()),
                );
            }
        }
    }
}
