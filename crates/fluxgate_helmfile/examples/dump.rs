//! Prints what fluxgate reads of a helmfile: `cargo run -p fluxgate_helmfile --example dump --
//! REPO PATH [ENV]`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(root), Some(path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: dump REPO PATH [ENV]");
        std::process::exit(2);
    };
    let mut opts = fluxgate_helmfile::Options::new(root, path.as_str());
    if let Some(env) = args.get(3) {
        opts.environment.clone_from(env);
    }
    let hf = fluxgate_helmfile::load(&opts);
    for s in &hf.states {
        println!(
            "state {} (env {}, crds only: {})",
            s.file,
            s.environment,
            s.crds_only()
        );
        for r in &s.releases {
            println!(
                "  {} chart={} version={:?} installed={} at {}:{}",
                r.id(),
                r.chart,
                r.version,
                r.installed,
                r.loc.file,
                r.loc.line
            );
            for n in &r.needs {
                println!("    needs {} -> {:?}", n.raw, n.target);
            }
            for h in &r.hooks {
                println!("    hook {:?} {} {:?}", h.events, h.command, h.args);
                for p in &h.paths {
                    println!("      path {} exists={}", p.resolved, p.exists);
                }
            }
            if let Some(m) = r.values.as_map() {
                for (k, v) in m.iter().take(4) {
                    println!("    value {k} at {}:{}", v.loc.file, v.loc.line);
                }
                println!("    ({} top-level keys)", m.len());
            }
            for u in &r.unevaluated {
                println!("    unevaluated: {u}");
            }
        }
    }
    for p in &hf.problems {
        println!(
            "problem {:?}: {} at {:?}",
            p.kind,
            p.message,
            p.location.as_ref().map(ToString::to_string)
        );
        for n in &p.notes {
            println!("  note: {n}");
        }
    }
}
