//! Variables files that plays and tasks load: `vars_files` and `include_vars`, found where
//! ansible-core looks for them, `include_vars` run statically.

use std::path::{Path, PathBuf};

use fluxgate_diagnostics::Location;

use crate::problem::{Problem, ProblemKind};
use fluxgate_yaml::{Node, Value};

use crate::VarMap;
use crate::files::{Root, normalize};
use crate::playbook::{Play, Playbook, Task};
use crate::project::VarFile;

/// The variables one `include_vars` task loads, applied at its precedence level for every
/// host of its play.
#[derive(Clone, Debug)]
pub struct Included {
    /// The task.
    pub task: Location,
    pub vars: VarFile,
}

/// Where ansible-core looks for a relative `source` (its `path_dwim_relative_stack`): in each
/// directory of the stack with `sub/` first (unless `source` already starts with it), then
/// without it, then the same in `basedir`. An absolute source is itself.
#[must_use]
pub fn search_candidates(
    stack: &[PathBuf],
    basedir: &Path,
    sub: &str,
    source: &str,
) -> Vec<PathBuf> {
    let src = Path::new(source);
    if src.is_absolute() {
        return vec![normalize(src)];
    }
    let names_sub = source.split('/').next() == Some(sub);
    let mut out = Vec::new();
    for dir in stack.iter().map(PathBuf::as_path).chain([basedir]) {
        // A task file in a subfolder of a role's tasks/: the role's folder comes first.
        if let Some(parent) = dir.parent()
            && parent.file_name().is_some_and(|n| n == "tasks")
            && let Some(role) = parent.parent()
        {
            out.push(role.join(sub).join(src));
            out.push(parent.join(src));
        }
        if !names_sub {
            out.push(dir.join(sub).join(src));
        }
        out.push(dir.join(src));
    }
    out.into_iter().map(|p| normalize(&p)).collect()
}

/// The arguments of an `include_vars` task.
#[derive(Debug, Default)]
struct Args {
    file: Option<String>,
    dir: Option<String>,
    name: Option<String>,
    depth: usize,
    files_matching: Option<String>,
    ignore_files: Vec<String>,
    extensions: Vec<String>,
    ignore_unknown_extensions: bool,
}

fn scalar(n: &Node) -> Option<String> {
    n.scalar_text()
}

fn args_of(task: &Task) -> Args {
    let mut a = Args {
        extensions: vec!["yaml".into(), "yml".into(), "json".into()],
        ..Args::default()
    };
    match &task.args.value {
        Value::String(s) => {
            let s = s.trim();
            let kv = s.split_whitespace().all(|p| p.contains('='));
            if kv {
                for part in s.split_whitespace() {
                    if let Some((k, v)) = part.split_once('=') {
                        set_arg(&mut a, k, &Node::string(v, task.args.loc.clone()));
                    }
                }
            } else {
                a.file = Some(s.to_string());
            }
        }
        Value::Map(m) => {
            for (k, v) in m.iter() {
                set_arg(&mut a, k, v);
            }
        }
        _ => {}
    }
    a
}

fn set_arg(a: &mut Args, k: &str, v: &Node) {
    match k {
        "file" | "_raw_params" | "free_form" => a.file = scalar(v),
        "dir" => a.dir = scalar(v),
        "name" => a.name = scalar(v),
        "depth" => a.depth = scalar(v).and_then(|d| d.parse().ok()).unwrap_or(0),
        "files_matching" => a.files_matching = scalar(v),
        "ignore_files" => {
            a.ignore_files = match &v.value {
                Value::Seq(s) => s.iter().filter_map(scalar).collect(),
                _ => scalar(v).into_iter().collect(),
            };
        }
        "extensions" => {
            a.extensions = match &v.value {
                Value::Seq(s) => s.iter().filter_map(scalar).collect(),
                _ => scalar(v).into_iter().collect(),
            };
        }
        "ignore_unknown_extensions" => {
            a.ignore_unknown_extensions =
                matches!(v.value, Value::Bool(true)) || scalar(v).is_some_and(|s| s == "true");
        }
        _ => {}
    }
}

fn note(message: String, at: &Location) -> Problem {
    Problem::new(ProblemKind::Skipped, message, Some(at.clone()))
}

