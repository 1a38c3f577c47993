//! `fluxgate check --base REV [--new-only]`: every finding is `new` or `existing` against the
//! findings of the base revision (rendered with its own `fluxgate.yaml`), matched by
//! fingerprint (fluxgate_diff::baseline). With `--new-only` only new findings fail the gate.
//! A base that cannot be rendered is said, and every finding then counts as new.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use fluxgate_diagnostics::render::{
    diagnostic_to_json, render_github, render_junit, render_sarif_fingerprinted, render_text_styled,
};
use fluxgate_diagnostics::{Diagnostic, Severity};
use fluxgate_diff::baseline::{SARIF_KEY, fingerprints};
use fluxgate_model::Environment;
use serde_json::json;

use crate::commands::base;
use crate::commands::check::{Args, CheckFormat, LAYERS, count, rules_ran, text_report};
use crate::commands::diff::{Rendered, render_side};
use crate::output;
use fluxgate_check::Repo;
use fluxgate_check::Secrets;

/// Which head findings are new, and how many of the base's are gone.
pub fn split(head: &Rendered, base: &Rendered) -> (Vec<bool>, usize) {
    let h = fingerprints(&head.diags, &reader(&head.repo));
    let b = fingerprints(&base.diags, &reader(&base.repo));
    fluxgate_diff::baseline::split(&h, &b)
}

/// Reads a repository file by its relative path, never outside the root.
/// A repository file's text by its relative path, through the repository's confined Fs.
fn reader(repo: &Repo) -> impl Fn(&str) -> Option<String> + '_ {
    move |file: &str| {
        if file.contains("..") || Path::new(file).is_absolute() {
            return None;
        }
        repo.index.fs().read(&repo.root.join(file)).ok()
    }
}

