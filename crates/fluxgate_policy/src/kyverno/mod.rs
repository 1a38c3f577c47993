//! Kyverno `ClusterPolicy` and `Policy` validate rules, offline: `match`/`exclude`,
//! `preconditions`, `pattern`/`anyPattern`, `deny`, `foreach`, `context` variables, and the
//! auto-generated rules for pod controllers (`autogen-<rule>`, `autogen-cronjob-<rule>`).

pub mod conditions;
pub mod jmes;
mod locate;
pub mod pattern;
pub mod vars;

use std::collections::BTreeMap;

use fluxgate_diagnostics::Location;
use jmespath::{Rcvar, Variable};
use serde_json::{Value as Json, json};

use crate::Error;
use crate::autogen;
use crate::resource::{Namespaces, Resource, selector_matches};
use crate::{Action, FieldPath, Offline, Outcome, Verdict};
use pattern::{Mismatch, wildcard};

/// Values that replace variables for one resource (a kyverno-test `variables` file):
/// dotted path -> value.
pub type Overrides = BTreeMap<String, Json>;

struct Rule {
    name: String,
    /// The kind names (last segment of each `kinds` entry) the rule's `match` can select;
    /// `None` when any kind can match. A cheap first test before the whole match.
    kinds: Option<Vec<String>>,
    raw: Json,
    action: Action,
    autogen: bool,
    /// The rule Kyverno generates for pod controllers, and the one for CronJobs: the rule
    /// with its variables moved into the template (see [`autogen_rule`]).
    for_controllers: Option<Json>,
    for_cronjobs: Option<Json>,
    offline: bool,
}

