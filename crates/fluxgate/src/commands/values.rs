//! `fluxgate values`: a HelmRelease's effective values, each leaf with where it came from
//! (chart default, valuesFrom object, inline line, and the substitution variable behind it).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use fluxgate_kustomize::RealFs;
use fluxgate_model::load_environment;
use fluxgate_yaml::{Node, Value};
use serde_json::json;

use crate::commands::render::one_line;
use crate::config::Repo;
use crate::output::{Format, emit};

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
    let fs = RealFs::new(&repo.root);
    let rendered = load_environment(&fs, &repo.root, &repo.config, env);
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
            let out = json!({"release": release, "values": rel.values.tree.to_json(), "origins": origins});
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
                let value = leaf(&rel.values.tree, path).map_or_else(|| "?".to_string(), show);
                let _ = writeln!(out, "{path} = {value}");
                for o in chain {
                    let _ = writeln!(out, "    <- {} ({})", o.location, o.via);
                }
            }
            emit(&out)?;
        }
    }
    for d in &rendered.diagnostics {
        eprintln!("{}", one_line(d));
    }
    Ok(ExitCode::SUCCESS)
}

/// The node at a dotted path as the origins map writes it (`a.b`, `list[0].c`, `\.` inside keys).
fn leaf<'a>(tree: &'a Node, path: &str) -> Option<&'a Node> {
    let mut node = tree;
    let mut key = String::new();
    let mut chars = path.chars().peekable();
    let mut segments: Vec<String> = Vec::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'.') => {
                key.push('.');
                chars.next();
            }
            '.' => segments.push(std::mem::take(&mut key)),
            c => key.push(c),
        }
    }
    segments.push(key);
    for seg in segments {
        let (name, indexes) = match seg.find('[') {
            Some(i) => (&seg[..i], &seg[i..]),
            None => (seg.as_str(), ""),
        };
        if !name.is_empty() {
            node = node.get(name)?;
        }
        for idx in indexes.split(']').filter(|s| !s.is_empty()) {
            let i: usize = idx.trim_start_matches('[').parse().ok()?;
            node = node.as_seq()?.get(i)?;
        }
    }
    Some(node)
}

fn show(n: &Node) -> String {
    match &n.value {
        Value::String(s) => format!("{s:?}"),
        Value::Seq(_) | Value::Map(_) => serde_json::to_string(&n.to_json()).unwrap_or_default(),
        _ => n.scalar_text().unwrap_or_default(),
    }
}
