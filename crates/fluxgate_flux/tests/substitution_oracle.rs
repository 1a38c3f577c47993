//! Differential test of post-build substitution over the corpus against Flux's own code (the
//! Go oracle `oracles/flux-envsubst`, which runs `SubstituteVariables` of fluxcd/pkg/kustomize
//! v1.35.4 as kustomize-controller v1.9.4 does, strict mode, over a fake cluster).
//!
//! Every Flux Kustomization with `spec.postBuild` that fluxgate renders from the corpus is sent
//! with its objects as kustomize built them ([`FluxKustomization::built`]) and the ConfigMaps
//! and Secrets its `substituteFrom` names ([`FluxKustomization::var_sources`]); the oracle
//! answers what Flux applies, or its error. Compared: success or failure of the whole
//! Kustomization, and, when both succeed, every object as JSON (numbers by value, so `8080`
//! and `8080.0` are one; strings and booleans by type), with `commonMetadata` applied to the
//! oracle's answer as kustomize-controller applies it after the build.
//!
//! SOPS-encrypted Secrets are decrypted by Flux in the cluster; offline fluxgate reads their
//! values as [`OPAQUE_VALUE`], so the oracle is given the same opaque values. A Kustomization
//! whose `substituteFrom` source is created in the cluster at runtime (by an ExternalSecret,
//! say) cannot be compared offline: the oracle's cluster lacks it; it is counted apart.

mod flux_oracle;

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use fluxgate_flux::substitute::{Options, substitute_resource};
use fluxgate_flux::tree::{FluxKustomization, TreeOptions, render_tree};
use fluxgate_flux::vars::{OPAQUE_VALUE, Vars, is_sops_encrypted, is_sops_metadata_key};
use fluxgate_kustomize::RealFs;
use fluxgate_yaml::Node;
use serde_json::{Value, json};

const TEST: &str = "substitution_matches_flux_on_the_corpus";

/// Every Flux environment of the corpus (as in `differential.rs`).
const CASES: &[(&str, &str)] = &[
    ("gitops/Diaoul__home-ops", "cluster/flux"),
    ("gitops/ahinko__home-ops", "kubernetes/main/flux"),
    ("gitops/ahinko__home-ops", "kubernetes/storage/flux"),
    ("gitops/angelnu__k8s-gitops", "clusters/prod/config"),
    ("gitops/angelnu__k8s-gitops", "clusters/test/config"),
    ("gitops/billimek__k8s-gitops", "setup/flux/cluster"),
    ("gitops/bjw-s-labs__home-ops", "kubernetes/flux/cluster"),
    ("gitops/coolguy1771__home-ops", "kubernetes/kyak/flux"),
    ("gitops/coolguy1771__home-ops", "kubernetes/sol/flux"),
    ("gitops/jfroy__flatops", "kubernetes/cluster"),
    ("gitops/mirceanton__home-ops", "apps"),
    ("gitops/onedr0p__home-ops-head", "kubernetes/flux/cluster"),
];

struct Sent {
    env: String,
    id: String,
    ours_failure: Option<String>,
    ours: Vec<Value>,
    /// Objects the substitution changed (so that equality is not the built objects twice).
    changed: usize,
    runtime_source: bool,
}

#[test]
fn substitution_matches_flux_on_the_corpus() {
    let Some(corpus) = fluxgate_testkit::corpus(TEST) else {
        return;
    };
    let Some(oracle) = fluxgate_testkit::go_oracle(TEST, "flux-envsubst") else {
        return;
    };
    let (mut sent, mut cases) = (Vec::new(), Vec::new());
    let mut ours_time = Duration::ZERO;
    for (repo, entry) in CASES {
        let root = corpus.join(repo);
        if !root.is_dir() {
            fluxgate_testkit::missing(TEST, &format!("{repo} is not in the corpus"));
            continue;
        }
        let fs = RealFs::new(&root);
        let opts = TreeOptions {
            keep_built: true,
            ..TreeOptions::default()
        };
        let tree = render_tree(&fs, &root, entry, &opts);
        for k in &tree.kustomizations {
            if k.object.path(&["spec", "postBuild"]).is_some() {
                ours_time += time_substitution(k);
            }
        }
        let env = format!("{repo} {entry}");
        collect(&tree.kustomizations, &env, true, &mut sent, &mut cases);
    }
    if cases.is_empty() {
        fluxgate_testkit::missing(TEST, "no substituting Kustomization found in the corpus");
        return;
    }
    let (answers, theirs_time) =
        flux_oracle::run(&oracle, &json!({"mode": "kustomization", "cases": cases}));
    let differ = judge(&sent, &answers, &cases);
    #[expect(
        clippy::cast_precision_loss,
        reason = "durations in nanoseconds are far below 2^52"
    )]
    let ratio = theirs_time.as_nanos() as f64 / ours_time.as_nanos().max(1) as f64;
    println!(
        "substitution time over the corpus: fluxgate {ours_time:?}, Flux's code (Go oracle) \
         {theirs_time:?}; fluxgate is {ratio:.1}x as fast"
    );
    assert!(
        differ.is_empty(),
        "{} Kustomizations differ from Flux",
        differ.len()
    );
}