/// Every string of `v` with the controller paths of [`autogen_rule`].
fn rewrite_paths(v: &Json, spec_to: &str) -> Json {
    match v {
        Json::String(s) => Json::String(s.replace("request.object.spec", spec_to).replace(
            "request.object.metadata",
            "request.object.spec.template.metadata",
        )),
        Json::Array(a) => Json::Array(a.iter().map(|x| rewrite_paths(x, spec_to)).collect()),
        Json::Object(m) => Json::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), rewrite_paths(x, spec_to)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Kyverno's auto-generated rule for pod controllers as it reads variables: every text of
/// the rule but its `match`/`exclude` with `request.object.spec` moved to the template's
/// spec (`spec.template.spec`, or `spec.jobTemplate.spec.template.spec` for a CronJob) and
/// `request.object.metadata` to `request.object.spec.template.metadata` (for CronJobs too,
/// as Kyverno does). The rewrite is textual, as Kyverno's: a variable written another way
/// (`request."object".metadata`) keeps reading the controller itself.
fn autogen_rule(rule: &Json, cronjob: bool) -> Json {
    let spec_to = if cronjob {
        "request.object.spec.jobTemplate.spec.template.spec"
    } else {
        "request.object.spec.template.spec"
    };
    let mut out = rule.clone();
    if let Some(m) = out.as_object_mut() {
        for (k, v) in m.iter_mut() {
            if k != "match" && k != "exclude" && k != "name" {
                *v = rewrite_paths(v, spec_to);
            }
        }
    }
    out
}

/// One Kyverno policy.
pub struct KyvernoPolicy {
    pub name: String,
    /// A namespaced `Policy` applies only in its namespace.
    namespace: Option<String>,
    pub loc: Location,
    rules: Vec<Rule>,
    controllers: Vec<String>,
    pub offline: Vec<Offline>,
}

fn action_of(s: Option<&str>) -> Option<Action> {
    match s.map(str::to_ascii_lowercase).as_deref() {
        Some("enforce" | "deny") => Some(Action::Deny),
        Some("audit") => Some(Action::Audit),
        Some("warn") => Some(Action::Warn),
        _ => None,
    }
}

/// Why a rule needs the cluster, if it does.
fn needs_cluster(rule: &Json) -> Option<String> {
    for key in ["mutate", "generate", "verifyImages"] {
        if rule.get(key).is_some() {
            return Some(format!(
                "a {key} rule changes or creates objects in the cluster"
            ));
        }
    }
    if let Some(ctx) = rule.get("context").and_then(Json::as_array) {
        for entry in ctx {
            for key in ["apiCall", "configMap", "imageRegistry", "globalReference"] {
                if entry.get(key).is_some() {
                    let name = entry.get("name").and_then(Json::as_str).unwrap_or("");
                    return Some(format!("context entry `{name}` reads the cluster ({key})"));
                }
            }
        }
    }
    let v = rule.get("validate")?;
    for key in ["podSecurity", "manifests", "cel", "assert"] {
        if v.get(key).is_some() {
            return Some(format!("validate.{key} is not evaluated offline"));
        }
    }
    None
}

/// The kinds a rule's `match` names, or `None` when some filter has no kinds (or a wildcard).
fn match_kinds(rule: &Json) -> Option<Vec<String>> {
    let m = rule.get("match")?;
    let mut filters: Vec<&Json> = Vec::new();
    for key in ["any", "all"] {
        filters.extend(m.get(key).and_then(Json::as_array).into_iter().flatten());
    }
    if m.get("resources").is_some() {
        filters.push(m);
    }
    let mut out = Vec::new();
    for f in filters {
        let kinds = strings(f.pointer("/resources/kinds"));
        if kinds.is_empty() {
            return None;
        }
        for k in kinds {
            let last = k.rsplit('/').next().unwrap_or(&k).to_string();
            if last.contains(['*', '?']) {
                return None;
            }
            out.push(last);
        }
    }
    Some(out)
}

/// Whether a rule matches Pods only, without names or selectors: Kyverno generates rules for
/// the pod controllers from such rules.
fn can_autogen(rule: &Json) -> bool {
    let filters = |block: Option<&Json>| -> Vec<Json> {
        let Some(b) = block else { return Vec::new() };
        let mut out: Vec<Json> = Vec::new();
        for key in ["any", "all"] {
            if let Some(a) = b.get(key).and_then(Json::as_array) {
                out.extend(a.iter().cloned());
            }
        }
        if b.get("resources").is_some() {
            out.push(b.clone());
        }
        out
    };
    let m = filters(rule.get("match"));
    if m.is_empty() {
        return false;
    }
    let only_pods = m.iter().all(|f| {
        let kinds = f
            .pointer("/resources/kinds")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default();
        !kinds.is_empty()
            && kinds.iter().all(|k| {
                k.as_str()
                    .is_some_and(|k| k == "Pod" || k.ends_with("/Pod"))
            })
    });
    let plain = |f: &Json| {
        ["name", "names", "selector", "annotations"]
            .iter()
            .all(|k| f.get("resources").and_then(|r| r.get(k)).is_none())
    };
    only_pods && m.iter().all(plain) && filters(rule.get("exclude")).iter().all(plain)
}

impl KyvernoPolicy {
    pub fn parse(doc: &Json, loc: Location) -> KyvernoPolicy {
        let name = doc
            .pointer("/metadata/name")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        let spec = doc.get("spec").cloned().unwrap_or(Json::Null);
        let default = action_of(spec.get("validationFailureAction").and_then(Json::as_str))
            .unwrap_or(Action::Audit);
        let namespace = (doc.get("kind").and_then(Json::as_str) == Some("Policy")).then(|| {
            doc.pointer("/metadata/namespace")
                .and_then(Json::as_str)
                .unwrap_or("default")
                .to_string()
        });
        let mut rules = Vec::new();
        let mut offline = Vec::new();
        for raw in spec
            .get("rules")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            let rule_name = raw
                .get("name")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string();
            let cluster = needs_cluster(raw);
            if let Some(reason) = &cluster {
                offline.push(Offline {
                    policy: name.clone(),
                    rule: rule_name.clone(),
                    reason: reason.clone(),
                    loc: loc.clone(),
                });
            }
            let action = action_of(
                raw.pointer("/validate/failureAction")
                    .and_then(Json::as_str),
            )
            .unwrap_or(default);
            let autogen = can_autogen(raw);
            rules.push(Rule {
                name: rule_name,
                kinds: match_kinds(raw),
                autogen,
                for_controllers: autogen.then(|| autogen_rule(raw, false)),
                for_cronjobs: autogen.then(|| autogen_rule(raw, true)),
                raw: raw.clone(),
                action,
                offline: cluster.is_some() || raw.get("validate").is_none(),
            });
        }
        KyvernoPolicy {
            name,
            namespace,
            loc,
            rules,
            controllers: autogen::annotated_controllers(doc),
            offline,
        }
    }

    /// Whether some rule is evaluated offline (the others need the cluster).
    #[must_use]
    pub fn evaluates_offline(&self) -> bool {
        self.rules.iter().any(|r| !r.offline)
    }

    /// Whether some rule can select objects of this kind, directly or as a pod controller:
    /// the index's test.
    pub(crate) fn may_select_kind(&self, kind: &str) -> bool {
        let controller = self.controllers.iter().any(|c| c == kind);
        self.rules.iter().filter(|x| !x.offline).any(|rule| {
            rule.kinds
                .as_ref()
                .is_none_or(|ks| ks.iter().any(|k| k == kind) || (rule.autogen && controller))
        })
    }

    /// Every rule's verdict on `r` (and on its Pod template, for autogen rules).
    pub fn evaluate(&self, r: &Resource, index: usize, ns: &Namespaces) -> Vec<Outcome> {
        self.evaluate_with(r, index, ns, &Overrides::new())
    }

    pub fn evaluate_with(
        &self,
        r: &Resource,
        index: usize,
        ns: &Namespaces,
        overrides: &Overrides,
    ) -> Vec<Outcome> {
        if let Some(pns) = &self.namespace
            && r.namespace() != pns
        {
            return Vec::new();
        }
        let operation = overrides
            .get("request.operation")
            .and_then(Json::as_str)
            .unwrap_or("CREATE");
        let mut out = Vec::new();
        let kind = r.kind();
        let controller = self.controllers.iter().any(|c| c == kind);
        for rule in self.rules.iter().filter(|x| !x.offline) {
            let may_match = rule
                .kinds
                .as_ref()
                .is_none_or(|ks| ks.iter().any(|k| k == kind) || (rule.autogen && controller));
            if !may_match {
                continue;
            }
            let (verdict, path, name) = if selects(&rule.raw, r, ns, operation) {
                let (verdict, path) = evaluate_rule(&rule.raw, r, r, operation, overrides);
                (verdict, path, rule.name.clone())
            } else if rule.autogen
                && let Some(pod) = autogen::template_pod(r, &self.controllers)
                && selects(&rule.raw, pod, ns, operation)
            {
                // Kyverno's generated rule: the pattern over the template (the Pod), the
                // variables over the controller with the rule's paths moved into it.
                let cronjob = r.kind() == "CronJob";
                let (prefix, generated) = if cronjob {
                    ("autogen-cronjob-", rule.for_cronjobs.as_ref())
                } else {
                    ("autogen-", rule.for_controllers.as_ref())
                };
                let generated = generated.unwrap_or(&rule.raw);
                let (verdict, path) = evaluate_rule(generated, pod, r, operation, overrides);
                (verdict, path, format!("{prefix}{}", rule.name))
            } else {
                continue;
            };
            out.push(Outcome {
                policy: self.name.clone(),
                rule: name,
                resource: index,
                verdict,
                action: rule.action,
                path,
            });
        }
        out
    }
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

/// `match` and not `exclude`.
fn selects(rule: &Json, r: &Resource, ns: &Namespaces, op: &str) -> bool {
    let Some(m) = rule.get("match") else {
        return false;
    };
    if !block_matches(m, r, ns, op, false) {
        return false;
    }
    !rule
        .get("exclude")
        .is_some_and(|e| block_matches(e, r, ns, op, true))
}

/// A `match`/`exclude` block: `any` (one filter), `all` (every filter) or a bare filter.
fn block_matches(b: &Json, r: &Resource, ns: &Namespaces, op: &str, exclude: bool) -> bool {
    if let Some(any) = b.get("any").and_then(Json::as_array) {
        return any.iter().any(|f| filter_matches(f, r, ns, op));
    }
    if let Some(all) = b.get("all").and_then(Json::as_array) {
        return !all.is_empty() && all.iter().all(|f| filter_matches(f, r, ns, op));
    }
    if b.get("resources").is_some() || b.get("subjects").is_some() {
        return filter_matches(b, r, ns, op);
    }
    // An empty block: matches everything, excludes nothing.
    !exclude
}

fn kind_matches(pattern: &str, r: &Resource) -> bool {
    let (group, version) = r.group_version();
    if pattern.contains('/')
        && pattern
            .split('/')
            .next_back()
            .is_some_and(|k| k.chars().next().is_some_and(char::is_lowercase))
    {
        // `Pod/exec`: a subresource, never a rendered object.
        return false;
    }
    let parts: Vec<&str> = pattern.split('/').collect();
    let (g, v, k) = match parts.as_slice() {
        [k] => ("*", "*", *k),
        [v, k] => ("*", *v, *k),
        [g, v, k] => (*g, *v, *k),
        _ => return false,
    };
    // `Pod.v1` style is rare; a group written `apps/v1/Deployment` is the common form.
    wildcard(k, r.kind()) && (g == "*" || wildcard(g, group)) && (v == "*" || wildcard(v, version))
}

fn filter_matches(f: &Json, r: &Resource, ns: &Namespaces, op: &str) -> bool {
    // Who makes the request is not known offline: a filter on it matches no one.
    if ["subjects", "roles", "clusterRoles"].iter().any(|k| {
        f.get(k)
            .and_then(Json::as_array)
            .is_some_and(|a| !a.is_empty())
    }) {
        return false;
    }
    let Some(res) = f.get("resources") else {
        return false;
    };
    let kinds = strings(res.get("kinds"));
    if !kinds.is_empty() && !kinds.iter().any(|k| kind_matches(k, r)) {
        return false;
    }
    let ops = strings(res.get("operations"));
    if !ops.is_empty() && !ops.iter().any(|o| o == op) {
        return false;
    }
    if let Some(n) = res.get("name").and_then(Json::as_str)
        && !wildcard(n, r.name())
    {
        return false;
    }
    let names = strings(res.get("names"));
    if !names.is_empty() && !names.iter().any(|n| wildcard(n, r.name())) {
        return false;
    }
    let namespace = if r.kind() == "Namespace" {
        r.name()
    } else {
        r.namespace()
    };
    let namespaces = strings(res.get("namespaces"));
    if !namespaces.is_empty() && !namespaces.iter().any(|n| wildcard(n, namespace)) {
        return false;
    }
    if let Some(ann) = res.get("annotations").and_then(Json::as_object) {
        let have = crate::resource::string_map(r.json.pointer("/metadata/annotations"));
        let ok = ann.iter().all(|(k, v)| {
            have.iter()
                .any(|(hk, hv)| wildcard(k, hk) && v.as_str().is_some_and(|v| wildcard(v, hv)))
        });
        if !ok {
            return false;
        }
    }
    if let Some(sel) = res.get("selector")
        && !wildcard_selector(sel, r.labels())
    {
        return false;
    }
    if let Some(sel) = res.get("namespaceSelector")
        && !namespace.is_empty()
        && !selector_matches(sel, &ns.labels(namespace))
    {
        return false;
    }
    true
}

/// A label selector whose `matchLabels` values may be wildcards (Kyverno allows them).
fn wildcard_selector(sel: &Json, labels: &BTreeMap<String, String>) -> bool {
    if let Some(ml) = sel.get("matchLabels").and_then(Json::as_object) {
        let ok = ml.iter().all(|(k, v)| {
            labels
                .iter()
                .any(|(lk, lv)| wildcard(k, lk) && v.as_str().is_some_and(|v| wildcard(v, lv)))
        });
        if !ok {
            return false;
        }
    }
    let rest =
        json!({"matchExpressions": sel.get("matchExpressions").cloned().unwrap_or(json!([]))});
    selector_matches(&rest, labels)
}

/// The data `{{ }}` variables read for `r`: the request (with the object's JMESPath form,
/// built once per object), `images`, and the test's overrides.
fn request_data(r: &Resource, op: &str, overrides: &Overrides) -> Rcvar {
    if overrides.is_empty() && op == "CREATE" {
        return r.request_data(|| build_request_data(r, op, overrides));
    }
    build_request_data(r, op, overrides)
}

fn build_request_data(r: &Resource, op: &str, overrides: &Overrides) -> Rcvar {
    let (group, version) = r.group_version();
    let mut data = json!({
        "request": {
            "operation": op,
            "oldObject": null,
            "namespace": r.namespace(),
            "name": r.name(),
            "kind": {"group": group, "version": version, "kind": r.kind()},
            // Who asks is not known offline: as the Kyverno CLI without a user-info file,
            // whose empty UserInfo has neither `username` nor `groups`.
            "userInfo": {},
            "roles": [],
            "clusterRoles": [],
        },
        "serviceAccountName": "",
        "serviceAccountNamespace": "",
        "images": images(r),
    });
    for (path, value) in overrides {
        set_path(&mut data, path, value.clone());
    }
    let mut top = jmes::to_var(&data).as_object().cloned().unwrap_or_default();
    let mut request = top
        .get("request")
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    request.insert("object".into(), r.jmes());
    top.insert("request".into(), Rcvar::new(Variable::Object(request)));
    Rcvar::new(Variable::Object(top))
}

/// `base` with top-level variables added (a dotted name nests).
fn with_vars(base: &Rcvar, extra: Vec<(String, Json)>) -> Rcvar {
    let mut map = base.as_object().cloned().unwrap_or_default();
    for (name, value) in extra {
        match name.split_once('.') {
            None => {
                map.insert(name, jmes::to_var(&value));
            }
            Some((first, rest)) => {
                let mut sub = map
                    .get(first)
                    .map_or_else(|| json!({}), |v| jmes::to_json(v));
                set_path(&mut sub, rest, value);
                map.insert(first.to_string(), jmes::to_var(&sub));
            }
        }
    }
    Rcvar::new(Variable::Object(map))
}

fn set_path(data: &mut Json, path: &str, value: Json) {
    let mut cur = data;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        let m = cur.as_object_mut().expect("just made an object");
        if i + 1 == parts.len() {
            m.insert((*p).to_string(), value);
            return;
        }
        cur = m.entry((*p).to_string()).or_insert_with(|| json!({}));
    }
}

