//! A git revision's tree, read in process from the object database with gix: the base side
//! of `fluxgate diff` and `fluxgate check --base` (SPEC §4). Nothing is checked out and nothing
//! is written to the repository; no `git` binary is needed.
//!
//! [`GitRepo::open`] finds the repository that holds a folder (the folder may be a
//! subdirectory of the work tree: then only that part of each tree is read),
//! [`GitRepo::resolve`] turns a revision (or none: the merge-base of `HEAD` with the remote
//! default branch) into a commit, and [`GitRepo::read_tree`] reads that commit's files. A
//! [`Snapshot`] is served as a [`fluxgate_fs::MemFs`] at a root no disk has: every reader
//! goes through `Fs`, so nothing is written anywhere.
//!
//! ```no_run
//! use std::path::Path;
//! let repo = fluxgate_git::GitRepo::open(Path::new("."))?;
//! let base = repo.resolve(Some("HEAD~1"))?;
//! let files = repo.read_tree(&base)?;
//! println!("{} files at {}", files.files.len(), base.short());
//! # Ok::<(), fluxgate_git::Error>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice as _;

/// Why a base could not be read. Each message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{} is not inside a git repository, so there is no base revision to compare with; \
         compare with another folder instead (--base-path DIR)",
        path.display()
    )]
    NotGit { path: PathBuf },
    #[error("the base revision `{rev}` does not exist in {}: {reason}", repo.display())]
    NoSuchRevision {
        rev: String,
        repo: PathBuf,
        reason: String,
    },
    #[error(
        "the base revision `{rev}` is not in this shallow clone ({reason}); fetch more history \
         (`git fetch --unshallow`, or `fetch-depth: 0` in actions/checkout)"
    )]
    Shallow { rev: String, reason: String },
    #[error(
        "no default base: none of origin/HEAD, main, master exists{}; name one with --base REV",
        if *shallow { " (this is a shallow clone)" } else { "" }
    )]
    NoDefaultBase { shallow: bool },
    #[error("`HEAD` and `{branch}` have no common ancestor; name the base with --base REV")]
    NoMergeBase { branch: String },
    #[error("cannot read the tree of {rev}: {reason}")]
    Read { rev: String, reason: String },
    #[error("the git repository at {} has no work tree (a bare repository)", path.display())]
    Bare { path: PathBuf },
}

/// The repository that holds a folder of fluxgate's.
pub struct GitRepo {
    repo: gix::Repository,
    /// The folder asked for, relative to the work tree's root ("" for the root itself).
    prefix: PathBuf,
}

/// A resolved base: the commit, and how it was chosen (for the report).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Base {
    /// The commit id, in hex.
    pub commit: String,
    /// What the user named (`main`, `HEAD~1`) or how the default was found
    /// (`merge-base of HEAD and origin/HEAD`).
    pub label: String,
}

impl Base {
    /// The first 12 hex digits of the commit.
    #[must_use]
    pub fn short(&self) -> &str {
        &self.commit[..self.commit.len().min(12)]
    }
}

/// One entry of a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    File(Vec<u8>),
    /// A symbolic link and its target as stored.
    Link(PathBuf),
}

/// The files of one commit below the folder asked for, by path relative to that folder.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub files: BTreeMap<PathBuf, Entry>,
}

/// The refs tried, in order, for the default base.
const DEFAULT_BRANCHES: [&str; 5] = [
    "refs/remotes/origin/HEAD",
    "refs/remotes/origin/main",
    "refs/remotes/origin/master",
    "refs/heads/main",
    "refs/heads/master",
];

impl GitRepo {
    /// The repository whose work tree holds `path`.
    pub fn open(path: &Path) -> Result<GitRepo, Error> {
        let not_git = || Error::NotGit {
            path: path.to_path_buf(),
        };
        let canonical = path.canonicalize().map_err(|_| not_git())?;
        let repo = gix::discover(&canonical).map_err(|_| not_git())?;
        let workdir = repo
            .workdir()
            .ok_or_else(|| Error::Bare {
                path: canonical.clone(),
            })?
            .canonicalize()
            .map_err(|_| not_git())?;
        let prefix = canonical
            .strip_prefix(&workdir)
            .map_err(|_| not_git())?
            .to_path_buf();
        Ok(GitRepo { repo, prefix })
    }

    /// A repository already opened (a bare one `fetch` filled), read from its root.
    #[must_use]
    pub fn from_gix(repo: gix::Repository) -> GitRepo {
        GitRepo {
            repo,
            prefix: PathBuf::new(),
        }
    }

    /// The folder read, relative to the work tree's root.
    #[must_use]
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    fn shallow(&self) -> bool {
        self.repo.is_shallow().unwrap_or(false)
    }

