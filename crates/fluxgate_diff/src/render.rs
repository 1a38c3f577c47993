//! A [`Report`] printed: text for a terminal, markdown for a pull-request comment (a summary
//! table per environment, the details collapsed, the findings delta), JSON in the shape
//! documented in `docs/diff-json.md`.

use std::fmt::Write as _;

use fluxgate_diagnostics::render::{
    Budget, COMMENT_LIMIT, FINDINGS_HEADER, cell, findings_row, see_report,
};
use serde_json::{Value as Json, json};

use crate::{Category, EnvDiff, FieldChange, ObjectChange, Report, Status};

/// The findings delta a report is printed with: rule, severity, environment, location and
/// message of the findings the head has that the base has not (`new`), the ones both have
/// (`existing`), and how many the base had that the head no longer has (`fixed`).
#[derive(Clone, Debug, Default)]
pub struct FindingsDelta {
    pub new: Vec<FindingLine>,
    pub existing: Vec<FindingLine>,
    pub fixed: usize,
}

/// One finding, as the delta shows it.
#[derive(Clone, Debug)]
pub struct FindingLine {
    pub severity: String,
    pub rule: String,
    pub environment: Option<String>,
    pub location: Option<String>,
    pub message: String,
}

/// What the report compares, for its heading: `main (merge-base …) -> working tree`.
#[derive(Clone, Debug, Default)]
pub struct Sides {
    pub base: String,
    pub head: String,
}

const MAX_FIELDS: usize = 50;

fn field_line(f: &FieldChange) -> String {
    let value = if f.secret {
        match f.status {
            Status::Added => "(secret value added)".to_string(),
            Status::Removed => "(secret value removed)".to_string(),
            Status::Changed => "(secret value changed)".to_string(),
        }
    } else {
        match (&f.old, &f.new) {
            (Some(o), Some(n)) => format!("{o} -> {n}"),
            (None, Some(n)) => format!("(none) -> {n}"),
            (Some(o), None) => format!("{o} -> (removed)"),
            (None, None) => String::new(),
        }
    };
    let at = match (&f.origin, f.status) {
        (Some(o), Status::Removed) => format!("  (was set at {o})"),
        (Some(o), _) => format!("  ({o})"),
        (None, _) => String::new(),
    };
    format!("{}: {value}{at}", f.path)
}

fn fields_text(out: &mut String, fields: &[FieldChange], indent: &str) {
    for f in fields.iter().take(MAX_FIELDS) {
        let _ = writeln!(out, "{indent}{}", field_line(f));
        for (sign, line) in f.lines.iter().take(20) {
            let _ = writeln!(out, "{indent}    {sign} {line}");
        }
        if f.lines.len() > 20 {
            let _ = writeln!(out, "{indent}    … {} more lines", f.lines.len() - 20);
        }
    }
    if fields.len() > MAX_FIELDS {
        let _ = writeln!(
            out,
            "{indent}… and {} more fields",
            fields.len() - MAX_FIELDS
        );
    }
}

fn sign(s: Status) -> char {
    match s {
        Status::Added => '+',
        Status::Removed => '-',
        Status::Changed => '~',
    }
}

fn object_text(out: &mut String, o: &ObjectChange) {
    let _ = writeln!(
        out,
        "  {} {}  ({}, {})",
        sign(o.status),
        o.label(),
        o.kustomization,
        o.file
    );
    for n in &o.notes {
        let _ = writeln!(out, "      {n}");
    }
    if let Some(c) = &o.crd {
        if c.versions_old != c.versions_new {
            let _ = writeln!(
                out,
                "      versions: [{}] -> [{}]",
                c.versions_old.join(", "),
                c.versions_new.join(", ")
            );
        }
        if !c.fields_added.is_empty() || !c.fields_removed.is_empty() {
            let _ = writeln!(
                out,
                "      schema: {} fields added, {} removed",
                c.fields_added.len(),
                c.fields_removed.len()
            );
            for f in c.fields_added.iter().take(10) {
                let _ = writeln!(out, "        + {f}");
            }
            for f in c.fields_removed.iter().take(10) {
                let _ = writeln!(out, "        - {f}");
            }
        }
    }
    fields_text(out, &o.fields, "      ");
}

