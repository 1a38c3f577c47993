use std::fmt::{self, Write as _};

use crate::{Diagnostic, Severity};

/// The most a GitHub pull-request comment holds: 65,536 characters. Lengths here are counted
/// in bytes, which is never fewer than the characters.
pub const COMMENT_LIMIT: usize = 65_536;

/// A pull-request comment: the decision, counts, and a table of findings.
#[must_use]
pub fn render_markdown(diags: &[Diagnostic], passed: bool, environments: &[String]) -> String {
    render_markdown_within(diags, passed, environments, COMMENT_LIMIT, None)
}

/// [`render_markdown`] in at most `limit` bytes. Past it the comment counts the findings per
/// environment, lists as many whole rows as fit (errors first), and points at the HTML report
/// (`report_url`, when it is published somewhere) for the rest: a row is never cut.
#[must_use]
pub fn render_markdown_within(
    diags: &[Diagnostic],
    passed: bool,
    environments: &[String],
    limit: usize,
    report_url: Option<&str>,
) -> String {
    let mut out = head(diags, passed, environments);
    if diags.is_empty() {
        out.push_str("No findings.\n");
        return out;
    }
    let rows: Vec<String> = diags.iter().map(diagnostic_row).collect();
    let whole: usize = rows.iter().map(|r| r.len() + 1).sum::<usize>() + FINDINGS_HEADER.len() + 1;
    if out.len() + whole <= limit {
        let _ = writeln!(out, "{FINDINGS_HEADER}");
        for r in rows {
            let _ = writeln!(out, "{r}");
        }
        return out;
    }
    out.push_str(&per_environment(diags));
    out.push('\n');
    // Errors first, then warnings, then notes; each in the sorted order.
    let mut order: Vec<usize> = (0..diags.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(diags[i].severity));
    let mut budget = Budget::new(limit, out.len());
    // Room for the closing lines, whatever they say.
    budget.reserve(TAIL_RESERVE + report_url.map_or(0, str::len));
    let mut table = format!("{FINDINGS_HEADER}\n");
    if !budget.take(&table) {
        table.clear();
    }
    let mut shown = 0;
    for &i in &order {
        let row = format!("{}\n", rows[i]);
        if !budget.take(&row) {
            break;
        }
        table.push_str(&row);
        shown += 1;
    }
    if shown > 0 {
        out.push_str(&table);
        out.push('\n');
    }
    let hidden = &order[shown..];
    let count = |sev| hidden.iter().filter(|&&i| diags[i].severity == sev).count();
    let _ = writeln!(
        out,
        "**{} more finding{} ({} error{}, {} warning{}, {} note{}) do not fit in a comment.** {}",
        hidden.len(),
        if hidden.len() == 1 { "" } else { "s" },
        count(Severity::Error),
        if count(Severity::Error) == 1 { "" } else { "s" },
        count(Severity::Warning),
        if count(Severity::Warning) == 1 {
            ""
        } else {
            "s"
        },
        count(Severity::Note),
        if count(Severity::Note) == 1 { "" } else { "s" },
        see_report(report_url)
    );
    out
}

/// What the closing lines of a summarised comment may take.
const TAIL_RESERVE: usize = 600;

/// Where the whole report is: the HTML page `fluxgate check --format html` writes, published
/// as a CI artifact (linked when its URL is known).
#[must_use]
pub fn see_report(report_url: Option<&str>) -> String {
    let safe = report_url.filter(|u| {
        (u.starts_with("https://") || u.starts_with("http://"))
            && !u.contains(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '<' | '>' | '"'))
    });
    match safe {
        Some(u) => {
            format!("Every finding is in the [HTML report]({u}) (`fluxgate check --format html`).")
        }
        None => "Every finding is in the HTML report: `fluxgate check --format html`, published \
                 as this job's artifact."
            .to_string(),
    }
}

/// A byte budget: what is taken must fit in what is left.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    left: usize,
}

impl Budget {
    /// `limit` bytes of which `used` are already written.
    #[must_use]
    pub fn new(limit: usize, used: usize) -> Budget {
        Budget {
            left: limit.saturating_sub(used),
        }
    }

    /// Sets aside `n` bytes for what must come last.
    pub fn reserve(&mut self, n: usize) {
        self.left = self.left.saturating_sub(n);
    }

