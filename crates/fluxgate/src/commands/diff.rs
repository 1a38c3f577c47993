//! `fluxgate diff`: what a change does to each environment (SPEC §4). The head is the working
//! tree (uncommitted changes included), the base a git revision read in process or another
//! folder; each side renders with its own `fluxgate.yaml`, and the findings of both are
//! compared too (the delta of `check --base`).

use std::path::PathBuf;
use std::process::ExitCode;

use fluxgate_diagnostics::Diagnostic;
use fluxgate_diff::render::{FindingLine, FindingsDelta, Sides};
use fluxgate_model::Environment;

use crate::commands::base;
use crate::output;
use fluxgate_check::Repo;
use fluxgate_check::Secrets;

/// Arguments of `fluxgate diff`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository (default: the current directory); its working tree is the head.
    pub repo: Option<PathBuf>,
    /// The git revision to compare with (default: the merge-base of HEAD with origin/HEAD,
    /// else main or master).
    #[arg(long, value_name = "REV", conflicts_with = "base_path")]
    pub base: Option<String>,
    /// Compare with another folder instead of a git revision.
    #[arg(long, value_name = "DIR")]
    pub base_path: Option<PathBuf>,
    /// Compare only this environment (repeatable; default: every environment).
    #[arg(long = "env", value_name = "NAME")]
    pub envs: Vec<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// With --format markdown: where the HTML report (`check --format html`) is published,
    /// for the comment to link when it has to summarise.
    #[arg(long, value_name = "URL")]
    pub report_url: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    Text,
    Markdown,
    Json,
}

/// One side, rendered, with its findings (masked, sorted).
pub struct Rendered {
    pub repo: Repo,
    pub envs: Vec<Environment>,
    pub diags: Vec<Diagnostic>,
}

/// Opens and renders a side; `names`: the environments to render (the ones it has of them),
/// or every one. A side with none of them renders nothing (its findings are the
/// configuration's own).
pub fn render_side(repo: Repo, names: &[String]) -> Rendered {
    let present: Vec<String> = repo
        .config
        .environments
        .iter()
        .filter(|e| names.is_empty() || names.contains(&e.name))
        .map(|e| e.name.clone())
        .collect();
    let opts = fluxgate_check::Options {
        envs: present.clone(),
        ..fluxgate_check::Options::default()
    };
    let report = if present.is_empty() {
        None
    } else {
        fluxgate_check::check(&repo, &opts).ok()
    };
    if let Some(r) = report {
        Rendered {
            repo,
            envs: r.envs,
            diags: r.diagnostics,
        }
    } else {
        let mut diags = repo.diagnostics.clone();
        fluxgate_diagnostics::sort_and_dedup(&mut diags);
        Rendered {
            repo,
            envs: Vec::new(),
            diags,
        }
    }
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let head_repo = Repo::open(args.repo.as_deref())?;
    let base_tree = base::obtain(
        &head_repo.root,
        args.base.as_deref(),
        args.base_path.as_deref(),
    )?;
    let base_repo = base_tree.open().map_err(|e| {
        anyhow::anyhow!(
            "the base {} could not be read, so there is nothing to compare with: {e:#}",
            base_tree.label
        )
    })?;
    for name in &args.envs {
        let known = |r: &Repo| r.config.environments.iter().any(|e| &e.name == name);
        if !known(&head_repo) && !known(&base_repo) {
            head_repo.env(name)?;
        }
    }
    let (head, base) = rayon::join(
        || render_side(head_repo, &args.envs),
        || render_side(base_repo, &args.envs),
    );
    // Neither side's secrets may be printed: the redactor knows both.
    let secrets = Secrets::from_each(head.envs.iter().chain(base.envs.iter()));
    output::mask_with(secrets.redactor().clone());

    let (base_root, head_root) = (
        base.repo.root.to_string_lossy().into_owned(),
        head.repo.root.to_string_lossy().into_owned(),
    );
    let report = fluxgate_diff::diff_rooted(
        &base.envs,
        &head.envs,
        Some((base_root.as_str(), head_root.as_str())),
    );
    let delta = delta(&head, &base);
    let sides = Sides {
        base: base_tree.label.clone(),
        head: "working tree".to_string(),
    };
    let text = match args.format {
        DiffFormat::Text => fluxgate_diff::render::text(&report, &sides, Some(&delta)),
        DiffFormat::Markdown => fluxgate_diff::render::markdown_within(
            &report,
            &sides,
            Some(&delta),
            fluxgate_diagnostics::render::COMMENT_LIMIT,
            args.report_url.as_deref(),
        ),
        DiffFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&fluxgate_diff::render::json(
                &report,
                &sides,
                Some(&delta)
            ))?
        ),
    };
    output::emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The findings of the head split against those of the base.
pub fn delta(head: &Rendered, base: &Rendered) -> FindingsDelta {
    let (new, fixed) = crate::commands::baseline::split(head, base);
    let line = |d: &Diagnostic| FindingLine {
        severity: d.severity.to_string(),
        rule: d.rule.clone(),
        environment: d.environment_label(),
        location: d.location.as_ref().map(ToString::to_string),
        message: d.message.clone(),
    };
    let mut out = FindingsDelta {
        fixed,
        ..FindingsDelta::default()
    };
    for (d, is_new) in head.diags.iter().zip(new) {
        if d.severity == fluxgate_diagnostics::Severity::Note {
            continue;
        }
        if is_new {
            out.new.push(line(d));
        } else {
            out.existing.push(line(d));
        }
    }
    out
}
