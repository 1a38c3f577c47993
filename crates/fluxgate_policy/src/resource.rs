//! The objects a policy is evaluated over, and what admission would know about each: its
//! group/version/kind, the resource (plural) name, its scope, and the labels of its namespace.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use fluxgate_diagnostics::Location;
use serde_json::Value as Json;

/// One object under evaluation, as JSON, with where it was written. What every policy asks
/// first (kind, resource name, namespace, labels) is read once, when the resource is made;
/// its CEL and JMESPath forms and the Pod its template describes are built once, on first
/// use, for every policy.
#[derive(Clone, Debug)]
pub struct Resource {
    pub json: Json,
    pub loc: Location,
    kind: String,
    name: String,
    namespace: String,
    api_version: String,
    plural: String,
    labels: BTreeMap<String, String>,
    cel: OnceLock<kube_cel::cel::Value>,
    jmes: OnceLock<jmespath::Rcvar>,
    request: OnceLock<jmespath::Rcvar>,
    pod: OnceLock<Option<Box<Resource>>>,
}

impl Resource {
    #[must_use]
    pub fn new(json: Json, loc: Location) -> Resource {
        let text = |path: &[&str]| -> String {
            let mut v = &json;
            for k in path {
                match v.get(k) {
                    Some(x) => v = x,
                    None => return String::new(),
                }
            }
            v.as_str().unwrap_or("").to_string()
        };
        let kind = text(&["kind"]);
        let namespace = if is_cluster_scoped(&kind) {
            String::new()
        } else {
            json.pointer("/metadata/namespace")
                .and_then(Json::as_str)
                .unwrap_or("default")
                .to_string()
        };
        Resource {
            name: text(&["metadata", "name"]),
            api_version: text(&["apiVersion"]),
            plural: plural(&kind),
            labels: string_map(json.pointer("/metadata/labels")),
            kind,
            namespace,
            json,
            loc,
            cel: OnceLock::new(),
            jmes: OnceLock::new(),
            request: OnceLock::new(),
            pod: OnceLock::new(),
        }
    }

    /// The object as a CEL value.
    pub(crate) fn cel(&self) -> kube_cel::cel::Value {
        self.cel
            .get_or_init(|| crate::cel::to_cel(&self.json))
            .clone()
    }

    /// The object as a JMESPath value.
    pub(crate) fn jmes(&self) -> jmespath::Rcvar {
        self.jmes
            .get_or_init(|| crate::kyverno::jmes::to_var(&self.json))
            .clone()
    }

    /// Kyverno's variable data for a CREATE of this object without overrides, built once.
    pub(crate) fn request_data(&self, build: impl FnOnce() -> jmespath::Rcvar) -> jmespath::Rcvar {
        self.request.get_or_init(build).clone()
    }

    /// The Pod of a pod controller's template.
    pub(crate) fn template_pod(&self) -> Option<&Resource> {
        self.pod
            .get_or_init(|| crate::autogen::build_template_pod(self).map(Box::new))
            .as_deref()
    }

    pub fn str_at(&self, path: &[&str]) -> Option<&str> {
        let mut v = &self.json;
        for k in path {
            v = v.get(k)?;
        }
        v.as_str()
    }

    pub fn kind(&self) -> &str {
        &self.kind
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The resource (plural, lower case) of the kind, as the API server names it.
    pub fn plural(&self) -> &str {
        &self.plural
    }

    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// The namespace: the object's own, `default` for a namespaced kind without one, and
    /// empty for cluster-scoped kinds.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `(group, version)` of `apiVersion` (`v1` is the core group "").
    pub fn group_version(&self) -> (&str, &str) {
        match self.api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", &self.api_version),
        }
    }

    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    /// `kind` and `name` as a finding names the object: `Deployment default/web`.
    pub fn display(&self) -> String {
        let ns = self.namespace();
        if ns.is_empty() {
            format!("{} {}", self.kind(), self.name())
        } else {
            format!("{} {ns}/{}", self.kind(), self.name())
        }
    }
}

