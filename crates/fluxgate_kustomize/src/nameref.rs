//! Name references: after prefixes, suffixes and hash suffixes renamed objects, every field
//! that names another object of the build (a pod's ConfigMap volume, a RoleBinding's roleRef,
//! an HPA's target) is rewritten to the new name, as kustomize's nameReference table does.

use std::sync::LazyLock;

use fluxgate_yaml::Node;

use crate::fieldspec::FieldSpec;
use crate::resource::{ResId, Resource};

/// Kinds with a pod template, and where the pod spec sits in each.
const POD_SPECS: &[(&str, &str)] = &[
    ("Pod", "spec"),
    ("Deployment", "spec/template/spec"),
    ("ReplicaSet", "spec/template/spec"),
    ("DaemonSet", "spec/template/spec"),
    ("StatefulSet", "spec/template/spec"),
    ("Job", "spec/template/spec"),
    ("ReplicationController", "spec/template/spec"),
    ("CronJob", "spec/jobTemplate/spec/template/spec"),
];

const CONFIGMAP_IN_POD: &[&str] = &[
    "volumes/configMap/name",
    "volumes/projected/sources/configMap/name",
    "containers/env/valueFrom/configMapKeyRef/name",
    "initContainers/env/valueFrom/configMapKeyRef/name",
    "ephemeralContainers/env/valueFrom/configMapKeyRef/name",
    "containers/envFrom/configMapRef/name",
    "initContainers/envFrom/configMapRef/name",
    "ephemeralContainers/envFrom/configMapRef/name",
];

const SECRET_IN_POD: &[&str] = &[
    "volumes/secret/secretName",
    "volumes/projected/sources/secret/name",
    "volumes/csi/nodePublishSecretRef/name",
    "volumes/cephfs/secretRef/name",
    "volumes/rbd/secretRef/name",
    "volumes/azureFile/secretName",
    "volumes/flexVolume/secretRef/name",
    "volumes/iscsi/secretRef/name",
    "volumes/scaleIO/secretRef/name",
    "volumes/storageos/secretRef/name",
    "containers/env/valueFrom/secretKeyRef/name",
    "initContainers/env/valueFrom/secretKeyRef/name",
    "ephemeralContainers/env/valueFrom/secretKeyRef/name",
    "containers/envFrom/secretRef/name",
    "initContainers/envFrom/secretRef/name",
    "ephemeralContainers/envFrom/secretRef/name",
    "imagePullSecrets/name",
];

/// One row: objects of `target` kind are named at `spec` of referrers.
struct Rule {
    target: String,
    spec: FieldSpec,
}

