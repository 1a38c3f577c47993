//! Configs of kustomize's built-in transformers listed under `transformers:` (a file, inline
//! text, or a kustomization directory whose objects are configs): `apiVersion: builtin` with
//! the transformer's kind. Each runs through the same code as the kustomization field that
//! configures it, with the config's own field specs where it has them.

use std::path::Path;

use fluxgate_yaml::{Map, Node, Value};

use crate::build::{Builder, seq};
use crate::fieldspec::FieldSpec;
use crate::resource::Resource;
use crate::{generate, patches, transform};

/// The built-in transformer kinds fluxgate runs.
pub const TRANSFORMERS: &[&str] = &[
    "AnnotationsTransformer",
    "ImageTagTransformer",
    "LabelTransformer",
    "NamespaceTransformer",
    "PatchTransformer",
    "PrefixSuffixTransformer",
    "ReplicaCountTransformer",
];

fn field_specs(cfg: &Node) -> Vec<FieldSpec> {
    seq(cfg.get("fieldSpecs"))
        .iter()
        .filter_map(FieldSpec::from_node)
        .collect()
}

/// Runs one transformer config over `acc`.
pub fn transform(b: &mut Builder<'_>, dir: &Path, cfg: &Node, acc: &mut Vec<Resource>) {
    match cfg.str_at(&["kind"]).unwrap_or("") {
        "ImageTagTransformer" => {
            if let Some(i) = cfg.get("imageTag")
                && let Some(name) = i.str_at(&["name"])
            {
                let rule = transform::ImageRule {
                    name: name.to_string(),
                    new_name: i.get("newName").cloned(),
                    new_tag: i.get("newTag").cloned(),
                    digest: i.get("digest").cloned(),
                    loc: i.loc.clone(),
                };
                transform::images(acc, &[rule]);
            }
        }
        kind @ ("LabelTransformer" | "AnnotationsTransformer") => {
            let field = if kind == "LabelTransformer" {
                "labels"
            } else {
                "annotations"
            };
            if let Some(values) = cfg.get(field) {
                let entries = generate::string_entries(Some(values));
                transform::set_map_entries(acc, &entries, &field_specs(cfg), &values.loc);
            }
        }
        "NamespaceTransformer" => namespace(b, cfg, acc),
        "PrefixSuffixTransformer" => prefix_suffix(cfg, acc),
        "ReplicaCountTransformer" => {
            if let Some(r) = cfg.get("replica")
                && let (Some(name), Some(count)) = (r.str_at(&["name"]), r.get("count"))
            {
                transform::replicas(acc, name, count);
            }
        }
        "PatchTransformer" => {
            // The config is one `patches:` entry of a kustomization.
            let mut entry = Map::default();
            for k in ["path", "patch", "target", "options"] {
                if let Some(v) = cfg.get(k) {
                    entry.insert(k.to_string(), v.clone());
                }
            }
            let mut kust = Map::default();
            kust.insert(
                "patches".into(),
                Node::new(
                    Value::Seq(vec![Node::new(
                        Value::Map(Box::new(entry)),
                        cfg.loc.clone(),
                    )]),
                    cfg.loc.clone(),
                ),
            );
            patches::patches(
                b,
                dir,
                &Node::new(Value::Map(Box::new(kust)), cfg.loc.clone()),
                acc,
            );
        }
        _ => {}
    }
}

/// `NamespaceTransformer`: the namespace is the config's own `metadata.namespace`; its
/// `fieldSpecs` replace kustomize's built-in namespace table (without them only
/// `metadata.namespace` and binding subjects are set).
fn namespace(b: &mut Builder<'_>, cfg: &Node, acc: &mut [Resource]) {
    let subjects = match cfg.get("setRoleBindingSubjects") {
        None => transform::Subjects::DefaultOnly,
        Some(mode) => match mode.as_str() {
            Some("" | "defaultOnly") => transform::Subjects::DefaultOnly,
            Some("allServiceAccounts") => transform::Subjects::AllServiceAccounts,
            Some("none") => transform::Subjects::None,
            _ => {
                b.error(
                    format!(
                        "NamespaceTransformer: invalid value {:?} for setRoleBindingSubjects: \
                         must be one of \"defaultOnly\", \"none\" or \"allServiceAccounts\"",
                        mode.as_str().unwrap_or_default()
                    ),
                    Some(mode.loc.clone()),
                );
                return;
            }
        },
    };
    let Some(ns) = cfg
        .path(&["metadata", "namespace"])
        .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
    else {
        return;
    };
    let specs = field_specs(cfg);
    let run = transform::NamespaceRun {
        namespace: ns.as_str().unwrap_or_default(),
        specs: &specs,
        unset_only: cfg
            .get("unsetOnly")
            .and_then(Node::as_bool)
            .unwrap_or(false),
        subjects,
    };
    transform::namespace(acc, &run, &ns.loc);
}

/// `PrefixSuffixTransformer`: a field spec at `metadata/name` renames the object (recorded
/// for name references, as `namePrefix` does); any other field gets the affixes as text.
fn prefix_suffix(cfg: &Node, acc: &mut [Resource]) {
    let prefix = cfg.str_at(&["prefix"]).unwrap_or("");
    let suffix = cfg.str_at(&["suffix"]).unwrap_or("");
    if prefix.is_empty() && suffix.is_empty() {
        return;
    }
    let loc = cfg
        .get("prefix")
        .or(cfg.get("suffix"))
        .map_or_else(|| cfg.loc.clone(), |n| n.loc.clone());
    let specs = field_specs(cfg);
    for r in acc.iter_mut() {
        let id = r.org_id();
        if transform::skips_prefix(&id) {
            continue;
        }
        for spec in specs.iter().filter(|s| s.applies_to(&id)) {
            if spec.path.trim_matches('/') == "metadata/name" {
                transform::prefix_suffix(std::slice::from_mut(r), prefix, suffix, &loc);
                continue;
            }
            spec.visit(&mut r.node, &loc, &mut |n| {
                if let Some(s) = n.as_str() {
                    *n = Node::string(format!("{prefix}{s}{suffix}"), loc.clone());
                }
            });
        }
    }
}
