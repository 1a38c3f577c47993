//! Origins of rendered pieces on a real chart: the Cilium agent DaemonSet's `maxUnavailable`
//! comes from the chart's `updateStrategy` values (printed whole by `toYaml . | trim |
//! nindent 4` inside `with .Values.updateStrategy`, so the span has the block's root path
//! and the leaf is below it by its YAML path), and a value the user sets keeps its path.

use std::path::Path;

use fluxgate_helm::{Manifest, Request, SpanOrigin};

const TEST: &str = "cilium_origins";

fn cilium(corpus: &Path, set: &[&str]) -> Vec<Manifest> {
    let req = Request {
        release_name: "cilium".into(),
        namespace: "kube-system".into(),
        chart: corpus.join("helm-charts/cilium-1.17.18"),
        kube_version: Some("1.30.0".into()),
        set: set.iter().map(|s| (*s).to_string()).collect(),
        ..Request::default()
    };
    fluxgate_helm::run_manifests(&req)
        .expect("cilium renders")
        .manifests
}

/// The origin of the span that covers the first occurrence of `needle` in the agent
/// DaemonSet, and the text of that span.
fn origin_of(manifests: &[Manifest], needle: &str) -> (SpanOrigin, String) {
    let ds = manifests
        .iter()
        .find(|m| {
            m.source == "cilium/templates/cilium-agent/daemonset.yaml" && m.kind == "DaemonSet"
        })
        .expect("the agent DaemonSet");
    let at = ds.text.find(needle).expect("needle in the DaemonSet");
    let span = ds
        .spans
        .iter()
        .find(|s| s.start <= at && at + needle.len() <= s.end)
        .unwrap_or_else(|| panic!("no span covers {needle:?}: {:?}", ds.spans));
    (
        span.origin.clone(),
        ds.text[span.start..span.end].to_string(),
    )
}

#[test]
fn cilium_origins() {
    let Some(corpus) = fluxgate_testkit::corpus(TEST) else {
        return;
    };
    let defaults = cilium(&corpus, &["hubble.tls.auto.method=cronJob"]);
    let (origin, block) = origin_of(&defaults, "maxUnavailable: 2");
    assert_eq!(
        origin,
        SpanOrigin::Values {
            path: "updateStrategy".into()
        }
    );
    // The caller's step: the leaf's YAML path inside the block, below the root path.
    assert!(
        block.contains("rollingUpdate:\n      maxUnavailable: 2"),
        "{block:?}"
    );
    let (origin, _) = origin_of(&defaults, "updateStrategy:");
    assert!(
        matches!(&origin, SpanOrigin::Template { file, line: 45, .. } if &**file == "cilium/templates/cilium-agent/daemonset.yaml"),
        "{origin:?}"
    );

    // A scalar set by the user is traced to its own path.
    let user = cilium(
        &corpus,
        &["hubble.tls.auto.method=cronJob", "k8sServiceHost=10.0.0.9"],
    );
    let (origin, text) = origin_of(&user, "10.0.0.9");
    assert_eq!(
        origin,
        SpanOrigin::Values {
            path: "k8sServiceHost".into()
        },
        "{text:?}"
    );
}

