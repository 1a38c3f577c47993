//! Side by side in one run: `helm template` (as a process) and fluxgate's render (in
//! process) of each chart folder given, N times each; prints the median wall time per
//! render and the ratio. Usage:
//! `cargo run --release -p fluxgate_helm --example template_bench -- HELM N CHART_DIR [--set K=V]...`

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [helm, n, chart, rest @ ..] = args.as_slice() else {
        eprintln!("usage: template_bench HELM N CHART_DIR [--set K=V]...");
        std::process::exit(2);
    };
    let n: usize = n.parse().unwrap_or(5);
    let set: Vec<String> = rest
        .chunks(2)
        .filter(|c| c[0] == "--set")
        .filter_map(|c| c.get(1).cloned())
        .collect();
    let mut helm_args = vec![
        "template".to_string(),
        "rel".into(),
        chart.clone(),
        "--namespace".into(),
        "ns".into(),
        "--kube-version".into(),
        "1.30.0".into(),
        "--skip-tests".into(),
        "--skip-schema-validation".into(),
    ];
    helm_args.extend(rest.iter().cloned());
    let req = fluxgate_helm::Request {
        release_name: "rel".into(),
        namespace: "ns".into(),
        chart: PathBuf::from(chart),
        kube_version: Some("1.30.0".into()),
        skip_tests: true,
        set,
        ..fluxgate_helm::Request::default()
    };
    let (mut h, mut f) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let t = Instant::now();
        let out = Command::new(helm)
            .args(&helm_args)
            .output()
            .expect("helm runs");
        h.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let ours = fluxgate_helm::run(&req);
        f.push(t.elapsed().as_secs_f64());
        let same = ours
            .as_ref()
            .is_ok_and(|s| s.as_bytes() == out.stdout.as_slice());
        assert!(same || !out.status.success(), "outputs differ for {chart}");
    }
    let (hm, fm) = (median(h), median(f));
    println!(
        "{chart}: helm {:.1} ms, fluxgate {:.1} ms, {:.1}x",
        hm * 1e3,
        fm * 1e3,
        hm / fm
    );
}
