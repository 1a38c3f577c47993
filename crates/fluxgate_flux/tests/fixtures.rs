//! Fixture tests (`tests/fixtures/`): substitution with real-shaped Kustomizations and objects
//! (substituteFrom with optional and missing references, inline overriding substituteFrom,
//! `substitute: disabled`), HelmRelease effective values over a chart cache (valuesFrom with
//! targetPath, a chart default shining through), and a Flux tree repository (`tree/`: three
//! nested levels, a dependsOn cycle, a path escaping the repository, a broken Kustomization
//! that hides none of the others, a `.sourceignore`).

use std::path::{Path, PathBuf};

use fluxgate_flux::helm::{ChartCache, effective_values, effective_values_with};
use fluxgate_flux::problem::{Problem, ProblemKind};
use fluxgate_flux::substitute::{Options, Status, substitute_resource};
use fluxgate_flux::vars::{OPAQUE_VALUE, Vars};
use fluxgate_yaml::{Node, Schema, parse_stream};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Parses a fixture file, naming locations relative to the fixtures folder.
fn load(rel: &str) -> Vec<Node> {
    let text = std::fs::read_to_string(fixtures().join(rel)).expect("fixture exists");
    let s = parse_stream(rel, &text, Schema::Kube);
    assert!(s.diagnostics.is_empty(), "{rel}: {:?}", s.diagnostics);
    s.docs
}

fn named<'a>(docs: &'a [Node], name: &str) -> &'a Node {
    docs.iter()
        .find(|d| d.str_at(&["metadata", "name"]) == Some(name))
        .expect("named object exists")
}

#[test]
fn substitute_from_with_optional_and_missing_references() {
    let objects = load("substitution/objects.yaml");
    let kss = load("substitution/kustomizations.yaml");
    let (vars, diags) = Vars::for_kustomization(named(&kss, "optional-and-missing"), &objects);
    // The optional reference is silent; the required one that exists nowhere is an error at
    // its entry.
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(matches!(diags[0].kind, ProblemKind::MissingObject { .. }));
    assert!(diags[0].message.contains("Secret/not-created-anywhere"));
    assert_eq!(diags[0].location.as_ref().map(|l| l.line), Some(15));
    assert_eq!(
        vars.get("K3S_API_HOST").map(|v| v.value.as_str()),
        Some("192.168.2.9")
    );
    assert_eq!(
        vars.get("SECRET_DOMAIN").map(|v| v.value.as_str()),
        Some("example.com")
    );
    let token = vars.get("API_TOKEN").expect("SOPS keys are defined");
    assert!(token.opaque);

    let resources = load("substitution/resources.yaml");
    let out = substitute_resource(named(&resources, "cilium"), &vars, Options::default());
    assert_eq!(out.status, Status::Substituted);
    assert!(out.problems.is_empty(), "{:?}", out.problems);
    let values = out.resource.path(&["spec", "values"]).expect("values");
    assert_eq!(values.str_at(&["cluster", "name"]), Some("prod"));
    assert_eq!(values.str_at(&["ingressHost"]), Some("hubble.example-com"));
    assert_eq!(values.str_at(&["token"]), Some(OPAQUE_VALUE));
    let host = values.get("k8sServiceHost").expect("host");
    assert_eq!(host.as_str(), Some("192.168.2.9"));
    assert_eq!(host.loc.file.as_ref(), "substitution/objects.yaml");
    assert_eq!(host.loc.line, 9);
    let token_use = out
        .substituted
        .iter()
        .find(|s| s.var == "API_TOKEN")
        .expect("recorded");
    assert!(token_use.opaque);
    assert_eq!(token_use.consumer.line, 17);
}

#[test]
fn inline_substitute_overrides_substitute_from() {
    let objects = load("substitution/objects.yaml");
    let kss = load("substitution/kustomizations.yaml");
    let ks = named(&kss, "inline-overrides");
    let (vars, diags) = Vars::for_kustomization(ks, &objects);
    assert!(diags.is_empty(), "{diags:?}");
    let host = vars.get("K3S_API_HOST").expect("defined");
    assert_eq!(host.value, "10.0.0.100");
    assert_eq!(
        host.definition.file.as_ref(),
        "substitution/kustomizations.yaml"
    );
    assert_eq!(host.definition.line, 31);

    let resources = load("substitution/resources.yaml");
    let out = substitute_resource(named(&resources, "cilium"), &vars, Options::default());
    let host = out.resource.path(&["spec", "values", "k8sServiceHost"]);
    assert_eq!(host.and_then(Node::as_str), Some("10.0.0.100"));
    assert_eq!(host.map(|h| h.loc.line), Some(31));
    // SECRET_DOMAIN is not defined for this Kustomization: strict Flux refuses the release,
    // older Flux writes `hubble.`.
    assert!(out.strict_failed());
    assert!(out.undefined.iter().any(|u| u.var == "SECRET_DOMAIN"));
    assert_eq!(
        out.resource.str_at(&["spec", "values", "ingressHost"]),
        Some("hubble.")
    );
}

