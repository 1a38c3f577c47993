//! The one filesystem of fluxgate: every reader (kustomize, Flux, Helm charts, Ansible) goes
//! through [`Fs`], so that symlink confinement ([`RealFs`]) is in one place and a caller can
//! serve files from memory ([`MemFs`]) or replace some of a repository's files in memory
//! ([`Overlay`], for mutation testing). [`CachedFs`] remembers what is asked twice, and a
//! [`Memo`] holds what a reader derives from a file (a parse) while the filesystem lives.
//!
//! Errors are [`std::io::Error`], not a crate enum: this layer only passes on what the
//! operating system said, and readers branch on [`io::ErrorKind`] (`NotFound` is "no such
//! file" to kustomize and the chart cache, `PermissionDenied` is "say so"). A confinement
//! refusal is `PermissionDenied` with both paths in its message, the same kind the OS gives
//! for an unreadable file, so every reader handles it without a new case. A wrapping enum
//! would repeat `ErrorKind` variant by variant and give callers nothing more to match on.
//!
//! ```
//! use std::path::Path;
//! use fluxgate_fs::{Fs, MemFs, Overlay};
//! let mut repo = MemFs::new();
//! repo.insert("/r/values.yaml", "replicas: 3\n");
//! let mut mutant = Overlay::new(repo);
//! mutant.replace("/r/values.yaml", "replicas: 1\n");
//! assert_eq!(mutant.read(Path::new("/r/values.yaml")).unwrap(), "replicas: 1\n");
//! ```

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};

// Paths and names of the repository: foldhash, not SipHash (lookups are most of a canonicalize).
use foldhash::HashMap;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What the engine needs from a file system.
pub trait Fs: Send + Sync {
    fn read(&self, path: &Path) -> io::Result<String>;
    /// The file's bytes, for generator files that may be binary. The default reads text, so
    /// a file system that only serves text still works (a binary file is then an error).
    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.read(path).map(String::into_bytes)
    }
    /// [`Fs::read_bytes`] shared: a file system that holds the file read already (an index
    /// of the repository) hands out its bytes without a copy; the default copies them once.
    fn read_shared(&self, path: &Path) -> io::Result<Arc<[u8]>> {
        self.read_bytes(path).map(Arc::from)
    }
    fn is_dir(&self, path: &Path) -> bool;
    fn is_file(&self, path: &Path) -> bool;
    /// The entries of folder `path`, each with whether it is a folder (what [`Fs::is_dir`]
    /// says of it): the one listing every file system implements.
    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>>;
    /// The entries of folder `path`: [`Fs::list_dir_kinds`] without the kinds.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(self
            .list_dir_kinds(path)?
            .into_iter()
            .map(|(p, _)| p)
            .collect())
    }
    /// Whether `path` stays inside what this filesystem serves (a symlink that leaves the
    /// root does not); a missing path is inside when its folders are. Everything is inside
    /// by default.
    fn confines(&self, path: &Path) -> bool {
        let _ = path;
        true
    }
    /// Where this filesystem keeps what readers derive from its files (see [`Memo`]); none
    /// by default, so a derived value is made again on every read.
    fn memo(&self) -> Option<&Memo> {
        None
    }
    /// Whether `path` is a symbolic link: a walk of the whole repository does not follow
    /// them (a link may point back up the tree). None is by default.
    fn is_symlink(&self, path: &Path) -> bool {
        let _ = path;
        false
    }
}

/// What readers derive from files (a parse), by path and a key of the reader's (the name
/// a file is shown as): kept from the second time it is asked for, so a file used once costs
/// no memory and a file many readers share (a base, a component) is derived once. The files
/// must not change while the memo lives.
// The memo's type reads best spelled out where it is documented.
#[allow(clippy::type_complexity)]
#[derive(Default)]
pub struct Memo {
    entries: Mutex<HashMap<(PathBuf, String), Option<Arc<dyn Any + Send + Sync>>>>,
}