fn env_text(out: &mut String, e: &EnvDiff) {
    if e.is_empty() {
        let _ = writeln!(out, "environment {}: no change", e.name);
        return;
    }
    let _ = writeln!(out, "environment {}: {}", e.name, summary_line(e));
    for o in &e.objects {
        object_text(out, o);
    }
    for r in &e.releases {
        let _ = writeln!(
            out,
            "  {} HelmRelease {} values (chart {}{})",
            sign(r.status),
            r.id,
            r.chart,
            if r.defaults_known {
                ", chart defaults included"
            } else {
                ", chart not cached: defaults unknown"
            }
        );
        if let Some((o, n)) = &r.version {
            let _ = writeln!(
                out,
                "      chart version: {} -> {}",
                o.as_deref().unwrap_or("(none)"),
                n.as_deref().unwrap_or("(none)")
            );
        }
        fields_text(out, &r.values, "      ");
    }
    if !e.images.is_empty() {
        let _ = writeln!(out, "  images:");
        for i in &e.images {
            let _ = writeln!(
                out,
                "      {} {}: {} -> {}",
                i.object,
                i.container,
                i.old.as_deref().unwrap_or("(none)"),
                i.new.as_deref().unwrap_or("(none)")
            );
        }
    }
    for h in &e.hosts {
        let _ = writeln!(
            out,
            "  {} host {} (Ansible variables)",
            sign(h.status),
            h.host
        );
        fields_text(out, &h.vars, "      ");
    }
}

/// `Kustomizations +1 ~2, HelmReleases ~1, other objects +3 -1`.
fn summary_line(e: &EnvDiff) -> String {
    let mut parts = Vec::new();
    for c in [
        Category::Kustomization,
        Category::HelmRelease,
        Category::Crd,
        Category::Object,
    ] {
        let (a, r, ch) = e.counts(c);
        let mut p = Vec::new();
        if a > 0 {
            p.push(format!("+{a}"));
        }
        if r > 0 {
            p.push(format!("-{r}"));
        }
        if ch > 0 {
            p.push(format!("~{ch}"));
        }
        if !p.is_empty() {
            parts.push(format!("{} {}", c.as_str(), p.join(" ")));
        }
    }
    if !e.releases.is_empty() {
        parts.push(format!("{} release values", e.releases.len()));
    }
    if !e.images.is_empty() {
        parts.push(format!("{} images", e.images.len()));
    }
    if !e.hosts.is_empty() {
        parts.push(format!("{} hosts' variables", e.hosts.len()));
    }
    parts.join(", ")
}

/// The report as text.
#[must_use]
pub fn text(report: &Report, sides: &Sides, delta: Option<&FindingsDelta>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "diff {} -> {}", sides.base, sides.head);
    for e in &report.environments_added {
        let _ = writeln!(out, "environment {e}: added (only the head has it)");
    }
    for e in &report.environments_removed {
        let _ = writeln!(out, "environment {e}: removed (only the base has it)");
    }
    for e in &report.environments {
        env_text(&mut out, e);
    }
    let reach = report.reach();
    if !reach.is_empty() {
        let _ = writeln!(out, "reach:");
        for (file, envs) in &reach {
            let _ = writeln!(out, "  {file} -> {}", envs.join(", "));
        }
    }
    if let Some(d) = delta {
        delta_text(&mut out, d);
    }
    out
}

fn finding_text(f: &FindingLine) -> String {
    format!(
        "{} [{}]{}{}: {}",
        f.severity,
        f.rule,
        f.environment
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default(),
        f.location
            .as_deref()
            .map(|l| format!(" {l}"))
            .unwrap_or_default(),
        f.message
    )
}

fn delta_text(out: &mut String, d: &FindingsDelta) {
    let _ = writeln!(
        out,
        "findings: {} new, {} existing, {} fixed",
        d.new.len(),
        d.existing.len(),
        d.fixed
    );
    for f in &d.new {
        let _ = writeln!(out, "  new: {}", finding_text(f));
    }
    for f in &d.existing {
        let _ = writeln!(out, "  existing: {}", finding_text(f));
    }
}

/// Text for a table cell or inline code inside `<details>`: also `<` escaped.
fn md(s: &str) -> String {
    cell(s)
}

fn code(s: &str) -> String {
    fluxgate_diagnostics::render::markdown_code(s)
}

/// The report as a pull-request comment, within a comment's size ([`markdown_within`]).
#[must_use]
pub fn markdown(report: &Report, sides: &Sides, delta: Option<&FindingsDelta>) -> String {
    markdown_within(report, sides, delta, COMMENT_LIMIT, None)
}

