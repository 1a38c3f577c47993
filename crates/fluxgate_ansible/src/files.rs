//! Reading files under the repository root: never outside it, every problem a diagnostic.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fluxgate_fs::{Fs, RealFs};

use fluxgate_diagnostics::Location;

use crate::problem::{Problem, ProblemKind};
use fluxgate_yaml::{Node, Schema, parse_stream};

use crate::VarMap;

/// The repository root and the helpers that keep reads inside it. Every read goes through
/// the project's [`Fs`] (the real one confined to the root, or an overlay of it).
#[derive(Clone)]
pub struct Root {
    pub dir: PathBuf,
    fs: Arc<dyn Fs>,
}

impl std::fmt::Debug for Root {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Root")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Root {
    /// The root at `dir`, read from the real filesystem confined to it.
    #[must_use]
    pub fn new(dir: &Path) -> Root {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let fs: Arc<dyn Fs> = Arc::new(RealFs::new(&dir));
        Root { dir, fs }
    }

    /// The root at `dir`, read through `fs` (which confines reads itself).
    #[must_use]
    pub fn with_fs(dir: &Path, fs: Arc<dyn Fs>) -> Root {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        Root { dir, fs }
    }

    /// The path relative to the root, as shown to users.
    #[must_use]
    pub fn rel(&self, path: &Path) -> String {
        let p = normalize(path);
        p.strip_prefix(&self.dir)
            .map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
    }

    /// Whether a path stays inside the root (lexically, and after symlinks when it exists).
    #[must_use]
    pub fn contains(&self, path: &Path) -> bool {
        let p = normalize(path);
        p.starts_with(&self.dir) && self.fs.confines(&p)
    }

    /// Reads a file under the root; `None` when it is missing, outside, or unreadable.
    #[must_use]
    pub fn read(&self, path: &Path) -> Option<String> {
        if !self.contains(path) {
            return None;
        }
        self.fs.read(&normalize(path)).ok()
    }

    #[must_use]
    pub fn is_file(&self, path: &Path) -> bool {
        self.contains(path) && self.fs.is_file(&normalize(path))
    }

    #[must_use]
    pub fn is_dir(&self, path: &Path) -> bool {
        self.contains(path) && self.fs.is_dir(&normalize(path))
    }

    /// The folders inside a folder under the root, sorted.
    #[must_use]
    pub fn folders(&self, dir: &Path) -> Vec<PathBuf> {
        self.entries(&normalize(dir))
            .into_iter()
            .filter_map(|(p, is_dir)| is_dir.then_some(p))
            .collect()
    }

    /// The entries of a folder under the root with whether each is a folder, sorted.
    fn entries(&self, dir: &Path) -> Vec<(PathBuf, bool)> {
        if !self.is_dir(dir) {
            return Vec::new();
        }
        self.fs.list_dir_kinds(dir).unwrap_or_default()
    }

