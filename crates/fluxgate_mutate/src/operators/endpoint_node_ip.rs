//! `endpoint-node-ip`: where a consumer of the API server (Cilium's `k8sServiceHost`, a CNI's
//! `KUBERNETES_SERVICE_HOST`, a k3s agent's server URL) gets its endpoint, that endpoint
//! replaced by one node's own address: the first incident (an "HA" cluster whose CNI dials
//! one control-plane node). `ha-endpoint` should notice.

use fluxgate_model::consumers::consumers;
use fluxgate_model::endpoints::{bootstrap_renders, topology};

use super::{Ctx, Found, Operator, single};
use crate::outline::Outline;

pub const OPERATOR: Operator = Operator {
    name: "endpoint-node-ip",
    summary: "a consumer's endpoint replaced by a node IP",
    generate,
};

const NAME: &str = OPERATOR.name;

fn generate(ctx: &Ctx<'_>, out: &mut Found) {
    for env in ctx.envs {
        let topo = topology(env, &[]);
        let nodes: Vec<String> = topo
            .hosts
            .iter()
            .filter(|h| h.server)
            .filter_map(|h| h.address.clone())
            .filter(|a| !a.contains('<') && !a.contains("{{"))
            .collect();
        let renders = bootstrap_renders(env, &topo);
        for c in consumers(env, &topo, &renders) {
            let rel = ctx.rel(&c.set_at.file);
            let line_no = c.set_at.line;
            let Some(text) = ctx.text(&rel) else {
                out.skip(
                    NAME,
                    &rel,
                    line_no,
                    format!("{}: the file that sets it cannot be read", c.what),
                );
                continue;
            };
            let Some(node) = nodes.iter().find(|n| **n != c.host) else {
                out.skip(
                    NAME,
                    &rel,
                    line_no,
                    format!(
                        "{}: environment {} has no node address to put there",
                        c.what,
                        env.name()
                    ),
                );
                continue;
            };
            let o = Outline::new(&text);
            let Some(line) = o.line(line_no).filter(|l| !l.inert && l.is_scalar()) else {
                out.skip(
                    NAME,
                    &rel,
                    line_no,
                    format!(
                        "{}: its value is not a scalar on the line that sets it",
                        c.what
                    ),
                );
                continue;
            };
            // The line must write the endpoint: its value, or an expression that yields it.
            let writes_it =
                line.value.contains("{{") || (!c.host.is_empty() && line.value.contains(&c.host));
            if !writes_it {
                out.skip(
                    NAME,
                    &rel,
                    line_no,
                    format!(
                        "{}: the value is not written on the line the model locates it at",
                        c.what
                    ),
                );
                continue;
            }
            if line.value.contains("${") {
                out.skip(NAME, &rel, line_no, format!("{}: set through a substitution reference; its variable is mutated where it is defined", c.what));
                continue;
            }
            // Keep the scheme and port of a URL (`https://host:6443`), and the quotes.
            let old = line.value.as_str();
            let new = if !c.host.is_empty() && old.contains(&c.host) {
                old.replacen(&c.host, node, 1)
            } else {
                let q = old.chars().next().filter(|q| *q == '"' || *q == '\'');
                q.map_or_else(|| node.clone(), |q| format!("{q}{node}{q}"))
            };
            let Some(mutated) = o.with_value(line_no, &new) else {
                continue;
            };
            out.push(single(
                NAME,
                &rel,
                line_no,
                format!("{} in {}: {old} -> {new} (node {node})", c.what, env.name()),
                mutated,
            ));
        }
    }
}
