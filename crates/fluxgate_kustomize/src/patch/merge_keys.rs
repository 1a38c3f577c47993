//! Which lists a strategic merge patch merges, and by which keys.
//!
//! kustomize's merge walker (kyaml `merge2`) asks the built-in OpenAPI schema of the target's
//! exact `apiVersion`/`kind` for each list field: a list whose `x-kubernetes-patch-strategy`
//! contains `merge` is merged by its `x-kubernetes-list-map-keys` (or its patch merge key, or,
//! with no key, as a set of scalars); every other list, and every list of a kind the schema
//! does not know (CRDs), is replaced. The merge keys come from `data/smp-merge-keys-v1.32.json`;
//! the type graph that leads from a kind to the types named there is written out below.
//!
//! kustomize v5.5.0 embeds the Kubernetes **v1.21** schema, so fields added to the API later
//! (`schedulingGates`, `resourceClaims`, webhook `matchConditions`...) have no schema there and
//! their lists are replaced: [`NOT_IN_KUSTOMIZE_SCHEMA`] lists them (checked with
//! `kubectl kustomize` for `schedulingGates`).

use std::collections::HashMap;
use std::sync::OnceLock;

const MERGE_KEYS_JSON: &str = include_str!("../../data/smp-merge-keys-v1.32.json");

/// Entries of the v1.32 table that kustomize's built-in v1.21 schema does not have.
const NOT_IN_KUSTOMIZE_SCHEMA: &[&str] = &[
    "MutatingWebhook.matchConditions",
    "ValidatingWebhook.matchConditions",
    "ValidatingAdmissionPolicySpec.matchConditions",
    "ValidatingAdmissionPolicySpec.variables",
    "MutatingAdmissionPolicySpec.matchConditions",
    "ContainerStatus.allocatedResourcesStatus",
    "ContainerStatus.volumeMounts",
    "PodSpec.resourceClaims",
    "PodSpec.schedulingGates",
    "PodStatus.hostIPs",
    "PodStatus.resourceClaimStatuses",
    "ServiceCIDRStatus.conditions",
    "ResourceClaimStatus.reservedFor",
    "StorageVersionMigrationList.items",
    "StorageVersionMigrationStatus.conditions",
    "JSONSchemaProps.x-kubernetes-validations",
];

