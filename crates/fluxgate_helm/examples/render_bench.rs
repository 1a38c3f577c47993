//! In-process render time of chart folders: `template()` (untraced) and, with `--traced`,
//! `render_manifests()` (with origins), interleaved round by round so that both see the same
//! machine load. Prints the median per chart and in total. Usage:
//! `cargo run --release -p fluxgate_helm --example render_bench -- ROUNDS [--traced] CHART_DIR...`

use std::path::Path;
use std::time::Instant;

use fluxgate_helm::{Chart, Options};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn options() -> Options {
    let values =
        fluxgate_helm::values::parse_values("hubble:\n  tls:\n    auto:\n      method: cronJob\n")
            .unwrap_or_else(|_| fluxgate_gotemplate::Value::empty_map());
    Options {
        release_name: "rel".into(),
        namespace: "ns".into(),
        values,
        kube_version: Some("1.30.0".into()),
        skip_tests: true,
        ..Options::default()
    }
}

fn time(rounds: usize, mut f: impl FnMut()) -> Vec<f64> {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((rounds, rest)) = args.split_first() else {
        eprintln!("usage: render_bench ROUNDS [--traced] CHART_DIR...");
        std::process::exit(2);
    };
    let rounds: usize = rounds.parse().unwrap_or(10);
    let traced = rest.iter().any(|a| a == "--traced");
    let opts = options();
    let (mut total_plain, mut total_traced) = (0.0, 0.0);
    for dir in rest.iter().filter(|a| !a.starts_with("--")) {
        let Ok(chart) = Chart::load(Path::new(dir)) else {
            eprintln!("{dir}: cannot load");
            continue;
        };
        let (mut plain, mut with_origins) = (Vec::new(), Vec::new());
        // Warm-up, then rounds alternating the two renders.
        let _ = fluxgate_helm::template(chart.clone(), &opts);
        for _ in 0..rounds {
            plain.extend(time(1, || {
                let _ = fluxgate_helm::template(chart.clone(), &opts);
            }));
            if traced {
                with_origins.extend(time(1, || traced_render(&chart, &opts)));
            }
        }
        let (p, t) = (median(plain), median(with_origins));
        total_plain += p;
        total_traced += t;
        if traced {
            println!("{dir}: template {p:.2} ms, render_manifests {t:.2} ms");
        } else {
            println!("{dir}: template {p:.2} ms");
        }
    }
    println!("total: template {total_plain:.2} ms, render_manifests {total_traced:.2} ms");
}

fn traced_render(chart: &Chart, opts: &Options) {
    let _ = fluxgate_helm::render_manifests(chart.clone(), opts);
}
