//! What a change does to each environment: two renders of a repository (the base and the
//! head) compared object by object, leaf by leaf (SPEC §4, `fluxgate diff`), and the split of
//! findings into those a change introduces and those that were already there ([`baseline`],
//! `fluxgate check --base`).
//!
//! [`diff`] pairs the environments of both sides by name and reports, for each: the Flux
//! Kustomizations, HelmReleases and other objects added, removed or changed (each changed
//! field as `path: old -> new` with the head origin of the new value), the HelmReleases'
//! effective values leaf by leaf and their chart versions, the container images, the Ansible
//! variables of each host, and CRDs as a summary of versions and fields. A Secret's values
//! are never carried: only that a key changed. [`Report::reach`] says which environments each
//! changed file reaches. [`render`] prints a report as text, markdown or JSON.
//!
//! The crate has no error type because nothing in it can fail: it compares two models that
//! its caller derived (`fluxgate_check` reads the repositories and reports what it could not
//! read), and rendering a report is a pure function of it.
//!
//! ```
//! use fluxgate_diff::{diff, Report};
//! let report: Report = diff(&[], &[]);
//! assert!(report.is_empty());
//! ```

pub mod baseline;
mod leaves;
mod model;
pub mod render;

pub use model::{diff, diff_rooted};

use std::collections::{BTreeMap, BTreeSet};

/// What changed between two renders of a repository.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Environments only the head has.
    pub environments_added: Vec<String>,
    /// Environments only the base has.
    pub environments_removed: Vec<String>,
    /// Every environment both sides have, in the head's order (unchanged ones too).
    pub environments: Vec<EnvDiff>,
}

/// What changed in one environment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EnvDiff {
    pub name: String,
    /// Objects added, removed or changed (HelmReleases' values are in [`Self::releases`]).
    pub objects: Vec<ObjectChange>,
    /// HelmReleases whose chart or effective values changed.
    pub releases: Vec<ReleaseChange>,
    /// Container images that changed, per object and container.
    pub images: Vec<ImageChange>,
    /// Ansible variables that changed, per host.
    pub hosts: Vec<HostChange>,
}

impl EnvDiff {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
            && self.releases.is_empty()
            && self.images.is_empty()
            && self.hosts.is_empty()
    }

    /// How many objects of `category` were added, removed and changed.
    #[must_use]
    pub fn counts(&self, category: Category) -> (usize, usize, usize) {
        let of = |s: Status| {
            self.objects
                .iter()
                .filter(|o| o.category == category && o.status == s)
                .count()
        };
        (of(Status::Added), of(Status::Removed), of(Status::Changed))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Added,
    Removed,
    Changed,
}

impl Status {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Removed => "removed",
            Status::Changed => "changed",
        }
    }
}

/// What an object is, for the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Kustomization,
    HelmRelease,
    Crd,
    Object,
}

impl Category {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Kustomization => "Kustomizations",
            Category::HelmRelease => "HelmReleases",
            Category::Crd => "CRDs",
            Category::Object => "other objects",
        }
    }
}

/// Where a value was set on one side: the file:line, and the variable it came through.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Source {
    pub file: String,
    pub line: u32,
    /// Through what: `${VAR} set at cluster-vars.yaml:4`, `valuesFrom ConfigMap/x`, `group_vars/all`.
    pub via: Option<String>,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)?;
        } else {
            write!(f, "{}:{}", self.file, self.line)?;
        }
        if let Some(via) = &self.via {
            write!(f, " via {via}")?;
        }
        Ok(())
    }
}

/// One field that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldChange {
    pub path: String,
    pub status: Status,
    /// The base value as one line; `None` when the field is new (or secret).
    pub old: Option<String>,
    /// The head value as one line; `None` when the field was removed (or secret).
    pub new: Option<String>,
    /// Where the head set the new value (for a removed field: where the base had it).
    pub origin: Option<Source>,
    /// Where the base had the old value.
    pub base_origin: Option<Source>,
    /// A secret's value: neither side is shown, only that it changed.
    pub secret: bool,
    /// For multi-line text, the lines removed (`-`) and added (`+`).
    pub lines: Vec<(char, String)>,
}

