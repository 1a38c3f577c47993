//! `fluxgate check`: render every environment (or the ones named), run every enabled rule, and
//! decide: `MERGE GATE: PASS` or `MERGE GATE: FAIL` (SPEC §4).
//!
//! Exit codes: 0 pass, 1 a finding at or above `--fail-on` (default `error`), 2 fluxgate could
//! not do its job (bad arguments, an unreadable repository). Layers that need a cluster (L2
//! drift, L3 runtime probes) are reported as skipped, never as passed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use fluxgate_diagnostics::render::{
    COMMENT_LIMIT, diagnostic_to_json, render_github, render_junit, render_markdown_within,
    render_sarif, render_text_styled,
};
use fluxgate_diagnostics::{Diagnostic, Severity};
use fluxgate_kustomize::SourceCache;
use fluxgate_model::RepoIndex;
use serde_json::json;

use crate::output;
use fluxgate_check::Repo;
use fluxgate_check::Secrets;
use fluxgate_check::timings;

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
    /// With --format html: also run the mutants (`fluxgate mutate`), for the page's kill
    /// matrix and a coverage that counts only checks that bite.
    #[arg(long)]
    pub mutants: bool,
    /// Worker threads for --mutants (default: every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..), requires = "mutants")]
    pub jobs: Option<u16>,
    /// With --format markdown: where the HTML report is published (a CI artifact's URL), for
    /// the comment to link when it has to summarise.
    #[arg(long, value_name = "URL")]
    pub report_url: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    Sarif,
    Junit,
    Github,
    Markdown,
    /// One self-contained page: findings, graphs, failure domains, coverage.
    Html,
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
    // The mutants take minutes on a large repository: never run them for nothing.
    anyhow::ensure!(
        !args.mutants || args.format == CheckFormat::Html,
        "--mutants adds the kill matrix to the HTML report: use it with --format html"
    );
    let repo = timings::phase("open", || Repo::open(args.repo.as_deref()))?;
    let opts = fluxgate_check::Options {
        envs: args.envs.clone(),
        ..fluxgate_check::Options::default()
    };
    let report = fluxgate_check::check(&repo, &opts)?;
    output::mask_with(report.secrets.redactor().clone());
    // The mutants run before the findings are formatted: the page shows both.
    let mutants = if args.mutants {
        Some(super::mutate::mutation_run(
            &repo,
            super::mutate::jobs(args.jobs),
        )?)
    } else {
        None
    };
    let fluxgate_check::Report {
        envs,
        diagnostics: diags,
        layer_stats,
        l0,
        secrets,
    } = report;

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
            CheckFormat::Markdown => render_markdown_within(
                &diags,
                passed,
                &names,
                COMMENT_LIMIT,
                args.report_url.as_deref(),
            ),
            CheckFormat::Html => html_report(&Page {
                repo: &repo,
                envs: &envs,
                diags: &diags,
                secrets: &secrets,
                passed,
                extra_layers: Vec::new(),
                mutants: mutants.as_ref(),
            }),
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

pub(crate) fn count(diags: &[Diagnostic], sev: Severity) -> usize {
    diags.iter().filter(|d| d.severity == sev).count()
}

/// The names of the rules that ran (enabled ones).
pub(crate) fn rules_ran(repo: &Repo) -> Vec<&'static str> {
    fluxgate_check::rules_ran(&repo.config)
}

/// What the HTML page is made from.
pub(crate) struct Page<'a> {
    pub repo: &'a Repo,
    pub envs: &'a [fluxgate_model::Environment],
    pub diags: &'a [Diagnostic],
    pub secrets: &'a Secrets,
    pub passed: bool,
    /// Lines shown with the layers (the baseline's summary).
    pub extra_layers: Vec<(String, String)>,
    pub mutants: Option<&'a fluxgate_mutate::Run>,
}

/// The HTML page of a run: every text masked as the text format masks it (source lines
/// through the same masked lookup, messages through the run's redactor).
pub(crate) fn html_report(p: &Page<'_>) -> String {
    let lookup = masked_sources(&p.repo.index, p.secrets);
    let bites = p.mutants.map(fluxgate_mutate::Run::file_bites);
    let coverage = super::coverage::matrix(p.repo, bites.as_ref());
    let mut layers: Vec<(String, String)> = LAYERS
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    layers.extend(p.extra_layers.iter().cloned());
    let inputs = crate::report::build::Inputs {
        envs: p.envs,
        diagnostics: p.diags,
        redactor: p.secrets.redactor(),
        sources: &lookup,
        config: &p.repo.config,
        passed: p.passed,
        layers,
        conformance: super::coverage::summary_line(p.repo),
        coverage: coverage.as_ref(),
        mutants: p.mutants,
    };
    let report = crate::report::build::report(&inputs);
    crate::report::html::page(&report, env!("CARGO_PKG_VERSION"))
}

/// A repository file's text as the findings show it: read through the repository's confined
/// filesystem (never outside it), the values of its Secrets masked, once per file.
pub(crate) fn masked_sources<'a>(
    index: &'a RepoIndex,
    secrets: &'a Secrets,
) -> impl Fn(&str) -> Option<Arc<str>> + 'a {
    let sources = SourceCache::new(index.fs().clone(), index.root());
    let cache: std::cell::RefCell<BTreeMap<String, Option<Arc<str>>>> =
        std::cell::RefCell::new(BTreeMap::new());
    move |file: &str| -> Option<Arc<str>> {
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
    let lookup = masked_sources(index, secrets);
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
