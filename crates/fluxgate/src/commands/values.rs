//! `fluxgate values`: a HelmRelease's effective values, each leaf with where it came from
//! (chart default, valuesFrom object, inline line, and the substitution variable behind it).
//!
//! A leaf whose origin is a Secret (a `valuesFrom` Secret, or a variable substituted from one)
//! is shown as a mask: its origin says where to look, the value stays in the Secret.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use fluxgate_model::load_environment_in;
use fluxgate_yaml::{Node, Value};
use serde_json::json;

use crate::commands::render::one_line;
use crate::output::{self, Format, emit};
use fluxgate_check::Repo;
use fluxgate_check::Secrets;
use fluxgate_diagnostics::redact::MASK;
use fluxgate_flux::helm::{leaf, leaf_mut};

/// Arguments of `fluxgate values`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository (default: the current directory), then `NAMESPACE/RELEASE`.
    #[arg(num_args = 1..=2, required = true, value_name = "[REPO] NAMESPACE/RELEASE")]
    pub positional: Vec<String>,
    #[arg(long)]
    pub env: String,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let (repo_arg, release) = match args.positional.as_slice() {
        [release] => (None, release.as_str()),
        [repo, release] => (Some(PathBuf::from(repo)), release.as_str()),
        _ => anyhow::bail!("values needs NAMESPACE/RELEASE"),
    };
    let repo = Repo::open(repo_arg.as_deref())?;
    let env = repo.env(&args.env)?;
    let rendered = load_environment_in(&repo.index.reading_fs(), &repo.root, &repo.config, env);
    let secrets = Secrets::from_environments(std::slice::from_ref(&rendered));
    output::mask_with(secrets.redactor().clone());
    let Some(rel) = rendered.releases.get(release) else {
        let known: Vec<&str> = rendered.releases.keys().map(String::as_str).collect();
        anyhow::bail!(
            "no HelmRelease `{release}` in environment `{}`; it has: {}",
            args.env,
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        );
    };
    let from_secret = |chain: &[fluxgate_flux::helm::Origin]| {
        chain.iter().any(|o| {
            o.via.starts_with("valuesFrom Secret/") || secrets.is_secret_place(&o.location)
        })
    };
    let mut tree = rel.values.tree.clone();
    for (path, chain) in &rel.values.origins {
        if from_secret(chain)
            && let Some(n) = leaf_mut(&mut tree, path)
        {
            *n = Node::string(MASK, n.loc.clone());
        }
    }
    match args.format {
        Format::Json => {
            let origins: serde_json::Map<String, serde_json::Value> = rel
                .values
                .origins
                .iter()
                .map(|(path, chain)| {
                    let list: Vec<_> = chain
                        .iter()
                        .map(|o| json!({"file": &*o.location.file, "line": o.location.line, "via": o.via}))
                        .collect();
                    (path.clone(), json!(list))
                })
                .collect();
            let out = json!({"release": release, "values": tree.to_json(), "origins": origins});
            emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
        }
        Format::Text => {
            let mut out = String::new();
            if let Some(chart) = &rel.values.chart {
                let _ = writeln!(
                    out,
                    "# chart {} {}: {}",
                    chart.name,
                    chart.version.as_deref().unwrap_or("(any version)"),
                    chart
                        .found
                        .as_deref()
                        .map_or("not in the chart cache".to_string(), |f| format!(
                            "defaults from {f}"
                        ))
                );
            }
            for (path, chain) in &rel.values.origins {
                let value = if from_secret(chain) {
                    format!("{MASK} (from a Secret)")
                } else {
                    leaf(&tree, path).map_or_else(|| "?".to_string(), show)
                };
                let _ = writeln!(out, "{path} = {value}");
                for o in chain {
                    let _ = writeln!(out, "    <- {} ({})", o.location, o.via);
                }
            }
            emit(&out)?;
        }
    }
    let mut diags: Vec<fluxgate_diagnostics::Diagnostic> = rendered
        .problems
        .iter()
        .map(|p| fluxgate_rules::problems::finding(p).in_env(rendered.name()))
        .collect();
    secrets.redact_diagnostics(&mut diags);
    for d in &diags {
        output::warn(&one_line(d));
    }
    Ok(ExitCode::SUCCESS)
}

fn show(n: &Node) -> String {
    match &n.value {
        Value::String(s) => format!("{s:?}"),
        Value::Seq(_) | Value::Map(_) => serde_json::to_string(&n.to_json()).unwrap_or_default(),
        _ => n.scalar_text().unwrap_or_default(),
    }
}
