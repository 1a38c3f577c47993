//! `fluxgate check`: render every environment (or the ones named), run every enabled rule, and
//! decide: `MERGE GATE: PASS` or `MERGE GATE: FAIL` (SPEC §4).
//!
//! Exit codes: 0 pass, 1 a finding at or above `--fail-on` (default `error`), 2 fluxgate could
//! not do its job (bad arguments, an unreadable repository). Layers that need a cluster (L2
//! drift, L3 runtime probes) are reported as skipped, never as passed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use fluxgate_diagnostics::render::{
    diagnostic_to_json, render_github, render_junit, render_markdown, render_sarif,
    render_text_styled,
};
use fluxgate_diagnostics::{Diagnostic, Location, Severity};
use fluxgate_kustomize::SourceCache;
use fluxgate_model::{Environment, RepoIndex, load_environment_in};
use fluxgate_rules::registry::RULES;
use rayon::prelude::*;
use serde_json::json;

use crate::config::Repo;
use crate::output;
use crate::secrets::Secrets;
use crate::timings;

/// Arguments of `fluxgate check`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository (default: the current directory).
    pub repo: Option<PathBuf>,
    /// Check only this environment (repeatable; default: every environment).
    #[arg(long = "env", value_name = "NAME")]
    pub envs: Vec<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: CheckFormat,
    /// The lowest severity that fails the gate.
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: FailOn,
    /// Mark each finding `new` or `existing` against this git revision (see `fluxgate diff`).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// With --base: fail the gate only on new findings (existing ones are listed apart).
    #[arg(long, requires = "base")]
    pub new_only: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    Sarif,
    Junit,
    Github,
    Markdown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
}

impl FailOn {
    pub(crate) fn threshold(self) -> Severity {
        match self {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
        }
    }
}

