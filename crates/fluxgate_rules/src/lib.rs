//! fluxgate's rules: one file per rule under `rules/<family>/`, one sorted list in
//! [`registry`], and [`run`], which applies each enabled rule to every environment (or once to
//! the repository) with its settings from `fluxgate.yaml`.
//!
//! A rule is a function that reads the rendered model and pushes [`Diagnostic`]s. The engine
//! then applies the user's settings: a configured severity replaces the rule's default, and
//! the rule's `requirements` are attached to each finding.
//!
//! ```
//! use fluxgate_rules::registry::{RULES, find};
//! assert!(RULES.windows(2).all(|w| w[0].name < w[1].name));
//! let render = find("render").unwrap();
//! assert!(render.doc().contains("## What it checks"));
//! ```

pub mod contracts;
mod error;
pub mod problems;
pub mod registry;
pub mod rules;
mod support;

use fluxgate_diagnostics::Annotate;

pub use error::Error;
pub use fluxgate_diagnostics::{Diagnostic, Severity};
use fluxgate_model::config::{Config, RuleConfig};
use fluxgate_model::{Documents, Environment, Model, Schemas};
use rayon::prelude::*;

use crate::registry::{Check, RULES, Rule};

/// What an environment-scoped rule reads: the model, never a file.
pub struct RuleContext<'a> {
    pub env: &'a Environment,
    /// Every environment of the run (for checks that compare environments).
    pub envs: &'a [Environment],
    pub config: &'a Config,
    /// The repository's YAML documents, read once for the run.
    pub repo: Documents<'a>,
    pub settings: &'a RuleConfig,
    pub rule: &'a Rule,
}

impl RuleContext<'_> {
    /// A finding of this rule at its default severity, in this environment.
    pub fn finding(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(self.rule.name, self.rule.default_severity, message).in_env(self.env.name())
    }
}

/// What a repository-scoped rule reads: the model, never a file.
pub struct RepoContext<'a> {
    pub envs: &'a [Environment],
    pub config: &'a Config,
    /// The repository's YAML documents, read once for the run.
    pub repo: Documents<'a>,
    /// The repository's CRDs and `schemas:` folders, loaded once for the run.
    pub schemas: &'a Schemas,
    pub settings: &'a RuleConfig,
    pub rule: &'a Rule,
}

impl RepoContext<'_> {
    /// A finding of this rule at its default severity, belonging to no single environment.
    pub fn finding(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(self.rule.name, self.rule.default_severity, message)
    }
}

/// Runs every enabled rule over the model (the environments selected for this run) and
/// returns the findings sorted and deduplicated. The rules run in parallel (each rule over
/// every environment is one unit of work); findings are collected in registry order, then
/// sorted, so the output does not depend on scheduling.
#[must_use]
pub fn run(model: &Model<'_>) -> Vec<Diagnostic> {
    run_with_stats(model).0
}

/// What the layers measured in a run, for `check` to say how many objects each saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayerStats {
    /// The `schema` rule's figures (L0); `None` when the rule is disabled.
    pub schema: Option<rules::schema::schema::Stats>,
}

/// [`run`], with the figures of the layers.
#[must_use]
pub fn run_with_stats(model: &Model<'_>) -> (Vec<Diagnostic>, LayerStats) {
    let (config, envs, repo) = (model.config, model.envs, model.documents);
    let schema_stats = std::sync::Mutex::new(None);
    let default_settings = RuleConfig::default();
    let per_rule: Vec<Vec<Diagnostic>> = RULES
        .par_iter()
        .map(|rule| {
            let settings = config.rules.get(rule.name).unwrap_or(&default_settings);
            if settings.enabled == Some(false) {
                return Vec::new();
            }
            let mut found = Vec::new();
            match rule.check {
                // Made while fluxgate.yaml is read, and by `contracts::check` below.
                Check::Reported(_) => return Vec::new(),
                Check::Environment(check) => {
                    for env in envs {
                        let ctx = RuleContext {
                            env,
                            envs,
                            config,
                            repo,
                            settings,
                            rule,
                        };
                        check(&ctx, &mut found);
                    }
                }
                Check::Repository(check) => {
                    let ctx = RepoContext {
                        envs,
                        config,
                        repo,
                        schemas: &model.schemas,
                        settings,
                        rule,
                    };
                    // The schema rule's figures are the L0 line of `check`.
                    if rule.name == rules::schema::schema::SCHEMA.name {
                        let (diags, stats) = rules::schema::schema::run(&ctx);
                        found = diags;
                        *schema_stats
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(stats);
                    } else {
                        check(&ctx, &mut found);
                    }
                }
            }
            for d in &mut found {
                apply_settings(d, rule, settings);
            }
            found
        })
        .collect();
    let mut out: Vec<Diagnostic> = per_rule.into_iter().flatten().collect();
    out.extend(contracts::check(config, envs));
    fluxgate_diagnostics::sort_and_dedup(&mut out);
    fluxgate_diagnostics::merge_environments(&mut out);
    let schema = schema_stats
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (out, LayerStats { schema })
}

