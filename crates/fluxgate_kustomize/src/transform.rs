//! The built-in transformers a kustomization configures with plain fields: namespace,
//! namePrefix/nameSuffix, labels/commonLabels, commonAnnotations, images and replicas. Every
//! value they set carries the location of the kustomization line that asked for it.

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Value};

use crate::fieldspec::{FieldSpec, table};
use crate::resource::{ResId, Resource};

/// Which RoleBinding/ClusterRoleBinding subjects the namespace transformer sets
/// (`setRoleBindingSubjects`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subjects {
    /// ServiceAccount subjects named `default` (kustomize's default mode).
    DefaultOnly,
    /// Every ServiceAccount subject.
    AllServiceAccounts,
    /// None.
    None,
}

/// One run of kustomize's namespace transformer: the `namespace:` field of a kustomization
/// or a `NamespaceTransformer` config.
pub struct NamespaceRun<'a> {
    pub namespace: &'a str,
    /// Where else the namespace goes. kustomize never takes `metadata/namespace` from these
    /// (it sets that on namespaced objects itself) and renames only `v1` objects through
    /// `metadata/name`.
    pub specs: &'a [FieldSpec],
    /// Set a field only where it is missing or empty (`unsetOnly`).
    pub unset_only: bool,
    pub subjects: Subjects,
}

/// The field specs of kustomize's built-in namespace configuration, which the `namespace:`
/// field uses (a `NamespaceTransformer` config uses its own `fieldSpecs` instead).
#[must_use]
pub fn namespace_specs() -> Vec<FieldSpec> {
    table(&[
        ("", "Namespace", "metadata/name", true),
        (
            "apiregistration.k8s.io",
            "APIService",
            "spec/service/namespace",
            true,
        ),
        (
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            "spec/conversion/webhook/clientConfig/service/namespace",
            false,
        ),
    ])
}

/// `namespace:`: sets `metadata.namespace` on every namespaced object, the run's other field
/// specs (a `v1` Namespace's name, APIService and CRD conversion service namespaces by
/// default), and the namespace of the (Cluster)RoleBinding subjects its mode selects.
pub fn namespace(resources: &mut [Resource], run: &NamespaceRun<'_>, loc: &Location) {
    let ns = run.namespace;
    let mut set = |n: &mut Node| {
        if !run.unset_only || n.is_null() || n.as_str() == Some("") {
            *n = Node::string(ns, loc.clone());
        }
    };
    let is_binding = |kind: &str| matches!(kind, "RoleBinding" | "ClusterRoleBinding");
    for r in resources.iter_mut() {
        let id = r.id();
        // kustomize records the id of every resource here, cluster-scoped ones included:
        // that makes them all candidates for name references afterwards.
        r.remember_id();
        if !id.is_cluster_scoped() && (!run.unset_only || id.namespace.is_empty()) {
            r.set_meta("namespace", ns, loc);
        }
        let api_version = r.node.str_at(&["apiVersion"]).unwrap_or("").to_string();
        for spec in run.specs.iter().filter(|s| s.applies_to(&id)) {
            let path = spec.path.trim_matches('/');
            if path == "metadata/namespace"
                || (path == "metadata/name" && api_version != "v1")
                || (is_binding(&id.kind) && is_binding(&spec.kind) && path == "subjects")
            {
                continue;
            }
            spec.visit(&mut r.node, loc, &mut set);
        }
        if run.subjects == Subjects::None || !is_binding(&id.kind) {
            continue;
        }
        if let Some(subjects) = r.node.get_mut("subjects").and_then(Node::as_seq_mut) {
            for s in subjects {
                if s.str_at(&["kind"]) != Some("ServiceAccount")
                    || (run.subjects == Subjects::DefaultOnly
                        && s.str_at(&["name"]) != Some("default"))
                {
                    continue;
                }
                FieldSpec::new("", "", "namespace", true).visit(s, loc, &mut set);
            }
        }
    }
}

/// Kinds whose names the prefix/suffix transformer leaves alone.
pub fn skips_prefix(id: &ResId) -> bool {
    matches!(id.kind.as_str(), "CustomResourceDefinition" | "Namespace")
        || (id.kind == "APIService" && id.group == "apiregistration.k8s.io")
}

/// `namePrefix:` / `nameSuffix:`.
pub fn prefix_suffix(resources: &mut [Resource], prefix: &str, suffix: &str, loc: &Location) {
    if prefix.is_empty() && suffix.is_empty() {
        return;
    }
    for r in resources.iter_mut() {
        let id = r.id();
        if skips_prefix(&id) {
            continue;
        }
        r.remember_id();
        let name = format!("{prefix}{}{suffix}", id.name);
        r.set_meta("name", &name, loc);
        if !prefix.is_empty() {
            r.prefixes.push(prefix.to_string());
        }
        if !suffix.is_empty() {
            r.suffixes.push(suffix.to_string());
        }
    }
}