/// The edge cases of `tests/fixtures/oracle` (types that change, failures of the whole
/// Kustomization, variable loading), in strict and in lax mode.
#[test]
fn substitution_matches_flux_on_the_edge_cases() {
    const EDGE: &str = "substitution_matches_flux_on_the_edge_cases";
    let Some(oracle) = fluxgate_testkit::go_oracle(EDGE, "flux-envsubst") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle");
    let fs = RealFs::new(&root);
    let (mut sent, mut cases) = (Vec::new(), Vec::new());
    for strict in [true, false] {
        let opts = TreeOptions {
            keep_built: true,
            substitution: Options { strict },
            ..TreeOptions::default()
        };
        let tree = render_tree(&fs, &root, "clusters/lab", &opts);
        let mode = if strict { "strict" } else { "lax" };
        collect(&tree.kustomizations, mode, strict, &mut sent, &mut cases);
    }
    assert!(sent.len() >= 30, "the fixture renders its Kustomizations");
    let (answers, _) = flux_oracle::run(&oracle, &json!({"mode": "kustomization", "cases": cases}));
    let differ = judge(&sent, &answers, &cases);
    assert!(
        differ.is_empty(),
        "{} edge cases differ from Flux",
        differ.len()
    );
}

/// Adds the substituting Kustomizations of one rendered tree to the request.
fn collect(
    kustomizations: &[FluxKustomization],
    env: &str,
    strict: bool,
    sent: &mut Vec<Sent>,
    cases: &mut Vec<Value>,
) {
    for k in kustomizations {
        if k.object.path(&["spec", "postBuild"]).is_none() {
            continue;
        }
        let from = k
            .object
            .path(&["spec", "postBuild", "substituteFrom"])
            .and_then(Node::as_seq)
            .unwrap_or_default();
        let required = from
            .iter()
            .filter(|e| e.get("optional").and_then(Node::as_bool) != Some(true))
            .count();
        sent.push(Sent {
            env: env.to_string(),
            id: k.id(),
            ours_failure: k.failure.clone(),
            ours: k.objects.iter().map(|o| canon(&o.to_json())).collect(),
            changed: k
                .built
                .iter()
                .zip(&k.objects)
                .filter(|(b, o)| canon(&b.to_json()) != canon(&o.to_json()))
                .count(),
            runtime_source: k.var_sources.len() < required && k.failure.is_none(),
        });
        cases.push(json!({
            "kustomization": k.object.to_json(),
            "objects": k.var_sources.iter().map(as_cluster_holds_it).collect::<Vec<_>>(),
            "resources": k.built.iter().map(Node::to_json).collect::<Vec<_>>(),
            "strict": strict,
        }));
    }
}

