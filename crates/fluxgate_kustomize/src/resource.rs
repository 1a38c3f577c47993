//! A resource in the build: the object, and what kustomize remembers about it (the ids it had
//! before renames, the prefixes and suffixes applied, whether it still needs a hash suffix).

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, Value};

/// Group, version, kind, name and namespace of an object, as kustomize's `ResId`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ResId {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

impl ResId {
    #[must_use]
    pub fn of(node: &Node) -> ResId {
        let api = node.str_at(&["apiVersion"]).unwrap_or("");
        let (group, version) = match api.rsplit_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api.to_string()),
        };
        ResId {
            group,
            version,
            kind: node.str_at(&["kind"]).unwrap_or("").to_string(),
            name: node.str_at(&["metadata", "name"]).unwrap_or("").to_string(),
            namespace: node
                .str_at(&["metadata", "namespace"])
                .unwrap_or("")
                .to_string(),
        }
    }

    #[must_use]
    pub fn is_cluster_scoped(&self) -> bool {
        is_cluster_scoped(&self.group, &self.version, &self.kind)
    }

    /// Namespaces compare with `""` and `"default"` as the same.
    #[must_use]
    pub fn ns_equals(&self, other: &ResId) -> bool {
        effective_ns(&self.namespace) == effective_ns(&other.namespace)
    }

    /// kustomize's `ResId.Equals`: the same gvk and name, namespaces equal.
    #[must_use]
    pub fn same_as(&self, other: &ResId) -> bool {
        self.group == other.group
            && self.version == other.version
            && self.kind == other.kind
            && self.name == other.name
            && self.ns_equals(other)
    }

    /// For messages: `Kind/name` or `Kind/namespace/name`.
    #[must_use]
    pub fn display(&self) -> String {
        if self.namespace.is_empty() {
            format!("{}/{}", self.kind, self.name)
        } else {
            format!("{}/{}/{}", self.kind, self.namespace, self.name)
        }
    }
}

fn effective_ns(ns: &str) -> &str {
    if ns.is_empty() { "default" } else { ns }
}

/// Whether kustomize treats objects of this group, version and kind as cluster-scoped: the
/// cluster-scoped types of the Kubernetes v1.21 schema kustomize v5.5.0 embeds, by exact
/// version (alpha versions are not in it). Anything else, newer kinds and custom resources
/// included, is namespaced for kustomize (checked with `kubectl kustomize`: a
/// `ValidatingAdmissionPolicy` or an `example.com/v1` `ClusterRole` gets the namespace).
#[must_use]
pub fn is_cluster_scoped(group: &str, version: &str, kind: &str) -> bool {
    const GA_BETA: &[&str] = &["v1", "v1beta1"];
    const BETA: &[&str] = &["v1beta1"];
    const V1: &[&str] = &["v1"];
    let table: &[(&str, &[&str], &[&str])] = &[
        (
            "",
            V1,
            &["ComponentStatus", "Namespace", "Node", "PersistentVolume"],
        ),
        (
            "admissionregistration.k8s.io",
            GA_BETA,
            &[
                "MutatingWebhookConfiguration",
                "ValidatingWebhookConfiguration",
            ],
        ),
        (
            "apiextensions.k8s.io",
            GA_BETA,
            &["CustomResourceDefinition"],
        ),
        ("apiregistration.k8s.io", GA_BETA, &["APIService"]),
        (
            "certificates.k8s.io",
            GA_BETA,
            &["CertificateSigningRequest"],
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            BETA,
            &["FlowSchema", "PriorityLevelConfiguration"],
        ),
        ("networking.k8s.io", GA_BETA, &["IngressClass"]),
        ("node.k8s.io", GA_BETA, &["RuntimeClass"]),
        ("policy", BETA, &["PodSecurityPolicy"]),
        (
            "rbac.authorization.k8s.io",
            GA_BETA,
            &["ClusterRole", "ClusterRoleBinding"],
        ),
        ("scheduling.k8s.io", GA_BETA, &["PriorityClass"]),
        (
            "storage.k8s.io",
            GA_BETA,
            &["CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"],
        ),
    ];
    table.iter().any(|(g, versions, kinds)| {
        *g == group && versions.contains(&version) && kinds.contains(&kind)
    })
}