#[test]
fn substitute_disabled_resources_are_left_alone() {
    let objects = load("substitution/objects.yaml");
    let kss = load("substitution/kustomizations.yaml");
    let (vars, _) = Vars::for_kustomization(named(&kss, "inline-overrides"), &objects);
    let resources = load("substitution/resources.yaml");
    let scripts = named(&resources, "scripts");
    let out = substitute_resource(scripts, &vars, Options::default());
    assert_eq!(out.status, Status::Disabled);
    assert!(out.problems.is_empty());
    assert_eq!(
        out.resource.str_at(&["data", "run.sh"]),
        scripts.str_at(&["data", "run.sh"])
    );
}

#[test]
fn undefined_variables_are_findings_at_their_line() {
    let objects = load("substitution/objects.yaml");
    let kss = load("substitution/kustomizations.yaml");
    let (vars, _) = Vars::for_kustomization(named(&kss, "inline-overrides"), &objects);
    let resources = load("substitution/resources.yaml");
    let out = substitute_resource(
        named(&resources, "uses-undefined"),
        &vars,
        Options::default(),
    );
    let found: Vec<_> = out
        .problems
        .iter()
        .map(|d| (d.kind.clone(), d.location.as_ref().map(|l| l.line)))
        .collect();
    // The default form is fine; the bare one is not.
    let undefined = ProblemKind::UndefinedVariable {
        name: found
            .first()
            .and_then(|(k, _)| match k {
                ProblemKind::UndefinedVariable { name, .. } => Some(name.clone()),
                _ => None,
            })
            .unwrap_or_default(),
        strict: true,
    };
    assert_eq!(found, vec![(undefined, Some(36))]);
    assert_eq!(
        out.resource.str_at(&["data", "endpoint"]),
        Some("https://:6443")
    );
    // Re-parsed like Flux does: the default reads back as a number.
    assert_eq!(
        out.resource
            .path(&["data", "fallback"])
            .and_then(Node::as_i64),
        Some(6443)
    );
}

fn cache() -> ChartCache<'static> {
    ChartCache::new(&fixtures(), "helm/charts")
}

#[test]
fn chart_default_shines_through() {
    let docs = load("helm/cilium-release.yaml");
    // The release's HelmRepository, so that its chart source exists.
    let repo = parse_stream(
        "helm/repository.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: cilium, namespace: kube-system}\nspec: {url: https://helm.cilium.io}\n",
        Schema::Kube,
    )
    .docs;
    let v = effective_values(&docs[0], &repo, &cache());
    assert!(v.problems.is_empty(), "{:?}", v.problems);
    let chart = v.chart.as_ref().expect("chart resolved");
    assert_eq!(
        chart.found.as_deref(),
        Some("helm/charts/cilium-1.20.1.tgz")
    );
    let max = v
        .tree
        .path(&["updateStrategy", "rollingUpdate", "maxUnavailable"])
        .and_then(Node::as_i64);
    assert_eq!(max, Some(2));
    let path = "updateStrategy.rollingUpdate.maxUnavailable";
    assert!(v.is_chart_default(path));
    let o = &v.origins[path][0];
    assert_eq!(
        o.location.file.as_ref(),
        "helm/charts/cilium-1.20.1.tgz/cilium/values.yaml"
    );
    assert_eq!(o.location.line, 8);
    assert_eq!(o.via, "chart default (cilium 1.20.1)");
    // Inline values win over defaults, maps merge, null deletes.
    assert_eq!(
        v.tree.get("kubeProxyReplacement").and_then(Node::as_bool),
        Some(true)
    );
    assert_eq!(v.origins["kubeProxyReplacement"][0].via, "inline values");
    assert_eq!(v.origins["kubeProxyReplacement"][0].location.line, 16);
    assert_eq!(
        v.tree.path(&["hubble", "enabled"]).and_then(Node::as_bool),
        Some(true)
    );
    assert_eq!(
        v.tree
            .path(&["hubble", "relay", "enabled"])
            .and_then(Node::as_bool),
        Some(true)
    );
    assert!(
        v.tree
            .get("operator")
            .is_some_and(|o| o.get("replicas").is_none())
    );
    assert!(!v.origins.contains_key("operator.replicas"));
    // What Helm is handed: the release's own values, its nulls kept (Helm's coalescing
    // deletes those defaults), none of the chart's defaults.
    assert!(v.user.path(&["updateStrategy"]).is_none());
    assert!(
        v.user
            .path(&["operator", "replicas"])
            .is_some_and(Node::is_null)
    );
    assert_eq!(
        v.user.get("kubeProxyReplacement").and_then(Node::as_bool),
        Some(true)
    );
}

