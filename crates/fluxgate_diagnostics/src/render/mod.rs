//! Renderers, one file per output format. Each takes diagnostics already sorted.

mod github;
mod json;
mod junit;
mod markdown;
mod sarif;
mod text;

pub use github::render_github;
pub use json::diagnostic_to_json;
pub use junit::render_junit;
pub use markdown::{
    Budget, COMMENT_LIMIT, FINDINGS_HEADER, cell, code as markdown_code, diagnostic_row,
    escape as markdown_escape, findings_row, per_environment, render_markdown,
    render_markdown_within, see_report,
};
pub use sarif::{SarifLog, render_sarif, render_sarif_fingerprinted, sarif_log};
pub use text::{SourceLookup, render_text, render_text_styled};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Annotate;
    use crate::{Diagnostic, Location, Severity};

    fn sample() -> Vec<Diagnostic> {
        vec![
            Diagnostic::new(
                "ha-endpoint",
                Severity::Error,
                "dials node k3s-prod-1, not the VIP",
            )
            .at(Location::new("clusters/prod/patch.yaml", 9, 3))
            .related(
                Location::new("platform/cilium/helmrelease.yaml", 31, 5),
                "consumed here",
            )
            .in_env("prod"),
            Diagnostic::new("check-mode-probe", Severity::Warning, "a, b <c>").at(Location::new(
                "roles/x/tasks/main.yml",
                4,
                3,
            )),
        ]
    }

    #[test]
    fn sarif_has_locations_and_related() {
        let text = render_sarif(
            &sample(),
            &[("ha-endpoint", "dial the HA endpoint")],
            "0.1.0",
        )
        .expect("SARIF");
        let v: serde_json::Value = serde_json::from_str(&text).expect("SARIF is JSON");
        assert_eq!(v["version"], "2.1.0");
        assert_eq!(
            v["runs"][0]["tool"]["driver"]["rules"][0]["id"],
            "ha-endpoint"
        );
        let r = &v["runs"][0]["results"][0];
        assert_eq!(r["level"], "error");
        assert_eq!(r["ruleIndex"], 0);
        // A rule that is not listed has no index (the warning's rule here).
        assert!(v["runs"][0]["results"][1].get("ruleIndex").is_none());
        assert_eq!(
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            9
        );
        assert_eq!(
            r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "platform/cilium/helmrelease.yaml"
        );
    }

    #[test]
    fn junit_escapes_and_counts() {
        let x = render_junit(&sample(), &["ha-endpoint", "tls-san"]).expect("JUnit XML");
        // Three cases written (two findings, one passing rule), so `tests` says three: the
        // hand-written XML used to add the rules that ran to the findings (4 here).
        assert_eq!(x.matches("<testcase ").count(), 3, "{x}");
        assert!(
            x.contains("<testsuites name=\"fluxgate\" tests=\"3\" skipped=\"0\" failures=\"2\""),
            "{x}"
        );
        assert!(x.contains("a, b &lt;c&gt;"));
        assert!(x.contains("<testcase name=\"tls-san\""));
    }

    #[test]
    fn github_annotations_escape_properties() {
        let g = render_github(&sample());
        assert!(g.starts_with("::error file=clusters/prod/patch.yaml,line=9,col=3,title=fluxgate ha-endpoint [prod]::dials"));
        assert!(g.contains("::warning "));
    }

    #[test]
    fn markdown_summary() {
        let m = render_markdown(&sample(), false, &["prod".to_string()]);
        assert!(m.contains("MERGE GATE FAIL"));
        assert!(m.contains("| error | `ha-endpoint` | prod |"));
    }
}