/// The report as a pull-request comment of at most `limit` bytes. When the whole does not
/// fit, the table per environment stays, the findings come before the diffs (rows while
/// whole ones fit, the rest counted), an environment whose diff does not fit is one summary
/// line, and the comment points at the HTML report (`report_url` when known). Nothing is cut
/// in the middle.
#[must_use]
pub fn markdown_within(
    report: &Report,
    sides: &Sides,
    delta: Option<&FindingsDelta>,
    limit: usize,
    report_url: Option<&str>,
) -> String {
    let head = markdown_head(report, sides);
    let blocks: Vec<(String, String)> = report
        .environments
        .iter()
        .filter(|e| !e.is_empty())
        .map(|e| {
            let mut body = String::new();
            env_text(&mut body, e);
            let full = format!(
                "<details><summary><b>{}</b>: {}</summary>\n\n```diff\n{}```\n\n</details>\n\n",
                md(&e.name),
                md(&summary_line(e)),
                body.replace("```", "\'\'\'")
            );
            let short = format!(
                "- **{}**: {} (the diff does not fit in a comment)\n",
                md(&e.name),
                md(&summary_line(e))
            );
            (full, short)
        })
        .collect();
    let reach = report.reach();
    let shared: Vec<&(String, Vec<String>)> = reach.iter().filter(|(_, e)| e.len() > 1).collect();
    let mut shared_text = String::new();
    if !shared.is_empty() {
        shared_text.push_str("**Shared changes** (one file, several environments):\n\n");
        for (file, envs) in &shared {
            let _ = writeln!(shared_text, "- {} → {}", code(file), md(&envs.join(", ")));
        }
        shared_text.push('\n');
    }
    let tail = if report.is_empty() {
        "No rendered change.\n"
    } else {
        ""
    };
    let whole_findings = delta.map(|d| findings_md(d, None)).unwrap_or_default();
    let whole = head.len()
        + blocks.iter().map(|b| b.0.len()).sum::<usize>()
        + shared_text.len()
        + whole_findings.len()
        + tail.len();
    if whole <= limit {
        let mut out = head;
        for (full, _) in &blocks {
            out.push_str(full);
        }
        out.push_str(&shared_text);
        out.push_str(&whole_findings);
        out.push_str(tail);
        return out;
    }
    let pointer = format!("\n{}\n", see_report(report_url));
    let shared_short = format!(
        "**Shared changes**: {} file{} change several environments.\n\n",
        shared.len(),
        if shared.len() == 1 { "" } else { "s" }
    );
    let mut budget = Budget::new(limit, head.len() + tail.len() + pointer.len());
    budget.reserve(blocks.iter().map(|b| b.1.len()).sum::<usize>() + shared_short.len());
    let findings = delta
        .map(|d| findings_md(d, Some(&mut budget)))
        .unwrap_or_default();
    let mut out = head;
    let mut any_short = false;
    for (full, short) in &blocks {
        // A block that fits replaces its short line, whose room was set aside.
        if budget_takes_over(&mut budget, full, short) {
            out.push_str(full);
        } else {
            if !any_short {
                out.push('\n');
            }
            any_short = true;
            out.push_str(short);
        }
    }
    if any_short {
        out.push('\n');
    }
    if !shared.is_empty() {
        if budget_takes_over(&mut budget, &shared_text, &shared_short) {
            out.push_str(&shared_text);
        } else {
            out.push_str(&shared_short);
        }
    }
    out.push_str(&findings);
    out.push_str(tail);
    out.push_str(&pointer);
    out
}

/// Takes `full` in place of `short`, whose room is already set aside: only the difference has
/// to fit.
fn budget_takes_over(budget: &mut Budget, full: &str, short: &str) -> bool {
    budget.take_len(full.len().saturating_sub(short.len()))
}

/// The heading, the two sides, environments added or removed, and the table per environment.
fn markdown_head(report: &Report, sides: &Sides) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## fluxgate diff\n");
    let _ = writeln!(out, "{} → {}\n", code(&sides.base), code(&sides.head));
    for e in &report.environments_added {
        let _ = writeln!(out, "- environment **{}** added", md(e));
    }
    for e in &report.environments_removed {
        let _ = writeln!(out, "- environment **{}** removed", md(e));
    }
    if !report.environments_added.is_empty() || !report.environments_removed.is_empty() {
        out.push('\n');
    }
    out.push_str(
        "| environment | Kustomizations | HelmReleases | CRDs | other objects | release values | images | hosts |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for e in &report.environments {
        let cell = |c: Category| {
            let (a, r, ch) = e.counts(c);
            if a + r + ch == 0 {
                "—".to_string()
            } else {
                format!("+{a} −{r} ~{ch}")
            }
        };
        let n = |k: usize| {
            if k == 0 {
                "—".to_string()
            } else {
                k.to_string()
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            md(&e.name),
            cell(Category::Kustomization),
            cell(Category::HelmRelease),
            cell(Category::Crd),
            cell(Category::Object),
            n(e.releases.len()),
            n(e.images.len()),
            n(e.hosts.len())
        );
    }
    out.push('\n');
    out
}

