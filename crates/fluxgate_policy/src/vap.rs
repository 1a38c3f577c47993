//! CEL policies: Kubernetes `ValidatingAdmissionPolicy` (with its bindings) and Kyverno
//! `ValidatingPolicy` (policies.kyverno.io). Both are `matchConstraints`, `matchConditions`,
//! `variables` and `validations` over `object`, evaluated as the API server would on CREATE.

use std::sync::Arc;

use fluxgate_diagnostics::Location;
use kube_cel::cel::{Context, Value};
use serde_json::Value as Json;

use crate::autogen;
use crate::cel::{Expr, display, map, object_paths, to_cel};
use crate::resource::{Namespaces, Resource, is_cluster_scoped, selector_matches};
use crate::{Action, Error, FieldPath, Outcome, Verdict, deepest};

/// Which of the two CEL kinds a policy is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CelKind {
    Vap,
    ValidatingPolicy,
}

pub(crate) struct Validation {
    expr: Expr,
    message: Option<String>,
    message_expr: Option<Expr>,
    /// The `object` fields the expression reads (through the variables it names too),
    /// for the finding's location.
    reads: Vec<FieldPath>,
}

/// One CEL policy, compiled.
pub struct CelPolicy {
    pub name: String,
    pub kind: CelKind,
    pub loc: Location,
    match_constraints: Json,
    match_conditions: Vec<(String, Expr)>,
    variables: Vec<(String, Expr)>,
    validations: Vec<Validation>,
    audit_annotations: Vec<(String, Expr)>,
    fail_closed: bool,
    /// Kyverno's `validationActions` (a VAP's come from its bindings).
    actions: Vec<String>,
    param_kind: Option<(String, String)>,
    /// The resources `matchConstraints` names; `None` when a rule names `*`.
    resources: Option<Vec<String>>,
    /// Pod controllers that get the policy's rules (ValidatingPolicy autogen).
    pub(crate) controllers: Vec<String>,
}

/// A `ValidatingAdmissionPolicyBinding`.
pub struct Binding {
    pub name: String,
    pub policy: String,
    match_resources: Option<Json>,
    param_ref: Option<Json>,
    actions: Vec<String>,
}

