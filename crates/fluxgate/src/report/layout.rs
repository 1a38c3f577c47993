//! A small layered graph layout (Sugiyama's scheme): cycles broken by reversing the back edges
//! of a depth-first search, layers by longest path, long edges split by dummy points, the order
//! in each layer by barycenter sweeps, then coordinates. No crate drew a dependency graph into
//! SVG offline without pulling a browser-side engine, and this is a few hundred lines.
//!
//! Everything is deterministic: the input order breaks every tie, and no hash map is iterated.

// Counts of boxes, layers and positions become coordinates: all far below 2^52.
#![allow(clippy::cast_precision_loss)]

/// Horizontal gap between two boxes of a layer.
const GAP_X: f64 = 24.0;
/// Vertical distance between two layers (box tops).
const LAYER_H: f64 = 72.0;
/// The height of a box.
pub const BOX_H: f64 = 30.0;
/// Width given to a dummy point of a long edge.
const DUMMY_W: f64 = 8.0;
/// The margin around the drawing.
const MARGIN: f64 = 12.0;
/// Barycenter sweeps (down then up counts as two).
const SWEEPS: usize = 8;
/// The widest line of boxes before a layer wraps.
const MAX_ROW_W: f64 = 1150.0;

/// A node to place: its box width.
#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub width: f64,
}

/// Where each node went and the route of each edge.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Top-left corner of each node's box, by input index.
    pub positions: Vec<(f64, f64)>,
    /// For each input edge (same index): the points of its route, from its source's box to its
    /// target's box.
    pub routes: Vec<Vec<(f64, f64)>>,
    pub width: f64,
    pub height: f64,
}

