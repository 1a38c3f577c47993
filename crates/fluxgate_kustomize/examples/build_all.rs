//! Builds many kustomization directories in one process, for `bench/kustomize.sh`.
//!
//! `cargo run --release --example build_all -- ROOT DIR...` builds each DIR with ROOT as the
//! load restrictor's root, then prints the count, the objects and findings, the wall time and
//! the peak resident set size (VmHWM from /proc/self/status).

use std::path::PathBuf;
use std::time::Instant;

use fluxgate_kustomize::{RealFs, build};
use fluxgate_yaml::{EmitOptions, emit_docs};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next().map(PathBuf::from) else {
        eprintln!("usage: build_all ROOT DIR...");
        std::process::exit(2);
    };
    let dirs: Vec<PathBuf> = args.map(PathBuf::from).collect();
    let fs = RealFs::new(&root);
    let start = Instant::now();
    let (mut objects, mut findings, mut bytes) = (0, 0, 0);
    for d in &dirs {
        let out = build(&fs, &root, d);
        objects += out.objects.len();
        findings += out.problems.len();
        // Printing is part of what `kubectl kustomize` does: emit, but do not write.
        bytes += emit_docs(
            &out.objects,
            EmitOptions {
                sort_keys: true,
                ..EmitOptions::default()
            },
        )
        .len();
    }
    let elapsed = start.elapsed();
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.trim_start_matches("VmHWM:").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    println!(
        "fluxgate: {} dirs, {objects} objects, {bytes} bytes of YAML, {findings} findings in {:.3} s; peak RSS {hwm}",
        dirs.len(),
        elapsed.as_secs_f64()
    );
}