/// Kyverno's `images` variable: per container list, container name -> image parts. For a
/// pod controller, the containers of its template.
fn images(r: &Resource) -> Json {
    let spec = r
        .template_pod()
        .map_or_else(|| r.json.get("spec"), |p| p.json.get("spec"));
    let mut out = serde_json::Map::new();
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        let Some(cs) = spec.and_then(|s| s.get(list)).and_then(Json::as_array) else {
            continue;
        };
        let mut m = serde_json::Map::new();
        for c in cs {
            let (Some(name), Some(image)) = (
                c.get("name").and_then(Json::as_str),
                c.get("image").and_then(Json::as_str),
            ) else {
                continue;
            };
            m.insert(name.to_string(), image_parts(image));
        }
        out.insert(list.to_string(), Json::Object(m));
    }
    Json::Object(out)
}

fn image_parts(image: &str) -> Json {
    let (rest, digest) = match image.split_once('@') {
        Some((a, d)) => (a, d),
        None => (image, ""),
    };
    let (registry, path_tag) = match rest.split_once('/') {
        Some((first, tail)) if first.contains(['.', ':']) || first == "localhost" => (first, tail),
        _ => ("docker.io", rest),
    };
    let (path, tag) = match path_tag.rsplit_once(':') {
        Some((p, t)) if !t.contains('/') => (p, t),
        _ => (path_tag, if digest.is_empty() { "latest" } else { "" }),
    };
    let path = if registry == "docker.io" && !path.contains('/') {
        format!("library/{path}")
    } else {
        path.to_string()
    };
    let name = path.rsplit('/').next().unwrap_or(&path).to_string();
    json!({"registry": registry, "path": path, "name": name, "tag": tag, "digest": digest,
           "reference": image})
}

