//! Layer L0 of fluxgate (SPEC §7): admission policies evaluated offline over rendered
//! objects, as the cluster would evaluate them on CREATE.
//!
//! - Kubernetes `ValidatingAdmissionPolicy` with its `ValidatingAdmissionPolicyBinding`s
//!   (`matchResources`, `paramRef` to objects in the same render, `validationActions`) and
//!   Kyverno `ValidatingPolicy`: CEL, see [`vap`] and [`cel`].
//! - Kyverno `ClusterPolicy`/`Policy` validate rules: `match`/`exclude`, `preconditions`,
//!   `pattern`/`anyPattern` with anchors and wildcards, `deny`, `foreach` and `{{ }}`
//!   JMESPath variables, see [`kyverno`]. Rules that need a cluster (API calls in `context`,
//!   image verification, mutate, generate) are listed as not evaluated offline.
//! - Both get Kyverno's auto-generated rules for pod controllers ([`autogen`]).
//!
//! [`check`] turns the outcomes into findings with rule `policy:<name>/<rule>` at the
//! offending field (each [`Outcome`] carries its path; [`field_location`] resolves it on the
//! rendered node); [`kyverno_test`] runs a Kyverno CLI `kyverno-test.yaml`.
//!
//! ```
//! use fluxgate_diagnostics::Location;
//! use fluxgate_policy::{PolicySet, Resource, Verdict};
//! let policy: serde_json::Value = serde_json::from_str(r#"{
//!   "apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
//!   "metadata": {"name": "no-latest"},
//!   "spec": {"validationActions": ["Deny"],
//!     "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
//!       "operations": ["CREATE"], "resources": ["pods"]}]},
//!     "validations": [{"expression": "object.spec.containers.all(c, !c.image.endsWith(':latest'))",
//!       "message": "no latest"}]}}"#).unwrap();
//! let set = PolicySet::from_documents(vec![(policy, Location::file("p.yaml"))]);
//! let pod: serde_json::Value = serde_json::from_str(r#"{"apiVersion": "v1", "kind": "Pod",
//!   "metadata": {"name": "web"}, "spec": {"containers": [{"name": "a", "image": "nginx:latest"}]}}"#).unwrap();
//! let out = set.evaluate(&[Resource::new(pod, Location::file("pod.yaml"))]);
//! assert!(matches!(&out[0].verdict, Verdict::Fail(m) if m == "no latest"));
//! ```

pub mod autogen;
pub mod cel;
mod check;
mod error;
pub mod kyverno;
mod load;
pub mod resource;
pub mod test_runner;
pub mod vap;

pub use check::{L0Report, check, field_location, policy_rule};
pub use error::Error;
pub use load::{load_paths, policy_documents};
pub use resource::Resource;
pub use test_runner::{TestReport, kyverno_test};

use std::collections::HashMap;

use fluxgate_diagnostics::{Diagnostic, Location, Severity};
use kube_cel::cel::Context;
use rayon::prelude::*;
use serde_json::Value as Json;

use crate::kyverno::KyvernoPolicy;
use crate::resource::Namespaces;
use crate::vap::{Binding, CelKind, CelPolicy};

/// What a policy's failure does in the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The request is denied (`Deny`, `Enforce`): an error.
    Deny,
    /// A warning to the client (`Warn`).
    Warn,
    /// Recorded only (`Audit`): a warning, since nothing stops it in the cluster.
    Audit,
}

impl Action {
    fn from_cel(actions: &[String]) -> Action {
        if actions.iter().any(|a| a == "Deny") {
            Action::Deny
        } else if actions.iter().any(|a| a == "Warn") {
            Action::Warn
        } else if actions.iter().any(|a| a == "Audit") {
            Action::Audit
        } else {
            // A VAP binding must name an action; a ValidatingPolicy defaults to Deny.
            Action::Deny
        }
    }

    #[must_use]
    pub fn severity(self) -> Severity {
        match self {
            Action::Deny => Severity::Error,
            Action::Warn | Action::Audit => Severity::Warning,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Action::Deny => "Deny",
            Action::Warn => "Warn",
            Action::Audit => "Audit",
        }
    }
}

/// The result of one rule of one policy for one object.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Pass,
    /// The policy's message.
    Fail(String),
    /// The rule applies to the object's kind but a precondition, match condition or
    /// conditional anchor excluded it.
    Skip(String),
    /// The rule could not be evaluated (an expression error, a missing variable).
    Error(String),
}

/// A field of an object: mapping keys and list indices (as decimal text), from the root.
pub type FieldPath = Vec<String>;

/// One rule's verdict on one object.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub policy: String,
    pub rule: String,
    /// Index into the resources passed to [`PolicySet::evaluate`].
    pub resource: usize,
    pub verdict: Verdict,
    pub action: Action,
    /// For a failure, the field of the resource it is about (where the pattern mismatched,
    /// the foreach element, the field the failing expression reads); empty when nothing
    /// better than the object is known.
    pub path: FieldPath,
}