/// A configured severity replaces the default one (findings a rule emits below its default,
/// such as a warning that a value is unknown, keep theirs); requirements are attached.
fn apply_settings(d: &mut Diagnostic, rule: &Rule, settings: &RuleConfig) {
    if let Some(sev) = settings.severity
        && d.severity == rule.default_severity
    {
        d.severity = sev;
    }
    for r in &settings.requirements {
        if !d.requirements.contains(r) {
            d.requirements.push(r.clone());
        }
    }
}

/// What fluxgate.yaml names that the rendered repository does not have (issue 26 §3): a
/// parity group's `helmrelease:` that no environment renders, a contract's `environments:`
/// entry that is no environment. Either would otherwise leave the group or contract checking
/// nothing, silently: an error at the config line.
#[must_use]
pub fn check_config_refs(config: &Config, envs: &[fluxgate_model::Environment]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // Only over a full run (every configured environment rendered), so that `--env` does
    // not report a release of an environment that was not selected.
    if envs.len() != config.environments.len() {
        return out;
    }
    for group in &config.parity {
        for source in &group.sources {
            let fluxgate_model::config::ParitySource::HelmRelease { release, loc } = source else {
                continue;
            };
            if !envs.iter().any(|e| e.releases.contains_key(release)) {
                out.push(
                    Diagnostic::new("config", Severity::Error, format!(
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
    for (i, group) in config.parity.iter().enumerate() {
        out.extend(parity_keys_held_nowhere(group, i, envs));
    }
    for contract in &config.contracts {
        for env in contract.environments.iter().flatten() {
            if !config.environments.iter().any(|e| &e.name == env) {
                out.push(
                    Diagnostic::new(
                        "config",
                        Severity::Error,
                        format!(
                            "contract `{}` names environment `{env}`, which fluxgate.yaml does not \
                         define: the contract checks nothing there",
                            contract.id
                        ),
                    )
                    .at(contract.loc.clone()),
                );
            }
        }
    }
    out
}

/// A parity group whose keys no source holds in any environment compares nothing: each
/// `keys:` path that no loaded source has, or `keys: tagged` when no source tags a key with
/// `# [parity]`. Groups with no source loaded anywhere are left to the release check above.
fn parity_keys_held_nowhere(
    group: &fluxgate_model::config::ParityGroup,
    index: usize,
    envs: &[fluxgate_model::Environment],
) -> Vec<Diagnostic> {
    use fluxgate_model::config::ParityKeys;
    let loaded: Vec<&fluxgate_model::parity::Loaded> = envs
        .iter()
        .filter_map(|e| e.parity.get(index))
        .flatten()
        .filter_map(|s| s.as_ref().ok().and_then(Option::as_ref))
        .collect();
    if loaded.is_empty() {
        return Vec::new();
    }
    let error = |message: String, help: &str| {
        Diagnostic::new("config", Severity::Error, message)
            .at(group.loc.clone())
            .help(help.to_string())
    };
    match &group.keys {
        ParityKeys::Tagged => {
            if loaded.iter().all(|l| l.tagged.is_empty()) {
                vec![error(
                    format!(
                        "parity group `{}` compares the keys tagged `# [parity]`, and no source \
                         tags one: the group compares nothing",
                        group.name
                    ),
                    "tag the compared keys with a `# [parity]` comment, or list them under `keys:`",
                )]
            } else {
                Vec::new()
            }
        }
        ParityKeys::Paths(paths) => paths
            .iter()
            .filter(|p| {
                let path: fluxgate_model::parity::KeyPath =
                    p.split('.').map(str::to_string).collect();
                !loaded.iter().any(|l| {
                    let mut found = std::collections::BTreeSet::new();
                    fluxgate_model::parity::leaves(&l.tree, &path, &mut found);
                    !found.is_empty()
                })
            })
            .map(|p| {
                error(
                    format!(
                        "parity group `{}` lists key `{p}`, which no source holds in any \
                         environment: the group compares nothing there",
                        group.name
                    ),
                    "write the key as a dotted path of the values (`ipam.mode`), as the sources spell it",
                )
            })
            .collect(),
    }
}

/// Requirement ids that fluxgate.yaml names (rules, parity groups, contracts) and its
/// `requirements:` registry does not define (issue 26 §3): the finding would claim a
/// requirement nobody wrote, and `coverage` could never count it. An error at the id.
#[must_use]
pub fn check_requirement_refs(model: &Model<'_>) -> Vec<Diagnostic> {
    let (Some(ids), Some(file)) = (&model.requirement_ids, &model.config.requirements) else {
        return Vec::new();
    };
    let known: Vec<&str> = ids.iter().map(String::as_str).collect();
    model
        .config
        .requirement_refs
        .iter()
        .filter(|(id, _)| !ids.contains(id))
        .map(|(id, loc)| {
            let hint = fluxgate_model::config::closest(id, &known)
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            Diagnostic::new(
                "config",
                Severity::Error,
                format!(
                    "requirement `{id}` is not in {file}{hint}: nothing defines what it requires"
                ),
            )
            .at(loc.clone())
            .help(format!("add it to {file}, or name an id that is there"))
        })
        .collect()
}

/// `rules:` entries of fluxgate.yaml that name no rule, or a key the rule does not have (a
/// misspelled `enabeld`): each a `config` error at its line, with the nearest known name.
#[must_use]
pub fn check_rule_config(config: &Config) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (name, rc) in &config.rules {
        let Some(rule) = registry::find(name) else {
            continue;
        };
        for (key, node) in &rc.settings {
            let mut known: Vec<&str> = vec!["enabled", "severity", "requirements"];
            known.extend(rule.settings);
            if known.contains(&key.as_str()) {
                // A setting the rule has (`ignore` of plaintext-secret): not a mistake.
                continue;
            }
            let hint = fluxgate_model::config::closest(key, &known)
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            out.push(
                Diagnostic::new(
                    "config",
                    Severity::Error,
                    format!(
                        "unknown key `{key}` in rules.{name}{hint}; known keys: {}",
                        known.join(", ")
                    ),
                )
                .at(node.loc.clone()),
            );
        }
    }
    out
}

/// Every rule a finding of a run over `config` can carry, with its one-line summary, in
/// registry order: each registered rule, then `contract:<id>` for each configured contract
/// (its description, else the `contract` entry's summary). SARIF's `tool.driver.rules`.
#[must_use]
pub fn rule_docs(config: &Config) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = RULES
        .iter()
        .map(|r| (r.name.to_string(), r.summary()))
        .collect();
    let contract = rules::config::contract::CONTRACT.summary();
    for c in &config.contracts {
        let summary = c.description.clone().unwrap_or_else(|| contract.clone());
        out.push((contracts::rule_name(c), summary));
    }
    out
}

/// Whether `rules.<name>` of fluxgate.yaml names a rule this build runs. `config` and
/// `contract` are registered but have no settings (their findings are made while
/// fluxgate.yaml is read and contracts are evaluated), so they are not such a name.
#[must_use]
pub fn is_known_rule(name: &str) -> bool {
    RULES.iter().any(|r| r.name == name && r.runs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_docs_list_every_rule_a_finding_can_carry() {
        let (config, diags) = fluxgate_model::config::parse_config(
            "fluxgate.yaml",
            "environments:\n  prod:\n    flux: clusters/prod\ncontracts:\n  - id: cni-dials-vip\n    description: Cilium dials the VIP\n    assert: 'true'\n  - id: bare\n    assert: 'true'\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        let docs = rule_docs(&config);
        let names: Vec<&str> = docs.iter().map(|(n, _)| n.as_str()).collect();
        for name in ["config", "contract", "render", "substitution-undefined"] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
        let summary = |id: &str| docs.iter().find(|(n, _)| n == id).map(|(_, s)| s.as_str());
        assert_eq!(
            summary("contract:cni-dials-vip"),
            Some("Cilium dials the VIP")
        );
        assert_eq!(
            summary("contract:bare").map(str::to_string),
            Some(rules::config::contract::CONTRACT.summary())
        );
        // Every registered rule is listed once, then one entry per contract.
        assert_eq!(docs.len(), RULES.len() + 2);
    }
}
