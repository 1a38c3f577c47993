//! Offline schema validation of rendered Kubernetes objects (SPEC §7, layer L0).
//!
//! Three sources of schemas, none fetched at run time:
//! - the built-in kinds: Kubernetes v1.32's strict OpenAPI definitions, embedded in the binary
//!   ([`builtin`]);
//! - custom resources: every served version of the `CustomResourceDefinition`s found in the
//!   repository and in its rendered environments (Flux's own `gotk-components.yaml` carries
//!   every Flux CRD), each with its structural `openAPIV3Schema` ([`crd`]);
//! - the files of the `schemas:` folders of fluxgate.yaml: CRD manifests, or JSON Schema files
//!   in the CRDs-catalog layout `<group>/<kind>_<version>.json` ([`Catalog::add_folder`]).
//!
//! [`Catalog::validate`] walks an object against its schema and returns what the API server
//! would reject (a wrong type, a missing required field, a value outside an enum or bound, and
//! for built-in kinds an unknown field), each [`Violation`] at the node that set it. An unknown
//! field under a CRD is pruned by the API server rather than rejected: it is reported with
//! [`Mode::Structural`] so that the caller can make it a warning.
//!
//! The crate has no error type: a schema file that cannot be read or does not parse is a
//! problem in the user's repository, returned as a [`FolderProblem`] that the caller turns
//! into a diagnostic (the run goes on), and validating an object cannot fail.
//!
//! ```
//! use fluxgate_schema::{Catalog, Outcome, ViolationKind};
//! use fluxgate_yaml::{parse_one, Schema};
//! let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\ndatta: {}\n";
//! let (obj, _) = parse_one("cm.yaml", text, Schema::Kube);
//! let catalog = Catalog::new();
//! let Outcome::Invalid { violations, .. } = catalog.validate(&obj.unwrap(), &[]) else {
//!     panic!("a typo is an unknown field");
//! };
//! assert_eq!(violations[0].kind, ViolationKind::UnknownField);
//! assert_eq!((violations[0].path.as_str(), violations[0].loc.line), ("datta", 7));
//! ```

pub mod builtin;
pub mod crd;
mod validate;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use fluxgate_diagnostics::Location;
use fluxgate_fs::Fs;
use fluxgate_yaml::{Node, Schema as YamlSchema, parse_stream};
use indexmap::IndexMap;
use regex::Regex;
use serde_json::Value as Json;

pub use builtin::Builtin;
pub use crd::{CustomSchema, Origin};
pub use validate::{Mode, Violation, ViolationKind};

/// What an object was validated against.
#[derive(Clone, Debug)]
pub enum Against {
    /// A built-in kind: the `$defs` key of its definition, and the Kubernetes versions whose
    /// definitions were asked (for a rejected object: every one that rejects it).
    Builtin {
        definition: String,
        versions: Vec<String>,
    },
    /// A custom resource schema.
    Custom(Origin),
}

/// The result of validating one object.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// The object has a schema and satisfies it.
    Valid { against: Against },
    /// The object has a schema and breaks it.
    Invalid {
        against: Against,
        mode: Mode,
        violations: Vec<Violation>,
    },
    /// A built-in API group that does not serve this version of the kind (removed, or newer
    /// than the embedded definitions): the API server answers "no matches for kind".
    NotServed { served: Vec<String> },
    /// No schema is known for the object's kind; `why` says what was looked for.
    NoSchema { why: String },
}

/// Custom resource schemas by `group/version/Kind`. The built-in kinds are always known.
#[derive(Default)]
pub struct Catalog {
    custom: IndexMap<String, Vec<CustomSchema>>,
}

/// A file of a `schemas:` folder that fluxgate could not use.
#[derive(Clone, Debug)]
pub struct FolderProblem {
    pub loc: Location,
    pub message: String,
}

impl Catalog {
    #[must_use]
    pub fn new() -> Catalog {
        Catalog::default()
    }

    /// Adds the versions of a CRD object (anything else is ignored). Identical schemas of the
    /// same version (one CRD copied into several clusters) are kept once.
    pub fn add_crd(&mut self, doc: &Node) {
        for s in crd::from_crd(doc) {
            self.add(s);
        }
    }

    fn add(&mut self, s: CustomSchema) {
        let entry = self.custom.entry(s.key()).or_default();
        if !entry
            .iter()
            .any(|e| e.served == s.served && e.schema == s.schema)
        {
            entry.push(s);
        }
    }

    /// The number of custom kind versions known.
    #[must_use]
    pub fn custom_len(&self) -> usize {
        self.custom.len()
    }

