//! What a chart that does not render for a release is reported as: a template's error at
//! its line, a value that fails the chart's schema at the line that set it, the release beside
//! each.

use fluxgate_diagnostics::{Annotate, Location};
use fluxgate_flux::helm::Values;

use super::locate::{cache_file, origin_of};
use crate::problem::{Problem, ProblemKind};
use fluxgate_gotemplate::trace::join_key;

/// A render, and the schemas it could not check against.
pub(crate) struct Render {
    pub manifests: Vec<fluxgate_helm::Manifest>,
    pub unchecked: Vec<String>,
}

/// Why a chart did not render.
pub(crate) enum Failed {
    Text(String),
    /// A template's parse or execution error, where Helm reports it, and its innermost cause.
    Template {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// The values fail the charts' values.schema.json: helm-controller's install fails.
    Schema(Box<fluxgate_helm::schema::SchemaFailure>),
}

impl From<fluxgate_helm::Error> for Failed {
    fn from(e: fluxgate_helm::Error) -> Failed {
        match e {
            fluxgate_helm::Error::Schema(f) => Failed::Schema(f),
            fluxgate_helm::Error::Template {
                file,
                line,
                column,
                message,
                ..
            } => Failed::Template {
                file,
                line,
                column,
                message,
            },
            other => Failed::Text(other.to_string()),
        }
    }
}

/// A render finding at the release's chart reference.
pub(crate) fn at_release(message: String, at: &Location) -> Problem {
    Problem::new(ProblemKind::ChartRender, message, Some(at.clone())).help(
        "run `fluxgate template` on the chart with the release's values to see the whole error",
    )
}

/// What `failed` is reported as, for release `id` installing `source` (named at `at`).
pub(crate) fn problems(
    failed: Failed,
    id: &str,
    source: &str,
    values: &Values,
    at: &Location,
) -> Vec<Problem> {
    let installs = format!("HelmRelease {id} installs the chart here");
    match failed {
        Failed::Schema(f) => schema_problems(&f, id, source, values, at),
        // The template line Helm names is the finding's place, the release beside it.
        Failed::Template {
            file,
            line,
            column,
            message,
        } => {
            let mut p = at_release(format!("HelmRelease {id}: chart {source}: {message}"), at)
                .related(at.clone(), installs);
            p.location = Some(Location::new(
                cache_file(source, &file),
                u32::try_from(line).unwrap_or(u32::MAX),
                u32::try_from(column).unwrap_or(u32::MAX),
            ));
            vec![p]
        }
        Failed::Text(e) => {
            let mut p = at_release(format!("HelmRelease {id}: chart {source}: {e}"), at);
            // Helm's text names the template line that failed: the finding's place.
            if let Some(line) = template_position(source, &e) {
                p.location = Some(line);
                p = p.related(at.clone(), installs);
            }
            vec![p]
        }
    }
}

/// The values that fail a chart's schema, each at the line that set it (the release's values
/// line, the chart default's), the release beside it.
fn schema_problems(
    f: &fluxgate_helm::schema::SchemaFailure,
    id: &str,
    source: &str,
    values: &Values,
    at: &Location,
) -> Vec<Problem> {
    f.violations
        .iter()
        .take(20)
        .map(|v| {
            let mut path = String::new();
            for seg in &v.path {
                if seg.parse::<usize>().is_ok() && !path.is_empty() {
                    path.push_str(&format!("[{seg}]"));
                } else {
                    path = join_key(&path, seg);
                }
            }
            let shown = if v.path.is_empty() {
                "the values".to_string()
            } else {
                format!("`{}`", v.path.join("."))
            };
            let place = origin_of(&values.origins, &path).unwrap_or_else(|| at.clone());
            let mut p = Problem::new(
                ProblemKind::ChartRender,
                format!(
                    "HelmRelease {id}: {shown} fails the values.schema.json of chart {} ({source}): {}",
                    v.chart, v.message
                ),
                Some(place.clone()),
            )
            .help("helm-controller validates the values against the chart's schema and fails the install");
            if place != *at {
                p = p.related(at.clone(), format!("HelmRelease {id} installs the chart here"));
            }
            p
        })
        .collect()
}

/// The template position in Helm's error text (`execution error at (c/templates/x.yaml:6:14)`,
/// `template: c/templates/x.yaml:3:4: ...`, `parse error at (c/templates/x.yaml:2): ...`), as a
/// place in the cache.
fn template_position(source: &str, error: &str) -> Option<Location> {
    static POSITION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?:^|\(|template: )([^\s():]+\.[A-Za-z]+):(\d+)(?::(\d+))?")
            .expect("static regex")
    });
    let caps = POSITION.captures(error)?;
    let line = caps[2].parse().ok()?;
    let column = caps
        .get(3)
        .and_then(|c| c.as_str().parse().ok())
        .unwrap_or(1);
    Some(Location::new(cache_file(source, &caps[1]), line, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_errors_name_their_template_line() {
        let at = |e: &str| template_position("charts/vip", e).map(|l| l.to_string());
        assert_eq!(
            at("execution error at (vip/templates/cm.yaml:6:14): config.address is required")
                .as_deref(),
            Some("charts/vip/templates/cm.yaml:6:14")
        );
        assert_eq!(
            at("parse error at (vip/templates/_helpers.tpl:2): unexpected EOF").as_deref(),
            Some("charts/vip/templates/_helpers.tpl:2:1")
        );
        assert_eq!(
            at("template: vip/templates/x.yaml:3:4: executing \"x\" at <.a.b>: nil pointer")
                .as_deref(),
            Some("charts/vip/templates/x.yaml:3:4")
        );
        assert_eq!(
            at("app/templates/common.yaml:14:3\n  executing \"app/templates/common.yaml\"")
                .as_deref(),
            Some("charts/vip/templates/common.yaml:14:3")
        );
        assert_eq!(at("chart dependencies processing failed"), None);
    }
}
