//! `base-default-changed`: a value of a base resource that overlays patch, changed in the
//! base. Where every overlay sets the key the mutant is equivalent today (and matters for a
//! future environment without the override); where one does not, the change reaches that
//! environment and a check should notice.

use std::collections::BTreeSet;
use std::path::Path;

use super::overlay_key_removed::{join, overlays};
use super::{Ctx, Found, Operator, secretish, single};
use crate::outline::Outline;
use crate::scalar;

pub const OPERATOR: Operator = Operator {
    name: "base-default-changed",
    summary: "a base default changed under overlays",
    generate,
};

const NAME: &str = OPERATOR.name;

fn generate(ctx: &Ctx<'_>, out: &mut Found) {
    // (kind, name) of what overlays patch -> the overlays that patch it.
    let mut targets: Vec<((String, String), String)> = Vec::new();
    let mut bases: BTreeSet<String> = BTreeSet::new();
    for ov in overlays(ctx) {
        for patch in &ov.patches {
            let Ok(f) = ctx.index.read(patch) else {
                continue;
            };
            for d in f.docs() {
                if let (Some(k), Some(n)) = (d.str_at(&["kind"]), d.str_at(&["metadata", "name"])) {
                    targets.push(((k.to_string(), n.to_string()), ov.file.clone()));
                }
            }
        }
        for b in &ov.bases {
            collect_resources(ctx, b, 0, &mut bases);
        }
    }
    let mut done: BTreeSet<(String, u32)> = BTreeSet::new();
    for file in &bases {
        let Ok(f) = ctx.index.read(file) else {
            continue;
        };
        let o = Outline::new(&f.text);
        for (doc_no, d) in f.docs().iter().enumerate() {
            let (Some(k), Some(n)) = (d.str_at(&["kind"]), d.str_at(&["metadata", "name"])) else {
                continue;
            };
            let under: Vec<&str> = targets
                .iter()
                .filter(|((tk, tn), _)| tk == k && tn == n)
                .map(|(_, ov)| ov.as_str())
                .collect();
            if under.is_empty() {
                continue;
            }
            let Some(&outline_doc) = o.content_docs().get(doc_no) else {
                continue;
            };
            for l in o
                .lines
                .iter()
                .filter(|l| l.doc == outline_doc && !l.inert && l.key.is_some() && l.is_scalar())
            {
                if matches!(l.path[0].as_str(), "apiVersion" | "kind" | "metadata")
                    || l.path.len() < 2
                {
                    continue;
                }
                if !done.insert((file.clone(), l.no)) {
                    continue;
                }
                match scalar::mutate(&l.value) {
                    Ok(new) => {
                        if let Some(text) = o.with_value(l.no, &new) {
                            let mut ovs: Vec<&str> = under.clone();
                            ovs.sort_unstable();
                            ovs.dedup();
                            out.push(single(
                                NAME,
                                file,
                                l.no,
                                if secretish(&o, l.no) {
                                    format!(
                                        "base default `{}` changed (value hidden) (patched by {})",
                                        l.dotted(),
                                        ovs.join(", ")
                                    )
                                } else {
                                    format!(
                                        "base default `{}`: {} -> {new} (patched by {})",
                                        l.dotted(),
                                        l.value,
                                        ovs.join(", ")
                                    )
                                },
                                text,
                            ));
                        }
                    }
                    Err(reason) => {
                        out.skip(NAME, file, l.no, format!("`{}`: {reason}", l.dotted()));
                    }
                }
            }
        }
    }
}

/// The resource files of the kustomization in `dir` (relative), through nested bases.
fn collect_resources(ctx: &Ctx<'_>, dir: &str, depth: usize, out: &mut BTreeSet<String>) {
    if depth > 8 {
        return;
    }
    let Some(kfile) = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
        .iter()
        .map(|n| format!("{dir}/{n}"))
        .find(|p| ctx.fs.is_file(&ctx.root.join(p)))
    else {
        return;
    };
    let Ok(f) = ctx.index.read(&kfile) else {
        return;
    };
    let Some(doc) = f.docs().first() else {
        return;
    };
    for r in doc
        .get("resources")
        .and_then(|n| n.as_seq())
        .unwrap_or_default()
    {
        let Some(r) = r.as_str() else {
            continue;
        };
        let p = join(Path::new(dir), r);
        if ctx.fs.is_dir(&ctx.root.join(&p)) {
            collect_resources(ctx, &p, depth + 1, out);
        } else {
            out.insert(p);
        }
    }
}
