//! What the charts of an environment could not tell, said once for all the releases it
//! concerns: charts the cache lacks (their defaults unknown), schemas that cannot be read
//! offline (values not checked against them).

use fluxgate_diagnostics::Annotate;
use indexmap::IndexMap;

use crate::environment::Release;
use crate::problem::{Problem, ProblemKind};

/// The notes of the environment's `releases` (by `namespace/name`).
pub(crate) fn notes(releases: &IndexMap<String, Release>) -> Vec<Problem> {
    let mut out: Vec<Problem> = missing_charts_note(releases).into_iter().collect();
    out.extend(schema_unchecked_notes(releases));
    out
}

/// One note for every chart the environment's releases install that the chart cache lacks
/// (their default values are unknown), at the first release that names each one.
fn missing_charts_note(releases: &IndexMap<String, Release>) -> Option<Problem> {
    let mut missing: IndexMap<String, (usize, fluxgate_diagnostics::Location)> = IndexMap::new();
    for r in releases.values() {
        let Some(c) = r.values.chart.as_ref().filter(|c| c.found.is_none()) else {
            continue;
        };
        let label = format!(
            "{} {}",
            c.name,
            c.version.as_deref().unwrap_or("(any version)")
        );
        missing
            .entry(label)
            .or_insert_with(|| (0, c.location.clone()))
            .0 += 1;
    }
    let (_, first) = missing.values().next()?.clone();
    let mut listed: Vec<String> = missing
        .iter()
        .map(|(label, (n, _))| match n {
            1 => label.clone(),
            n => format!("{label} ({n} releases)"),
        })
        .collect();
    listed.sort();
    let mut d = Problem::new(
        ProblemKind::ChartsNotCached,
        format!(
            "{} chart{} not in the chart cache, so {} default values are unknown: {}",
            missing.len(),
            if missing.len() == 1 { " is" } else { "s are" },
            if missing.len() == 1 { "its" } else { "their" },
            listed.join(", ")
        ),
        Some(first),
    )
    .help("put each chart's .tgz (or unpacked folder) into the `charts:` folder of fluxgate.yaml");
    for (label, (_, at)) in missing.iter().skip(1).take(9) {
        d = d.related(at.clone(), format!("{label} is named here"));
    }
    Some(d)
}

/// One note per chart whose values.schema.json cannot be read offline, at the first release
/// that installs it, with how many releases were not checked against it.
fn schema_unchecked_notes(releases: &IndexMap<String, Release>) -> Vec<Problem> {
    let mut by_chart: IndexMap<&str, (usize, &Release, &str)> = IndexMap::new();
    for r in releases.values() {
        let Some(i) = &r.installed else {
            continue;
        };
        if let Some(why) = &i.schema_unchecked {
            by_chart.entry(&i.chart).or_insert((0, r, why)).0 += 1;
        }
    }
    by_chart
        .into_iter()
        .map(|(chart, (n, first, why))| {
            let at = first
                .values
                .chart
                .as_ref()
                .map_or_else(|| first.object.loc.clone(), |c| c.location.clone());
            let which = if n == 1 {
                format!("HelmRelease {}", first.id)
            } else {
                format!("{n} HelmReleases ({} and others)", first.id)
            };
            Problem::new(
                ProblemKind::ChartSchemaUnchecked,
                format!(
                    "the values.schema.json of chart {chart} cannot be read offline ({why}), so the values of {which} were not checked against it"
                ),
                Some(at),
            )
        })
        .collect()
}