#[test]
fn substituted_inline_value_names_its_variable() {
    let objects = load("substitution/objects.yaml");
    let kss = load("substitution/kustomizations.yaml");
    let (vars, _) = Vars::for_kustomization(named(&kss, "optional-and-missing"), &objects);
    let resources = load("substitution/resources.yaml");
    let out = substitute_resource(named(&resources, "cilium"), &vars, Options::default());
    let v = effective_values_with(&out.resource, &objects, &cache(), &out.substituted);
    let chain = &v.origins["k8sServiceHost"];
    // The variable's definition set the value (the finding's place); the inline `${VAR}`
    // passed it on.
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[0].via, "substituted from variable K3S_API_HOST");
    assert_eq!(chain[0].var.as_deref(), Some("K3S_API_HOST"));
    assert_eq!(chain[0].location.file.as_ref(), "substitution/objects.yaml");
    assert_eq!(chain[0].location.line, 9);
    assert_eq!(chain[1].via, "inline values");
    assert_eq!(
        chain[1].location.file.as_ref(),
        "substitution/resources.yaml"
    );
    assert_eq!(chain[1].location.line, 14);
    assert!(v.origins["token"][0].via.contains("encrypted"));
    assert!(v.is_chart_default("updateStrategy.rollingUpdate.maxUnavailable"));
}

#[test]
fn values_from_in_order_with_target_path() {
    let docs = load("helm/podinfo-release.yaml");
    let release = named(&docs, "podinfo");
    let v = effective_values(release, &docs, &cache());
    // Only the required missing reference is reported.
    let errors: Vec<_> = v.problems.iter().filter(|d| d.kind.fails()).collect();
    assert_eq!(errors.len(), 1, "{:?}", v.problems);
    assert!(errors[0].message.contains("required-but-missing"));
    let chart = v.chart.as_ref().expect("chart");
    assert_eq!(chart.found.as_deref(), Some("helm/charts/podinfo"));

    let t = &v.tree;
    assert_eq!(t.get("replicaCount").and_then(Node::as_i64), Some(3));
    assert_eq!(
        v.origins["replicaCount"][0].via,
        "valuesFrom ConfigMap/apps/podinfo-values key values.yaml"
    );
    // The line inside the ConfigMap's literal block.
    assert_eq!(v.origins["replicaCount"][0].location.line, 8);
    assert_eq!(t.str_at(&["resources", "limits", "cpu"]), Some("100m"));
    assert_eq!(t.str_at(&["resources", "requests", "cpu"]), Some("1m"));
    assert_eq!(t.str_at(&["ui", "color"]), Some("#ff0000"));
    assert!(
        v.origins["ui.color"][0]
            .via
            .ends_with("targetPath ui.color")
    );
    // targetPath values are typed as Helm's --set types them; escaped dots stay in the key.
    assert_eq!(t.get("podinfo.io/replicas").and_then(Node::as_i64), Some(5));
    assert!(v.origins.contains_key("podinfo\\.io/replicas"));
    // Inline values are applied last.
    assert_eq!(t.str_at(&["ui", "message"]), Some("inline wins"));
    assert_eq!(v.origins["ui.message"][0].via, "inline values");
    assert_eq!(
        t.str_at(&["image", "repository"]),
        Some("ghcr.io/stefanprodan/podinfo")
    );
    assert!(v.is_chart_default("image.repository"));
    assert!(v.is_chart_default("resources.requests.memory"));
}

