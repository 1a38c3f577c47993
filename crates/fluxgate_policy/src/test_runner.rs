//! `fluxgate policy test DIR`: a Kyverno CLI `kyverno-test.yaml` (cli.kyverno.io/v1alpha1
//! `Test`): its policies and resources are evaluated and each expected result (policy, rule,
//! resource, kind, pass/fail/skip) is compared with fluxgate's.

use std::collections::BTreeMap;
use std::path::Path;

use fluxgate_yaml::{Schema, parse_stream};
use serde_json::Value as Json;

use crate::kyverno::Overrides;
use crate::{Outcome, PolicySet, Resource, Verdict};

/// One expected result and what fluxgate found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TestResult {
    pub policy: String,
    pub rule: String,
    pub resource: String,
    pub kind: String,
    pub expected: String,
    /// `pass`, `fail`, `skip`, `error` or `none` (the rule did not select the resource).
    pub actual: String,
    /// Why, for anything but an agreement on pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The report of one test file.
#[derive(Debug, Default, serde::Serialize)]
pub struct TestReport {
    pub expected: usize,
    pub agreed: usize,
    pub results: Vec<TestResult>,
    /// Problems reading the test (a missing file): each makes the run fail.
    pub problems: Vec<String>,
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

fn read_docs(
    path: &Path,
    label: &str,
    problems: &mut Vec<String>,
) -> Vec<(Json, fluxgate_diagnostics::Location)> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let s = parse_stream(label, &text, Schema::Kube);
            for d in s
                .diagnostics
                .iter()
                .filter(|d| d.severity == fluxgate_diagnostics::Severity::Error)
            {
                problems.push(format!("{label}: {}", d.message));
            }
            s.docs
                .iter()
                .filter(|n| !n.is_null())
                .map(|n| (n.to_json(), n.loc.clone()))
                .collect()
        }
        Err(e) => {
            problems.push(format!("cannot read {label}: {e}"));
            Vec::new()
        }
    }
}

