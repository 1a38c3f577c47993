//! A [`Graph`] as inline SVG. Small graphs are drawn whole; past [`WHOLE_LIMIT`] nodes the
//! page shows one box per group (namespace or folder) with the edges between groups, and
//! each group's own graph in a `<details>` that opens on click.

// Character counts become widths: far below 2^52.
#![allow(clippy::cast_precision_loss)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::html::esc;
use super::layout::{BOX_H, Size, layout};
use super::{EdgeKind, Graph, Node};

/// The most nodes drawn in one picture before the graph is collapsed by group.
pub const WHOLE_LIMIT: usize = 40;
/// The longest label drawn in a box (the whole id is in its tooltip).
const LABEL_CHARS: usize = 40;
/// Estimated width of one character of the boxes' 12px font.
const CHAR_W: f64 = 6.8;

/// Draws `g` into `out`; `anchor` makes the ids of this graph's elements unique in the page.
pub fn draw(out: &mut String, g: &Graph, anchor: &str) {
    if g.nodes.is_empty() {
        out.push_str("<p class=\"empty\">Nothing to draw.</p>\n");
        return;
    }
    if g.nodes.len() <= WHOLE_LIMIT {
        let all: Vec<usize> = (0..g.nodes.len()).collect();
        svg(out, g, &all, anchor);
        return;
    }
    // Groups in the order their first member appears.
    let mut order: Vec<&str> = Vec::new();
    let mut members: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let list = members.entry(n.group.as_str()).or_default();
        if list.is_empty() {
            order.push(n.group.as_str());
        }
        list.push(i);
    }
    let group_of: Vec<usize> = g
        .nodes
        .iter()
        .map(|n| {
            order
                .iter()
                .position(|o| *o == n.group)
                .expect("every group is listed")
        })
        .collect();
    let overview = Graph {
        nodes: order
            .iter()
            .enumerate()
            .map(|(gi, name)| {
                let list = &members[name];
                let failing = list
                    .iter()
                    .filter(|&&i| !g.nodes[i].failures.is_empty())
                    .count();
                Node {
                    id: format!(
                        "{} ({})",
                        if name.is_empty() { "(none)" } else { name },
                        list.len()
                    ),
                    kind: None,
                    group: format!("#{anchor}-g{gi}"),
                    failures: if failing > 0 {
                        vec![format!("{failing} with findings")]
                    } else {
                        Vec::new()
                    },
                    detail: kinds_line(g, list),
                }
            })
            .collect(),
        // dependsOn between groups only: that the root declares every group says little.
        edges: g
            .edges
            .iter()
            .filter(|(a, b, k)| group_of[*a] != group_of[*b] && *k == EdgeKind::Order)
            .map(|(a, b, k)| (group_of[*a], group_of[*b], *k))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    let _ = writeln!(
        out,
        "<p class=\"hint\">{} objects in {} groups: one box per group, dependsOn between groups; \
         click a group (or open it below) to see its objects.</p>",
        g.nodes.len(),
        order.len()
    );
    let all: Vec<usize> = (0..overview.nodes.len()).collect();
    svg(out, &overview, &all, &format!("{anchor}-overview"));
    for (gi, name) in order.iter().enumerate() {
        let list = &members[name];
        let failing = list
            .iter()
            .filter(|&&i| !g.nodes[i].failures.is_empty())
            .count();
        let outside: BTreeSet<&str> = g
            .edges
            .iter()
            .filter(|(a, b, _)| group_of[*b] == gi && group_of[*a] != gi)
            .map(|(a, _, _)| g.nodes[*a].id.as_str())
            .collect();
        let _ = writeln!(
            out,
            "<details class=\"group{}\" id=\"{anchor}-g{gi}\"><summary>{} — {} object{}{}</summary>",
            if failing > 0 { " fail" } else { "" },
            esc(if name.is_empty() { "(none)" } else { name }),
            list.len(),
            if list.len() == 1 { "" } else { "s" },
            if failing > 0 {
                format!(", {failing} with findings")
            } else {
                String::new()
            }
        );
        if !outside.is_empty() {
            let names: Vec<String> = outside.iter().map(|o| esc(o)).collect();
            let _ = writeln!(
                out,
                "<p class=\"hint\">waits on, outside: {}</p>",
                names.join(", ")
            );
        }
        svg(out, g, list, &format!("{anchor}-g{gi}-svg"));
        out.push_str("</details>\n");
    }
}

/// What a group holds: `3 Kustomizations, 4 HelmReleases`.
fn kinds_line(g: &Graph, list: &[usize]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in list {
        *counts
            .entry(g.nodes[i].kind.map_or("object", super::NodeKind::as_str))
            .or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(k, n)| format!("{n} {k}{}", if n == 1 { "" } else { "s" }))
        .collect::<Vec<_>>()
        .join(", ")
}

fn label(id: &str) -> String {
    if id.chars().count() > LABEL_CHARS {
        let mut s: String = id.chars().take(LABEL_CHARS - 1).collect();
        s.push('…');
        s
    } else {
        id.to_string()
    }
}

