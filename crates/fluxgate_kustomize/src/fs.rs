//! File access for the engine. Every read goes through [`Fs`] so that callers (mutation
//! testing, the fuzzer) can serve files from memory.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// What the engine needs from a file system.
pub trait Fs: Send + Sync {
    fn read(&self, path: &Path) -> io::Result<String>;
    /// The file's bytes, for generator files that may be binary. The default reads text, so
    /// a file system that only serves text still works (a binary file is then an error).
    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.read(path).map(String::into_bytes)
    }
    fn is_dir(&self, path: &Path) -> bool;
    fn is_file(&self, path: &Path) -> bool;
    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
}

/// The real file system, confined to a root: a path whose canonical form (symlinks resolved)
/// leaves the root reads as a `PermissionDenied` error and is neither a file nor a directory.
#[derive(Clone, Debug)]
pub struct RealFs {
    root: Option<PathBuf>,
}

impl RealFs {
    /// A file system that refuses every path resolving outside `root`.
    #[must_use]
    pub fn new(root: &Path) -> RealFs {
        RealFs {
            root: Some(std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())),
        }
    }

    /// A file system with no confinement (the engine still checks paths lexically).
    #[must_use]
    pub fn unrestricted() -> RealFs {
        RealFs { root: None }
    }

    fn check(&self, path: &Path) -> io::Result<()> {
        let Some(root) = &self.root else {
            return Ok(());
        };
        let canonical = std::fs::canonicalize(path)?;
        if canonical.starts_with(root) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} resolves to {}, outside the repository root (a symlink leaves it)",
                    path.display(),
                    canonical.display()
                ),
            ))
        }
    }
}

impl Fs for RealFs {
    fn read(&self, path: &Path) -> io::Result<String> {
        self.check(path)?;
        let bytes = std::fs::read(path)?;
        String::from_utf8(bytes)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file is not UTF-8 text"))
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.check(path)?;
        std::fs::read(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.check(path).is_ok() && path.is_dir()
    }

    fn is_file(&self, path: &Path) -> bool {
        self.check(path).is_ok() && path.is_file()
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        self.check(path)?;
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            out.push(entry?.path());
        }
        out.sort();
        Ok(out)
    }
}

/// Files held in memory, keyed by normalised path: for tests, the fuzzer and mutation
/// testing. Directories exist implicitly above every file.
#[derive(Clone, Debug, Default)]
pub struct MemFs {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

impl MemFs {
    #[must_use]
    pub fn new() -> MemFs {
        MemFs::default()
    }

    pub fn insert(&mut self, path: impl AsRef<Path>, text: impl Into<String>) {
        self.files
            .insert(normalize(path.as_ref()), text.into().into_bytes());
    }

    /// Adds a file that need not be text.
    pub fn insert_bytes(&mut self, path: impl AsRef<Path>, bytes: impl Into<Vec<u8>>) {
        self.files.insert(normalize(path.as_ref()), bytes.into());
    }
}

impl Fs for MemFs {
    fn read(&self, path: &Path) -> io::Result<String> {
        String::from_utf8(self.read_bytes(path)?)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file is not UTF-8 text"))
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.files
            .get(&normalize(path))
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }

    fn is_dir(&self, path: &Path) -> bool {
        let p = normalize(path);
        self.files.keys().any(|k| k != &p && k.starts_with(&p))
    }

    fn is_file(&self, path: &Path) -> bool {
        self.files.contains_key(&normalize(path))
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let p = normalize(path);
        let mut out: Vec<PathBuf> = self
            .files
            .keys()
            .filter_map(|k| {
                let rest = k.strip_prefix(&p).ok()?;
                let first = rest.components().next()?;
                Some(p.join(first))
            })
            .collect();
        out.dedup();
        Ok(out)
    }
}

/// Removes `.` and resolves `..` lexically (no file system access).
#[must_use]
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
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
    fn memfs_lists_and_reads() {
        let mut fs = MemFs::new();
        fs.insert("/r/a/kustomization.yaml", "resources: []");
        fs.insert("/r/a/b/x.yaml", "x: 1");
        assert!(fs.is_dir(Path::new("/r/a")));
        assert!(fs.is_file(Path::new("/r/a/./b/../kustomization.yaml")));
        assert_eq!(
            fs.list_dir(Path::new("/r/a")).unwrap(),
            vec![
                PathBuf::from("/r/a/b"),
                PathBuf::from("/r/a/kustomization.yaml")
            ]
        );
    }

    #[test]
    fn memfs_serves_bytes_and_refuses_them_as_text() {
        let mut fs = MemFs::new();
        fs.insert_bytes("/r/x.bin", vec![0xff, 0x00]);
        assert_eq!(fs.read_bytes(Path::new("/r/x.bin")).unwrap(), [0xff, 0x00]);
        assert!(fs.read(Path::new("/r/x.bin")).is_err());
    }

    #[test]
    fn normalize_resolves_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
