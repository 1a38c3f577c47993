//! The one pipeline of a fluxgate run, shared by `check`, `diff`, `check --base` and
//! `mutate`: open the repository ([`Repo`]), render the selected environments, derive the
//! [`fluxgate_model::Model`] once, run the rules and the policies over it, and mask every
//! secret value in what they found ([`Secrets`]). [`check`] returns a [`Report`]; the binary
//! only parses arguments and prints it.
//!
//! ```no_run
//! use fluxgate_check::{Options, Repo, check};
//! let repo = Repo::open(Some("examples/homelab".as_ref())).unwrap();
//! let report = check(&repo, &Options::default()).unwrap();
//! let errors = report.diagnostics.iter().filter(|d| d.severity == fluxgate_diagnostics::Severity::Error).count();
//! println!("{errors} errors in {} environments", report.envs.len());
//! ```

mod error;
mod repo;
pub mod secrets;
pub mod timings;

use std::path::Path;
use std::sync::Arc;

use fluxgate_diagnostics::{Annotate, Diagnostic, Location, Severity};
use fluxgate_kustomize::Fs;
use fluxgate_model::config::EnvConfig;
use fluxgate_model::{Environment, Model, load_environment_in};
use fluxgate_rules::registry::RULES;
use rayon::prelude::*;

pub use error::Error;
pub use repo::{Config, Repo};
pub use secrets::Secrets;

/// The filesystem an environment is rendered through, chosen per environment (mutation
/// testing records what each one reads).
pub type EnvFs<'a> = dyn Fn(usize, &EnvConfig) -> Arc<dyn Fs> + Sync + 'a;

/// What a run does.
#[derive(Default)]
pub struct Options<'a> {
    /// The environments to check, by name (empty: every environment).
    pub envs: Vec<String>,
    /// Skip L0's policies (mutation testing judges the rules alone).
    pub skip_policies: bool,
    /// Environments rendered by an earlier run of the same configuration, by index in the
    /// configuration: an environment whose entry is `Some` is reused, not rendered again (a
    /// mutant re-derives only the environments it reaches).
    pub reuse: Vec<Option<&'a Environment>>,
    /// The filesystem each environment renders through; the repository's own by default.
    pub env_fs: Option<&'a EnvFs<'a>>,
}

/// What a run found.
pub struct Report {
    /// The environments checked, rendered, in configuration order.
    pub envs: Vec<Environment>,
    /// Every finding, paths relative to the repository, secret values masked, sorted and
    /// merged across environments.
    pub diagnostics: Vec<Diagnostic>,
    /// What the rule layers measured (the schema figures of L0).
    pub layer_stats: fluxgate_rules::LayerStats,
    /// What L0's policies measured.
    pub l0: fluxgate_policy::L0Report,
    /// The secret values of the run, for masking whatever the caller prints next.
    pub secrets: Secrets,
}

/// Runs the gate over `repo`: renders the environments `opts` selects, derives the model,
/// runs every enabled rule, the contracts and (unless skipped) the policies, and masks the
/// findings. `Err` when there is nothing to check (fail closed: such a run must never pass)
/// or an environment named in `opts` does not exist.
pub fn check(repo: &Repo, opts: &Options<'_>) -> Result<Report, Error> {
    let selected = select(repo, &opts.envs)?;
    let envs = timings::phase("render", || render(repo, &selected, opts));
    let (mut diagnostics, layer_stats, l0) = findings(repo, &envs, opts);
    // No format may show a Secret's value: messages are masked here, once, for all of them.
    let secrets = timings::phase("redact", || {
        let secrets = Secrets::from_environments(&envs);
        secrets.redact_diagnostics(&mut diagnostics);
        fluxgate_diagnostics::sort_and_dedup(&mut diagnostics);
        secrets
    });
    Ok(Report {
        envs,
        diagnostics,
        layer_stats,
        l0,
        secrets,
    })
}

/// The environments of the run, in configuration order, with their index there.
fn select<'r>(repo: &'r Repo, names: &[String]) -> Result<Vec<(usize, &'r EnvConfig)>, Error> {
    // An Argo CD repository is not a Flux one: say so, never PASS (its Ansible, if any, is
    // not what deploys the cluster's apps).
    if let Some(at) = &repo.config.argo_cd {
        return Err(Error::ArgoCd {
            root: repo.root.clone(),
            at: at.to_string(),
        });
    }
    let all = &repo.config.environments;
    let selected: Vec<(usize, &EnvConfig)> = if names.is_empty() {
        all.iter().enumerate().collect()
    } else {
        names
            .iter()
            .map(|n| {
                let e = repo.env(n)?;
                let i = all.iter().position(|x| std::ptr::eq(x, e)).unwrap_or(0);
                Ok((i, e))
            })
            .collect::<Result<_, Error>>()?
    };
    if selected.is_empty() {
        return Err(nothing_to_check(repo));
    }
    Ok(selected)
}

