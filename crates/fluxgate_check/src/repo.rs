//! A repository opened for a run: its root, its configuration (`fluxgate.yaml` or discovery)
//! and the index of its files that every reader shares.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fluxgate_diagnostics::Diagnostic;
use fluxgate_kustomize::Fs;
use fluxgate_model::RepoIndex;
pub use fluxgate_model::config::{Config, EnvConfig};

use crate::Error;

/// A repository and its configuration.
pub struct Repo {
    pub root: PathBuf,
    pub config: Config,
    /// Findings about `fluxgate.yaml` itself (unknown keys, wrong types).
    pub diagnostics: Vec<Diagnostic>,
    /// The repository's files, walked and read once for the run (discovery, the renderers'
    /// lookups and the model share them), on first use.
    pub index: RepoIndex,
}

impl Repo {
    /// Opens REPO (default: the current directory). `Err` means fluxgate cannot work: the
    /// directory does not exist or `fluxgate.yaml` cannot be read.
    pub fn open(repo: Option<&Path>) -> Result<Repo, Error> {
        let root = repo.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let root = root.canonicalize().map_err(|source| Error::Open {
            path: root.clone(),
            source,
        })?;
        if !root.is_dir() {
            return Err(Error::NotADirectory { path: root });
        }
        let index = RepoIndex::new(&root);
        let (config, diagnostics) = fluxgate_model::discover::load_in(&index)?;
        Ok(Repo {
            root,
            config,
            diagnostics,
            index,
        })
    }

    /// Opens the repository that `fs` serves at `root` (a git revision's tree held in memory):
    /// discovery, the config, the index and every renderer read through `fs` only.
    pub fn open_in(fs: Arc<dyn Fs>, root: &Path) -> Result<Repo, Error> {
        let index = RepoIndex::with_fs(fs, root);
        let (config, diagnostics) = fluxgate_model::discover::load_in(&index)?;
        Ok(Repo {
            root: root.to_path_buf(),
            config,
            diagnostics,
            index,
        })
    }

    /// The repository `index` indexes, with a configuration already read (a mutant of a
    /// repository whose configuration the mutant does not touch): no discovery.
    #[must_use]
    pub fn with_index(index: RepoIndex, config: Config) -> Repo {
        Repo {
            root: index.root().to_path_buf(),
            config,
            diagnostics: Vec::new(),
            index,
        }
    }

    /// The environment named `name`, or an error listing the ones there are.
    pub fn env(&self, name: &str) -> Result<&EnvConfig, Error> {
        self.config
            .environments
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self
                    .config
                    .environments
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect();
                Error::UnknownEnvironment {
                    name: name.to_string(),
                    known: if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    },
                }
            })
    }
}
