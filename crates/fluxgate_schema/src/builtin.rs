//! The built-in kinds: Kubernetes v1.32's OpenAPI definitions, embedded in the binary
//! (`data/k8s-v1.32-strict.json.gz`, made by `data/generate.sh`; see `data/README.md`).

use std::collections::BTreeSet;
use std::io::Read as _;
use std::sync::OnceLock;

use serde_json::{Map as JsonMap, Value as Json};

static DATA: &[u8] = include_bytes!("../data/k8s-v1.32-strict.json.gz");

/// The embedded definitions, decompressed and parsed once per process.
pub struct Builtin {
    /// The Kubernetes version the definitions are of (`v1.32.0`).
    pub version: String,
    /// `group/version/Kind` (core: `v1/Kind`) -> `$defs` key.
    kinds: JsonMap<String, Json>,
    pub defs: JsonMap<String, Json>,
    /// Every API group that has built-in kinds (`""` for core).
    groups: BTreeSet<String>,
}

impl Builtin {
    /// The embedded definitions.
    pub fn get() -> &'static Builtin {
        static ONCE: OnceLock<Builtin> = OnceLock::new();
        ONCE.get_or_init(|| {
            let mut text = String::new();
            flate2::read::GzDecoder::new(DATA)
                .read_to_string(&mut text)
                .expect("the embedded schemas are valid gzip (made by data/generate.sh)");
            let mut all: JsonMap<String, Json> = serde_json::from_str(&text)
                .expect("the embedded schemas are JSON (made by data/generate.sh)");
            let take = |all: &mut JsonMap<String, Json>, k: &str| match all.remove(k) {
                Some(Json::Object(m)) => m,
                _ => JsonMap::new(),
            };
            let kinds = take(&mut all, "kinds");
            let defs = take(&mut all, "defs");
            let version = all
                .get("version")
                .and_then(Json::as_str)
                .unwrap_or("unknown")
                .to_string();
            let groups = kinds
                .keys()
                .map(|k| {
                    let gv = k.rsplit_once('/').map_or("", |(gv, _)| gv);
                    gv.split_once('/').map_or("", |(g, _)| g).to_string()
                })
                .collect();
            Builtin {
                version,
                kinds,
                defs,
                groups,
            }
        })
    }

    /// The definition of `apiVersion` `kind`, when it is a built-in kind of this version.
    pub fn schema(&self, api_version: &str, kind: &str) -> Option<(&str, &Json)> {
        let key = self.kinds.get(&format!("{api_version}/{kind}"))?.as_str()?;
        Some((key, self.defs.get(key)?))
    }

    /// Whether `group` is an API group of the built-in kinds (`""`, `apps`,
    /// `networking.k8s.io`): no CRD can serve it.
    pub fn is_builtin_group(&self, group: &str) -> bool {
        self.groups.contains(group)
    }

    /// The versions of `group` that serve `kind`.
    pub fn versions_of(&self, group: &str, kind: &str) -> Vec<String> {
        self.kinds
            .keys()
            .filter_map(|k| {
                let (gv, k) = k.rsplit_once('/')?;
                let (g, v) = gv.split_once('/').unwrap_or(("", gv));
                (g == group && k == kind).then(|| v.to_string())
            })
            .collect()
    }

    /// The definition of every object's metadata.
    pub fn object_meta(&self) -> &Json {
        self.defs
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
        assert_eq!(b.version, "v1.32.0");
        for (av, k) in [
            ("v1", "ConfigMap"),
            ("apps/v1", "Deployment"),
            ("networking.k8s.io/v1", "Ingress"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ] {
            assert!(b.schema(av, k).is_some(), "{av} {k}");
        }
        assert!(b.schema("apps/v1beta1", "Deployment").is_none());
        assert!(b.is_builtin_group("") && b.is_builtin_group("apps"));
        assert!(!b.is_builtin_group("helm.toolkit.fluxcd.io"));
        assert_eq!(b.versions_of("policy", "PodDisruptionBudget"), ["v1"]);
    }
}
