//! `substitution-var-removed`: a post-build substitution variable that a Flux Kustomization
//! uses, its definition deleted everywhere the Kustomization's sources define it (the inline
//! `postBuild.substitute`, and each `substituteFrom` ConfigMap or Secret in the base and the
//! overlay patches): the second incident's failed substitution. `substitution-undefined`
//! (or `render`, in strict Flux) should notice.

use std::collections::{BTreeMap, BTreeSet};

use fluxgate_flux::tree::is_flux_kustomization;

use super::{Ctx, Found, Operator, remove_key};
use crate::outline::Outline;
use crate::{Edit, Mutant};

pub const OPERATOR: Operator = Operator {
    name: "substitution-var-removed",
    summary: "a substitution variable's definition removed",
    generate,
};

const NAME: &str = OPERATOR.name;

fn generate(ctx: &Ctx<'_>, out: &mut Found) {
    for (i, env) in ctx.envs.iter().enumerate() {
        let reach = &ctx.reach[i];
        for k in &env.tree.kustomizations {
            if !is_flux_kustomization(&k.object) {
                continue;
            }
            let vars: BTreeMap<&str, &fluxgate_diagnostics::Location> = k
                .substituted
                .iter()
                .map(|s| (s.var.as_str(), &s.definition))
                .collect();
            let sources: Vec<(String, String)> = k
                .object
                .path(&["spec", "postBuild", "substituteFrom"])
                .and_then(|n| n.as_seq())
                .unwrap_or_default()
                .iter()
                .filter_map(|s| {
                    Some((
                        s.str_at(&["kind"])?.to_string(),
                        s.str_at(&["name"])?.to_string(),
                    ))
                })
                .collect();
            for (var, definition) in vars {
                if every_use_has_a_default(k, var) {
                    out.skip(
                        NAME,
                        &ctx.rel(&definition.file),
                        definition.line,
                        format!("`{var}` of Flux Kustomization {}: every use has a default (`${{{var}:=...}}`), so without the definition it falls back to it by design", k.id()),
                    );
                    continue;
                }
                // file -> the line of the key to remove.
                let mut sites: BTreeMap<String, u32> = BTreeMap::new();
                let mut encrypted = None;
                if let Some(v) = k.object.path(&["spec", "postBuild", "substitute", var]) {
                    sites.insert(ctx.rel(&v.loc.file), v.loc.line);
                }
                let files: BTreeSet<&String> = reach.iter().collect();
                for rel in files {
                    let Ok(f) = ctx.index.read(rel) else {
                        continue;
                    };
                    if !f.text.contains(var) {
                        continue;
                    }
                    for d in f.docs() {
                        let (Some(kind), Some(name)) =
                            (d.str_at(&["kind"]), d.str_at(&["metadata", "name"]))
                        else {
                            continue;
                        };
                        if !sources.iter().any(|(sk, sn)| sk == kind && sn == name) {
                            continue;
                        }
                        for field in ["data", "stringData"] {
                            if let Some(v) = d.path(&[field, var]) {
                                if f.is_sops() {
                                    encrypted = Some(rel.clone());
                                } else {
                                    sites.entry(rel.clone()).or_insert(v.loc.line);
                                }
                            }
                        }
                    }
                }
                let def_rel = ctx.rel(&definition.file);
                if let Some(enc) = encrypted {
                    out.skip(NAME, &enc, 1, format!("`{var}` is also defined in a SOPS-encrypted Secret, which cannot be edited without its key"));
                    continue;
                }
                if sites.is_empty() {
                    out.skip(
                        NAME,
                        &def_rel,
                        definition.line,
                        format!("`{var}`: its definition is not a key fluxgate can remove"),
                    );
                    continue;
                }
                let mut edits = Vec::new();
                for (rel, line) in &sites {
                    let Some(text) = ctx.text(rel) else {
                        continue;
                    };
                    let o = Outline::new(&text);
                    if o.line(*line).and_then(|l| l.key.as_deref()) != Some(var) {
                        continue;
                    }
                    edits.push(Edit {
                        file: rel.clone(),
                        text: remove_key(&o, *line),
                    });
                }
                if edits.is_empty() {
                    continue;
                }
                let (file, line) = if sites.contains_key(&def_rel) {
                    (def_rel.clone(), sites[&def_rel])
                } else {
                    let (f, l) = sites.iter().next().expect("not empty");
                    (f.clone(), *l)
                };
                let mut where_: Vec<&str> = edits.iter().map(|e| e.file.as_str()).collect();
                where_.sort_unstable();
                out.push(Mutant {
                    operator: NAME,
                    file,
                    line,
                    what: format!(
                        "`{var}` of Flux Kustomization {} no longer defined (removed from {})",
                        k.id(),
                        where_.join(", ")
                    ),
                    edits,
                });
            }
        }
    }
}

/// Whether every `${VAR}` of the Kustomization that reads `var` gives a default.
fn every_use_has_a_default(k: &fluxgate_flux::tree::FluxKustomization, var: &str) -> bool {
    let mut uses = k.substituted.iter().filter(|s| s.var == var).peekable();
    uses.peek().is_some() && uses.all(|s| s.falls_back)
}
