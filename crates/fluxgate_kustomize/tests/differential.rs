//! Differential test against the reference: `kubectl kustomize DIR` (kustomize v5.5.0) and
//! fluxgate's build on every kustomization directory of the corpus, compared object by object
//! as values, in order, and the printed bytes (fluxgate's emitter against kubectl's stdout).
//! The agreement fractions may only go up (the ratchets below).
//!
//! Needs `FLUXGATE_CORPUS` (the corpus folder) and `kubectl` on the PATH; skips otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use fluxgate_kustomize::{KUSTOMIZATION_FILES, RealFs, build};
use fluxgate_yaml::{EmitOptions, Node, Schema, emit_docs, parse_stream};

/// Lowest accepted agreement, per corpus: raise these as mismatches are fixed (each is the
/// measured fraction rounded down to three decimals).
const RATCHET_GITOPS: Ratchet = Ratchet {
    values: 1.0,
    bytes: 1.0,
};
const RATCHET_CASES: Ratchet = Ratchet {
    values: 1.0,
    bytes: 1.0,
};

struct Case {
    dir: PathBuf,
    root: PathBuf,
}

enum Outcome {
    /// The same objects; whether the printed text is byte for byte kubectl's.
    Equal {
        bytes: bool,
    },
    /// kubectl itself failed: not counted; whether fluxgate reported an error too.
    OracleFailed {
        refused: bool,
    },
    Mismatch(String),
}

fn corpus(test: &str) -> Option<PathBuf> {
    let corpus = fluxgate_testkit::corpus(test)?;
    fluxgate_testkit::kubectl(test).then_some(corpus)
}

fn has_kustomization(dir: &Path) -> bool {
    KUSTOMIZATION_FILES.iter().any(|f| dir.join(f).is_file())
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    if has_kustomization(dir) {
        out.push(dir.to_path_buf());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.is_symlink())
        .collect();
    subs.sort();
    for s in subs {
        walk(&s, out);
    }
}

fn gitops_cases(corpus: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let Ok(repos) = std::fs::read_dir(corpus.join("gitops")) else {
        return cases;
    };
    let mut repos: Vec<PathBuf> = repos.filter_map(Result::ok).map(|e| e.path()).collect();
    repos.sort();
    for repo in repos {
        let mut dirs = Vec::new();
        walk(&repo, &mut dirs);
        cases.extend(dirs.into_iter().map(|dir| Case {
            dir,
            root: repo.clone(),
        }));
    }
    cases
}

fn kustomize_cases(corpus: &Path) -> Vec<Case> {
    let top = corpus.join("kustomize-cases");
    let mut dirs = Vec::new();
    walk(&top, &mut dirs);
    dirs.into_iter()
        // Cases reach into sibling folders (`../bases`): the whole case folder is the root.
        .map(|dir| Case {
            root: top.clone(),
            dir,
        })
        .collect()
}

fn describe(n: &Node) -> String {
    format!(
        "{}/{}",
        n.str_at(&["kind"]).unwrap_or("?"),
        n.str_at(&["metadata", "name"]).unwrap_or("?")
    )
}

fn first_difference(a: &Node, b: &Node, path: &str) -> String {
    match (a.as_map(), b.as_map()) {
        (Some(ma), Some(mb)) => {
            for (k, va) in ma {
                match mb.get(k) {
                    None => return format!("{path}.{k} only in kubectl"),
                    Some(vb) if va != vb => {
                        return first_difference(va, vb, &format!("{path}.{k}"));
                    }
                    _ => {}
                }
            }
            if let Some(k) = mb.keys().find(|k| !ma.contains_key(*k)) {
                return format!("{path}.{k} only in fluxgate");
            }
            format!("{path}: maps differ")
        }
        _ => match (a.as_seq(), b.as_seq()) {
            (Some(sa), Some(sb)) if sa.len() == sb.len() => {
                for (i, (x, y)) in sa.iter().zip(sb).enumerate() {
                    if x != y {
                        return first_difference(x, y, &format!("{path}[{i}]"));
                    }
                }
                format!("{path}: lists differ")
            }
            _ => format!(
                "{path}: kubectl {:?} vs fluxgate {:?}",
                a.to_json(),
                b.to_json()
            ),
        },
    }
}