/// A rule's `context` entries that hold plain variables (`variable.value`/`jmesPath`).
fn add_context(rule: &Json, data: &Rcvar) -> Result<Rcvar, Error> {
    let mut data = data.clone();
    for entry in rule
        .get("context")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let Some(v) = entry.get("variable") else {
            continue;
        };
        let name = entry.get("name").and_then(Json::as_str).unwrap_or("");
        let mut value = match v.get("value") {
            Some(x) => vars::substitute(x, &data)?,
            None => Json::Null,
        };
        if let Some(path) = v.get("jmesPath").and_then(Json::as_str) {
            let path = vars::substitute_str(path, &data)?;
            let input = if value.is_null() {
                data.clone()
            } else {
                jmes::to_var(&value)
            };
            value = jmes::search(path.as_str().unwrap_or(""), &input)?;
        }
        if value.is_null()
            && let Some(d) = v.get("default")
        {
            value = vars::substitute(d, &data)?;
        }
        data = with_vars(&data, vec![(name.to_string(), value)]);
    }
    Ok(data)
}

/// `any`/`all` blocks, or a bare list (all).
///
/// A key or value whose variables cannot be resolved (an undefined field, a JMESPath function
/// given null) is the empty string, as Kyverno reads `preconditions` and `deny.conditions`.
fn conditions(block: &Json, data: &Rcvar) -> Result<bool, Error> {
    let resolve = |v: Option<&Json>| {
        vars::substitute(v.unwrap_or(&Json::Null), data)
            .unwrap_or_else(|_| Json::String(String::new()))
    };
    let eval = |c: &Json| -> Result<bool, Error> {
        let key = resolve(c.get("key"));
        let value = resolve(c.get("value"));
        let op = c.get("operator").and_then(Json::as_str).unwrap_or("Equals");
        conditions::condition(&key, op, &value)
    };
    if let Some(list) = block.as_array() {
        for c in list {
            if !eval(c)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    if let Some(any) = block.get("any").and_then(Json::as_array)
        && !any.is_empty()
    {
        let mut hit = false;
        for c in any {
            if eval(c)? {
                hit = true;
                break;
            }
        }
        if !hit {
            return Ok(false);
        }
    }
    for c in block
        .get("all")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        if !eval(c)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn message(v: &Json, data: &Rcvar) -> String {
    let raw = v.get("message").and_then(Json::as_str).unwrap_or("");
    match vars::substitute_str(raw, data) {
        Ok(Json::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => raw.to_string(),
    }
}

/// One rule: the pattern over `target` (the object, or the Pod of its template), the
/// variables over `object` (the object itself). The field path of a failure is in
/// `object`'s fields.
fn evaluate_rule(
    rule: &Json,
    target: &Resource,
    object: &Resource,
    op: &str,
    overrides: &Overrides,
) -> (Verdict, FieldPath) {
    let vdata = match add_context(rule, &request_data(object, op, overrides)) {
        Ok(d) => d,
        Err(e) => return (Verdict::Error(format!("context: {e}")), Vec::new()),
    };
    if let Some(pre) = rule.get("preconditions") {
        match conditions(pre, &vdata) {
            Ok(true) => {}
            Ok(false) => return (Verdict::Skip("preconditions not met".into()), Vec::new()),
            Err(e) => return (Verdict::Error(format!("preconditions: {e}")), Vec::new()),
        }
    }
    let Some(v) = rule.get("validate") else {
        return (Verdict::Skip("no validate block".into()), Vec::new());
    };
    let at = At {
        object: &object.json,
        base: Some(Vec::new()),
        template_of: (!std::ptr::eq(target, object)).then(|| object.kind()),
    };
    match validate_block(v, &target.json, &vdata, &at) {
        Ok(Step::Pass) => (Verdict::Pass, Vec::new()),
        Ok(Step::Skip(why)) => (Verdict::Skip(why), Vec::new()),
        Ok(Step::Fail(text, path)) => {
            // The message is substituted only for a failure.
            let msg = message(v, &vdata);
            let verdict = Verdict::Fail(if text.is_empty() {
                msg
            } else {
                format!("{msg} (at {text})")
            });
            (verdict, path)
        }
        Err(e) => (Verdict::Error(e.to_string()), Vec::new()),
    }
}

enum Step {
    Pass,
    /// Where, as the message says it, and the field.
    Fail(String, FieldPath),
    Skip(String),
}

/// Where a validate block's failures point.
struct At<'a> {
    /// The object the variables read (`request.object`).
    object: &'a Json,
    /// The field of the value the block validates: empty for the object itself, the
    /// element's field inside a foreach, `None` when the element's place is not known.
    base: Option<FieldPath>,
    /// For the top block of a generated rule: the controller's kind, whose Pod template the
    /// pattern was matched against.
    template_of: Option<&'a str>,
}

impl At<'_> {
    /// A field of the validated value (a pattern's mismatch), in the object's fields.
    fn field(&self, inner: FieldPath) -> FieldPath {
        match (&self.base, self.template_of) {
            (Some(b), None) if b.is_empty() => inner,
            (Some(_), Some(kind)) => crate::in_template(kind, inner),
            (Some(b), None) => b.iter().cloned().chain(inner).collect(),
            (None, _) => Vec::new(),
        }
    }

    /// The deepest field a failing `deny` reads: `request.object...` and `element...`.
    fn read_by(&self, block: &Json) -> FieldPath {
        let mut candidates = Vec::new();
        let mut texts = Vec::new();
        locate::strings(block, &mut texts);
        for t in texts {
            candidates.extend(locate::variable_paths(t, "request.object"));
            if let Some(b) = &self.base {
                candidates.extend(
                    locate::variable_paths(t, "element")
                        .into_iter()
                        .map(|p| b.iter().cloned().chain(p).collect()),
                );
            }
        }
        let found = crate::deepest(self.object, &candidates);
        if found.is_empty() {
            self.base.clone().unwrap_or_default()
        } else {
            found
        }
    }
}

fn pattern_path(text: &str) -> FieldPath {
    text.split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Substitutes a pattern's variables; most patterns have none and are used as written.
fn with_values<'p>(p: &'p Json, vdata: &Rcvar) -> Result<std::borrow::Cow<'p, Json>, Error> {
    if locate::has_variables(p) {
        Ok(std::borrow::Cow::Owned(vars::substitute(p, vdata)?))
    } else {
        Ok(std::borrow::Cow::Borrowed(p))
    }
}

/// `pattern`, `anyPattern`, `deny`, `foreach` of one validate (or foreach) block over
/// `target` (the object, or a foreach element).
fn validate_block(v: &Json, target: &Json, vdata: &Rcvar, at: &At) -> Result<Step, Error> {
    if let Some(p) = v.get("pattern") {
        let p = with_values(p, vdata)?;
        return Ok(match pattern::validate(Some(target), &p, "/") {
            Ok(()) => Step::Pass,
            Err(Mismatch::Fail(path)) => {
                let field = at.field(pattern_path(&path));
                Step::Fail(path, field)
            }
            Err(Mismatch::Conditional(path) | Mismatch::Global(path)) => {
                Step::Skip(format!("an anchor at {path} does not hold"))
            }
        });
    }
    if let Some(any) = v.get("anyPattern").and_then(Json::as_array) {
        let mut skipped = 0;
        let mut failed = Vec::new();
        for p in any {
            let p = with_values(p, vdata)?;
            match pattern::validate(Some(target), &p, "/") {
                Ok(()) => return Ok(Step::Pass),
                Err(Mismatch::Fail(path)) => failed.push(path),
                Err(_) => skipped += 1,
            }
        }
        if skipped == any.len() && !any.is_empty() {
            return Ok(Step::Skip("no pattern applies".into()));
        }
        // The first pattern's mismatch: the alternatives usually differ in one field.
        let field = failed
            .first()
            .map(|p| at.field(pattern_path(p)))
            .unwrap_or_default();
        return Ok(Step::Fail(failed.join(", "), field));
    }
    if let Some(deny) = v.get("deny") {
        let block = deny.get("conditions").cloned().unwrap_or(json!({}));
        return Ok(if conditions(&block, vdata)? {
            Step::Fail(String::new(), at.read_by(&block))
        } else {
            Step::Pass
        });
    }
    if let Some(list) = v.get("foreach").and_then(Json::as_array) {
        return foreach(list, vdata, at);
    }
    Ok(Step::Pass)
}

fn foreach(list: &[Json], data: &Rcvar, at: &At) -> Result<Step, Error> {
    let mut applied = 0;
    for fe in list {
        let vdata = add_context(fe, data).map_err(|e| Error::ForeachContext {
            reason: Box::new(e),
        })?;
        let expr = fe.get("list").and_then(Json::as_str).unwrap_or("");
        let expr = vars::substitute_str(expr, &vdata)?;
        let expr = expr.as_str().unwrap_or("");
        let elements = match jmes::search(expr, &vdata)? {
            Json::Array(a) => a,
            Json::Null => Vec::new(),
            other => vec![other],
        };
        // The list's own field: a plain path from the object or from the outer element.
        let list_field = locate::plain_path(expr, "request.object")
            .or_else(|| {
                let inner = locate::plain_path(expr, "element")?;
                let b = at.base.as_ref()?;
                Some(b.iter().cloned().chain(inner).collect())
            })
            .filter(|p| crate::existing_prefix(at.object, p) == p.len());
        for (i, el) in elements.iter().enumerate() {
            let ed = with_vars(
                &vdata,
                vec![
                    ("element".into(), el.clone()),
                    ("elementIndex".into(), json!(i)),
                ],
            );
            if let Some(pre) = fe.get("preconditions")
                && !conditions(pre, &ed)?
            {
                continue;
            }
            applied += 1;
            let element_at = At {
                object: at.object,
                base: list_field.as_ref().map(|l| {
                    let mut p = l.clone();
                    p.push(i.to_string());
                    p
                }),
                template_of: None,
            };
            let step = if let Some(nested) = fe.get("foreach").and_then(Json::as_array) {
                foreach(nested, &ed, &element_at)?
            } else {
                validate_block(fe, el, &ed, &element_at)?
            };
            match step {
                Step::Pass => {}
                Step::Skip(_) => applied -= 1,
                Step::Fail(text, field) => {
                    let field = if field.is_empty() {
                        element_at.base.clone().unwrap_or_default()
                    } else {
                        field
                    };
                    return Ok(Step::Fail(
                        if text.is_empty() {
                            format!("element {i}")
                        } else {
                            format!("element {i} {text}")
                        },
                        field,
                    ));
                }
            }
        }
    }
    Ok(if applied == 0 {
        Step::Skip("no foreach element applies".into())
    } else {
        Step::Pass
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_split() {
        assert_eq!(image_parts("nginx")["path"], "library/nginx");
        assert_eq!(image_parts("nginx")["tag"], "latest");
        assert_eq!(image_parts("ghcr.io/a/b:1.2")["registry"], "ghcr.io");
        assert_eq!(image_parts("ghcr.io/a/b:1.2")["tag"], "1.2");
        assert_eq!(
            image_parts("localhost:5000/b@sha256:x")["digest"],
            "sha256:x"
        );
    }

    #[test]
    fn kinds() {
        let r = Resource::new(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}),
            Location::file("x"),
        );
        assert!(kind_matches("Deployment", &r));
        assert!(kind_matches("apps/v1/Deployment", &r));
        assert!(kind_matches("*/Deployment", &r));
        assert!(!kind_matches("Pod", &r));
        assert!(!kind_matches("Deployment/scale", &r));
    }
}
