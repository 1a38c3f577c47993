//! `fluxgate template` against `helm template` of helm v4.3.2 (built by this test with the
//! machine's Go, `go install helm.sh/helm/v4/cmd/helm@v4.3.2`, cached under
//! `target/oracles/`), over the eight charts of `$FLUXGATE_CORPUS/helm-charts`: each with
//! its defaults, every values file it ships under `ci/`, the values the HelmReleases of
//! `$FLUXGATE_CORPUS/gitops` give it (by chart name, or through `chartRef` to an OCIRepository
//! whose URL names the chart), and value sets of our own. Output is compared byte for
//! byte (when helm fails, our error text against helm's); the identical fraction must not
//! drop below the floor. Without the corpus or Go the test skips visibly; under `CI=true`
//! it fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use fluxgate_helm::Request;
use fluxgate_yaml::{EmitOptions, Node, Schema, emit_node, parse_stream};

const TEST: &str = "helm_template_matches_helm";

/// The identical fraction measured when this floor was set; it may only rise.
const FLOOR: f64 = 1.0;

/// At most this many HelmReleases per chart (app-template has about four hundred).
const MAX_RELEASES_PER_CHART: usize = 1000;

/// How many more times helm runs when its first output differs from ours.
const HELM_RERUNS: usize = 8;

struct Case {
    chart: String,
    label: String,
    req: Request,
    helm_args: Vec<String>,
}

fn chart_flags(dir: &str) -> Vec<String> {
    let mut v = vec!["--kube-version".to_string(), "1.30.0".to_string()];
    if dir.starts_with("podinfo") {
        v.push("--skip-tests".into());
    }
    if dir.starts_with("app-template") {
        v.push("--skip-schema-validation".into());
    }
    if dir.starts_with("cilium") {
        v.extend([
            "--set".to_string(),
            "hubble.tls.auto.method=cronJob".to_string(),
        ]);
    }
    v
}

/// A request and the same arguments for helm, from `helm template`-style flags.
fn case(chart_dir: &Path, label: &str, release: &str, namespace: &str, flags: &[String]) -> Case {
    let dir = chart_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut req = Request {
        release_name: release.into(),
        chart: chart_dir.to_path_buf(),
        namespace: namespace.into(),
        ..Request::default()
    };
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        match f.as_str() {
            "--kube-version" => req.kube_version = it.next().cloned(),
            "--skip-tests" => req.skip_tests = true,
            "--include-crds" => req.include_crds = true,
            "--skip-schema-validation" => req.skip_schema_validation = true,
            "--set" => req.set.extend(it.next().cloned()),
            "--set-string" => req.set_string.extend(it.next().cloned()),
            "--set-literal" => req.set_literal.extend(it.next().cloned()),
            "--set-json" => req.set_json.extend(it.next().cloned()),
            "--api-versions" => req.api_versions.extend(it.next().cloned()),
            "-f" => req.values_files.extend(it.next().map(PathBuf::from)),
            other => panic!("unknown flag {other}"),
        }
    }
    let mut helm_args = vec![
        "template".to_string(),
        release.to_string(),
        chart_dir.display().to_string(),
        "--namespace".into(),
        namespace.into(),
    ];
    helm_args.extend(flags.iter().cloned());
    Case {
        chart: dir,
        label: label.to_string(),
        req,
        helm_args,
    }
}

/// The repository (first folder under `gitops/`) a file belongs to.
fn repo_of(gitops: &Path, f: &Path) -> String {
    f.strip_prefix(gitops)
        .ok()
        .and_then(|r| r.components().next())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The charts the OCIRepositories of `gitops/` point at: (repository, OCIRepository name) ->
/// chart names (the last segment of each `spec.url` given that name).
fn oci_charts(gitops: &Path, files: &[PathBuf]) -> BTreeMap<(String, String), Vec<String>> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        if !text.contains("OCIRepository") {
            continue;
        }
        let rel = f.strip_prefix(gitops).unwrap_or(f).display().to_string();
        for doc in parse_stream(&rel, &text, Schema::Kube).docs {
            if doc.str_at(&["kind"]) != Some("OCIRepository") {
                continue;
            }
            let (Some(name), Some(url)) = (
                doc.str_at(&["metadata", "name"]),
                doc.str_at(&["spec", "url"]),
            ) else {
                continue;
            };
            let chart = url.trim_end_matches('/').rsplit('/').next().unwrap_or(url);
            let entry = out
                .entry((repo_of(gitops, f), name.to_string()))
                .or_default();
            if !entry.iter().any(|c| c == chart) {
                entry.push(chart.to_string());
            }
        }
    }
    out
}

