//! Mutation testing on two real repositories of the corpus (`FLUXGATE_CORPUS`): every
//! survivor must be judged here, with the reason no check catches it, and the number of
//! killed mutants may not drop. Without the corpus the test skips visibly; under `CI=true`
//! that is a failure.

mod common;

use fluxgate_mutate::Status;

/// (repository, killed at least, judged survivors: (operator, file, line, why)).
type Repository = (&'static str, usize, &'static [common::Judged]);

const REPOSITORIES: &[Repository] = &[
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
        let outcome = common::mutation_run(&root, 2);
        common::assert_survivors_are(name, &outcome, judged);
        let killed = outcome.count(Status::Killed);
        assert!(
            killed >= *killed_floor,
            "{name}: {killed} mutants killed, fewer than the {killed_floor} recorded"
        );
    }
}