pub fn run(
    args: &Args,
    rev: &str,
    repo: &Repo,
    envs: &[Environment],
    diags: &[Diagnostic],
) -> anyhow::Result<ExitCode> {
    let tree = base::obtain(&repo.root, Some(rev), None)
        .map_err(|e| anyhow::anyhow!("check --base {rev}: {e:#}"))?;
    let names: Vec<String> = envs.iter().map(|e| e.name().to_string()).collect();
    let prints = fingerprints(diags, &reader(repo));
    let (is_new, fixed, base_problem) = match tree.open() {
        Ok(base_repo) => {
            let base = render_side(base_repo, &names);
            let b = fingerprints(&base.diags, &reader(&base.repo));
            let (n, f) = fluxgate_diff::baseline::split(&prints, &b);
            (n, f, None)
        }
        Err(e) => (
            vec![true; diags.len()],
            0,
            Some(format!(
                "the base {} could not be rendered ({e:#}); every finding counts as new",
                tree.label
            )),
        ),
    };
    if let Some(p) = &base_problem {
        output::warn(&format!("fluxgate: {p}"));
    }
    let threshold = args.fail_on.threshold();
    let gating = |d: &Diagnostic, new: bool| d.severity >= threshold && (new || !args.new_only);
    let passed = !diags.iter().zip(&is_new).any(|(d, n)| gating(d, *n));
    let (mut new, mut existing) = (Vec::new(), Vec::new());
    for (d, n) in diags.iter().zip(&is_new) {
        if *n {
            new.push(d.clone());
        } else {
            existing.push(d.clone());
        }
    }
    let summary = format!(
        "baseline {}: {} new, {} existing, {} fixed{}",
        tree.label,
        new.len(),
        existing.len(),
        fixed,
        if args.new_only {
            " (--new-only: existing findings do not fail the gate)"
        } else {
            ""
        }
    );
    let text = match args.format {
        CheckFormat::Text => {
            let secrets = Secrets::from_environments(envs);
            let mut out = String::new();
            if let Some(p) = &base_problem {
                let _ = writeln!(out, "warning: {p}\n");
            }
            if !existing.is_empty() {
                let _ = writeln!(
                    out,
                    "existing findings ({}), already in the base:\n",
                    existing.len()
                );
                let lookup = |file: &str| {
                    reader(repo)(file).map(|t| {
                        std::sync::Arc::from(secrets.mask_source(
                            &**repo.index.fs(),
                            &repo.root,
                            file,
                            &t,
                        ))
                    })
                };
                let colour = anstream::AutoStream::choice(&std::io::stdout())
                    != anstream::ColorChoice::Never;
                for d in &existing {
                    render_text_styled(&mut out, d, &lookup, colour);
                    out.push('\n');
                }
            }
            let _ = writeln!(out, "new findings ({}):\n", new.len());
            let report = text_report(
                &repo.index,
                &secrets,
                &new,
                passed,
                &names,
                &fluxgate_rules::LayerStats::default(),
            );
            // The summary line counts every finding; the decision stays last.
            let (body, verdict) = report
                .trim_end()
                .rsplit_once('\n')
                .map_or((String::new(), report.clone()), |(a, b)| {
                    (a.to_string(), b.to_string())
                });
            let _ = write!(out, "{body}\n{summary}\n{verdict}\n");
            out
        }
        CheckFormat::Json => {
            let list: Vec<serde_json::Value> = diags
                .iter()
                .zip(&is_new)
                .zip(&prints)
                .map(|((d, n), f)| {
                    let mut v = diagnostic_to_json(d);
                    if let Some(m) = v.as_object_mut() {
                        m.insert(
                            "baseline".into(),
                            json!(if *n { "new" } else { "existing" }),
                        );
                        m.insert("fingerprint".into(), json!(f));
                    }
                    v
                })
                .collect();
            let v = json!({
                "decision": if passed { "pass" } else { "fail" },
                "environments": names,
                "layers": LAYERS.iter().map(|(k, v)| ((*k).to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "diagnostics": list,
                "summary": {"errors": count(diags, Severity::Error), "warnings": count(diags, Severity::Warning)},
                "baseline": {
                    "base": tree.label,
                    "new_only": args.new_only,
                    "new": new.len(),
                    "existing": existing.len(),
                    "fixed": fixed,
                    "problem": base_problem,
                },
            });
            format!("{}\n", serde_json::to_string_pretty(&v)?)
        }
        CheckFormat::Sarif => {
            let docs = fluxgate_rules::rule_docs(&repo.config);
            let docs: Vec<(&str, &str)> =
                docs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            render_sarif_fingerprinted(
                diags,
                &docs,
                env!("CARGO_PKG_VERSION"),
                Some((SARIF_KEY, &prints)),
            )?
        }
        CheckFormat::Junit => {
            let ran = rules_ran(repo);
            let failing: Vec<Diagnostic> = diags
                .iter()
                .zip(&is_new)
                .filter(|(d, n)| d.severity > Severity::Note && (**n || !args.new_only))
                .map(|(d, _)| d.clone())
                .collect();
            render_junit(&failing, &ran)?
        }
        CheckFormat::Github => {
            let mut s = render_github(&new);
            if !args.new_only {
                s.push_str(&render_github(&existing));
            }
            s.push_str(&format!(
                "{summary}\nMERGE GATE: {}\n",
                if passed { "PASS" } else { "FAIL" }
            ));
            s
        }
        CheckFormat::Markdown => markdown(
            &new,
            &existing,
            passed,
            &names,
            &summary,
            args.report_url.as_deref(),
        ),
        CheckFormat::Html => crate::commands::check::html_report(&crate::commands::check::Page {
            repo,
            envs,
            diags,
            secrets: &Secrets::from_environments(envs),
            passed,
            extra_layers: vec![("baseline".to_string(), summary.clone())],
            mutants: None,
        }),
    };
    let code = if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    match output::emit(&text) {
        Err(e) if output::is_broken_pipe(&e) => Ok(code),
        other => other.map(|()| code),
    }
}

/// Both groups as a pull-request comment: new findings open, existing ones collapsed. Within
/// a comment's size: the new findings come first and get the room; existing rows are listed
/// while whole ones fit, and the rest counted.
fn markdown(
    new: &[Diagnostic],
    existing: &[Diagnostic],
    passed: bool,
    envs: &[String],
    summary: &str,
    report_url: Option<&str>,
) -> String {
    use fluxgate_diagnostics::render::{
        Budget, COMMENT_LIMIT, FINDINGS_HEADER, diagnostic_row, render_markdown_within, see_report,
    };
    // What the summary and the existing findings' block need at the least.
    let tail = summary.len() + 800 + report_url.map_or(0, str::len);
    let mut out = render_markdown_within(
        new,
        passed,
        envs,
        COMMENT_LIMIT.saturating_sub(tail),
        report_url,
    );
    let _ = writeln!(out, "\n{summary}\n");
    if !existing.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Existing findings ({}), already in the base</summary>\n\n{FINDINGS_HEADER}",
            existing.len(),
        );
        let mut budget = Budget::new(COMMENT_LIMIT, out.len());
        budget.reserve(600 + report_url.map_or(0, str::len));
        let mut shown = 0;
        for d in existing {
            let row = format!("{}\n", diagnostic_row(d));
            if !budget.take(&row) {
                break;
            }
            out.push_str(&row);
            shown += 1;
        }
        if shown < existing.len() {
            let _ = writeln!(
                out,
                "\n{} more existing finding{} do not fit in a comment. {}",
                existing.len() - shown,
                if existing.len() - shown == 1 { "" } else { "s" },
                see_report(report_url)
            );
        }
        out.push_str("\n</details>\n");
    }
    out
}
