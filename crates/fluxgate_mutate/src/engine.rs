//! The mutation run: render the repository once (noting what each environment reads), let
//! the operators propose mutants, then for each mutant serve its edits through an
//! [`Overlay`], render again only the environments that read an edited file, run the gate,
//! and compare with the baseline.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, LazyLock};

use fluxgate_diagnostics::{Diagnostic, Severity};
use fluxgate_fs::{Fs, Overlay, RealFs};
use fluxgate_model::config::{Config, EnvConfig};
use fluxgate_model::{Environment, RepoIndex};
use rayon::prelude::*;
use regex::Regex;

use crate::fs::{Recorder, Snapshot};
use crate::operators::{Ctx, generate};
use crate::requirements::Serving;
use crate::{Error, Mutant, Outcome, Run, Skipped, Status};

/// How to run.
pub struct Options<'a> {
    /// Worker threads (mutants are evaluated in parallel, one mutant per unit of work).
    pub jobs: usize,
    /// Called after each mutant (for a progress bar), with the number of mutants.
    pub progress: &'a (dyn Fn(usize) + Sync),
    /// Called once the mutants are known, with how many there are.
    pub planned: &'a (dyn Fn(usize) + Sync),
}

/// The repository as it is: its environments rendered, the gate's findings, and what each
/// environment read.
struct Baseline {
    envs: Vec<Environment>,
    fingerprints: Vec<u64>,
    /// Per environment: the files it read (relative paths).
    reach: Vec<BTreeSet<String>>,
    errors: HashSet<String>,
    error_count: usize,
}

/// Mutation-tests the repository at `root` (absolute): `index` is its index (for the list of
/// files the walk found), `serving` its requirements' serving files.
pub fn run(
    root: &Path,
    config: &Config,
    index: &RepoIndex,
    serving: &Serving,
    opts: &Options<'_>,
) -> Result<Run, Error> {
    let pool = fluxgate_model::charts::deep_stacks(rayon::ThreadPoolBuilder::new())
        .num_threads(opts.jobs.max(1))
        .build()
        .map_err(|source| Error::ThreadPool {
            jobs: opts.jobs,
            source,
        })?;
    Ok(pool.install(|| run_in_pool(root, config, index, serving, opts)))
}

fn run_in_pool(
    root: &Path,
    config: &Config,
    index: &RepoIndex,
    serving: &Serving,
    opts: &Options<'_>,
) -> Run {
    let snapshot: Arc<Snapshot> = Arc::new(Snapshot::new(Box::new(RealFs::new(root))));
    let walked: Vec<String> = index
        .paths_where(root, |_| true)
        .iter()
        .map(|p| rel_of(root, p))
        .collect();
    let walked: Vec<&str> = walked.iter().map(String::as_str).collect();
    let base = baseline(root, config, &snapshot, &walked);
    let base_index = RepoIndex::from_files(Box::new(snapshot.clone()), root, &walked);
    let ctx = Ctx {
        root,
        config,
        envs: &base.envs,
        index: &base_index,
        reach: &base.reach,
        fs: snapshot.as_ref(),
    };
    let found = generate(&ctx);
    (opts.planned)(found.mutants.len());
    let results: Vec<Result<Outcome, Skipped>> = found
        .mutants
        .par_iter()
        .map(|m| {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                evaluate(root, config, &snapshot, &walked, &base, serving, m)
            }))
            .map_err(|p| {
                let why = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_default();
                Skipped {
                    operator: m.operator,
                    file: m.file.clone(),
                    line: m.line,
                    reason: format!(
                        "fluxgate failed while checking this mutant ({why}); it is not counted"
                    ),
                }
            });
            (opts.progress)(found.mutants.len());
            r
        })
        .collect();
    let mut outcomes = Vec::new();
    let mut skipped = found.skipped;
    for r in results {
        match r {
            Ok(o) => outcomes.push(o),
            Err(s) => skipped.push(s),
        }
    }
    outcomes.sort_by(|a, b| {
        (
            &a.mutant.file,
            a.mutant.line,
            a.mutant.operator,
            &a.mutant.what,
        )
            .cmp(&(
                &b.mutant.file,
                b.mutant.line,
                b.mutant.operator,
                &b.mutant.what,
            ))
    });
    skipped.sort_by(|a, b| {
        (&a.file, a.line, a.operator, &a.reason).cmp(&(&b.file, b.line, b.operator, &b.reason))
    });
    Run {
        outcomes,
        skipped,
        baseline_errors: base.error_count,
    }
}

