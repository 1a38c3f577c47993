//! `fluxgate policy test`: agreement with a Kyverno CLI test, its JSON shape and exit codes.

use super::{fluxgate, json_ok};

#[test]
fn policy_test_agrees_and_reports_json() {
    let v = json_ok(&[
        "policy",
        "test",
        "crates/fluxgate/tests/fixtures/policy-test/agree",
        "--format",
        "json",
    ]);
    assert_eq!(v["expected"], 3);
    assert_eq!(v["agreed"], 3);
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    for r in results {
        for key in ["policy", "rule", "resource", "expected", "actual"] {
            assert!(r.get(key).is_some(), "{key} in {r}");
        }
        assert_eq!(r["expected"], r["actual"]);
    }
    // The Deployment fails through the rule Kyverno generates for pod controllers.
    assert!(
        results
            .iter()
            .any(|r| r["resource"] == "bad-deploy" && r["actual"] == "fail")
    );
}

#[test]
fn policy_test_disagreement_exits_1_and_names_it() {
    let out = fluxgate(&[
        "policy",
        "test",
        "crates/fluxgate/tests/fixtures/policy-test/disagree",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    insta::assert_snapshot!(text);
}

#[test]
fn policy_test_without_a_test_exits_2() {
    let out = fluxgate(&[
        "policy",
        "test",
        "crates/fluxgate/tests/fixtures/secrets-planted",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
