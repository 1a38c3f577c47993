use std::fmt::Write as _;

use crate::{Diagnostic, Severity};

/// GitHub Actions workflow commands: one `::error`/`::warning`/`::notice` annotation per
/// finding, escaped as the runner expects.
#[must_use]
pub fn render_github(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        let cmd = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let mut props = Vec::new();
        if let Some(l) = &d.location {
            props.push(format!("file={}", prop(&l.file)));
            if l.line > 0 {
                props.push(format!("line={}", l.line));
                props.push(format!("col={}", l.column));
            }
        }
        let env = d
            .environment_label()
            .map(|e| format!(" [{e}]"))
            .unwrap_or_default();
        props.push(format!(
            "title={}",
            prop(&format!("fluxgate {}{env}", d.rule))
        ));
        let _ = writeln!(out, "::{cmd} {}::{}", props.join(","), data(&d.message));
    }
    out
}

fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn prop(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}
