//! `vip-san-removed`: the VIP taken out of the API server certificate's SAN list (the
//! `k3s_tls_sans`-style variable, or a `tls-san:` list a k3s config template writes). TLS
//! through the VIP then fails to verify; `tls-san` should notice.

use std::collections::BTreeSet;

use fluxgate_model::endpoints::{VIP_VARS, bootstrap_renders, jinja_var, topology, vips_of};
use fluxgate_rules::rules::ha::tls_san::SAN_VARS;
use regex::Regex;

use super::{Ctx, Found, Operator, single};
use crate::outline::Outline;

pub const OPERATOR: Operator = Operator {
    name: "vip-san-removed",
    summary: "the VIP removed from the SAN list",
    generate,
};

const NAME: &str = OPERATOR.name;

fn generate(ctx: &Ctx<'_>, out: &mut Found) {
    for env in ctx.envs {
        let Some(boot) = &env.bootstrap else {
            continue;
        };
        let topo = topology(env, &[]);
        let Some(primary) = topo.primary().map(str::to_string) else {
            continue;
        };
        let renders = bootstrap_renders(env, &topo);
        let vips: Vec<String> = vips_of(env, &topo, &renders, &[])
            .into_iter()
            .map(|v| v.host)
            .collect();
        if vips.is_empty() {
            continue;
        }
        // The VIP as a SAN list may write it: a variable holding it, or the address itself.
        let mut tokens: BTreeSet<String> = vips.iter().cloned().collect();
        for var in VIP_VARS
            .iter()
            .map(|s| (*s).to_string())
            .chain(env.config.vip.as_deref().and_then(jinja_var))
        {
            if boot
                .project
                .resolve(&primary, &var)
                .ok()
                .and_then(|r| r.value.scalar_text())
                .is_some_and(|v| vips.contains(&v))
            {
                tokens.insert(var);
            }
        }
        for var in SAN_VARS {
            let Ok(r) = boot.project.resolve(&primary, var) else {
                continue;
            };
            let Some(origin) = r.origin.first() else {
                continue;
            };
            let rel = ctx.rel(&origin.location.file);
            remove_from(
                ctx,
                &rel,
                origin.location.line,
                &tokens,
                &format!("`{var}` in {}", env.name()),
                out,
            );
        }
        let mut templates: BTreeSet<String> = BTreeSet::new();
        for r in renders
            .iter()
            .filter(|r| r.docs.iter().any(|d| d.get("tls-san").is_some()))
        {
            templates.insert(ctx.rel(&r.rendered.path));
        }
        for rel in templates {
            let Some(text) = ctx.text(&rel) else {
                continue;
            };
            let o = Outline::new(&text);
            if let Some(l) = o.lines.iter().find(|l| l.key.as_deref() == Some("tls-san")) {
                remove_from(
                    ctx,
                    &rel,
                    l.no,
                    &tokens,
                    &format!("`tls-san` of the k3s config in {}", env.name()),
                    out,
                );
            }
        }
    }
}

/// Removes the first of `tokens` from the SAN list whose definition starts on line `no`.
fn remove_from(
    ctx: &Ctx<'_>,
    rel: &str,
    no: u32,
    tokens: &BTreeSet<String>,
    what: &str,
    out: &mut Found,
) {
    let Some(text) = ctx.text(rel) else {
        return;
    };
    let o = Outline::new(&text);
    let (from, to) = o.block(no);
    for token in tokens {
        let t = regex::escape(token);
        // An item line of its own (`- 192.168.1.49`, `- "{{ kube_vip_address }}"`).
        let item = Regex::new(&format!(
            r#"^\s*-\s*["']?(\{{\{{\s*)?{t}(\s*\}}\}})?["']?\s*(#.*)?$"#
        ))
        .expect("escaped");
        for n in from..=to {
            if item.is_match(o.raw(n)) {
                out.push(single(
                    NAME,
                    rel,
                    n,
                    format!("{token} removed from {what}"),
                    o.without(n, n),
                ));
                return;
            }
        }
        // Inside an expression or a flow list: with the comma before or after it.
        let word = format!(r#"["']?\b{t}\b["']?"#);
        let patterns = [format!(r"\s*,\s*{word}"), format!(r"{word}\s*,\s*")];
        for n in from..=to {
            let raw = o.raw(n);
            for p in &patterns {
                let re = Regex::new(p).expect("escaped");
                if let Some(m) = re.find(raw) {
                    let changed = format!("{}{}", &raw[..m.start()], &raw[m.end()..]);
                    out.push(single(
                        NAME,
                        rel,
                        n,
                        format!("{token} removed from {what}"),
                        o.with_line(n, &changed),
                    ));
                    return;
                }
            }
        }
    }
    out.skip(
        NAME,
        rel,
        no,
        format!("{what}: the VIP is not written in it (it comes from elsewhere)"),
    );
}
