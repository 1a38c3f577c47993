//! What the mutation tests share: one run over a repository, and the check that its
//! survivors are exactly the judged ones.

use std::path::Path;

use fluxgate_model::{RepoIndex, discover};
use fluxgate_mutate::engine::{Options, run};
use fluxgate_mutate::{Run, Status};

/// A survivor judged honest: (operator, file, line, why no check catches it).
pub type Judged = (&'static str, &'static str, u32, &'static str);

/// The mutation run of the repository at `root`, with its discovered config.
pub fn mutation_run(root: &Path, jobs: usize) -> Run {
    let index = RepoIndex::new(root);
    let (config, _) = discover::load(root).expect("discovers the repository");
    let fs = fluxgate_fs::RealFs::new(root);
    let serving = fluxgate_mutate::coverage::serving_files(&fs, root, &index);
    let opts = Options {
        jobs,
        progress: &|_| {},
        planned: &|_| {},
    };
    run(root, &config, &index, &serving, &opts).expect("the run starts")
}

/// Every survivor of `run` is judged, and every judged one still survives (the list stays
/// true): a new survivor means a check stopped biting or an operator found an unguarded value.
pub fn assert_survivors_are(what: &str, run: &Run, judged: &[Judged]) {
    let survivors: Vec<(&str, &str, u32)> = run
        .outcomes
        .iter()
        .filter(|o| o.status == Status::Survived)
        .map(|o| (o.mutant.operator, o.mutant.file.as_str(), o.mutant.line))
        .collect();
    for s in &survivors {
        assert!(
            judged.iter().any(|(op, f, l, _)| (*op, *f, *l) == *s),
            "{what}: a new survivor {s:?}; a check stopped biting, or judge it in the list with the reason"
        );
    }
    for (op, f, l, why) in judged {
        assert!(
            survivors.contains(&(*op, *f, *l)),
            "{what}: {op} at {f}:{l} no longer survives; remove it from the list ({why})"
        );
    }
}
