use std::fmt::Write as _;

use crate::{Diagnostic, Severity};

/// A pull-request comment: the decision, counts, and a table of findings.
#[must_use]
pub fn render_markdown(diags: &[Diagnostic], passed: bool, environments: &[String]) -> String {
    let mut out = String::new();
    let errors = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diags
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    let icon = if passed { "✅" } else { "❌" };
    let _ = writeln!(
        out,
        "## {icon} fluxgate: MERGE GATE {}\n",
        if passed { "PASS" } else { "FAIL" }
    );
    let _ = writeln!(
        out,
        "Environments: {}. Errors: {errors}, warnings: {warnings}.\n",
        if environments.is_empty() {
            "none".to_string()
        } else {
            environments.join(", ")
        }
    );
    if diags.is_empty() {
        out.push_str("No findings.\n");
        return out;
    }
    out.push_str("| severity | rule | environment | location | message |\n|---|---|---|---|---|\n");
    for d in diags {
        let at = d
            .location
            .as_ref()
            .map(|l| format!("`{l}`"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} |",
            d.severity,
            d.rule,
            d.environment_label().as_deref().unwrap_or("—"),
            at,
            d.message.replace('|', "\\|").replace('\n', " ")
        );
    }
    out
}
