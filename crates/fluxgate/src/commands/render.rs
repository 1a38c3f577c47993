//! `fluxgate render`: print rendered objects.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `fluxgate render`.
#[derive(clap::Args)]
pub struct Args {
    /// Build this kustomization directory and print what `kubectl kustomize DIR` prints.
    #[arg(long, value_name = "DIR")]
    pub kustomization: Option<PathBuf>,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let Some(_dir) = &args.kustomization else {
        anyhow::bail!("render needs --kustomization DIR");
    };
    anyhow::bail!("the kustomize engine is not wired in yet")
}
