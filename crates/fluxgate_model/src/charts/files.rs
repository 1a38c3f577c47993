//! The charts' files, read once per environment: an archive's bytes or an unpacked chart's
//! files, bounded, through the environment's filesystem (a mutant's overlay included).

use foldhash::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use fluxgate_kustomize::Fs;

/// Upper bounds on what one chart may hold in the cache (it is read into memory).
const MAX_CHART_BYTES: usize = 256 << 20;
const MAX_CHART_FILES: usize = 20_000;
const MAX_DEPTH: usize = 32;

/// The files of the charts read so far, shared by every release of an environment that
/// installs the same chart (app-template above all).
#[derive(Default)]
pub(crate) struct ChartFiles {
    read: Mutex<HashMap<String, Read>>,
    /// Fetched archives (already in memory) by address, held so that it is not reused: one
    /// source per archive, so that render threads know it again.
    fetched: Mutex<HashMap<usize, Fetched>>,
}

/// A fetched archive (held) and its source.
type Fetched = (Arc<[u8]>, Read);

/// One chart's files as read (shared by the releases that install it).
pub(crate) type Read = Arc<Result<Source, ReadError>>;

/// Why a chart's files could not be read: the member (or the bound) and the cause, as the
/// release's diagnostic quotes it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ReadError(String);

#[derive(PartialEq, Eq)]
pub(crate) enum Source {
    Archive(Vec<u8>),
    /// Shared with the chart loaded from them ([`fluxgate_helm::Frozen::from_folder`]).
    Folder(Vec<(String, Arc<[u8]>)>),
}

impl ChartFiles {
    pub(crate) fn get(&self, fs: &dyn Fs, root: &Path, rel: &str) -> Read {
        let memo = || self.read.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(done) = memo().get(rel) {
            return done.clone();
        }
        let done = Arc::new(read_source(fs, root, rel));
        memo().insert(rel.to_string(), done.clone());
        done
    }
}

impl ChartFiles {
    /// The source of a fetched chart's archive, the same for every release of one archive.
    pub(crate) fn fetched(&self, bytes: &Arc<[u8]>) -> Read {
        let mut memo = self.fetched.lock().unwrap_or_else(PoisonError::into_inner);
        let key = bytes.as_ptr() as usize;
        memo.entry(key)
            .or_insert_with(|| (bytes.clone(), Arc::new(Ok(Source::Archive(bytes.to_vec())))))
            .1
            .clone()
    }
}

/// Whether two reads hold the same files, byte for byte (a read that failed is never the same).
pub(crate) fn same_content(a: &Read, b: &Read) -> bool {
    match (a.as_ref(), b.as_ref()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn read_source(fs: &dyn Fs, root: &Path, rel: &str) -> Result<Source, ReadError> {
    let path = root.join(rel);
    if fs.is_file(&path) {
        let bytes = fs
            .read_bytes(&path)
            .map_err(|e| ReadError(e.kind().to_string()))?;
        return Ok(Source::Archive(bytes));
    }
    let mut out = Vec::new();
    let mut total = 0;
    walk(fs, &path, "", &mut out, &mut total, 0)?;
    Ok(Source::Folder(out))
}

fn walk(
    fs: &dyn Fs,
    dir: &Path,
    rel: &str,
    out: &mut Vec<(String, Arc<[u8]>)>,
    total: &mut usize,
    depth: usize,
) -> Result<(), ReadError> {
    if depth > MAX_DEPTH {
        return Err(ReadError(format!(
            "{rel}: folders nest deeper than {MAX_DEPTH}"
        )));
    }
    let shown = if rel.is_empty() {
        "the chart folder"
    } else {
        rel
    };
    let mut entries = fs
        .list_dir_kinds(dir)
        .map_err(|e| ReadError(format!("{shown}: {}", e.kind())))?;
    entries.sort();
    for (path, is_dir) in entries {
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let member = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if is_dir {
            walk(fs, &path, &member, out, total, depth + 1)?;
            continue;
        }
        let data = fs
            .read_shared(&path)
            .map_err(|e| ReadError(format!("{member}: {}", e.kind())))?;
        *total += data.len();
        if *total > MAX_CHART_BYTES || out.len() >= MAX_CHART_FILES {
            return Err(ReadError(format!(
                "the chart holds more than {} MiB or {MAX_CHART_FILES} files",
                MAX_CHART_BYTES >> 20
            )));
        }
        out.push((member, data));
    }
    Ok(())
}