/// The findings delta: new findings open, existing ones collapsed. With a budget, rows are
/// written while whole ones fit and the rest are counted.
fn findings_md(d: &FindingsDelta, mut budget: Option<&mut Budget>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### Findings: {} new, {} existing, {} fixed\n",
        d.new.len(),
        d.existing.len(),
        d.fixed
    );
    if let Some(b) = budget.as_deref_mut() {
        // The heading and both groups' frames are small: always written.
        b.reserve(out.len() + 2 * (FINDINGS_HEADER.len() + 120));
    }
    for (title, group, open) in [("New", &d.new, true), ("Existing", &d.existing, false)] {
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<details{}><summary>{title} ({})</summary>\n\n{FINDINGS_HEADER}",
            if open { " open" } else { "" },
            group.len()
        );
        let mut shown = 0;
        for f in group {
            let row = format!(
                "{}\n",
                findings_row(
                    &f.severity,
                    &f.rule,
                    f.environment.as_deref(),
                    f.location.as_ref().map(|l| l as &dyn std::fmt::Display),
                    &f.message,
                )
            );
            if let Some(b) = budget.as_deref_mut()
                && !b.take(&row)
            {
                break;
            }
            out.push_str(&row);
            shown += 1;
        }
        if shown < group.len() {
            let _ = writeln!(
                out,
                "\n{} more do not fit in a comment.",
                group.len() - shown
            );
        }
        out.push_str("\n</details>\n\n");
    }
    out
}

fn field_json(f: &FieldChange) -> Json {
    json!({
        "path": f.path,
        "status": f.status.as_str(),
        "old": f.old,
        "new": f.new,
        "secret": f.secret,
        "origin": f.origin.as_ref().map(source_json),
        "base_origin": f.base_origin.as_ref().map(source_json),
        "lines": f.lines.iter().map(|(s, l)| format!("{s}{l}")).collect::<Vec<_>>(),
    })
}

fn source_json(s: &crate::Source) -> Json {
    json!({"file": s.file, "line": s.line, "via": s.via})
}

