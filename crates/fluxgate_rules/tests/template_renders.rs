//! Every rule reads the same bootstrap renders: on the example platform, a whole run of the
//! rules renders each (template, host) pair once, however many rules read it.

use std::path::{Path, PathBuf};

use fluxgate_model::RealFs;
use fluxgate_model::config::Config;
use fluxgate_model::{Environment, discover, load_environment};

/// The repository at `root` (relative to this crate), discovered and every environment rendered.
fn load(root: &str) -> (PathBuf, Config, Vec<Environment>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(root);
    let (config, _) = discover::load(&root).expect("repository config");
    let fs = RealFs::new(&root);
    let envs = config
        .environments
        .iter()
        .map(|e| load_environment(&fs, &root, &config, e))
        .collect();
    (root, config, envs)
}

#[test]
fn each_template_renders_once_per_host() {
    let (root, config, envs) = load("../../examples/homelab");
    // What the load rendered, then what the rules added: nothing (they read the model).
    let loaded: Vec<(usize, usize)> = envs
        .iter()
        .map(|e| {
            e.bootstrap
                .as_ref()
                .map_or((0, 0), |b| b.project.render_counts())
        })
        .collect();
    let index = fluxgate_model::RepoIndex::build(&root);
    let _ = fluxgate_rules::run(&fluxgate_model::Model::new(&index, &config, &envs));
    let after: Vec<(usize, usize)> = envs
        .iter()
        .map(|e| {
            e.bootstrap
                .as_ref()
                .map_or((0, 0), |b| b.project.render_counts())
        })
        .collect();
    assert_eq!(loaded, after, "a rule rendered a template the load had not");
    let mut total = 0;
    for env in &envs {
        let boot = env
            .bootstrap
            .as_ref()
            .expect("homelab bootstraps every environment");
        let (renders, pairs) = boot.project.render_counts();
        eprintln!(
            "{}: {renders} template renders for {pairs} (template, host) pairs",
            env.name()
        );
        assert_eq!(renders, pairs, "{}: a pair was rendered twice", env.name());
        total += pairs;
    }
    assert!(total > 0, "the rules rendered no bootstrap template");
}

/// A template repository's bootstrap renders the templates k3s deploys itself: the auto-deploy
/// manifests and the static pods (`k3s_server_pod_manifests_templates`, kube-vip here).
#[test]
fn static_pod_templates_are_bootstrap_renders() {
    let (_, _, envs) = load("tests/fixtures/ha-endpoint/pass/template-repository-same-variable");
    let env = &envs[0];
    let topo = fluxgate_model::endpoints::topology(env, &[]);
    assert!(topo.representative);
    let renders = fluxgate_model::endpoints::bootstrap_renders(env, &topo);
    let paths: Vec<&str> = renders.iter().map(|r| r.rendered.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "ansible/playbooks/templates/custom-cilium-helmchart.yaml.j2",
            "ansible/playbooks/templates/kube-vip-static-pod.yaml.j2"
        ]
    );
}