/// The part of `path` that exists in `value`: the deepest key or list item it reaches.
#[must_use]
pub fn existing_prefix(value: &Json, path: &[String]) -> usize {
    let mut v = value;
    for (depth, seg) in path.iter().enumerate() {
        let next = match v {
            Json::Object(m) => m.get(seg),
            Json::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        match next {
            Some(n) => v = n,
            None => return depth,
        }
    }
    path.len()
}

/// Of the candidate fields, the one that reaches deepest into `value`, cut to the part that
/// exists (the first of equals); empty when none reaches into it.
#[must_use]
pub fn deepest(value: &Json, candidates: &[FieldPath]) -> FieldPath {
    let mut best: &[String] = &[];
    for c in candidates {
        let n = existing_prefix(value, c);
        if n > best.len() {
            best = &c[..n];
        }
    }
    best.to_vec()
}

/// A path inside a controller's Pod template, in the controller's own fields.
pub(crate) fn in_template(controller_kind: &str, pod_path: FieldPath) -> FieldPath {
    if pod_path.is_empty() {
        return pod_path;
    }
    let prefix: &[&str] = if controller_kind == "CronJob" {
        &["spec", "jobTemplate", "spec", "template"]
    } else {
        &["spec", "template"]
    };
    prefix
        .iter()
        .map(|s| (*s).to_string())
        .chain(pod_path)
        .collect()
}

/// A rule that was not evaluated because it needs the cluster.
#[derive(Clone, Debug)]
pub struct Offline {
    pub policy: String,
    pub rule: String,
    pub reason: String,
    pub loc: Location,
}

/// Per kind: the CEL policies and the Kyverno policies (indices) that can select it.
type Candidates = (Vec<usize>, Vec<usize>);

/// Every policy of one run: the CEL kinds, the bindings, the Kyverno kinds, and what could
/// not be loaded or is not evaluated offline.
#[derive(Default)]
pub struct PolicySet {
    pub cel: Vec<CelPolicy>,
    pub bindings: Vec<Binding>,
    pub kyverno: Vec<KyvernoPolicy>,
    pub offline: Vec<Offline>,
    /// Problems found while loading (a policy kind fluxgate cannot evaluate offline).
    pub problems: Vec<Diagnostic>,
}

/// Whether a document is a policy kind L0 reads.
#[must_use]
pub fn is_policy(doc: &Json) -> bool {
    is_policy_kind(
        doc.get("apiVersion").and_then(Json::as_str).unwrap_or(""),
        doc.get("kind").and_then(Json::as_str).unwrap_or(""),
    )
}

/// Whether `apiVersion`/`kind` name a policy kind L0 reads.
#[must_use]
pub fn is_policy_kind(api: &str, kind: &str) -> bool {
    match kind {
        "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding" => {
            api.starts_with("admissionregistration.k8s.io/")
        }
        "ClusterPolicy" | "Policy" => api.starts_with("kyverno.io/"),
        "ValidatingPolicy" | "NamespacedValidatingPolicy" => {
            api.starts_with("policies.kyverno.io/")
        }
        _ => false,
    }
}

impl PolicySet {
    /// Reads policies from documents; documents of other kinds are ignored.
    #[must_use]
    pub fn from_documents(docs: Vec<(Json, Location)>) -> PolicySet {
        let mut set = PolicySet::default();
        for (doc, loc) in docs {
            set.add(&doc, loc);
        }
        set
    }

    /// Adds one document if it is a policy kind.
    pub fn add(&mut self, doc: &Json, loc: Location) {
        if !is_policy(doc) {
            return;
        }
        match doc.get("kind").and_then(Json::as_str).unwrap_or("") {
            "ValidatingAdmissionPolicy" => {
                self.cel.push(CelPolicy::parse(doc, CelKind::Vap, loc));
            }
            "ValidatingAdmissionPolicyBinding" => self.bindings.push(Binding::parse(doc)),
            "ValidatingPolicy" | "NamespacedValidatingPolicy" => {
                self.cel
                    .push(CelPolicy::parse(doc, CelKind::ValidatingPolicy, loc));
            }
            _ => {
                let p = KyvernoPolicy::parse(doc, loc);
                self.offline.extend(p.offline.iter().cloned());
                self.kyverno.push(p);
            }
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.cel.is_empty() && self.kyverno.is_empty()
    }

    /// Every rule's verdict on every object it selects. Objects no rule selects have no
    /// outcome.
    #[must_use]
    pub fn evaluate(&self, resources: &[Resource]) -> Vec<Outcome> {
        self.evaluate_with(resources, &|_, _| kyverno::Overrides::new())
    }

    /// [`PolicySet::evaluate`] with variable values that replace Kyverno's for one policy
    /// and object (a kyverno-test `variables` file).
    #[must_use]
    pub fn evaluate_with(
        &self,
        resources: &[Resource],
        overrides: &(dyn Fn(&str, &Resource) -> kyverno::Overrides + Sync),
    ) -> Vec<Outcome> {
        let ns = Namespaces::from_resources(resources);
        // The index: per kind, the policies that can select it (most policies name a few
        // kinds, most objects are of other kinds).
        let mut index: HashMap<(&str, &str), Candidates> = HashMap::new();
        for r in resources {
            index.entry((r.kind(), r.plural())).or_insert_with(|| {
                let cel = (0..self.cel.len())
                    .filter(|&p| self.cel[p].may_select_kind(r.kind(), r.plural()))
                    .collect();
                let kyv = (0..self.kyverno.len())
                    .filter(|&p| self.kyverno[p].may_select_kind(r.kind()))
                    .collect();
                (cel, kyv)
            });
        }
        // Objects are independent: in parallel, each worker with its own CEL root context;
        // the outcomes keep the objects' order.
        let per_object: Vec<Vec<Outcome>> = resources
            .par_iter()
            .enumerate()
            .map_init(cel::root_context, |root, (i, r)| {
                let mut out = Vec::new();
                let Some((cel_idx, kyverno_idx)) = index.get(&(r.kind(), r.plural())) else {
                    return out;
                };
                self.evaluate_object(root, cel_idx, r, i, resources, &ns, &mut out);
                for &p in kyverno_idx {
                    let policy = &self.kyverno[p];
                    out.extend(policy.evaluate_with(r, i, &ns, &overrides(&policy.name, r)));
                }
                out
            })
            .collect();
        per_object.into_iter().flatten().collect()
    }

    /// Whether some policy can select objects of this kind (directly, or through the Pod
    /// template of a controller), reads them as params, or reads them as namespaces: the
    /// objects a caller needs to convert and pass to [`PolicySet::evaluate`].
    #[must_use]
    pub fn wants(&self, api_version: &str, kind: &str) -> bool {
        let plural = resource::plural(kind);
        kind == "Namespace"
            || self.cel.iter().any(|p| {
                p.may_select_kind(kind, &plural)
                    || p.param_kind()
                        .is_some_and(|(a, k)| a == api_version && k == kind)
            })
            || self.kyverno.iter().any(|p| p.may_select_kind(kind))
    }

    /// The CEL policies of `candidates` over `r` (or the Pod its template describes).
    #[allow(clippy::too_many_arguments)] // the evaluation's whole context, passed once per object
    fn evaluate_object(
        &self,
        root: &Context,
        candidates: &[usize],
        r: &Resource,
        i: usize,
        resources: &[Resource],
        ns: &Namespaces,
        out: &mut Vec<Outcome>,
    ) {
        // The request of `r` and of its Pod template, converted once for all CEL policies.
        let mut own: Option<Context> = None;
        let mut pod: Option<Context> = None;
        for &p in candidates {
            let policy = &self.cel[p];
            let (target, in_pod) = if policy.selects(r, ns) {
                (r, false)
            } else if let Some(t) = autogen::template_pod(r, &policy.controllers)
                && policy.selects(t, ns)
            {
                (t, true)
            } else {
                continue;
            };
            let slot = if in_pod { &mut pod } else { &mut own };
            let base = slot.get_or_insert_with(|| vap::object_context(root, target, ns));
            let start = out.len();
            self.evaluate_cel(base, policy, target, i, resources, ns, out);
            if in_pod {
                for o in &mut out[start..] {
                    o.path = in_template(r.kind(), std::mem::take(&mut o.path));
                }
            }
        }
    }

    /// One CEL policy over `target` (the object, or the Pod its template describes), whose
    /// request is bound in `base`.
    #[allow(clippy::too_many_arguments)] // the evaluation's whole context, passed once per object
    fn evaluate_cel(
        &self,
        base: &Context,
        p: &CelPolicy,
        target: &Resource,
        i: usize,
        all: &[Resource],
        ns: &Namespaces,
        out: &mut Vec<Outcome>,
    ) {
        match p.kind {
            CelKind::ValidatingPolicy => {
                out.extend(p.evaluate(base, target, &Json::Null, p.action(&[]), i));
            }
            CelKind::Vap => {
                for b in self.bindings.iter().filter(|b| b.policy == p.name) {
                    if !b.selects(target, ns) {
                        continue;
                    }
                    let action = p.action(b.actions());
                    match b.params(p, target, all) {
                        Ok(params) => {
                            for param in params {
                                out.extend(p.evaluate(base, target, &param, action, i));
                            }
                        }
                        Err(why) => out.push(Outcome {
                            policy: p.name.clone(),
                            rule: "paramRef".into(),
                            resource: i,
                            verdict: Verdict::Error(why.to_string()),
                            action,
                            path: Vec::new(),
                        }),
                    }
                }
            }
        }
    }
}
