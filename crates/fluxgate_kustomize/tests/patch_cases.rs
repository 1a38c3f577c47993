//! Patch fixtures checked against what `kubectl kustomize` (kustomize v5.5.0) printed.
//!
//! Each folder of `tests/fixtures/patches/` holds a tiny kustomization (`kustomization.yaml`,
//! `deploy.yaml`, the patch files) and what kubectl printed for it: `expected.yaml`, or
//! `expected.err` when kubectl failed. This test applies the patches with the functions of
//! `fluxgate_kustomize::patch` directly (no build engine): a patch with a `target:` goes to
//! every resource the selector matches, one without goes to the resource of the same kind and
//! name; a list is a JSON 6902 patch, a mapping a strategic merge patch. The fixtures were
//! made with kubectl once; regenerating them needs kubectl but running this test does not.

use std::fs;
use std::path::{Path, PathBuf};

use fluxgate_kustomize::patch::{is_delete_patch, json6902, selector_matches, strategic_merge};
use fluxgate_yaml::{Node, Schema, parse_stream};

fn load(dir: &Path, file: &str) -> Vec<Node> {
    let path = dir.join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_stream(file, &text, Schema::Kube).docs
}

fn id(n: &Node) -> (String, String) {
    (
        n.str_at(&["kind"]).unwrap_or("").to_string(),
        n.str_at(&["metadata", "name"]).unwrap_or("").to_string(),
    )
}

/// kustomize keeps the target's kind, name and namespace whatever the patch says.
fn restore_identity(obj: &mut Node, kind: &Node, meta: Option<(Node, Option<Node>)>) {
    if let Some(m) = obj.as_map_mut() {
        m.insert("kind".into(), kind.clone());
    }
    if let (Some((name, ns)), Some(md)) = (meta, obj.get_mut("metadata").and_then(Node::as_map_mut))
    {
        md.insert("name".into(), name);
        match ns {
            Some(ns) => {
                md.insert("namespace".into(), ns);
            }
            None => {
                md.shift_remove("namespace");
            }
        }
    }
}

fn apply_case(dir: &Path) -> Result<Vec<Node>, String> {
    let kust = load(dir, "kustomization.yaml").remove(0);
    let mut objects: Vec<Node> = Vec::new();
    for r in kust
        .get("resources")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        objects.extend(load(dir, r.as_str().expect("resource path")));
    }
    for entry in kust
        .get("patches")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        let file = entry.str_at(&["path"]).expect("patch path");
        let target = entry.get("target");
        for patch in load(dir, file) {
            let mut selected = Vec::new();
            for (i, obj) in objects.iter().enumerate() {
                let hit = match target {
                    Some(t) => selector_matches(obj, t).map_err(|e| e.to_string())?,
                    None => id(obj) == id(&patch),
                };
                if hit {
                    selected.push(i);
                }
            }
            if selected.is_empty() && target.is_none() {
                return Err(format!("no resource matches the patch in {file}"));
            }
            if patch.as_seq().is_some() {
                for &i in &selected {
                    json6902(&mut objects[i], &patch).map_err(|e| e.to_string())?;
                }
            } else if is_delete_patch(&patch) {
                let mut i = 0;
                objects.retain(|_| {
                    i += 1;
                    !selected.contains(&(i - 1))
                });
            } else {
                for &i in &selected {
                    let obj = &mut objects[i];
                    let kind = obj.get("kind").cloned().expect("kind");
                    let meta = obj.get("metadata").map(|m| {
                        (
                            m.get("name").cloned().expect("name"),
                            m.get("namespace").cloned(),
                        )
                    });
                    strategic_merge(obj, &patch).map_err(|e| e.to_string())?;
                    restore_identity(obj, &kind, meta);
                }
            }
        }
    }
    Ok(objects)
}

fn case_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/patches");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .expect("fixtures folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn patches_match_kubectl_kustomize() {
    let dirs = case_dirs();
    assert!(
        dirs.len() >= 15,
        "expected the patch fixtures, found {}",
        dirs.len()
    );
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let got = apply_case(dir);
        if dir.join("expected.err").exists() {
            if let Ok(objs) = got {
                failures.push(format!(
                    "{name}: kubectl failed but the patches applied ({} objects)",
                    objs.len()
                ));
            }
            continue;
        }
        let objs = match got {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let want = load(dir, "expected.yaml");
        if want.len() != objs.len() {
            failures.push(format!(
                "{name}: {} objects, kubectl printed {}",
                objs.len(),
                want.len()
            ));
            continue;
        }
        for w in &want {
            match objs.iter().find(|o| id(o) == id(w)) {
                Some(o) if o.to_json() == w.to_json() => {}
                Some(o) => failures.push(format!(
                    "{name}: {:?} differs\n   got: {}\n  want: {}",
                    id(w),
                    o.to_json(),
                    w.to_json()
                )),
                None => failures.push(format!("{name}: {:?} is missing", id(w))),
            }
        }
    }
    println!(
        "{} passed, {} failed",
        dirs.len() - failures.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn patched_values_point_at_the_patch_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/patches/env-by-name");
    let objs = apply_case(&dir).expect("applies");
    let env = objs[0]
        .path(&["spec", "template", "spec", "containers"])
        .and_then(|c| {
            c.as_seq()?
                .first()?
                .get("env")?
                .as_seq()
                .map(<[Node]>::to_vec)
        })
        .expect("env");
    let mode = env
        .iter()
        .find(|e| e.str_at(&["name"]) == Some("MODE"))
        .expect("MODE");
    let value = mode.get("value").expect("value");
    assert_eq!(&*value.loc.file, "patch.yaml");
    let log = env
        .iter()
        .find(|e| e.str_at(&["name"]) == Some("LOG_LEVEL"))
        .expect("LOG_LEVEL");
    assert_eq!(&*log.get("value").expect("value").loc.file, "deploy.yaml");
}
