//! Parse time of every template file of chart folders (each `templates/` below them, also
//! those of subcharts) with Helm's function table: the median of ROUNDS rounds, in total.
//! With `--digest`, prints instead one line per text: its name and a hash of what parsing
//! gives (the whole tree with positions, or the error), for the file as written and for
//! mutants of it (cut short, a byte removed, delimiters and operators inserted), so that two
//! builds of the parser can be compared for identical results (`diff` their outputs).
//! Usage: `cargo run --release -p fluxgate_helm --example parse_bench -- ROUNDS [--digest] CHART_DIR...`

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

use fluxgate_gotemplate::Templates;

fn template_files(dir: &Path, inside: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            let is_templates = p.file_name().is_some_and(|n| n == "templates");
            template_files(&p, inside || is_templates, out);
        } else if inside {
            out.push(p);
        }
    }
}

fn digest(set: &Templates, name: &str, text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    match set.parse_text(name, text) {
        Ok(parsed) => format!("{parsed:?}").hash(&mut h),
        Err(e) => format!("{e:?}").hash(&mut h),
    }
    h.finish()
}

fn mutants(text: &str) -> Vec<String> {
    let bounds: Vec<usize> = (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    let step = (bounds.len() / 40).max(1);
    let mut out = Vec::new();
    for (k, &p) in bounds.iter().enumerate().step_by(step) {
        out.push(text[..p].to_string());
        if let Some(&q) = bounds.get(k + 1) {
            out.push(format!("{}{}", &text[..p], &text[q..]));
        }
        for ins in [
            "}}", "{{", ")", "(", "$x", "|", " -}}", "{{- ", "\"", "end", ".", "'",
        ] {
            out.push(format!("{}{ins}{}", &text[..p], &text[p..]));
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((rounds, rest)) = args.split_first() else {
        eprintln!("usage: parse_bench ROUNDS [--digest] CHART_DIR...");
        std::process::exit(2);
    };
    let rounds: usize = rounds.parse().unwrap_or(10);
    let digest_mode = rest.iter().any(|a| a == "--digest");
    let mut files = Vec::new();
    for dir in rest.iter().filter(|a| !a.starts_with("--")) {
        template_files(Path::new(dir), false, &mut files);
    }
    let texts: Vec<(String, String)> = files
        .iter()
        .filter_map(|p| Some((p.display().to_string(), std::fs::read_to_string(p).ok()?)))
        .collect();
    let set = Templates::new(fluxgate_helm::helm_funcs(0));
    if digest_mode {
        for (name, text) in &texts {
            println!("{name} {:016x}", digest(&set, name, text));
            let mut h = DefaultHasher::new();
            for m in mutants(text) {
                digest(&set, name, &m).hash(&mut h);
            }
            println!("{name} mutants {:016x}", h.finish());
        }
        return;
    }
    let bytes: usize = texts.iter().map(|(_, t)| t.len()).sum();
    let failed = texts
        .iter()
        .filter(|(n, t)| set.parse_text(n, t).is_err())
        .count();
    let mut times: Vec<f64> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for (name, text) in &texts {
                let _ = std::hint::black_box(set.parse_text(name, text));
            }
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "{} files, {bytes} bytes ({failed} fail to parse): median {:.3} ms, min {:.3} ms",
        texts.len(),
        times[times.len() / 2],
        times[0]
    );
}