/// Kinds the built-in schema knows, by the exact apiVersions it has them under, and the
/// type that describes each.
const ROOTS: &[(&[&str], &str, &str)] = &[
    (&["apps/v1"], "Deployment", "Deployment"),
    (&["apps/v1"], "ReplicaSet", "ReplicaSet"),
    (&["apps/v1"], "DaemonSet", "DaemonSet"),
    (&["apps/v1"], "StatefulSet", "StatefulSet"),
    (&["apps/v1"], "ControllerRevision", "Object"),
    (&["batch/v1"], "Job", "Job"),
    (&["batch/v1", "batch/v1beta1"], "CronJob", "CronJob"),
    (&["v1"], "Pod", "Pod"),
    (&["v1"], "PodTemplate", "PodTemplate"),
    (&["v1"], "ReplicationController", "ReplicationController"),
    (&["v1"], "Service", "Service"),
    (&["v1"], "ServiceAccount", "ServiceAccount"),
    (&["v1"], "Node", "Node"),
    (&["v1"], "Namespace", "Namespace"),
    (&["v1"], "PersistentVolumeClaim", "PersistentVolumeClaim"),
    (&["v1"], "ComponentStatus", "ComponentStatus"),
    (&["v1"], "ConfigMap", "Object"),
    (&["v1"], "Secret", "Object"),
    (&["v1"], "Endpoints", "Object"),
    (&["v1"], "Event", "Object"),
    (&["v1"], "LimitRange", "Object"),
    (&["v1"], "PersistentVolume", "Object"),
    (&["v1"], "ResourceQuota", "Object"),
    (
        &["autoscaling/v2beta1", "autoscaling/v2beta2"],
        "HorizontalPodAutoscaler",
        "HorizontalPodAutoscaler",
    ),
    (&["autoscaling/v1"], "HorizontalPodAutoscaler", "Object"),
    (
        &[
            "admissionregistration.k8s.io/v1",
            "admissionregistration.k8s.io/v1beta1",
        ],
        "MutatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ),
    (
        &[
            "admissionregistration.k8s.io/v1",
            "admissionregistration.k8s.io/v1beta1",
        ],
        "ValidatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ),
    (
        &["policy/v1", "policy/v1beta1"],
        "PodDisruptionBudget",
        "PodDisruptionBudget",
    ),
    (&["policy/v1beta1"], "PodSecurityPolicy", "Object"),
    (
        &["storage.k8s.io/v1", "storage.k8s.io/v1beta1"],
        "CSINode",
        "CSINode",
    ),
    (
        &["storage.k8s.io/v1", "storage.k8s.io/v1beta1"],
        "StorageClass",
        "Object",
    ),
    (
        &["storage.k8s.io/v1", "storage.k8s.io/v1beta1"],
        "CSIDriver",
        "Object",
    ),
    (
        &["storage.k8s.io/v1", "storage.k8s.io/v1beta1"],
        "VolumeAttachment",
        "Object",
    ),
    (
        &["flowcontrol.apiserver.k8s.io/v1beta1"],
        "FlowSchema",
        "FlowSchema",
    ),
    (
        &["flowcontrol.apiserver.k8s.io/v1beta1"],
        "PriorityLevelConfiguration",
        "PriorityLevelConfiguration",
    ),
    (
        &[
            "apiregistration.k8s.io/v1",
            "apiregistration.k8s.io/v1beta1",
        ],
        "APIService",
        "APIService",
    ),
    (
        &["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"],
        "CustomResourceDefinition",
        "Object",
    ),
    (
        &[
            "networking.k8s.io/v1",
            "networking.k8s.io/v1beta1",
            "extensions/v1beta1",
        ],
        "Ingress",
        "Object",
    ),
    (
        &["networking.k8s.io/v1", "networking.k8s.io/v1beta1"],
        "IngressClass",
        "Object",
    ),
    (&["networking.k8s.io/v1"], "NetworkPolicy", "Object"),
    (
        &[
            "rbac.authorization.k8s.io/v1",
            "rbac.authorization.k8s.io/v1beta1",
        ],
        "ClusterRole",
        "Object",
    ),
    (
        &[
            "rbac.authorization.k8s.io/v1",
            "rbac.authorization.k8s.io/v1beta1",
        ],
        "ClusterRoleBinding",
        "Object",
    ),
    (
        &[
            "rbac.authorization.k8s.io/v1",
            "rbac.authorization.k8s.io/v1beta1",
        ],
        "Role",
        "Object",
    ),
    (
        &[
            "rbac.authorization.k8s.io/v1",
            "rbac.authorization.k8s.io/v1beta1",
        ],
        "RoleBinding",
        "Object",
    ),
    (
        &["scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1"],
        "PriorityClass",
        "Object",
    ),
    (
        &["coordination.k8s.io/v1", "coordination.k8s.io/v1beta1"],
        "Lease",
        "Object",
    ),
    (
        &["discovery.k8s.io/v1", "discovery.k8s.io/v1beta1"],
        "EndpointSlice",
        "Object",
    ),
    (
        &["node.k8s.io/v1", "node.k8s.io/v1beta1"],
        "RuntimeClass",
        "Object",
    ),
];

/// `(type, field, type of the field or of its elements)`: the edges that lead from a kind to
/// the types that hold merged lists. Every root type also has `metadata: ObjectMeta`.
const EDGES: &[(&str, &str, &str)] = &[
    ("Deployment", "spec", "DeploymentSpec"),
    ("Deployment", "status", "DeploymentStatus"),
    ("DeploymentSpec", "template", "PodTemplateSpec"),
    ("ReplicaSet", "spec", "ReplicaSetSpec"),
    ("ReplicaSet", "status", "ReplicaSetStatus"),
    ("ReplicaSetSpec", "template", "PodTemplateSpec"),
    ("DaemonSet", "spec", "DaemonSetSpec"),
    ("DaemonSet", "status", "DaemonSetStatus"),
    ("DaemonSetSpec", "template", "PodTemplateSpec"),
    ("StatefulSet", "spec", "StatefulSetSpec"),
    ("StatefulSet", "status", "StatefulSetStatus"),
    ("StatefulSetSpec", "template", "PodTemplateSpec"),
    ("Job", "spec", "JobSpec"),
    ("Job", "status", "JobStatus"),
    ("JobSpec", "template", "PodTemplateSpec"),
    ("CronJob", "spec", "CronJobSpec"),
    ("CronJobSpec", "jobTemplate", "JobTemplateSpec"),
    ("JobTemplateSpec", "metadata", "ObjectMeta"),
    ("JobTemplateSpec", "spec", "JobSpec"),
    ("Pod", "spec", "PodSpec"),
    ("Pod", "status", "PodStatus"),
    ("PodTemplate", "template", "PodTemplateSpec"),
    ("ReplicationController", "spec", "ReplicationControllerSpec"),
    (
        "ReplicationController",
        "status",
        "ReplicationControllerStatus",
    ),
    ("ReplicationControllerSpec", "template", "PodTemplateSpec"),
    ("PodTemplateSpec", "metadata", "ObjectMeta"),
    ("PodTemplateSpec", "spec", "PodSpec"),
    ("PodSpec", "containers", "Container"),
    ("PodSpec", "initContainers", "Container"),
    ("PodSpec", "ephemeralContainers", "EphemeralContainer"),
    ("Service", "spec", "ServiceSpec"),
    ("Service", "status", "ServiceStatus"),
    ("Node", "spec", "NodeSpec"),
    ("Node", "status", "NodeStatus"),
    ("Namespace", "status", "NamespaceStatus"),
    (
        "PersistentVolumeClaim",
        "status",
        "PersistentVolumeClaimStatus",
    ),
    (
        "HorizontalPodAutoscaler",
        "status",
        "HorizontalPodAutoscalerStatus",
    ),
    (
        "MutatingWebhookConfiguration",
        "webhooks",
        "MutatingWebhook",
    ),
    (
        "ValidatingWebhookConfiguration",
        "webhooks",
        "ValidatingWebhook",
    ),
    ("PodDisruptionBudget", "status", "PodDisruptionBudgetStatus"),
    ("CSINode", "spec", "CSINodeSpec"),
    ("FlowSchema", "status", "FlowSchemaStatus"),
    (
        "PriorityLevelConfiguration",
        "status",
        "PriorityLevelConfigurationStatus",
    ),
    ("APIService", "status", "APIServiceStatus"),
];

/// What the schema says about one node of the tree being merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Schema {
    /// A mapping of a known type, whose fields may lead to merged lists.
    Object(&'static str),
    /// A list merged by these keys (none: a set of scalars), its elements described so.
    MergedList {
        keys: Vec<String>,
        elem: Option<Box<Schema>>,
    },
    /// A node of a kustomization's own schema (`openapi: {path: ...}`).
    Custom(super::custom_schema::At),
}

/// The schema of a whole object, when the build's schema knows its kind (a kustomization's
/// own schema, when one is set, replaces the built-in one).
pub(crate) fn for_object(api_version: &str, kind: &str) -> Option<Schema> {
    if super::custom_schema::is_active() {
        return super::custom_schema::for_object(api_version, kind);
    }
    ROOTS
        .iter()
        .find(|(versions, k, _)| *k == kind && versions.contains(&api_version))
        .map(|(_, _, ty)| Schema::Object(ty))
}

/// The schema of `field` inside a node described by `parent`.
pub(crate) fn field(parent: Option<&Schema>, field: &str) -> Option<Schema> {
    if let Some(Schema::Custom(at)) = parent {
        return at.field(field);
    }
    let Some(Schema::Object(ty)) = parent else {
        return None;
    };
    let elem = EDGES
        .iter()
        .find(|(t, f, _)| t == ty && *f == field)
        .map(|(_, _, to)| *to);
    if let Some(keys) = merged_lists().get(&format!("{ty}.{field}")) {
        return Some(Schema::MergedList {
            keys: keys.clone(),
            elem: elem.map(|t| Box::new(Schema::Object(t))),
        });
    }
    if field == "metadata" && ROOTS.iter().any(|(_, _, t)| t == ty) {
        return Some(Schema::Object("ObjectMeta"));
    }
    elem.map(Schema::Object)
}

/// The schema of the elements of a merged list.
pub(crate) fn elements(list: Option<&Schema>) -> Option<Schema> {
    match list {
        Some(Schema::MergedList { elem: Some(e), .. }) => Some((**e).clone()),
        _ => None,
    }
}

/// `Type.field` -> merge keys, for every list whose patch strategy includes `merge`.
fn merged_lists() -> &'static HashMap<String, Vec<String>> {
    static TABLE: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    TABLE.get_or_init(|| parse_table(MERGE_KEYS_JSON))
}

/// Rows are `[Type.field, patchMergeKey, patchStrategy, listType, listMapKeys]`.
fn parse_table(json: &str) -> HashMap<String, Vec<String>> {
    let rows: Vec<serde_json::Value> = serde_json::from_str(json).unwrap_or_default();
    let mut table = HashMap::new();
    for row in rows {
        let Some(cols) = row.as_array() else { continue };
        let Some(name) = cols.first().and_then(serde_json::Value::as_str) else {
            continue;
        };
        let strategy = cols
            .get(2)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        if !strategy.split(',').any(|s| s == "merge") || NOT_IN_KUSTOMIZE_SCHEMA.contains(&name) {
            continue;
        }
        let map_keys: Vec<String> = cols
            .get(4)
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let keys = if map_keys.is_empty() {
            cols.get(1)
                .and_then(serde_json::Value::as_str)
                .map(|k| vec![k.to_string()])
                .unwrap_or_default()
        } else {
            map_keys
        };
        table.insert(name.to_string(), keys);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(api_version: &str, kind: &str, fields: &[&str]) -> Option<Schema> {
        let mut s = for_object(api_version, kind);
        for f in fields {
            s = match s {
                Some(Schema::MergedList { .. }) => elements(s.as_ref()),
                other => other,
            };
            s = field(s.as_ref(), f);
        }
        s
    }

    fn keys(s: Option<Schema>) -> Option<Vec<String>> {
        match s {
            Some(Schema::MergedList { keys, .. }) => Some(keys),
            _ => None,
        }
    }

    #[test]
    fn the_embedded_table_parses() {
        let t = merged_lists();
        assert!(t.len() > 40, "{}", t.len());
        assert_eq!(t["PodSpec.containers"], vec!["name"]);
        assert_eq!(t["Container.ports"], vec!["containerPort", "protocol"]);
        assert_eq!(t["ObjectMeta.finalizers"], Vec::<String>::new());
        assert!(!t.contains_key("PodSpec.schedulingGates"));
        assert!(!t.contains_key("DeploymentSpec.strategy"));
    }

    #[test]
    fn paths_reach_the_merge_keys() {
        type Case<'a> = (&'a str, &'a str, &'a [&'a str], Option<&'a [&'a str]>);
        let cases: &[Case] = &[
            (
                "apps/v1",
                "Deployment",
                &["spec", "template", "spec", "containers"],
                Some(&["name"]),
            ),
            (
                "apps/v1",
                "Deployment",
                &["spec", "template", "spec", "containers", "env"],
                Some(&["name"]),
            ),
            (
                "apps/v1",
                "StatefulSet",
                &["spec", "template", "spec", "initContainers", "ports"],
                Some(&["containerPort", "protocol"]),
            ),
            (
                "batch/v1",
                "CronJob",
                &["spec", "jobTemplate", "spec", "template", "spec", "volumes"],
                Some(&["name"]),
            ),
            ("v1", "Pod", &["spec", "containers"], Some(&["name"])),
            (
                "v1",
                "Service",
                &["spec", "ports"],
                Some(&["port", "protocol"]),
            ),
            ("v1", "ConfigMap", &["metadata", "finalizers"], Some(&[])),
            (
                "apps/v1",
                "Deployment",
                &["spec", "template", "metadata", "finalizers"],
                Some(&[]),
            ),
            (
                "apps/v1",
                "Deployment",
                &["spec", "template", "spec", "schedulingGates"],
                None,
            ),
            (
                "apps/v1",
                "Deployment",
                &["spec", "template", "spec", "containers", "args"],
                None,
            ),
            (
                "apps/v1beta2",
                "Deployment",
                &["spec", "template", "spec", "containers"],
                None,
            ),
            ("example.com/v1", "Foo", &["metadata", "finalizers"], None),
            (
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration",
                &["webhooks"],
                Some(&["name"]),
            ),
        ];
        for (api, kind, fields, want) in cases {
            let got = keys(path(api, kind, fields));
            let want = want.map(|w| w.iter().map(|s| (*s).to_string()).collect::<Vec<_>>());
            assert_eq!(got, want, "{api} {kind} {fields:?}");
        }
    }
}
