use std::fmt::Write as _;

use crate::Diagnostic;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `JUnit` XML: one test suite per rule that ran, one test case per finding (a failure), and a
/// passing case for every rule without findings.
#[must_use]
pub fn render_junit(diags: &[Diagnostic], rules_ran: &[&str]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let failures = diags.len();
    let _ = writeln!(
        out,
        "<testsuites name=\"fluxgate\" tests=\"{}\" failures=\"{failures}\">",
        rules_ran.len().max(1) + failures
    );
    let mut names: Vec<&str> = rules_ran.to_vec();
    for d in diags {
        if !names.contains(&d.rule.as_str()) {
            names.push(&d.rule);
        }
    }
    for rule in names {
        let mine: Vec<&Diagnostic> = diags.iter().filter(|d| d.rule == rule).collect();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">",
            escape(rule),
            mine.len().max(1),
            mine.len()
        );
        if mine.is_empty() {
            let _ = writeln!(
                out,
                "    <testcase name=\"{}\" classname=\"fluxgate.{}\"/>",
                escape(rule),
                escape(rule)
            );
        }
        for d in mine {
            let at = d
                .location
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            let env = d.environment_label();
            let env = env.as_deref().unwrap_or("-");
            let _ = writeln!(
                out,
                "    <testcase name=\"{} {}\" classname=\"fluxgate.{}\">",
                escape(env),
                escape(&at),
                escape(rule)
            );
            let _ = writeln!(
                out,
                "      <failure type=\"{}\" message=\"{}\">{}</failure>",
                d.severity,
                escape(&d.message),
                escape(&at)
            );
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
