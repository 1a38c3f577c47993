//! Patches: strategic merge ([`strategic_merge`]), JSON 6902 ([`json6902`]) and the `target:`
//! selector that picks what a patch applies to ([`selector_matches`]).
//!
//! Values taken from a patch keep the patch's locations, so a rendered value's origin is the
//! patch that set it.
//!
//! ```
//! use fluxgate_yaml::{parse_stream, Schema};
//! use fluxgate_kustomize::patch::strategic_merge;
//! let base = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: app, image: nginx}\n";
//! let patch = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: app, image: 'nginx:2'}\n";
//! let mut obj = parse_stream("base.yaml", base, Schema::Kube).docs.remove(0);
//! let patch = parse_stream("patch.yaml", patch, Schema::Kube).docs.remove(0);
//! strategic_merge(&mut obj, &patch).unwrap();
//! let containers = obj.path(&["spec", "template", "spec", "containers"]).unwrap();
//! let image = containers.as_seq().unwrap()[0].get("image").unwrap();
//! assert_eq!(image.as_str(), Some("nginx:2"));
//! assert_eq!(&*image.loc.file, "patch.yaml");
//! ```

mod custom_schema;
mod json6902;
mod list;
mod merge_keys;
mod select;
mod smp;

use fluxgate_yaml::Node;

pub use crate::Error;

pub use custom_schema::{CustomSchema, SchemaGuard};
pub(crate) use custom_schema::{
    is_active as custom_schema_is_active, set_active as set_custom_schema,
};
pub use json6902::json6902;
pub use select::{Selector, selector_matches};
pub use smp::strategic_merge;

/// Whether a strategic merge patch deletes its whole target (`$patch: delete` at its top):
/// kustomize then drops the object from the output.
#[must_use]
pub fn is_delete_patch(patch: &Node) -> bool {
    patch
        .get("$patch")
        .and_then(Node::as_str)
        .is_some_and(|d| d == "delete")
}

/// Whether a patch file's text is a JSON 6902 operation list rather than a strategic merge
/// patch: kustomize decides by the parsed document being a list.
#[must_use]
pub fn is_json6902(doc: &Node) -> bool {
    doc.as_seq().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_stream};

    #[test]
    fn delete_patches_are_recognised() {
        let cases = [
            ("kind: Deployment\n$patch: delete\n", true),
            ("kind: Deployment\n$patch: replace\n", false),
            ("kind: Deployment\n", false),
            ("- op: remove\n  path: /x\n", false),
        ];
        for (text, want) in cases {
            let doc = parse_stream("p.yaml", text, Schema::Kube).docs.remove(0);
            assert_eq!(is_delete_patch(&doc), want, "{text}");
        }
    }
}
