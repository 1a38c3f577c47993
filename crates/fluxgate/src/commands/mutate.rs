//! `fluxgate mutate`: plant one small realistic defect at a time in memory, render again and
//! run the gate; report which mutants the checks killed, which survived (unguarded values)
//! and which were equivalent (SPEC §9). Exit 1 when `--fail-under` is set and the score is
//! below it (or no mutant could be judged), 2 when fluxgate cannot work.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use fluxgate_kustomize::RealFs;
use fluxgate_mutate::{Run, engine, report};

use crate::output;
use fluxgate_check::Repo;

/// Arguments of `fluxgate mutate`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository (default: the current directory).
    pub repo: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: MutateFormat,
    /// Fail (exit 1) when the mutation score is below this percentage.
    #[arg(long, value_name = "PERCENT", value_parser = percent)]
    pub fail_under: Option<f64>,
    /// Worker threads (default: every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MutateFormat {
    Text,
    Json,
    Markdown,
}

fn percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{s}` is not a percentage"))?;
    if (0.0..=100.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not between 0 and 100"))
    }
}

/// The worker count: `--jobs`, else every core; never more than the cores (`--jobs 65535`
/// would start as many threads, each with its renders in memory), never less than one.
pub fn jobs(arg: Option<u16>) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    arg.map_or(cores, |j| usize::from(j).clamp(1, cores))
}

/// Runs the mutants of the repository, with a progress bar on a terminal only (none in a
/// pipe, none under CI).
pub fn mutation_run(repo: &Repo, jobs: usize) -> anyhow::Result<Run> {
    anyhow::ensure!(
        !repo.config.environments.is_empty(),
        "nothing to mutate in {}: no environment was found (see `fluxgate envs`)",
        repo.root.display()
    );
    let fs = RealFs::new(&repo.root);
    let serving = fluxgate_mutate::coverage::serving_files(&fs, &repo.root, &repo.index);
    let show = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
    let bar = show.then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("mutants {bar:30} {pos}/{len} {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let planned = |n: usize| {
        if let Some(b) = &bar {
            b.set_length(n as u64);
        }
    };
    let progress = |_: usize| {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let opts = engine::Options {
        jobs,
        progress: &progress,
        planned: &planned,
    };
    let run = engine::run(&repo.root, &repo.config, &repo.index, &serving, &opts)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(run)
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let repo = Repo::open(args.repo.as_deref())?;
    let run = mutation_run(&repo, jobs(args.jobs))?;
    let text = match args.format {
        MutateFormat::Text => report::mutate_text(&run),
        MutateFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&report::mutate_json(&run))?
        ),
        MutateFormat::Markdown => report::mutate_markdown(&run),
    };
    let code = match (args.fail_under, run.score()) {
        (Some(min), Some(score)) if score < min => ExitCode::from(1),
        // Fail closed: nothing judged proves nothing.
        (Some(_), None) => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    };
    match output::emit(&text) {
        Err(e) if output::is_broken_pipe(&e) => Ok(code),
        other => other.map(|()| code),
    }
}