impl Memo {
    /// The value derived from `path` under `key`: the kept one, else `make`'s (kept when it
    /// is asked for the second time). A value of another type under the same key is made
    /// again.
    pub fn get_or<T: Any + Send + Sync>(
        &self,
        path: &Path,
        key: &str,
        make: impl FnOnce() -> io::Result<Arc<T>>,
    ) -> io::Result<Arc<T>> {
        let k = (path.to_path_buf(), key.to_string());
        let seen = match lock(&self.entries).get(&k) {
            Some(Some(kept)) => {
                if let Ok(t) = kept.clone().downcast::<T>() {
                    return Ok(t);
                }
                true
            }
            Some(None) => true,
            None => false,
        };
        let made = make()?;
        let keep: Option<Arc<dyn Any + Send + Sync>> = if seen { Some(made.clone()) } else { None };
        lock(&self.entries).insert(k, keep);
        Ok(made)
    }
}

/// A file system in front of another that remembers, for the time it lives, what the files
/// are (file, folder), and has a [`Memo`] for what readers derive from files read more than
/// once (the parse of a component or base that many kustomizations use). The files must not
/// change meanwhile.
pub struct CachedFs<F> {
    inner: F,
    memo: Memo,
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
            memo: Memo::default(),
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

    fn read_shared(&self, path: &Path) -> io::Result<Arc<[u8]>> {
        self.inner.read_shared(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.kind(path, |k| &mut k.dir, || self.inner.is_dir(path))
    }

    fn is_file(&self, path: &Path) -> bool {
        self.kind(path, |k| &mut k.file, || self.inner.is_file(path))
    }

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        self.inner.list_dir_kinds(path)
    }

    fn memo(&self) -> Option<&Memo> {
        Some(&self.memo)
    }

    fn confines(&self, path: &Path) -> bool {
        self.inner.confines(path)
    }

    fn is_symlink(&self, path: &Path) -> bool {
        self.inner.is_symlink(path)
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
        if normal_starts_with(&canonical, root) || canonical.starts_with(root) {
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
    fn confines(&self, path: &Path) -> bool {
        !matches!(self.check(path), Err(e) if e.kind() == io::ErrorKind::PermissionDenied)
    }

    fn is_symlink(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }

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
        // One folder's entries: their names decide.
        out.sort_unstable_by(|a, b| normal_order(&a.0, &b.0));
        Ok(out)
    }
}

/// A file system in front of another that notes every file read through it, and how many
/// times: what one environment reached (mutation testing), or what a layer above serves
/// without reading again (tests).
pub struct RecordingFs<F> {
    inner: F,
    read: Mutex<BTreeMap<PathBuf, usize>>,
}

impl<F: Fs> RecordingFs<F> {
    #[must_use]
    pub fn new(inner: F) -> RecordingFs<F> {
        RecordingFs {
            inner,
            read: Mutex::default(),
        }
    }

    /// The files read so far (normalised absolute paths).
    #[must_use]
    pub fn files(&self) -> BTreeSet<PathBuf> {
        lock(&self.read).keys().cloned().collect()
    }

    /// The reads (text or bytes) that reached the inner file system so far.
    #[must_use]
    pub fn reads(&self) -> usize {
        lock(&self.read).values().sum()
    }

    fn note(&self, path: &Path) {
        *lock(&self.read).entry(normalize(path)).or_default() += 1;
    }
}

impl<F: Fs> Fs for RecordingFs<F> {
    fn read(&self, path: &Path) -> io::Result<String> {
        self.note(path);
        self.inner.read(path)
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.note(path);
        self.inner.read_bytes(path)
    }

    fn read_shared(&self, path: &Path) -> io::Result<Arc<[u8]>> {
        self.note(path);
        self.inner.read_shared(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }

    fn is_file(&self, path: &Path) -> bool {
        self.inner.is_file(path)
    }

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        self.inner.list_dir_kinds(path)
    }

    fn confines(&self, path: &Path) -> bool {
        self.inner.confines(path)
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

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
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
        Ok(out
            .into_iter()
            .map(|e| {
                let dir = self.is_dir(&e);
                (e, dir)
            })
            .collect())
    }
}

/// A shared filesystem is one too (a project that keeps the repository's filesystem).
impl<T: Fs + ?Sized> Fs for Arc<T> {
    fn read(&self, path: &Path) -> io::Result<String> {
        (**self).read(path)
    }
    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        (**self).read_bytes(path)
    }
    fn read_shared(&self, path: &Path) -> io::Result<Arc<[u8]>> {
        (**self).read_shared(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        (**self).is_dir(path)
    }
    fn is_file(&self, path: &Path) -> bool {
        (**self).is_file(path)
    }
    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        (**self).list_dir_kinds(path)
    }
    fn confines(&self, path: &Path) -> bool {
        (**self).confines(path)
    }
    fn memo(&self) -> Option<&Memo> {
        (**self).memo()
    }
    fn is_symlink(&self, path: &Path) -> bool {
        (**self).is_symlink(path)
    }
}

