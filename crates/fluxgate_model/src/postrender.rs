//! What helm-controller does to a chart's output before it applies it: each of the release's
//! `postRenderers` (kustomize `patches` and `images`) in order, built as kustomize builds them,
//! then its origin labels (`helm.toolkit.fluxcd.io/name` and `/namespace`) on every object.
//! Values a patch did not touch keep the line of the template that wrote them.

use std::path::Path;

use fluxgate_diagnostics::{Annotate, Location};
use fluxgate_kustomize::MemFs;
use fluxgate_yaml::{EmitOptions, Node, Value, emit_docs};

use crate::problem::{Problem, ProblemKind};

const ROOT: &str = "/helm-post-render";

/// Applies `release`'s post-renderers and origin labels to `objects`.
pub(crate) fn post_render(release: &Node, objects: Vec<Node>) -> Result<Vec<Node>, Box<Problem>> {
    let mut objects = objects;
    let renderers = release
        .path(&["spec", "postRenderers"])
        .and_then(Node::as_seq)
        .map(<[Node]>::to_vec)
        .unwrap_or_default();
    for renderer in &renderers {
        let Some(k) = renderer.get("kustomize") else {
            continue;
        };
        objects = kustomize(k, &objects)?;
    }
    let name = release.str_at(&["metadata", "name"]).unwrap_or_default();
    let ns = release
        .str_at(&["metadata", "namespace"])
        .unwrap_or("default");
    for obj in &mut objects {
        label(obj, "helm.toolkit.fluxcd.io/name", name, &release.loc);
        label(obj, "helm.toolkit.fluxcd.io/namespace", ns, &release.loc);
    }
    Ok(objects)
}

/// One kustomize post-renderer: the objects as the one resource of a kustomization with the
/// renderer's `patches` and `images`.
fn kustomize(spec: &Node, objects: &[Node]) -> Result<Vec<Node>, Box<Problem>> {
    let mut fs = MemFs::new();
    let text = emit_docs(
        objects,
        EmitOptions {
            sort_keys: false,
            origins: false,
        },
    );
    fs.insert(format!("{ROOT}/resources.yaml"), text);
    let mut kust = Node::map(spec.loc.clone());
    if let Some(m) = kust.as_map_mut() {
        m.insert(
            "resources".into(),
            Node::new(
                Value::Seq(vec![Node::string("resources.yaml", spec.loc.clone())]),
                spec.loc.clone(),
            ),
        );
        for field in ["patches", "images"] {
            if let Some(v) = spec.get(field) {
                m.insert(field.into(), v.clone());
            }
        }
    }
    let root = Path::new(ROOT);
    let build = fluxgate_kustomize::build_with(&fs, root, root, &kust);
    if build.has_errors() {
        let why = build
            .problems
            .iter()
            .find(|p| p.kind.fails_build())
            .map_or_else(String::new, |p| p.message.clone());
        return Err(Box::new(
            Problem::new(
                ProblemKind::ChartRender,
                format!("the post-renderer fails: {why}"),
                Some(spec.loc.clone()),
            )
            .help("helm-controller fails the release when its kustomize post-renderer fails"),
        ));
    }
    let mut out = build.objects;
    for obj in &mut out {
        if let Some(before) = objects.iter().find(|o| same_object(o, obj)) {
            graft(obj, before);
        }
    }
    Ok(out)
}

fn same_object(a: &Node, b: &Node) -> bool {
    ["kind", "apiVersion"]
        .iter()
        .all(|k| a.str_at(&[k]) == b.str_at(&[k]))
        && a.str_at(&["metadata", "name"]) == b.str_at(&["metadata", "name"])
        && a.str_at(&["metadata", "namespace"]) == b.str_at(&["metadata", "namespace"])
}

