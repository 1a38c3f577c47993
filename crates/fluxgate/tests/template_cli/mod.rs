//! `fluxgate template`: a small chart (a subchart with a condition, globals, `crds/`, a hook,
//! a test hook, NOTES.txt) whose expected output is what helm v4.3.2 printed for the same
//! arguments; and helm's errors with exit code 1.

use super::fluxgate;

const CHART: &str = "crates/fluxgate/tests/fixtures/template/demo";

fn expected(name: &str) -> String {
    std::fs::read_to_string(
        super::workspace()
            .join("crates/fluxgate/tests/fixtures/template")
            .join(name),
    )
    .expect("expected output")
}

#[test]
fn template_prints_what_helm_prints() {
    let out = fluxgate(&[
        "template",
        "demo",
        CHART,
        "-n",
        "apps",
        "--kube-version",
        "1.30.0",
        "--include-crds",
        "--set",
        "replicas=3",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected("expected.txt")
    );
    let out = fluxgate(&[
        "template",
        "demo",
        CHART,
        "-n",
        "apps",
        "--kube-version",
        "1.30.0",
        "--skip-tests",
        "--set",
        "sub.enabled=false",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected("expected-skip-tests.txt")
    );
}

#[test]
fn template_errors_exit_1_with_helms_message() {
    let out = fluxgate(&["template", "Bad_Name", CHART]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("Error: release name check failed: release name \"Bad_Name\"")
    );
    let out = fluxgate(&["template", "demo", CHART, "--set", "sub=1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: chart dependencies processing failed: type mismatch on sub: %!t(int64=1)\n"
    );
    let out = fluxgate(&[
        "template",
        "demo",
        "crates/fluxgate/tests/fixtures/template/none",
    ]);
    assert_eq!(out.status.code(), Some(1));
}

/// values.schema.json of the chart and of its subcharts, in helm's order and words (the
/// expected text is what helm v4.3.2 printed); `--skip-schema-validation` renders anyway.
#[test]
fn template_checks_values_against_the_schemas() {
    let chart = "crates/fluxgate/tests/fixtures/template/schema-demo";
    let set = "enabled=no,alpha.size=9,beta.mode=z";
    let out = fluxgate(&["template", "demo", chart, "--set", set]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        expected("expected-schema-error.txt")
    );
    let out = fluxgate(&[
        "template",
        "demo",
        chart,
        "--set",
        set,
        "--skip-schema-validation",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
