//! Policies from the files and folders named in `policies:` of fluxgate.yaml.

use fluxgate_diagnostics::Annotate;
use std::path::Path;

use fluxgate_diagnostics::{Diagnostic, Location, Severity};
use fluxgate_fs::Fs;
use fluxgate_yaml::{Schema, parse_stream};
use serde_json::Value as Json;

use crate::is_policy;

/// Every YAML document of `text` that is a policy kind, with its location.
#[must_use]
pub fn policy_documents(file: &str, text: &str) -> (Vec<(Json, Location)>, Vec<Diagnostic>) {
    let stream = parse_stream(file, text, Schema::Kube);
    let docs = stream
        .docs
        .iter()
        .map(|n| (n.to_json(), n.loc.clone()))
        .filter(|(j, _)| is_policy(j))
        .collect();
    (docs, stream.diagnostics)
}

fn walk(fs: &dyn Fs, dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = fs.list_dir_kinds(dir) else {
        return;
    };
    let mut entries = entries;
    entries.sort();
    for (p, is_dir) in entries {
        let hidden = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        if fs.is_symlink(&p) {
            continue;
        }
        if is_dir {
            walk(fs, &p, out);
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e == "yaml" || e == "yml")
        {
            out.push(p);
        }
    }
}

/// The policy documents of every file or folder in `paths` (relative to `root`). A path that
/// does not exist, or leaves the repository, is an error finding: a gate must not pass
/// because its policies were never read.
#[must_use]
pub fn load_paths(
    fs: &dyn Fs,
    root: &Path,
    paths: &[String],
) -> (Vec<(Json, Location)>, Vec<Diagnostic>) {
    let mut docs = Vec::new();
    let mut diags = Vec::new();
    for p in paths {
        let rel = p.trim_end_matches('/');
        let full = root.join(rel);
        if rel.split('/').any(|c| c == "..") || Path::new(rel).is_absolute() {
            diags.push(
                Diagnostic::new(
                    "policy",
                    Severity::Error,
                    format!("policies: `{p}` is outside the repository; it was not read"),
                )
                .at(Location::file("fluxgate.yaml")),
            );
            continue;
        }
        let mut files = Vec::new();
        if fs.is_dir(&full) {
            walk(fs, &full, &mut files);
        } else if fs.is_file(&full) {
            files.push(full.clone());
        } else {
            diags.push(
                Diagnostic::new(
                    "policy",
                    Severity::Error,
                    format!("policies: `{p}` does not exist; no policy of it was evaluated"),
                )
                .at(Location::file("fluxgate.yaml")),
            );
            continue;
        }
        let before = docs.len();
        for f in files {
            let name = f
                .strip_prefix(root)
                .unwrap_or(&f)
                .to_string_lossy()
                .to_string();
            match fs.read(&f) {
                Ok(text) => {
                    let (d, problems) = policy_documents(&name, &text);
                    docs.extend(d);
                    diags.extend(problems.into_iter().map(|mut x| {
                        x.rule = "policy".into();
                        x
                    }));
                }
                Err(e) => diags.push(
                    Diagnostic::new(
                        "policy",
                        Severity::Error,
                        format!("cannot read {name}: {e}"),
                    )
                    .at(Location::file(name.as_str())),
                ),
            }
        }
        if docs.len() == before {
            diags.push(
                Diagnostic::new(
                    "policy",
                    Severity::Warning,
                    format!("policies: `{p}` holds no ValidatingAdmissionPolicy, ValidatingPolicy or Kyverno policy"),
                )
                .at(Location::file("fluxgate.yaml")),
            );
        }
    }
    (docs, diags)
}
