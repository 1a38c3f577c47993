//! Mutation testing on two real repositories of the corpus (`FLUXGATE_CORPUS`): every
//! survivor must be judged here, with the reason no check catches it, and the number of
//! killed mutants may not drop. Without the corpus the test skips visibly; under `CI=true`
//! that is a failure.

use std::path::Path;

use fluxgate_model::{RepoIndex, discover};
use fluxgate_mutate::Status;
use fluxgate_mutate::engine::{Options, run};

/// (repository, killed at least, judged survivors: (operator, file, line, why)).
type Judged = (
    &'static str,
    usize,
    &'static [(&'static str, &'static str, u32, &'static str)],
);

const REPOSITORIES: &[Judged] = &[
    // 14 substitution variables removed (each leaves a `${VAR}` without default that
    // `substitution-undefined` reports) and 16 SOPS `sops:` blocks removed (each leaves
    // ENC[...] values that `plaintext-secret` reports).
    ("Diaoul__home-ops", 30, &[]),
    // 47 variables removed: 42 leave a `${VAR}` without default (`substitution-undefined`),
    // 4 leave the Kustomization without any variable, so Flux skips substitution and the
    // component's `name: ${APP}-oidc` reaches the API server (`schema`). Its 53 variables
    // used only as `${VAR:-fallback}` are skipped: without them the fallback applies by design.
    (
        "jfroy__flatops",
        46,
        &[(
            "substitution-var-removed",
            "kubernetes/apps/default/esphome/ks.yaml",
            22,
            "the Kustomization already fails before the mutant: its substituteFrom Secret \
             esphome-ipv6-config is in no file of the repository (a `render` error of the \
             baseline, judged true), so Flux applies nothing of it with or without APP",
        )],
    ),
];

#[test]
fn corpus_mutants_are_killed_or_judged() {
    let Some(corpus) = fluxgate_testkit::corpus("corpus_mutants_are_killed_or_judged") else {
        return;
    };
    for (name, killed_floor, judged) in REPOSITORIES {
        let root = corpus
            .join("gitops")
            .join(name)
            .canonicalize()
            .expect("corpus repository");
        let outcome = mutation_run(&root);
        let survivors: Vec<(&str, &str, u32)> = outcome
            .outcomes
            .iter()
            .filter(|o| o.status == Status::Survived)
            .map(|o| (o.mutant.operator, o.mutant.file.as_str(), o.mutant.line))
            .collect();
        for s in &survivors {
            assert!(
                judged.iter().any(|(op, f, l, _)| (*op, *f, *l) == *s),
                "{name}: a survivor nobody judged: {s:?}"
            );
        }
        for (op, f, l, why) in *judged {
            assert!(
                survivors.contains(&(*op, *f, *l)),
                "{name}: {op} at {f}:{l} no longer survives; update the list ({why})"
            );
        }
        let killed = outcome.count(Status::Killed);
        assert!(
            killed >= *killed_floor,
            "{name}: {killed} mutants killed, fewer than the {killed_floor} recorded"
        );
    }
}

fn mutation_run(root: &Path) -> fluxgate_mutate::Run {
    let index = RepoIndex::new(root);
    let (config, _) = discover::load(root).expect("discovers the repository");
    let fs = fluxgate_fs::RealFs::new(root);
    let serving = fluxgate_mutate::coverage::serving_files(&fs, root, &index);
    let opts = Options {
        jobs: 2,
        progress: &|_| {},
        planned: &|_| {},
    };
    run(root, &config, &index, &serving, &opts).expect("the run starts")
}
