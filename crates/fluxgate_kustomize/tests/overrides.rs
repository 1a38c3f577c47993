//! The build records what each patch replaced: base value -> patch value, per object and key
//! path, through several overlays and both patch kinds.

use std::path::Path;

use fluxgate_kustomize::{MemFs, build};

fn repo() -> MemFs {
    let mut fs = MemFs::new();
    fs.insert("/r/base/kustomization.yaml", "resources: [cm.yaml]\n");
    fs.insert(
        "/r/base/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"1\"\n  region: eu\n  keep: same\n",
    );
    fs.insert(
        "/r/mid/kustomization.yaml",
        "resources: [../base]\npatches:\n  - path: replicas.yaml\n",
    );
    fs.insert(
        "/r/mid/replicas.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"2\"\n",
    );
    fs.insert(
        "/r/prod/kustomization.yaml",
        "resources: [../mid]\npatches:\n  - path: replicas.yaml\n  - target: {kind: ConfigMap, name: settings}\n    patch: |-\n      - op: replace\n        path: /data/region\n        value: us\n",
    );
    fs.insert(
        "/r/prod/replicas.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"3\"\n",
    );
    fs
}

#[test]
fn each_patch_records_the_value_it_replaced() {
    let fs = repo();
    let b = build(&fs, Path::new("/r"), Path::new("/r/prod"));
    assert!(b.problems.is_empty(), "{:?}", b.problems);
    assert_eq!(b.objects.len(), 1);
    let seen: Vec<(String, String, String)> = b.overrides[0]
        .iter()
        .map(|o| {
            (
                o.path.clone(),
                format!("{}:{}", o.base.file, o.base.line),
                format!("{}:{}", o.patch.file, o.patch.line),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "data.replicas".into(),
                "base/cm.yaml:6".into(),
                "mid/replicas.yaml:6".into()
            ),
            (
                "data.replicas".into(),
                "mid/replicas.yaml:6".into(),
                "prod/replicas.yaml:6".into()
            ),
            (
                "data.region".into(),
                "base/cm.yaml:7".into(),
                "prod/kustomization.yaml:8".into()
            ),
        ]
    );
}

#[test]
fn a_build_without_patches_has_no_overrides() {
    let fs = repo();
    let b = build(&fs, Path::new("/r"), Path::new("/r/base"));
    assert_eq!(b.overrides, vec![Vec::new()]);
}