    /// Takes `s` when it fits whole; `false` (and nothing taken) otherwise.
    pub fn take(&mut self, s: &str) -> bool {
        self.take_len(s.len())
    }

    /// Takes `n` bytes when they fit; `false` (and nothing taken) otherwise.
    pub fn take_len(&mut self, n: usize) -> bool {
        if n <= self.left {
            self.left -= n;
            true
        } else {
            false
        }
    }
}

/// The decision, the environments and the counts.
fn head(diags: &[Diagnostic], passed: bool, environments: &[String]) -> String {
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
    out
}

/// The findings counted per environment (a finding of several counts in each), as a table.
#[must_use]
pub fn per_environment(diags: &[Diagnostic]) -> String {
    let mut counts: std::collections::BTreeMap<String, [usize; 3]> =
        std::collections::BTreeMap::new();
    for d in diags {
        let envs: Vec<String> = if d.environments.is_empty() {
            vec![d.environment.clone().unwrap_or_else(|| "—".to_string())]
        } else {
            d.environments.clone()
        };
        for e in envs {
            let c = counts.entry(e).or_default();
            match d.severity {
                Severity::Error => c[0] += 1,
                Severity::Warning => c[1] += 1,
                Severity::Note => c[2] += 1,
            }
        }
    }
    let mut out =
        String::from("| environment | errors | warnings | notes |\n|---|---:|---:|---:|\n");
    for (e, c) in counts {
        let _ = writeln!(out, "| {} | {} | {} | {} |", escape(&e), c[0], c[1], c[2]);
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

    fn many(n: usize) -> Vec<Diagnostic> {
        use crate::{Annotate, Location};
        (0..n)
            .map(|i| {
                Diagnostic::new(
                    if i % 3 == 0 { "ha-endpoint" } else { "render" },
                    if i % 4 == 0 {
                        Severity::Warning
                    } else {
                        Severity::Error
                    },
                    format!("finding {i} {}", "x".repeat(150)),
                )
                .at(Location::new(format!("apps/app{i}/release.yaml"), 3, 5))
                .in_env(if i % 2 == 0 { "prod" } else { "dev" })
            })
            .collect()
    }

    #[test]
    fn a_big_comment_is_summarised_within_the_limit_and_never_cut_mid_row() {
        let diags = many(3000);
        let full = render_markdown_within(
            &diags,
            false,
            &["dev".into(), "prod".into()],
            usize::MAX,
            None,
        );
        assert!(
            full.len() > COMMENT_LIMIT,
            "the input must be too big: {}",
            full.len()
        );
        let m = render_markdown(&diags, false, &["dev".into(), "prod".into()]);
        assert!(m.len() <= COMMENT_LIMIT, "{}", m.len());
        assert!(
            m.contains("| environment | errors | warnings | notes |"),
            "{m}"
        );
        assert!(m.contains("| dev | 1500 | 0 | 0 |"), "{m}");
        assert!(m.contains("| prod | 750 | 750 | 0 |"), "{m}");
        assert!(m.contains("do not fit in a comment"), "{m}");
        assert!(m.contains("fluxgate check --format html"));
        // Every table row shown is a whole finding row, and errors come before warnings.
        let rows: Vec<&str> = m
            .lines()
            .filter(|l| l.starts_with("| error") || l.starts_with("| warning"))
            .collect();
        assert!(rows.len() > 100, "{}", rows.len());
        for r in &rows {
            assert!(
                r.ends_with(" |") && r.contains(&"x".repeat(150)),
                "cut row: {r}"
            );
        }
        let first_warning = rows
            .iter()
            .position(|r| r.starts_with("| warning"))
            .unwrap_or(rows.len());
        assert!(
            rows[first_warning..]
                .iter()
                .all(|r| r.starts_with("| warning"))
        );
        // A small one is whole.
        let small = render_markdown(&many(5), false, &[]);
        assert!(!small.contains("do not fit"));
        assert_eq!(
            small
                .lines()
                .filter(|l| l.starts_with("| error") || l.starts_with("| warning"))
                .count(),
            5
        );
    }

    #[test]
    fn the_report_link_is_only_a_plain_url() {
        assert!(
            see_report(Some("https://ci.example/artifacts/1"))
                .contains("](https://ci.example/artifacts/1)")
        );
        assert!(!see_report(Some("javascript:alert(1)")).contains("]("));
        assert!(!see_report(Some("https://x) [y](z")).contains("]("));
    }

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
