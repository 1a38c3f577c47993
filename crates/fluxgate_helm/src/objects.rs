//! The host objects of Helm's render values: `.Files` (with `Get`, `GetBytes`, `Glob`,
//! `Lines`, `AsConfig`, `AsSecrets`), `.Capabilities` (`KubeVersion`, `APIVersions.Has`,
//! `HelmVersion`) and `.Chart` (Chart.yaml's metadata under Go's field names).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use base64::Engine as _;
use fluxgate_gotemplate::{FuncError, Object, Value};

use crate::chart::utf8;
use crate::convert;
use crate::helmignore::glob_match;

/// A chart's non-template files (Go type `chart.Files`, a `map[string][]byte`).
#[derive(Debug, Clone)]
pub struct Files(pub Rc<BTreeMap<String, Arc<[u8]>>>);

impl Files {
    fn text(&self, name: &str) -> String {
        self.0
            .get(name)
            .map(|b| utf8(b.to_vec()))
            .unwrap_or_default()
    }
}

impl Object for Files {
    fn type_name(&self) -> String {
        "files.Files".into()
    }
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn has_method(&self, name: &str) -> bool {
        matches!(
            name,
            "Get" | "GetBytes" | "Glob" | "Lines" | "AsConfig" | "AsSecrets"
        )
    }
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, FuncError>> {
        let arg = |i: usize| match args.get(i) {
            Some(Value::String(s)) => Ok(String::from(&**s)),
            Some(other) => Err(format!(
                "wrong type for value; expected string; got {}",
                other.type_name()
            )
            .into()),
            None => Err(format!("wrong number of args for {name}: want 1 got 0").into()),
        };
        let want = usize::from(!matches!(name, "AsConfig" | "AsSecrets"));
        if args.len() != want {
            return Some(Err(format!(
                "wrong number of args for {name}: want {want} got {}",
                args.len()
            )
            .into()));
        }
        Some(match name {
            "Get" => arg(0).map(|p| Value::from(self.text(&p))),
            "GetBytes" => arg(0).map(|p| {
                Value::Bytes(
                    self.0
                        .get(&p)
                        .map_or_else(|| Rc::from(&[][..]), |b| Rc::from(&b[..])),
                )
            }),
            "Lines" => arg(0).map(|p| {
                let t = self.text(&p);
                if t.is_empty() {
                    return Value::list(Vec::new());
                }
                let t = t.strip_suffix('\n').unwrap_or(&t).to_string();
                Value::list(t.split('\n').map(Value::str).collect())
            }),
            "Glob" => arg(0).map(|pat| {
                let m: BTreeMap<String, Arc<[u8]>> = self
                    .0
                    .iter()
                    .filter(|(k, _)| glob_match(&pat, k, true))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Value::Object(Rc::new(Files(Rc::new(m))))
            }),
            "AsConfig" => Ok(Value::from(self.as_map(|b| Value::from(utf8(b.to_vec()))))),
            "AsSecrets" => Ok(Value::from(self.as_map(|b| {
                Value::from(base64::engine::general_purpose::STANDARD.encode(b))
            }))),
            _ => return None,
        })
    }
    fn display(&self) -> String {
        let m: BTreeMap<String, Value> = self
            .0
            .iter()
            .map(|(k, v)| (k.clone(), Value::Bytes(Rc::from(&v[..]))))
            .collect();
        fluxgate_gotemplate::format::sprint_value(&Value::map(m))
    }
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(
            self.0
                .iter()
                .map(|(k, v)| (Value::str(k), Value::Bytes(Rc::from(&v[..]))))
                .collect(),
        )
    }
}

impl Files {
    /// `AsConfig`/`AsSecrets`: YAML of base name -> content.
    fn as_map(&self, f: impl Fn(&[u8]) -> Value) -> String {
        if self.0.is_empty() {
            return String::new();
        }
        let m: BTreeMap<String, Value> = self
            .0
            .iter()
            .map(|(k, v)| (crate::sprig_path_base(k), f(v)))
            .collect();
        convert::to_yaml(&Value::map(m))
    }
}

