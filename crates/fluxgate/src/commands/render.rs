//! `fluxgate render`: print rendered objects.
//!
//! `--env NAME` prints every object of the environment's Flux tree after post-build
//! substitution, in render order (the entry directory, then each Flux Kustomization). A
//! Kustomization that fails (an unset variable in strict mode, a variable source that cannot
//! load) applies nothing in Flux: its objects, and those of the Kustomizations only it
//! declares, are left out, and stderr names it with the reason.
//!
//! Secret values are masked by default, as flux-local and flate do: every `data` and
//! `stringData` value of a Secret is replaced by a fixed mask (`data` by the mask's base64, so
//! the object stays a valid Secret), keys kept; a value that post-build substitution took from
//! a Secret is masked where it lands, and so is any known secret value inside a string.
//! `--show-secrets` prints them as they are, for local use; never in CI, whose logs are often
//! public.
//!
//! `--kustomization DIR` prints what `kubectl kustomize DIR` prints (YAML, keys sorted,
//! documents separated by `---`; `--format json` a list), and the findings on stderr as
//! `file:line: severity: message`. It applies kubectl's load restrictor
//! (`LoadRestrictionsRootOnly`): DIR's kustomization, and each base's, reads files only at or
//! below its own folder, so `resources: [../outside.yaml]` is an error whatever the current
//! directory is. Bases (folders) may lie outside DIR, as with kubectl, but never outside the
//! repository: the git repository that contains DIR (the nearest folder above it holding
//! `.git`); outside any repository the current directory when DIR is below it, else DIR
//! itself. Exit code 1 when a finding is an error: the objects that could be rendered are
//! printed all the same.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use fluxgate_diagnostics::{Diagnostic, Severity};
use fluxgate_kustomize::{LoadRestrictor, RealFs, build_restricted};
use fluxgate_model::{load_environment_in, object_id};
use fluxgate_yaml::{EmitOptions, Node, emit_docs};
use serde_json::json;

use crate::output;
use fluxgate_check::Repo;
use fluxgate_check::Secrets;

