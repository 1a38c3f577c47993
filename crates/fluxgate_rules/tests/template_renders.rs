//! Every rule reads the same bootstrap renders: on the example platform, a whole run of the
//! rules renders each (template, host) pair once, however many rules read it.

use std::path::Path;

use fluxgate_kustomize::RealFs;
use fluxgate_model::{discover, load_environment};

#[test]
fn each_template_renders_once_per_host() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab");
    let (config, _) = discover::load(&root).expect("homelab config");
    let fs = RealFs::new(&root);
    let envs: Vec<_> = config
        .environments
        .iter()
        .map(|e| load_environment(&fs, &root, &config, e))
        .collect();
    let _ = fluxgate_rules::run(&root, &config, &envs);
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