/// `(release, namespace, values)` of each HelmRelease in `gitops/` installing `chart`: by
/// `spec.chart.spec.chart`, or by `spec.chartRef` to an OCIRepository of the same
/// repository whose URL ends in the chart's name (or, when the repository defines no such
/// OCIRepository, by the name `chartRef` gives). A release without `values` renders with the
/// chart's defaults under its own name and namespace.
fn releases(
    gitops: &Path,
    files: &[PathBuf],
    oci: &BTreeMap<(String, String), Vec<String>>,
    chart: &str,
) -> Vec<(String, String, Node)> {
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        if !text.contains("HelmRelease") {
            continue;
        }
        let rel = f.strip_prefix(gitops).unwrap_or(f).display().to_string();
        let repo = repo_of(gitops, f);
        for doc in parse_stream(&rel, &text, Schema::Kube).docs {
            if doc.str_at(&["kind"]) != Some("HelmRelease") {
                continue;
            }
            let installs = match (
                doc.str_at(&["spec", "chart", "spec", "chart"]),
                doc.str_at(&["spec", "chartRef", "name"]),
            ) {
                (Some(name), _) => name == chart,
                (None, Some(r)) => oci
                    .get(&(repo.clone(), r.to_string()))
                    .map_or(r == chart, |charts| charts.iter().any(|c| c == chart)),
                (None, None) => false,
            };
            if !installs {
                continue;
            }
            let values = doc.path(&["spec", "values"]).cloned().unwrap_or_else(|| {
                parse_stream("empty", "{}", Schema::Kube)
                    .docs
                    .into_iter()
                    .next()
                    .expect("{} is a document")
            });
            let release = doc
                .str_at(&["spec", "releaseName"])
                .or_else(|| doc.str_at(&["metadata", "name"]))
                .unwrap_or("release")
                .to_string();
            let ns = doc
                .str_at(&["spec", "targetNamespace"])
                .or_else(|| doc.str_at(&["metadata", "namespace"]))
                .unwrap_or("default")
                .to_string();
            out.push((release, ns, values));
        }
    }
    out
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != ".git") {
                yaml_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(p);
        }
    }
}

