//! Measures layer L0 (run with `--release`):
//! 1. every policy of ../shared/corpus/kyverno-policies over every rendered object of every
//!    repository of ../shared/corpus/gitops, in one evaluation;
//! 2. L0 as `check` runs it (the repository's own policies) on each gitops repository.
//!
//! `FLUXGATE_CORPUS=/work/shared/corpus cargo run --release -p fluxgate_policy --example l0_bench`

use std::path::{Path, PathBuf};
use std::time::Instant;

use fluxgate_kustomize::RealFs;
use fluxgate_model::{discover, load_environment};
use fluxgate_policy::{PolicySet, Resource, Verdict, policy_documents};

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("yaml"))
        {
            out.push(p);
        }
    }
}

/// CPU time (user + system) of this process so far, in seconds (from /proc/self/stat, in
/// clock ticks of 10 ms).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line; 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let corpus = PathBuf::from(std::env::var("FLUXGATE_CORPUS").expect("FLUXGATE_CORPUS"));
    let mut files = Vec::new();
    yaml_files(&corpus.join("kyverno-policies"), &mut files);
    let mut docs = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        docs.extend(policy_documents(&f.to_string_lossy(), &text).0);
    }
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
    let cpu = cpu_seconds();
    let out = set.evaluate(&all);
    let took = start.elapsed();
    let cpu = cpu_seconds() - cpu;
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
