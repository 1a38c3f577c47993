//! Schemas of custom resources: each served version of a `CustomResourceDefinition`
//! (`apiextensions.k8s.io/v1`, `spec.versions[].schema.openAPIV3Schema`), and JSON Schema files
//! in the CRDs-catalog layout (`<group>/<kind>_<version>.json`) from the `schemas:` folders.

use std::path::Path;
use std::sync::Arc;

use fluxgate_diagnostics::Location;
use fluxgate_yaml::Node;
use serde_json::Value as Json;

/// Where a custom resource schema came from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// A CRD object (`helmreleases.helm.toolkit.fluxcd.io`) at its document's location.
    Crd { name: String, loc: Location },
    /// A JSON Schema file of a `schemas:` folder.
    File { path: String },
}

impl Origin {
    /// A short label for messages: `CRD helmreleases.helm.toolkit.fluxcd.io`.
    pub fn label(&self) -> String {
        match self {
            Origin::Crd { name, .. } => format!("CRD {name}"),
            Origin::File { path } => format!("schema file {path}"),
        }
    }

    /// The location to show as related.
    pub fn location(&self) -> Location {
        match self {
            Origin::Crd { loc, .. } => loc.clone(),
            Origin::File { path } => Location::file(path.as_str()),
        }
    }
}

/// One version of one custom resource kind.
#[derive(Clone, Debug)]
pub struct CustomSchema {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// `served: false` versions cannot be applied.
    pub served: bool,
    /// The version's `openAPIV3Schema` (`None`: the CRD declares none, so nothing is checked).
    pub schema: Option<Arc<Json>>,
    pub origin: Origin,
}

impl CustomSchema {
    /// `group/version/Kind`, the catalog key.
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.group, self.version, self.kind)
    }
}

/// The versions a CRD object declares; empty when `doc` is not an `apiextensions.k8s.io/v1`
/// CustomResourceDefinition with a group and a kind.
pub fn from_crd(doc: &Node) -> Vec<CustomSchema> {
    if doc.str_at(&["kind"]) != Some("CustomResourceDefinition")
        || doc.str_at(&["apiVersion"]) != Some("apiextensions.k8s.io/v1")
    {
        return Vec::new();
    }
    let (Some(group), Some(kind)) = (
        doc.str_at(&["spec", "group"]),
        doc.str_at(&["spec", "names", "kind"]),
    ) else {
        return Vec::new();
    };
    let name = doc.str_at(&["metadata", "name"]).map_or_else(
        || format!("(unnamed CRD of {group} {kind})"),
        str::to_string,
    );
    let Some(versions) = doc.path(&["spec", "versions"]).and_then(Node::as_seq) else {
        return Vec::new();
    };
    versions
        .iter()
        .filter_map(|v| {
            let version = v.str_at(&["name"])?;
            let schema = v
                .path(&["schema", "openAPIV3Schema"])
                .filter(|s| s.as_map().is_some())
                .map(|s| Arc::new(s.to_json()));
            Some(CustomSchema {
                group: group.to_string(),
                version: version.to_string(),
                kind: kind.to_string(),
                served: v.get("served").and_then(Node::as_bool).unwrap_or(true),
                schema,
                origin: Origin::Crd {
                    name: name.clone(),
                    loc: doc.loc.clone(),
                },
            })
        })
        .collect()
}

/// A JSON Schema file named `<group>/<kind>_<version>.json` (the CRDs-catalog layout, kinds in
/// lower case); `kind` is matched without regard to case when objects are looked up.
pub fn from_catalog_file(rel: &str, schema: Json) -> Option<CustomSchema> {
    let p = Path::new(rel);
    let stem = p.file_stem()?.to_str()?;
    let group = p.parent()?.file_name()?.to_str()?;
    let (kind, version) = stem.rsplit_once('_')?;
    if kind.is_empty() || version.is_empty() || !group.contains('.') {
        return None;
    }
    Some(CustomSchema {
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_ascii_lowercase(),
        served: true,
        schema: Some(Arc::new(schema)),
        origin: Origin::File {
            path: rel.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_one};

    #[test]
    fn reads_each_version_of_a_crd() {
        let text = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget}\n  versions:\n    - name: v1\n      served: true\n      schema:\n        openAPIV3Schema: {type: object}\n    - name: v0\n      served: false\n";
        let (doc, _) = parse_one("crd.yaml", text, Schema::Kube);
        let got = from_crd(&doc.unwrap());
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].key(), "example.com/v1/Widget");
        assert!(got[0].served && got[0].schema.is_some());
        assert!(!got[1].served && got[1].schema.is_none());
        assert_eq!(got[0].origin.label(), "CRD widgets.example.com");
    }

    #[test]
    fn catalog_files_are_named_by_group_kind_and_version() {
        let s = from_catalog_file("schemas/example.com/widget_v1.json", Json::Null).unwrap();
        assert_eq!(s.key(), "example.com/v1/widget");
        assert!(from_catalog_file("schemas/widget.json", Json::Null).is_none());
    }
}
