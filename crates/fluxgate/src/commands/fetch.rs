//! `fluxgate fetch`: the charts the environments use, into the cache and `fluxgate.lock`
//! (SPEC §3.5). The only command that touches the network.
//!
//! Exit codes: 0 everything is in the cache and locked; 1 `--locked` and the lock does not
//! match the repository's sources (the gate fails); 2 a source could not be fetched.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use fluxgate_check::Repo;
use fluxgate_fetch::fetch::{Options, fetch};
use fluxgate_fetch::sources::chart_requests;
use fluxgate_fetch::{Cache, Error, LOCK_FILE, Lock};
use fluxgate_model::load_environment_in;
use rayon::prelude::*;

use crate::output::{emit, warn};

/// Arguments of `fluxgate fetch`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository (default: the current directory).
    pub repo: Option<PathBuf>,
    /// The cache folder (default: $FLUXGATE_CACHE, else the platform cache folder).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Refuse to change fluxgate.lock: fail when it does not match the repository's sources.
    #[arg(long)]
    pub locked: bool,
    /// Downloads at once.
    #[arg(long, default_value_t = 4)]
    pub jobs: usize,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let repo = Repo::open(args.repo.as_deref())?;
    // Nothing printed here comes from a Secret; URLs lose their user:password in messages.
    crate::output::mask_with(fluxgate_diagnostics::redact::Redactor::default());
    let cache = Cache::open(&fluxgate_fetch::cache_dir(args.cache.as_deref())?);
    // Every environment loads as `check` loads it: the files discovery read, from the index.
    let reading = repo.index.reading_fs();
    let environments: Vec<_> = repo
        .config
        .environments
        .par_iter()
        .map(|env| load_environment_in(&reading, &repo.root, &repo.config, env))
        .collect();
    let (requests, unfetchable) = chart_requests(
        environments
            .iter()
            .flat_map(fluxgate_model::Environment::objects),
    );
    let lock_path = repo.root.join(LOCK_FILE);
    let lock = Lock::read(&lock_path)?;

    let show = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
    let bar = show.then(|| {
        let bar = indicatif::ProgressBar::new(requests.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("charts {bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let opts = Options {
        locked: args.locked,
        jobs: args.jobs.max(1),
        credentials: fluxgate_fetch::creds::Credentials::from_env(),
        timeout: Duration::from_secs(30),
    };
    let outcome = fetch(&requests, &lock, &cache, &opts, &|r| {
        if let Some(b) = &bar {
            b.set_message(r.chart.clone());
            b.inc(1);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }

    let lock_changed = !args.locked && outcome.changed(&lock);
    if lock_changed {
        outcome.lock.write(&lock_path)?;
    }
    let failed_count = outcome
        .errors
        .iter()
        .filter(|e| !matches!(e, Error::LockOutdated(_)))
        .count()
        + unfetchable.len();
    emit(&format!(
        "{} chart{}: {} downloaded, {} already in the cache ({}){}; {LOCK_FILE} {}\n",
        requests.len() + unfetchable.len(),
        if requests.len() + unfetchable.len() == 1 {
            ""
        } else {
            "s"
        },
        outcome.downloaded.len(),
        outcome.reused,
        cache.dir().display(),
        if failed_count > 0 {
            format!(", {failed_count} failed")
        } else {
            String::new()
        },
        if lock_changed { "updated" } else { "unchanged" },
    ))?;
    let mut outdated = false;
    let mut failed = !unfetchable.is_empty();
    for e in unfetchable.iter().chain(&outcome.errors) {
        outdated |= matches!(e, Error::LockOutdated(_));
        failed |= !matches!(e, Error::LockOutdated(_));
        warn(&format!("error: {e}"));
    }
    Ok(if failed {
        ExitCode::from(2)
    } else if outdated {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
