use std::fmt::{self, Write as _};

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
    let _ = writeln!(out, "{FINDINGS_HEADER}");
    for d in diags {
        let _ = writeln!(out, "{}", diagnostic_row(d));
    }
    out
}

/// The head of a findings table (its two lines, without the final line break).
pub const FINDINGS_HEADER: &str =
    "| severity | rule | environment | location | message |\n|---|---|---|---|---|";

/// Text made safe for one Markdown table cell: `|` escaped, line breaks as spaces.
#[must_use]
pub fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// One row of a findings table (without the line break): every findings table (`check`,
/// `baseline`, `diff`) writes its rows with this. `location` is shown as code, a missing
/// environment as `—`.
#[must_use]
pub fn findings_row(
    severity: &dyn fmt::Display,
    rule: &str,
    environment: Option<&str>,
    location: Option<&dyn fmt::Display>,
    message: &str,
) -> String {
    format!(
        "| {severity} | `{rule}` | {} | {} | {} |",
        environment.unwrap_or("—"),
        location.map(|l| format!("`{l}`")).unwrap_or_default(),
        cell(message)
    )
}

/// The findings row of a diagnostic.
#[must_use]
pub fn diagnostic_row(d: &Diagnostic) -> String {
    findings_row(
        &d.severity,
        &d.rule,
        d.environment_label().as_deref(),
        d.location.as_ref().map(|l| l as &dyn fmt::Display),
        &d.message,
    )
}