/// How a generated object combines with an existing one of the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    Create,
    Merge,
    Replace,
}

/// One object of the build with kustomize's bookkeeping.
#[derive(Clone, Debug)]
pub struct Resource {
    pub node: Node,
    /// Ids before each rename or namespace change, oldest first (kustomize's previous ids).
    pub prev_ids: Vec<ResId>,
    pub prefixes: Vec<String>,
    pub suffixes: Vec<String>,
    /// Generated with a content hash still to append to the name.
    pub needs_hash: bool,
    /// Where a generated object's behavior was declared (for merge/replace errors).
    pub generated: bool,
    /// The values patches replaced, in the order the patches applied.
    pub overrides: Vec<Override>,
}

/// A value a patch replaced: the base value's place and the patch's, at one key path of the
/// object. A value patched twice (a base, an overlay, an overlay of that) has one override per
/// patch, so its history is base -> each patch in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// The key path in the object: dotted, `[i]` for list items, `\.` for a dot in a key.
    pub path: String,
    /// Where the value was before the patch.
    pub base: Location,
    /// Where the patch set it.
    pub patch: Location,
}

/// Every scalar of `node` by key path, with its place.
pub(crate) fn leaves(node: &Node) -> Vec<(String, Location)> {
    fn walk(n: &Node, path: &mut String, out: &mut Vec<(String, Location)>) {
        match &n.value {
            Value::Map(m) => {
                for (k, v) in m.iter() {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&k.replace('.', "\\."));
                    walk(v, path, out);
                    path.truncate(len);
                }
            }
            Value::Seq(items) => {
                for (i, v) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(v, path, out);
                    path.truncate(len);
                }
            }
            _ => out.push((path.clone(), n.loc.clone())),
        }
    }
    let mut out = Vec::new();
    walk(node, &mut String::new(), &mut out);
    out
}

/// The overrides between an object before a patch and after it: every scalar at the same key
/// path whose place changed (the patch wrote it). `metadata.name`/`namespace`, which a patch
/// only names to select its target, are not overrides.
pub(crate) fn overrides_between(before: &[(String, Location)], after: &Node) -> Vec<Override> {
    let old: std::collections::HashMap<&str, &Location> =
        before.iter().map(|(p, l)| (p.as_str(), l)).collect();
    leaves(after)
        .into_iter()
        .filter(|(p, _)| p != "metadata.name" && p != "metadata.namespace")
        .filter_map(|(path, loc)| {
            let base = *old.get(path.as_str())?;
            (*base != loc).then(|| Override {
                path,
                base: base.clone(),
                patch: loc,
            })
        })
        .collect()
}

impl Resource {
    #[must_use]
    pub fn new(node: Node) -> Resource {
        Resource {
            node,
            prev_ids: Vec::new(),
            prefixes: Vec::new(),
            suffixes: Vec::new(),
            needs_hash: false,
            generated: false,
            overrides: Vec::new(),
        }
    }

    #[must_use]
    pub fn id(&self) -> ResId {
        ResId::of(&self.node)
    }

    /// The original id: the first previous id, or the current one.
    #[must_use]
    pub fn org_id(&self) -> ResId {
        self.prev_ids.first().cloned().unwrap_or_else(|| self.id())
    }

    /// Every id this resource has had, the current one last.
    #[must_use]
    pub fn all_ids(&self) -> Vec<ResId> {
        let mut ids = self.prev_ids.clone();
        ids.push(self.id());
        ids
    }

    /// Whether `id` names this resource now or under a previous name.
    #[must_use]
    pub fn matches_any_id(&self, id: &ResId) -> bool {
        self.all_ids().iter().any(|x| x.same_as(id))
    }

    /// Records the current id before a rename or namespace change.
    pub fn remember_id(&mut self) {
        let id = self.id();
        self.prev_ids.push(id);
    }