/// The layers of SPEC §4: what ran, and what could not without a cluster.
pub(crate) const LAYERS: [(&str, &str); 4] = [
    ("L0", "ran"),
    ("L1", "ran"),
    ("L2", "skipped: no cluster"),
    ("L3", "skipped: no cluster"),
];

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let repo = timings::phase("open", || Repo::open(args.repo.as_deref()))?;
    let selected: Vec<_> = if args.envs.is_empty() {
        repo.config.environments.iter().collect()
    } else {
        args.envs
            .iter()
            .map(|n| repo.env(n))
            .collect::<anyhow::Result<_>>()?
    };
    // An Argo CD repository is not a Flux one: say so, never PASS (its Ansible, if any, is not
    // what deploys the cluster's apps).
    if let Some(at) = &repo.config.argo_cd {
        anyhow::bail!(
            "nothing to check in {}: the repository is managed by Argo CD (an Argo CD \
             Application at {at}) and has no Flux root; fluxgate checks Flux (and Ansible) \
             repositories",
            repo.root.display()
        );
    }
    // Fail closed: a run that checked no environment must never say PASS about it.
    if selected.is_empty() {
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
        anyhow::bail!("nothing to check in {}: {how}{why}", repo.root.display());
    }
    let envs = timings::phase("render", || render_environments(&repo, &selected));
    let (mut diags, layer_stats, l0) = findings_with_stats(&repo, &envs);
    // No format may show a Secret's value: messages are masked here, once, for all of them.
    let secrets = timings::phase("redact", || {
        let secrets = Secrets::from_environments(&envs);
        secrets.redact_diagnostics(&mut diags);
        output::mask_with(secrets.redactor().clone());
        fluxgate_diagnostics::sort_and_dedup(&mut diags);
        secrets
    });

    if let Some(rev) = &args.base {
        return crate::commands::baseline::run(args, rev, &repo, &envs, &diags);
    }
    let threshold = args.fail_on.threshold();
    let passed = !diags.iter().any(|d| d.severity >= threshold);
    let names: Vec<String> = envs.iter().map(|e| e.name().to_string()).collect();
    let text = timings::phase("format", || -> anyhow::Result<String> {
        Ok(match args.format {
            CheckFormat::Text => {
                let mut t =
                    text_report(&repo.index, &secrets, &diags, passed, &names, &layer_stats);
                let at = t.rfind("MERGE GATE:").unwrap_or(t.len());
                t.insert_str(
                    at,
                    &format!(
                        "L0: {} object{} checked against {} polic{} ({} verdict{})\n",
                        l0.objects,
                        plural(l0.objects),
                        l0.policies,
                        if l0.policies == 1 { "y" } else { "ies" },
                        l0.verdicts,
                        plural(l0.verdicts)
                    ),
                );
                with_conformance(t, super::coverage::summary_line(&repo))
            }
            CheckFormat::Json => {
                let v = json!({
                    "decision": if passed { "pass" } else { "fail" },
                    "environments": names,
                    "layers": LAYERS.iter().map(|(k, v)| ((*k).to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                    "diagnostics": diags.iter().map(diagnostic_to_json).collect::<Vec<_>>(),
                    "schema": layer_stats.schema.map(|s| json!({
                        "validated": s.validated,
                        "without_schema": s.without_schema,
                        "invalid": s.invalid,
                    })),
                    "summary": {"errors": count(&diags, Severity::Error), "warnings": count(&diags, Severity::Warning)},
                });
                format!("{}\n", serde_json::to_string_pretty(&v)?)
            }
            CheckFormat::Sarif => {
                let mut docs = fluxgate_rules::rule_docs(&repo.config);
                // Each policy rule that has a finding is a SARIF rule of the `policy` family.
                let policy = fluxgate_rules::registry::find("policy")
                    .map(fluxgate_rules::registry::Rule::summary);
                for d in diags.iter().filter(|d| d.rule.starts_with("policy:")) {
                    if let Some(summary) = &policy
                        && !docs.iter().any(|(n, _)| *n == d.rule)
                    {
                        docs.push((d.rule.clone(), summary.clone()));
                    }
                }
                let docs: Vec<(&str, &str)> =
                    docs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
                render_sarif(&diags, &docs, env!("CARGO_PKG_VERSION"))?
            }
            CheckFormat::Junit => {
                let ran = rules_ran(&repo);
                // Notes are information, not failed test cases.
                let findings: Vec<Diagnostic> = diags
                    .iter()
                    .filter(|d| d.severity > Severity::Note)
                    .cloned()
                    .collect();
                render_junit(&findings, &ran)?
            }
            CheckFormat::Github => {
                let mut s = render_github(&diags);
                s.push_str(&format!(
                    "MERGE GATE: {}\n",
                    if passed { "PASS" } else { "FAIL" }
                ));
                s
            }
            CheckFormat::Markdown => render_markdown(&diags, passed, &names),
        })
    })?;
    let code = if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    // The process ends with this command: the rendered environments and the index are left to
    // the operating system instead of being freed node by node (0.2 s of one core for 1,400
    // Kustomizations, after the output is ready).
    std::mem::forget(envs);
    std::mem::forget(repo);
    // A reader that stops early (`check | head -1`) does not turn a failed gate into a pass.
    match timings::phase("emit", || output::emit(&text)) {
        Err(e) if output::is_broken_pipe(&e) => Ok(code),
        other => other.map(|()| code),
    }
}

/// The conformance line (`fluxgate coverage`'s summary) above the decision, when the
/// repository has a requirements file.
fn with_conformance(report: String, line: Option<String>) -> String {
    let Some(line) = line else {
        return report;
    };
    let body = report.trim_end_matches('\n');
    match body.rfind('\n') {
        Some(i) => format!("{}\n{line}\n{}\n", &body[..i], &body[i + 1..]),
        None => format!("{line}\n{report}"),
    }
}

/// Renders the selected environments, each on its own core, while the repository index
/// (already read when discovery ran) is read for the rules that look beyond them.
pub fn render_environments(
    repo: &Repo,
    selected: &[&crate::config::EnvConfig],
) -> Vec<Environment> {
    let fs = repo.index.fs();
    let (envs, _) = rayon::join(
        || -> Vec<Environment> {
            selected
                .par_iter()
                .map(|e| load_environment_in(fs, &repo.root, &repo.config, e))
                .collect()
        },
        || repo.index.files().len(),
    );
    envs
}

/// Every finding of a run over `envs`, paths relative to the repository, not yet masked,
/// sorted or merged.
pub fn findings(repo: &Repo, envs: &[Environment]) -> Vec<Diagnostic> {
    findings_with_stats(repo, envs).0
}

/// [`findings`], with what the layers measured: the schema figures and the policies' L0.
pub fn findings_with_stats(
    repo: &Repo,
    envs: &[Environment],
) -> (
    Vec<Diagnostic>,
    fluxgate_rules::LayerStats,
    fluxgate_policy::L0Report,
) {
    let mut diags = repo.diagnostics.clone();
    diags.extend(unknown_rules(repo));
    diags.extend(fluxgate_rules::check_rule_config(&repo.config));
    let (found, layer_stats) = timings::phase("rules", || {
        fluxgate_rules::run_with_stats(&repo.index, &repo.config, envs)
    });
    diags.extend(found);
    // L0: the policies of `policies:` and those the environments render.
    let (policy_findings, l0) = timings::phase("policies", || {
        fluxgate_policy::check(&**repo.index.fs(), &repo.root, &repo.config, envs)
    });
    diags.extend(policy_findings);
    for d in &mut diags {
        relativize(d, &repo.root);
    }
    (diags, layer_stats, l0)
}

pub(crate) fn count(diags: &[Diagnostic], sev: Severity) -> usize {
    diags.iter().filter(|d| d.severity == sev).count()
}

/// The names of the rules that ran (enabled ones).
pub(crate) fn rules_ran(repo: &Repo) -> Vec<&'static str> {
    RULES
        .iter()
        .filter(|r| {
            r.runs()
                && repo
                    .config
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

/// rustc-style findings, a summary and the decision; colour only on a terminal. Source lines
/// are shown with the values of Secrets masked.
pub(crate) fn text_report(
    index: &RepoIndex,
    secrets: &Secrets,
    diags: &[Diagnostic],
    passed: bool,
    envs: &[String],
    layer_stats: &fluxgate_rules::LayerStats,
) -> String {
    // Snippets show the files as the renderers read them, through the repository's confined
    // filesystem (never outside it), masked once per file.
    let sources = SourceCache::new(index.fs().clone(), index.root());
    let cache: std::cell::RefCell<BTreeMap<String, Option<Arc<str>>>> =
        std::cell::RefCell::new(BTreeMap::new());
    let lookup = |file: &str| -> Option<Arc<str>> {
        cache
            .borrow_mut()
            .entry(file.to_string())
            .or_insert_with(|| {
                let text = sources.get(file)?;
                Some(Arc::from(secrets.mask_source(
                    &**index.fs(),
                    index.root(),
                    file,
                    &text,
                )))
            })
            .clone()
    };
    // anstream's choice: NO_COLOR and CLICOLOR=0 turn colour off, CLICOLOR_FORCE turns it on,
    // otherwise only a terminal gets it.
    let colour = anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never;
    let mut out = String::new();
    for d in diags {
        render_text_styled(&mut out, d, &lookup, colour);
        out.push('\n');
    }
    let errors = count(diags, Severity::Error);
    let warnings = count(diags, Severity::Warning);
    let notes = count(diags, Severity::Note);
    out.push_str(&format!(
        "{errors} error{}, {warnings} warning{}, {notes} note{} in {} environment{} ({})\n",
        plural(errors),
        plural(warnings),
        plural(notes),
        envs.len(),
        plural(envs.len()),
        if envs.is_empty() {
            "none".to_string()
        } else {
            envs.join(", ")
        }
    ));
    let layers: Vec<String> = LAYERS
        .iter()
        .map(|(k, v)| match (*k, layer_stats.schema) {
            // How many objects L0's schema validation saw.
            ("L0", Some(s)) => format!(
                "{k} {v} (schema: {} object{} validated, {} without schema)",
                s.validated,
                plural(s.validated),
                s.without_schema
            ),
            _ => format!("{k} {v}"),
        })
        .collect();
    out.push_str(&format!("layers: {}\n", layers.join(", ")));
    let verdict = if passed { "PASS" } else { "FAIL" };
    if colour {
        let colour = if passed {
            anstyle::AnsiColor::Green
        } else {
            anstyle::AnsiColor::Red
        };
        let style = anstyle::Style::new().bold().fg_color(Some(colour.into()));
        out.push_str(&format!("{style}MERGE GATE: {verdict}{style:#}\n"));
    } else {
        out.push_str(&format!("MERGE GATE: {verdict}\n"));
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
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
