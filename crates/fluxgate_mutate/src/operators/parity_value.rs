//! `parity-value`: a value the repository says must agree across sources (`# [parity]`-tagged)
//! or that a contract reads (`vars.NAME`, `releases["ns/name"].path`) changed in one source.
//! The parity group or the contract should notice; a survivor is a tag nothing compares.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::{Ctx, Found, Operator, secretish, single};
use crate::outline::Outline;
use crate::scalar;

pub const OPERATOR: Operator = Operator {
    name: "parity-value",
    summary: "a [parity]-tagged or contracted value changed in one source",
    generate,
};

const NAME: &str = OPERATOR.name;

fn generate(ctx: &Ctx<'_>, out: &mut Found) {
    for rel in ctx.known_files() {
        let Some(text) = ctx.text(&rel) else {
            continue;
        };
        if !text.contains("[parity]") {
            continue;
        }
        let o = Outline::new(&text);
        let mut done: BTreeSet<u32> = BTreeSet::new();
        for l in o.lines.iter().filter(|l| !l.inert && l.key.is_some()) {
            let tagged = l.comment.as_deref().is_some_and(|c| c.contains("[parity]"))
                || o.comments_above(l.no)
                    .iter()
                    .any(|c| c.contains("[parity]"));
            if !tagged {
                continue;
            }
            let (from, to) = o.block(l.no);
            for no in from..=to {
                if done.insert(no) {
                    mutate_line(&o, &rel, no, "tagged [parity]", out);
                }
            }
        }
    }
    contracted(ctx, out);
}

fn mutate_line(o: &Outline, rel: &str, no: u32, why: &str, out: &mut Found) {
    let Some(line) = o.line(no) else {
        return;
    };
    if !line.is_scalar() {
        return;
    }
    match scalar::mutate(&line.value) {
        Ok(new) => {
            let Some(text) = o.with_value(no, &new) else {
                return;
            };
            out.push(single(
                NAME,
                rel,
                no,
                if secretish(o, no) {
                    format!("`{}` ({why}): changed (value hidden)", line.dotted())
                } else {
                    format!("`{}` ({why}): {} -> {new}", line.dotted(), line.value)
                },
                text,
            ));
        }
        Err(reason) => out.skip(NAME, rel, no, format!("`{}`: {reason}", line.dotted())),
    }
}

static VARS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bvars\.([A-Za-z_][A-Za-z0-9_]*)").expect("static regex"));
static RELEASES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"releases\[\s*["']([^"']+)["']\s*\]((?:\.[A-Za-z_][A-Za-z0-9_]*)+)"#)
        .expect("static regex")
});

/// The definitions of what contracts read: each Ansible variable where it is set for the
/// environment's first host, each release value where the HelmRelease sets it.
fn contracted(ctx: &Ctx<'_>, out: &mut Found) {
    for c in &ctx.config.contracts {
        let vars: BTreeSet<String> = VARS
            .captures_iter(&c.assert)
            .map(|m| m[1].to_string())
            .collect();
        let releases: BTreeSet<(String, String)> = RELEASES
            .captures_iter(&c.assert)
            .map(|m| (m[1].to_string(), m[2].trim_start_matches('.').to_string()))
            .collect();
        for env in ctx.envs {
            if c.environments
                .as_ref()
                .is_some_and(|e| !e.iter().any(|n| n == env.name()))
            {
                continue;
            }
            if let Some(boot) = &env.bootstrap
                && let Some(host) = boot.hosts.first()
            {
                for var in &vars {
                    let Ok(r) = boot.project.resolve(host, var) else {
                        continue;
                    };
                    let Some(origin) = r.origin.first() else {
                        continue;
                    };
                    let rel = ctx.rel(&origin.location.file);
                    let Some(text) = ctx.text(&rel) else {
                        continue;
                    };
                    let o = Outline::new(&text);
                    if o.line(origin.location.line).and_then(|l| l.key.as_deref())
                        == Some(var.as_str())
                    {
                        mutate_line(
                            &o,
                            &rel,
                            origin.location.line,
                            &format!("read by contract {}", c.id),
                            out,
                        );
                    }
                }
            }
            for (id, path) in &releases {
                let Some(rel_obj) = env.releases.get(id) else {
                    continue;
                };
                let rel = ctx.rel(&rel_obj.object.loc.file);
                let Some(text) = ctx.text(&rel) else {
                    continue;
                };
                let o = Outline::new(&text);
                let want = format!("spec.values.{path}");
                if let Some(l) = o.lines.iter().find(|l| !l.inert && l.dotted() == want) {
                    mutate_line(&o, &rel, l.no, &format!("read by contract {}", c.id), out);
                }
            }
        }
    }
}
