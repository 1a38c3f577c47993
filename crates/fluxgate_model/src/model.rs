//! [`Model`]: everything the rules read of one run, derived once before they run. The
//! rendered environments, the configuration, the repository's YAML documents (walked, read
//! and parsed by the index) and the schema catalog of the repository's CRDs and `schemas:`
//! folders. Nothing reachable from here reads a file: a rule that needs something new gets
//! it added here, computed at load.

use fluxgate_schema::{Catalog, FolderProblem};

use crate::config::Config;
use crate::environment::Environment;
use crate::index::{IndexedFile, RepoIndex};

/// What rules read: the run's configuration, environments, documents and schemas.
pub struct Model<'a> {
    pub config: &'a Config,
    /// The environments selected for this run.
    pub envs: &'a [Environment],
    pub documents: Documents<'a>,
    pub schemas: Schemas,
    /// The ids of the `requirements:` registry, when fluxgate.yaml names one that reads
    /// (a file that does not is reported where the path is checked).
    pub requirement_ids: Option<std::collections::BTreeSet<String>>,
}

impl<'a> Model<'a> {
    /// Derives the run's model from the repository `index` (walked and read here, if it was
    /// not yet) and the rendered `envs`.
    #[must_use]
    pub fn new(index: &'a RepoIndex, config: &'a Config, envs: &'a [Environment]) -> Model<'a> {
        let documents = Documents::new(index);
        let schemas = Schemas::load(index, config);
        let requirement_ids = config.requirements.as_ref().and_then(|rel| {
            let text = match index.file(rel) {
                Some(f) => f.text.to_string(),
                None => index.fs().read(&index.root().join(rel)).ok()?,
            };
            let (registry, _) = crate::requirements::parse_registry(rel, &text);
            Some(registry.into_iter().map(|r| r.id).collect())
        });
        Model {
            config,
            envs,
            documents,
            schemas,
            requirement_ids,
        }
    }
}

/// The repository's YAML files as the walk found them, read and parsed: the only view of the
/// repository rules have. It cannot read a file (a file the walk did not list is not here).
#[derive(Clone, Copy)]
pub struct Documents<'a> {
    index: &'a RepoIndex,
}

impl<'a> Documents<'a> {
    /// The documents of `index`, walked and read now.
    #[must_use]
    pub fn new(index: &'a RepoIndex) -> Documents<'a> {
        let _ = index.files();
        Documents { index }
    }

    /// Every YAML file, sorted by path.
    #[must_use]
    pub fn files(&self) -> &'a [IndexedFile] {
        self.index.files()
    }

    /// The YAML file at `rel` (relative to the root), when the walk found it.
    #[must_use]
    pub fn file(&self, rel: &str) -> Option<&'a IndexedFile> {
        self.index.file(rel)
    }

    /// Whether the walk found the YAML file `rel`.
    #[must_use]
    pub fn contains(&self, rel: &str) -> bool {
        self.index.contains(rel)
    }

    /// Whether the file `rel` is part of a Helm chart in the repository (below a folder with a
    /// `Chart.yaml`).
    #[must_use]
    pub fn in_helm_chart(&self, rel: &str) -> bool {
        self.index.chart_root(rel).is_some()
    }

    /// The first file (in path order) that defines a `kind: Secret` named `name`.
    #[must_use]
    pub fn secret_file(&self, name: &str) -> Option<&'a str> {
        self.index.secret_file(name)
    }
}

/// The repository's schemas: every CRD manifest among its YAML files, and the `schemas:`
/// folders of fluxgate.yaml with what could not be read of them.
pub struct Schemas {
    pub catalog: Catalog,
    /// Files of the `schemas:` folders that hold neither a CRD nor a JSON Schema, or cannot
    /// be read.
    pub problems: Vec<FolderProblem>,
}

impl Schemas {
    /// Loads the catalog through the index's confined filesystem.
    #[must_use]
    pub fn load(index: &RepoIndex, config: &Config) -> Schemas {
        let mut catalog = Catalog::new();
        for f in index.files() {
            if f.text.contains("CustomResourceDefinition") && !index.is_chart_template(&f.path) {
                for doc in f.docs() {
                    catalog.add_crd(doc);
                }
            }
        }
        let mut problems = Vec::new();
        for dir in &config.schemas {
            problems.extend(catalog.add_folder(&**index.fs(), index.root(), dir));
        }
        Schemas { catalog, problems }
    }
}