/// The report as JSON (`docs/diff-json.md`).
#[must_use]
pub fn json(report: &Report, sides: &Sides, delta: Option<&FindingsDelta>) -> Json {
    let envs: Vec<Json> = report
        .environments
        .iter()
        .map(|e| {
            json!({
                "name": e.name,
                "changed": !e.is_empty(),
                "objects": e.objects.iter().map(|o| json!({
                    "category": match o.category {
                        Category::Kustomization => "kustomization",
                        Category::HelmRelease => "helmrelease",
                        Category::Crd => "crd",
                        Category::Object => "object",
                    },
                    "apiVersion": o.api_version,
                    "kind": o.kind,
                    "namespace": o.namespace,
                    "name": o.name,
                    "status": o.status.as_str(),
                    "kustomization": o.kustomization,
                    "file": o.file,
                    "fields": o.fields.iter().map(field_json).collect::<Vec<_>>(),
                    "crd": o.crd.as_ref().map(|c| json!({
                        "versions_old": c.versions_old,
                        "versions_new": c.versions_new,
                        "fields_added": c.fields_added,
                        "fields_removed": c.fields_removed,
                    })),
                    "notes": o.notes,
                })).collect::<Vec<_>>(),
                "releases": e.releases.iter().map(|r| json!({
                    "id": r.id,
                    "status": r.status.as_str(),
                    "chart": r.chart,
                    "version": r.version.as_ref().map(|(o, n)| json!({"old": o, "new": n})),
                    "defaults_known": r.defaults_known,
                    "values": r.values.iter().map(field_json).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "images": e.images.iter().map(|i| json!({
                    "object": i.object, "container": i.container, "old": i.old, "new": i.new,
                })).collect::<Vec<_>>(),
                "hosts": e.hosts.iter().map(|h| json!({
                    "host": h.host,
                    "status": h.status.as_str(),
                    "vars": h.vars.iter().map(field_json).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let finding = |f: &FindingLine| {
        json!({"severity": f.severity, "rule": f.rule, "environment": f.environment,
               "location": f.location, "message": f.message})
    };
    json!({
        "base": sides.base,
        "head": sides.head,
        "environments_added": report.environments_added,
        "environments_removed": report.environments_removed,
        "environments": envs,
        "reach": report.reach().iter().map(|(f, e)| json!({"file": f, "environments": e})).collect::<Vec<_>>(),
        "findings": delta.map(|d| json!({
            "new": d.new.iter().map(finding).collect::<Vec<_>>(),
            "existing": d.existing.iter().map(finding).collect::<Vec<_>>(),
            "fixed": d.fixed,
        })),
    })
}

#[cfg(test)]
mod comment_size_tests {
    use super::*;
    use crate::{EnvDiff, ObjectChange};

    /// A Renovate-sized batch: many environments, each with hundreds of changed objects, and
    /// thousands of findings.
    fn big() -> (Report, FindingsDelta) {
        let env = |n: usize| EnvDiff {
            name: format!("env{n}"),
            objects: (0..400)
                .map(|i| ObjectChange {
                    category: Category::Object,
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    namespace: Some(format!("ns{i}")),
                    name: format!("app{i}"),
                    status: Status::Changed,
                    kustomization: "flux-system/apps".into(),
                    file: format!("apps/app{i}/deploy.yaml"),
                    fields: vec![FieldChange {
                        path: "spec.template.spec.containers[0].image".into(),
                        status: Status::Changed,
                        old: Some(format!("ghcr.io/example/app{i}:1.0.0")),
                        new: Some(format!("ghcr.io/example/app{i}:1.1.0")),
                        origin: None,
                        base_origin: None,
                        secret: false,
                        lines: Vec::new(),
                    }],
                    crd: None,
                    notes: Vec::new(),
                })
                .collect(),
            ..EnvDiff::default()
        };
        let report = Report {
            environments_added: Vec::new(),
            environments_removed: Vec::new(),
            environments: (0..4).map(env).collect(),
        };
        let line = |i: usize| FindingLine {
            severity: "error".into(),
            rule: "render".into(),
            environment: Some(format!("env{}", i % 4)),
            location: Some(format!("apps/app{i}/deploy.yaml:3:5")),
            message: format!("finding {i}: {}", "y".repeat(120)),
        };
        let delta = FindingsDelta {
            new: (0..1500).map(line).collect(),
            existing: (1500..2000).map(line).collect(),
            fixed: 3,
        };
        (report, delta)
    }

    #[test]
    fn a_large_batch_fits_a_comment_summarised_per_environment() {
        let (report, delta) = big();
        let sides = Sides {
            base: "main".into(),
            head: "working tree".into(),
        };
        let whole = markdown_within(&report, &sides, Some(&delta), usize::MAX, None);
        assert!(
            whole.len() > COMMENT_LIMIT,
            "not big enough: {}",
            whole.len()
        );
        let m = markdown_within(
            &report,
            &sides,
            Some(&delta),
            COMMENT_LIMIT,
            Some("https://ci.example/run/1/artifacts"),
        );
        assert!(m.len() <= COMMENT_LIMIT, "{}", m.len());
        // The table per environment is whole; every environment is at least summarised.
        for n in 0..4 {
            assert!(
                m.contains(&format!("| env{n} | — | — | — | +0 −0 ~400 |")),
                "{m}"
            );
            assert!(m.contains(&format!("**env{n}**")), "env{n} missing");
        }
        assert!(m.contains("### Findings: 1500 new, 500 existing, 3 fixed"));
        assert!(m.contains("more do not fit in a comment"), "{m}");
        assert!(m.contains("[HTML report](https://ci.example/run/1/artifacts)"));
        // No row is cut: every findings row is whole, and every details block is closed.
        for l in m.lines().filter(|l| l.starts_with("| error")) {
            assert!(l.ends_with(&format!("{} |", "y".repeat(120))), "cut: {l}");
        }
        assert_eq!(
            m.matches("<details").count(),
            m.matches("</details>").count()
        );
        assert_eq!(m.matches("```diff").count() * 2, m.matches("```").count());
        // A small report is unchanged.
        let small = Report {
            environments: vec![EnvDiff {
                name: "prod".into(),
                ..EnvDiff::default()
            }],
            ..report
        };
        let s = markdown(&small, &sides, None);
        assert!(
            !s.contains("does not fit") && !s.contains("HTML report"),
            "{s}"
        );
    }
}
