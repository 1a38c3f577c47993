//! Times the `schema` rule (L0) alone over every repository of a corpus folder: every
//! environment is rendered first (not timed), then the rule runs over all of them in one
//! loop. `cargo run --release -p fluxgate_rules --example schema_bench -- CORPUS/gitops`
//! (`bench/schema.sh` runs it).

use std::path::{Path, PathBuf};
use std::time::Instant;

use fluxgate_model::RealFs;
use fluxgate_model::config::RuleConfig;
use fluxgate_model::{RepoIndex, discover, load_environment};
use fluxgate_rules::RepoContext;
use fluxgate_rules::rules::schema::schema::{SCHEMA, run};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/corpus/gitops".into());
    let mut repos: Vec<PathBuf> = std::fs::read_dir(Path::new(&dir))
        .expect("a readable corpus folder")
        .flatten()
        .map(|e| e.path())
        .collect();
    repos.sort();
    let t = Instant::now();
    let loaded: Vec<_> = repos
        .iter()
        .map(|repo| {
            let (config, _) = discover::load(repo).expect("repository config");
            let fs = RealFs::new(repo);
            let envs: Vec<_> = config
                .environments
                .iter()
                .map(|e| load_environment(&fs, repo, &config, e))
                .collect();
            let index = RepoIndex::build(repo);
            // The walk is lazy: read it now, as `check` has by the time rules run.
            let _ = index.files().len();
            (repo, config, envs, index)
        })
        .collect();
    let render = t.elapsed();
    let settings = RuleConfig::default();
    let t = Instant::now();
    let (mut validated, mut without, mut findings) = (0, 0, 0);
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
        let (diags, stats) = run(&ctx);
        validated += stats.validated;
        without += stats.without_schema;
        findings += diags
            .iter()
            .filter(|d| d.severity > fluxgate_diagnostics::Severity::Note)
            .count();
    }
    let schema = t.elapsed();
    println!(
        "{} repositories rendered in {:.3} s; schema over them: {:.3} s ({validated} objects \
         validated, {without} without schema, {findings} errors and warnings)",
        loaded.len(),
        render.as_secs_f64(),
        schema.as_secs_f64()
    );
}