    /// The names a `group_vars/` or `host_vars/` folder defines: its files without their
    /// variables extension and its folders, sorted, hidden ones skipped.
    #[must_use]
    pub fn entry_names(&self, dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = self
            .entries(&normalize(dir))
            .into_iter()
            .filter_map(|(p, is_dir)| {
                let name = p.file_name()?.to_str()?.to_string();
                if name.starts_with('.') || name.ends_with('~') || !self.contains(&p) {
                    return None;
                }
                if is_dir {
                    return Some(name);
                }
                [".yml", ".yaml", ".json"]
                    .iter()
                    .find_map(|ext| name.strip_suffix(ext))
                    .map(str::to_string)
                    .or_else(|| (!name.contains('.')).then_some(name))
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Files of a directory, sorted, recursively (hidden files skipped).
    #[must_use]
    pub fn walk(&self, dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        self.walk_into(&normalize(dir), &mut out, 0);
        out.sort();
        out
    }

    fn walk_into(&self, dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
        if depth > 16 {
            return;
        }
        for (p, is_dir) in self.entries(dir) {
            let hidden = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.') || n.ends_with('~'));
            if hidden {
                continue;
            }
            if is_dir {
                self.walk_into(&p, out, depth + 1);
            } else if self.contains(&p) {
                out.push(p);
            }
        }
    }

    /// Loads a variables file (YAML or JSON). A `$ANSIBLE_VAULT` file yields no variables and
    /// is reported in `vaulted`.
    pub fn load_vars_file(&self, path: &Path, diags: &mut Vec<Problem>) -> Option<VarMap> {
        let rel = self.rel(path);
        let Some(text) = self.read(path) else {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("cannot read variables file {rel}"),
                Some(Location::file(rel)),
            ));
            return None;
        };
        if text.trim_start().starts_with("$ANSIBLE_VAULT") {
            return Some(VarMap::default());
        }
        let stream = parse_stream(&rel, &text, Schema::Yaml11);
        diags.extend(
            stream
                .diagnostics
                .into_iter()
                .map(crate::problem::from_yaml),
        );
        let doc = stream.docs.into_iter().next()?;
        match doc.value {
            fluxgate_yaml::Value::Map(m) => Some(*m),
            fluxgate_yaml::Value::Null => Some(VarMap::default()),
            _ => {
                diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("variables file {rel} must hold a mapping"),
                    Some(doc.loc),
                ));
                None
            }
        }
    }

    /// The variables of a `group_vars/<name>` or `host_vars/<name>` entry: a file with one of
    /// the known extensions (or none), or a directory of such files, merged in name order.
    pub fn load_named_vars(
        &self,
        dir: &Path,
        name: &str,
        diags: &mut Vec<Problem>,
    ) -> Vec<(String, VarMap)> {
        let mut out = Vec::new();
        for ext in ["", ".yml", ".yaml", ".json"] {
            let p = dir.join(format!("{name}{ext}"));
            if self.is_file(&p)
                && let Some(m) = self.load_vars_file(&p, diags)
            {
                out.push((self.rel(&p), m));
            }
        }
        let d = dir.join(name);
        if self.is_dir(&d) {
            for f in self.walk(&d) {
                let ok = matches!(
                    f.extension().and_then(|e| e.to_str()),
                    Some("yml" | "yaml" | "json") | None
                );
                if ok && let Some(m) = self.load_vars_file(&f, diags) {
                    out.push((self.rel(&f), m));
                }
            }
        }
        out
    }

    /// Parses one YAML file (first document), reporting problems.
    pub fn load_yaml(&self, path: &Path, diags: &mut Vec<Problem>) -> Option<Node> {
        let rel = self.rel(path);
        let Some(text) = self.read(path) else {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("cannot read {rel}"),
                Some(Location::file(rel)),
            ));
            return None;
        };
        let stream = parse_stream(&rel, &text, Schema::Yaml11);
        diags.extend(
            stream
                .diagnostics
                .into_iter()
                .map(crate::problem::from_yaml),
        );
        stream.docs.into_iter().next()
    }
}

/// Removes `.` and `..` components without touching the file system.
#[must_use]
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_follows_symlinks_through_its_folder_memo() {
        let tmp = std::env::temp_dir().join(format!("fluxgate-root-{}", std::process::id()));
        let (root, outside) = (tmp.join("root"), tmp.join("outside"));
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("a/b/vars.yml"), "x: 1").unwrap();
        std::fs::write(outside.join("secret.yml"), "y: 2").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("a/away")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.yml"), root.join("a/b/link.yml")).unwrap();
        let r = Root::new(&root);
        for _ in 0..2 {
            assert!(r.contains(&r.dir.join("a/b/vars.yml")));
            assert!(r.contains(&r.dir.join("a/b/missing.yml")));
            assert!(r.contains(&r.dir.join("a/nowhere/missing.yml")));
            assert!(!r.contains(&r.dir.join("a/away/secret.yml")));
            assert!(!r.contains(&r.dir.join("a/b/link.yml")));
            assert!(!r.contains(&r.dir.join("../outside/secret.yml")));
            assert_eq!(r.read(&r.dir.join("a/b/vars.yml")).as_deref(), Some("x: 1"));
            assert!(r.read(&r.dir.join("a/away/secret.yml")).is_none());
        }
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
