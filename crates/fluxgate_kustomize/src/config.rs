//! `configurations:`: transformer configuration files that add field specs to kustomize's
//! built-in tables (custom resources whose fields hold names, labels, images or `$(VAR)`s).
//!
//! As in kustomize, a kustomization's configurations, with those of everything it includes,
//! apply to its own transformers and to those of the kustomizations that include it (not to
//! its siblings); name references and vars, done once at the end, use them all.
//! `nameReference`, `varReference`, `commonLabels`, `commonAnnotations`, `images` and
//! `namespace` are applied; other sections are reported.

use std::path::Path;

use fluxgate_yaml::{Node, Schema, parse_stream};

use crate::build::{Builder, seq};
use crate::fieldspec::FieldSpec;

/// Field specs added to the built-in ones.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// `(kind of the named object, where referrers name it)`.
    pub name_reference: Vec<(String, FieldSpec)>,
    pub var_reference: Vec<FieldSpec>,
    pub common_labels: Vec<FieldSpec>,
    pub common_annotations: Vec<FieldSpec>,
    pub images: Vec<FieldSpec>,
    pub namespace: Vec<FieldSpec>,
}

impl Config {
    pub fn extend(&mut self, other: Config) {
        self.name_reference.extend(other.name_reference);
        self.var_reference.extend(other.var_reference);
        self.common_labels.extend(other.common_labels);
        self.common_annotations.extend(other.common_annotations);
        self.images.extend(other.images);
        self.namespace.extend(other.namespace);
    }
}

fn specs(node: Option<&Node>) -> Vec<FieldSpec> {
    seq(node).iter().filter_map(FieldSpec::from_node).collect()
}

/// Reads the `configurations:` files of the kustomization at `dir`.
pub fn load(b: &mut Builder<'_>, dir: &Path, kust: &Node) -> Config {
    let mut config = Config::default();
    for entry in seq(kust.get("configurations")).to_vec() {
        let Some(target) = entry.as_str() else {
            b.error(
                "configurations: an entry must be a file path",
                Some(entry.loc.clone()),
            );
            continue;
        };
        let Some((rel, text)) = b.read_file(dir, target, &entry.loc, "transformer configuration")
        else {
            continue;
        };
        let stream = parse_stream(&rel, &text, Schema::Kube);
        let failed = stream.has_errors();
        b.yaml(stream.diagnostics);
        if failed {
            continue;
        }
        for doc in stream.docs {
            let Some(map) = doc.as_map() else { continue };
            for (key, value) in map {
                match key.as_str() {
                    "nameReference" => {
                        for r in seq(Some(value)) {
                            let Some(kind) = r.str_at(&["kind"]) else {
                                continue;
                            };
                            for fs in specs(r.get("fieldSpecs")) {
                                config.name_reference.push((kind.to_string(), fs));
                            }
                        }
                    }
                    "varReference" => config.var_reference.extend(specs(Some(value))),
                    "commonLabels" => config.common_labels.extend(specs(Some(value))),
                    "commonAnnotations" => config.common_annotations.extend(specs(Some(value))),
                    "images" => config.images.extend(specs(Some(value))),
                    "namespace" => config.namespace.extend(specs(Some(value))),
                    other => b.warn(
                        format!("configurations: {other} is not applied by fluxgate"),
                        Some(value.loc.clone()),
                    ),
                }
            }
        }
    }
    config
}