    /// Sets `metadata.<key>` to a string, creating `metadata` when missing.
    pub fn set_meta(&mut self, key: &str, value: &str, loc: &Location) {
        set_meta(&mut self.node, key, value, loc);
    }
}

/// Sets `metadata.<key>` of an object to a string, creating `metadata` when missing.
pub fn set_meta(node: &mut Node, key: &str, value: &str, loc: &Location) {
    let Some(map) = node.as_map_mut() else {
        return;
    };
    let meta = map
        .entry("metadata".to_string())
        .or_insert_with(|| Node::map(loc.clone()));
    if !matches!(meta.value, Value::Map(_)) {
        *meta = Node::map(loc.clone());
    }
    if let Some(m) = meta.as_map_mut() {
        m.insert(key.to_string(), Node::string(value, loc.clone()));
    }
}

/// kustomize's legacy output order: kinds listed first, other kinds by group/version/kind,
/// webhook configurations last; ties by namespace and name.
pub fn legacy_sort(resources: &mut [Resource], first: &[String], last: &[String]) {
    #[allow(clippy::cast_possible_wrap)] // kind lists are a few dozen entries long
    let rank = |kind: &str| -> i64 {
        if let Some(i) = first.iter().position(|k| k == kind) {
            return i as i64 - first.len() as i64;
        }
        if let Some(i) = last.iter().position(|k| k == kind) {
            return 1 + i as i64;
        }
        0
    };
    let key = |r: &Resource| {
        let id = r.id();
        let gvk = format!(
            "{}_{}_{}",
            or_tilde(&id.group, "~G"),
            or_tilde(&id.version, "~V"),
            or_tilde(&id.kind, "~K")
        );
        // kustomize writes an unset namespace as `~X`, which sorts after every name.
        let ns = if id.namespace.is_empty() {
            "~X".to_string()
        } else {
            id.namespace.clone()
        };
        // kustomize compares two Namespace kinds backwards when one is the core group's, so
        // core Namespaces come first (highest version first), then the others in order.
        let gvk = if id.kind == "Namespace" && id.group.is_empty() {
            (0, std::cmp::Reverse(gvk), String::new())
        } else if id.kind == "Namespace" {
            (1, std::cmp::Reverse(String::new()), gvk)
        } else {
            (0, std::cmp::Reverse(String::new()), gvk)
        };
        (rank(&id.kind), gvk, ns, id.name)
    };
    resources.sort_by_cached_key(key);
}

fn or_tilde(s: &str, empty: &str) -> String {
    if s.is_empty() {
        empty.to_string()
    } else {
        s.to_string()
    }
}

/// kustomize's default `orderFirst`.
pub const ORDER_FIRST: &[&str] = &[
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];

/// kustomize's default `orderLast`.
pub const ORDER_LAST: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_stream};

    fn res(text: &str) -> Resource {
        Resource::new(parse_stream("t.yaml", text, Schema::Kube).docs.remove(0))
    }

    #[test]
    fn ids_split_group_and_version() {
        let r = res("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n");
        assert_eq!(r.id().group, "apps");
        assert_eq!(r.id().version, "v1");
        assert!(r.id().ns_equals(&ResId {
            namespace: "default".into(),
            ..ResId::default()
        }));
    }

    #[test]
    fn legacy_order_puts_namespaces_first_and_webhooks_last() {
        let mut v = vec![
            res("kind: ValidatingWebhookConfiguration\nmetadata: {name: w}\n"),
            res("kind: Service\nmetadata: {name: z}\n"),
            res("kind: Service\nmetadata: {name: b}\n"),
            res("kind: Namespace\nmetadata: {name: n}\n"),
            res("kind: Foo\nmetadata: {name: f}\n"),
        ];
        let first: Vec<String> = ORDER_FIRST.iter().map(|s| (*s).to_string()).collect();
        let last: Vec<String> = ORDER_LAST.iter().map(|s| (*s).to_string()).collect();
        legacy_sort(&mut v, &first, &last);
        let names: Vec<String> = v.iter().map(|r| r.id().name).collect();
        assert_eq!(names, ["n", "b", "z", "f", "w"]);
    }
}