/// The file of a test folder: `DIR/kyverno-test.yaml`, `DIR/.kyverno-test/kyverno-test.yaml`,
/// or DIR itself when it is the file.
#[must_use]
pub fn test_file(dir: &Path) -> Option<std::path::PathBuf> {
    if dir.is_file() {
        return Some(dir.to_path_buf());
    }
    [
        dir.join("kyverno-test.yaml"),
        dir.join(".kyverno-test/kyverno-test.yaml"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Runs the test at `path` (a `kyverno-test.yaml`), reading only inside its folder (the
/// folder above a `.kyverno-test/` one).
#[must_use]
pub fn kyverno_test(path: &Path) -> TestReport {
    let base = path.parent().unwrap_or(Path::new("."));
    let root = if base.file_name().is_some_and(|n| n == ".kyverno-test") {
        base.parent().unwrap_or(base)
    } else {
        base
    };
    kyverno_test_in(path, root)
}

/// The load restrictor of `policy test`, as every other command has one: a path the test
/// names must stay inside `root` once `..` and symlinks are followed; an absolute path or
/// one that leaves is refused (a problem), never read.
fn contained(
    root: &Path,
    base: &Path,
    p: &str,
    problems: &mut Vec<String>,
) -> Option<std::path::PathBuf> {
    let file = base.join(p);
    let inside = Path::new(p).is_relative()
        && match (file.canonicalize(), root.canonicalize()) {
            (Ok(real), Ok(real_root)) => real.starts_with(real_root),
            // A missing file is reported by the read, if it would be inside.
            (Err(_), Ok(real_root)) => {
                let mut n = real_root.clone();
                for c in file.strip_prefix(root).unwrap_or(&file).components() {
                    match c {
                        std::path::Component::ParentDir => {
                            n.pop();
                        }
                        std::path::Component::Normal(x) => n.push(x),
                        _ => {}
                    }
                }
                n.starts_with(&real_root)
            }
            _ => false,
        };
    if inside {
        Some(file)
    } else {
        problems.push(format!(
            "`{p}` is outside the test's folder {}: refused (policy test reads only inside it)",
            root.display()
        ));
        None
    }
}

/// [`kyverno_test`] with the folder it may read.
#[must_use]
pub fn kyverno_test_in(path: &Path, root: &Path) -> TestReport {
    let mut report = TestReport::default();
    let base = path.parent().unwrap_or(Path::new("."));
    let label = |p: &Path| p.to_string_lossy().to_string();
    let docs = read_docs(path, &label(path), &mut report.problems);
    let Some((test, _)) = docs.into_iter().next() else {
        report
            .problems
            .push(format!("{}: no Test document", path.display()));
        return report;
    };
    let mut policy_docs = Vec::new();
    for p in strings(test.get("policies")) {
        let Some(f) = contained(root, base, &p, &mut report.problems) else {
            continue;
        };
        policy_docs.extend(read_docs(&f, &label(&f), &mut report.problems));
    }
    let set = PolicySet::from_documents(policy_docs);
    let mut resources = Vec::new();
    for p in strings(test.get("resources")) {
        let Some(f) = contained(root, base, &p, &mut report.problems) else {
            continue;
        };
        for (j, loc) in read_docs(&f, &label(&f), &mut report.problems) {
            if j.is_object() {
                resources.push(Resource::new(j, loc));
            }
        }
    }
    // `variables`: per policy, per resource name, dotted variable -> value.
    let mut values: BTreeMap<(String, String), Overrides> = BTreeMap::new();
    if let Some(v) = test.get("variables").and_then(Json::as_str)
        && let Some(f) = contained(root, base, v, &mut report.problems)
    {
        for (doc, _) in read_docs(&f, &label(&f), &mut report.problems) {
            for p in doc
                .get("policies")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
            {
                let pname = p
                    .get("name")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string();
                for r in p
                    .get("resources")
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                {
                    let rname = r
                        .get("name")
                        .and_then(Json::as_str)
                        .unwrap_or("")
                        .to_string();
                    let o: Overrides = r
                        .get("values")
                        .and_then(Json::as_object)
                        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                        .unwrap_or_default();
                    values.insert((pname.clone(), rname), o);
                }
            }
        }
    }
    let outcomes = set.evaluate_with(&resources, &|policy, r| {
        values
            .get(&(policy.to_string(), r.name().to_string()))
            .cloned()
            .unwrap_or_default()
    });
    for exp in test
        .get("results")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let policy = exp.get("policy").and_then(Json::as_str).unwrap_or("");
        // `policy` may be `namespace/name` for a namespaced Policy.
        let policy = policy.rsplit('/').next().unwrap_or(policy).to_string();
        let rule = exp
            .get("rule")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        let kind = exp
            .get("kind")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        let expected = exp
            .get("result")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        for name in strings(exp.get("resources")) {
            let (rns, rname) = match name.split_once('/') {
                Some((a, b)) => (Some(a.to_string()), b.to_string()),
                None => (None, name.clone()),
            };
            let idx: Vec<usize> = resources
                .iter()
                .enumerate()
                .filter(|(_, r)| r.name() == rname && (kind.is_empty() || r.kind() == kind))
                .filter(|(_, r)| rns.as_ref().is_none_or(|n| r.namespace() == n))
                .map(|(i, _)| i)
                .collect();
            let (actual, detail) = if idx.is_empty() {
                (
                    "none".to_string(),
                    Some(format!("no {kind} `{name}` in the resources")),
                )
            } else {
                let mine: Vec<&Outcome> = outcomes
                    .iter()
                    .filter(|o| idx.contains(&o.resource) && o.policy == policy)
                    // Kyverno's test results name an autogen rule by its own rule's name.
                    .filter(|o| {
                        rule.is_empty()
                            || o.rule == rule
                            || o.rule.strip_prefix("autogen-cronjob-") == Some(rule.as_str())
                            || o.rule.strip_prefix("autogen-") == Some(rule.as_str())
                    })
                    .collect();
                summarize(&mine)
            };
            if actual == expected {
                report.agreed += 1;
            }
            report.expected += 1;
            report.results.push(TestResult {
                policy: policy.clone(),
                rule: rule.clone(),
                resource: name,
                kind: kind.clone(),
                expected: expected.clone(),
                actual,
                detail,
            });
        }
    }
    report
}

/// One verdict for several outcomes (every validation of a CEL policy): any fail fails, then
/// any error, then all skipped is skip.
fn summarize(outcomes: &[&Outcome]) -> (String, Option<String>) {
    if outcomes.is_empty() {
        return (
            "none".into(),
            Some("the rule does not select the resource".into()),
        );
    }
    for o in outcomes {
        if let Verdict::Fail(m) = &o.verdict {
            return ("fail".into(), Some(m.clone()));
        }
    }
    for o in outcomes {
        if let Verdict::Error(m) = &o.verdict {
            return ("error".into(), Some(m.clone()));
        }
    }
    if outcomes
        .iter()
        .all(|o| matches!(o.verdict, Verdict::Skip(_)))
    {
        let why = outcomes.iter().find_map(|o| match &o.verdict {
            Verdict::Skip(m) => Some(m.clone()),
            _ => None,
        });
        return ("skip".into(), why);
    }
    ("pass".into(), None)
}