/// A filesystem in front of another with some files replaced, added or removed in memory:
/// the repository as a mutant sees it (mutation testing), the inner one untouched. Folders
/// exist above every added file; a folder whose files are all removed still lists (empty).
#[derive(Clone, Debug)]
pub struct Overlay<F> {
    inner: F,
    /// Normalised path -> the file's bytes, or `None` for a removed file.
    files: BTreeMap<PathBuf, Option<Vec<u8>>>,
}

impl<F: Fs> Overlay<F> {
    #[must_use]
    pub fn new(inner: F) -> Overlay<F> {
        Overlay {
            inner,
            files: BTreeMap::new(),
        }
    }

    /// Serves `bytes` as the file at `path` (replacing or adding it).
    pub fn replace(&mut self, path: impl AsRef<Path>, bytes: impl Into<Vec<u8>>) {
        self.files
            .insert(normalize(path.as_ref()), Some(bytes.into()));
    }

    /// Makes the file at `path` absent.
    pub fn remove(&mut self, path: impl AsRef<Path>) {
        self.files.insert(normalize(path.as_ref()), None);
    }

    /// The paths the overlay changes, sorted.
    #[must_use]
    pub fn changed(&self) -> Vec<PathBuf> {
        self.files.keys().cloned().collect()
    }

    #[must_use]
    pub fn inner(&self) -> &F {
        &self.inner
    }

    fn added_below(&self, dir: &Path) -> impl Iterator<Item = PathBuf> + '_ {
        let dir = dir.to_path_buf();
        self.files
            .iter()
            .filter(|(_, bytes)| bytes.is_some())
            .filter_map(move |(k, _)| {
                let rest = k.strip_prefix(&dir).ok()?;
                let first = rest.components().next()?;
                Some(dir.join(first))
            })
    }
}

impl<F: Fs> Fs for Overlay<F> {
    fn confines(&self, path: &Path) -> bool {
        self.files.contains_key(&normalize(path)) || self.inner.confines(path)
    }

    fn read(&self, path: &Path) -> io::Result<String> {
        String::from_utf8(self.read_bytes(path)?)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file is not UTF-8 text"))
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.files.get(&normalize(path)) {
            Some(Some(bytes)) => Ok(bytes.clone()),
            Some(None) => Err(io::Error::new(io::ErrorKind::NotFound, "no such file")),
            None => self.inner.read_bytes(path),
        }
    }

    fn read_shared(&self, path: &Path) -> io::Result<Arc<[u8]>> {
        match self.files.get(&normalize(path)) {
            None => self.inner.read_shared(path),
            Some(_) => self.read_bytes(path).map(Arc::from),
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        let p = normalize(path);
        if matches!(self.files.get(&p), Some(Some(_))) {
            return false;
        }
        self.inner.is_dir(path) || self.added_below(&p).next().is_some()
    }

    fn is_file(&self, path: &Path) -> bool {
        match self.files.get(&normalize(path)) {
            Some(bytes) => bytes.is_some(),
            None => self.inner.is_file(path),
        }
    }

    fn is_symlink(&self, path: &Path) -> bool {
        !self.files.contains_key(&normalize(path)) && self.inner.is_symlink(path)
    }

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        let p = normalize(path);
        let inner = match self.inner.list_dir_kinds(path) {
            Ok(entries) => entries,
            Err(e) if self.added_below(&p).next().is_none() => return Err(e),
            Err(_) => Vec::new(),
        };
        let mut out: BTreeMap<PathBuf, bool> = BTreeMap::new();
        for (entry, dir) in inner {
            let removed = matches!(self.files.get(&normalize(&entry)), Some(None));
            if !removed {
                out.insert(entry, dir);
            }
        }
        let added: BTreeSet<PathBuf> = self.added_below(&p).collect();
        for entry in added {
            let dir = !matches!(self.files.get(&entry), Some(Some(_)));
            out.entry(entry).or_insert(dir);
        }
        Ok(out.into_iter().collect())
    }
}