fn strings(v: Option<&Json>) -> Vec<String> {
    v.and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Json::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl CelPolicy {
    pub fn parse(doc: &Json, kind: CelKind, loc: Location) -> CelPolicy {
        let spec = doc.get("spec").cloned().unwrap_or(Json::Null);
        let named = |key: &str| -> Vec<(String, Expr)> {
            spec.get(key)
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .map(|v| {
                            let name = v.get("name").or_else(|| v.get("key"));
                            (
                                name.and_then(Json::as_str).unwrap_or("").to_string(),
                                Expr::compile(
                                    v.get("expression")
                                        .or_else(|| v.get("valueExpression"))
                                        .and_then(Json::as_str)
                                        .unwrap_or(""),
                                ),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let variable_sources: Vec<(String, String)> = spec
            .get("variables")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .map(|v| {
                (
                    v.get("name")
                        .and_then(Json::as_str)
                        .unwrap_or("")
                        .to_string(),
                    v.get("expression")
                        .and_then(Json::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect();
        let validations = spec
            .get("validations")
            .and_then(Json::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| Validation {
                        reads: reads_of(
                            v.get("expression").and_then(Json::as_str).unwrap_or(""),
                            &variable_sources,
                        ),
                        expr: Expr::compile(
                            v.get("expression").and_then(Json::as_str).unwrap_or(""),
                        ),
                        message: v.get("message").and_then(Json::as_str).map(str::to_string),
                        message_expr: v
                            .get("messageExpression")
                            .and_then(Json::as_str)
                            .map(Expr::compile),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let param_kind = spec.get("paramKind").map(|p| {
            (
                p.get("apiVersion")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string(),
                p.get("kind")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        });
        let matches_pods = resource_rules(spec.get("matchConstraints"))
            .iter()
            .any(|r| {
                strings(r.get("resources"))
                    .iter()
                    .any(|x| x == "pods" || x == "*")
            });
        // Kyverno generates rules for the controllers; for a VAP, the Pods a controller
        // creates are admitted by the same policy, so a Deployment whose template it denies
        // never gets its Pods: both are evaluated over the template as a Pod.
        let controllers = match kind {
            _ if !matches_pods => Vec::new(),
            CelKind::ValidatingPolicy => autogen::vpol_controllers(doc),
            CelKind::Vap => autogen::DEFAULT_CONTROLLERS
                .iter()
                .map(|c| (*c).to_string())
                .collect(),
        };
        let mut resources = Some(Vec::new());
        for rule in resource_rules(spec.get("matchConstraints")) {
            for res in strings(rule.get("resources")) {
                if res == "*" || res.contains('/') && res.starts_with('*') {
                    resources = None;
                }
                if let Some(list) = resources.as_mut() {
                    list.push(res.split('/').next().unwrap_or(&res).to_string());
                }
            }
        }
        CelPolicy {
            resources,
            name: doc
                .pointer("/metadata/name")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string(),
            kind,
            loc,
            match_constraints: spec.get("matchConstraints").cloned().unwrap_or(Json::Null),
            match_conditions: named("matchConditions"),
            variables: named("variables"),
            validations,
            audit_annotations: named("auditAnnotations"),
            fail_closed: spec.get("failurePolicy").and_then(Json::as_str) != Some("Ignore"),
            actions: strings(spec.get("validationActions")),
            param_kind,
            controllers,
        }
    }

    /// The rule name of validation `i`: `validation-<i>` (0-based, as in the YAML list).
    pub fn rule_name(i: usize) -> String {
        format!("validation-{i}")
    }

    /// Whether the policy's own `matchConstraints` select `r`.
    pub(crate) fn selects(&self, r: &Resource, ns: &Namespaces) -> bool {
        self.may_select(r.plural()) && match_resources(&self.match_constraints, r, ns)
    }

    /// Whether the policy can select objects of this resource (plural) at all, directly or
    /// through the Pod template of a controller of this kind: the index's test.
    pub(crate) fn may_select_kind(&self, kind: &str, plural: &str) -> bool {
        self.may_select(plural) || self.controllers.iter().any(|c| c == kind)
    }

    fn may_select(&self, plural: &str) -> bool {
        self.resources
            .as_ref()
            .is_none_or(|list| list.iter().any(|x| x == plural))
    }

    /// Evaluates the policy over `r` with `params` (null without a paramKind). One outcome
    /// per validation; none when a match condition is false.
    /// `base` holds the request of `r` ([`object_context`]).
    pub(crate) fn evaluate(
        &self,
        base: &Context,
        r: &Resource,
        params: &Json,
        action: Action,
        resource: usize,
    ) -> Vec<Outcome> {
        let outcome = |rule: String, verdict: Verdict| Outcome {
            policy: self.name.clone(),
            rule,
            resource,
            verdict,
            action,
            path: Vec::new(),
        };
        let mut ctx = base.new_inner_scope();
        ctx.add_variable_from_value("params", to_cel(params));
        for (name, cond) in &self.match_conditions {
            match cond.eval(&ctx) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => {
                    return vec![outcome(
                        "matchConditions".into(),
                        Verdict::Skip(format!("match condition `{name}` is false")),
                    )];
                }
                Ok(other) => {
                    return vec![outcome(
                        "matchConditions".into(),
                        Verdict::Error(format!(
                            "match condition `{name}` is not a bool: {}",
                            display(&other)
                        )),
                    )];
                }
                Err(e) if self.fail_closed => {
                    return vec![outcome(
                        "matchConditions".into(),
                        Verdict::Error(format!("match condition `{name}`: {e}")),
                    )];
                }
                Err(e) => {
                    return vec![outcome(
                        "matchConditions".into(),
                        Verdict::Skip(format!(
                            "match condition `{name}` failed (failurePolicy Ignore): {e}"
                        )),
                    )];
                }
            }
        }
        // Variables in order, each seeing the ones before it.
        let mut vars: Vec<(String, Value)> = Vec::new();
        let mut failed_vars: Vec<String> = Vec::new();
        for (name, expr) in &self.variables {
            // Each conversion copies every value so far: only for expressions that read them.
            if !vars.is_empty() && expr.source.contains("variables") {
                ctx.add_variable_from_value("variables", map(vars.clone().into_iter()));
            }
            match expr.eval(&ctx) {
                Ok(v) => vars.push((name.clone(), v)),
                Err(e) => failed_vars.push(format!("variable `{name}`: {e}")),
            }
        }
        ctx.add_variable_from_value("variables", map(vars.into_iter()));
        let mut out = Vec::new();
        for (i, v) in self.validations.iter().enumerate() {
            let mut path = Vec::new();
            let verdict = match v.expr.eval(&ctx) {
                Ok(Value::Bool(true)) => Verdict::Pass,
                Ok(Value::Bool(false)) => {
                    path = deepest(&r.json, &v.reads);
                    Verdict::Fail(Self::message(v, &ctx))
                }
                Ok(other) => {
                    Verdict::Error(format!("the validation is not a bool: {}", display(&other)))
                }
                Err(e) => {
                    let mut why = e.to_string();
                    if !failed_vars.is_empty() {
                        why.push_str(&format!(" ({})", failed_vars.join("; ")));
                    }
                    if self.fail_closed {
                        Verdict::Error(why)
                    } else {
                        Verdict::Skip(format!("failurePolicy Ignore: {why}"))
                    }
                }
            };
            let mut o = outcome(Self::rule_name(i), verdict);
            o.path = path;
            out.push(o);
        }
        for (key, expr) in &self.audit_annotations {
            if let Err(e) = expr.eval(&ctx)
                && self.fail_closed
            {
                out.push(outcome(
                    format!("auditAnnotations/{key}"),
                    Verdict::Error(format!("audit annotation `{key}`: {e}")),
                ));
            }
        }
        out
    }

    fn message(v: &Validation, ctx: &Context) -> String {
        if let Some(me) = &v.message_expr
            && let Ok(Value::String(s)) = me.eval(ctx)
            && !s.trim().is_empty()
        {
            return s.to_string();
        }
        v.message
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| format!("failed expression: {}", v.expr.source.trim()))
    }

    /// The action of a finding from this policy: Kyverno's `validationActions`, else the
    /// binding's.
    pub(crate) fn action(&self, binding_actions: &[String]) -> Action {
        let actions = if self.kind == CelKind::ValidatingPolicy {
            &self.actions
        } else {
            binding_actions
        };
        Action::from_cel(actions)
    }

    /// `(apiVersion, kind)` of the policy's params.
    pub fn param_kind(&self) -> Option<&(String, String)> {
        self.param_kind.as_ref()
    }
}

impl Binding {
    pub fn parse(doc: &Json) -> Binding {
        let spec = doc.get("spec").cloned().unwrap_or(Json::Null);
        Binding {
            name: doc
                .pointer("/metadata/name")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string(),
            policy: spec
                .get("policyName")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string(),
            match_resources: spec.get("matchResources").cloned(),
            param_ref: spec.get("paramRef").cloned(),
            actions: strings(spec.get("validationActions")),
        }
    }

    pub(crate) fn selects(&self, r: &Resource, ns: &Namespaces) -> bool {
        self.match_resources
            .as_ref()
            .is_none_or(|m| match_resources(m, r, ns))
    }

    pub(crate) fn actions(&self) -> &[String] {
        &self.actions
    }

    /// The params of this binding for `r`: `Ok(list)` (one evaluation per param; `[null]`
    /// without a paramRef), or `Err` when the params are missing and the binding says Deny.
    pub(crate) fn params(
        &self,
        policy: &CelPolicy,
        r: &Resource,
        all: &[Resource],
    ) -> Result<Vec<Json>, Error> {
        let (Some(pref), Some((api_version, kind))) = (&self.param_ref, policy.param_kind()) else {
            return Ok(vec![Json::Null]);
        };
        let ns = pref
            .get("namespace")
            .and_then(Json::as_str)
            .map_or_else(|| r.namespace().to_string(), str::to_string);
        let found: Vec<Json> = all
            .iter()
            .filter(|p| p.kind() == kind && p.api_version() == api_version.as_str())
            .filter(|p| is_cluster_scoped(kind) || p.namespace() == ns)
            .filter(|p| match pref.get("name").and_then(Json::as_str) {
                Some(n) => p.name() == n,
                None => pref
                    .get("selector")
                    .is_some_and(|s| selector_matches(s, p.labels())),
            })
            .map(|p| p.json.clone())
            .collect();
        if found.is_empty() {
            if pref.get("parameterNotFoundAction").and_then(Json::as_str) == Some("Allow") {
                return Ok(Vec::new());
            }
            let which = pref
                .get("name")
                .and_then(Json::as_str)
                .map_or_else(|| "matching the selector".to_string(), |n| format!("`{n}`"));
            return Err(Error::ParamNotFound {
                binding: self.name.clone(),
                kind: kind.clone(),
                which,
                namespace: ns,
            });
        }
        Ok(found)
    }
}

fn resource_rules(mc: Option<&Json>) -> Vec<Json> {
    mc.and_then(|m| m.get("resourceRules"))
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default()
}

fn matches_list(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x == "*" || x == value)
}

/// One `resourceRules` entry against `r` on CREATE.
fn rule_matches(rule: &Json, r: &Resource) -> bool {
    let (group, version) = r.group_version();
    let ops = strings(rule.get("operations"));
    let creates = ops.is_empty()
        || ops
            .iter()
            .any(|o| o == "*" || o == "CREATE" || o == "UPDATE");
    let resources = strings(rule.get("resources"));
    let names = strings(rule.get("resourceNames"));
    let scope = rule.get("scope").and_then(Json::as_str).unwrap_or("*");
    let scope_ok = match scope {
        "Cluster" => is_cluster_scoped(r.kind()),
        "Namespaced" => !is_cluster_scoped(r.kind()),
        _ => true,
    };
    creates
        && scope_ok
        && matches_list(&strings(rule.get("apiGroups")), group)
        && matches_list(&strings(rule.get("apiVersions")), version)
        && resources.iter().any(|x| x == "*" || x == r.plural())
        && (names.is_empty() || names.iter().any(|n| n == r.name()))
}

/// `matchResources` / `matchConstraints`: rules, exclusions and both selectors.
pub(crate) fn match_resources(m: &Json, r: &Resource, ns: &Namespaces) -> bool {
    let rules = resource_rules(Some(m));
    if !rules.is_empty() && !rules.iter().any(|x| rule_matches(x, r)) {
        return false;
    }
    let excluded = m
        .get("excludeResourceRules")
        .and_then(Json::as_array)
        .is_some_and(|a| a.iter().any(|x| rule_matches(x, r)));
    if excluded {
        return false;
    }
    if let Some(sel) = m.get("objectSelector")
        && !selector_matches(sel, r.labels())
    {
        return false;
    }
    if let Some(sel) = m.get("namespaceSelector") {
        let namespace = if r.kind() == "Namespace" {
            r.name()
        } else {
            r.namespace()
        };
        if !namespace.is_empty() && !selector_matches(sel, &ns.labels(namespace)) {
            return false;
        }
    }
    true
}

/// The fields an expression reads from `object`, directly or through the `variables` it
/// names (whose expressions are read in turn, once each).
fn reads_of(source: &str, variables: &[(String, String)]) -> Vec<FieldPath> {
    let mut out = object_paths(source);
    let mut seen: Vec<&str> = Vec::new();
    let mut pending = vec![source];
    while let Some(src) = pending.pop() {
        for (name, expr) in variables {
            if !seen.contains(&name.as_str()) && names_variable(src, name) {
                seen.push(name);
                out.extend(object_paths(expr));
                pending.push(expr);
            }
        }
    }
    out
}

/// Whether `src` reads `variables.<name>` (not a longer name that starts with it).
fn names_variable(src: &str, name: &str) -> bool {
    let needle = format!("variables.{name}");
    src.match_indices(&needle).any(|(i, _)| {
        !src[i + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The request of a CREATE of `r` in a scope of its own under `root`: `object`,
/// `oldObject`, `request` and `namespaceObject`, converted once for every CEL policy that
/// selects `r` (each evaluation adds `params` and `variables` in a scope under it).
pub(crate) fn object_context<'a>(
    root: &'a Context<'a>,
    r: &Resource,
    ns: &Namespaces,
) -> Context<'a> {
    let mut ctx = root.new_inner_scope();
    bind_request(&mut ctx, r, ns);
    ctx
}

/// `object`, `oldObject`, `request`, `namespaceObject` for a CREATE of `r`.
fn bind_request(ctx: &mut Context, r: &Resource, ns: &Namespaces) {
    let (group, version) = r.group_version();
    let s = |x: &str| Value::String(Arc::new(x.to_string()));
    let gvk = map([
        ("group".to_string(), s(group)),
        ("version".to_string(), s(version)),
        ("kind".to_string(), s(r.kind())),
    ]
    .into_iter());
    let gvr = map([
        ("group".to_string(), s(group)),
        ("version".to_string(), s(version)),
        ("resource".to_string(), s(r.plural())),
    ]
    .into_iter());
    let request = map([
        ("operation".to_string(), s("CREATE")),
        ("kind".to_string(), gvk),
        ("resource".to_string(), gvr),
        ("name".to_string(), s(r.name())),
        ("namespace".to_string(), s(r.namespace())),
        ("dryRun".to_string(), Value::Bool(false)),
        (
            "userInfo".to_string(),
            map([
                ("username".to_string(), s("")),
                ("groups".to_string(), Value::List(Arc::new(Vec::new()))),
            ]
            .into_iter()),
        ),
    ]
    .into_iter());
    ctx.add_variable_from_value("object", r.cel());
    ctx.add_variable_from_value("oldObject", Value::Null);
    ctx.add_variable_from_value("request", request);
    let namespace_object = if r.namespace().is_empty() {
        Value::Null
    } else {
        to_cel(&ns.object(r.namespace()))
    };
    ctx.add_variable_from_value("namespaceObject", namespace_object);
}