/// Sets `labels` (or annotations) at every applicable field spec.
pub fn set_map_entries(
    resources: &mut [Resource],
    entries: &[(String, Node)],
    specs: &[FieldSpec],
    loc: &Location,
) {
    if entries.is_empty() {
        return;
    }
    for r in resources.iter_mut() {
        let id = r.id();
        for spec in specs.iter().filter(|s| s.applies_to(&id)) {
            spec.visit(&mut r.node, loc, &mut |n| {
                if n.is_null() {
                    *n = Node::map(loc.clone());
                }
                if let Some(m) = n.as_map_mut() {
                    for (k, v) in entries {
                        m.insert(k.clone(), v.clone());
                    }
                }
            });
        }
    }
}

/// The field specs `commonLabels` (and `labels` with `includeSelectors`) use.
#[must_use]
pub fn common_label_specs() -> Vec<FieldSpec> {
    let mut rows: Vec<(&str, &str, &str, bool)> = vec![
        ("", "", "metadata/labels", true),
        ("", "Service", "spec/selector", true),
        ("", "ReplicationController", "spec/selector", true),
        (
            "",
            "ReplicationController",
            "spec/template/metadata/labels",
            true,
        ),
        ("", "Deployment", "spec/selector/matchLabels", true),
        ("", "Deployment", "spec/template/metadata/labels", true),
        ("", "ReplicaSet", "spec/selector/matchLabels", true),
        ("", "ReplicaSet", "spec/template/metadata/labels", true),
        ("", "DaemonSet", "spec/selector/matchLabels", true),
        ("", "DaemonSet", "spec/template/metadata/labels", true),
        ("apps", "StatefulSet", "spec/selector/matchLabels", true),
        ("apps", "StatefulSet", "spec/template/metadata/labels", true),
        (
            "apps",
            "StatefulSet",
            "spec/volumeClaimTemplates[]/metadata/labels",
            true,
        ),
        ("batch", "Job", "spec/selector/matchLabels", false),
        ("batch", "Job", "spec/template/metadata/labels", true),
        (
            "batch",
            "CronJob",
            "spec/jobTemplate/spec/selector/matchLabels",
            false,
        ),
        ("batch", "CronJob", "spec/jobTemplate/metadata/labels", true),
        (
            "batch",
            "CronJob",
            "spec/jobTemplate/spec/template/metadata/labels",
            true,
        ),
        (
            "policy",
            "PodDisruptionBudget",
            "spec/selector/matchLabels",
            false,
        ),
        (
            "networking.k8s.io",
            "NetworkPolicy",
            "spec/podSelector/matchLabels",
            false,
        ),
        (
            "networking.k8s.io",
            "NetworkPolicy",
            "spec/ingress/from/podSelector/matchLabels",
            false,
        ),
        (
            "networking.k8s.io",
            "NetworkPolicy",
            "spec/egress/to/podSelector/matchLabels",
            false,
        ),
    ];
    for (g, k) in [("", "Deployment"), ("apps", "StatefulSet")] {
        for p in [
            "spec/template/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
            "spec/template/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
            "spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
            "spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
            "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels",
        ] {
            rows.push((g, k, p, false));
        }
    }
    table(&rows)
}

/// The field specs of `labels` with `includeTemplates` but without selectors.
#[must_use]
pub fn template_label_specs() -> Vec<FieldSpec> {
    let mut specs = vec![FieldSpec::new("", "", "metadata/labels", true)];
    specs.extend(common_label_specs().into_iter().filter(|s| {
        s.path
            .to_ascii_lowercase()
            .ends_with("template/metadata/labels")
    }));
    specs
}

/// The field specs `commonAnnotations` uses.
#[must_use]
pub fn annotation_specs() -> Vec<FieldSpec> {
    table(&[
        ("", "", "metadata/annotations", true),
        (
            "",
            "ReplicationController",
            "spec/template/metadata/annotations",
            true,
        ),
        ("", "Deployment", "spec/template/metadata/annotations", true),
        ("", "ReplicaSet", "spec/template/metadata/annotations", true),
        ("", "DaemonSet", "spec/template/metadata/annotations", true),
        (
            "apps",
            "StatefulSet",
            "spec/template/metadata/annotations",
            true,
        ),
        ("batch", "Job", "spec/template/metadata/annotations", true),
        (
            "batch",
            "CronJob",
            "spec/jobTemplate/metadata/annotations",
            true,
        ),
        (
            "batch",
            "CronJob",
            "spec/jobTemplate/spec/template/metadata/annotations",
            true,
        ),
    ])
}

