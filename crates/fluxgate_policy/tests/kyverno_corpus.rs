//! Agreement with the Kyverno CLI's expected results over every test folder of
//! ../shared/corpus/kyverno-policies, split into ValidatingPolicy folders (`*-vpol`) and
//! ClusterPolicy folders. The floors are what was measured; a change that lowers either
//! fails. The corpus comes from FLUXGATE_CORPUS; without it the test says so and is skipped,
//! except under CI=true, where it fails.

use std::path::{Path, PathBuf};

use fluxgate_policy::test_runner::{kyverno_test, test_file};

/// Measured: every expected result of the ValidatingPolicy folders (998 / 998).
const VPOL_FLOOR: usize = 998;
/// Measured: 1,172 of the 1,173 expected results of the ClusterPolicy folders.
const CPOL_FLOOR: usize = 1172;

/// The disagreements that remain, each with why: (test folder, resource, reason). A
/// disagreement not listed here fails the test even when the floors hold.
const KNOWN: &[(&str, &str, &str)] = &[(
    "kasten/kasten-data-protection-by-label",
    "nginx-deployment-skipped",
    "the rule's match selects Deployments labelled purpose=production and this one is \
     purpose=test: the Kyverno CLI reports a rule that does not apply to a resource as \
     `skip`, fluxgate gives no verdict for an object a rule does not select (`none`), since \
     a gate has nothing to report for it",
)];

// Explained and fixed (kept here so that they are not rediscovered):
// - other/restrict-automount-sa-token, deploy-policy-reporter: Kyverno's rule for pod
//   controllers rewrites `request.object.spec`/`request.object.metadata` in the rule's text
//   and evaluates it over the controller, so the precondition's `request."object".metadata`
//   reads the Deployment's own labels (part-of: policy-reporter): skip. fluxgate evaluated the
//   variables over the template as a Pod.
// - nginx-ingress/restrict-annotations, no-annotations: a variable that cannot be resolved in
//   `preconditions` or `deny.conditions` (`values(@)` of absent annotations) is the empty
//   string in Kyverno, not an error: the deny does not fire, pass.
// - openshift/team-validate-ns-name, team1-test: the Kyverno CLI without a user-info file
//   has an empty `request.userInfo` (no `groups`), so the value is null, and Kyverno's set
//   operators (AnyNotIn) are false for a value that is neither a list nor a string: pass.

fn corpus() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("FLUXGATE_CORPUS").map(PathBuf::from) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "FLUXGATE_CORPUS is not set under CI=true"
        );
        eprintln!(
            "SKIPPED: FLUXGATE_CORPUS is not set; the kyverno-policies agreement was not measured"
        );
        return None;
    };
    Some(dir.join("kyverno-policies"))
}

fn tests_under(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Some(f) = test_file(dir) {
        out.push(f);
        return;
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        tests_under(&d, out);
    }
}

#[test]
fn kyverno_policies_agreement_never_drops() {
    let Some(root) = corpus() else { return };
    let (mut vpol, mut cpol) = ((0, 0), (0, 0));
    let mut disagreements = Vec::new();
    let mut unexplained = Vec::new();
    let mut files = Vec::new();
    tests_under(&root, &mut files);
    assert!(files.len() >= 165, "found {} test folders", files.len());
    for f in &files {
        let report = kyverno_test(f);
        assert!(
            report.problems.is_empty(),
            "{}: {:?}",
            f.display(),
            report.problems
        );
        let is_vpol = f
            .strip_prefix(&root)
            .ok()
            .and_then(|p| p.components().next())
            .is_some_and(|c| c.as_os_str().to_string_lossy().ends_with("-vpol"));
        let slot = if is_vpol { &mut vpol } else { &mut cpol };
        slot.0 += report.agreed;
        slot.1 += report.expected;
        let folder = f
            .strip_prefix(&root)
            .ok()
            .and_then(|p| p.parent())
            .map(|p| {
                p.to_string_lossy()
                    .trim_end_matches("/.kyverno-test")
                    .to_string()
            })
            .unwrap_or_default();
        for r in report.results.iter().filter(|r| r.expected != r.actual) {
            let known = KNOWN
                .iter()
                .any(|(dir, res, _)| folder == *dir && r.resource == *res);
            if !known {
                unexplained.push(format!("{folder} {}", r.resource));
            }
            disagreements.push(format!(
                "{} {}/{} {} {}: expected {}, got {} ({})",
                f.display(),
                r.policy,
                r.rule,
                r.kind,
                r.resource,
                r.expected,
                r.actual,
                r.detail.clone().unwrap_or_default()
            ));
        }
    }
    eprintln!(
        "ValidatingPolicy folders: {}/{}; ClusterPolicy folders: {}/{}\n{}",
        vpol.0,
        vpol.1,
        cpol.0,
        cpol.1,
        disagreements.join("\n")
    );
    assert!(
        vpol.0 >= VPOL_FLOOR,
        "ValidatingPolicy agreement dropped: {}/{}",
        vpol.0,
        vpol.1
    );
    assert!(
        cpol.0 >= CPOL_FLOOR,
        "ClusterPolicy agreement dropped: {}/{}",
        cpol.0,
        cpol.1
    );
    assert!(
        unexplained.is_empty(),
        "disagreements without a reason in KNOWN: {unexplained:?}"
    );
}