/// Lays out `sizes.len()` nodes with `edges` (`from` is drawn above `to`). Self-loops get no
/// route of their own beyond the box; duplicate edges share one.
#[must_use]
pub fn layout(sizes: &[Size], edges: &[(usize, usize)]) -> Layout {
    let n = sizes.len();
    let acyclic = break_cycles(n, edges);
    let layer = longest_path_layers(n, &acyclic);
    let layers_count = layer.iter().copied().max().map_or(0, |m| m + 1);

    // Every segment spans one layer: dummy points on the longer ones.
    let mut widths: Vec<f64> = sizes.iter().map(|s| s.width).collect();
    let mut layer_of = layer.clone();
    let mut chains: Vec<Vec<usize>> = Vec::with_capacity(acyclic.len());
    for &(a, b, _) in &acyclic {
        let mut chain = vec![a];
        if a != b {
            for l in layer[a] + 1..layer[b] {
                chain.push(widths.len());
                widths.push(DUMMY_W);
                layer_of.push(l);
            }
            chain.push(b);
        }
        chains.push(chain);
    }
    let total = widths.len();
    let mut up: Vec<Vec<usize>> = vec![Vec::new(); total];
    let mut down: Vec<Vec<usize>> = vec![Vec::new(); total];
    for chain in &chains {
        for w in chain.windows(2) {
            if !down[w[0]].contains(&w[1]) {
                down[w[0]].push(w[1]);
                up[w[1]].push(w[0]);
            }
        }
    }

    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); layers_count];
    for (v, &l) in layer_of.iter().enumerate() {
        rows[l].push(v);
    }
    order_by_barycenter(&mut rows, &up, &down);

    // x: each row packed left to right, then pulled towards the median of its neighbours
    // above (downwards sweep) without changing the order or overlapping.
    let mut x = vec![0.0_f64; total];
    for row in &rows {
        let mut at = 0.0;
        for &v in row {
            x[v] = at;
            at += widths[v] + GAP_X;
        }
    }
    for pass in 0..4 {
        let (iter, neighbours): (Vec<usize>, &Vec<Vec<usize>>) = if pass % 2 == 0 {
            ((1..rows.len()).collect(), &up)
        } else {
            ((0..rows.len().saturating_sub(1)).rev().collect(), &down)
        };
        for l in iter {
            align_row(&rows[l], neighbours, &widths, &mut x);
        }
    }
    let min_x = x.iter().copied().fold(f64::INFINITY, f64::min);
    let shift = if min_x.is_finite() {
        MARGIN - min_x
    } else {
        0.0
    };
    for v in &mut x {
        *v += shift;
    }
    // A layer wider than a page wraps onto several lines (a namespace overview can put forty
    // boxes in one layer); the layers below move down.
    let mut line_of = vec![0_usize; total];
    let mut lines_per_layer = vec![1_usize; rows.len()];
    for (l, row) in rows.iter().enumerate() {
        let span = row.iter().map(|&v| widths[v] + GAP_X).sum::<f64>();
        if span <= MAX_ROW_W {
            continue;
        }
        let (mut at, mut line) = (MARGIN, 0);
        for &v in row {
            if at > MARGIN && at + widths[v] > MAX_ROW_W {
                line += 1;
                at = MARGIN;
            }
            x[v] = at;
            line_of[v] = line;
            at += widths[v] + GAP_X;
        }
        lines_per_layer[l] = line + 1;
    }
    // A layer that did not wrap but was pulled past the page's width by the alignment moves
    // back in (packed from the left when even that is not enough).
    for (l, row) in rows.iter().enumerate() {
        if lines_per_layer[l] > 1 || row.is_empty() {
            continue;
        }
        let right = row.iter().map(|&v| x[v] + widths[v]).fold(0.0, f64::max);
        if right <= MAX_ROW_W {
            continue;
        }
        let left = row.iter().map(|&v| x[v]).fold(f64::INFINITY, f64::min);
        let back = (right - MAX_ROW_W).min(left - MARGIN);
        for &v in row {
            x[v] -= back;
        }
        if row.iter().any(|&v| x[v] + widths[v] > MAX_ROW_W) {
            let mut at = MARGIN;
            for &v in row {
                x[v] = at;
                at += widths[v] + GAP_X;
            }
        }
    }
    let mut layer_top = Vec::with_capacity(rows.len());
    let mut top = MARGIN;
    for lines in &lines_per_layer {
        layer_top.push(top);
        top += *lines as f64 * LAYER_H;
    }
    let width = (0..total).map(|v| x[v] + widths[v]).fold(0.0, f64::max) + MARGIN;
    let y = |v: usize| layer_top[layer_of[v]] + line_of[v] as f64 * LAYER_H;
    let height = (top - LAYER_H + BOX_H + MARGIN).max(BOX_H + 2.0 * MARGIN);

    let positions: Vec<(f64, f64)> = (0..n).map(|v| (x[v], y(v))).collect();
    let centre = |v: usize| x[v] + widths[v] / 2.0;
    let mut routes = Vec::with_capacity(edges.len());
    for (chain, &(_, _, reversed)) in chains.iter().zip(&acyclic) {
        let mut pts: Vec<(f64, f64)> = Vec::with_capacity(chain.len());
        for (i, &v) in chain.iter().enumerate() {
            if v < n {
                // Leave a real box at its bottom, enter one at its top.
                let at_y = if i == 0 { y(v) + BOX_H } else { y(v) };
                pts.push((centre(v), at_y));
            } else {
                pts.push((centre(v), y(v) + BOX_H / 2.0));
            }
        }
        if reversed {
            pts.reverse();
        }
        routes.push(pts);
    }
    Layout {
        positions,
        routes,
        width: width.max(MARGIN * 2.0),
        height,
    }
}

/// The edges with the back edges of a depth-first search (in index order) reversed: `(from,
/// to, reversed)`, one per input edge.
fn break_cycles(n: usize, edges: &[(usize, usize)]) -> Vec<(usize, usize, bool)> {
    let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in edges {
        out_edges[a].push(b);
    }
    // 0 unvisited, 1 on the stack, 2 done; iterative so that a long chain cannot overflow.
    let mut state = vec![0_u8; n];
    let mut back: std::collections::BTreeSet<(usize, usize)> = std::collections::BTreeSet::new();
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = 1;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            if let Some(&w) = out_edges[v].get(*i) {
                *i += 1;
                match state[w] {
                    0 => {
                        state[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => {
                        back.insert((v, w));
                    }
                    _ => {}
                }
            } else {
                state[v] = 2;
                stack.pop();
            }
        }
    }
    edges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                (a, b, false)
            } else if back.contains(&(a, b)) {
                (b, a, true)
            } else {
                (a, b, false)
            }
        })
        .collect()
}

