//! Loading the repository's configuration for a command: `fluxgate.yaml` or discovery.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use fluxgate_diagnostics::Diagnostic;
use fluxgate_kustomize::Fs;
use fluxgate_model::RepoIndex;
pub use fluxgate_model::config::{Config, EnvConfig};

/// A repository and its configuration.
pub struct Repo {
    pub root: PathBuf,
    pub config: Config,
    /// Findings about `fluxgate.yaml` itself (unknown keys, wrong types).
    pub diagnostics: Vec<Diagnostic>,
    /// The repository's files, walked and read once for the run (discovery and the rules
    /// share them), on first use.
    pub index: RepoIndex,
}

impl Repo {
    /// Opens REPO (default: the current directory). `Err` means fluxgate cannot work: the
    /// directory does not exist or `fluxgate.yaml` cannot be read.
    pub fn open(repo: Option<&Path>) -> anyhow::Result<Repo> {
        let root = repo.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let root = root
            .canonicalize()
            .with_context(|| format!("cannot open repository {}", root.display()))?;
        anyhow::ensure!(root.is_dir(), "{} is not a directory", root.display());
        // The model's error names the file it could not read.
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
    pub fn open_in(fs: Arc<dyn Fs>, root: &Path) -> anyhow::Result<Repo> {
        let index = RepoIndex::with_fs(fs, root);
        let (config, diagnostics) = fluxgate_model::discover::load_in(&index)?;
        Ok(Repo {
            root: root.to_path_buf(),
            config,
            diagnostics,
            index,
        })
    }

    /// The environment named `name`, or an error listing the ones there are.
    pub fn env(&self, name: &str) -> anyhow::Result<&EnvConfig> {
        self.config
            .environments
            .iter()
            .find(|e| e.name == name)
            .with_context(|| {
                let names: Vec<&str> = self
                    .config
                    .environments
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect();
                format!(
                    "no environment `{name}`; this repository has: {}",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )
            })
    }
}