/// Shell-style wildcards over a whole name: `*` any run of characters, `?` exactly one.
/// What Ansible host patterns and Kyverno name, namespace and value patterns both mean.
///
/// ```
/// assert!(fluxgate_fs::wildcard("k3s*", "k3s_prod"));
/// assert!(!fluxgate_fs::wildcard("k3s?", "k3s_prod"));
/// ```
#[must_use]
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The text of a repository's files by their path relative to its root, each read once
/// through the filesystem and shared: what a printer's snippets read, so a snippet shows the
/// file as the renderers saw it (an overlay's mutant included).
pub struct SourceCache {
    fs: Arc<dyn Fs>,
    root: PathBuf,
    texts: Mutex<HashMap<String, Option<Arc<str>>>>,
}

impl SourceCache {
    #[must_use]
    pub fn new(fs: Arc<dyn Fs>, root: &Path) -> SourceCache {
        SourceCache {
            fs,
            root: root.to_path_buf(),
            texts: Mutex::default(),
        }
    }

    /// The text of the file at `rel` (relative to the root), or `None` when it cannot be
    /// read as text or lies outside the root.
    pub fn get(&self, rel: &str) -> Option<Arc<str>> {
        if let Some(known) = lock(&self.texts).get(rel) {
            return known.clone();
        }
        let path = normalize(&self.root.join(rel));
        let text: Option<Arc<str>> = if path.starts_with(normalize(&self.root)) {
            self.fs.read(&path).ok().map(Arc::from)
        } else {
            None
        };
        lock(&self.texts).insert(rel.to_string(), text.clone());
        text
    }
}

/// Removes `.` and resolves `..` lexically (no file system access).
#[must_use]
pub fn normalize(path: &Path) -> PathBuf {
    if is_normal(path) {
        return path.to_path_buf();
    }
    normalize_parts(path)
}