    /// Whether any CRD declares `group`/`kind` (in whatever version).
    fn declares(&self, group: &str, kind: &str) -> Vec<String> {
        self.custom
            .values()
            .flatten()
            .filter(|s| s.group == group && s.kind.eq_ignore_ascii_case(kind))
            .map(|s| s.version.clone())
            .collect()
    }

    fn lookup(&self, group: &str, version: &str, kind: &str) -> Option<&[CustomSchema]> {
        self.custom
            .get(&format!("{group}/{version}/{kind}"))
            .or_else(|| {
                self.custom
                    .get(&format!("{group}/{version}/{}", kind.to_ascii_lowercase()))
            })
            .map(Vec::as_slice)
            .filter(|v| !v.is_empty())
    }

    /// Loads the folder (or file) `rel` of the repository at `root`: every CRD manifest in a
    /// `.yaml`/`.yml`/`.json` file, and every JSON Schema file in the CRDs-catalog layout.
    /// A file that is neither, or does not parse, is a problem (never silently skipped).
    /// Read through `fs`, the repository's confined filesystem (an overlay's mutant included);
    /// symbolic links are not followed.
    pub fn add_folder(&mut self, fs: &dyn Fs, root: &Path, rel: &str) -> Vec<FolderProblem> {
        let mut problems = Vec::new();
        let mut files = Vec::new();
        collect_files(fs, root, Path::new(rel), &mut files);
        files.sort();
        for file in files {
            let rel_file = file.to_string_lossy().replace('\\', "/");
            let text = match fs.read(&root.join(&file)) {
                Ok(t) => t,
                Err(e) => {
                    problems.push(FolderProblem {
                        loc: Location::file(rel_file.as_str()),
                        message: format!("cannot read this schema file: {e}"),
                    });
                    continue;
                }
            };
            let stream = parse_stream(&rel_file, &text, YamlSchema::Kube);
            if let Some(d) = stream.diagnostics.first() {
                problems.push(FolderProblem {
                    loc: d
                        .location
                        .clone()
                        .unwrap_or_else(|| Location::file(rel_file.as_str())),
                    message: format!("this schema file does not parse: {}", d.message),
                });
                continue;
            }
            let mut crds = 0;
            for doc in &stream.docs {
                let versions = crd::from_crd(doc);
                crds += usize::from(!versions.is_empty());
                for s in versions {
                    self.add(s);
                }
            }
            if crds == 0
                && stream.docs.len() == 1
                && let Some(s) = crd::from_catalog_file(&rel_file, stream.docs[0].to_json())
            {
                self.add(s);
                crds = 1;
            }
            if crds == 0 {
                problems.push(FolderProblem {
                    loc: Location::file(rel_file.as_str()),
                    message: "this file of a `schemas:` folder is neither a \
                              CustomResourceDefinition (apiextensions.k8s.io/v1) nor a JSON \
                              Schema named <group>/<kind>_<version>.json, so it gives no schema"
                        .to_string(),
                });
            }
        }
        problems
    }

    /// Validates `obj` against its schema: a built-in kind's definition, else the first of
    /// `layers` (then this catalog) that knows its kind. When a layer holds several differing
    /// schemas of the kind (copies of a CRD at different releases), the object is valid if
    /// any accepts it; otherwise the first one's violations are reported.
    #[must_use]
    pub fn validate(&self, obj: &Node, layers: &[&Catalog]) -> Outcome {
        let b = Builtin::get();
        let api_version = obj.str_at(&["apiVersion"]).unwrap_or("");
        let kind = obj.str_at(&["kind"]).unwrap_or("");
        if api_version.is_empty() || kind.is_empty() {
            return Outcome::NoSchema {
                why: "the object has no apiVersion or kind".to_string(),
            };
        }
        // v1.32 first; v1.37 when v1.32 rejects the object or does not serve its kind.
        let mut rejected: Option<(String, Vec<Violation>)> = None;
        let mut versions = Vec::new();
        for defs in b.versions() {
            let Some((key, schema)) = defs.schema(api_version, kind) else {
                continue;
            };
            let mut w = validate::Walker::new(&defs.defs, Mode::Builtin);
            w.check(schema, obj, "", 0);
            if w.out.is_empty() {
                return Outcome::Valid {
                    against: Against::Builtin {
                        definition: key.to_string(),
                        versions: vec![defs.version.clone()],
                    },
                };
            }
            versions.push(defs.version.clone());
            rejected.get_or_insert((key.to_string(), w.out));
        }
        if let Some((definition, violations)) = rejected {
            return Outcome::Invalid {
                against: Against::Builtin {
                    definition,
                    versions,
                },
                mode: Mode::Builtin,
                violations,
            };
        }
        let group = builtin::group_of(api_version);
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        if b.is_builtin_group(group) {
            let served = b.versions_of(group, kind);
            if !served.is_empty() {
                return Outcome::NotServed { served };
            }
            return Outcome::NoSchema {
                why: format!(
                    "Kubernetes {} and {} have no kind {kind} in {}",
                    b.primary.version,
                    b.newest.version,
                    if group.is_empty() {
                        "the core group"
                    } else {
                        group
                    }
                ),
            };
        }
        let mut declared = Vec::new();
        for layer in layers.iter().copied().chain(std::iter::once(self)) {
            let Some(candidates) = layer.lookup(group, version, kind) else {
                declared.extend(layer.declares(group, kind));
                continue;
            };
            let mut first: Option<(Against, Vec<Violation>)> = None;
            for c in candidates {
                let against = Against::Custom(c.origin.clone());
                let Some(schema) = c.schema.as_deref() else {
                    // A version without a schema accepts anything.
                    return Outcome::Valid { against };
                };
                let violations = validate_custom(schema, obj);
                if violations.is_empty() {
                    return Outcome::Valid { against };
                }
                first.get_or_insert((against, violations));
            }
            let (against, violations) = first.expect("a found kind has a candidate");
            return Outcome::Invalid {
                against,
                mode: Mode::Structural,
                violations,
            };
        }
        declared.sort();
        declared.dedup();
        Outcome::NoSchema {
            why: if declared.is_empty() {
                "no CustomResourceDefinition for it is in the repository, its renders or the \
                 `schemas:` folders"
                    .to_string()
            } else {
                format!(
                    "the CustomResourceDefinitions found declare only version{} {} of it",
                    if declared.len() == 1 { "" } else { "s" },
                    declared.join(", ")
                )
            },
        }
    }
}

