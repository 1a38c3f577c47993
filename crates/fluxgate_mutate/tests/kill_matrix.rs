//! The kill matrix of examples/homelab: every mutant of every operator, what the gate made of
//! it and which rules fired, as one insta snapshot. Every survivor must be a known one, listed
//! below with the reason no check catches it; a new survivor (a check that stopped biting,
//! or a new operator finding an unguarded value) fails the test, and so does a listed
//! survivor that is now killed (the list must be kept true).

mod common;

use std::path::{Path, PathBuf};

use fluxgate_model::{RepoIndex, discover};
use fluxgate_mutate::coverage::{coverage, inputs};
use fluxgate_mutate::engine::{Options, run};
use fluxgate_mutate::{Run, Status, report};

/// Survivors of examples/homelab that are honest gaps: (operator, file, line, why).
const KNOWN_SURVIVORS: &[common::Judged] = &[
    (
        "overlay-key-removed",
        "clusters/prod/cluster-vars-patch.yaml",
        8,
        "prod's CLUSTER_NAME falls back to homelab-dev: only the Alert's event metadata reads it, and no check compares an environment's name with its cluster",
    ),
    (
        "overlay-key-removed",
        "clusters/prod/cluster-vars-patch.yaml",
        14,
        "prod's LB pool then ends at dev's 192.168.1.99, below its start 192.168.2.90: address-conflict checks what a pool overlaps, not a pool whose range is inverted or leaves the environment's LAN",
    ),
    (
        "playbook-swap",
        "infra/ansible/playbooks/site.yml",
        7,
        "k3s before the node baseline: bootstrap-order models the k3s / VIP / CNI / Flux dependencies, not the kernel modules and sysctls k3s needs (R-NODE-01, the example's safety-critical gap)",
    ),
    (
        "playbook-swap",
        "infra/ansible/playbooks/site.yml",
        10,
        "verify before Cilium: the verify play waits for a Cilium rollout that has not happened, a dependency bootstrap-order does not model",
    ),
    (
        "playbook-swap",
        "infra/ansible/playbooks/site.yml",
        11,
        "Flux before verify: Flux still comes after the CNI, so the cold start completes; only the check before handing over is lost, which no rule models",
    ),
];

fn homelab() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/homelab")
        .canonicalize()
        .expect("examples/homelab exists")
}

/// One line per mutant: status, operator, where, what changed, the rules that killed it.
fn matrix(run: &Run) -> String {
    let mut out = String::new();
    for o in &run.outcomes {
        let by = if o.killed_by.is_empty() {
            String::new()
        } else {
            format!("  <- {}", o.killed_by.join(", "))
        };
        out.push_str(&format!(
            "{:<10} {:<25} {}:{}  {}{by}\n",
            o.status.as_str(),
            o.mutant.operator,
            o.mutant.file,
            o.mutant.line,
            o.mutant.what
        ));
    }
    for s in &run.skipped {
        out.push_str(&format!(
            "{:<10} {:<25} {}:{}  {}\n",
            "skipped", s.operator, s.file, s.line, s.reason
        ));
    }
    out.push_str(&report::score_line(run));
    out.push('\n');
    out
}

#[test]
fn homelab_kill_matrix() {
    let run = common::mutation_run(&homelab(), 2);
    common::assert_survivors_are("examples/homelab", &run, KNOWN_SURVIVORS);
    // Every operator of SPEC §9 makes at least one mutant on the example platform.
    for (name, n) in report::per_operator(&run) {
        assert!(
            n[0] + n[1] + n[2] > 0,
            "operator {name} made no mutant on examples/homelab"
        );
    }
    // The base default under two overlays is the expected equivalent mutant.
    assert!(run.outcomes.iter().any(|o| o.status == Status::Equivalent
        && o.mutant.operator == "base-default-changed"
        && o.mutant.file == "clusters/base/cluster-vars.yaml"));
    insta::assert_snapshot!(matrix(&run));
}

#[test]
fn one_worker_and_two_agree() {
    let root = homelab();
    let one = common::mutation_run(&root, 1);
    let two = common::mutation_run(&root, 2);
    assert_eq!(matrix(&one), matrix(&two));
}

#[test]
fn homelab_coverage_with_mutants() {
    let root = homelab();
    let index = RepoIndex::new(&root);
    let (config, _) = discover::load(&root).expect("homelab config");
    let fs = fluxgate_fs::RealFs::new(&root);
    let i = inputs(&fs, &root, &config, &index)
        .expect("readable")
        .expect("homelab has requirements");
    assert!(i.problems.is_empty(), "{:?}", i.problems);
    let plain = coverage(&i.registry, &i.checks, &i.serving, None);
    let run = common::mutation_run(&root, 2);
    let bitten = coverage(&i.registry, &i.checks, &i.serving, Some(&run.file_bites()));
    insta::assert_snapshot!(format!(
        "{}\n--- with mutants ---\n{}",
        report::coverage_text(&plain, &i.problems),
        report::coverage_text(&bitten, &i.problems)
    ));
}

#[test]
fn without_a_requirements_file_coverage_says_so_and_mutate_still_runs() {
    let root = homelab();
    let index = RepoIndex::new(&root);
    let (mut config, _) = discover::load(&root).expect("homelab config");
    config.requirements = None;
    let fs = fluxgate_fs::RealFs::new(&root);
    assert!(
        inputs(&fs, &root, &config, &index)
            .expect("no error")
            .is_none()
    );
    config.requirements = Some("spec/missing.yaml".into());
    let err = inputs(&fs, &root, &config, &index)
        .err()
        .expect("a missing file is an error")
        .to_string();
    assert!(err.contains("spec/missing.yaml"), "{err}");
    config.requirements = None;
    let opts = Options {
        jobs: 1,
        progress: &|_| {},
        planned: &|_| {},
    };
    let run = run(
        &root,
        &config,
        &index,
        &fluxgate_mutate::requirements::Serving::new(),
        &opts,
    )
    .expect("runs");
    assert!(run.count(Status::Killed) > 0);
    assert!(run.outcomes.iter().all(|o| o.requirements.is_empty()));
}
