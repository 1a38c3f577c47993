//! The page: a [`Report`] as one HTML document with its CSS, SVG and a three-line script
//! inline (the script only opens a collapsed group when its box is clicked; without it the
//! `<details>` still open by hand). Nothing is fetched, nothing depends on the clock: the same
//! report gives the same bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::graph;
use super::{CoverageRow, EnvReport, Finding, Kills, Report};

/// Text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A fragment id from free text (environment and rule names).
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

const STYLE: &str = r#"
:root{--fail:#c62828;--warn:#b26a00;--ok:#2e7d32;--note:#546e7a;--line:#d0d7de;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328}
main{max-width:1200px;margin:0 auto;padding:0 20px 40px}
header.decision{padding:18px 20px;color:#fff}
header.decision.pass{background:var(--ok)} header.decision.fail{background:var(--fail)}
header.decision h1{margin:0;font-size:24px} header.decision p{margin:4px 0 0}
nav{padding:8px 20px;background:var(--bg);border-bottom:1px solid var(--line)}
nav a{margin-right:14px}
h2{border-bottom:1px solid var(--line);padding-bottom:4px;margin-top:32px}
h3{margin-top:24px} h4{margin:12px 0 4px}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
details{margin:6px 0} summary{cursor:pointer}
details.rule>summary{font-weight:600;padding:4px 0}
article.finding{border-left:4px solid var(--note);background:var(--bg);padding:6px 10px;margin:6px 0}
article.finding.error{border-color:var(--fail)} article.finding.warning{border-color:var(--warn)}
.sev{font-weight:700;text-transform:uppercase;font-size:11px;margin-right:6px}
.error .sev{color:var(--fail)} .warning .sev{color:var(--warn)} .note .sev{color:var(--note)}
ul.locs{list-style:none;padding:0;margin:4px 0}
ul.locs pre{margin:2px 0 6px;padding:4px 8px;background:#fff;border:1px solid var(--line);overflow-x:auto}
.ln{color:#8c959f;user-select:none}
.label{color:var(--note)} .help{color:var(--ok)} .reqs{color:var(--note)}
table{border-collapse:collapse;margin:6px 0}
table.glance{margin-top:18px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--bg)}
tr.over td,td.gap{color:var(--fail);font-weight:600} td.covered{color:var(--ok)} td.deferred{color:var(--warn)}
td.survived{color:var(--fail);font-weight:600} td.killed{color:var(--ok)}
.graph{overflow:auto;border:1px solid var(--line);background:#fff;margin:6px 0;max-height:720px}
.graph text{font:12px system-ui,sans-serif;text-anchor:middle;fill:#1f2328;pointer-events:none}
.node rect{fill:#e8f0fe;stroke:#5b7fc7;stroke-width:1.2}
.node.hr rect{fill:#eef7ee;stroke:#4f9a56} .node.play rect{fill:#fff8e1;stroke:#b58a00}
.node.auto rect{fill:#f3e5f5;stroke:#8e5ba8} .node.helmfile rect{fill:#e0f7fa;stroke:#00838f}
.node.flux rect{fill:#e3f2fd;stroke:#1565c0;stroke-width:2} .node.group rect{fill:#f6f8fa;stroke:#57606a}
.node.fail rect{fill:#fdecea;stroke:var(--fail);stroke-width:2.5}
.node:hover rect{stroke-width:3}
.edge{fill:none;stroke:#57606a;stroke-width:1.2} .edge.declares{stroke:#afb8c1;stroke-dasharray:4 3}
.arrowhead{fill:#57606a}
.legend span{display:inline-block;margin-right:12px} .legend i{display:inline-block;width:12px;height:12px;border:1.5px solid;margin-right:4px;vertical-align:-2px}
details.group.fail>summary{color:var(--fail);font-weight:600}
.hint,.empty{color:var(--note)}
footer{color:var(--note);margin-top:40px;font-size:12px}
"#;

/// Opens the `<details>` a clicked group box (or any `#` link) points at.
const SCRIPT: &str = r"
document.addEventListener('click',function(e){var a=e.target.closest&&e.target.closest('a[href^=\x22#\x22]');
if(!a)return;var d=document.getElementById(a.getAttribute('href').slice(1));
if(d&&d.tagName==='DETAILS'){d.open=true;}});
";

/// The whole page.
#[must_use]
pub fn page(r: &Report, version: &str) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let verdict = if r.passed { "PASS" } else { "FAIL" };
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>fluxgate: MERGE GATE {verdict}</title>\n<style>{STYLE}</style>\n</head>\n<body>"
    );
    let _ = writeln!(
        out,
        "<header class=\"decision {}\" id=\"decision\"><h1>MERGE GATE: {verdict}</h1>\
         <p>{} error{}, {} warning{}, {} note{} in {} environment{} ({})</p>",
        verdict.to_ascii_lowercase(),
        r.errors,
        plural(r.errors),
        r.warnings,
        plural(r.warnings),
        r.notes,
        plural(r.notes),
        r.environments.len(),
        plural(r.environments.len()),
        esc(&r.environments.join(", "))
    );
    let layers: Vec<String> = r
        .layers
        .iter()
        .map(|(k, v)| format!("{} {}", esc(k), esc(v)))
        .collect();
    let _ = writeln!(out, "<p>layers: {}</p>", layers.join(", "));
    if let Some(c) = &r.conformance {
        let _ = writeln!(out, "<p>{}</p>", esc(c));
    }
    out.push_str("</header>\n<nav><a href=\"#findings\">Findings</a>");
    for e in &r.envs {
        let _ = write!(
            out,
            "<a href=\"#env-{}\">{}</a>",
            slug(&e.name),
            esc(&e.name)
        );
    }
    out.push_str("<a href=\"#coverage\">Coverage</a></nav>\n<main>\n");
    glance(&mut out, r);
    findings(&mut out, &r.findings);
    for e in &r.envs {
        environment(&mut out, e);
    }
    coverage(&mut out, r.coverage.as_deref(), r.kills.as_ref());
    let _ = writeln!(
        out,
        "<footer>fluxgate {} · a self-contained page: no script or style is fetched.</footer>\n\
         </main>\n<script>{SCRIPT}</script>\n</body>\n</html>",
        esc(version)
    );
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// One row per environment: its findings, its Flux objects, its nodes and HA endpoint.
fn glance(out: &mut String, r: &Report) {
    if r.envs.is_empty() {
        return;
    }
    out.push_str(
        "<table class=\"glance\"><tr><th>environment</th><th>errors</th><th>warnings</th>\
         <th>Kustomizations</th><th>HelmReleases</th><th>nodes</th><th>HA endpoint</th></tr>",
    );
    for e in &r.envs {
        let mine = |sev: &str| {
            r.findings
                .iter()
                .filter(|f| f.severity == sev && f.environments.contains(&e.name))
                .count()
        };
        let ks = e
            .flux
            .nodes
            .iter()
            .filter(|n| n.kind == Some(super::NodeKind::Kustomization))
            .count();
        let errors = mine("error");
        let _ = write!(
            out,
            "<tr><td><a href=\"#env-{}\">{}</a></td><td{}>{errors}</td><td>{}</td><td>{ks}</td>\
             <td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            slug(&e.name),
            esc(&e.name),
            if errors > 0 { " class=\"gap\"" } else { "" },
            mine("warning"),
            e.flux.nodes.len() - ks,
            e.domains
                .node_count
                .as_ref()
                .map_or_else(|| "unknown".to_string(), |(n, _)| n.to_string()),
            esc(&e
                .domains
                .vips
                .iter()
                .map(|v| v.0.as_str())
                .collect::<Vec<_>>()
                .join(", "))
        );
    }
    out.push_str("</table>\n");
}

/// Findings grouped by rule, then by environment; a rule with an error or warning is open.
fn findings(out: &mut String, list: &[Finding]) {
    let _ = writeln!(out, "<section id=\"findings\">\n<h2>Findings</h2>");
    if list.is_empty() {
        out.push_str("<p class=\"empty\">No findings.</p>\n</section>\n");
        return;
    }
    let mut by_rule: BTreeMap<&str, BTreeMap<String, Vec<&Finding>>> = BTreeMap::new();
    for f in list {
        let env = if f.environments.is_empty() {
            "repository".to_string()
        } else {
            f.environments.join(", ")
        };
        by_rule
            .entry(f.rule.as_str())
            .or_default()
            .entry(env)
            .or_default()
            .push(f);
    }
    for (rule, envs) in &by_rule {
        let all: Vec<&&Finding> = envs.values().flatten().collect();
        let count = |s: &str| all.iter().filter(|f| f.severity == s).count();
        let (e, w, n) = (count("error"), count("warning"), count("note"));
        let mut parts = Vec::new();
        for (k, label) in [(e, "error"), (w, "warning"), (n, "note")] {
            if k > 0 {
                parts.push(format!("{k} {label}{}", plural(k)));
            }
        }
        let _ = writeln!(
            out,
            "<details class=\"rule\" id=\"rule-{}\"{}><summary><code>{}</code> — {}</summary>",
            slug(rule),
            if e + w > 0 { " open" } else { "" },
            esc(rule),
            parts.join(", ")
        );
        for (env, fs) in envs {
            let _ = writeln!(out, "<h4>{}</h4>", esc(env));
            for f in fs {
                finding(out, f);
            }
        }
        out.push_str("</details>\n");
    }
    out.push_str("</section>\n");
}

fn finding(out: &mut String, f: &Finding) {
    let _ = writeln!(
        out,
        "<article class=\"finding {}\" data-rule=\"{}\"><p class=\"msg\"><span class=\"sev\">{}</span>{}</p>",
        esc(&f.severity),
        esc(&f.rule),
        esc(&f.severity),
        esc(&f.message)
    );
    if !f.locations.is_empty() {
        out.push_str("<ul class=\"locs\">");
        for l in &f.locations {
            let at = if l.line == 0 {
                l.file.clone()
            } else {
                format!("{}:{}:{}", l.file, l.line, l.column)
            };
            let _ = write!(out, "<li><code>{}</code>", esc(&at));
            if let Some(label) = &l.label {
                let _ = write!(out, " <span class=\"label\">{}</span>", esc(label));
            }
            if let Some(src) = &l.source {
                let _ = write!(
                    out,
                    "<pre><span class=\"ln\">{:>4} | </span>{}</pre>",
                    l.line,
                    esc(src)
                );
            }
            out.push_str("</li>");
        }
        out.push_str("</ul>\n");
    }
    for n in &f.notes {
        let _ = writeln!(out, "<p class=\"label\">note: {}</p>", esc(n));
    }
    if let Some(h) = &f.help {
        let _ = writeln!(out, "<p class=\"help\">help: {}</p>", esc(h));
    }
    if !f.requirements.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"reqs\">requirements: {}</p>",
            esc(&f.requirements.join(", "))
        );
    }
    out.push_str("</article>\n");
}

const LEGEND_FLUX: &str = "<p class=\"legend\"><span><i style=\"background:#e8f0fe;border-color:#5b7fc7\"></i>Kustomization</span>\
<span><i style=\"background:#eef7ee;border-color:#4f9a56\"></i>HelmRelease</span>\
<span><i style=\"background:#fdecea;border-color:#c62828\"></i>with findings</span>\
<span>solid arrow: dependsOn (dependency above)</span><span>dashed: declared by</span></p>\n";

const LEGEND_BOOT: &str = "<p class=\"legend\"><span><i style=\"background:#fff8e1;border-color:#b58a00\"></i>Ansible play</span>\
<span><i style=\"background:#f3e5f5;border-color:#8e5ba8\"></i>k3s auto-deploy manifest</span>\
<span><i style=\"background:#e0f7fa;border-color:#00838f\"></i>helmfile release</span>\
<span><i style=\"background:#e3f2fd;border-color:#1565c0\"></i>Flux</span></p>\n";

fn environment(out: &mut String, e: &EnvReport) {
    let anchor = format!("env-{}", slug(&e.name));
    let _ = writeln!(
        out,
        "<section class=\"environment\" id=\"{anchor}\">\n<h2>Environment {}</h2>",
        esc(&e.name)
    );
    let ks = e
        .flux
        .nodes
        .iter()
        .filter(|n| n.kind == Some(super::NodeKind::Kustomization))
        .count();
    let _ = writeln!(
        out,
        "<h3>Flux dependsOn graph</h3>\n<p>{ks} Kustomization{}, {} HelmRelease{}.</p>",
        plural(ks),
        e.flux.nodes.len() - ks,
        plural(e.flux.nodes.len() - ks)
    );
    out.push_str(LEGEND_FLUX);
    graph::draw(out, &e.flux, &format!("{anchor}-flux"));
    out.push_str("<h3>Cold-bootstrap order</h3>\n");
    out.push_str(LEGEND_BOOT);
    graph::draw(out, &e.bootstrap, &format!("{anchor}-boot"));
    domains(out, e);
    images(out, e);
    out.push_str("</section>\n");
}

fn domains(out: &mut String, e: &EnvReport) {
    let d = &e.domains;
    out.push_str("<h3>Failure domains</h3>\n");
    match &d.node_count {
        Some((n, from)) => {
            let _ = writeln!(
                out,
                "<p>{n} node{} (from {}): a critical DaemonSet may replace at most {} at once.</p>",
                plural(*n),
                esc(from),
                d.limit.unwrap_or(1)
            );
        }
        None => out.push_str(
            "<p class=\"empty\">Node count unknown (no Ansible inventory, no <code>nodes:</code>).</p>\n",
        ),
    }
    if !d.hosts.is_empty() {
        out.push_str("<table class=\"hosts\"><tr><th>node</th><th>address</th><th>role</th></tr>");
        for h in &d.hosts {
            let _ = write!(
                out,
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                esc(&h.name),
                esc(&h.address),
                esc(&h.role)
            );
        }
        out.push_str("</table>\n");
    }
    if d.vips.is_empty() {
        out.push_str("<p class=\"empty\">No HA endpoint (VIP) found.</p>\n");
    } else {
        out.push_str("<table class=\"vips\"><tr><th>HA endpoint</th><th>found in</th></tr>");
        for (host, source) in &d.vips {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td></tr>",
                esc(host),
                esc(source)
            );
        }
        out.push_str("</table>\n");
    }
    if d.daemonsets.is_empty() {
        out.push_str("<p class=\"empty\">No critical DaemonSet found.</p>\n");
    } else {
        out.push_str(
            "<table class=\"daemonsets\"><tr><th>critical DaemonSet</th><th>from</th>\
             <th>maxUnavailable</th><th>nodes at once</th></tr>",
        );
        for ds in &d.daemonsets {
            let _ = write!(
                out,
                "<tr{}><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                if ds.over { " class=\"over\"" } else { "" },
                esc(&ds.id),
                esc(&ds.source),
                esc(&ds.max_unavailable),
                ds.at_once
                    .map_or_else(|| "unknown".to_string(), |a| a.to_string())
            );
        }
        out.push_str("</table>\n");
    }
}

fn images(out: &mut String, e: &EnvReport) {
    out.push_str("<h3>Images and charts</h3>\n");
    let _ = writeln!(
        out,
        "<details class=\"charts\"{}><summary>{} chart{} of HelmReleases</summary>",
        if e.charts.len() <= 20 { " open" } else { "" },
        e.charts.len(),
        plural(e.charts.len())
    );
    if !e.charts.is_empty() {
        out.push_str("<table><tr><th>HelmRelease</th><th>chart</th><th>version</th><th>in the chart cache</th></tr>");
        for c in &e.charts {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                esc(&c.release),
                esc(&c.chart),
                esc(&c.version),
                if c.cached { "yes" } else { "no" }
            );
        }
        out.push_str("</table>");
    }
    out.push_str("</details>\n");
    let _ = writeln!(
        out,
        "<details class=\"images\"{}><summary>{} image{} of rendered workloads</summary>",
        if e.images.len() <= 20 { " open" } else { "" },
        e.images.len(),
        plural(e.images.len())
    );
    if !e.images.is_empty() {
        out.push_str("<table><tr><th>image</th><th>used by</th></tr>");
        for i in &e.images {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td></tr>",
                esc(&i.image),
                esc(&i.used_by.join(", "))
            );
        }
        out.push_str("</table>");
    }
    out.push_str("</details>\n");
}

fn coverage(out: &mut String, rows: Option<&[CoverageRow]>, kills: Option<&Kills>) {
    out.push_str("<section id=\"coverage\">\n<h2>Requirement coverage</h2>\n");
    match rows {
        None => out.push_str(
            "<p class=\"empty\">No requirements file (<code>requirements:</code> in fluxgate.yaml).</p>\n",
        ),
        Some(rows) => {
            out.push_str(
                "<table class=\"coverage\"><tr><th>requirement</th><th>title</th>\
                 <th>safety-critical</th><th>status</th><th>checks</th></tr>",
            );
            for r in rows {
                let why = r
                    .why
                    .as_ref()
                    .map(|w| format!("<br><span class=\"label\">{}</span>", esc(w)))
                    .unwrap_or_default();
                let _ = write!(
                    out,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"{}\">{}{why}</td><td>{}</td></tr>",
                    esc(&r.id),
                    esc(&r.title),
                    if r.safety_critical { "yes" } else { "" },
                    esc(&r.status),
                    esc(&r.status),
                    esc(&r.checks.join(", "))
                );
            }
            out.push_str("</table>\n");
        }
    }
    out.push_str("<h3>Mutation kill matrix</h3>\n");
    match kills {
        None => out.push_str(
            "<p class=\"empty\">Mutants did not run: <code>fluxgate check --format html --mutants</code> adds them.</p>\n",
        ),
        Some(k) => {
            let _ = writeln!(out, "<p>{}</p>", esc(&k.score));
            out.push_str("<table class=\"matrix\"><tr><th>operator \\ killed by</th>");
            for r in &k.rules {
                let _ = write!(out, "<th><code>{}</code></th>", esc(r));
            }
            out.push_str("<th>survived</th><th>equivalent</th><th>skipped</th></tr>");
            for (op, by_rule, rest) in &k.matrix {
                let _ = write!(out, "<tr><td>{}</td>", esc(op));
                for n in by_rule {
                    if *n == 0 {
                        out.push_str("<td></td>");
                    } else {
                        let _ = write!(out, "<td class=\"killed\">{n}</td>");
                    }
                }
                let _ = write!(
                    out,
                    "<td{}>{}</td><td>{}</td><td>{}</td></tr>",
                    if rest[0] > 0 { " class=\"survived\"" } else { "" },
                    rest[0],
                    rest[1],
                    rest[2]
                );
            }
            out.push_str("</table>\n<details class=\"mutants\"><summary>Every mutant</summary>\n");
            out.push_str(
                "<table class=\"kills\"><tr><th>where</th><th>operator</th><th>what</th>\
                 <th>status</th><th>killed by</th></tr>",
            );
            for m in &k.mutants {
                let _ = write!(
                    out,
                    "<tr><td><code>{}:{}</code></td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
                    esc(&m.file),
                    m.line,
                    esc(&m.operator),
                    esc(&m.what),
                    esc(&m.status),
                    esc(&m.status),
                    esc(&m.killed_by.join(", "))
                );
            }
            out.push_str("</table>\n</details>\n");
        }
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Finding, Shown};

    #[test]
    fn repository_text_is_escaped_everywhere() {
        let r = Report {
            passed: false,
            environments: vec!["prod<script>".into()],
            errors: 1,
            findings: vec![Finding {
                rule: "ha-endpoint".into(),
                severity: "error".into(),
                environments: vec!["prod<script>".into()],
                message: "dials <img src=x onerror=alert(1)>".into(),
                locations: vec![Shown {
                    file: "a\"b.yaml".into(),
                    line: 3,
                    column: 1,
                    label: None,
                    source: Some("k: '<b>'".into()),
                }],
                ..Finding::default()
            }],
            ..Report::default()
        };
        let p = page(&r, "0.0.0");
        assert!(!p.contains("<img"), "{p}");
        assert!(!p.contains("prod<script>"));
        assert!(p.contains("dials &lt;img src=x onerror=alert(1)&gt;"));
        assert!(p.contains("a&quot;b.yaml:3:1"));
        assert!(p.contains("MERGE GATE: FAIL"));
        // Only the page's own script: no external resource of any kind.
        assert_eq!(p.matches("<script").count(), 1);
        assert!(!p.contains("src=\"http") && !p.contains("href=\"http"));
    }
}