/// Runs the `include_vars` tasks of a play statically: those with a literal `file` or `dir`,
/// no condition and no loop. The others are notes (they are not applied).
pub fn include_vars(
    root: &Root,
    book: &Playbook,
    play: &Play,
    diags: &mut Vec<Problem>,
) -> Vec<Included> {
    let mut out = Vec::new();
    for task in play
        .tasks
        .iter()
        .filter(|t| t.short_module() == "include_vars")
    {
        if task.when.is_some() {
            diags.push(note(
                "include_vars under a condition is not applied statically".into(),
                &task.loc,
            ));
            continue;
        }
        if task
            .keywords
            .keys()
            .any(|k| k == "loop" || k.starts_with("with_"))
        {
            diags.push(note(
                "include_vars in a loop is not applied statically".into(),
                &task.loc,
            ));
            continue;
        }
        let args = args_of(task);
        let templated = [&args.file, &args.dir, &args.name]
            .into_iter()
            .flatten()
            .find(|s| s.contains("{{") || s.contains("{%"));
        if let Some(t) = templated {
            diags.push(note(
                format!("templated include_vars argument '{t}' is not resolved statically"),
                &task.loc,
            ));
            continue;
        }
        let role = task.role.as_deref().and_then(|r| book.roles.get(r));
        let task_dir = root
            .dir
            .join(&*task.loc.file)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let loaded = if let Some(dir) = &args.dir {
            load_dir(
                root,
                &args,
                dir,
                role.map(|r| r.abs.as_path()),
                &task_dir,
                task,
                diags,
            )
        } else if let Some(file) = &args.file {
            let mut stack: Vec<PathBuf> = role.map(|r| r.abs.clone()).into_iter().collect();
            if !stack.contains(&task_dir) {
                stack.push(task_dir.clone());
            }
            let cands = search_candidates(&stack, &play.dir, "vars", file);
            if let Some(found) = cands.iter().find(|c| root.is_file(c)) {
                root.load_vars_file(found, diags)
                    .map(|vars| (root.rel(found), vars))
            } else {
                diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("include_vars file '{file}' not found"),
                    Some(task.loc.clone()),
                ));
                None
            }
        } else {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                "include_vars needs a file or a dir",
                Some(task.loc.clone()),
            ));
            None
        };
        let Some((file, mut vars)) = loaded else {
            continue;
        };
        if let Some(name) = &args.name {
            let mut wrapped = VarMap::default();
            wrapped.insert(
                name.clone(),
                Node::new(Value::Map(Box::new(vars)), task.loc.clone()),
            );
            vars = wrapped;
        }
        out.push(Included {
            task: task.loc.clone(),
            vars: VarFile { file, vars },
        });
    }
    out
}

/// `include_vars: dir=...`: the files of the folder (a role's `vars/` for a relative folder in
/// a role), folder by folder in name order, each folder's files in name order, later files
/// overriding earlier ones key by key.
fn load_dir(
    root: &Root,
    args: &Args,
    dir: &str,
    role: Option<&Path>,
    task_dir: &Path,
    task: &Task,
    diags: &mut Vec<Problem>,
) -> Option<(String, VarMap)> {
    let base = match role {
        Some(r) if dir.split('/').next() == Some("vars") && root.is_dir(&r.join(dir)) => {
            r.join(dir)
        }
        Some(_) if dir.split('/').next() == Some("vars") => PathBuf::from(dir),
        Some(r) => r.join("vars").join(dir),
        None => task_dir.join(dir),
    };
    let base = normalize(&base);
    if !root.is_dir(&base) {
        diags.push(Problem::new(
            ProblemKind::Invalid,
            format!("include_vars folder '{dir}' not found"),
            Some(task.loc.clone()),
        ));
        return None;
    }
    let matching = match args.files_matching.as_deref().map(regex::Regex::new) {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("include_vars files_matching is not a valid pattern: {e}"),
                Some(task.loc.clone()),
            ));
            return None;
        }
        None => None,
    };
    let ignore: Vec<regex::Regex> = args
        .ignore_files
        .iter()
        .filter_map(|p| regex::Regex::new(&format!("(?:{p})$")).ok())
        .collect();
    let mut files = root.walk(&base);
    files.sort_by(|a, b| (a.parent(), a.file_name()).cmp(&(b.parent(), b.file_name())));
    let mut merged = VarMap::default();
    for f in files {
        let Ok(rel_in) = f.strip_prefix(&base) else {
            continue;
        };
        let depth = rel_in.components().count();
        if args.depth != 0 && depth > args.depth {
            continue;
        }
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if matching.as_ref().is_some_and(|m| !m.is_match(&name))
            || ignore.iter().any(|r| r.is_match(&name))
        {
            continue;
        }
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or_default();
        if !args.extensions.iter().any(|e| e == ext) {
            if args.ignore_unknown_extensions {
                continue;
            }
            diags.push(Problem::new(ProblemKind::Invalid,
                format!(
                    "include_vars: {} does not have a valid extension ({}), so ansible-core fails the task",
                    root.rel(&f),
                    args.extensions.join(", ")
                ),
                Some(task.loc.clone()),
            ));
            return None;
        }
        let vars = root.load_vars_file(&f, diags)?;
        for (k, v) in vars {
            merged.insert(k, v);
        }
    }
    Some((root.rel(&base), merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_follow_ansible_search_order() {
        let role = PathBuf::from("/r/roles/app");
        let tasks = PathBuf::from("/r/roles/app/tasks");
        let c = search_candidates(&[role, tasks], Path::new("/r"), "vars", "x.yml");
        let c: Vec<String> = c.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            c,
            [
                "/r/roles/app/vars/x.yml",
                "/r/roles/app/x.yml",
                "/r/roles/app/tasks/vars/x.yml",
                "/r/roles/app/tasks/x.yml",
                "/r/vars/x.yml",
                "/r/x.yml",
            ]
        );
        // A source that names the folder is not put in it twice.
        let c = search_candidates(&[], Path::new("/r"), "vars", "vars/x.yml");
        assert_eq!(c, [PathBuf::from("/r/vars/x.yml")]);
        // A task file in a subfolder of tasks/: the role's vars/ first.
        let c = search_candidates(
            &[PathBuf::from("/r/roles/app/tasks/sub")],
            Path::new("/r"),
            "vars",
            "x.yml",
        );
        assert_eq!(c[0], PathBuf::from("/r/roles/app/vars/x.yml"));
    }
}