/// Gives every node of `after` that `before` holds unchanged at the same place the location
/// it had there (the text kustomize read has no lines of its own worth showing).
fn graft(after: &mut Node, before: &Node) {
    match (&mut after.value, &before.value) {
        (Value::Map(am), Value::Map(bm)) => {
            after.loc = before.loc.clone();
            for (k, av) in am.iter_mut() {
                if let Some(bv) = bm.get(k) {
                    graft(av, bv);
                }
            }
        }
        (Value::Seq(a), Value::Seq(b)) if a.len() == b.len() => {
            after.loc = before.loc.clone();
            for (av, bv) in a.iter_mut().zip(b) {
                graft(av, bv);
            }
        }
        (Value::Seq(a), Value::Seq(b)) => {
            // A patch added or removed items: keep the ones that are there unchanged.
            for av in a.iter_mut() {
                if let Some(bv) = b.iter().find(|bv| *bv == av) {
                    graft(av, bv);
                }
            }
        }
        (a, b) if scalar_eq(a, b) => after.loc = before.loc.clone(),
        _ => {}
    }
}

fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::String(x), Value::String(y)) => x == y,
        _ => false,
    }
}

fn label(obj: &mut Node, key: &str, value: &str, at: &Location) {
    let Some(m) = obj.as_map_mut() else {
        return;
    };
    let md = m
        .entry("metadata".to_string())
        .or_insert_with(|| Node::map(at.clone()));
    let Some(md) = md.as_map_mut() else {
        return;
    };
    let labels = md
        .entry("labels".to_string())
        .or_insert_with(|| Node::map(at.clone()));
    if labels.is_null() {
        *labels = Node::map(at.clone());
    }
    if let Some(l) = labels.as_map_mut() {
        l.insert(key.into(), Node::string(value, at.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_stream};

    fn docs(file: &str, text: &str) -> Vec<Node> {
        parse_stream(file, text, Schema::Kube).docs
    }

    #[test]
    fn patches_apply_and_untouched_values_keep_their_template_line() {
        let release = docs(
            "hr.yaml",
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps}\nspec:\n  postRenderers:\n    - kustomize:\n        patches:\n          - target: {kind: Deployment}\n            patch: |\n              - op: replace\n                path: /spec/replicas\n                value: 3\n        images:\n          - name: example/web\n            newTag: \"2.0\"\n",
        )
        .remove(0);
        let objects = docs(
            "charts/web/templates/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n        - name: web\n          image: example/web:1.0\n",
        );
        let out = post_render(&release, objects).unwrap();
        assert_eq!(out.len(), 1);
        let d = &out[0];
        assert_eq!(
            d.path(&["spec", "replicas"]).and_then(Node::as_i64),
            Some(3)
        );
        let image = d
            .path(&["spec", "template", "spec", "containers"])
            .and_then(Node::as_seq)
            .and_then(|c| c[0].get("image"))
            .unwrap();
        assert_eq!(image.as_str(), Some("example/web:2.0"));
        let name = d.path(&["metadata", "name"]).unwrap();
        assert_eq!(
            name.loc.file.as_ref(),
            "charts/web/templates/deployment.yaml"
        );
        assert_eq!(name.loc.line, 4);
        assert_eq!(
            d.str_at(&["metadata", "labels", "helm.toolkit.fluxcd.io/name"]),
            Some("web")
        );
        assert_eq!(
            d.str_at(&["metadata", "labels", "helm.toolkit.fluxcd.io/namespace"]),
            Some("apps")
        );
    }

    #[test]
    fn a_failing_post_renderer_is_a_render_error() {
        let release = docs(
            "hr.yaml",
            "kind: HelmRelease\nmetadata: {name: web, namespace: apps}\nspec:\n  postRenderers:\n    - kustomize:\n        patches:\n          - patch: |\n              - op: replace\n                path: /spec/missing/field\n                value: 3\n            target: {kind: Deployment}\n",
        )
        .remove(0);
        let objects = docs(
            "t.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: apps}\nspec: {}\n",
        );
        let err = post_render(&release, objects).unwrap_err();
        assert_eq!(err.kind, ProblemKind::ChartRender);
        assert!(err.message.contains("post-renderer"), "{}", err.message);
    }
}
