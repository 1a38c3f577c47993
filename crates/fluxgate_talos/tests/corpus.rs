//! The Talos layers of the corpus repositories, read and compared with values written by
//! hand from their files (no Go oracle: the expected values below are what talhelper and
//! Talos do with these files, reasoned from their documentation and stated per case).
//! Skips visibly without FLUXGATE_CORPUS; fails under CI=true without it.

use std::path::Path;

use fluxgate_fs::RealFs;
use fluxgate_talos::{Cluster, load};

fn read(corpus: &Path, repo: &str, path: &str) -> Cluster {
    let root = corpus.join("gitops").join(repo);
    let fs = RealFs::new(&root);
    load(&fs, &root, path)
}

fn endpoint(c: &Cluster) -> Option<(String, bool)> {
    c.endpoint().map(|e| (e.text.clone(), e.known))
}

/// (control planes, workers)
fn roles(c: &Cluster) -> (usize, usize) {
    (c.control_planes().count(), c.workers().count())
}

fn prism(c: &Cluster, host: &str) -> Option<(bool, u16, bool)> {
    let n = c.nodes.iter().find(|n| n.hostname == host)?;
    c.kube_prism_on(n)
        .map(|f| (f.value.enabled, f.value.port, f.value.default))
}

#[test]
fn corpus_talos_layers() {
    let Some(corpus) = fluxgate_testkit::corpus("corpus_talos_layers") else {
        return;
    };

    // ahinko: talenv.yaml is SOPS-encrypted under a plain name, so the endpoint and the VIP
    // (both `${CLUSTER_ENDPOINT_IP}`) are unknown and never printed. Three control planes
    // carry the VIP on their interface; KubePrism and proxy.disabled come from the role
    // patches (the workers get the KubePrism patch by its YAML alias).
    let c = read(&corpus, "ahinko__home-ops", "infrastructure/talos");
    assert_eq!(c.name.as_deref(), Some("main"));
    assert_eq!(roles(&c), (3, 3));
    assert_eq!(
        endpoint(&c),
        Some(("https://${CLUSTER_ENDPOINT_IP}:6443".into(), false))
    );
    assert_eq!(c.vips.len(), 3);
    assert!(c.vips.iter().all(|v| !v.value.known));
    assert_eq!(c.cni[0].value, "none");
    assert!(c.proxy_disabled().is_some_and(|p| p.value));
    assert_eq!(prism(&c, "cp01"), Some((true, 7445, false)));
    assert_eq!(prism(&c, "w01"), Some((true, 7445, false)));
    assert_eq!(c.cert_sans.len(), 2);
    assert!(only_unknown_notes(&c), "{:?}", c.problems);
    // Its endpoint and VIPs come from the encrypted talenv: one note says they are unknown.
    assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
    assert!(!format!("{c:?}").contains("ENC["));

    // jfroy: three control planes, a DNS endpoint, no VIP; talosVersion v1.13.7 generates
    // KubePrism (no patch mentions it); `${CLUSTER_*_V6_CIDR}` are keys of the encrypted
    // talenv.sops.yaml: unknown, not undefined.
    let c = read(&corpus, "jfroy__flatops", "talos/talconfig.yaml");
    assert_eq!(roles(&c), (3, 0));
    assert_eq!(
        endpoint(&c),
        Some(("https://k8s.kantai.xyz:6443".into(), true))
    );
    assert!(c.vips.is_empty());
    assert_eq!(prism(&c, "kantai2"), Some((true, 7445, true)));
    assert!(c.proxy_disabled().is_some_and(|p| p.value));
    assert_eq!(c.cert_sans.len(), 3);
    assert!(only_unknown_notes(&c), "{:?}", c.problems);

    // mirceanton: one control plane; every patch is an `@./patches/...` file, all present.
    let c = read(&corpus, "mirceanton__home-ops", "talos/talconfig.yaml");
    assert_eq!(roles(&c), (1, 0));
    assert_eq!(
        c.nodes[0].address.as_ref().map(|a| a.text.as_str()),
        Some("10.0.0.15")
    );
    let kp = c.kube_prism_on(&c.nodes[0]).expect("KubePrism");
    assert_eq!(&*kp.loc.file, "talos/patches/kubeprism.yaml");
    assert_eq!(kp.loc.line, 5); // the file opens with `---`
    let proxy = c.proxy_disabled().expect("proxy");
    assert_eq!(&*proxy.loc.file, "talos/patches/disable-kube-proxy.yaml");
    assert!(only_unknown_notes(&c), "{:?}", c.problems);

    // coolguy1771: ten nodes, three control planes; KubePrism comes from RFC 6902 `add`
    // patches in both role sections (line 417 for the workers), proxy.disabled from one on
    // the control planes.
    let c = read(&corpus, "coolguy1771__home-ops", "talos/talconfig.yaml");
    assert_eq!(roles(&c), (3, 7));
    assert_eq!(
        endpoint(&c),
        Some(("https://k8s-lb.286k.co:6443".into(), true))
    );
    assert_eq!(prism(&c, "k8s-0"), Some((true, 7445, false)));
    assert_eq!(prism(&c, "k8s-5"), Some((true, 7445, false)));
    let w = c
        .nodes
        .iter()
        .find(|n| n.hostname == "k8s-5")
        .expect("k8s-5");
    assert_eq!(c.kube_prism_on(w).map(|f| f.loc.line), Some(419));
    assert!(c.proxy_disabled().is_some_and(|p| p.value));
    assert!(only_unknown_notes(&c), "{:?}", c.problems);

    // billimek: one control plane and seven workers; proxy.disabled in a controller patch
    // file; its `{{ .MachineConfig... }}` annotations are talhelper templates, not `${}`.
    let c = read(
        &corpus,
        "billimek__k8s-gitops",
        "setup/talos/talconfig.yaml",
    );
    assert_eq!(roles(&c), (1, 7));
    assert_eq!(
        endpoint(&c),
        Some(("https://k8s-cp.home:6443".into(), true))
    );
    assert_eq!(
        c.proxy_disabled().map(|p| p.loc.file.to_string()),
        Some("setup/talos/patches/controller/cluster.yaml".into())
    );
    assert_eq!(c.cert_sans.len(), 3);
    assert!(only_unknown_notes(&c), "{:?}", c.problems);

    // bjw-s: no talhelper; Jinja machine configs with the newer documents: one node file
    // (delta, a control plane), KubePrismConfig in the base, KubeProxyConfig disabled and
    // certExtraSANs in the control-plane file.
    let c = read(&corpus, "bjw-s-labs__home-ops", "kubernetes/talos");
    assert_eq!(c.name.as_deref(), Some("home-ops"));
    assert_eq!(roles(&c), (1, 0));
    assert_eq!(c.nodes[0].hostname, "delta");
    assert_eq!(
        endpoint(&c),
        Some(("https://k8s.bjw-s.internal:6443".into(), true))
    );
    assert_eq!(prism(&c, "delta"), Some((true, 7445, false)));
    assert!(c.proxy_disabled().is_some_and(|p| p.value));
    assert_eq!(c.cert_sans.len(), 2);
    assert!(only_unknown_notes(&c), "{:?}", c.problems);
}

/// No problem but the one note that names values not known offline (encrypted, templated).
fn only_unknown_notes(c: &fluxgate_talos::Cluster) -> bool {
    c.problems
        .iter()
        .all(|p| p.kind == fluxgate_talos::ProblemKind::Unknown)
}