/// Longest-path layering: a node sits one layer below the lowest of its predecessors.
fn longest_path_layers(n: usize, edges: &[(usize, usize, bool)]) -> Vec<usize> {
    let mut indeg = vec![0_usize; n];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b, _) in edges {
        if a != b {
            succ[a].push(b);
            indeg[b] += 1;
        }
    }
    let mut layer = vec![0_usize; n];
    let mut ready: std::collections::VecDeque<usize> = (0..n).filter(|&v| indeg[v] == 0).collect();
    while let Some(v) = ready.pop_front() {
        for &w in &succ[v] {
            layer[w] = layer[w].max(layer[v] + 1);
            indeg[w] -= 1;
            if indeg[w] == 0 {
                ready.push_back(w);
            }
        }
    }
    layer
}

/// Orders each row by the barycenter of its neighbours' positions in the row above (sweeping
/// down) or below (sweeping up); nodes without neighbours keep their place. Keeps the order
/// with the fewest crossings seen.
fn order_by_barycenter(rows: &mut [Vec<usize>], up: &[Vec<usize>], down: &[Vec<usize>]) {
    let total = up.len();
    let mut pos = vec![0_usize; total];
    let index = |rows: &[Vec<usize>], pos: &mut Vec<usize>| {
        for row in rows {
            for (i, &v) in row.iter().enumerate() {
                pos[v] = i;
            }
        }
    };
    index(rows, &mut pos);
    let mut best = rows.to_vec();
    let mut best_crossings = crossings(rows, down, &pos);
    for sweep in 0..SWEEPS {
        let downward = sweep % 2 == 0;
        let order: Vec<usize> = if downward {
            (1..rows.len()).collect()
        } else {
            (0..rows.len().saturating_sub(1)).rev().collect()
        };
        for l in order {
            let neighbours = if downward { up } else { down };
            let mut keyed: Vec<(f64, usize, usize)> = rows[l]
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let ns = &neighbours[v];
                    let key = if ns.is_empty() {
                        i as f64
                    } else {
                        ns.iter().map(|&w| pos[w] as f64).sum::<f64>() / ns.len() as f64
                    };
                    (key, i, v)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            rows[l] = keyed.into_iter().map(|(_, _, v)| v).collect();
            for (i, &v) in rows[l].iter().enumerate() {
                pos[v] = i;
            }
        }
        let c = crossings(rows, down, &pos);
        if c < best_crossings {
            best_crossings = c;
            best = rows.to_vec();
        }
    }
    rows.clone_from_slice(&best);
}

/// Edge crossings between adjacent rows (counted pairwise: rows here are small after
/// collapsing).
fn crossings(rows: &[Vec<usize>], down: &[Vec<usize>], pos: &[usize]) -> usize {
    let mut total = 0;
    for row in rows {
        let segs: Vec<(usize, usize)> = row
            .iter()
            .flat_map(|&v| down[v].iter().map(move |&w| (pos[v], pos[w])))
            .collect();
        if segs.len() > 2000 {
            // Quadratic past this: an estimate is not worth the time.
            continue;
        }
        for (i, a) in segs.iter().enumerate() {
            for b in &segs[i + 1..] {
                if (a.0 < b.0 && a.1 > b.1) || (a.0 > b.0 && a.1 < b.1) {
                    total += 1;
                }
            }
        }
    }
    total
}

