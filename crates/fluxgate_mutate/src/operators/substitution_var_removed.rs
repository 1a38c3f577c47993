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
                // file -> a line of the document that defines it, and the key's path there
                // (the value's own line, unless it is an alias: then its anchor's).
                let mut sites: BTreeMap<String, (u32, Vec<&str>)> = BTreeMap::new();
                let mut encrypted = None;
                let inline = vec!["spec", "postBuild", "substitute", var];
                if let Some(v) = k.object.path(&inline) {
                    sites.insert(ctx.rel(&v.loc.file), (v.loc.line, inline));
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
                                    sites
                                        .entry(rel.clone())
                                        .or_insert((v.loc.line, vec![field, var]));
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
                let mut key_lines: BTreeMap<&str, u32> = BTreeMap::new();
                for (rel, (near, path)) in &sites {
                    let Some(text) = ctx.text(rel) else {
                        continue;
                    };
                    let o = Outline::new(&text);
                    let Some(line) = key_line(&o, *near, path) else {
                        continue;
                    };
                    key_lines.insert(rel.as_str(), line);
                    edits.push(Edit {
                        file: rel.clone(),
                        text: remove_key(&o, line),
                    });
                }
                let Some((first, first_line)) = key_lines.iter().next() else {
                    out.skip(
                        NAME,
                        &def_rel,
                        definition.line,
                        format!("`{var}`: no line of its definition is a `{var}:` key fluxgate can remove"),
                    );
                    continue;
                };
                let (file, line) = match key_lines.get(def_rel.as_str()) {
                    Some(l) => (def_rel.clone(), *l),
                    None => ((*first).to_string(), *first_line),
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

/// The line of the key at `path` in the document that holds line `near`: `near` itself when
/// it is that key (the usual case), else found by path (a value that is an alias, `APP: *app`,
/// is located at its anchor, in the same document).
fn key_line(o: &Outline, near: u32, path: &[&str]) -> Option<u32> {
    let here = o.line(near)?;
    if here.key.as_deref() == path.last().copied() && here.path.len() == path.len() {
        return Some(near);
    }
    o.find(here.doc, path).map(|l| l.no)
}

/// Whether every `${VAR}` of the Kustomization that reads `var` gives a default.
fn every_use_has_a_default(k: &fluxgate_flux::tree::FluxKustomization, var: &str) -> bool {
    let mut uses = k.substituted.iter().filter(|s| s.var == var).peekable();
    uses.peek().is_some() && uses.all(|s| s.falls_back)
}