/// Arguments of `fluxgate render`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository (default: the current directory).
    pub repo: Option<PathBuf>,
    /// The environment to render: every object of its Flux tree, after substitution.
    #[arg(long, conflicts_with = "kustomization")]
    pub env: Option<String>,
    /// Build this kustomization directory and print what `kubectl kustomize DIR` prints.
    #[arg(long, value_name = "DIR")]
    pub kustomization: Option<PathBuf>,
    /// Only objects of this kind.
    #[arg(long)]
    pub kind: Option<String>,
    /// Only the object `NAMESPACE/NAME` (or `NAME` in any namespace).
    #[arg(long, value_name = "NS/NAME")]
    pub name: Option<String>,
    #[arg(long, value_enum, default_value = "yaml")]
    pub format: RenderFormat,
    /// Show where each value was set: `# file:line` after every YAML scalar; in JSON each
    /// object as `{"object", "origin": {"file", "line"}}`.
    #[arg(long)]
    pub origins: bool,
    /// Print the values of Secrets (and what was substituted from them) instead of a mask.
    /// For local use only: CI logs are often public.
    #[arg(long)]
    pub show_secrets: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RenderFormat {
    Yaml,
    Json,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &args.kustomization {
        return run_kustomization(dir, args);
    }
    let Some(env_name) = &args.env else {
        anyhow::bail!("render needs --env NAME or --kustomization DIR");
    };
    let repo = Repo::open(args.repo.as_deref())?;
    let env = repo.env(env_name)?;
    let rendered = load_environment_in(&repo.index.reading_fs(), &repo.root, &repo.config, env);
    let secrets = Secrets::from_environments(std::slice::from_ref(&rendered));
    let rendered_count = rendered.objects().count();
    // A Kustomization whose build fails applies nothing in Flux: its objects are not printed,
    // and stderr says which and why.
    let mut selected: Vec<Node> = rendered
        .tree
        .applied_objects()
        .chain(rendered.installed_objects())
        .filter(|o| selected(o, args))
        .cloned()
        .collect();
    let mut diags = repo.diagnostics.clone();
    diags.extend(
        rendered
            .problems
            .iter()
            .map(|p| fluxgate_rules::problems::finding(p).in_env(rendered.name())),
    );
    if !args.show_secrets {
        for o in &mut selected {
            secrets.mask_object(o);
        }
        secrets.redact_diagnostics(&mut diags);
        output::mask_with(secrets.redactor().clone());
    }
    let text = match args.format {
        RenderFormat::Yaml => {
            let docs = &selected;
            emit_docs(
                docs,
                EmitOptions {
                    sort_keys: true,
                    origins: args.origins,
                },
            )
        }
        RenderFormat::Json => {
            let list: Vec<serde_json::Value> = selected
                .iter()
                .map(|o| {
                    if args.origins {
                        json!({"object": o.to_json(), "origin": {"file": &*o.loc.file, "line": o.loc.line}})
                    } else {
                        o.to_json()
                    }
                })
                .collect();
            format!("{}\n", serde_json::to_string_pretty(&list)?)
        }
    };
    output::emit(&text)?;
    fluxgate_diagnostics::sort_and_dedup(&mut diags);
    for d in &diags {
        output::warn(&one_line(d));
    }
    for (k, why) in rendered
        .tree
        .kustomizations
        .iter()
        .zip(rendered.tree.not_applied())
    {
        if let Some(why) = why {
            output::warn(&format!(
                "{}:{}: note: Kustomization {} fails, so Flux applies none of its {} objects (not \
                 printed): {why}",
                k.object.loc.file,
                k.object.loc.line,
                k.id(),
                k.objects.len()
            ));
        }
    }
    // A filter that matches nothing says so: an empty output must not look like "all good".
    if selected.is_empty() && (args.kind.is_some() || args.name.is_some()) {
        let mut what = Vec::new();
        if let Some(k) = &args.kind {
            what.push(format!("kind {k}"));
        }
        if let Some(n) = &args.name {
            what.push(format!("name {n}"));
        }
        output::warn(&format!(
            "fluxgate: no object of environment {env_name} matches {} ({} objects rendered)",
            what.join(" and "),
            rendered_count
        ));
        return Ok(ExitCode::from(2));
    }
    Ok(if diags.iter().any(|d| d.severity == Severity::Error) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn selected(obj: &Node, args: &Args) -> bool {
    if let Some(kind) = &args.kind
        && !obj
            .str_at(&["kind"])
            .is_some_and(|k| k.eq_ignore_ascii_case(kind))
    {
        return false;
    }
    if let Some(name) = &args.name {
        let matches = if name.contains('/') {
            object_id(obj) == *name
        } else {
            obj.str_at(&["metadata", "name"]) == Some(name.as_str())
        };
        if !matches {
            return false;
        }
    }
    true
}

fn run_kustomization(dir: &Path, args: &Args) -> anyhow::Result<ExitCode> {
    let dir =
        std::fs::canonicalize(dir).with_context(|| format!("cannot open {}", dir.display()))?;
    if !dir.is_dir() {
        anyhow::bail!("{} is not a directory", dir.display());
    }
    let root = repository_root(&dir);
    let fs = RealFs::new(&root);
    let mut result = build_restricted(&fs, &root, &dir, LoadRestrictor::RootOnly);
    let mut findings: Vec<Diagnostic> = result
        .problems
        .iter()
        .map(fluxgate_rules::problems::finding)
        .collect();
    if !args.show_secrets {
        let secrets = Secrets::from_objects(result.objects.iter());
        result
            .objects
            .iter_mut()
            .for_each(|o| secrets.mask_object(o));
        secrets.redact_diagnostics(&mut findings);
        output::mask_with(secrets.redactor().clone());
    }
    let text = match args.format {
        RenderFormat::Yaml => emit_docs(
            &result.objects,
            EmitOptions {
                sort_keys: true,
                ..EmitOptions::default()
            },
        ),
        RenderFormat::Json => {
            let list: Vec<serde_json::Value> = result.objects.iter().map(Node::to_json).collect();
            format!("{}\n", serde_json::to_string_pretty(&list)?)
        }
    };
    output::emit(&text)?;
    for d in &findings {
        output::warn(&one_line(d));
    }
    Ok(if result.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The nearest folder at or above `dir` that holds `.git`; outside any repository, the
/// current directory when `dir` is below it, else `dir` itself.
fn repository_root(dir: &Path) -> PathBuf {
    if let Some(git) = dir.ancestors().find(|a| a.join(".git").exists()) {
        return git.to_path_buf();
    }
    match std::env::current_dir().and_then(std::fs::canonicalize) {
        Ok(cwd) if dir.starts_with(&cwd) => cwd,
        _ => dir.to_path_buf(),
    }
}

/// `file:line: severity: message`.
pub fn one_line(d: &Diagnostic) -> String {
    let sev = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    };
    match &d.location {
        Some(l) if l.line > 0 => format!("{}:{}: {sev}: {}", l.file, l.line, d.message),
        Some(l) => format!("{}: {sev}: {}", l.file, d.message),
        None => format!("{sev}: {}", d.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_diagnostics::Location;

    #[test]
    fn findings_print_file_and_line() {
        let d = Diagnostic::render_error("bad", Some(Location::new("a/k.yaml", 3, 2)));
        assert_eq!(one_line(&d), "a/k.yaml:3: error: bad");
    }
}
