//! A [`Report`] printed: text for a terminal, markdown for a pull-request comment (a summary
//! table per environment, the details collapsed, the findings delta), JSON in the shape
//! documented in `docs/diff-json.md`.

use std::fmt::Write as _;

use fluxgate_diagnostics::render::{FINDINGS_HEADER, cell, findings_row};
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

/// The report as a pull-request comment.
#[must_use]
pub fn markdown(report: &Report, sides: &Sides, delta: Option<&FindingsDelta>) -> String {
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
    for e in report.environments.iter().filter(|e| !e.is_empty()) {
        let mut body = String::new();
        env_text(&mut body, e);
        let _ = writeln!(
            out,
            "<details><summary><b>{}</b>: {}</summary>\n\n```diff\n{}```\n\n</details>\n",
            md(&e.name),
            md(&summary_line(e)),
            body.replace("```", "'''")
        );
    }
    let reach = report.reach();
    let shared: Vec<&(String, Vec<String>)> = reach.iter().filter(|(_, e)| e.len() > 1).collect();
    if !shared.is_empty() {
        out.push_str("**Shared changes** (one file, several environments):\n\n");
        for (file, envs) in shared {
            let _ = writeln!(out, "- {} → {}", code(file), md(&envs.join(", ")));
        }
        out.push('\n');
    }
    if let Some(d) = delta {
        let _ = writeln!(
            out,
            "### Findings: {} new, {} existing, {} fixed\n",
            d.new.len(),
            d.existing.len(),
            d.fixed
        );
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
            for f in group {
                let _ = writeln!(
                    out,
                    "{}",
                    findings_row(
                        &f.severity,
                        &f.rule,
                        f.environment.as_deref(),
                        f.location.as_ref().map(|l| l as &dyn std::fmt::Display),
                        &f.message,
                    )
                );
            }
            out.push_str("\n</details>\n\n");
        }
    }
    if report.is_empty() {
        out.push_str("No rendered change.\n");
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
