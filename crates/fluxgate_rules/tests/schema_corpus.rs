//! Schema validation (rule `schema`, layer L0) over every rendered object of every repository
//! of the gitops corpus: each error and warning is judged by hand below, with the reason; any
//! other one fails the test (a false alarm until judged), and so does a judged one that is no
//! longer found. The figures (objects validated, without schema) are printed.

use std::collections::BTreeSet;
use std::path::PathBuf;

use fluxgate_diagnostics::Severity;
use fluxgate_kustomize::RealFs;
use fluxgate_model::{RepoIndex, discover, load_environment};

/// `(repository, severity, file, line, why it is true)`.
const JUDGED_TRUE: &[(&str, &str, &str, u32, &str)] = &[];

#[test]
fn corpus_schema_findings_are_the_judged_ones() {
    let Some(corpus) = fluxgate_testkit::corpus("corpus_schema_findings_are_the_judged_ones") else {
        return;
    };
    let gitops = corpus.join("gitops");
    let mut repos: Vec<PathBuf> = std::fs::read_dir(&gitops)
        .expect("the corpus gitops folder is readable")
        .flatten()
        .map(|e| e.path())
        .collect();
    repos.sort();
    let mut report = String::new();
    let mut unexpected = String::new();
    let mut found: BTreeSet<(String, String, String, u32)> = BTreeSet::new();
    let (mut validated, mut without) = (0, 0);
    for repo in repos {
        let name = repo.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let (config, _) = discover::load(&repo).expect("corpus config");
        let fs = RealFs::new(&repo);
        let envs: Vec<_> = config
            .environments
            .iter()
            .map(|e| load_environment(&fs, &repo, &config, e))
            .collect();
        let (all, stats) = fluxgate_rules::run_with_stats(&RepoIndex::build(&repo), &config, &envs);
        let stats = stats.schema.expect("the schema rule runs by default");
        validated += stats.validated;
        without += stats.without_schema;
        let mine: Vec<_> = all.iter().filter(|d| d.rule == "schema").collect();
        report.push_str(&format!(
            "{name}: {} validated, {} without schema, {} invalid; {} errors, {} warnings\n",
            stats.validated,
            stats.without_schema,
            stats.invalid,
            mine.iter().filter(|d| d.severity == Severity::Error).count(),
            mine.iter().filter(|d| d.severity == Severity::Warning).count(),
        ));
        for d in mine.iter().filter(|d| d.severity == Severity::Note) {
            report.push_str(&format!("  note: {}\n", d.message));
        }
        for d in mine.iter().filter(|d| d.severity >= Severity::Warning) {
            let (file, line) = d
                .location
                .as_ref()
                .map_or((String::new(), 0), |l| (l.file.to_string(), l.line));
            let sev = d.severity.as_str().to_string();
            let judged = JUDGED_TRUE
                .iter()
                .any(|(r, s, f, l, _)| *r == name && *s == sev && *f == file && *l == line);
            if judged {
                found.insert((name.clone(), sev, file, line));
            } else {
                unexpected.push_str(&format!("  {name}: {sev} {file}:{line} {}\n", d.message));
            }
        }
    }
    let missing: Vec<String> = JUDGED_TRUE
        .iter()
        .filter(|(r, s, f, l, _)| {
            !found.contains(&((*r).to_string(), (*s).to_string(), (*f).to_string(), *l))
        })
        .map(|(r, s, f, l, why)| format!("  {r}: {s} {f}:{l} ({why})"))
        .collect();
    report.push_str(&format!("total: {validated} validated, {without} without schema\n"));
    eprintln!("{report}");
    assert!(
        unexpected.is_empty() && missing.is_empty(),
        "schema findings not judged true:\n{unexpected}\njudged true but no longer found:\n{}",
        missing.join("\n")
    );
}
