//! Where one `helm template` render spends its time, phase by phase (simple timers, for
//! machines without perf): load, dependencies and coalescing, schema validation, render.
//! Usage: `cargo run --release -p fluxgate_helm --example phases -- CHART_DIR [N] [--set K=V]...`

use std::time::Instant;

use fluxgate_helm::{Chart, Options, Request, schema, user_values, values};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(chart_dir) = args.first() else {
        eprintln!("usage: phases CHART_DIR [N] [--set K=V]...");
        std::process::exit(2);
    };
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let set: Vec<String> = args
        .windows(2)
        .filter(|w| w[0] == "--set")
        .map(|w| w[1].clone())
        .collect();
    let req = Request {
        release_name: "rel".into(),
        chart: chart_dir.into(),
        namespace: "ns".into(),
        set,
        kube_version: Some("1.30.0".into()),
        ..Request::default()
    };
    let mut t = [0f64; 5];
    for _ in 0..n {
        let s = Instant::now();
        let chart = Chart::load(&req.chart).expect("chart loads");
        t[0] += s.elapsed().as_secs_f64();
        let s = Instant::now();
        let user = user_values(&req).expect("values");
        let mut c = chart.clone();
        values::process_dependencies(&mut c, &user, "").expect("dependencies");
        values::process_import_values(&mut c).expect("import-values");
        let vals = values::coalesce_values_copy(&c, &user).expect("coalesce");
        t[1] += s.elapsed().as_secs_f64();
        let s = Instant::now();
        let _ = schema::validate(&c, &vals);
        t[2] += s.elapsed().as_secs_f64();
        let s = Instant::now();
        let opts = Options {
            release_name: "rel".into(),
            namespace: "ns".into(),
            values: user,
            kube_version: Some("1.30.0".into()),
            skip_schema_validation: true,
            ..Options::default()
        };
        let _ = fluxgate_helm::template(chart, &opts);
        t[3] += s.elapsed().as_secs_f64();
    }
    #[allow(clippy::cast_precision_loss)] // small counts
    let per = |x: f64| x / n as f64 * 1000.0;
    println!(
        "load {:.2} ms | dependencies+coalesce {:.2} ms | schema {:.2} ms | render without schema (incl. dependencies, coalesce) {:.2} ms",
        per(t[0]),
        per(t[1]),
        per(t[2]),
        per(t[3])
    );
}
