//! `fluxgate coverage`: the requirements of `requirements:`, the checks that map to each, and
//! whether one of them ran (SPEC §8); with `--mutants`, whether those checks bite on the files
//! that serve each requirement. Also the one-line summary `fluxgate check` prints.

use std::path::PathBuf;
use std::process::ExitCode;

use fluxgate_kustomize::RealFs;
use fluxgate_mutate::coverage::{Inputs, coverage, inputs};
use fluxgate_mutate::report;

use crate::output;
use fluxgate_check::Repo;

/// Arguments of `fluxgate coverage`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository (default: the current directory).
    pub repo: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: super::mutate::MutateFormat,
    /// Also run the mutants: a requirement is covered only when a mutant of a file serving it
    /// was killed.
    #[arg(long)]
    pub mutants: bool,
    /// Worker threads for `--mutants` (default: every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

fn load(repo: &Repo) -> anyhow::Result<Option<Inputs>> {
    let fs = RealFs::new(&repo.root);
    Ok(inputs(&fs, &repo.root, &repo.config, &repo.index)?)
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let repo = Repo::open(args.repo.as_deref())?;
    let Some(inputs) = load(&repo)? else {
        anyhow::bail!(
            "{} has no requirements file: add `requirements: spec/requirements.yaml` to \
             fluxgate.yaml, a list of {{id, title, safety_critical}} (`fluxgate mutate` runs without one)",
            repo.root.display()
        );
    };
    let bites = if args.mutants {
        Some(super::mutate::mutation_run(&repo, super::mutate::jobs(args.jobs))?.file_bites())
    } else {
        None
    };
    let c = coverage(
        &inputs.registry,
        &inputs.checks,
        &inputs.serving,
        bites.as_ref(),
    );
    let text = match args.format {
        super::mutate::MutateFormat::Text => report::coverage_text(&c, &inputs.problems),
        super::mutate::MutateFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&report::coverage_json(&c, &inputs.problems))?
        ),
        super::mutate::MutateFormat::Markdown => report::coverage_markdown(&c, &inputs.problems),
    };
    match output::emit(&text) {
        Err(e) if output::is_broken_pipe(&e) => Ok(ExitCode::SUCCESS),
        other => other.map(|()| ExitCode::SUCCESS),
    }
}

/// The coverage of the repository's requirements (`None` without a requirements file, or
/// when it cannot be read: the conformance line says why), with the mutants' bites when
/// they ran.
pub fn matrix(
    repo: &Repo,
    bites: Option<&fluxgate_mutate::coverage::FileBites>,
) -> Option<fluxgate_mutate::coverage::Coverage> {
    let i = load(repo).ok()??;
    Some(coverage(&i.registry, &i.checks, &i.serving, bites))
}

/// The conformance line for `fluxgate check` (none without a requirements file; a requirements
/// file that cannot be read says so instead of a number).
pub fn summary_line(repo: &Repo) -> Option<String> {
    match load(repo) {
        Ok(None) => None,
        Ok(Some(i)) => {
            let c = coverage(&i.registry, &i.checks, &i.serving, None);
            let problems = if i.problems.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} problem{} in {}: see `fluxgate coverage`)",
                    i.problems.len(),
                    if i.problems.len() == 1 { "" } else { "s" },
                    i.file
                )
            };
            Some(format!("{}{problems}", c.summary()))
        }
        Err(e) => Some(format!("Conformance: unknown, {e}")),
    }
}
