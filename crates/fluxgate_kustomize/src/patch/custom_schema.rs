//! `openapi: {path: ...}`: a kustomization's own OpenAPI schema. As in kustomize (kyaml's
//! global schema), the first one loaded in a build replaces the built-in schema for the whole
//! build: objects are found by `x-kubernetes-group-version-kind`, and lists are merged where
//! the schema's `x-kubernetes-patch-strategy` says `merge`, by `x-kubernetes-list-map-keys`
//! or `x-kubernetes-patch-merge-key` (kinds the file does not describe get no merged lists).

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::Value as Json;

use super::merge_keys::Schema;

/// The definitions of a custom schema.
#[derive(Debug, PartialEq, Eq)]
pub struct CustomSchema {
    definitions: serde_json::Map<String, Json>,
}

/// A position in a custom schema: the schema node describing one value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct At {
    schema: Arc<CustomSchema>,
    node: Json,
}

thread_local! {
    static ACTIVE: RefCell<Option<Arc<CustomSchema>>> = const { RefCell::new(None) };
}

impl CustomSchema {
    /// Reads an OpenAPI v2 document (its `definitions`); `None` when it has none.
    #[must_use]
    pub fn from_json(doc: &Json) -> Option<CustomSchema> {
        let definitions = doc.get("definitions")?.as_object()?.clone();
        Some(CustomSchema { definitions })
    }

    fn resolve(&self, node: &Json) -> Json {
        let mut cur = node.clone();
        // A chain of references ends; a cycle is cut after a few steps.
        for _ in 0..16 {
            let Some(name) = cur
                .get("$ref")
                .and_then(Json::as_str)
                .and_then(|r| r.strip_prefix("#/definitions/"))
            else {
                break;
            };
            match self.definitions.get(name) {
                Some(def) => cur = def.clone(),
                None => return Json::Null,
            }
        }
        cur
    }
}

/// Makes `schema` the build's schema unless one is already set; `None` clears it.
pub(crate) fn set_active(schema: Option<Arc<CustomSchema>>) {
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        if schema.is_none() || a.is_none() {
            *a = schema;
        }
    });
}

/// Whether a custom schema is set for the build running on this thread.
pub(crate) fn is_active() -> bool {
    ACTIVE.with(|a| a.borrow().is_some())
}

/// The custom schema's description of an object (none when no custom schema is set or it
/// does not describe the kind).
pub(crate) fn for_object(api_version: &str, kind: &str) -> Option<Schema> {
    let schema = ACTIVE.with(|a| a.borrow().clone())?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let found = schema.definitions.values().find(|def| {
        def.get("x-kubernetes-group-version-kind")
            .and_then(Json::as_array)
            .is_some_and(|gvks| {
                gvks.iter().any(|g| {
                    let s = |k: &str| g.get(k).and_then(Json::as_str).unwrap_or("");
                    s("group") == group && s("version") == version && s("kind") == kind
                })
            })
    });
    let node = found.cloned()?;
    Some(Schema::Custom(At {
        node: schema.resolve(&node),
        schema,
    }))
}

impl At {
    /// The schema of `field` of the value this position describes.
    pub(crate) fn field(&self, field: &str) -> Option<Schema> {
        let child = self.node.get("properties")?.get(field)?;
        let child = self.schema.resolve(child);
        let is_list = child.get("items").is_some()
            || child.get("type").and_then(Json::as_str) == Some("array");
        if !is_list {
            return Some(Schema::Custom(At {
                schema: self.schema.clone(),
                node: child,
            }));
        }
        let strategy = child
            .get("x-kubernetes-patch-strategy")
            .and_then(Json::as_str)
            .unwrap_or("");
        if !strategy.split(',').any(|s| s.trim() == "merge") {
            return None;
        }
        let strings = |v: &Json| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|k| k.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let keys = match (
            child.get("x-kubernetes-list-map-keys"),
            child
                .get("x-kubernetes-patch-merge-key")
                .and_then(Json::as_str),
        ) {
            (Some(k), _) if !strings(k).is_empty() => strings(k),
            (_, Some(k)) => vec![k.to_string()],
            _ => Vec::new(),
        };
        let elem = child.get("items").map(|items| {
            Box::new(Schema::Custom(At {
                node: self.schema.resolve(items),
                schema: self.schema.clone(),
            }))
        });
        Some(Schema::MergedList { keys, elem })
    }
}

/// Clears the custom schema when created and when dropped: one build's schema never leaks
/// into the next build on the same thread.
pub struct SchemaGuard(());

impl SchemaGuard {
    #[must_use]
    pub fn new() -> SchemaGuard {
        set_active(None);
        SchemaGuard(())
    }
}

impl Default for SchemaGuard {
    fn default() -> Self {
        SchemaGuard::new()
    }
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        set_active(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Arc<CustomSchema> {
        let doc = serde_json::json!({"definitions": {
            "Crd": {
                "x-kubernetes-group-version-kind": [{"group": "ex.com", "version": "v1", "kind": "Crd"}],
                "properties": {"spec": {"$ref": "#/definitions/Spec"}}
            },
            "Spec": {"properties": {
                "items": {"type": "array", "items": {"$ref": "#/definitions/Item"},
                          "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "id"},
                "plain": {"type": "array", "items": {"type": "string"}}
            }},
            "Item": {"properties": {}}
        }});
        Arc::new(CustomSchema::from_json(&doc).expect("definitions"))
    }

    #[test]
    fn a_set_schema_describes_objects_until_the_guard_drops() {
        {
            let _guard = SchemaGuard::new();
            set_active(Some(schema()));
            let Some(Schema::Custom(root)) = for_object("ex.com/v1", "Crd") else {
                panic!("the custom kind is described");
            };
            let Some(Schema::Custom(spec)) = root.field("spec") else {
                panic!("spec resolves through $ref");
            };
            assert!(matches!(
                spec.field("items"),
                Some(Schema::MergedList { keys, elem: Some(_) }) if keys == ["id"]
            ));
            assert_eq!(spec.field("plain"), None);
            // Built-in kinds are not described by a custom schema.
            assert_eq!(for_object("apps/v1", "Deployment"), None);
            assert!(is_active());
        }
        assert!(!is_active());
    }
}
