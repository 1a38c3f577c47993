//! Reading files under the repository root: never outside it, every problem a diagnostic.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fluxgate_diagnostics::Location;

use crate::problem::{Problem, ProblemKind};
use fluxgate_yaml::{Node, Schema, parse_stream};

use crate::VarMap;

/// The repository root and the helpers that keep reads inside it.
#[derive(Clone, Debug)]
pub struct Root {
    pub dir: PathBuf,
    /// Canonical forms of the folders seen so far (the repository does not change while it
    /// is read): a path is its folder's canonical form plus its name unless it is a symlink.
    folders: Arc<Mutex<HashMap<PathBuf, Option<PathBuf>>>>,
}

impl Root {
    #[must_use]
    pub fn new(dir: &Path) -> Root {
        Root {
            dir: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
            folders: Arc::default(),
        }
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
        if !p.starts_with(&self.dir) {
            return false;
        }
        match self.canonicalize(&p) {
            Some(c) => c.starts_with(&self.dir),
            None => true,
        }
    }

    /// `canonicalize` of a normalised path (`None` when it fails), the folder part memoised.
    fn canonicalize(&self, p: &Path) -> Option<PathBuf> {
        let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
            return p.canonicalize().ok();
        };
        let memo = || {
            self.folders
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let cached = memo().get(parent).cloned();
        let folder = cached.unwrap_or_else(|| {
            // Its own folder is memoised in turn, so a new folder costs one `lstat`.
            let c = self.canonicalize(parent);
            memo().insert(parent.to_path_buf(), c.clone());
            c
        })?;
        if std::fs::symlink_metadata(p).ok()?.file_type().is_symlink() {
            return p.canonicalize().ok();
        }
        Some(folder.join(name))
    }

    /// Reads a file under the root; `None` when it is missing, outside, or unreadable.
    #[must_use]
    pub fn read(&self, path: &Path) -> Option<String> {
        if !self.contains(path) {
            return None;
        }
        std::fs::read_to_string(normalize(path)).ok()
    }

    #[must_use]
    pub fn is_file(&self, path: &Path) -> bool {
        self.contains(path) && normalize(path).is_file()
    }

    #[must_use]
    pub fn is_dir(&self, path: &Path) -> bool {
        self.contains(path) && normalize(path).is_dir()
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
        if depth > 16 || !self.is_dir(dir) {
            return;
        }
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            let hidden = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.') || n.ends_with('~'));
            if hidden {
                continue;
            }
            if p.is_dir() {
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
            return Some(VarMap::new());
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
            fluxgate_yaml::Value::Map(m) => Some(m),
            fluxgate_yaml::Value::Null => Some(VarMap::new()),
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
