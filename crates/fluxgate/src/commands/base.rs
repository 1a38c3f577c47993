//! The base side of `diff` and `check --base`: a git revision's tree read in process
//! (fluxgate_git, no checkout and no `git` binary) or another folder (`--base-path`).
//!
//! A revision's files are held in memory (a `MemFs`) and served to every reader through the
//! filesystem layer, at a root that exists nowhere on disk: nothing is written, and a reader
//! that went to the disk instead would find nothing rather than the head's files. The base
//! renders with its own `fluxgate.yaml`. Symbolic links of the revision are not served.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use fluxgate_git::GitRepo;
use fluxgate_kustomize::Fs;

use fluxgate_check::Repo;

/// A base, ready to be opened as a repository.
pub struct BaseTree {
    /// The folder holding the base's files: a real folder (`--base-path`), or the root at
    /// which `fs` serves a revision.
    pub root: PathBuf,
    /// What the base is, for the report: `main (merge-base of HEAD and origin/HEAD, 1a2b3c…)`.
    pub label: String,
    /// The revision's files, in memory; `None` for a folder on disk.
    fs: Option<Arc<dyn Fs>>,
}

impl BaseTree {
    /// The base as a repository, read through its own filesystem.
    pub fn open(&self) -> anyhow::Result<Repo> {
        match &self.fs {
            Some(fs) => Ok(Repo::open_in(fs.clone(), &self.root)?),
            None => Ok(Repo::open(Some(&self.root))?),
        }
    }
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
            fs: None,
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
    // A root no disk has: the revision exists only in memory.
    let root = PathBuf::from(format!("/fluxgate-base-{}", base.short()));
    let fs: Arc<dyn Fs> = Arc::new(files.to_mem_fs(&root));
    let label = if base.label == base.short() || base.commit.starts_with(&base.label) {
        base.short().to_string()
    } else {
        format!("{} ({})", base.label, base.short())
    };
    Ok(BaseTree {
        root,
        label,
        fs: Some(fs),
    })
}