/// A custom resource against its structural schema. `apiVersion`, `kind` and `metadata` are
/// the API server's, whatever the schema says of them: metadata is checked as the built-in
/// ObjectMeta.
fn validate_custom(schema: &Json, obj: &Node) -> Vec<Violation> {
    let b = Builtin::get();
    let mut w = validate::Walker::new(&b.primary.defs, Mode::Structural);
    w.check_root(schema, obj, b.object_meta());
    w.out
}

fn collect_files(fs: &dyn Fs, root: &Path, rel: &Path, out: &mut Vec<std::path::PathBuf>) {
    let full = root.join(rel);
    if fs.is_symlink(&full) {
        return;
    }
    if fs.is_file(&full) {
        let ext = rel.extension().and_then(|e| e.to_str()).unwrap_or("");
        if matches!(ext, "json" | "yaml" | "yml") {
            out.push(rel.to_path_buf());
        }
        return;
    }
    let Ok(entries) = fs.list_dir(&full) else {
        return;
    };
    for e in entries {
        if let Some(name) = e.file_name() {
            collect_files(fs, root, &rel.join(name), out);
        }
    }
}

/// The compiled `pattern` of a schema, once per pattern; `None` when Rust's regex cannot
/// compile it (look-arounds), in which case the pattern is not checked.
pub(crate) fn pattern(p: &str) -> Option<Arc<Regex>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Arc<Regex>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    let mut map = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.entry(p.to_string())
        .or_insert_with(|| Regex::new(p).ok().map(Arc::new))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::parse_one;

    fn obj(text: &str) -> Node {
        parse_one("o.yaml", text, YamlSchema::Kube).0.unwrap()
    }

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget}\n  versions:\n    - name: v1\n      served: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec:\n              type: object\n              required: [size]\n              properties:\n                size: {type: integer}\n";

    #[test]
    fn custom_resources_are_checked_against_their_crd() {
        let mut c = Catalog::new();
        c.add_crd(&obj(CRD));
        let w = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, labels: {a: b}}\nspec:\n  size: big\n  colour: red\n";
        let Outcome::Invalid {
            violations, mode, ..
        } = c.validate(&obj(w), &[])
        else {
            panic!("invalid");
        };
        assert_eq!(mode, Mode::Structural);
        let got: Vec<(ViolationKind, &str)> = violations
            .iter()
            .map(|v| (v.kind, v.path.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (ViolationKind::WrongType, "spec.size"),
                (ViolationKind::UnknownField, "spec.colour")
            ]
        );
        let ok = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n";
        assert!(matches!(c.validate(&obj(ok), &[]), Outcome::Valid { .. }));
        let other = "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w}\n";
        let Outcome::NoSchema { why } = c.validate(&obj(other), &[]) else {
            panic!("no schema");
        };
        assert!(why.contains("only version v1"), "{why}");
    }

    #[test]
    fn removed_built_in_versions_are_not_served() {
        let c = Catalog::new();
        let o = obj("apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: a}\n");
        let Outcome::NotServed { served } = c.validate(&o, &[]) else {
            panic!("not served");
        };
        assert_eq!(served, ["v1"]);
    }
}
