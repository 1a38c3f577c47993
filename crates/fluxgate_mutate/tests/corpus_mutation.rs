//! Mutation testing on two real repositories of the corpus (`FLUXGATE_CORPUS`): every
//! survivor must be judged here, with the reason no check catches it, and the number of
//! killed mutants may not drop. Without the corpus the test skips visibly; under `CI=true`
//! that is a failure.

mod common;

use fluxgate_mutate::Status;

/// (repository, killed at least, judged survivors: (operator, file, line, why)).
type Repository = (&'static str, usize, &'static [common::Judged]);

const REPOSITORIES: &[Repository] = &[
    // 16 SOPS `sops:` blocks removed (each leaves ENC[...] values that `plaintext-secret`
    // reports) are killed. The 14 substitution variables removed survive since the gate grades
    // by the Flux a repository runs (issue 20): Diaoul runs Flux 2.1 (its gotk-components.yaml),
    // which substitutes an unset variable with the empty string instead of failing, so each
    // leaves a `substitution-undefined` warning, not an error; no rule guards those values
    // (LoadBalancer addresses, CIDRs, domains) when empty.
    ("Diaoul__home-ops", 16, DIAOUL_LAX),
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

/// Why Diaoul's removed variables survive.
const LAX: &str = "Flux 2.1 blanks an unset variable (a warning), it does not fail the \
                   Kustomization; the blanked value is one no rule guards";

/// Diaoul's 14 `cluster-settings` variables (`cluster/flux/config/config.yaml`), each removed.
const DIAOUL_LAX: &[common::Judged] = &[
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        8,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        9,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        10,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        11,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        12,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        13,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        14,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        15,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        16,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        17,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        18,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        20,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        21,
        LAX,
    ),
    (
        "substitution-var-removed",
        "cluster/flux/config/config.yaml",
        22,
        LAX,
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
