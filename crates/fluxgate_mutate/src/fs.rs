//! The two filesystems a mutation run needs besides [`fluxgate_fs::Overlay`]: a [`Snapshot`]
//! of the repository held in memory (every mutant re-reads the same files, so each is read
//! from the disk once), and a [`Recorder`] that notes what one environment's renderers read
//! (a mutant of a file re-renders only the environments that read it).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use fluxgate_fs::{Fs, normalize};

type Listing = Arc<Vec<(PathBuf, bool)>>;
/// A failed read, kept to answer the same way again.
type Failure = (io::ErrorKind, String);
type Kept<T> = Mutex<HashMap<PathBuf, Result<T, Failure>>>;

/// The repository as first read: the files' bytes, folder listings and kinds, remembered for
/// the run (the repository does not change while it is mutation-tested, since nothing is
/// written to it).
pub struct Snapshot {
    inner: Box<dyn Fs>,
    bytes: Kept<Arc<Vec<u8>>>,
    listings: Kept<Listing>,
    kinds: Mutex<HashMap<PathBuf, (bool, bool)>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Snapshot {
    #[must_use]
    pub fn new(inner: Box<dyn Fs>) -> Snapshot {
        Snapshot {
            inner,
            bytes: Mutex::default(),
            listings: Mutex::default(),
            kinds: Mutex::default(),
        }
    }

    fn kind(&self, path: &Path) -> (bool, bool) {
        let key = normalize(path);
        if let Some(k) = lock(&self.kinds).get(&key) {
            return *k;
        }
        let k = (self.inner.is_file(path), self.inner.is_dir(path));
        lock(&self.kinds).insert(key, k);
        k
    }
}

impl Fs for Snapshot {
    fn read(&self, path: &Path) -> io::Result<String> {
        String::from_utf8(self.read_bytes(path)?)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file is not UTF-8 text"))
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        let key = normalize(path);
        if let Some(known) = lock(&self.bytes).get(&key) {
            return known
                .as_ref()
                .map(|b| b.as_ref().clone())
                .map_err(|(k, m)| io::Error::new(*k, m.clone()));
        }
        let read = self
            .inner
            .read_bytes(path)
            .map(Arc::new)
            .map_err(|e| (e.kind(), e.to_string()));
        let out = read
            .as_ref()
            .map(|b| b.as_ref().clone())
            .map_err(|(k, m)| io::Error::new(*k, m.clone()));
        lock(&self.bytes).insert(key, read);
        out
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.kind(path).1
    }

    fn is_file(&self, path: &Path) -> bool {
        self.kind(path).0
    }

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        let key = normalize(path);
        if let Some(known) = lock(&self.listings).get(&key) {
            return known
                .as_ref()
                .map(|l| l.as_ref().clone())
                .map_err(|(k, m)| io::Error::new(*k, m.clone()));
        }
        let listed = self
            .inner
            .list_dir_kinds(path)
            .map(Arc::new)
            .map_err(|e| (e.kind(), e.to_string()));
        let out = listed
            .as_ref()
            .map(|l| l.as_ref().clone())
            .map_err(|(k, m)| io::Error::new(*k, m.clone()));
        lock(&self.listings).insert(key, listed);
        out
    }

    fn confines(&self, path: &Path) -> bool {
        self.inner.confines(path)
    }
}

/// A filesystem that notes every file read through it: what one environment reached.
pub type Recorder = fluxgate_fs::RecordingFs<Arc<dyn Fs>>;

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_fs::MemFs;

    #[test]
    fn the_snapshot_serves_what_it_read_and_the_recorder_notes_it() {
        let mut m = MemFs::new();
        m.insert("/r/a.yaml", "a: 1\n");
        let snap: Arc<dyn Fs> = Arc::new(Snapshot::new(Box::new(m)));
        let rec = Recorder::new(snap.clone());
        assert_eq!(rec.read(Path::new("/r/a.yaml")).unwrap(), "a: 1\n");
        assert!(rec.read(Path::new("/r/missing.yaml")).is_err());
        assert!(snap.is_dir(Path::new("/r")));
        assert_eq!(
            rec.files().into_iter().collect::<Vec<_>>(),
            [PathBuf::from("/r/a.yaml"), PathBuf::from("/r/missing.yaml")]
        );
    }
}
