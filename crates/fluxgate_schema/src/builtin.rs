//! The built-in kinds: Kubernetes v1.32's and v1.37's OpenAPI definitions, embedded in the
//! binary (`data/k8s-v1.3x-strict.json.gz`, made by `data/generate.sh`; see `data/README.md`).
//! v1.32 is the version findings name; v1.37 is asked when v1.32 rejects an object or lacks
//! its kind, so that what newer clusters serve is not reported.

use std::collections::{BTreeSet, HashMap};
use std::io::Read as _;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value as Json;
use serde_json::value::RawValue;

static PRIMARY: &[u8] = include_bytes!("../data/k8s-v1.32-strict.json.gz");
static NEWEST: &[u8] = include_bytes!("../data/k8s-v1.37-strict.json.gz");

/// The `$defs` a `$ref` names, each definition parsed the first time a walk asks for it: an
/// object of a few kinds needs a few dozen of the 600 definitions of a version, and parsing
/// them all was most of what validating a handful of objects cost.
#[derive(Default)]
pub struct Defs(HashMap<&'static str, Def>);

struct Def {
    /// The definition's text in the embedded file, decompressed once for the process.
    text: &'static RawValue,
    parsed: OnceLock<Json>,
}

impl Defs {
    /// The definition named `key` (`io.k8s.api.core.v1.PodSpec`).
    pub fn get(&self, key: &str) -> Option<&Json> {
        let def = self.0.get(key)?;
        Some(def.parsed.get_or_init(|| {
            serde_json::from_str(def.text.get())
                .expect("an embedded definition is JSON (made by data/generate.sh)")
        }))
    }
}

/// The definitions of one Kubernetes version.
pub struct Definitions {
    /// `v1.32.0`.
    pub version: String,
    /// `group/version/Kind` (core: `v1/Kind`) -> `$defs` key.
    kinds: HashMap<&'static str, &'static str>,
    pub defs: Defs,
}

/// The embedded file, its definitions left as text. Its names and definitions are borrowed
/// from the decompressed text (names hold no escapes), which the process keeps: copying each
/// definition out was most of loading them.
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    version: Option<String>,
    #[serde(default, borrow)]
    kinds: HashMap<&'static str, &'static str>,
    #[serde(default, borrow)]
    defs: HashMap<&'static str, &'static RawValue>,
}

impl Definitions {
    fn load(data: &[u8]) -> Definitions {
        let mut text = String::new();
        flate2::read::GzDecoder::new(data)
            .read_to_string(&mut text)
            .expect("the embedded schemas are valid gzip (made by data/generate.sh)");
        // Loaded once for the process (`Builtin::get`), and the definitions borrow from it.
        let text: &'static str = Box::leak(text.into_boxed_str());
        let file: File = serde_json::from_str(text)
            .expect("the embedded schemas are JSON (made by data/generate.sh)");
        let defs = file
            .defs
            .into_iter()
            .map(|(k, text)| {
                let def = Def {
                    text,
                    parsed: OnceLock::new(),
                };
                (k, def)
            })
            .collect();
        Definitions {
            kinds: file.kinds,
            defs: Defs(defs),
            version: file.version.unwrap_or_else(|| "unknown".to_string()),
        }
    }

    /// The definition of `apiVersion` `kind`, when this version serves it.
    pub fn schema(&self, api_version: &str, kind: &str) -> Option<(&str, &Json)> {
        let key = *self.kinds.get(format!("{api_version}/{kind}").as_str())?;
        Some((key, self.defs.get(key)?))
    }

    /// `(group, version, kind)` of every kind served.
    fn gvks(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.kinds.keys().copied().filter_map(|k| {
            let (gv, kind) = k.rsplit_once('/')?;
            let (g, v) = gv.split_once('/').unwrap_or(("", gv));
            Some((g, v, kind))
        })
    }
}

/// The embedded definitions, decompressed and parsed once per process.
pub struct Builtin {
    /// v1.32: what findings name.
    pub primary: Definitions,
    /// v1.37: what newer clusters also accept.
    pub newest: Definitions,
    /// Every API group that has built-in kinds (`""` for core).
    groups: BTreeSet<String>,
}

impl Builtin {
    /// The embedded definitions.
    pub fn get() -> &'static Builtin {
        static ONCE: OnceLock<Builtin> = OnceLock::new();
        ONCE.get_or_init(|| {
            let primary = Definitions::load(PRIMARY);
            let newest = Definitions::load(NEWEST);
            let groups = primary
                .gvks()
                .chain(newest.gvks())
                .map(|(g, _, _)| g.to_string())
                .collect();
            Builtin {
                primary,
                newest,
                groups,
            }
        })
    }

    /// Both versions, the one findings name first.
    pub fn versions(&self) -> [&Definitions; 2] {
        [&self.primary, &self.newest]
    }

    /// Whether `group` is an API group of the built-in kinds (`""`, `apps`,
    /// `networking.k8s.io`): no CRD can serve it.
    pub fn is_builtin_group(&self, group: &str) -> bool {
        self.groups.contains(group)
    }

    /// The versions of `group` that serve `kind` in either Kubernetes version, sorted.
    pub fn versions_of(&self, group: &str, kind: &str) -> Vec<String> {
        let set: BTreeSet<String> = self
            .versions()
            .iter()
            .flat_map(|d| d.gvks())
            .filter(|(g, _, k)| *g == group && *k == kind)
            .map(|(_, v, _)| v.to_string())
            .collect();
        set.into_iter().collect()
    }

    /// The definition of every object's metadata.
    pub fn object_meta(&self) -> &Json {
        self.primary
            .defs
            .get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
            .unwrap_or(&Json::Null)
    }
}

/// `group` of an `apiVersion` (`apps/v1` -> `apps`, `v1` -> ``).
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_definitions_index_the_common_kinds() {
        let b = Builtin::get();
        assert_eq!(b.primary.version, "v1.32.0");
        assert_eq!(b.newest.version, "v1.37.0");
        for (av, k) in [
            ("v1", "ConfigMap"),
            ("apps/v1", "Deployment"),
            ("networking.k8s.io/v1", "Ingress"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ] {
            assert!(b.primary.schema(av, k).is_some(), "{av} {k}");
        }
        assert!(b.primary.schema("apps/v1beta1", "Deployment").is_none());
        // GA after v1.32: only the newest serves it.
        assert!(
            b.primary
                .schema("resource.k8s.io/v1", "ResourceClaimTemplate")
                .is_none()
        );
        assert!(
            b.newest
                .schema("resource.k8s.io/v1", "ResourceClaimTemplate")
                .is_some()
        );
        assert!(b.is_builtin_group("") && b.is_builtin_group("apps"));
        assert!(!b.is_builtin_group("helm.toolkit.fluxcd.io"));
        assert_eq!(b.versions_of("policy", "PodDisruptionBudget"), ["v1"]);
    }
}