/// Compares the answers with fluxgate's; prints the figures and every difference.
fn judge(sent: &[Sent], answers: &[Value], cases: &[Value]) -> Vec<String> {
    assert_eq!(answers.len(), sent.len(), "one answer per Kustomization");
    let (mut compared, mut agree, mut objects, mut objects_equal, mut runtime) = (0, 0, 0, 0, 0);
    let (mut both_fail, mut changed) = (0, 0);
    let mut differ = Vec::new();
    for ((s, a), case) in sent.iter().zip(answers).zip(cases) {
        let theirs_ok = a["ok"] == Value::Bool(true);
        if s.runtime_source && !theirs_ok {
            runtime += 1;
            println!(
                "  not compared: {} {} (Flux in the oracle's cluster: {})",
                s.env,
                s.id,
                a["err"].as_str().unwrap_or_default()
            );
            continue;
        }
        compared += 1;
        let theirs: Vec<Value> = a["resources"]
            .as_array()
            .map(|v| {
                v.iter()
                    .map(|o| canon(&with_common_metadata(o, &case["kustomization"])))
                    .collect()
            })
            .unwrap_or_default();
        match (s.ours_failure.is_none(), theirs_ok) {
            (true, true) => {
                let n = s.ours.len().max(theirs.len());
                let equal = s.ours.iter().zip(&theirs).filter(|(a, b)| a == b).count();
                objects += n;
                objects_equal += equal;
                if equal == n {
                    agree += 1;
                    changed += s.changed;
                } else {
                    let (o, t) = s
                        .ours
                        .iter()
                        .zip(&theirs)
                        .find(|(a, b)| a != b)
                        .map_or((String::new(), String::new()), |(a, b)| {
                            (a.to_string(), b.to_string())
                        });
                    differ.push(format!(
                        "  {} {}: {equal}/{n} objects equal\n    fluxgate {}\n    flux     {}",
                        s.env,
                        s.id,
                        clip(&o),
                        clip(&t)
                    ));
                }
            }
            (false, false) => {
                agree += 1;
                both_fail += 1;
            }
            (ours_ok, _) => differ.push(format!(
                "  {} {}: fluxgate {}, flux {}",
                s.env,
                s.id,
                if ours_ok {
                    "applies it".to_string()
                } else {
                    format!(
                        "fails it ({})",
                        s.ours_failure.as_deref().unwrap_or_default()
                    )
                },
                if theirs_ok {
                    "applies it".to_string()
                } else {
                    format!("fails it ({})", a["err"].as_str().unwrap_or_default())
                }
            )),
        }
    }
    println!(
        "substitution: {agree}/{compared} Kustomizations agree (success/failure and objects), \
         {objects_equal}/{objects} objects equal ({changed} of them changed by substitution); \
         {both_fail} Kustomizations failed by both; {runtime} not compared (a substituteFrom \
         source created at runtime)"
    );
    for d in &differ {
        println!("{d}");
    }
    differ
}

/// The time fluxgate takes to load the variables and substitute every built object, the part
/// the oracle measures on its side.
fn time_substitution(k: &FluxKustomization) -> Duration {
    let started = Instant::now();
    let (vars, _) = Vars::for_kustomization(&k.object, &k.var_sources);
    for o in &k.built {
        let _ = substitute_resource(o, &vars, Options::default());
    }
    started.elapsed()
}

/// A ConfigMap or Secret as the cluster holds it for Flux: a SOPS-encrypted Secret decrypted,
/// its values being the opaque ones fluxgate reads offline.
fn as_cluster_holds_it(obj: &Node) -> Value {
    let mut v = obj.to_json();
    if obj.str_at(&["kind"]) != Some("Secret") || !is_sops_encrypted(obj) {
        return v;
    }
    let opaque = base64::engine::general_purpose::STANDARD.encode(OPAQUE_VALUE);
    if let Some(m) = v.as_object_mut() {
        m.remove("sops");
        if let Some(data) = m.get_mut("data").and_then(Value::as_object_mut) {
            data.retain(|k, _| !is_sops_metadata_key(k));
            for val in data.values_mut() {
                *val = json!(opaque);
            }
        }
        if let Some(data) = m.get_mut("stringData").and_then(Value::as_object_mut) {
            for val in data.values_mut() {
                *val = json!(OPAQUE_VALUE);
            }
        }
    }
    v
}

/// kustomize-controller sets `spec.commonMetadata` on every object after the build.
fn with_common_metadata(obj: &Value, ks: &Value) -> Value {
    let mut obj = obj.clone();
    for field in ["labels", "annotations"] {
        let Some(add) = ks["spec"]["commonMetadata"][field].as_object() else {
            continue;
        };
        let Some(m) = obj.as_object_mut() else {
            continue;
        };
        let md = m.entry("metadata").or_insert_with(|| json!({}));
        if let Some(mdm) = md.as_object_mut() {
            let target = mdm.entry(field).or_insert_with(|| json!({}));
            if let Some(t) = target.as_object_mut() {
                for (k, v) in add {
                    t.insert(k.clone(), v.clone());
                }
            }
        }
    }
    obj
}

/// JSON with every number as a float: JSON itself does not tell 8080 from 8080.0.
fn canon(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(a) => Value::Array(a.iter().map(canon).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), canon(v))).collect()),
        other => other.clone(),
    }
}

fn clip(s: &str) -> String {
    s.chars().take(600).collect()
}