/// Moves each node of `row` towards the mean centre of its `neighbours`, keeping the row's
/// order and the gaps (a left-to-right pass, then a right-to-left one to share the slack).
fn align_row(row: &[usize], neighbours: &[Vec<usize>], widths: &[f64], x: &mut [f64]) {
    let want: Vec<Option<f64>> = row
        .iter()
        .map(|&v| {
            let ns = &neighbours[v];
            (!ns.is_empty()).then(|| {
                ns.iter().map(|&w| x[w] + widths[w] / 2.0).sum::<f64>() / ns.len() as f64
                    - widths[v] / 2.0
            })
        })
        .collect();
    let mut min_next = f64::NEG_INFINITY;
    for (i, &v) in row.iter().enumerate() {
        let target = want[i].unwrap_or(x[v]);
        x[v] = target.max(min_next);
        min_next = x[v] + widths[v] + GAP_X;
    }
    // Pull back left where a node was pushed past what it wanted and the left has room.
    for i in (0..row.len().saturating_sub(1)).rev() {
        let (v, next) = (row[i], row[i + 1]);
        let limit = x[next] - GAP_X - widths[v];
        if x[v] > limit {
            x[v] = limit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(n: usize) -> Vec<Size> {
        vec![Size { width: 60.0 }; n]
    }

    #[test]
    fn chain_is_one_node_per_layer_top_down() {
        let l = layout(&sizes(3), &[(0, 1), (1, 2)]);
        let ys: Vec<f64> = l.positions.iter().map(|p| p.1).collect();
        assert!(ys[0] < ys[1] && ys[1] < ys[2], "{ys:?}");
        assert_eq!(l.routes.len(), 2);
    }

    #[test]
    fn long_edges_get_dummy_points_and_cycles_do_not_loop() {
        // 0 -> 1 -> 2, 0 -> 2 (spans two layers), 2 -> 0 (closes a cycle).
        let l = layout(&sizes(3), &[(0, 1), (1, 2), (0, 2), (2, 0)]);
        assert_eq!(l.routes[2].len(), 3, "{:?}", l.routes[2]);
        // The reversed edge still runs from its source (2) to its target (0).
        let r = &l.routes[3];
        assert!(r.first().expect("a point").1 > r.last().expect("a point").1);
    }

    #[test]
    fn boxes_of_a_layer_never_overlap_and_the_layout_is_deterministic() {
        let edges: Vec<(usize, usize)> =
            (1..12).map(|i| (0, i)).chain([(3, 12), (7, 12)]).collect();
        let a = layout(&sizes(13), &edges);
        let b = layout(&sizes(13), &edges);
        assert_eq!(a, b);
        let mut row: Vec<(f64, f64)> = a.positions[1..12].to_vec();
        row.sort_by(|p, q| p.0.total_cmp(&q.0));
        for w in row.windows(2) {
            assert!(w[1].0 >= w[0].0 + 60.0, "{row:?}");
        }
    }

    #[test]
    fn a_wide_layer_wraps_within_the_page() {
        let l = layout(&sizes(60), &[]);
        assert!(l.width <= MAX_ROW_W + MARGIN, "{}", l.width);
        let lines: std::collections::BTreeSet<String> =
            l.positions.iter().map(|p| format!("{:.0}", p.1)).collect();
        assert!(lines.len() > 1, "{lines:?}");
        // Below a wrapped layer, the next one starts under its last line; and a layer pulled
        // to the right by its neighbours stays on the page.
        let l = layout(&sizes(61), &[(0, 60), (59, 60)]);
        let lowest_of_first = l.positions[..60].iter().map(|p| p.1).fold(0.0, f64::max);
        assert!(l.positions[60].1 > lowest_of_first);
        assert!(l.width <= MAX_ROW_W + MARGIN, "{}", l.width);
        let hub: Vec<(usize, usize)> = (1..60).map(|i| (0, i)).collect();
        let l = layout(&sizes(60), &hub);
        assert!(l.positions[0].0 + 60.0 <= MAX_ROW_W, "{:?}", l.positions[0]);
    }

    #[test]
    fn barycenter_untangles_a_crossing() {
        // Row 0: a b; row 1: c d with a->d, b->c: the sweep puts d before c.
        let placed = layout(&sizes(4), &[(0, 3), (1, 2)]);
        let x: Vec<f64> = placed.positions.iter().map(|p| p.0).collect();
        // a before b exactly when d is before c: the two edges do not cross.
        assert_eq!(x[0] < x[1], x[3] < x[2], "{:?}", placed.positions);
    }
}