fn rules() -> Vec<Rule> {
    let mut out = Vec::new();
    let mut add = |target: &str, group: &str, kind: &str, path: &str| {
        out.push(Rule {
            target: target.to_string(),
            spec: FieldSpec::new(group, kind, path, false),
        });
    };
    for (kind, base) in POD_SPECS {
        for p in CONFIGMAP_IN_POD {
            add("ConfigMap", "", kind, &format!("{base}/{p}"));
        }
        for p in SECRET_IN_POD {
            add("Secret", "", kind, &format!("{base}/{p}"));
        }
        add(
            "ServiceAccount",
            "",
            kind,
            &format!("{base}/serviceAccountName"),
        );
        add(
            "ServiceAccount",
            "",
            kind,
            &format!("{base}/serviceAccount"),
        );
        add(
            "PersistentVolumeClaim",
            "",
            kind,
            &format!("{base}/volumes/persistentVolumeClaim/claimName"),
        );
        add(
            "PriorityClass",
            "",
            kind,
            &format!("{base}/priorityClassName"),
        );
        add(
            "RuntimeClass",
            "",
            kind,
            &format!("{base}/runtimeClassName"),
        );
    }
    for kind in [
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "ReplicationController",
    ] {
        add(
            kind,
            "",
            "HorizontalPodAutoscaler",
            "spec/scaleTargetRef/name",
        );
    }
    add("ServiceAccount", "", "RoleBinding", "subjects/name");
    add("ServiceAccount", "", "ClusterRoleBinding", "subjects/name");
    add("Role", "", "RoleBinding", "roleRef/name");
    add("ClusterRole", "", "RoleBinding", "roleRef/name");
    add("ClusterRole", "", "ClusterRoleBinding", "roleRef/name");
    add("Secret", "", "ServiceAccount", "secrets/name");
    add("Secret", "", "ServiceAccount", "imagePullSecrets/name");
    add("Secret", "", "Ingress", "spec/tls/secretName");
    add("Secret", "", "StorageClass", "parameters/secretName");
    add(
        "Secret",
        "",
        "PersistentVolume",
        "spec/csi/nodePublishSecretRef/name",
    );
    add(
        "Secret",
        "",
        "PersistentVolume",
        "spec/csi/controllerPublishSecretRef/name",
    );
    add(
        "Secret",
        "",
        "PersistentVolume",
        "spec/csi/nodeStageSecretRef/name",
    );
    add(
        "Secret",
        "",
        "PersistentVolume",
        "spec/csi/controllerExpandSecretRef/name",
    );
    add(
        "Service",
        "",
        "Ingress",
        "spec/rules/http/paths/backend/serviceName",
    );
    add(
        "Service",
        "",
        "Ingress",
        "spec/rules/http/paths/backend/service/name",
    );
    add("Service", "", "Ingress", "spec/backend/serviceName");
    add("Service", "", "Ingress", "spec/defaultBackend/service/name");
    add("Service", "apps", "StatefulSet", "spec/serviceName");
    add("Service", "", "APIService", "spec/service/name");
    add(
        "Service",
        "",
        "ValidatingWebhookConfiguration",
        "webhooks/clientConfig/service",
    );
    add(
        "Service",
        "",
        "MutatingWebhookConfiguration",
        "webhooks/clientConfig/service",
    );
    add(
        "PersistentVolume",
        "",
        "PersistentVolumeClaim",
        "spec/volumeName",
    );
    add(
        "StorageClass",
        "",
        "PersistentVolume",
        "spec/storageClassName",
    );
    add(
        "StorageClass",
        "",
        "PersistentVolumeClaim",
        "spec/storageClassName",
    );
    add(
        "StorageClass",
        "apps",
        "StatefulSet",
        "spec/volumeClaimTemplates/spec/storageClassName",
    );
    add("IngressClass", "", "Ingress", "spec/ingressClassName");
    add("ConfigMap", "", "Node", "spec/configSource/configMap/name");
    add(
        "ValidatingAdmissionPolicy",
        "",
        "ValidatingAdmissionPolicyBinding",
        "spec/policyName",
    );
    add(
        "MutatingAdmissionPolicy",
        "",
        "MutatingAdmissionPolicyBinding",
        "spec/policyName",
    );
    for target in ["ConfigMap", "Secret"] {
        add(target, "", "Role", "rules/resourceNames");
        add(target, "", "ClusterRole", "rules/resourceNames");
    }
    out
}

