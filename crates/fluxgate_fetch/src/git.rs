//! Charts from a GitRepository on this machine (`file://`): the chart's folder at the commit a
//! ref names, read from the object database with gix (no checkout, no `git` binary) and packed
//! into a chart archive the same way every time, so its digest is stable and lockable.

use std::io::Write as _;
use std::path::Path;

use fluxgate_git::{Entry, GitRepo};

use crate::error::{Error, display_url};

/// The commit `rev` names in the repository at `url`.
pub fn resolve(url: &str, rev: &str) -> Result<String, Error> {
    let repo = open(url)?;
    repo.resolve(Some(rev))
        .map(|b| b.commit)
        .map_err(|e| fail(url, e.to_string()))
}

/// The chart folder `chart_path` at `commit`, packed as `<name>/…` (name: the folder's last
/// segment), members sorted, modes and times fixed.
pub fn pack_chart(url: &str, chart_path: &str, commit: &str) -> Result<Vec<u8>, Error> {
    let repo = open(url)?;
    let base = repo
        .resolve(Some(commit))
        .map_err(|e| fail(url, e.to_string()))?;
    let snapshot = repo
        .read_tree(&base)
        .map_err(|e| fail(url, e.to_string()))?;
    let folder = Path::new(chart_path);
    let name = chart_path.rsplit('/').next().unwrap_or(chart_path);
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut members = 0usize;
    for (path, entry) in &snapshot.files {
        let Ok(rel) = path.strip_prefix(folder) else {
            continue;
        };
        let bytes = match entry {
            Entry::File(bytes) => bytes,
            Entry::Link(_) => {
                return Err(fail(
                    url,
                    format!(
                        "{} in chart `{chart_path}` is a symlink (refused: it could point outside the chart)",
                        path.display()
                    ),
                ));
            }
        };
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, Path::new(name).join(rel), bytes.as_slice())
            .map_err(|e| fail(url, format!("packing {}: {e}", path.display())))?;
        members += 1;
    }
    if members == 0 {
        return Err(fail(
            url,
            format!("no chart at `{chart_path}` in commit {}", &base.commit),
        ));
    }
    let gz = tar
        .into_inner()
        .map_err(|e| fail(url, format!("packing: {e}")))?;
    let mut gz = gz;
    gz.flush().map_err(|e| fail(url, format!("packing: {e}")))?;
    gz.finish().map_err(|e| fail(url, format!("packing: {e}")))
}

fn open(url: &str) -> Result<GitRepo, Error> {
    let path = url
        .strip_prefix("file://")
        .ok_or_else(|| fail(url, "not a file:// URL".into()))?;
    GitRepo::open(Path::new(path)).map_err(|e| fail(url, e.to_string()))
}

fn fail(url: &str, message: String) -> Error {
    Error::Git {
        source_url: display_url(url),
        message,
    }
}

/// Whether `rev` is a full commit id (then the lock must pin exactly it).
#[must_use]
pub fn is_commit(rev: &str) -> bool {
    rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit())
}