/// An object added, removed or changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectChange {
    pub category: Category,
    pub api_version: String,
    pub kind: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
    pub status: Status,
    /// The Flux Kustomization that renders it (`flux-system/apps`), or `(entry)` for the
    /// entry folder's own objects.
    pub kustomization: String,
    /// The file the object was written in (the head's, or the base's when removed).
    pub file: String,
    pub fields: Vec<FieldChange>,
    /// For a CRD: its versions and schema fields, instead of every leaf.
    pub crd: Option<CrdSummary>,
    /// What else is worth saying (a Kustomization that renders more objects, or fails).
    pub notes: Vec<String>,
}

impl ObjectChange {
    /// `Deployment apps/podinfo`, `ClusterRole view`.
    #[must_use]
    pub fn label(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

/// A CRD's versions and schema fields on both sides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrdSummary {
    pub versions_old: Vec<String>,
    pub versions_new: Vec<String>,
    /// Schema field paths (`v1.spec.replicas`) only the head has.
    pub fields_added: Vec<String>,
    /// Schema field paths only the base has.
    pub fields_removed: Vec<String>,
}

/// A HelmRelease whose chart version or effective values changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseChange {
    /// `namespace/name`.
    pub id: String,
    pub status: Status,
    pub chart: String,
    /// The chart version asked for on each side, when it changed.
    pub version: Option<(Option<String>, Option<String>)>,
    /// Whether the chart's defaults were part of the values (the chart is in the cache).
    pub defaults_known: bool,
    /// The effective values, leaf by leaf.
    pub values: Vec<FieldChange>,
}

/// A container whose image changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageChange {
    /// `Deployment apps/podinfo`.
    pub object: String,
    pub container: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// The Ansible variables of one host that changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostChange {
    pub host: String,
    pub status: Status,
    pub vars: Vec<FieldChange>,
}

impl Report {
    /// Whether nothing changed at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.environments_added.is_empty()
            && self.environments_removed.is_empty()
            && self.environments.iter().all(EnvDiff::is_empty)
    }

    /// The environments each changed file reaches: for every file that set a changed value
    /// (on either side) or holds an added or removed object, the environments where it did,
    /// sorted by file. A file in more than one environment is a shared change.
    #[must_use]
    pub fn reach(&self) -> Vec<(String, Vec<String>)> {
        let mut by_file: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for env in &self.environments {
            let mut add = |file: &str| {
                if !file.is_empty() {
                    by_file
                        .entry(file.to_string())
                        .or_default()
                        .insert(env.name.clone());
                }
            };
            let fields = env
                .objects
                .iter()
                .flat_map(|o| o.fields.iter())
                .chain(env.releases.iter().flat_map(|r| r.values.iter()))
                .chain(env.hosts.iter().flat_map(|h| h.vars.iter()));
            for f in fields {
                for s in [&f.origin, &f.base_origin].into_iter().flatten() {
                    add(&s.file);
                    if let Some(def) = s.via.as_deref().and_then(via_file) {
                        add(def);
                    }
                }
            }
            for o in &env.objects {
                if o.status != Status::Changed || o.crd.is_some() {
                    add(&o.file);
                }
            }
        }
        by_file
            .into_iter()
            .map(|(f, envs)| (f, envs.into_iter().collect()))
            .collect()
    }
}

/// The file a `via` names after ` set at ` (`${DOMAIN} set at vars.yaml:3` -> `vars.yaml`).
fn via_file(via: &str) -> Option<&str> {
    let at = via.split(" set at ").nth(1)?;
    Some(at.rsplit_once(':').map_or(at, |(f, _)| f))
}