/// Rewrites every reference in `resources` to the current names of renamed objects.
pub fn fix_references(resources: &mut [Resource], extra: &[(String, FieldSpec)]) {
    // The built-in rules are the same for every build; only a kustomization's configurations
    // add to them.
    static BUILT_IN: LazyLock<Vec<Rule>> = LazyLock::new(rules);
    let extra: Vec<Rule> = extra
        .iter()
        .map(|(target, spec)| Rule {
            target: target.clone(),
            spec: spec.clone(),
        })
        .collect();
    let rules: Vec<&Rule> = BUILT_IN.iter().chain(&extra).collect();
    // Candidates are read from a snapshot: kustomize resolves against the names as they are
    // after all renames, not as it rewrites.
    let snapshot: Vec<Entry> = resources
        .iter()
        .map(|r| {
            (
                r.id(),
                r.prev_ids.clone(),
                r.prefixes.clone(),
                r.suffixes.clone(),
            )
        })
        .collect();
    for r in resources.iter_mut() {
        let referrer = r.id();
        let (ref_prefixes, ref_suffixes) = (r.prefixes.clone(), r.suffixes.clone());
        for rule in rules.iter().filter(|x| x.spec.applies_to(&referrer)) {
            let is_subjects = rule.spec.path == "subjects/name";
            let is_role_ref = rule.spec.path == "roleRef/name";
            if is_subjects {
                fix_subjects(
                    &mut r.node,
                    &snapshot,
                    &referrer,
                    &ref_prefixes,
                    &ref_suffixes,
                );
                continue;
            }
            if rule.spec.path == "rules/resourceNames" {
                fix_rule_resource_names(
                    &mut r.node,
                    &snapshot,
                    &rule.target,
                    &referrer,
                    &ref_prefixes,
                    &ref_suffixes,
                );
                continue;
            }
            if is_role_ref && r.node.str_at(&["roleRef", "kind"]) != Some(rule.target.as_str()) {
                continue;
            }
            let loc = r.node.loc.clone();
            if rule.spec.path.ends_with("/service") {
                rule.spec.visit(&mut r.node, &loc, &mut |svc| {
                    fix_service_ref(svc, &snapshot, &referrer, &ref_prefixes, &ref_suffixes);
                });
                continue;
            }
            rule.spec.visit(&mut r.node, &loc, &mut |field| {
                let Some(old) = field.as_str() else { return };
                let found = select(
                    &snapshot,
                    &rule.target,
                    old,
                    &referrer,
                    &ref_prefixes,
                    &ref_suffixes,
                );
                if let Some(new) = found
                    && new != old
                {
                    let loc = field.loc.clone();
                    *field = Node::string(new, loc);
                }
            });
        }
    }
}

/// kustomize's previous ids of a resource: only those recorded. A resource no transformer
/// touched is never a candidate (its references are already right). Note that the namespace
/// transformer records an id for every resource, cluster-scoped ones included.
fn earlier_names_match(_cur: &ResId, prev: &[ResId], old: &str) -> bool {
    prev.iter().any(|p| p.name == old)
}

/// A resource as name references see it: current id, previous ids, prefixes, suffixes.
type Entry = (ResId, Vec<ResId>, Vec<String>, Vec<String>);
type Snapshot = [Entry];

fn select(
    snapshot: &Snapshot,
    target_kind: &str,
    old: &str,
    referrer: &ResId,
    ref_prefixes: &[String],
    ref_suffixes: &[String],
) -> Option<String> {
    let mut cands: Vec<&Entry> = snapshot
        .iter()
        .filter(|(cur, prev, _, _)| cur.kind == target_kind && earlier_names_match(cur, prev, old))
        .filter(|(cur, _, _, _)| {
            referrer.is_cluster_scoped()
                || cur.is_cluster_scoped()
                || cur.kind == "ServiceAccount"
                || referrer.ns_equals(cur)
        })
        .collect();
    if cands.len() > 1 {
        let same_affixes: Vec<_> = cands
            .iter()
            .copied()
            .filter(|(_, _, p, s)| {
                (p.is_empty() || p == ref_prefixes) && (s.is_empty() || s == ref_suffixes)
            })
            .collect();
        if same_affixes.len() == 1 {
            cands = same_affixes;
        } else {
            let exact: Vec<_> = cands
                .iter()
                .copied()
                .filter(|(_, _, p, s)| p == ref_prefixes && s == ref_suffixes)
                .collect();
            if !exact.is_empty() {
                cands = exact;
            }
        }
    }
    let first = cands.first()?;
    if cands.iter().all(|c| c.0.name == first.0.name) {
        Some(first.0.name.clone())
    } else {
        None
    }
}

/// `subjects` of (Cluster)RoleBindings: ServiceAccounts matched by earlier name and namespace
/// get their current name and namespace.
/// `rules[].resourceNames` of Roles: kustomize rewrites them whatever the rule's `resources`
/// (so a lease named like a generated ConfigMap is renamed too; kubectl does it).
fn fix_rule_resource_names(
    node: &mut Node,
    snapshot: &Snapshot,
    target: &str,
    referrer: &ResId,
    ref_prefixes: &[String],
    ref_suffixes: &[String],
) {
    let Some(rules) = node.get_mut("rules").and_then(Node::as_seq_mut) else {
        return;
    };
    for rule in rules {
        let Some(names) = rule.get_mut("resourceNames").and_then(Node::as_seq_mut) else {
            continue;
        };
        for n in names {
            let Some(old) = n.as_str() else { continue };
            if let Some(new) = select(snapshot, target, old, referrer, ref_prefixes, ref_suffixes) {
                let loc = n.loc.clone();
                *n = Node::string(new, loc);
            }
        }
    }
}