/// One `images:` entry.
#[derive(Clone, Debug)]
pub struct ImageRule {
    pub name: String,
    pub new_name: Option<Node>,
    pub new_tag: Option<Node>,
    pub digest: Option<Node>,
    pub loc: Location,
}

/// `images:`: rewrites `image` of every container and init container, wherever they are.
pub fn images(resources: &mut [Resource], rules: &[ImageRule]) {
    if rules.is_empty() {
        return;
    }
    for r in resources.iter_mut() {
        rewrite_images(&mut r.node, rules);
    }
}

fn rewrite_images(node: &mut Node, rules: &[ImageRule]) {
    match &mut node.value {
        Value::Map(m) => {
            for (k, v) in m.iter_mut() {
                if (k == "containers" || k == "initContainers")
                    && let Some(items) = v.as_seq_mut()
                {
                    for c in items.iter_mut() {
                        if let Some(img) = c.get_mut("image") {
                            apply_image(img, rules);
                        }
                    }
                }
                rewrite_images(v, rules);
            }
        }
        Value::Seq(items) => items.iter_mut().for_each(|n| rewrite_images(n, rules)),
        _ => {}
    }
}

/// `images:` at the image fields `configurations:` add (a custom resource's `spec/image`).
pub fn images_at(resources: &mut [Resource], rules: &[ImageRule], specs: &[FieldSpec]) {
    if rules.is_empty() || specs.is_empty() {
        return;
    }
    for r in resources.iter_mut() {
        let id = r.id();
        let loc = r.node.loc.clone();
        for spec in specs.iter().filter(|s| s.applies_to(&id)) {
            spec.visit(&mut r.node, &loc, &mut |n| {
                if n.as_str().is_some() {
                    apply_image(n, rules);
                }
            });
        }
    }
}

/// Splits an image reference into name, tag (with its `:`) and digest (with its `@`).
#[must_use]
pub fn split_image(image: &str) -> (&str, &str, &str) {
    let (rest, digest) = match image.find('@') {
        Some(i) => (&image[..i], &image[i..]),
        None => (image, ""),
    };
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    match rest[slash..].find(':') {
        Some(i) => (&rest[..slash + i], &rest[slash + i..], digest),
        None => (rest, "", digest),
    }
}

fn apply_image(img: &mut Node, rules: &[ImageRule]) {
    let Some(current) = img.as_str() else {
        return;
    };
    let (name, tag, digest) = split_image(current);
    let Some(rule) = rules.iter().find(|r| r.name == name) else {
        return;
    };
    let text = |n: &Option<Node>| n.as_ref().and_then(Node::scalar_text);
    let new_name = text(&rule.new_name).unwrap_or_else(|| name.to_string());
    let suffix = if let Some(d) = text(&rule.digest) {
        format!("@{d}")
    } else if let Some(t) = text(&rule.new_tag) {
        format!(":{t}")
    } else {
        format!("{tag}{digest}")
    };
    let loc = [&rule.digest, &rule.new_tag, &rule.new_name]
        .into_iter()
        .flatten()
        .next()
        .map_or_else(|| rule.loc.clone(), |n| n.loc.clone());
    *img = Node::string(format!("{new_name}{suffix}"), loc);
}

/// `replicas:`: sets `spec.replicas` of the workloads with that (current or earlier) name.
pub fn replicas(resources: &mut [Resource], name: &str, count: &Node) {
    for r in resources.iter_mut() {
        let id = r.id();
        if !matches!(
            id.kind.as_str(),
            "Deployment" | "ReplicationController" | "ReplicaSet" | "StatefulSet"
        ) {
            continue;
        }
        if !r.all_ids().iter().any(|i| i.name == name) {
            continue;
        }
        let spec = FieldSpec::new("", "", "spec/replicas", true);
        spec.visit(&mut r.node, &count.loc, &mut |n| *n = count.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_images() {
        assert_eq!(split_image("nginx"), ("nginx", "", ""));
        assert_eq!(split_image("nginx:1.2"), ("nginx", ":1.2", ""));
        assert_eq!(
            split_image("localhost:5000/a/b:v1@sha256:x"),
            ("localhost:5000/a/b", ":v1", "@sha256:x")
        );
        assert_eq!(
            split_image("localhost:5000/a"),
            ("localhost:5000/a", "", "")
        );
    }
}