/// app-template (bjw-s' common library) replaces `.Values` by a `deepCopy` of merged
/// copies, then rebuilds each controller with `include ... | fromYaml` of what `toYaml`
/// printed: the Deployment's values still point at their values paths. Each container is
/// printed by a text template (`image: {{ printf "%s:%s" repo tag }}`, `env: {{ ... |
/// nindent 2 }}`) that `fromYaml` parses: its fields keep the origins of their bytes, the
/// image's repository and tag each their own.
#[test]
fn app_template_origins_survive_from_yaml() {
    let Some(corpus) = fluxgate_testkit::corpus("app_template_origins") else {
        return;
    };
    let req = Request {
        release_name: "demo".into(),
        namespace: "apps".into(),
        chart: corpus.join("helm-charts/app-template-4.1.1"),
        // Its schema refers to one on the network.
        skip_schema_validation: true,
        set: [
            "controllers.main.replicas=3",
            "controllers.main.containers.app.image.repository=ghcr.io/acme/demo",
            "controllers.main.containers.app.image.tag=v1.2.3",
            "controllers.main.strategy=RollingUpdate",
            "controllers.main.containers.app.env.TZ=UTC",
            "controllers.main.containers.app.ports[0].name=http",
            "controllers.main.containers.app.ports[0].containerPort=8080",
            "controllers.main.containers.app.resources.limits.memory=1Gi",
            "service.main.controller=main",
            "service.main.ports.http.port=8080",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect(),
        ..Request::default()
    };
    let manifests = fluxgate_helm::run_manifests(&req)
        .expect("app-template renders")
        .manifests;
    // The origin of the first `needle` after the first `key` of the object of `kind`.
    let origin = |kind: &str, key: &str, needle: &str| {
        let m = manifests
            .iter()
            .find(|m| m.kind == kind)
            .unwrap_or_else(|| panic!("no {kind}"));
        let line = m
            .text
            .find(key)
            .unwrap_or_else(|| panic!("{key:?} not in the {kind}:\n{}", m.text));
        let at = line
            + m.text[line..]
                .find(needle)
                .unwrap_or_else(|| panic!("{needle:?} not after {key:?}"));
        m.spans
            .iter()
            .find(|s| s.start <= at && at + needle.len() <= s.end)
            .map_or_else(
                || panic!("no span covers {needle:?}: {:?}", m.spans),
                |s| s.origin.clone(),
            )
    };
    let value = |p: &str| SpanOrigin::Values { path: p.into() };
    assert_eq!(
        origin("Deployment", "replicas:", "3"),
        value("controllers.main.replicas")
    );
    assert_eq!(
        origin("Deployment", "strategy:", "RollingUpdate"),
        value("controllers.main.strategy")
    );
    assert_eq!(
        origin("Service", "port:", "8080"),
        value("service.main.ports.http.port")
    );
    // The container, printed by a text template and parsed back.
    assert_eq!(
        origin("Deployment", "image:", "ghcr.io/acme/demo"),
        value("controllers.main.containers.app.image.repository")
    );
    assert_eq!(
        origin("Deployment", "image:", "v1.2.3"),
        value("controllers.main.containers.app.image.tag")
    );
    assert!(
        matches!(
            origin("Deployment", "ghcr.io/acme/demo", ":"),
            SpanOrigin::Template { .. }
        ),
        "the `:` is printf's"
    );
    assert_eq!(
        origin("Deployment", "- name: TZ", "UTC"),
        value("controllers.main.containers.app.env.TZ")
    );
    assert_eq!(
        origin("Deployment", "containerPort:", "8080"),
        value("controllers.main.containers.app.ports[0].containerPort")
    );
    // A block the spec printed with `toYaml` and `fromYaml` parsed: traced as its path.
    assert_eq!(
        origin("Deployment", "memory:", "1Gi"),
        value("controllers.main.containers.app.resources.limits.memory")
    );
    // Text that the library writes stays the template's.
    assert!(matches!(
        origin("Deployment", "kind:", "Deployment"),
        SpanOrigin::Template { .. }
    ));
}

/// A render with the memo of `include` off, then on: what it printed, or its error.
fn both_ways(req: &Request) -> [Result<Vec<Manifest>, String>; 2] {
    [false, true].map(|on| {
        fluxgate_gotemplate::memo::set_enabled(on);
        let out = fluxgate_helm::run_manifests(req)
            .map(|r| r.manifests)
            .map_err(|e| e.to_string());
        fluxgate_gotemplate::memo::set_enabled(true);
        out
    })
}

#[test]
fn the_include_memo_changes_no_output_and_no_origin() {
    let Some(corpus) = fluxgate_testkit::corpus("include_memo") else {
        return;
    };
    let charts = corpus.join("helm-charts");
    let mut requests = Vec::new();
    for chart in std::fs::read_dir(&charts).expect("helm-charts") {
        let chart = chart.expect("entry").path();
        if !chart.join("Chart.yaml").is_file() {
            continue;
        }
        let base = Request {
            release_name: "memo".into(),
            namespace: "memo".into(),
            chart: chart.clone(),
            kube_version: Some("1.30.0".into()),
            skip_schema_validation: true,
            ..Request::default()
        };
        let mut files: Vec<_> = std::fs::read_dir(chart.join("ci"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        requests.push(base.clone());
        requests.extend(files.into_iter().map(|f| Request {
            values_files: vec![f],
            ..base.clone()
        }));
    }
    // app-template's library asks for the enabled Services for every probe of every
    // container: two controllers, two Services, probes on.
    let app = Request {
        chart: charts.join("app-template-4.1.1"),
        set: [
            "controllers.main.containers.app.image.repository=ghcr.io/acme/demo",
            "controllers.main.containers.app.image.tag=v1",
            "controllers.main.containers.app.probes.liveness.enabled=true",
            "controllers.main.containers.app.probes.readiness.enabled=true",
            "controllers.main.containers.app.probes.startup.enabled=true",
            "controllers.side.containers.app.image.repository=ghcr.io/acme/side",
            "controllers.side.containers.app.image.tag=v2",
            "controllers.side.containers.app.probes.liveness.enabled=true",
            "service.main.controller=main",
            "service.main.ports.http.port=8080",
            "service.side.controller=side",
            "service.side.ports.http.port=9090",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect(),
        ..requests[0].clone()
    };
    requests.push(app.clone());
    assert!(requests.len() > 20, "{} renders", requests.len());
    for req in &requests {
        let [off, on] = both_ways(req);
        assert_eq!(on, off, "{} {:?}", req.chart.display(), req.values_files);
    }
    let before = fluxgate_gotemplate::memo::hits();
    let [_, on] = both_ways(&app);
    let on = on.expect("app-template renders");
    assert_eq!(on.len(), 4, "two Deployments and two Services: {on:?}");
    assert!(
        fluxgate_gotemplate::memo::hits() > before + 10,
        "app-template's repeated includes are answered from the memo"
    );
}
