//! File access for the engine. Every read goes through [`Fs`] so that callers (mutation
//! testing, the fuzzer) can serve files from memory.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use fluxgate_diagnostics::Diagnostic;
use fluxgate_yaml::{Node, Schema, Stream, parse_stream};

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
    /// `path` read and parsed as Kubernetes YAML, its locations in `file` (the name shown to
    /// users). The default reads and parses every time; [`CachedFs`] parses a file that is
    /// read again only once.
    fn parse(&self, path: &Path, file: &str) -> io::Result<Arc<Parsed>> {
        let text = self.read(path)?;
        let stream = parse_stream(file, &text, Schema::Kube);
        Ok(Arc::new(Parsed { text, stream }))
    }
    /// [`Fs::list_dir`] with what [`Fs::is_dir`] says of each entry. The default asks
    /// `is_dir`; a file system that learns it while listing answers without asking again.
    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        let entries = self.list_dir(path)?;
        Ok(entries
            .into_iter()
            .map(|p| {
                let dir = self.is_dir(&p);
                (p, dir)
            })
            .collect())
    }
}

/// A file read and parsed ([`Fs::parse`]).
#[derive(Debug)]
pub struct Parsed {
    pub text: String,
    pub stream: Stream,
}

impl Parsed {
    /// The documents and the parse diagnostics: taken when nothing else holds them, cloned
    /// when a cache does.
    #[must_use]
    pub fn into_parts(self: Arc<Parsed>) -> (String, Vec<Node>, Vec<Diagnostic>) {
        match Arc::try_unwrap(self) {
            Ok(p) => (p.text, p.stream.docs, p.stream.diagnostics),
            Err(shared) => (
                shared.text.clone(),
                shared.stream.docs.clone(),
                shared.stream.diagnostics.clone(),
            ),
        }
    }
}

/// A file system in front of another that remembers, for the time it lives, what the files
/// are (file, folder) and the parse of every file read more than once (a component or base
/// that many kustomizations use). The files must not change meanwhile. A file read only once
/// is not kept, so memory grows with the shared files only.
// The memo's type reads best spelled out where it is documented.
#[allow(clippy::type_complexity)]
pub struct CachedFs<F> {
    inner: F,
    /// By path and shown name: `None` once read, the parse from the second read on.
    parsed: Mutex<HashMap<(PathBuf, String), Option<Arc<Parsed>>>>,
    kinds: Mutex<HashMap<PathBuf, Kind>>,
}

#[derive(Clone, Copy, Default)]
struct Kind {
    file: Option<bool>,
    dir: Option<bool>,
}

impl<F: Fs> CachedFs<F> {
    #[must_use]
    pub fn new(inner: F) -> CachedFs<F> {
        CachedFs {
            inner,
            parsed: Mutex::default(),
            kinds: Mutex::default(),
        }
    }

    #[must_use]
    pub fn inner(&self) -> &F {
        &self.inner
    }

    fn kind(
        &self,
        path: &Path,
        pick: fn(&mut Kind) -> &mut Option<bool>,
        ask: impl Fn() -> bool,
    ) -> bool {
        let known = *pick(lock(&self.kinds).entry(path.to_path_buf()).or_default());
        if let Some(answer) = known {
            return answer;
        }
        let answer = ask();
        *pick(lock(&self.kinds).entry(path.to_path_buf()).or_default()) = Some(answer);
        answer
    }
}

/// A poisoned lock only means another thread panicked; the memo holds complete entries.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<F: Fs> Fs for CachedFs<F> {
    fn read(&self, path: &Path) -> io::Result<String> {
        self.inner.read(path)
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read_bytes(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.kind(path, |k| &mut k.dir, || self.inner.is_dir(path))
    }

    fn is_file(&self, path: &Path) -> bool {
        self.kind(path, |k| &mut k.file, || self.inner.is_file(path))
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list_dir(path)
    }

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        self.inner.list_dir_kinds(path)
    }

    fn parse(&self, path: &Path, file: &str) -> io::Result<Arc<Parsed>> {
        let key = (path.to_path_buf(), file.to_string());
        let seen = match lock(&self.parsed).get(&key) {
            Some(Some(kept)) => return Ok(kept.clone()),
            Some(None) => true,
            None => false,
        };
        let parsed = self.inner.parse(path, file)?;
        lock(&self.parsed).insert(key, seen.then(|| parsed.clone()));
        Ok(parsed)
    }
}