#[test]
fn helm_template_matches_helm() {
    let Some(corpus) = fluxgate_testkit::corpus(TEST) else {
        return;
    };
    let charts_dir = corpus.join("helm-charts");
    if !charts_dir.is_dir() {
        fluxgate_testkit::missing(TEST, "FLUXGATE_CORPUS has no helm-charts/ folder");
        return;
    }
    let Some(helm) =
        fluxgate_testkit::go_install_oracle(TEST, "helm", "helm.sh/helm/v4/cmd/helm@v4.3.2")
    else {
        return;
    };
    let tmp = fluxgate_testkit::workspace_root()
        .join("target")
        .join("tmp")
        .join("helm-differential");
    let _ = std::fs::create_dir_all(&tmp);
    let mut gitops_files = Vec::new();
    yaml_files(&corpus.join("gitops"), &mut gitops_files);
    let oci = oci_charts(&corpus.join("gitops"), &gitops_files);

    let mut chart_dirs: Vec<PathBuf> = std::fs::read_dir(&charts_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.join("Chart.yaml").is_file())
                .collect()
        })
        .unwrap_or_default();
    chart_dirs.sort();
    assert_eq!(chart_dirs.len(), 8, "the corpus has eight charts");

    let mut cases = Vec::new();
    for dir in &chart_dirs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let base = chart_flags(&name);
        cases.push(case(dir, "defaults", "rel", "ns", &base));
        let mut ci: Vec<PathBuf> = std::fs::read_dir(dir.join("ci"))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        ci.sort();
        for f in ci {
            let mut flags = base.clone();
            flags.extend(["-f".to_string(), f.display().to_string()]);
            cases.push(case(
                dir,
                &format!(
                    "ci/{}",
                    f.file_name()
                        .map(|n| n.to_string_lossy())
                        .unwrap_or_default()
                ),
                "rel",
                "ns",
                &flags,
            ));
        }
        let chart_name = name.rsplit_once('-').map_or(name.as_str(), |(n, _)| n);
        let chart_name = chart_name
            .rsplit_once('-')
            .filter(|_| chart_name == "app-template-4.1")
            .map_or(chart_name, |(n, _)| n);
        for (i, (release, ns, values)) in
            releases(&corpus.join("gitops"), &gitops_files, &oci, chart_name)
                .into_iter()
                .take(MAX_RELEASES_PER_CHART)
                .enumerate()
        {
            let file = tmp.join(format!("{name}-hr{i}.yaml"));
            let _ = std::fs::write(&file, emit_node(&values, EmitOptions::default()));
            let mut flags = base.clone();
            flags.extend(["-f".to_string(), file.display().to_string()]);
            cases.push(case(
                dir,
                &format!("HelmRelease {ns}/{release}"),
                &release,
                &ns,
                &flags,
            ));
        }
        for extra in own_value_sets(&name) {
            let mut flags = base.clone();
            flags.extend(extra.iter().cloned());
            cases.push(case(dir, &extra.join(" "), "rel", "ns", &flags));
        }
    }

    let mut per_chart: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut helm_failed: BTreeMap<String, usize> = BTreeMap::new();
    // (chart, source of the values) -> (identical, cases).
    let mut per_source: BTreeMap<(String, &'static str), (usize, usize)> = BTreeMap::new();
    let mut differ = Vec::new();
    let mut nondeterministic = Vec::new();
    let mut reassembly = Vec::new();
    // Rendered documents: (read by the direct YAML reader, all), and where it read one
    // differently from the general reader.
    let (mut direct_taken, mut documents) = (0usize, 0usize);
    let mut direct_differs = Vec::new();
    for c in &cases {
        let ours = fluxgate_helm::run(&c.req);
        if let Some(problem) = reassembly_problem(&c.req, &ours) {
            reassembly.push(format!("{} [{}]: {problem}", c.chart, c.label));
        }
        for m in fluxgate_helm::run_manifests(&c.req)
            .map(|r| r.manifests)
            .unwrap_or_default()
        {
            documents += 1;
            for schema in [Schema::Kube, Schema::GoYamlV2] {
                let (took, differs) = fluxgate_yaml::compare_readers(&m.source, &m.text, schema);
                direct_taken += usize::from(took && schema == Schema::Kube);
                if let Some(d) = differs {
                    direct_differs.push(format!("{} [{}] {}: {d}", c.chart, c.label, m.source));
                }
            }
        }
        let agrees = |out: &std::process::Output| match (&ours, out.status.success()) {
            (Ok(text), true) => text.as_bytes() == out.stdout.as_slice(),
            (Err(e), false) => fluxgate_testkit::helm_error(&out.stderr) == e.to_string(),
            _ => false,
        };
        let out = Command::new(&helm)
            .args(&c.helm_args)
            .output()
            .expect("helm runs");
        let mut same = agrees(&out);
        if !same {
            // Go's map order is random: charts that range over `keys` print in a different
            // order on each helm run (fluxgate sorts keys). Our text is right when it is one
            // of helm's; a case whose helm runs differ and never match ours is reported apart.
            let mut varies = false;
            for _ in 0..HELM_RERUNS {
                let again = Command::new(&helm)
                    .args(&c.helm_args)
                    .output()
                    .expect("helm runs");
                varies |= again.stdout != out.stdout || again.stderr != out.stderr;
                if agrees(&again) {
                    same = true;
                    break;
                }
            }
            if !same && varies {
                nondeterministic.push(format!("{} [{}]", c.chart, c.label));
                continue;
            }
        }
        if !out.status.success() {
            *helm_failed.entry(c.chart.clone()).or_default() += 1;
        }
        let entry = per_chart.entry(c.chart.clone()).or_default();
        entry.1 += 1;
        let by_source = per_source
            .entry((c.chart.clone(), source(&c.label)))
            .or_default();
        by_source.1 += 1;
        if same {
            entry.0 += 1;
            by_source.0 += 1;
        } else {
            differ.push(format!(
                "{} [{}]: {}",
                c.chart,
                c.label,
                match (&ours, out.status.success()) {
                    (Ok(_), true) => "output differs".to_string(),
                    (Err(e), true) => format!("we fail: {e}"),
                    (Ok(_), false) =>
                        format!("helm fails: {}", fluxgate_testkit::helm_error(&out.stderr)),
                    (Err(e), false) => format!(
                        "errors differ: ours {e} / helm {}",
                        fluxgate_testkit::helm_error(&out.stderr)
                    ),
                }
            ));
        }
    }
    for n in &nondeterministic {
        eprintln!("{TEST}: helm's output varies between runs and never matched: {n}");
    }
    let (same, total) = per_chart
        .values()
        .fold((0, 0), |(s, t), (a, b)| (s + a, t + b));
    for (chart, (s, t)) in &per_chart {
        let failed = helm_failed.get(chart).copied().unwrap_or(0);
        let sources: Vec<String> = ["defaults", "ci/", "HelmRelease", "own"]
            .iter()
            .map(|k| {
                let (a, b) = per_source
                    .get(&(chart.clone(), *k))
                    .copied()
                    .unwrap_or_default();
                format!("{k} {a}/{b}")
            })
            .collect();
        eprintln!(
            "{TEST}: {chart}: {s}/{t} byte-identical [{}] ({failed} of them helm errors, compared as text)",
            sources.join(", ")
        );
    }
    for d in &differ {
        eprintln!("{TEST}: differs: {d}");
    }
    #[allow(clippy::cast_precision_loss)] // case counts are small
    let fraction = same as f64 / total.max(1) as f64;
    eprintln!(
        "{TEST}: {same}/{total} byte-identical ({:.1}%)",
        fraction * 100.0
    );
    assert!(
        fraction >= FLOOR,
        "identical fraction {fraction:.3} fell below the floor {FLOOR}"
    );
    eprintln!(
        "{TEST}: render_manifests reassembles template() on {}/{total} cases",
        cases.len() - reassembly.len()
    );
    assert!(
        reassembly.is_empty(),
        "render_manifests differs from template(): {reassembly:#?}"
    );
    eprintln!(
        "{TEST}: the direct YAML reader took {direct_taken} of {documents} rendered documents"
    );
    assert!(
        direct_differs.is_empty(),
        "the direct YAML reader reads rendered documents differently: {direct_differs:#?}"
    );
}