/// A chart missing from the cache is no finding of the release: the environment reports all
/// of its missing charts in one note (fluxgate_model).
#[test]
fn chart_not_in_cache_is_recorded_not_reported() {
    let docs = load("helm/podinfo-release.yaml");
    let v = effective_values(named(&docs, "uncached"), &docs, &cache());
    assert!(v.problems.is_empty(), "{:#?}", v.problems);
    assert_eq!(v.tree.get("a").and_then(Node::as_i64), Some(1));
    let chart = v.chart.as_ref().expect("the chart is known");
    assert!(chart.found.is_none());
    assert_eq!(chart.name, "not-cached");
    assert_eq!(chart.version.as_deref(), Some("1.0.0"));
    assert!(chart.location.line > 0);
}

/// The Flux tree of `tests/fixtures/tree` (entry `clusters/prod`).
fn tree() -> fluxgate_flux::tree::Tree {
    let root = fixtures().join("tree");
    let fs = fluxgate_kustomize::RealFs::new(&root);
    fluxgate_flux::tree::render_tree(
        &fs,
        &root,
        "clusters/prod",
        &fluxgate_flux::tree::TreeOptions::default(),
    )
}

/// How the `render` rule reports a problem.
fn severity(p: &Problem) -> &'static str {
    if p.kind.fails() {
        "error"
    } else if p.kind.is_offline_unknown() {
        "note"
    } else {
        "warning"
    }
}

fn messages(tree: &fluxgate_flux::tree::Tree) -> Vec<String> {
    tree.problems
        .iter()
        .map(|d| {
            format!(
                "{} {}: {}",
                d.location
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                severity(d),
                d.message
            )
        })
        .collect()
}

#[test]
fn tree_nested_three_levels_with_substitution_at_each() {
    let t = tree();
    let ids: Vec<String> = t
        .kustomizations
        .iter()
        .map(fluxgate_flux::tree::FluxKustomization::id)
        .collect();
    // The root renders the entry once; infra (level 1) renders apps (level 2), whose path
    // comes from infra's substitution; apps renders web (level 3).
    for id in ["flux-system/infra", "flux-system/apps", "flux-system/web"] {
        assert!(ids.contains(&id.to_string()), "{id} in {ids:?}");
    }
    assert_eq!(ids[0], "flux-system/flux-system");
    let apps = t
        .kustomizations
        .iter()
        .find(|k| k.name == "apps")
        .expect("apps");
    assert_eq!(apps.path, "apps");
    let web = t
        .kustomizations
        .iter()
        .find(|k| k.name == "web")
        .expect("web");
    let cm = &web.objects[0];
    assert_eq!(cm.str_at(&["metadata", "namespace"]), Some("apps"));
    let cluster = cm.path(&["data", "cluster"]).expect("substituted");
    assert_eq!(cluster.as_str(), Some("prod"));
    assert_eq!(cluster.loc.file.as_ref(), "clusters/prod/vars.yaml");
    // Every object once: the entry's objects are the root's.
    let names: Vec<String> = t
        .objects()
        .map(|o| {
            format!(
                "{}/{}",
                o.str_at(&["kind"]).unwrap_or_default(),
                o.str_at(&["metadata", "name"]).unwrap_or_default()
            )
        })
        .collect();
    let unique: std::collections::BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
}

#[test]
fn tree_cycle_escape_and_broken_are_findings_and_the_rest_renders() {
    let t = tree();
    let msgs = messages(&t);
    let has = |s: &str| msgs.iter().any(|m| m.contains(s));
    assert!(
        has("dependsOn cycle: flux-system/cycle-a -> flux-system/cycle-b -> flux-system/cycle-a"),
        "{msgs:#?}"
    );
    assert!(
        has("clusters/prod/broken.yaml:19:9 error: spec.path `./clusters/../../outside` leaves"),
        "{msgs:#?}"
    );
    assert!(has("broken/kustomization.yaml:2:5 error:"), "{msgs:#?}");
    assert!(has("missing.yaml"), "{msgs:#?}");
    // The ignored draft is not read at all (it would be a YAML error).
    assert!(!msgs.iter().any(|m| m.contains("drafts")), "{msgs:#?}");
    assert_eq!(msgs.len(), 3, "{msgs:#?}");
    // The broken Kustomization hides nothing: the cycle's members and web still render.
    for name in ["cycle-a", "cycle-b", "web"] {
        assert!(
            t.kustomizations.iter().any(|k| k.name == name),
            "{name} rendered"
        );
    }
}
