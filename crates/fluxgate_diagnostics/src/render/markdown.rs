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
            escape(&environments.join(", "))
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

/// Repository text made safe for one Markdown table cell: [`escape`]d (no raw HTML, no
/// link, `|` escaped, line breaks as spaces).
#[must_use]
pub fn cell(text: &str) -> String {
    escape(text)
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
        escape(environment.unwrap_or("—")),
        location.map(|l| code(&l.to_string())).unwrap_or_default(),
        escape(message)
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

/// Repository text (a message, a name) as one line of Markdown that holds no raw HTML and no
/// link or image: inside balanced code spans (`` `...` ``) only `|` is escaped (a code span
/// shows its text literally); elsewhere `&`, `<`, `>` become entities and `|`, `[`, `]`,
/// `\` are backslash-escaped (emphasis marks are left: they cannot carry HTML or a link). With unbalanced backticks every backtick is escaped
/// too, so that no code span can swallow the rest of the line.
#[must_use]
pub fn escape(s: &str) -> String {
    let line = s.replace(['\n', '\r'], " ");
    let parts: Vec<&str> = line.split('`').collect();
    let balanced = parts.len() % 2 == 1;
    let mut out = String::with_capacity(line.len() + 8);
    for (i, part) in parts.iter().enumerate() {
        let in_code = balanced && i % 2 == 1;
        if i > 0 {
            out.push_str(if balanced { "`" } else { "\\`" });
        }
        for c in part.chars() {
            match c {
                '|' => out.push_str("\\|"),
                _ if in_code => out.push(c),
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '[' | ']' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }
    out
}

/// Repository text (a path) as one Markdown code span: backticks in it cannot end the span
/// early (the span is fenced with more backticks than it holds in a row), `|` is escaped for
/// tables.
#[must_use]
pub fn code(s: &str) -> String {
    let line = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in line.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    if longest == 0 {
        format!("{fence}{line}{fence}")
    } else {
        format!("{fence} {line} {fence}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_text_carries_no_html() {
        assert_eq!(
            escape("a <script>alert(1)</script> | [x](y) `<b>` & _z_"),
            "a &lt;script&gt;alert(1)&lt;/script&gt; \\| \\[x\\](y) `<b>` &amp; _z_"
        );
        assert_eq!(escape("odd ` <img src=x>"), "odd \\` &lt;img src=x&gt;");
        assert_eq!(code("apps/<img>.yaml:3"), "`apps/<img>.yaml:3`");
        assert_eq!(code("a`b"), "`` a`b ``");
    }
}
