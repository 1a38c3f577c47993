//! `chart-override-removed`: a HelmRelease value that overrides its chart's default, deleted,
//! so the chart default shows through (the second incident's `maxUnavailable: 2`). The rule
//! that guards the value should notice; a survivor is an override nothing checks.

use fluxgate_flux::helm::ChartCache;

use super::{Ctx, Found, Operator, remove_key, shown, single};
use crate::outline::Outline;

pub const OPERATOR: Operator = Operator {
    name: "chart-override-removed",
    summary: "an explicit override of a chart default removed",
    generate,
};

fn generate(ctx: &Ctx<'_>, out: &mut Found) {
    let Some(dir) = ctx.config.charts.as_deref() else {
        return;
    };
    let cache = ChartCache::with_fs(ctx.fs, ctx.root, dir);
    for env in ctx.envs {
        for rel in env.releases.values() {
            let Some(chart) = rel.values.chart.as_ref().filter(|c| c.found.is_some()) else {
                continue;
            };
            let Some(defaults) = cache
                .lookup(&chart.name, chart.found_version.as_deref())
                .and_then(|c| c.values.clone())
            else {
                continue;
            };
            for (path, chain) in &rel.values.origins {
                let Some(first) = chain.first() else {
                    continue;
                };
                if first.via.starts_with("chart default")
                    || path.contains('[')
                    || path.contains("\\.")
                {
                    continue;
                }
                let keys: Vec<&str> = path.split('.').collect();
                let Some(default) = defaults.path(&keys) else {
                    continue;
                };
                let file = ctx.rel(&first.location.file);
                let Some(text) = ctx.text(&file) else {
                    continue;
                };
                let o = Outline::new(&text);
                let last = path.rsplit('.').next().unwrap_or(path);
                let Some(line) = o
                    .line(first.location.line)
                    .filter(|l| l.key.as_deref() == Some(last))
                else {
                    out.skip(
                        OPERATOR.name,
                        &file,
                        first.location.line,
                        format!("`{path}` of {}: not a key on the line that sets it", rel.id),
                    );
                    continue;
                };
                if line.dash.is_some() || line.path.iter().any(|c| c.starts_with('[')) {
                    out.skip(
                        OPERATOR.name,
                        &file,
                        line.no,
                        format!("`{path}` of {}: inside a list item", rel.id),
                    );
                    continue;
                }
                out.push(single(
                    OPERATOR.name,
                    &file,
                    line.no,
                    format!(
                        "`{}` removed from HelmRelease {}: the chart default ({}:{}{}) shows through",
                        shown(&o, line.no),
                        rel.id,
                        default.loc.file,
                        default.loc.line,
                        if rel.values.tree.path(&keys).is_some_and(|v| v == default) { ", the same value" } else { "" }
                    ),
                    remove_key(&o, line.no),
                ));
            }
        }
    }
}
