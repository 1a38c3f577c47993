//! `fluxgate template RELEASE CHART`: what `helm template` (v4.3.2) prints, rendered in Rust.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::output;

/// Arguments of `fluxgate template` (those of `helm template` it supports).
#[derive(clap::Args)]
pub struct Args {
    /// The release name.
    pub release: String,
    /// The chart: a folder or a `.tgz`.
    pub chart: PathBuf,
    /// The release namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// Values files, merged in order.
    #[arg(short = 'f', long = "values")]
    pub values: Vec<PathBuf>,
    /// Values as `a.b=v,c[0]=w` (typed as Helm types them).
    #[arg(long)]
    pub set: Vec<String>,
    /// Values as strings.
    #[arg(long = "set-string")]
    pub set_string: Vec<String>,
    /// Values as JSON (`a={"b":1}`).
    #[arg(long = "set-json")]
    pub set_json: Vec<String>,
    /// Values read from files (`K=PATH`).
    #[arg(long = "set-file")]
    pub set_file: Vec<String>,
    /// Values as literal strings (`K=V`, V taken whole).
    #[arg(long = "set-literal")]
    pub set_literal: Vec<String>,
    /// `.Capabilities.KubeVersion` (default v1.37.0, as helm v4.3.2).
    #[arg(long = "kube-version")]
    pub kube_version: Option<String>,
    /// Extra `.Capabilities.APIVersions` (`group/version` or `group/version/Kind`).
    #[arg(short = 'a', long = "api-versions")]
    pub api_versions: Vec<String>,
    /// Leave out test hooks.
    #[arg(long = "skip-tests")]
    pub skip_tests: bool,
    /// Print the chart's `crds/` first.
    #[arg(long = "include-crds")]
    pub include_crds: bool,
    /// Render without checking the values against values.schema.json (fluxgate never
    /// fetches a schema: `$ref`s resolve among the chart's own JSON files).
    #[arg(long = "skip-schema-validation")]
    pub skip_schema_validation: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let req = fluxgate_helm::Request {
        release_name: args.release.clone(),
        chart: args.chart.clone(),
        namespace: args.namespace.clone(),
        values_files: args.values.clone(),
        set: args.set.clone(),
        set_string: args.set_string.clone(),
        set_json: args.set_json.clone(),
        set_file: args.set_file.clone(),
        set_literal: args.set_literal.clone(),
        kube_version: args.kube_version.clone(),
        api_versions: args.api_versions.clone(),
        skip_tests: args.skip_tests,
        include_crds: args.include_crds,
        skip_schema_validation: args.skip_schema_validation,
    };
    match fluxgate_helm::run(&req) {
        Ok(text) => {
            output::emit(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            output::warn(&format!("Error: {e}"));
            Ok(ExitCode::from(1))
        }
    }
}
