//! Bad input: each fixture under `fixtures/bad-input/<case>/` is a small repository (`repo/`,
//! built at `repo/app`) with one defect. The defect is a finding at its file and line, nothing
//! outside `repo/` is read, and the rest renders as `expected.yaml` says (produced by
//! `kubectl kustomize` on the same kustomization without the bad entry).

use std::path::{Path, PathBuf};

use fluxgate_diagnostics::Severity;
use fluxgate_kustomize::Problem;

/// An error when the build fails on it, else a warning: how the `render` rule reports it.
fn severity_of(p: &Problem) -> Severity {
    if p.kind.fails_build() {
        Severity::Error
    } else {
        Severity::Warning
    }
}
use fluxgate_kustomize::{RealFs, build};
use fluxgate_yaml::{Node, Schema, parse_stream};

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bad-input")
        .join(case)
}

/// Builds the case and checks the objects and one expected error finding.
fn check(case: &str, file: &str, line: u32, needle: &str) {
    check_at(case, file, line, needle, Severity::Error);
}

/// [`check`] for a finding of another severity.
fn check_at(case: &str, file: &str, line: u32, needle: &str, severity: Severity) {
    let dir = fixture(case);
    let root = dir.join("repo");
    let fs = RealFs::new(&root);
    let out = build(&fs, &root, &root.join("app"));
    let text =
        std::fs::read_to_string(dir.join("expected.yaml")).expect("fixture has expected.yaml");
    let expected: Vec<Node> = parse_stream("expected.yaml", &text, Schema::Kube).docs;
    assert_eq!(out.objects, expected, "{case}: rendered objects");
    let found = out.problems.iter().any(|d| {
        severity_of(d) == severity
            && d.location
                .as_ref()
                .is_some_and(|l| l.file.as_ref() == file && l.line == line)
            && d.message.contains(needle)
    });
    assert!(
        found,
        "{case}: no {severity:?} at {file}:{line} containing {needle:?}; got {:#?}",
        out.problems
    );
    let printed = format!("{:?}", out.objects);
    assert!(
        !printed.contains("must-never-be-read"),
        "{case}: read outside the root"
    );
}

#[test]
fn resource_outside_the_root_is_a_finding() {
    check(
        "outside-root",
        "app/kustomization.yaml",
        3,
        "outside the repository root",
    );
}

#[test]
fn remote_resources_are_never_fetched() {
    // A warning that says what was not checked: Flux fetches it, the gate does not fail.
    let warn = Severity::Warning;
    check_at("remote", "app/kustomization.yaml", 3, "not fetched", warn);
    check_at("remote", "app/kustomization.yaml", 4, "not fetched", warn);
    // What follows only from the unfetched resource is a warning too.
    check_at(
        "remote",
        "app/patch.yaml",
        1,
        "may come from the remote",
        warn,
    );
}

#[test]
fn helm_charts_are_a_finding() {
    check(
        "helm-charts",
        "app/kustomization.yaml",
        4,
        "Helm charts are not inflated",
    );
}

#[test]
fn a_cycle_ends_with_a_finding() {
    check("cycle", "app/kustomization.yaml", 1, "cyclic kustomization");
}

#[test]
fn broken_yaml_is_a_finding_and_the_rest_renders() {
    check("broken-yaml", "app/broken.yaml", 6, "invalid YAML");
}

#[test]
fn a_symlink_leaving_the_root_is_not_followed() {
    check(
        "symlink",
        "app/kustomization.yaml",
        3,
        "outside the repository root",
    );
}

#[test]
fn exec_plugins_are_not_run() {
    check("exec-plugin", "app/kustomization.yaml", 4, "is not run");
}

#[test]
fn a_replacement_into_a_missing_field_is_a_finding() {
    check(
        "replacement-missing-field",
        "app/kustomization.yaml",
        4,
        "unable to find field \"data.missing\"",
    );
}

#[test]
fn a_var_whose_objref_matches_nothing_is_a_finding() {
    // kustomize compares the objref's group and version exactly: without `apiVersion` the
    // Service (v1) is not found, and kubectl fails the same way.
    check(
        "var-without-apiversion",
        "app/kustomization.yaml",
        4,
        "cannot be mapped",
    );
}

#[test]
fn a_component_with_a_wrong_api_version_is_a_finding() {
    check(
        "component-api-version",
        "comp/kustomization.yaml",
        1,
        "apiVersion for Component should be kustomize.config.k8s.io/v1alpha1",
    );
}

#[test]
fn a_patch_file_with_only_comments_is_a_finding() {
    check(
        "comments-only-patch",
        "app/kustomization.yaml",
        4,
        "holds only comments or blank lines",
    );
}

#[test]
fn empty_and_non_mapping_kustomizations_fail_as_in_kustomize() {
    // kubectl kustomize refuses each of these, at any depth: "kustomization.yaml is empty"
    // for no document, only comments, `{}` or nothing set but apiVersion and kind; "cannot
    // unmarshal array/string into Go value of type types.Kustomization" for a list or a
    // scalar. Never an empty build.
    let cases = [
        ("empty", "kustomization.yaml is empty"),
        ("comments", "kustomization.yaml is empty"),
        ("kind-only", "kustomization.yaml is empty"),
        ("empty-map", "kustomization.yaml is empty"),
        ("list", "cannot unmarshal array into Go value"),
        ("scalar", "cannot unmarshal string into Go value"),
    ];
    let root = fixture("empty-kustomizations").join("repo");
    let fs = RealFs::new(&root);
    let has_error = |out: &fluxgate_kustomize::Build, file: &str, needle: &str| {
        out.problems.iter().any(|d| {
            d.kind.fails_build()
                && d.location
                    .as_ref()
                    .is_some_and(|l| l.file.as_ref() == file && l.line == 1)
                && d.message.contains(needle)
        })
    };
    for (case, needle) in cases {
        let file = format!("{case}/kustomization.yaml");
        let top = build(&fs, &root, &root.join(case));
        assert!(top.objects.is_empty(), "{case}: {:?}", top.objects);
        assert!(
            has_error(&top, &file, needle),
            "{case}: {:#?}",
            top.problems
        );
        // As a base of `app`, each is an error of its own and the rest still renders.
        let app = build(&fs, &root, &root.join("app"));
        assert!(
            has_error(&app, &file, needle),
            "app/{case}: {:#?}",
            app.problems
        );
    }
    check(
        "empty-kustomizations",
        "empty/kustomization.yaml",
        1,
        "is empty",
    );
}
