//! Every `.yaml`/`.yml` file of the corpus's gitops repositories parses. go-yaml v3 (which
//! kustomize, kubectl and Flux read with) accepts all of them, checked with a throwaway
//! program decoding each file's documents with `sigs.k8s.io/yaml/goyaml.v3` (the fork
//! kustomize v5.5.0 uses); a file it rejected would be listed in `GO_YAML_REJECTS`.
//!
//! Needs `FLUXGATE_CORPUS` (the corpus folder); skips otherwise.

use fluxgate_yaml::{Schema, parse_stream};

/// Files (relative to the gitops folder) go-yaml itself rejects: fluxgate may reject them too.
const GO_YAML_REJECTS: &[&str] = &[];

#[test]
fn every_file_go_yaml_accepts_parses() {
    let Some(corpus) = fluxgate_testkit::corpus("every_file_go_yaml_accepts_parses") else {
        return;
    };
    let gitops = corpus.join("gitops");
    let files = fluxgate_testkit::files_below(&gitops, &|e| matches!(e, "yaml" | "yml"));
    let mut failed = Vec::new();
    let mut read = 0;
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        read += 1;
        let rel = f.strip_prefix(&gitops).unwrap_or(f).display().to_string();
        let s = parse_stream(&rel, &text, Schema::Kube);
        if s.has_errors() && !GO_YAML_REJECTS.contains(&rel.as_str()) {
            let d = s
                .diagnostics
                .iter()
                .map(|d| {
                    format!(
                        "{}: {}",
                        d.location
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_default(),
                        d.message
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            failed.push(d);
        }
    }
    println!(
        "{} of {read} files parse ({} files listed as rejected by go-yaml)",
        read - failed.len(),
        GO_YAML_REJECTS.len()
    );
    for f in &failed {
        println!("  {f}");
    }
    assert!(
        failed.is_empty(),
        "{} files go-yaml accepts fail to parse",
        failed.len()
    );
}