/// A `{name, namespace}` reference to a Service (webhooks, APIService): both follow the
/// Service's renames and namespace changes.
fn fix_service_ref(
    svc: &mut Node,
    snapshot: &Snapshot,
    referrer: &ResId,
    ref_prefixes: &[String],
    ref_suffixes: &[String],
) {
    let Some(name) = svc.str_at(&["name"]).map(str::to_string) else {
        return;
    };
    let ns = svc.str_at(&["namespace"]).unwrap_or("").to_string();
    let filtered: Vec<Entry> = snapshot
        .iter()
        .filter(|(cur, prev, _, _)| {
            let ids = prev.as_slice();
            cur.kind == "Service"
                && ids
                    .iter()
                    .any(|p| p.name == name && (ns.is_empty() || p.namespace == ns))
        })
        .cloned()
        .collect();
    // The referrer is cluster-scoped: any namespace goes.
    let _ = referrer;
    let cluster = ResId {
        group: "rbac.authorization.k8s.io".into(),
        version: "v1".into(),
        kind: "ClusterRole".into(),
        ..ResId::default()
    };
    let Some(new_name) = select(
        &filtered,
        "Service",
        &name,
        &cluster,
        ref_prefixes,
        ref_suffixes,
    ) else {
        return;
    };
    let Some(cur) = filtered.iter().map(|c| &c.0).find(|c| c.name == new_name) else {
        return;
    };
    let loc = svc.loc.clone();
    if let Some(m) = svc.as_map_mut() {
        if cur.name != name {
            let l = m.get("name").map_or(loc.clone(), |n| n.loc.clone());
            m.insert("name".into(), Node::string(cur.name.clone(), l));
        }
        if !cur.namespace.is_empty() && cur.namespace != ns {
            m.insert("namespace".into(), Node::string(cur.namespace.clone(), loc));
        }
    }
}

fn fix_subjects(
    node: &mut Node,
    snapshot: &Snapshot,
    referrer: &ResId,
    ref_prefixes: &[String],
    ref_suffixes: &[String],
) {
    let Some(subjects) = node.get_mut("subjects").and_then(Node::as_seq_mut) else {
        return;
    };
    for s in subjects {
        if s.str_at(&["kind"]) != Some("ServiceAccount") {
            continue;
        }
        let Some(name) = s.str_at(&["name"]).map(str::to_string) else {
            continue;
        };
        let ns = s.str_at(&["namespace"]).map(str::to_string);
        let filtered: Vec<Entry> = snapshot
            .iter()
            .filter(|(cur, prev, _, _)| {
                cur.kind == "ServiceAccount"
                    && prev.iter().any(|p| {
                        p.name == name
                            && ns.as_deref().is_none_or(|n| {
                                ResId {
                                    namespace: n.to_string(),
                                    ..ResId::default()
                                }
                                .ns_equals(p)
                            })
                    })
            })
            .cloned()
            .collect();
        let Some(new_name) = select(
            &filtered,
            "ServiceAccount",
            &name,
            referrer,
            ref_prefixes,
            ref_suffixes,
        ) else {
            continue;
        };
        let Some(cur) = filtered.iter().map(|c| &c.0).find(|c| c.name == new_name) else {
            continue;
        };
        let loc = s.loc.clone();
        if let Some(m) = s.as_map_mut() {
            if cur.name != name {
                let l = m.get("name").map_or(loc.clone(), |n| n.loc.clone());
                m.insert("name".into(), Node::string(cur.name.clone(), l));
            }
            if !cur.namespace.is_empty() && ns.as_deref() != Some(cur.namespace.as_str()) {
                m.insert("namespace".into(), Node::string(cur.namespace.clone(), loc));
            }
        }
    }
}
