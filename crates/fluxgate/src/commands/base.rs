//! The base side of `diff` and `check --base`: a git revision's tree read in process
//! (fluxgate_git, no checkout and no `git` binary) or another folder (`--base-path`).
//!
//! Discovery, the repository index and the Ansible loader still read the disk directly, so
//! the revision's files are written into a temporary folder (removed when the base is
//! dropped) and rendered from there with the base's own `fluxgate.yaml`. The repository
//! itself is never written to.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use fluxgate_git::{GitRepo, TempDir};

/// A base, ready to be opened as a repository.
pub struct BaseTree {
    /// The folder holding the base's files.
    pub root: PathBuf,
    /// What the base is, for the report: `main (merge-base of HEAD and origin/HEAD, 1a2b3c…)`.
    pub label: String,
    /// The temporary folder the revision was written to, removed on drop.
    _tmp: Option<TempDir>,
}

/// The base of `head_root`: the folder `path`, or the git revision `rev` (default: the
/// merge-base of HEAD with the remote default branch) of the repository that holds it.
pub fn obtain(
    head_root: &Path,
    rev: Option<&str>,
    path: Option<&Path>,
) -> anyhow::Result<BaseTree> {
    if let Some(p) = path {
        let root = p
            .canonicalize()
            .with_context(|| format!("cannot open the base folder {}", p.display()))?;
        anyhow::ensure!(root.is_dir(), "the base {} is not a folder", root.display());
        return Ok(BaseTree {
            label: root.display().to_string(),
            root,
            _tmp: None,
        });
    }
    let repo = GitRepo::open(head_root)?;
    let base = repo.resolve(rev)?;
    let files = repo.read_tree(&base)?;
    anyhow::ensure!(
        !files.files.is_empty(),
        "the base revision {} ({}) has no files under {}",
        base.label,
        base.short(),
        if repo.prefix().as_os_str().is_empty() {
            "the repository root".to_string()
        } else {
            repo.prefix().display().to_string()
        }
    );
    let tmp = TempDir::new("base").context("cannot create a temporary folder for the base")?;
    files
        .materialise(tmp.path())
        .with_context(|| format!("cannot write the base into {}", tmp.path().display()))?;
    let label = if base.label == base.short() || base.commit.starts_with(&base.label) {
        base.short().to_string()
    } else {
        format!("{} ({})", base.label, base.short())
    };
    Ok(BaseTree {
        root: tmp.path().to_path_buf(),
        label,
        _tmp: Some(tmp),
    })
}