fn rel_of(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

fn baseline(root: &Path, config: &Config, snapshot: &Arc<Snapshot>, walked: &[&str]) -> Baseline {
    let recorders: Vec<Arc<Recorder>> = config
        .environments
        .iter()
        .map(|_| Arc::new(Recorder::new(snapshot.clone())))
        .collect();
    let record = |i: usize, _: &EnvConfig| -> Arc<dyn Fs> { recorders[i].clone() };
    let index = RepoIndex::from_files(Box::new(snapshot.clone()), root, walked);
    let (envs, diags) = gate(
        index,
        config,
        &fluxgate_check::Options {
            env_fs: Some(&record),
            ..gate_options()
        },
    );
    let fingerprints = envs.par_iter().map(fingerprint).collect();
    // Everything the rules read was derived while the environments loaded.
    let reach = recorders
        .iter()
        .map(|r| r.files().iter().map(|p| rel_of(root, p)).collect())
        .collect();
    let errors: HashSet<String> = diags
        .iter()
        .filter(|d| d.severity >= Severity::Error)
        .map(key)
        .collect();
    Baseline {
        error_count: errors.len(),
        envs,
        fingerprints,
        reach,
        errors,
    }
}

fn evaluate(
    root: &Path,
    config: &Config,
    snapshot: &Arc<Snapshot>,
    walked: &[&str],
    base: &Baseline,
    serving: &Serving,
    m: &Mutant,
) -> Outcome {
    let mut overlay = Overlay::new(snapshot.clone());
    for e in &m.edits {
        overlay.replace(root.join(&e.file), e.text.clone().into_bytes());
    }
    let fs: Arc<dyn Fs> = Arc::new(overlay);
    let reached: Vec<usize> = (0..base.envs.len())
        .filter(|&i| m.edits.iter().any(|e| base.reach[i].contains(&e.file)))
        .collect();
    // Only the environments the mutant reaches are derived again; the others are reused.
    let reuse: Vec<Option<&Environment>> = (0..base.envs.len())
        .map(|i| (!reached.contains(&i)).then(|| &base.envs[i]))
        .collect();
    let index = RepoIndex::from_files(Box::new(fs.clone()), root, walked);
    let (envs, diags) = gate(
        index,
        config,
        &fluxgate_check::Options {
            reuse,
            ..gate_options()
        },
    );
    let new: Vec<&Diagnostic> = diags
        .iter()
        .filter(|d| d.severity >= Severity::Error && !base.errors.contains(&key(d)))
        .collect();
    // Only a mutant no check killed needs to know whether its render changed.
    let changed = || -> Vec<usize> {
        reached
            .par_iter()
            .copied()
            .filter(|&i| fingerprint(&envs[i]) != base.fingerprints[i])
            .collect()
    };
    let names = |idx: &[usize]| -> Vec<String> {
        idx.iter()
            .map(|&i| base.envs[i].name().to_string())
            .collect()
    };
    let mut killed_by: Vec<String> = new.iter().map(|d| d.rule.clone()).collect();
    killed_by.sort();
    killed_by.dedup();
    let (status, environments) = if killed_by.is_empty() {
        let changed = changed();
        if !reached.is_empty() && changed.is_empty() {
            (Status::Equivalent, Vec::new())
        } else {
            (Status::Survived, names(&changed))
        }
    } else {
        let mut caught: Vec<String> = Vec::new();
        for d in &new {
            for e in d.environment.iter().chain(d.environments.iter()) {
                if !caught.contains(e) {
                    caught.push(e.clone());
                }
            }
        }
        let order: Vec<String> = names(&(0..base.envs.len()).collect::<Vec<_>>());
        caught.sort_by_key(|e| order.iter().position(|o| o == e));
        (Status::Killed, caught)
    };
    let mut requirements: Vec<String> = serving
        .iter()
        .filter(|(_, files)| m.edits.iter().any(|e| files.contains(&e.file)))
        .map(|(id, _)| id.clone())
        .collect();
    requirements.sort();
    Outcome {
        mutant: m.clone(),
        status,
        killed_by,
        environments,
        reached: names(&reached),
        requirements,
    }
}

/// The gate's options for a mutation run: every environment, the rules without L0's
/// policies (the kill matrix is the rules').
fn gate_options<'a>() -> fluxgate_check::Options<'a> {
    fluxgate_check::Options {
        skip_policies: true,
        ..fluxgate_check::Options::default()
    }
}

/// Runs the gate (the one entry point `check` uses) over the repository `index` serves.
fn gate(
    index: RepoIndex,
    config: &Config,
    opts: &fluxgate_check::Options<'_>,
) -> (Vec<Environment>, Vec<Diagnostic>) {
    let repo = fluxgate_check::Repo::with_index(index, config.clone());
    match fluxgate_check::check(&repo, opts) {
        Ok(report) => (report.envs, report.diagnostics),
        // A configuration with no environment has nothing to mutate.
        Err(_) => (Vec::new(), Vec::new()),
    }
}

static LINE_NUMBERS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r":\d+|line \d+|lines \d+-\d+").expect("static regex"));