/// One SVG of the nodes `subset` of `g` and the edges among them.
fn svg(out: &mut String, g: &Graph, subset: &[usize], anchor: &str) {
    let local: BTreeMap<usize, usize> = subset.iter().enumerate().map(|(l, &i)| (i, l)).collect();
    let sizes: Vec<Size> = subset
        .iter()
        .map(|&i| Size {
            width: (label(&g.nodes[i].id).chars().count() as f64 * CHAR_W + 16.0).max(40.0),
        })
        .collect();
    let edges: Vec<(usize, usize, EdgeKind)> = g
        .edges
        .iter()
        .filter_map(|(a, b, k)| Some((*local.get(a)?, *local.get(b)?, *k)))
        .collect();
    let plain: Vec<(usize, usize)> = edges.iter().map(|(a, b, _)| (*a, *b)).collect();
    let placed = layout(&sizes, &plain);
    let _ = writeln!(
        out,
        "<div class=\"graph\"><svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{anchor}\" \
         width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" role=\"img\">\
         <defs><marker id=\"{anchor}-arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" \
         markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">\
         <path d=\"M0,0 L8,4 L0,8 z\" class=\"arrowhead\"/></marker></defs>",
        w = placed.width,
        h = placed.height
    );
    for ((_, _, kind), route) in edges.iter().zip(&placed.routes) {
        if route.len() < 2 {
            continue;
        }
        let mut d = String::new();
        for (i, (x, y)) in route.iter().enumerate() {
            let _ = write!(d, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { " L" });
        }
        let class = match kind {
            EdgeKind::Order => "edge order",
            EdgeKind::Declares => "edge declares",
        };
        let _ = write!(
            out,
            "<path class=\"{class}\" d=\"{d}\" marker-end=\"url(#{anchor}-arrow)\"/>"
        );
    }
    out.push('\n');
    for (li, &i) in subset.iter().enumerate() {
        let node = &g.nodes[i];
        let (x, y) = placed.positions[li];
        let w = sizes[li].width;
        let mut class = String::from("node");
        if let Some(k) = node.kind {
            class.push(' ');
            class.push_str(k.class());
        } else {
            class.push_str(" group");
        }
        if !node.failures.is_empty() {
            class.push_str(" fail");
        }
        let mut tip = node.id.clone();
        if let Some(k) = node.kind {
            tip = format!("{} {tip}", k.as_str());
        }
        if !node.detail.is_empty() {
            tip.push('\n');
            tip.push_str(&node.detail);
        }
        for f in &node.failures {
            tip.push('\n');
            tip.push_str(f);
        }
        // A collapsed group's box links to its details.
        let (open, close) = if node.kind.is_none() && node.group.starts_with('#') {
            (format!("<a href=\"{}\">", esc(&node.group)), "</a>")
        } else {
            (String::new(), "")
        };
        let _ = writeln!(
            out,
            "{open}<g class=\"{class}\" data-id=\"{}\"><title>{}</title>\
             <rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{BOX_H:.0}\" rx=\"5\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>{close}",
            esc(&node.id),
            esc(&tip),
            x + w / 2.0,
            y + BOX_H / 2.0 + 4.0,
            esc(&label(&node.id)),
        );
    }
    out.push_str("</svg></div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::NodeKind;

    fn node(id: &str, group: &str) -> Node {
        Node {
            id: id.to_string(),
            kind: Some(NodeKind::Kustomization),
            group: group.to_string(),
            ..Node::default()
        }
    }

    #[test]
    fn small_graphs_are_drawn_whole() {
        let g = Graph {
            nodes: vec![node("flux-system/a", "x"), node("flux-system/b", "x")],
            edges: vec![(0, 1, EdgeKind::Order)],
        };
        let mut out = String::new();
        draw(&mut out, &g, "t");
        assert_eq!(out.matches("<g class=\"node ks\"").count(), 2, "{out}");
        assert_eq!(out.matches("class=\"edge order\"").count(), 1);
        assert!(!out.contains("<details"));
    }

    #[test]
    fn big_graphs_collapse_by_group_with_every_node_inside_a_details() {
        let mut nodes = Vec::new();
        for i in 0..120 {
            nodes.push(node(
                &format!("ns{}/app{i}", i % 6),
                &format!("ns{}", i % 6),
            ));
        }
        let edges = (1..120).map(|i| (i - 1, i, EdgeKind::Order)).collect();
        let mut g = Graph { nodes, edges };
        g.nodes[7].failures.push("error".into());
        let mut out = String::new();
        draw(&mut out, &g, "t");
        assert_eq!(out.matches("<details class=\"group").count(), 6);
        assert_eq!(out.matches("<details class=\"group fail\"").count(), 1);
        // 6 group boxes in the overview, then all 120 nodes in their groups.
        assert_eq!(out.matches("<g class=\"node group").count(), 6);
        assert_eq!(out.matches("<g class=\"node ks").count(), 120);
        assert!(out.contains("<a href=\"#t-g1\">"), "{out}");
    }
}