/// Whether the documents of `render_manifests` print as `template()` printed `ours`, byte for
/// byte (each as `---\n# Source: S\nTEXT\n`, an empty body as one newline), with spans in
/// order inside their texts; errors must read the same.
fn reassembly_problem(
    req: &Request,
    ours: &Result<String, fluxgate_helm::Error>,
) -> Option<String> {
    let traced = fluxgate_helm::run_manifests(req);
    let rendered = match (traced, ours) {
        (Ok(r), Ok(_)) => r,
        (Err(a), Err(b)) if a.to_string() == b.to_string() => return None,
        (a, b) => {
            return Some(format!(
                "outcomes differ: {:?} / {:?}",
                a.err(),
                b.as_ref().err()
            ));
        }
    };
    let Ok(expected) = ours else { return None };
    let mut body = String::new();
    let mut hooks = String::new();
    for m in &rendered.manifests {
        let mut end = 0;
        for s in &m.spans {
            if s.start < end
                || s.start >= s.end
                || s.end > m.text.len()
                || !m.text.is_char_boundary(s.start)
                || !m.text.is_char_boundary(s.end)
            {
                return Some(format!("{}: bad span {s:?}", m.source));
            }
            end = s.end;
        }
        if m.crd && !req.include_crds {
            continue;
        }
        let out = if m.hook.is_some() {
            &mut hooks
        } else {
            &mut body
        };
        out.push_str(&format!("---\n# Source: {}\n{}\n", m.source, m.text));
    }
    if body.is_empty() {
        body.push('\n');
    }
    let text = body + &hooks;
    (text != *expected).then(|| {
        let at = text
            .bytes()
            .zip(expected.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(text.len().min(expected.len()));
        format!("texts differ at byte {at}")
    })
}

/// Where a case's values come from.
fn source(label: &str) -> &'static str {
    if label == "defaults" {
        "defaults"
    } else if label.starts_with("ci/") {
        "ci/"
    } else if label.starts_with("HelmRelease ") {
        "HelmRelease"
    } else {
        "own"
    }
}

/// Value sets of our own: options the defaults leave off.
fn own_value_sets(chart: &str) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_string()).collect::<Vec<String>>();
    match chart.split('-').next().unwrap_or("") {
        "kube" => vec![
            s(&["--set", "env.cp_enable=true"]),
            s(&["--set", "env.cp_enable=true,config.address=10.0.0.5"]),
        ],
        "podinfo" => vec![
            s(&[
                "--set",
                "replicaCount=3,ingress.enabled=true,hpa.enabled=true,serviceMonitor.enabled=true",
            ]),
            s(&["--set-string", "image.tag=1.0"]),
            s(&[
                "--set-literal",
                "ui.message=a,b=c",
                "--set-json",
                "podAnnotations={\"x\":1}",
            ]),
        ],
        "cilium" => vec![
            s(&[
                "--set",
                "kubeProxyReplacement=true,k8sServiceHost=192.168.2.9,k8sServicePort=6443",
            ]),
            s(&["--set", "hubble.relay.enabled=true,hubble.ui.enabled=true"]),
        ],
        "cert" => vec![
            s(&["--set", "crds.enabled=true"]),
            s(&["--set", "prometheus.servicemonitor.enabled=true"]),
        ],
        "external" if chart.starts_with("external-secrets") => vec![
            s(&["--set", "bitwarden-sdk-server.enabled=true"]),
            s(&["--include-crds"]),
        ],
        "external" => vec![
            s(&["--include-crds"]),
            s(&[
                "--set",
                "serviceMonitor.enabled=true",
                "--api-versions",
                "monitoring.coreos.com/v1",
            ]),
        ],
        "ingress" => vec![s(&[
            "--set",
            "controller.metrics.enabled=true,controller.metrics.serviceMonitor.enabled=true",
            "--api-versions",
            "monitoring.coreos.com/v1",
        ])],
        "app" => vec![s(&[
            "--set",
            "controllers.main.containers.main.image.repository=nginx,controllers.main.containers.main.image.tag=1.27",
        ])],
        _ => Vec::new(),
    }
}
