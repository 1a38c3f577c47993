//! Measures layer L0 (run with `--release`):
//! 1. every policy of ../shared/corpus/kyverno-policies over every rendered object of every
//!    repository of ../shared/corpus/gitops, in one evaluation;
//! 2. L0 as `check` runs it (the repository's own policies) on each gitops repository.
//!
//! `FLUXGATE_CORPUS=/work/shared/corpus cargo run --release -p fluxgate_policy --example l0_bench`

use std::path::PathBuf;
use std::time::Instant;

use fluxgate_kustomize::RealFs;
use fluxgate_model::{discover, load_environment};
use fluxgate_policy::{PolicySet, Resource, Verdict, load_paths};

fn main() {
    let corpus = PathBuf::from(std::env::var("FLUXGATE_CORPUS").expect("FLUXGATE_CORPUS"));
    // Every policy file of the folder, read as `policies:` reads it.
    let (docs, _) = load_paths(&RealFs::new(&corpus), &corpus, &["kyverno-policies".into()]);
    let set = PolicySet::from_documents(docs);
    let mut repos: Vec<PathBuf> = std::fs::read_dir(corpus.join("gitops"))
        .expect("gitops corpus")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    repos.sort();
    let mut all = Vec::new();
    for root in &repos {
        let Ok((config, _)) = discover::load(root) else {
            continue;
        };
        let fs = RealFs::new(root);
        let envs: Vec<_> = config
            .environments
            .iter()
            .map(|e| load_environment(&fs, root, &config, e))
            .collect();
        let start = Instant::now();
        let (findings, report) = fluxgate_policy::check(&fs, root, &config, &envs);
        let own = start.elapsed();
        println!(
            "{}: L0 as check runs it: {} objects, {} policies, {} verdicts, {} findings in {:.1} ms",
            root.file_name().unwrap_or_default().to_string_lossy(),
            report.objects,
            report.policies,
            report.verdicts,
            findings.len(),
            own.as_secs_f64() * 1000.0
        );
        for env in &envs {
            all.extend(
                env.objects()
                    .map(|n| Resource::new(n.to_json(), n.loc.clone())),
            );
        }
    }
    let start = Instant::now();
    let cpu = fluxgate_testkit::cpu_seconds();
    let out = set.evaluate(&all);
    let took = start.elapsed();
    let cpu = fluxgate_testkit::cpu_seconds() - cpu;
    let fails = out
        .iter()
        .filter(|o| matches!(o.verdict, Verdict::Fail(_)))
        .count();
    println!(
        "kyverno-policies ({} CEL, {} Kyverno policies) over {} gitops objects: {} verdicts ({} fail) in {:.1} ms wall, {:.2} s CPU",
        set.cel.len(),
        set.kyverno.len(),
        all.len(),
        out.len(),
        fails,
        took.as_secs_f64() * 1000.0,
        cpu
    );
}
