//! Benchmark driver (bench/flux.sh): renders the Flux tree of every environment given as
//! `REPO=ENTRY` arguments in one process, prints a summary line per environment, writes every
//! rendered Kustomization folder (`REPO/PATH`, one a line) to the file named by `--paths`, and
//! ends with the peak resident set size (VmHWM) read from /proc/self/status.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use fluxgate_flux::tree::{TreeOptions, render_tree};
use fluxgate_kustomize::RealFs;

// The same allocator as the fluxgate binary, so the benchmark measures what users run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut paths_out = None;
    if let Some(i) = args.iter().position(|a| a == "--paths") {
        if i + 1 < args.len() {
            paths_out = Some(PathBuf::from(args.remove(i + 1)));
        }
        args.remove(i);
    }
    let started = Instant::now();
    let mut folders = String::new();
    let (mut kustomizations, mut objects) = (0, 0);
    for arg in &args {
        let Some((repo, entry)) = arg.split_once('=') else {
            eprintln!("skipping `{arg}`: expected REPO=ENTRY");
            continue;
        };
        let root = PathBuf::from(repo);
        let fs = RealFs::new(&root);
        let t = Instant::now();
        let tree = render_tree(&fs, &root, entry, &TreeOptions::default());
        let n = tree.objects().count();
        println!(
            "{repo} ({entry}): {} Kustomizations, {n} objects, {} findings, {:.0?}",
            tree.kustomizations.len(),
            tree.problems.len(),
            t.elapsed()
        );
        kustomizations += tree.kustomizations.len();
        objects += n;
        for k in &tree.kustomizations {
            folders.push_str(&format!("{repo}/{}\n", k.path));
        }
    }
    if let Some(p) = paths_out {
        let written = std::fs::File::create(&p).and_then(|mut f| f.write_all(folders.as_bytes()));
        if let Err(e) = written {
            eprintln!("cannot write {}: {e}", p.display());
        }
    }
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.trim_start_matches("VmHWM:").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    println!(
        "total: {} environments, {kustomizations} Kustomizations, {objects} objects in {:.3} s; \
         peak RSS {hwm}",
        args.len(),
        started.elapsed().as_secs_f64()
    );
}
