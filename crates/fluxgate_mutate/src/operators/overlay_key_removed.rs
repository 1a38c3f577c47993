//! `overlay-key-removed`: a key of an overlay's strategic-merge patch deleted, so the base's
//! value shows through in that environment (prod gets dev's default). What should notice
//! depends on the key; a survivor is an override nothing checks.

use std::path::{Component, Path, PathBuf};

use super::{Ctx, Found, Operator, remove_key, shown, single};
use crate::outline::Outline;

pub const OPERATOR: Operator = Operator {
    name: "overlay-key-removed",
    summary: "an overlay patch's key removed (the base value shows through)",
    generate,
};

/// A kustomization that patches what it includes.
pub(super) struct Overlay {
    /// The kustomization file, relative.
    pub file: String,
    /// Its strategic-merge patch files, relative.
    pub patches: Vec<String>,
    /// Its `resources:` entries that are folders (bases), relative.
    pub bases: Vec<String>,
}

const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Every kustomization some environment read that has patch files.
pub(super) fn overlays(ctx: &Ctx<'_>) -> Vec<Overlay> {
    let mut out = Vec::new();
    for rel in ctx.known_files() {
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        if !KUSTOMIZATION_FILES.contains(&name) || !ctx.reached(&rel) {
            continue;
        }
        let Ok(f) = ctx.index.read(&rel) else {
            continue;
        };
        let Some(doc) = f.docs().first() else {
            continue;
        };
        let dir = Path::new(&rel)
            .parent()
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let mut patches = Vec::new();
        for p in doc
            .get("patches")
            .and_then(|n| n.as_seq())
            .unwrap_or_default()
        {
            if let Some(path) = p.str_at(&["path"]) {
                patches.push(join(&dir, path));
            }
        }
        for p in doc
            .get("patchesStrategicMerge")
            .and_then(|n| n.as_seq())
            .unwrap_or_default()
        {
            if let Some(path) = p.as_str().filter(|s| !s.contains('\n')) {
                patches.push(join(&dir, path));
            }
        }
        if patches.is_empty() {
            continue;
        }
        let bases = doc
            .get("resources")
            .and_then(|n| n.as_seq())
            .unwrap_or_default()
            .iter()
            .filter_map(|r| r.as_str())
            .map(|r| join(&dir, r))
            .filter(|r| ctx.fs.is_dir(&ctx.root.join(r)))
            .collect();
        out.push(Overlay {
            file: rel.clone(),
            patches,
            bases,
        });
    }
    out
}

/// `dir/rel`, normalised, `/`-separated.
pub(super) fn join(dir: &Path, rel: &str) -> String {
    let mut out = PathBuf::new();
    for c in dir.join(rel).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.to_string_lossy().replace('\\', "/")
}

fn generate(ctx: &Ctx<'_>, out: &mut Found) {
    for ov in overlays(ctx) {
        for patch in &ov.patches {
            let Some(text) = ctx.text(patch) else {
                out.skip(
                    OPERATOR.name,
                    patch,
                    1,
                    format!("named by {} but cannot be read", ov.file),
                );
                continue;
            };
            let o = Outline::new(&text);
            for l in &o.lines {
                if l.inert || l.key.is_none() || !l.is_scalar() || l.path.len() < 2 {
                    continue;
                }
                if matches!(
                    l.path[0].as_str(),
                    "apiVersion" | "kind" | "metadata" | "$patch"
                ) || l.key.as_deref() == Some("$patch")
                {
                    continue;
                }
                if l.dash.is_some() || l.path.iter().any(|c| c.starts_with('[')) {
                    out.skip(OPERATOR.name, patch, l.no, format!("`{}`: a key inside a list item (its merge key decides what it patches)", l.dotted()));
                    continue;
                }
                out.push(single(
                    OPERATOR.name,
                    patch,
                    l.no,
                    format!(
                        "`{}` removed from the patch of {}: the base value shows through",
                        shown(&o, l.no),
                        ov.file
                    ),
                    remove_key(&o, l.no),
                ));
            }
        }
    }
}
