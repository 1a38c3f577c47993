//! Layer L0 over a whole corpus in one run: the `schema` rule over every repository of
//! CORPUS/gitops, then every policy of CORPUS/kyverno-policies over every rendered object of
//! those repositories. Every environment is rendered first (not timed). Prints wall and CPU
//! time (user + system) of each part and of both. With mimalloc, as the `fluxgate` binary runs.
//! `FLUXGATE_CORPUS=../shared/corpus cargo run --release -p fluxgate_rules --example l0_corpus`
//! (`bench/policy.sh` runs it).

use std::path::PathBuf;
use std::time::Instant;

use fluxgate_model::RealFs;
use fluxgate_model::config::RuleConfig;
use fluxgate_model::{RepoIndex, discover, load_environment};
use fluxgate_policy::{PolicySet, Resource, load_paths};
use fluxgate_rules::RepoContext;
use fluxgate_rules::rules::schema::schema::{SCHEMA, run};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let corpus = PathBuf::from(std::env::var("FLUXGATE_CORPUS").expect("FLUXGATE_CORPUS"));
    let mut repos: Vec<PathBuf> = std::fs::read_dir(corpus.join("gitops"))
        .expect("a readable gitops corpus")
        .flatten()
        .map(|e| e.path())
        .collect();
    repos.sort();
    let loaded: Vec<_> = repos
        .iter()
        .filter_map(|repo| {
            let (config, _) = discover::load(repo).ok()?;
            let fs = RealFs::new(repo);
            let envs: Vec<_> = config
                .environments
                .iter()
                .map(|e| load_environment(&fs, repo, &config, e))
                .collect();
            let index = RepoIndex::build(repo);
            // The walk is lazy: read it now, as `check` has by the time rules run.
            let _ = index.files().len();
            Some((repo, config, envs, index))
        })
        .collect();
    // Every policy file of the folder, read as `policies:` reads it.
    let (docs, _) = load_paths(&RealFs::new(&corpus), &corpus, &["kyverno-policies".into()]);

    let (wall, cpu) = (Instant::now(), fluxgate_testkit::cpu_seconds());
    let settings = RuleConfig::default();
    let (mut validated, mut without) = (0, 0);
    for (_, config, envs, index) in &loaded {
        let model = fluxgate_model::Model::new(index, config, envs);
        let ctx = RepoContext {
            envs,
            config,
            repo: model.documents,
            schemas: &model.schemas,
            settings: &settings,
            rule: &SCHEMA,
        };
        let (_, stats) = run(&ctx);
        validated += stats.validated;
        without += stats.without_schema;
    }
    let (schema_wall, schema_cpu) = (
        wall.elapsed().as_secs_f64(),
        fluxgate_testkit::cpu_seconds() - cpu,
    );

    let (pwall, pcpu) = (Instant::now(), fluxgate_testkit::cpu_seconds());
    let set = PolicySet::from_documents(docs);
    let mut objects = 0;
    let mut converted = 0;
    let mut verdicts = 0;
    for (_, _, envs, _) in &loaded {
        for env in envs {
            // As `check` does: only the objects some policy can read are converted.
            let resources: Vec<Resource> = env
                .objects()
                .filter(|n| {
                    set.wants(
                        n.str_at(&["apiVersion"]).unwrap_or(""),
                        n.str_at(&["kind"]).unwrap_or(""),
                    )
                })
                .map(|n| Resource::new(n.to_json(), n.loc.clone()))
                .collect();
            objects += env.objects().count();
            converted += resources.len();
            verdicts += set.evaluate(&resources).len();
        }
    }
    let (policy_wall, policy_cpu) = (
        pwall.elapsed().as_secs_f64(),
        fluxgate_testkit::cpu_seconds() - pcpu,
    );
    println!(
        "schemas: {validated} objects validated, {without} without schema: {schema_wall:.3} s wall, \
         {schema_cpu:.2} s CPU\npolicies: {} CEL and {} Kyverno policies (compiled in the run) over \
         {objects} objects ({converted} of a kind some policy reads), {verdicts} verdicts: {policy_wall:.3} s wall, {policy_cpu:.2} s CPU\n\
         L0 total: {:.3} s wall, {:.2} s CPU",
        set.cel.len(),
        set.kyverno.len(),
        schema_wall + policy_wall,
        schema_cpu + policy_cpu,
    );
}