    /// The commit `rev` names, or without one the merge-base of `HEAD` with the first of
    /// origin/HEAD, origin/main, origin/master, main, master that exists.
    pub fn resolve(&self, rev: Option<&str>) -> Result<Base, Error> {
        if let Some(rev) = rev {
            let commit = self.commit_of(rev)?;
            return Ok(Base {
                commit,
                label: rev.to_string(),
            });
        }
        let branch = DEFAULT_BRANCHES
            .iter()
            .find(|r| self.repo.find_reference(**r).is_ok())
            .ok_or(Error::NoDefaultBase {
                shallow: self.shallow(),
            })?;
        let short = branch
            .trim_start_matches("refs/heads/")
            .trim_start_matches("refs/remotes/");
        let head = self.commit_of("HEAD")?;
        let other = self.commit_of(branch)?;
        let parse = |hex: &str| {
            gix::ObjectId::from_hex(hex.as_bytes()).map_err(|e| Error::Read {
                rev: hex.to_string(),
                reason: e.to_string(),
            })
        };
        let base = self
            .repo
            .merge_base(parse(&head)?, parse(&other)?)
            .map_err(|e| {
                if self.shallow() {
                    Error::Shallow {
                        rev: format!("merge-base of HEAD and {short}"),
                        reason: e.to_string(),
                    }
                } else {
                    Error::Read {
                        rev: format!("merge-base of HEAD and {short}"),
                        reason: e.to_string(),
                    }
                }
            })?;
        match base {
            Some(id) => Ok(Base {
                commit: id.to_string(),
                label: format!("merge-base of HEAD and {short}"),
            }),
            None if self.shallow() => Err(Error::Shallow {
                rev: format!("merge-base of HEAD and {short}"),
                reason: "the history that joins them was not fetched".to_string(),
            }),
            None => Err(Error::NoMergeBase {
                branch: short.to_string(),
            }),
        }
    }

    /// The commit `rev` resolves to (a tag or a ref is peeled to its commit).
    fn commit_of(&self, rev: &str) -> Result<String, Error> {
        let missing = |reason: String| {
            if self.shallow() {
                Error::Shallow {
                    rev: rev.to_string(),
                    reason,
                }
            } else {
                Error::NoSuchRevision {
                    rev: rev.to_string(),
                    repo: self.repo.workdir().unwrap_or(Path::new(".")).to_path_buf(),
                    reason,
                }
            }
        };
        let id = self
            .repo
            .rev_parse_single(rev)
            .map_err(|e| missing(e.to_string()))?;
        let object = id.object().map_err(|e| missing(e.to_string()))?;
        let commit = object
            .peel_to_commit()
            .map_err(|e| missing(format!("it does not name a commit: {e}")))?;
        Ok(commit.id.to_string())
    }

    /// Every file of `base`'s tree below the folder asked for.
    pub fn read_tree(&self, base: &Base) -> Result<Snapshot, Error> {
        let read_err = |reason: String| Error::Read {
            rev: base.label.clone(),
            reason,
        };
        let id =
            gix::ObjectId::from_hex(base.commit.as_bytes()).map_err(|e| read_err(e.to_string()))?;
        let commit = self
            .repo
            .find_commit(id)
            .map_err(|e| read_err(e.to_string()))?;
        let tree = commit.tree().map_err(|e| read_err(e.to_string()))?;
        let mut recorder = gix::traverse::tree::Recorder::default();
        tree.traverse()
            .breadthfirst(&mut recorder)
            .map_err(|e| read_err(e.to_string()))?;
        let mut files = BTreeMap::new();
        for entry in recorder.records {
            let full = PathBuf::from(entry.filepath.to_str_lossy().as_ref());
            let Ok(rel) = full.strip_prefix(&self.prefix) else {
                continue;
            };
            if rel.as_os_str().is_empty() {
                continue;
            }
            let mode = entry.mode;
            // Folders are implied by their files; submodules (commits) are another repository.
            if mode.is_tree() || mode.is_commit() {
                continue;
            }
            let object = self
                .repo
                .find_object(entry.oid)
                .map_err(|e| read_err(format!("{}: {e}", full.display())))?;
            let data = object.detach().data;
            let e = if mode.is_link() {
                Entry::Link(PathBuf::from(data.to_str_lossy().as_ref()))
            } else {
                Entry::File(data)
            };
            files.insert(rel.to_path_buf(), e);
        }
        Ok(Snapshot { files })
    }
}

impl Snapshot {
    /// The files as a [`fluxgate_fs::MemFs`] rooted at `root` (symbolic links are left out: a
    /// link's target is another path of the tree or outside it, which the renderers confine).
    #[must_use]
    pub fn to_mem_fs(&self, root: &Path) -> fluxgate_fs::MemFs {
        let mut fs = fluxgate_fs::MemFs::new();
        for (path, entry) in &self.files {
            if let Entry::File(bytes) = entry {
                fs.insert_bytes(root.join(path), bytes.clone());
            }
        }
        fs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_is_served_from_memory() {
        let mut snap = Snapshot::default();
        snap.files
            .insert(PathBuf::from("a/b.yaml"), Entry::File(b"x: 1\n".to_vec()));
        let fs = snap.to_mem_fs(Path::new("/r"));
        assert!(fluxgate_fs::Fs::is_dir(&fs, Path::new("/r/a")));
        assert_eq!(
            fluxgate_fs::Fs::read(&fs, Path::new("/r/a/b.yaml")).expect("served"),
            "x: 1\n"
        );
    }

    #[test]
    fn a_folder_outside_git_says_to_use_base_path() {
        let dir = std::env::temp_dir().join(format!("fluxgate-nogit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let opened = GitRepo::open(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        match opened {
            Err(e @ Error::NotGit { .. }) => assert!(e.to_string().contains("--base-path")),
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("a temp folder is not a git repository"),
        }
    }
}