/// A finding's identity across a mutant: its rule, file and message, line numbers left out (a
/// mutant that removes a line moves every finding below it).
fn key(d: &Diagnostic) -> String {
    let file = d
        .location
        .as_ref()
        .map(|l| l.file.to_string())
        .unwrap_or_default();
    let mut envs: Vec<&String> = d.environment.iter().chain(d.environments.iter()).collect();
    envs.sort();
    envs.dedup();
    format!(
        "{}|{file}|{envs:?}|{}",
        d.rule,
        LINE_NUMBERS.replace_all(&d.message, ":N")
    )
}

/// What an environment renders to, as one number: its objects, its releases' effective
/// values, what could not be rendered, and the bootstrap (play order, every host's
/// variables, every template the site playbook writes).
fn fingerprint(env: &Environment) -> u64 {
    let mut h = DefaultHasher::new();
    for obj in env.objects() {
        let mut json = obj.to_json();
        // What a HelmRelease deploys is its effective values (below), not how they are
        // spelled: an override equal to the chart default renders the same.
        if obj.str_at(&["kind"]) == Some("HelmRelease")
            && let Some(spec) = json.get_mut("spec").and_then(|s| s.as_object_mut())
        {
            spec.remove("values");
        }
        json.to_string().hash(&mut h);
    }
    for (id, r) in &env.releases {
        id.hash(&mut h);
        r.values.tree.to_json().to_string().hash(&mut h);
    }
    for p in &env.problems {
        LINE_NUMBERS.replace_all(&p.message, ":N").hash(&mut h);
    }
    if let Some(boot) = &env.bootstrap {
        for po in boot.project.order() {
            po.play.file.hash(&mut h);
            po.play.name.hash(&mut h);
            po.play.hosts.hash(&mut h);
            po.play.roles.hash(&mut h);
            po.hosts.hash(&mut h);
            for t in &po.play.tasks {
                t.module.hash(&mut h);
                t.args.to_json().to_string().hash(&mut h);
                t.when
                    .as_ref()
                    .map(|w| w.to_json().to_string())
                    .hash(&mut h);
                if let Some(path) = t.template.as_ref().and_then(|t| t.resolved.as_ref()) {
                    for host in po.hosts.iter().filter(|x| boot.hosts.contains(x)) {
                        match boot.project.render_template(path, host) {
                            Ok(r) => r.text.hash(&mut h),
                            Err(e) => e.message.hash(&mut h),
                        }
                    }
                }
            }
        }
        for host in &boot.hosts {
            host.hash(&mut h);
            let vars = boot.project.host_vars(host);
            for (name, r) in &vars.vars {
                name.hash(&mut h);
                r.value.to_json().to_string().hash(&mut h);
            }
            for (name, e) in &vars.errors {
                name.hash(&mut h);
                e.to_string().hash(&mut h);
            }
        }
    }
    h.finish()
}