/// `.Capabilities`.
#[derive(Debug)]
pub struct Capabilities {
    pub kube: Rc<KubeVersion>,
    pub api: Rc<ApiVersions>,
}

impl Object for Capabilities {
    fn type_name(&self) -> String {
        "*common.Capabilities".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "KubeVersion" => Value::Object(self.kube.clone()),
            "APIVersions" => Value::Object(self.api.clone()),
            "HelmVersion" => Value::map(BTreeMap::from([
                ("Version".to_string(), Value::str(crate::HELM_VERSION)),
                ("GitCommit".to_string(), Value::str("")),
                ("GitTreeState".to_string(), Value::str("")),
                ("GoVersion".to_string(), Value::str("")),
                ("KubeClientVersion".to_string(), Value::str("")),
            ])),
            _ => return None,
        })
    }
    fn call(&self, _: &str, _: &[Value]) -> Option<Result<Value, FuncError>> {
        None
    }
    fn has_method(&self, _: &str) -> bool {
        false
    }
    fn display(&self) -> String {
        "&{...}".into()
    }
}

/// `.Capabilities.KubeVersion`.
#[derive(Debug)]
pub struct KubeVersion {
    pub version: String,
    pub major: String,
    pub minor: String,
}

impl KubeVersion {
    /// Helm's `ParseKubeVersion`: `1.30`, `v1.30.2` -> `v1.30.2`.
    pub fn parse(s: &str) -> Option<KubeVersion> {
        let v = crate::sprig::semver::Version::parse(s)?;
        Some(KubeVersion {
            version: format!("v{}", v.string()),
            major: v.major.to_string(),
            minor: v.minor.to_string(),
        })
    }
}

impl Object for KubeVersion {
    fn type_name(&self) -> String {
        "*common.KubeVersion".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "Version" | "GitVersion" | "String" => Value::str(&self.version),
            "Major" => Value::str(&self.major),
            "Minor" => Value::str(&self.minor),
            _ => return None,
        })
    }
    fn call(&self, _: &str, _: &[Value]) -> Option<Result<Value, FuncError>> {
        None
    }
    fn has_method(&self, _: &str) -> bool {
        false
    }
    fn display(&self) -> String {
        self.version.clone()
    }
}

/// `.Capabilities.APIVersions`: group/versions and group/version/Kind entries.
#[derive(Debug)]
pub struct ApiVersions(pub Vec<String>);

impl Object for ApiVersions {
    fn type_name(&self) -> String {
        "common.VersionSet".into()
    }
    fn field(&self, _: &str) -> Option<Value> {
        None
    }
    fn has_method(&self, name: &str) -> bool {
        name == "Has"
    }
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, FuncError>> {
        if name != "Has" {
            return None;
        }
        Some(match args {
            [Value::String(s)] => Ok(Value::Bool(self.0.iter().any(|v| v == &**s))),
            [other] => Err(format!(
                "wrong type for value; expected string; got {}",
                other.type_name()
            )
            .into()),
            _ => Err(format!("wrong number of args for Has: want 1 got {}", args.len()).into()),
        })
    }
    fn display(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(
            self.0
                .iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i64::try_from(i).unwrap_or(0)), Value::str(v)))
                .collect(),
        )
    }
}

