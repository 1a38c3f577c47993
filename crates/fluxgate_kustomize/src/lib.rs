//! In-process kustomize v5 (faithful to kustomize v5.5.0, the one in `kubectl kustomize`),
//! keeping the origin of every field.
//!
//! [`build`] renders a kustomization directory: resources (files, nested kustomizations),
//! components, generators with their hash suffixes (binary files as `binaryData`), patches
//! (with a kustomization's own `openapi:` schema), the built-in transformers (also as
//! `transformers:` configs), `replacements:`, legacy `vars:`, `configurations:`, name
//! references and kustomize's output order. Every field of every object keeps the
//! [`Location`](fluxgate_diagnostics::Location) where it was written: the resource file, the
//! patch, or the kustomization line of the transformer that set it. Problems are typed
//! ([`Problem`], [`ProblemKind`]) and the rest still renders; nothing is read outside the root and nothing
//! is fetched.
//!
//! ```
//! use std::path::Path;
//! use fluxgate_kustomize::{MemFs, build};
//! let mut fs = MemFs::new();
//! fs.insert("/repo/app/kustomization.yaml", "namePrefix: dev-\nresources: [cm.yaml]\n");
//! fs.insert("/repo/app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n");
//! let out = build(&fs, Path::new("/repo"), Path::new("/repo/app"));
//! assert!(out.problems.is_empty());
//! let name = out.objects[0].path(&["metadata", "name"]).unwrap();
//! assert_eq!(name.as_str(), Some("dev-settings"));
//! assert_eq!(name.loc.file.as_ref(), "app/kustomization.yaml"); // set by namePrefix
//! ```

mod build;
mod config;
mod error;
mod fieldspec;
mod fs;
mod generate;
mod nameref;
pub mod patch;
mod patches;
mod plugins;
mod problem;
mod replacements;
mod resource;
mod transform;
mod vars;

use std::path::Path;

use fluxgate_diagnostics::Location;
use fluxgate_yaml::Node;

pub use build::KUSTOMIZATION_FILES;
pub use error::Error;
pub use fs::{
    CachedFs, Fs, MemFs, Memo, Overlay, Parsed, RealFs, RecordingFs, SourceCache, normal_order,
    normalize, parse,
};
pub use generate::content_hash;
pub use problem::{Problem, ProblemKind, from_yaml};
pub use resource::{Override, is_cluster_scoped};

/// The result of a build: the objects in kustomize's output order, and every problem.
#[derive(Debug, Default)]
pub struct Build {
    pub objects: Vec<Node>,
    /// For each object (same index), the values patches replaced in it: base -> patch.
    pub overrides: Vec<Vec<Override>>,
    pub problems: Vec<Problem>,
}

impl Build {
    /// Whether a problem fails the build (`kubectl kustomize` would exit 1).
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| p.kind.fails_build())
    }
}

/// Which files a kustomization may read, besides staying inside the root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LoadRestrictor {
    /// Any file under the root: Flux's kustomize-controller (`LoadRestrictionsNone`, confined
    /// to the source).
    #[default]
    None,
    /// `kubectl kustomize`'s default (`LoadRestrictionsRootOnly`): a kustomization reads files
    /// only at or below its own folder; bases, being folders, may be anywhere under the root.
    RootOnly,
}

/// Builds the kustomization in `dir`. `root` is the repository: nothing outside it is read,
/// and diagnostic paths are relative to it.
#[must_use]
pub fn build(fs: &dyn Fs, root: &Path, dir: &Path) -> Build {
    build_restricted(fs, root, dir, LoadRestrictor::None)
}

/// [`build`] with a load restrictor.
#[must_use]
pub fn build_restricted(fs: &dyn Fs, root: &Path, dir: &Path, restrictor: LoadRestrictor) -> Build {
    let _schema = patch::SchemaGuard::new();
    let mut b = build::Builder::new(fs, root);
    b.root_only = restrictor == LoadRestrictor::RootOnly;
    let dir = normalize(dir);
    if !dir.starts_with(&b.root) {
        b.error(
            format!("{} is outside the repository root", dir.display()),
            None,
        );
        return finish_empty(b);
    }
    let Some(kust) = b.load_kustomization(&dir, None) else {
        return finish_empty(b);
    };
    run(b, &dir, &kust)
}

/// Builds `dir` as if its kustomization file contained `kustomization` (Flux generates
/// kustomizations this way).
#[must_use]
pub fn build_with(fs: &dyn Fs, root: &Path, dir: &Path, kustomization: &Node) -> Build {
    let _schema = patch::SchemaGuard::new();
    let b = build::Builder::new(fs, root);
    run(b, &normalize(dir), kustomization)
}

fn run(mut b: build::Builder<'_>, dir: &Path, kust: &Node) -> Build {
    let resources = b.build_dir(dir, kust, Vec::new());
    let vars = std::mem::take(&mut b.vars);
    let config = std::mem::take(&mut b.config);
    let (objects, overrides) =
        build::Builder::finish(kust, resources, &vars, &config, &mut b.diags);
    let mut problems = b.diags;
    fluxgate_diagnostics::problem::sort_and_dedup(&mut problems);
    Build {
        objects,
        overrides,
        problems,
    }
}

fn finish_empty(b: build::Builder<'_>) -> Build {
    let mut problems = b.diags;
    fluxgate_diagnostics::problem::sort_and_dedup(&mut problems);
    Build {
        objects: Vec::new(),
        overrides: Vec::new(),
        problems,
    }
}

/// Where a kustomization directory's file would be: for callers that report on it.
#[must_use]
pub fn kustomization_location(root: &Path, dir: &Path) -> Location {
    let rel = normalize(dir)
        .strip_prefix(normalize(root))
        .map(|p| p.join("kustomization.yaml").to_string_lossy().into_owned())
        .unwrap_or_default();
    Location::file(rel)
}
