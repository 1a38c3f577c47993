//! L0 inside `fluxgate check`: the policies of `policies:` and the policy objects each
//! environment renders, over that environment's objects.

use fluxgate_diagnostics::Annotate;
use std::collections::BTreeSet;
use std::path::Path;

use fluxgate_diagnostics::Location;
use fluxgate_diagnostics::{Diagnostic, Severity};
use fluxgate_model::Environment;
use fluxgate_model::config::Config;
use fluxgate_yaml::Node;

use crate::vap::CelKind;
use crate::{PolicySet, Resource, Verdict, is_policy_kind, load_paths};

/// What L0 saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct L0Report {
    /// Objects evaluated, summed over environments.
    pub objects: usize,
    /// Distinct policies (by name) evaluated in any environment.
    pub policies: usize,
    /// Verdicts (a rule over an object it selects), summed over environments.
    pub verdicts: usize,
}

/// Where the field `path` of `object` was written: the deepest node of the path that exists
/// in the rendered object (each value carries the place that set it), the object itself when
/// none does.
#[must_use]
pub fn field_location(object: &Node, path: &[String]) -> Location {
    let mut node = object;
    for seg in path {
        let next = match node.as_seq() {
            Some(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            None => node.get(seg),
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    if node.loc.line == 0 {
        object.loc.clone()
    } else {
        node.loc.clone()
    }
}

/// The rule of a policy's finding: `policy:<name>/<rule>`.
#[must_use]
pub fn policy_rule(policy: &str, rule: &str) -> String {
    format!("policy:{policy}/{rule}")
}

/// Evaluates the policies over every environment; the `policies:` files are read through
/// `fs`, the repository's confined filesystem.
#[must_use]
pub fn check(
    fs: &dyn fluxgate_fs::Fs,
    root: &Path,
    config: &Config,
    envs: &[Environment],
) -> (Vec<Diagnostic>, L0Report) {
    let (configured, mut out) = load_paths(fs, root, &config.policies);
    let mut report = L0Report::default();
    let mut names = BTreeSet::new();
    for env in envs {
        // Without a policy, the objects are counted, not converted.
        let renders_policy = env.objects().any(|n| {
            is_policy_kind(
                n.str_at(&["apiVersion"]).unwrap_or(""),
                n.str_at(&["kind"]).unwrap_or(""),
            )
        });
        if configured.is_empty() && !renders_policy {
            report.objects += env.objects().count();
            continue;
        }
        let nodes: Vec<&Node> = env.objects().collect();
        let mut docs = configured.clone();
        docs.extend(
            nodes
                .iter()
                .filter(|n| {
                    is_policy_kind(
                        n.str_at(&["apiVersion"]).unwrap_or(""),
                        n.str_at(&["kind"]).unwrap_or(""),
                    )
                })
                .map(|n| (n.to_json(), n.loc.clone())),
        );
        let set = PolicySet::from_documents(docs);
        report.objects += nodes.len();
        if set.is_empty() {
            continue;
        }
        // Only the objects some policy can read are converted (a CRD's schema is large and
        // few policies look at CRDs).
        let nodes: Vec<&Node> = nodes
            .into_iter()
            .filter(|n| {
                set.wants(
                    n.str_at(&["apiVersion"]).unwrap_or(""),
                    n.str_at(&["kind"]).unwrap_or(""),
                )
            })
            .collect();
        let resources: Vec<Resource> = nodes
            .iter()
            .map(|n| Resource::new(n.to_json(), n.loc.clone()))
            .collect();
        names.extend(set.cel.iter().map(|p| p.name.clone()));
        names.extend(set.kyverno.iter().map(|p| p.name.clone()));
        let mut once = BTreeSet::new();
        let outcomes = set.evaluate(&resources);
        report.verdicts += outcomes.len();
        for o in outcomes {
            let r = &resources[o.resource];
            let rule = policy_rule(&o.policy, &o.rule);
            let severity = o.action.severity();
            let d = match &o.verdict {
                Verdict::Pass | Verdict::Skip(_) => continue,
                Verdict::Fail(m) => {
                    Diagnostic::new(rule, severity, format!("{}: {m}", r.display()))
                        .at(field_location(nodes[o.resource], &o.path))
                        .note(format!(
                            "policy `{}` ({} on failure)",
                            o.policy,
                            o.action.name()
                        ))
                }
                Verdict::Error(m) if m.starts_with("the CEL expression does not compile") => {
                    // Once per policy, at the policy: it fails for every object alike.
                    if !once.insert(rule.clone()) {
                        continue;
                    }
                    let at = set
                        .cel
                        .iter()
                        .find(|p| p.name == o.policy)
                        .map(|p| p.loc.clone());
                    let mut d = Diagnostic::new(
                        rule,
                        severity,
                        format!("policy `{}` cannot be evaluated: {m}", o.policy),
                    );
                    if let Some(at) = at {
                        d = d.at(at);
                    }
                    d.note("an expression that does not compile denies every object it selects (failurePolicy Fail)")
                }
                Verdict::Error(m) => Diagnostic::new(
                    rule,
                    severity,
                    format!(
                        "{}: policy `{}` could not be evaluated: {m}",
                        r.display(),
                        o.policy
                    ),
                )
                .at(r.loc.clone())
                .note("an evaluation error denies the object when the policy fails closed"),
            };
            out.push(d.in_env(env.name()));
        }
        for off in &set.offline {
            out.push(
                Diagnostic::new(
                    policy_rule(&off.policy, &off.rule),
                    Severity::Note,
                    format!("not evaluated offline: {}", off.reason),
                )
                .at(off.loc.clone())
                .in_env(env.name()),
            );
        }
        for p in set.cel.iter().filter(|p| p.kind == CelKind::Vap) {
            if !set.bindings.iter().any(|b| b.policy == p.name) {
                out.push(
                    Diagnostic::new(
                        policy_rule(&p.name, "binding"),
                        Severity::Note,
                        format!(
                            "ValidatingAdmissionPolicy `{}` has no ValidatingAdmissionPolicyBinding in this environment: it enforces nothing, so it was not evaluated",
                            p.name
                        ),
                    )
                    .at(p.loc.clone())
                    .in_env(env.name()),
                );
            }
        }
    }
    report.policies = names.len();
    (out, report)
}
