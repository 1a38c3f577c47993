//! `fluxgate envs`: the environments of a repository and why each exists.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use crate::output::{Format, emit};
use fluxgate_check::Repo;

/// Arguments of `fluxgate envs`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository (default: the current directory).
    pub repo: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let repo = Repo::open(args.repo.as_deref())?;
    // Nothing here comes from a Secret; what is encrypted is masked all the same.
    crate::output::mask_with(fluxgate_diagnostics::redact::Redactor::default());
    let envs = &repo.config.environments;
    match args.format {
        Format::Json => {
            let list: Vec<_> = envs
                .iter()
                .map(|e| {
                    let ansible = e.ansible.as_ref().map(|a| {
                        json!({"inventory": a.inventory, "group": a.group, "playbook": a.playbook, "config": a.config})
                    });
                    let vip = fluxgate_model::vip::endpoint(&repo.root, e).map(|v| v.host);
                    let why = format!("{} ({})", e.reason, e.loc);
                    json!({"name": e.name, "flux": e.flux, "ansible": ansible, "talos": e.talos, "why": why, "vip": vip})
                })
                .collect();
            emit(&format!("{}\n", serde_json::to_string_pretty(&list)?))?;
        }
        Format::Text => {
            let mut out = String::new();
            if let Some(at) = &repo.config.argo_cd {
                let _ = writeln!(
                    out,
                    "managed by Argo CD (an Argo CD Application at {at}): no Flux root, so no \
                     Flux environment"
                );
            } else if envs.is_empty() {
                out.push_str(
                    "no environments found: add fluxgate.yaml or a Flux root Kustomization\n",
                );
            }
            for e in envs {
                let _ = writeln!(
                    out,
                    "{}  flux: {}",
                    e.name,
                    match e.flux.as_deref() {
                        None => "none (bootstrap only)",
                        Some("") => ".",
                        Some(f) => f,
                    }
                );
                if let Some(a) = &e.ansible {
                    let _ = writeln!(
                        out,
                        "    ansible: inventory {}{}{}",
                        a.inventory,
                        a.group
                            .as_deref()
                            .map(|g| format!(", group {g}"))
                            .unwrap_or_default(),
                        a.playbook
                            .as_deref()
                            .map(|p| format!(", playbook {p}"))
                            .unwrap_or_default()
                    );
                }
                if let Some(t) = &e.talos {
                    let _ = writeln!(out, "    talos: {t}");
                }
                let _ = writeln!(out, "    why: {} ({})", e.reason, e.loc);
            }
            for d in &repo.diagnostics {
                let _ = writeln!(
                    out,
                    "{}: {}: {}",
                    d.severity,
                    d.location
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    d.message
                );
            }
            emit(&out)?;
        }
    }
    Ok(if repo.diagnostics.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
