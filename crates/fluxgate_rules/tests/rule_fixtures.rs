//! Every rule of the registry has fixtures, `tests/fixtures/<rule>/{pass,fail}/<case>/`, each a
//! small repository with a fluxgate.yaml: a `pass` case has no finding of the rule; a `fail`
//! case has exactly the findings its `expected.txt` lists (`ENV FILE:LINE` a line, `-` for a
//! finding of no single environment).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use fluxgate_diagnostics::Diagnostic;
use fluxgate_kustomize::RealFs;
use fluxgate_model::{discover, load_environment};
use fluxgate_rules::registry::RULES;

fn cases(rule: &str, kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rule)
        .join(kind);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable fixture folder").path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

fn findings(root: &Path, rule: &str) -> Vec<Diagnostic> {
    all_findings(root)
        .into_iter()
        .filter(|d| d.rule == rule)
        .collect()
}

fn all_findings(root: &Path) -> Vec<Diagnostic> {
    let (config, _) = discover::load(root).expect("fixture config");
    let fs = RealFs::new(root);
    let envs: Vec<_> = config
        .environments
        .iter()
        .map(|e| load_environment(&fs, root, &config, e))
        .collect();
    fluxgate_rules::run(root, &config, &envs)
}

fn key(d: &Diagnostic) -> String {
    keys(d).join(" + ")
}

/// `ENV FILE:LINE` for each environment the finding was seen in (one finding lists them all).
fn keys(d: &Diagnostic) -> Vec<String> {
    let envs: Vec<&str> = if d.environments.is_empty() {
        vec![d.environment.as_deref().unwrap_or("-")]
    } else {
        d.environments.iter().map(String::as_str).collect()
    };
    envs.into_iter()
        .map(|env| match &d.location {
            Some(l) => format!("{env} {}:{}", l.file, l.line),
            None => format!("{env} -"),
        })
        .collect()
}

fn show(ds: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in ds {
        out.push_str(&format!("  {} {}\n", key(d), d.message));
    }
    out
}

#[test]
fn every_rule_has_a_pass_and_a_fail_fixture() {
    for rule in RULES {
        assert!(
            !cases(rule.name, "pass").is_empty(),
            "{} has no pass fixture",
            rule.name
        );
        assert!(
            !cases(rule.name, "fail").is_empty(),
            "{} has no fail fixture",
            rule.name
        );
    }
}

#[test]
fn fixtures_pass_and_fail_as_expected() {
    let mut problems = Vec::new();
    for rule in RULES {
        for case in cases(rule.name, "pass") {
            let found = findings(&case, rule.name);
            if !found.is_empty() {
                problems.push(format!(
                    "{}: unexpected findings\n{}",
                    case.display(),
                    show(&found)
                ));
            }
        }
        for case in cases(rule.name, "fail") {
            let found = findings(&case, rule.name);
            let got: BTreeSet<String> = found.iter().flat_map(keys).collect();
            let expected: BTreeSet<String> = std::fs::read_to_string(case.join("expected.txt"))
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect();
            if got.is_empty() || got != expected {
                problems.push(format!(
                    "{}: expected {expected:?}, found\n{}",
                    case.display(),
                    show(&found)
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Precision on real repositories: every error the rules of this file's families report on
/// the corpus was classified as a false positive and fixed (billimek's `${VAR}` text that
/// Flux never substitutes, 1Password `op://` references, cluster-template's Secret
/// templates, Secrets that an ExternalSecret creates). None may come back.
#[test]
fn corpus_has_no_errors_from_these_rules() {
    let Some(corpus) = fluxgate_testkit::corpus("corpus_has_no_errors_from_these_rules") else {
        return;
    };
    let gitops = corpus.join("gitops");
    let entries = std::fs::read_dir(&gitops).expect("the corpus gitops folder is readable");
    let mut repos: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    repos.sort();
    let rules = [
        "render",
        "substitution-undefined",
        "plaintext-secret",
        "rollout-blast-radius",
        "parity",
    ];
    let mut problems = String::new();
    for repo in repos {
        let errors: Vec<Diagnostic> = all_findings(&repo)
            .into_iter()
            .filter(|d| {
                d.severity == fluxgate_diagnostics::Severity::Error
                    && rules.contains(&d.rule.as_str())
            })
            .collect();
        if !errors.is_empty() {
            problems.push_str(&format!("{}:\n{}", repo.display(), show(&errors)));
        }
    }
    assert!(problems.is_empty(), "{problems}");
}