pub(crate) fn string_map(v: Option<&Json>) -> BTreeMap<String, String> {
    v.and_then(Json::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let s = match v {
                        Json::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), s)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Built-in and common kinds that have no namespace.
const CLUSTER_SCOPED: &[&str] = &[
    "APIService",
    "CSIDriver",
    "CSINode",
    "CertificateSigningRequest",
    "ClusterCleanupPolicy",
    "ClusterIssuer",
    "ClusterPolicy",
    "ClusterRole",
    "ClusterRoleBinding",
    "ClusterSecretStore",
    "ComponentStatus",
    "CustomResourceDefinition",
    "FlowSchema",
    "IngressClass",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "MutatingPolicy",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PodSecurityPolicy",
    "PriorityClass",
    "PriorityLevelConfiguration",
    "RuntimeClass",
    "SecurityContextConstraints",
    "StorageClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingPolicy",
    "ValidatingWebhookConfiguration",
    "VolumeAttachment",
    "VolumeSnapshotClass",
    "GeneratingPolicy",
    "ImageValidatingPolicy",
    "DeletingPolicy",
];

#[must_use]
pub fn is_cluster_scoped(kind: &str) -> bool {
    CLUSTER_SCOPED.contains(&kind)
}

/// The resource (plural, lower case) of a kind, as the API server names it.
#[must_use]
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    match lower.as_str() {
        "endpoints" => return lower,
        "podsecuritypolicy" => return "podsecuritypolicies".into(),
        _ => {}
    }
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with('s')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
        || lower.ends_with('x')
    {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

/// Every namespace's labels, from the Namespace objects of the render, each with the
/// `kubernetes.io/metadata.name` label the API server adds.
#[derive(Default)]
pub struct Namespaces {
    labels: BTreeMap<String, BTreeMap<String, String>>,
    objects: BTreeMap<String, Json>,
}

impl Namespaces {
    #[must_use]
    pub fn from_resources(resources: &[Resource]) -> Namespaces {
        let mut out = Namespaces::default();
        for r in resources.iter().filter(|r| r.kind() == "Namespace") {
            let mut l = r.labels().clone();
            l.insert("kubernetes.io/metadata.name".into(), r.name().into());
            out.labels.insert(r.name().to_string(), l);
            out.objects.insert(r.name().to_string(), r.json.clone());
        }
        out
    }

    #[must_use]
    pub fn labels(&self, ns: &str) -> std::borrow::Cow<'_, BTreeMap<String, String>> {
        match self.labels.get(ns) {
            Some(l) => std::borrow::Cow::Borrowed(l),
            None => std::borrow::Cow::Owned(BTreeMap::from([(
                "kubernetes.io/metadata.name".to_string(),
                ns.to_string(),
            )])),
        }
    }

    /// The Namespace object (CEL's `namespaceObject`), or a minimal one.
    #[must_use]
    pub fn object(&self, ns: &str) -> Json {
        self.objects.get(ns).cloned().unwrap_or_else(|| {
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}})
        })
    }
}

/// A Kubernetes label selector (`matchLabels`, `matchExpressions`) over `labels`. An invalid
/// selector matches nothing.
#[must_use]
pub fn selector_matches(selector: &Json, labels: &BTreeMap<String, String>) -> bool {
    if let Some(ml) = selector.get("matchLabels").and_then(Json::as_object) {
        for (k, v) in ml {
            if labels.get(k).map(String::as_str) != v.as_str() {
                return false;
            }
        }
    }
    if let Some(exprs) = selector.get("matchExpressions").and_then(Json::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Json::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Json::as_array)
                .map(|a| a.iter().filter_map(Json::as_str).collect())
                .unwrap_or_default();
            let have = labels.get(key);
            let ok = match e.get("operator").and_then(Json::as_str).unwrap_or("") {
                "In" => have.is_some_and(|h| values.contains(&h.as_str())),
                "NotIn" => have.is_none_or(|h| !values.contains(&h.as_str())),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals() {
        for (k, p) in [
            ("Pod", "pods"),
            ("Ingress", "ingresses"),
            ("NetworkPolicy", "networkpolicies"),
            ("Endpoints", "endpoints"),
            ("Gateway", "gateways"),
        ] {
            assert_eq!(plural(k), p);
        }
    }

    #[test]
    fn selectors() {
        let l = BTreeMap::from([("app".to_string(), "web".to_string())]);
        let s = serde_json::json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]});
        assert!(selector_matches(&s, &l));
        let s = serde_json::json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]});
        assert!(!selector_matches(&s, &l));
    }
}