/// Why a run has nothing to check, with the configuration's errors that explain it.
fn nothing_to_check(repo: &Repo) -> Error {
    let how = if repo.index.fs().is_file(&repo.root.join("fluxgate.yaml")) {
        "no environment of fluxgate.yaml can be checked (declare one under `environments:`, \
         with a `flux:` folder that exists)"
    } else {
        "discovery found no environment: no Flux Kustomization whose spec.path contains \
         the file that declares it, no FluxInstance or flux-instance HelmRelease \
         spec.sync.path, no Ansible inventory; add fluxgate.yaml"
    };
    let mut why = String::new();
    for d in repo
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
    {
        let at = d
            .location
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        why.push_str(&format!("\n  {at}: {}", d.message));
    }
    Error::NothingToCheck {
        root: repo.root.clone(),
        how,
        why,
    }
}

/// Renders the selected environments, each on its own core (or takes the one `opts` reuses),
/// reading the YAML files discovery read already from the repository index.
fn render(repo: &Repo, selected: &[(usize, &EnvConfig)], opts: &Options<'_>) -> Vec<Environment> {
    let fs = &repo.index.reading_fs();
    selected
        .par_iter()
        .map(|&(i, e)| {
            if let Some(Some(env)) = opts.reuse.get(i) {
                return (*env).clone();
            }
            match opts.env_fs {
                Some(choose) => load_environment_in(&choose(i, e), &repo.root, &repo.config, e),
                None => load_environment_in(fs, &repo.root, &repo.config, e),
            }
        })
        .collect()
}

/// Every finding of a run over `envs`, paths relative to the repository, not yet masked,
/// sorted or merged, with what the layers measured.
fn findings(
    repo: &Repo,
    envs: &[Environment],
    opts: &Options<'_>,
) -> (
    Vec<Diagnostic>,
    fluxgate_rules::LayerStats,
    fluxgate_policy::L0Report,
) {
    let mut diags = repo.diagnostics.clone();
    diags.extend(unknown_rules(repo));
    diags.extend(fluxgate_rules::check_rule_config(&repo.config));
    diags.extend(fluxgate_rules::check_config_refs(&repo.config, envs));
    let model = timings::phase("model", || Model::new(&repo.index, &repo.config, envs));
    diags.extend(fluxgate_rules::check_requirement_refs(&model));
    let (found, layer_stats) = timings::phase("rules", || fluxgate_rules::run_with_stats(&model));
    diags.extend(found);
    // L0: the policies of `policies:` and those the environments render.
    let l0 = if opts.skip_policies {
        fluxgate_policy::L0Report::default()
    } else {
        let (policy_findings, l0) = timings::phase("policies", || {
            fluxgate_policy::check(&**repo.index.fs(), &repo.root, &repo.config, envs)
        });
        diags.extend(policy_findings);
        l0
    };
    for d in &mut diags {
        relativize(d, &repo.root);
    }
    (diags, layer_stats, l0)
}

/// The names of the rules that ran (enabled ones).
#[must_use]
pub fn rules_ran(config: &Config) -> Vec<&'static str> {
    RULES
        .iter()
        .filter(|r| {
            r.runs()
                && config
                    .rules
                    .get(r.name)
                    .is_none_or(|c| c.enabled != Some(false))
        })
        .map(|r| r.name)
        .collect()
}

/// `rules:` entries that name no rule: typos must surface (SPEC §2).
fn unknown_rules(repo: &Repo) -> Vec<Diagnostic> {
    let unknown: Vec<&String> = repo
        .config
        .rules
        .keys()
        .filter(|k| !fluxgate_rules::is_known_rule(k))
        .collect();
    if unknown.is_empty() {
        return Vec::new();
    }
    let config = repo.index.read("fluxgate.yaml").ok();
    let root = config.as_ref().and_then(|f| f.docs().first());
    let known: Vec<&str> = RULES.iter().filter(|r| r.runs()).map(|r| r.name).collect();
    unknown
        .into_iter()
        .map(|name| {
            let loc = root
                .and_then(|r| r.path(&["rules", name]))
                .map_or_else(|| Location::file("fluxgate.yaml"), |n| n.loc.clone());
            Diagnostic::new(
                "config",
                Severity::Error,
                format!(
                    "unknown rule `{name}` in rules; known rules: {}",
                    known.join(", ")
                ),
            )
            .at(loc)
        })
        .collect()
}

/// File paths relative to the repository (renderers already give relative paths; this is a
/// guard for any absolute one).
fn relativize(d: &mut Diagnostic, root: &Path) {
    let fix = |l: &mut Location| {
        if let Ok(rel) = Path::new(l.file.as_ref()).strip_prefix(root) {
            l.file = Arc::from(rel.to_string_lossy().as_ref());
        }
    };
    if let Some(l) = &mut d.location {
        fix(l);
    }
    for r in &mut d.related {
        fix(&mut r.location);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relativizes_absolute_paths() {
        let mut d = Diagnostic::new("render", Severity::Error, "x").at(Location::new(
            "/repo/a/b.yaml",
            1,
            1,
        ));
        relativize(&mut d, Path::new("/repo"));
        assert_eq!(
            d.location.map(|l| l.file.to_string()),
            Some("a/b.yaml".into())
        );
    }
}
