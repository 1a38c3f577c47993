//! Agreement with the Kyverno CLI's expected results over every test folder of
//! ../shared/corpus/kyverno-policies, split into ValidatingPolicy folders (`*-vpol`) and
//! ClusterPolicy folders. The floors are what was measured; a change that lowers either
//! fails. The corpus comes from FLUXGATE_CORPUS; without it the test says so and is skipped,
//! except under CI=true, where it fails.

use std::path::{Path, PathBuf};

use fluxgate_policy::test_runner::{kyverno_test, test_file};

/// Measured: every expected result of the ValidatingPolicy folders (998 / 998).
const VPOL_FLOOR: usize = 998;
/// Measured: 1,169 of the 1,173 expected results of the ClusterPolicy folders.
const CPOL_FLOOR: usize = 1169;

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
        for r in report.results.iter().filter(|r| r.expected != r.actual) {
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
}