fn run_case(case: &Case) -> Outcome {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(&case.dir)
        .output();
    let Ok(out) = out else {
        return Outcome::OracleFailed { refused: true };
    };
    if !out.status.success() {
        let fs = RealFs::new(&case.root);
        let refused = build(&fs, &case.root, &case.dir).has_errors();
        return Outcome::OracleFailed { refused };
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let expected: Vec<Node> = parse_stream("kubectl", &text, Schema::Kube)
        .docs
        .into_iter()
        .filter(|d| !d.is_null())
        .collect();
    let fs = RealFs::new(&case.root);
    let got = build(&fs, &case.root, &case.dir);
    if got.has_errors() {
        let first = got.problems.iter().find(|d| d.kind.fails_build());
        return Outcome::Mismatch(format!(
            "fluxgate error: {}",
            first
                .map(|d| format!(
                    "{}: {}",
                    d.location
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    d.message
                ))
                .unwrap_or_default()
        ));
    }
    if expected.len() != got.objects.len() {
        let names = |v: &[Node]| v.iter().map(describe).collect::<Vec<_>>().join(", ");
        return Outcome::Mismatch(format!(
            "{} objects from kubectl [{}], {} from fluxgate [{}]",
            expected.len(),
            names(&expected),
            got.objects.len(),
            names(&got.objects)
        ));
    }
    for (e, g) in expected.iter().zip(&got.objects) {
        if e != g {
            return Outcome::Mismatch(format!("{}: {}", describe(e), first_difference(e, g, "")));
        }
    }
    let printed = emit_docs(
        &got.objects,
        EmitOptions {
            sort_keys: true,
            ..EmitOptions::default()
        },
    );
    Outcome::Equal {
        bytes: printed.as_bytes() == out.stdout.as_slice(),
    }
}

/// Runs every case on two threads (the machine has two cores).
fn run_all(cases: &[Case]) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..cases.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    let o = run_case(case);
                    results.lock().expect("no thread panicked holding the lock")[i] = Some(o);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("threads joined")
        .into_iter()
        .map(|o| o.unwrap_or(Outcome::OracleFailed { refused: true }))
        .collect()
}

#[allow(clippy::cast_precision_loss)] // counts are small
fn fraction(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

/// The lowest accepted fractions: objects equal, and printed bytes equal.
struct Ratchet {
    values: f64,
    bytes: f64,
}

fn report(name: &str, corpus: &Path, cases: &[Case], ratchet: &Ratchet) {
    let outcomes = run_all(cases);
    let mut equal = 0;
    let mut byte_equal = 0;
    let mut byte_mismatches = Vec::new();
    let mut accepted = Vec::new();
    let mut skipped = 0;
    let mut mismatches = Vec::new();
    for (case, o) in cases.iter().zip(&outcomes) {
        match o {
            Outcome::Equal { bytes } => {
                equal += 1;
                if *bytes {
                    byte_equal += 1;
                } else {
                    let rel = case.dir.strip_prefix(corpus).unwrap_or(&case.dir);
                    byte_mismatches.push(format!("  {} (printed text differs)", rel.display()));
                }
            }
            Outcome::OracleFailed { refused } => {
                skipped += 1;
                if !refused {
                    let rel = case.dir.strip_prefix(corpus).unwrap_or(&case.dir);
                    accepted.push(format!(
                        "  {} (kubectl failed, fluxgate rendered it)",
                        rel.display()
                    ));
                }
            }
            Outcome::Mismatch(why) => {
                let rel = case.dir.strip_prefix(corpus).unwrap_or(&case.dir);
                mismatches.push(format!("  {}: {why}", rel.display()));
            }
        }
    }
    let compared = equal + mismatches.len();
    let values = fraction(equal, compared);
    let bytes = fraction(byte_equal, compared);
    println!(
        "{name}: {equal}/{compared} equal ({:.1}%), {byte_equal}/{compared} byte-identical ({:.1}%), {skipped} skipped (kubectl failed; fluxgate reported an error on {})",
        values * 100.0,
        bytes * 100.0,
        skipped - accepted.len()
    );
    // Informational: some of these are kubectl's load restrictor (files outside the
    // kustomization's folder), which Flux turns off and fluxgate follows.
    for m in mismatches.iter().chain(&byte_mismatches).chain(&accepted) {
        println!("{m}");
    }
    assert!(
        values >= ratchet.values,
        "{name}: agreement {values:.4} fell below the ratchet {}",
        ratchet.values
    );
    assert!(
        bytes >= ratchet.bytes,
        "{name}: byte-identical fraction {bytes:.4} fell below the ratchet {}",
        ratchet.bytes
    );
}

#[test]
fn gitops_repositories_render_like_kubectl() {
    let Some(corpus) = corpus("gitops_repositories_render_like_kubectl") else {
        return;
    };
    let cases = gitops_cases(&corpus);
    report("gitops", &corpus, &cases, &RATCHET_GITOPS);
}

#[test]
fn kustomize_cases_render_like_kubectl() {
    let Some(corpus) = corpus("kustomize_cases_render_like_kubectl") else {
        return;
    };
    let cases = kustomize_cases(&corpus);
    report("kustomize-cases", &corpus, &cases, &RATCHET_CASES);
}
