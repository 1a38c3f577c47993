//! Kyverno's auto-generated rules for pod controllers. A policy written for Pods also applies
//! to the Pod template of a Deployment, DaemonSet, StatefulSet, Job, ReplicaSet,
//! ReplicationController and CronJob. Kyverno rewrites the rule's paths (`spec` becomes
//! `spec.template.spec`); evaluating the original rule over the template as a Pod is the same
//! check, and keeps the finding at the controller's line.

use serde_json::Value as Json;

use crate::resource::Resource;

/// The controllers Kyverno generates rules for when a policy does not say.
pub const DEFAULT_CONTROLLERS: &[&str] = &[
    "DaemonSet",
    "Deployment",
    "Job",
    "StatefulSet",
    "ReplicaSet",
    "ReplicationController",
    "CronJob",
];

fn parse_list(s: &str) -> Vec<String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("none") || s.is_empty() {
        return Vec::new();
    }
    if s.eq_ignore_ascii_case("all") {
        return DEFAULT_CONTROLLERS
            .iter()
            .map(|c| (*c).to_string())
            .collect();
    }
    s.split(',')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

/// The `pod-policies.kyverno.io/autogen-controllers` annotation, else every controller.
pub fn annotated_controllers(doc: &Json) -> Vec<String> {
    match doc
        .pointer("/metadata/annotations/pod-policies.kyverno.io~1autogen-controllers")
        .and_then(Json::as_str)
    {
        Some(s) => parse_list(s),
        None => parse_list("all"),
    }
}

/// A ValidatingPolicy's controllers: `spec.autogen.podControllers.controllers` (an empty
/// list turns autogen off), else the annotation, else every controller.
pub fn vpol_controllers(doc: &Json) -> Vec<String> {
    if let Some(list) = doc
        .pointer("/spec/autogen/podControllers/controllers")
        .and_then(Json::as_array)
    {
        return list
            .iter()
            .filter_map(Json::as_str)
            .map(str::to_string)
            .collect();
    }
    annotated_controllers(doc)
}

/// The Pod a controller's template describes: the template's metadata (with the
/// controller's name and namespace, which Kyverno's generated rules match on) and spec.
#[must_use]
pub fn template_pod<'a>(r: &'a Resource, controllers: &[String]) -> Option<&'a Resource> {
    let kind = r.kind();
    if !controllers.iter().any(|c| c == kind) {
        return None;
    }
    r.template_pod()
}

pub(crate) fn build_template_pod(r: &Resource) -> Option<Resource> {
    let kind = r.kind();
    if !DEFAULT_CONTROLLERS.contains(&kind) {
        return None;
    }
    let template = if kind == "CronJob" {
        r.json.pointer("/spec/jobTemplate/spec/template")?
    } else {
        r.json.pointer("/spec/template")?
    };
    let mut metadata = template
        .get("metadata")
        .filter(|m| m.is_object())
        .cloned()
        .unwrap_or_else(|| serde_json::json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.insert("name".into(), Json::String(r.name().to_string()));
        if let Some(ns) = r.str_at(&["metadata", "namespace"]) {
            m.insert("namespace".into(), Json::String(ns.to_string()));
        }
    }
    let pod = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| serde_json::json!({})),
    });
    Some(Resource::new(pod, r.loc.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controllers_from_spec_and_annotation() {
        let d = serde_json::json!({"spec": {"autogen": {"podControllers": {"controllers": []}}}});
        assert!(vpol_controllers(&d).is_empty());
        let d = serde_json::json!({"metadata": {"annotations": {"pod-policies.kyverno.io/autogen-controllers": "Deployment,CronJob"}}});
        assert_eq!(annotated_controllers(&d), ["Deployment", "CronJob"]);
        assert_eq!(annotated_controllers(&serde_json::json!({})).len(), 7);
    }

    #[test]
    fn cronjob_template() {
        let cj = Resource::new(
            serde_json::json!({"kind": "CronJob", "metadata": {"name": "c", "namespace": "n"},
                "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}}),
            fluxgate_diagnostics::Location::file("x.yaml"),
        );
        let pod = template_pod(&cj, &["CronJob".to_string()]).unwrap();
        assert_eq!(pod.kind(), "Pod");
        assert_eq!(pod.namespace(), "n");
        assert!(template_pod(&cj, &["Deployment".to_string()]).is_none());
    }
}