/// The real file system, confined to a root: a path whose canonical form (symlinks resolved)
/// leaves the root reads as a `PermissionDenied` error and is neither a file nor a directory.
///
/// The canonical form of each folder is resolved once and remembered (the repository is
/// taken not to change while it is read); a path is then its folder's canonical form plus its
/// own name unless it is itself a symbolic link.
#[derive(Clone, Debug)]
pub struct RealFs {
    root: Option<PathBuf>,
    folders: Arc<Mutex<HashMap<PathBuf, PathBuf>>>,
}

impl RealFs {
    /// A file system that refuses every path resolving outside `root`.
    #[must_use]
    pub fn new(root: &Path) -> RealFs {
        RealFs {
            root: Some(std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())),
            folders: Arc::default(),
        }
    }

    /// A file system with no confinement (the engine still checks paths lexically).
    #[must_use]
    pub fn unrestricted() -> RealFs {
        RealFs {
            root: None,
            folders: Arc::default(),
        }
    }

    /// Refuses a path outside the root; on success, the path's own file type when it was
    /// read on the way and the path is not a symbolic link.
    fn check(&self, path: &Path) -> io::Result<Option<std::fs::FileType>> {
        let Some(root) = &self.root else {
            return Ok(None);
        };
        let (canonical, file_type) = self.canonicalize(path)?;
        if canonical.starts_with(root) {
            Ok(file_type)
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

impl RealFs {
    /// `std::fs::canonicalize`, with the folder part remembered, and the path's file type
    /// when it is not a symbolic link.
    fn canonicalize(&self, path: &Path) -> io::Result<(PathBuf, Option<std::fs::FileType>)> {
        let (Some(parent), Some(Component::Normal(name))) =
            (path.parent(), path.components().next_back())
        else {
            return Ok((std::fs::canonicalize(path)?, None));
        };
        if parent.as_os_str().is_empty() {
            return Ok((std::fs::canonicalize(path)?, None));
        }
        let folder = self.canonical_folder(parent)?;
        let file_type = std::fs::symlink_metadata(path)?.file_type();
        if file_type.is_symlink() {
            return Ok((std::fs::canonicalize(path)?, None));
        }
        Ok((folder.join(name), Some(file_type)))
    }

    fn canonical_folder(&self, folder: &Path) -> io::Result<PathBuf> {
        // A poisoned lock only means another thread panicked mid-insert; the map is still
        // a valid memo.
        let cached = self
            .folders
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(folder)
            .cloned();
        if let Some(c) = cached {
            return Ok(c);
        }
        // Its own folder is memoised in turn, so a new folder costs one `lstat`.
        let (canonical, _) = self.canonicalize(folder)?;
        self.folders
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(folder.to_path_buf(), canonical.clone());
        Ok(canonical)
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
        match self.check(path) {
            Ok(Some(file_type)) => file_type.is_dir(),
            Ok(None) => path.is_dir(),
            Err(_) => false,
        }
    }

    fn is_file(&self, path: &Path) -> bool {
        match self.check(path) {
            Ok(Some(file_type)) => file_type.is_file(),
            Ok(None) => path.is_file(),
            Err(_) => false,
        }
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

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        self.check(path)?;
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            let p = entry.path();
            let file_type = entry.file_type()?;
            // An entry that is not a symlink resolves into the (checked) folder listed.
            let dir = if file_type.is_symlink() {
                self.is_dir(&p)
            } else {
                file_type.is_dir()
            };
            out.push((p, dir));
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
    fn realfs_confines_symlinks_through_its_folder_memo() {
        let tmp = std::env::temp_dir().join(format!("fluxgate-realfs-{}", std::process::id()));
        let (root, outside) = (tmp.join("root"), tmp.join("outside"));
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("dir/in.yaml"), "a: 1").unwrap();
        std::fs::write(outside.join("out.yaml"), "b: 2").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("away")).unwrap();
        std::os::unix::fs::symlink(outside.join("out.yaml"), root.join("dir/link.yaml")).unwrap();
        std::os::unix::fs::symlink(root.join("dir"), root.join("alias")).unwrap();
        let fs = RealFs::new(&root);
        for _ in 0..2 {
            assert_eq!(fs.read(&root.join("dir/in.yaml")).unwrap(), "a: 1");
            assert_eq!(fs.read(&root.join("alias/in.yaml")).unwrap(), "a: 1");
            assert!(fs.is_file(&root.join("alias/../dir/in.yaml")));
            assert!(fs.is_dir(&root.join("alias")));
            assert!(!fs.is_dir(&root.join("away")));
            assert!(!fs.is_file(&root.join("away/out.yaml")));
            assert!(!fs.is_file(&root.join("dir/link.yaml")));
            assert!(!fs.is_file(&root.join("dir/missing.yaml")));
            let err = fs.read(&root.join("dir/link.yaml")).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
            let kinds = fs.list_dir_kinds(&root).unwrap();
            let asked: Vec<(PathBuf, bool)> = fs
                .list_dir(&root)
                .unwrap()
                .into_iter()
                .map(|p| {
                    let dir = fs.is_dir(&p);
                    (p, dir)
                })
                .collect();
            assert_eq!(kinds, asked);
            assert_eq!(
                kinds.iter().filter(|(_, d)| *d).count(),
                2,
                "dir and alias, not away"
            );
        }
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    /// Counts the reads that reach the file system.
    struct Counting(MemFs, std::sync::atomic::AtomicUsize);

    impl Fs for Counting {
        fn read(&self, path: &Path) -> io::Result<String> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.0.read(path)
        }
        fn is_dir(&self, path: &Path) -> bool {
            self.0.is_dir(path)
        }
        fn is_file(&self, path: &Path) -> bool {
            self.0.is_file(path)
        }
        fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
            self.0.list_dir(path)
        }
    }

    #[test]
    fn cachedfs_parses_a_file_read_again_once() {
        let mut mem = MemFs::new();
        mem.insert("/r/a.yaml", "a: 1\n---\nb: [2]\n");
        let fs = CachedFs::new(Counting(mem, std::sync::atomic::AtomicUsize::new(0)));
        let first = fs.parse(Path::new("/r/a.yaml"), "a.yaml").unwrap();
        let (text, docs, diags) = first.into_parts();
        assert_eq!(
            (text.as_str(), docs.len(), diags.len()),
            ("a: 1\n---\nb: [2]\n", 2, 0)
        );
        for _ in 0..3 {
            let again = fs.parse(Path::new("/r/a.yaml"), "a.yaml").unwrap();
            assert_eq!(again.into_parts().1, docs);
        }
        // The first read is not kept, the second is, the later ones are served from memory.
        assert_eq!(fs.inner().1.load(std::sync::atomic::Ordering::Relaxed), 2);
        // Another shown name is another parse (its locations differ).
        let other = fs.parse(Path::new("/r/a.yaml"), "x/a.yaml").unwrap();
        assert_eq!(other.stream.docs[0].loc.file.as_ref(), "x/a.yaml");
        assert!(
            fs.parse(Path::new("/r/missing.yaml"), "missing.yaml")
                .is_err()
        );
        assert!(fs.is_file(Path::new("/r/a.yaml")) && !fs.is_dir(Path::new("/r/a.yaml")));
        assert!(fs.is_dir(Path::new("/r")) && !fs.is_file(Path::new("/r")));
    }

    #[test]
    fn normalize_resolves_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
