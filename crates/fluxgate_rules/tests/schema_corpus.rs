//! Schema validation (rule `schema`, layer L0) over every rendered object of every repository
//! of the gitops corpus: each error and warning is judged by hand below, with the reason; any
//! other one fails the test (a false alarm until judged), and so does a judged one that is no
//! longer found. The figures (objects validated, without schema) are printed.

use std::collections::BTreeSet;
use std::path::PathBuf;

use fluxgate_diagnostics::Severity;
use fluxgate_model::RealFs;
use fluxgate_model::{Model, RepoIndex, discover, load_environment};

/// `(repository, severity, file, line, why it is true)`.
const JUDGED_TRUE: &[(&str, &str, &str, u32, &str)] = &[];

#[test]
fn corpus_schema_findings_are_the_judged_ones() {
    let Some(corpus) = fluxgate_testkit::corpus("corpus_schema_findings_are_the_judged_ones")
    else {
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
        let name = repo
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (config, _) = discover::load(&repo).expect("corpus config");
        let fs = RealFs::new(&repo);
        let envs: Vec<_> = config
            .environments
            .iter()
            .map(|e| load_environment(&fs, &repo, &config, e))
            .collect();
        let (all, stats) =
            fluxgate_rules::run_with_stats(&Model::new(&RepoIndex::build(&repo), &config, &envs));
        let stats = stats.schema.expect("the schema rule runs by default");
        validated += stats.validated;
        without += stats.without_schema;
        let mine: Vec<_> = all.iter().filter(|d| d.rule == "schema").collect();
        report.push_str(&format!(
            "{name}: {} validated, {} without schema, {} invalid; {} errors, {} warnings\n",
            stats.validated,
            stats.without_schema,
            stats.invalid,
            mine.iter()
                .filter(|d| d.severity == Severity::Error)
                .count(),
            mine.iter()
                .filter(|d| d.severity == Severity::Warning)
                .count(),
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
    report.push_str(&format!(
        "total: {validated} validated, {without} without schema\n"
    ));
    eprintln!("{report}");
    assert!(
        unexpected.is_empty() && missing.is_empty(),
        "schema findings not judged true:\n{unexpected}\njudged true but no longer found:\n{}",
        missing.join("\n")
    );
}

/// Recall: every object of the corpus that has a schema, with a defect planted (an unknown
/// top-level field; `metadata.name` as a list), is caught, against the same catalogs the rule
/// builds (the repository's CRDs, then the environment's). An unknown field under a CRD whose
/// root keeps unknown fields (`x-kubernetes-preserve-unknown-fields`) is legal and counted apart.
#[test]
fn corpus_planted_defects_are_caught() {
    use fluxgate_schema::{Catalog, Outcome, ViolationKind};
    use fluxgate_yaml::{Node, Value};
    let Some(corpus) = fluxgate_testkit::corpus("corpus_planted_defects_are_caught") else {
        return;
    };
    let mut repos: Vec<PathBuf> = std::fs::read_dir(corpus.join("gitops"))
        .expect("the corpus gitops folder is readable")
        .flatten()
        .map(|e| e.path())
        .collect();
    repos.sort();
    let (mut objects, mut unknown_caught, mut type_caught, mut kept) = (0, 0, 0, 0);
    let mut missed = Vec::new();
    for repo in repos {
        let (config, _) = discover::load(&repo).expect("corpus config");
        let fs = RealFs::new(&repo);
        let index = RepoIndex::build(&repo);
        let mut repo_catalog = Catalog::new();
        for f in index.files() {
            if f.text.contains("CustomResourceDefinition") {
                f.docs().iter().for_each(|d| repo_catalog.add_crd(d));
            }
        }
        for e in &config.environments {
            let env = load_environment(&fs, &repo, &config, e);
            let mut env_catalog = Catalog::new();
            env.objects().for_each(|o| env_catalog.add_crd(o));
            for obj in env.objects() {
                if !matches!(
                    repo_catalog.validate(obj, &[&env_catalog]),
                    Outcome::Valid { .. } | Outcome::Invalid { .. }
                ) {
                    continue;
                }
                objects += 1;
                let label = format!(
                    "{} {}",
                    repo.display(),
                    obj.str_at(&["kind"]).unwrap_or_default()
                );
                let mut typo = obj.clone();
                if let Some(m) = typo.as_map_mut() {
                    m.insert(
                        "fluxgateInjected".to_string(),
                        Node::new(Value::Int(1), obj.loc.clone()),
                    );
                }
                match repo_catalog.validate(&typo, &[&env_catalog]) {
                    Outcome::Invalid { violations, .. }
                        if violations.iter().any(|v| {
                            v.kind == ViolationKind::UnknownField && v.path == "fluxgateInjected"
                        }) =>
                    {
                        unknown_caught += 1;
                    }
                    Outcome::Valid {
                        against: fluxgate_schema::Against::Custom(_),
                    } => kept += 1,
                    other => missed.push(format!("{label}: unknown field: {other:?}")),
                }
                let mut bad = obj.clone();
                if let Some(name) = bad.get_mut("metadata").and_then(|m| m.get_mut("name")) {
                    name.value = Value::Seq(Vec::new());
                }
                match repo_catalog.validate(&bad, &[&env_catalog]) {
                    Outcome::Invalid { violations, .. }
                        if violations.iter().any(|v| {
                            v.kind == ViolationKind::WrongType && v.path == "metadata.name"
                        }) =>
                    {
                        type_caught += 1;
                    }
                    other => missed.push(format!("{label}: wrong type: {other:?}")),
                }
            }
        }
    }
    eprintln!(
        "planted in {objects} objects: unknown field caught {unknown_caught} (kept by \
         preserve-unknown-fields roots: {kept}), wrong type caught {type_caught}"
    );
    assert!(objects > 1000, "the corpus has objects with schemas");
    assert!(
        missed.is_empty(),
        "planted defects missed:\n{}",
        missed[..missed.len().min(20)].join("\n")
    );
}
