//! `fluxgate render`: print rendered objects.
//!
//! `--kustomization DIR` prints what `kubectl kustomize DIR` prints (YAML, keys sorted,
//! documents separated by `---`), and the findings on stderr as `file:line: severity:
//! message`. The load restrictor's root is the git repository that contains DIR (the nearest
//! folder above it holding `.git`); outside any repository it is DIR itself, so nothing
//! outside DIR is read. Exit code 1 when a finding is an error: the objects that could be
//! rendered are printed all the same.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use fluxgate_diagnostics::{Diagnostic, Severity};
use fluxgate_kustomize::{RealFs, build};
use fluxgate_yaml::{EmitOptions, emit_docs};

use crate::output;

/// Arguments of `fluxgate render`.
#[derive(clap::Args)]
pub struct Args {
    /// Build this kustomization directory and print what `kubectl kustomize DIR` prints.
    #[arg(long, value_name = "DIR")]
    pub kustomization: Option<PathBuf>,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let Some(dir) = &args.kustomization else {
        anyhow::bail!("render needs --kustomization DIR");
    };
    let dir =
        std::fs::canonicalize(dir).with_context(|| format!("cannot open {}", dir.display()))?;
    if !dir.is_dir() {
        anyhow::bail!("{} is not a directory", dir.display());
    }
    let root = repository_root(&dir);
    let fs = RealFs::new(&root);
    let result = build(&fs, &root, &dir);
    output::emit(&emit_docs(&result.objects, EmitOptions { sort_keys: true }))?;
    for d in &result.diagnostics {
        eprintln!("{}", one_line(d));
    }
    Ok(if result.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The nearest folder at or above `dir` that holds `.git`, else `dir`.
fn repository_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|a| a.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

/// `file:line: severity: message`.
fn one_line(d: &Diagnostic) -> String {
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
