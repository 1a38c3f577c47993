//! Prints each rendered document of a chart with the origin of every piece, one piece a
//! line: `OFFSETS  ORIGIN  TEXT`. Usage:
//! `cargo run -p fluxgate_helm --example render_origins -- CHART_DIR [SOURCE_SUBSTRING] [--set K=V]...`

use std::path::PathBuf;

use fluxgate_helm::{Request, SpanOrigin};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(chart) = args.first() else {
        eprintln!("usage: render_origins CHART_DIR [SOURCE_SUBSTRING] [--set K=V]...");
        std::process::exit(2);
    };
    let filter = args.get(1).filter(|a| !a.starts_with("--")).cloned();
    let set: Vec<String> = args
        .windows(2)
        .filter(|w| w[0] == "--set")
        .map(|w| w[1].clone())
        .collect();
    let req = Request {
        release_name: "rel".into(),
        namespace: "ns".into(),
        chart: PathBuf::from(chart),
        kube_version: Some("1.30.0".into()),
        set,
        ..Request::default()
    };
    let rendered = match fluxgate_helm::run_manifests(&req) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    for m in &rendered.manifests {
        if filter
            .as_ref()
            .is_some_and(|f| !m.source.contains(f.as_str()))
        {
            continue;
        }
        println!(
            "--- {} ({}{})",
            m.source,
            m.kind,
            if m.crd { ", crd" } else { "" }
        );
        for s in &m.spans {
            let origin = match &s.origin {
                SpanOrigin::Template { file, line, column } => format!("{file}:{line}:{column}"),
                SpanOrigin::Values { path } => format!("values {path}"),
            };
            println!(
                "{:>6}..{:<6} {origin:<60} {:?}",
                s.start,
                s.end,
                &m.text[s.start..s.end]
            );
        }
    }
}