/// [`normalize`] part by part.
fn normalize_parts(path: &Path) -> PathBuf {
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

/// Whether `path` is already what [`normalize`] makes of it: no `.` or `..` part, no empty
/// part (`//`, a trailing `/`) but the root's. Most paths are, and are then copied as they are.
fn is_normal(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    let rest = bytes.strip_prefix(b"/").unwrap_or(bytes);
    rest.is_empty()
        || rest
            .split(|&b| b == b'/')
            .all(|part| !matches!(part, b"" | b"." | b".."))
}

/// Whether `path` lies at or below `dir`, for paths [`normalize`] leaves as they are (both
/// absolute or both relative): [`Path::starts_with`] by comparing bytes, which is what it
/// decides for such paths without parsing their components.
#[must_use]
pub fn normal_starts_with(path: &Path, dir: &Path) -> bool {
    let (p, d) = (
        path.as_os_str().as_encoded_bytes(),
        dir.as_os_str().as_encoded_bytes(),
    );
    d.is_empty()
        || p.starts_with(d) && (p.len() == d.len() || d.ends_with(b"/") || p[d.len()] == b'/')
}

/// The order of [`Path`]'s `Ord` (part by part) for paths [`normalize`] leaves as they are:
/// their bytes compared with `/` below every other byte, without parsing their components.
#[must_use]
pub fn normal_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    let key = |&c: &u8| if c == b'/' { 0 } else { u16::from(c) + 1 };
    let (a, b) = (
        a.as_os_str().as_encoded_bytes(),
        b.as_os_str().as_encoded_bytes(),
    );
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    a[same..].iter().map(key).cmp(b[same..].iter().map(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path of up to four parts from a few names that sort around `/` (`-` and `.` are
    /// below it, `0` and `a` above), absolute and relative, with the odd parts `normalize`
    /// removes.
    fn sample_paths() -> Vec<PathBuf> {
        let names = ["a", "a-b", "a.b", "a0", "ab", "b", ".", "..", ""];
        let mut paths = vec![PathBuf::from("/"), PathBuf::new()];
        let mut level: Vec<String> = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for prefix in &level {
                for n in names {
                    let joined = if prefix.is_empty() {
                        n.to_string()
                    } else {
                        format!("{prefix}/{n}")
                    };
                    paths.push(PathBuf::from(format!("/{joined}")));
                    paths.push(PathBuf::from(&joined));
                    next.push(joined);
                }
            }
            level = next;
        }
        paths
    }

    #[test]
    fn the_byte_shortcuts_agree_with_components() {
        let paths = sample_paths();
        let mut normal = 0;
        for p in &paths {
            let slow = normalize_parts(p);
            assert_eq!(normalize(p), slow, "{}", p.display());
            if is_normal(p) {
                assert_eq!(p.as_os_str(), slow.as_os_str(), "{}", p.display());
                normal += 1;
            }
        }
        assert!(normal > 1000, "{normal} normal paths");
        // Every seventh, and the root and the empty path.
        let normal: Vec<&PathBuf> = paths
            .iter()
            .filter(|p| is_normal(p))
            .enumerate()
            .filter(|&(i, p)| i % 7 == 0 || p.as_os_str().len() <= 1)
            .map(|(_, p)| p)
            .collect();
        for a in &normal {
            for b in &normal {
                assert_eq!(
                    normal_order(a, b),
                    a.cmp(b),
                    "{} {}",
                    a.display(),
                    b.display()
                );
                if a.is_absolute() == b.is_absolute() {
                    assert_eq!(
                        normal_starts_with(a, b),
                        a.starts_with(b),
                        "{} {}",
                        a.display(),
                        b.display()
                    );
                }
            }
        }
    }

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

    #[test]
    fn memo_keeps_from_the_second_ask() {
        let memo = Memo::default();
        let made = std::sync::atomic::AtomicUsize::new(0);
        let make = || {
            made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Arc::new(7_u32))
        };
        for _ in 0..4 {
            assert_eq!(*memo.get_or(Path::new("/a"), "a", make).unwrap(), 7);
        }
        // The first ask is not kept, the second is, the later ones are served from memory.
        assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 2);
        // Another key is another value; a failure is not kept.
        let other: io::Result<Arc<u32>> =
            memo.get_or(Path::new("/a"), "b", || Err(io::Error::other("no")));
        assert!(other.is_err());
    }

    #[test]
    fn overlay_replaces_adds_and_removes_files() {
        let mut mem = MemFs::new();
        mem.insert("/r/a.yaml", "a: 1\n");
        mem.insert("/r/dir/b.yaml", "b: 1\n");
        let mut o = Overlay::new(mem);
        o.replace("/r/a.yaml", "a: 2\n");
        o.replace("/r/new/c.yaml", "c: 1\n");
        o.remove("/r/dir/b.yaml");
        assert_eq!(o.read(Path::new("/r/a.yaml")).unwrap(), "a: 2\n");
        assert_eq!(o.read(Path::new("/r/new/c.yaml")).unwrap(), "c: 1\n");
        assert!(o.read(Path::new("/r/dir/b.yaml")).is_err());
        assert!(!o.is_file(Path::new("/r/dir/b.yaml")));
        assert!(o.is_dir(Path::new("/r/new")) && !o.is_file(Path::new("/r/new")));
        assert_eq!(
            o.list_dir(Path::new("/r")).unwrap(),
            [
                PathBuf::from("/r/a.yaml"),
                PathBuf::from("/r/dir"),
                PathBuf::from("/r/new")
            ]
        );
        assert_eq!(
            o.list_dir_kinds(Path::new("/r/dir")).unwrap(),
            Vec::<(PathBuf, bool)>::new()
        );
        assert_eq!(
            o.changed(),
            [
                PathBuf::from("/r/a.yaml"),
                PathBuf::from("/r/dir/b.yaml"),
                PathBuf::from("/r/new/c.yaml")
            ]
        );
        // The inner filesystem is untouched.
        assert_eq!(o.inner().read(Path::new("/r/a.yaml")).unwrap(), "a: 1\n");
    }

    #[test]
    fn sources_are_read_once_and_shared() {
        let mut mem = MemFs::new();
        mem.insert("/r/a.yaml", "a: 1\n");
        let sources = SourceCache::new(Arc::new(mem), Path::new("/r"));
        let first = sources.get("a.yaml").unwrap();
        let again = sources.get("a.yaml").unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert!(sources.get("missing.yaml").is_none());
        assert!(sources.get("../outside.yaml").is_none());
    }

    #[test]
    fn normalize_resolves_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