/// The API versions a cluster without CRDs serves (client-go's scheme, as Helm's default
/// `VersionSet` lists it): each group/version, and each group/version/Kind.
pub const BUILTIN_KINDS: &[(&str, &[&str])] = &[
    (
        "v1",
        &[
            "Binding",
            "ComponentStatus",
            "ConfigMap",
            "Endpoints",
            "Event",
            "LimitRange",
            "Namespace",
            "Node",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "Pod",
            "PodTemplate",
            "ReplicationController",
            "ResourceQuota",
            "Secret",
            "Service",
            "ServiceAccount",
        ],
    ),
    (
        "admissionregistration.k8s.io/v1",
        &[
            "MutatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "ValidatingWebhookConfiguration",
        ],
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        &[
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ],
    ),
    (
        "apps/v1",
        &[
            "ControllerRevision",
            "DaemonSet",
            "Deployment",
            "ReplicaSet",
            "StatefulSet",
        ],
    ),
    (
        "authentication.k8s.io/v1",
        &["SelfSubjectReview", "TokenReview"],
    ),
    (
        "authorization.k8s.io/v1",
        &[
            "LocalSubjectAccessReview",
            "SelfSubjectAccessReview",
            "SelfSubjectRulesReview",
            "SubjectAccessReview",
        ],
    ),
    ("autoscaling/v1", &["HorizontalPodAutoscaler", "Scale"]),
    ("autoscaling/v2", &["HorizontalPodAutoscaler"]),
    ("batch/v1", &["CronJob", "Job"]),
    ("certificates.k8s.io/v1", &["CertificateSigningRequest"]),
    ("coordination.k8s.io/v1", &["Lease"]),
    ("discovery.k8s.io/v1", &["EndpointSlice"]),
    ("events.k8s.io/v1", &["Event"]),
    (
        "flowcontrol.apiserver.k8s.io/v1",
        &["FlowSchema", "PriorityLevelConfiguration"],
    ),
    (
        "networking.k8s.io/v1",
        &[
            "IPAddress",
            "Ingress",
            "IngressClass",
            "NetworkPolicy",
            "ServiceCIDR",
        ],
    ),
    ("node.k8s.io/v1", &["RuntimeClass"]),
    ("policy/v1", &["Eviction", "PodDisruptionBudget"]),
    (
        "rbac.authorization.k8s.io/v1",
        &["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"],
    ),
    (
        "resource.k8s.io/v1",
        &[
            "DeviceClass",
            "ResourceClaim",
            "ResourceClaimTemplate",
            "ResourceSlice",
        ],
    ),
    ("scheduling.k8s.io/v1", &["PriorityClass"]),
    (
        "storage.k8s.io/v1",
        &[
            "CSIDriver",
            "CSINode",
            "CSIStorageCapacity",
            "StorageClass",
            "VolumeAttachment",
            "VolumeAttributesClass",
        ],
    ),
];

/// Helm's default API versions plus `extra` (`--api-versions`).
pub fn api_versions(extra: &[String]) -> ApiVersions {
    let mut v = Vec::new();
    // helm v4.3.2's default set holds group/versions only (`apps/v1/Deployment` is false).
    for (gv, _) in BUILTIN_KINDS {
        v.push((*gv).to_string());
    }
    v.extend(extra.iter().cloned());
    ApiVersions(v)
}

/// `.Chart`: Chart.yaml's fields under Go's names.
#[derive(Debug)]
pub struct ChartMeta(pub BTreeMap<&'static str, Value>);

/// Chart.yaml keys and the Go field each becomes, with the zero value of its type.
pub const META_FIELDS: &[(&str, &str)] = &[
    ("name", "Name"),
    ("home", "Home"),
    ("sources", "Sources"),
    ("version", "Version"),
    ("description", "Description"),
    ("keywords", "Keywords"),
    ("maintainers", "Maintainers"),
    ("icon", "Icon"),
    ("apiVersion", "APIVersion"),
    ("condition", "Condition"),
    ("tags", "Tags"),
    ("appVersion", "AppVersion"),
    ("deprecated", "Deprecated"),
    ("annotations", "Annotations"),
    ("kubeVersion", "KubeVersion"),
    ("dependencies", "Dependencies"),
    ("type", "Type"),
];

impl Object for ChartMeta {
    fn type_name(&self) -> String {
        "*chart.Metadata".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        self.0.get(name).cloned()
    }
    fn call(&self, _: &str, _: &[Value]) -> Option<Result<Value, FuncError>> {
        None
    }
    fn has_method(&self, _: &str) -> bool {
        false
    }
    fn display(&self) -> String {
        format!(
            "&{{{}}}",
            self.0
                .values()
                .map(fluxgate_gotemplate::format::sprint_value)
                .collect::<Vec<_>>()
                .join(" ")
        )
    }
}
