//! The `fluxgate` binary: argument parsing, dispatch to one module per command, exit codes.
//!
//! Exit codes (SPEC §4): 0 pass, 1 the gate fails, 2 fluxgate could not do its job. A broken
//! pipe exits quietly with 0, as ripgrep does.

mod commands;
mod output;
mod report;

use fluxgate_check::timings;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "fluxgate",
    version,
    about = "The offline merge gate for GitOps platform repositories"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Ansible: hosts, variables with origins, templates per host, the bootstrap order.
    Ansible(commands::ansible::Args),
    /// Render an environment, or one kustomization directory as `kubectl kustomize` would.
    Render(commands::render::Args),
    /// List the environments of a repository and why each was found.
    Envs(commands::envs::Args),
    /// Show a HelmRelease's effective values, each leaf with where it came from.
    Values(commands::values::Args),
    /// Render every environment, run every rule, and decide: MERGE GATE PASS or FAIL.
    Check(commands::check::Args),
    /// What a change does to each environment, against a git base or another folder.
    Diff(commands::diff::Args),
    /// List the built-in rules.
    Rules(commands::rules::Args),
    /// Explain a rule: what it checks, why, an example and the fix.
    Explain(commands::explain::Args),
    /// Policies (L0): `policy test DIR` runs Kyverno CLI tests and reports agreement.
    Policy(commands::policy::Args),
    /// Mutation testing: plant small defects in memory and see whether the gate notices.
    Mutate(commands::mutate::Args),
    /// Requirement coverage: which requirements a check that ran maps to.
    Coverage(commands::coverage::Args),
    /// Render a Helm chart: what `helm template` prints, byte for byte.
    Template(commands::template::Args),
    /// Fetch the charts the environments use into the cache and pin them in fluxgate.lock.
    Fetch(commands::fetch::Args),
}

// mimalloc: rendering allocates many small nodes, and glibc's malloc took a third of the time.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The commands that render every environment get workers that render charts in place
    // (fluxgate_model::charts::deep_stacks): each reserves a render's stack of address space,
    // as the render threads did, so the others keep rayon's default (under `ulimit -v`,
    // `ansible` on wide values ran out of address space with them). A pool that cannot be
    // built leaves rayon its default, and charts their render threads.
    if matches!(
        cli.command,
        Command::Check(_) | Command::Render(_) | Command::Diff(_)
    ) {
        let _ = fluxgate_model::charts::deep_stacks(rayon::ThreadPoolBuilder::new()).build_global();
    }
    let result = timings::phase("total", || match cli.command {
        Command::Ansible(args) => commands::ansible::run(&args),
        Command::Render(args) => commands::render::run(&args),
        Command::Envs(args) => commands::envs::run(&args),
        Command::Values(args) => commands::values::run(&args),
        Command::Check(args) => commands::check::run(&args),
        Command::Diff(args) => commands::diff::run(&args),
        Command::Rules(args) => commands::rules::run(&args),
        Command::Explain(args) => commands::explain::run(&args),
        Command::Policy(args) => commands::policy::run(&args),
        Command::Mutate(args) => commands::mutate::run(&args),
        Command::Coverage(args) => commands::coverage::run(&args),
        Command::Template(args) => commands::template::run(&args),
        Command::Fetch(args) => commands::fetch::run(&args),
    });
    match result {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            output::warn(&format!("fluxgate: {e:#}"));
            ExitCode::from(2)
        }
    }
}
