//! `fluxgate check --format html` (issue 25): the page's structure as a snapshot for the two
//! example repositories, the same bytes on every run, a page for every corpus repository within
//! a bounded size, and the page loaded in headless Chromium (the Debian `chromium` package)
//! with its DOM showing the findings and the graphs, and a screenshot taken.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::workspace;

/// `fluxgate check REPO --format html` (and more arguments): exit code and the page.
fn page(repo: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .arg("check")
        .arg(repo)
        .args(["--format", "html"])
        .args(extra)
        .current_dir(workspace())
        .output()
        .expect("the fluxgate binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The text inside the first `<tag ...>...</tag>` at the start of `s`: tags are word breaks,
/// the common entities decoded, whitespace collapsed.
fn inner_text(s: &str, tag: &str) -> String {
    let close = format!("</{tag}>");
    let body = s.find('>').map_or("", |i| &s[i + 1..]);
    let body = body.find(&close).map_or(body, |j| &body[..j]);
    let mut out = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    tag[at..].split('"').next()
}

/// The page's structure, one line per element that carries it: sections, headings, the
/// `<details>` (and whether open), each finding (severity, rule, message), each table (its
/// rows) and each graph (its nodes in order and its edge count). Coordinates are left out:
/// the snapshot shows what the page says, not where the layout put it.
pub fn outline(html: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        let end = rest.find('>').map_or(rest.len(), |e| e + 1);
        let tag = &rest[..end];
        let name: String = tag[1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '/')
            .collect();
        let pad = "  ".repeat(depth);
        match name.as_str() {
            "section" | "details" | "nav" | "header" => {
                let mut line = format!("{pad}<{name}");
                for a in ["id", "class"] {
                    if let Some(v) = attr(tag, a) {
                        line.push_str(&format!(" {a}={v}"));
                    }
                }
                if tag.contains(" open") {
                    line.push_str(" open");
                }
                out.push_str(&line);
                out.push_str(">\n");
                depth += 1;
            }
            "/section" | "/details" | "/nav" | "/header" => depth = depth.saturating_sub(1),
            "h1" | "h2" | "h3" | "h4" | "summary" => {
                out.push_str(&format!("{pad}{name}: {}\n", inner_text(rest, &name)));
            }
            "p" if attr(tag, "class").is_some_and(|c| c == "hint" || c == "empty") => {
                out.push_str(&format!(
                    "{pad}p.{}: {}\n",
                    attr(tag, "class").unwrap_or_default(),
                    inner_text(rest, "p")
                ));
            }
            "article" => {
                let body = &rest[..rest.find("</article>").unwrap_or(rest.len())];
                let msg = body
                    .find("<p class=\"msg\">")
                    .map(|m| inner_text(&body[m..], "p"))
                    .unwrap_or_default();
                let locs = body.matches("<li>").count();
                out.push_str(&format!(
                    "{pad}finding {} {}: {msg} ({locs} location{})\n",
                    attr(tag, "class")
                        .unwrap_or_default()
                        .trim_start_matches("finding "),
                    attr(tag, "data-rule").unwrap_or_default(),
                    if locs == 1 { "" } else { "s" }
                ));
            }
            "table" => {
                let body = &rest[..rest.find("</table>").unwrap_or(rest.len())];
                let rows = body.matches("<tr").count().saturating_sub(1);
                let first: Vec<String> = body
                    .split("<tr")
                    .skip(2)
                    .take(3)
                    .map(|r| inner_text(&format!("<tr{r}"), "tr"))
                    .collect();
                out.push_str(&format!(
                    "{pad}table.{}: {rows} row{}{}\n",
                    attr(tag, "class").unwrap_or("-"),
                    if rows == 1 { "" } else { "s" },
                    if first.is_empty() {
                        String::new()
                    } else {
                        format!(", first: {}", first.join(" / "))
                    }
                ));
            }
            "svg" => {
                let close = rest.find("</svg>").unwrap_or(rest.len());
                let body = &rest[..close];
                // Each node's id, `!` when it is marked failing.
                let nodes: Vec<String> = body
                    .split("<g class=\"")
                    .skip(1)
                    .map(|g| {
                        let open = format!(" {}", &g[..g.find('>').unwrap_or(g.len())]);
                        let fail = if open.contains(" fail\"") { "!" } else { "" };
                        format!("{}{fail}", attr(&open, "data-id").unwrap_or_default())
                    })
                    .collect();
                out.push_str(&format!(
                    "{pad}svg {}: {} edge{}, nodes: {}\n",
                    attr(tag, "id").unwrap_or_default(),
                    body.matches("class=\"edge").count(),
                    if body.matches("class=\"edge").count() == 1 {
                        ""
                    } else {
                        "s"
                    },
                    nodes.join(", ")
                ));
                rest = &rest[close..];
                continue;
            }
            _ => {}
        }
        rest = &rest[end.min(rest.len())..];
        if rest.is_empty() {
            break;
        }
    }
    out
}

#[test]
fn html_page_structure_of_the_examples() {
    for (example, code) in [("homelab", 0), ("homelab-broken", 1)] {
        let (got, html) = page(Path::new(&format!("examples/{example}")), &[]);
        assert_eq!(got, Some(code), "{example}: the exit code is check's");
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        insta::assert_snapshot!(format!("{example}-html-outline"), outline(&html));
    }
}

#[test]
fn html_page_with_mutants_has_the_kill_matrix() {
    let _alone = super::heavy();
    let (code, html) = page(Path::new("examples/homelab"), &["--mutants", "--jobs", "2"]);
    assert_eq!(code, Some(0));
    assert!(
        html.contains("<h3>Mutation kill matrix</h3>\n<p>Mutation score: "),
        "no score"
    );
    let matrix = &html[html.find("<table class=\"matrix\">").expect("the matrix")..];
    let matrix = &matrix[..matrix.find("</table>").expect("closed")];
    // The rules that killed mutants are columns; a killed cell counts its mutants.
    for rule in ["ha-endpoint", "parity"] {
        assert!(
            matrix.contains(&format!("<th><code>{rule}</code></th>")),
            "{rule}: {matrix}"
        );
    }
    assert!(matrix.contains("<td class=\"killed\">"), "{matrix}");
    let rows = html.matches("<td class=\"killed\">killed</td>").count()
        + html.matches("<td class=\"survived\">survived</td>").count()
        + html
            .matches("<td class=\"equivalent\">equivalent</td>")
            .count();
    assert!(rows >= 20, "{rows} mutants listed");
    // Coverage then counts only checks that bite; without mutants the page says how to add them.
    let (_, plain) = page(Path::new("examples/homelab"), &[]);
    assert!(plain.contains("Mutants did not run"));
    // Mutants for a format that cannot show them is a usage error, not minutes of work.
    let text = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .args(["check", "examples/homelab", "--mutants"])
        .current_dir(workspace())
        .output()
        .expect("the fluxgate binary runs");
    assert_eq!(text.status.code(), Some(2));
}

#[test]
fn html_page_is_deterministic_and_self_contained() {
    let (_, a) = page(Path::new("examples/homelab-broken"), &[]);
    let (_, b) = page(Path::new("examples/homelab-broken"), &[]);
    assert!(a == b, "two runs gave two pages");
    // Nothing is fetched: no external script, style, image, font or frame.
    for bad in [
        "src=\"http",
        "href=\"http",
        "@import",
        "url(http",
        "<link",
        "<iframe",
        "<img",
    ] {
        assert!(!a.contains(bad), "the page loads something: {bad}");
    }
    assert_eq!(a.matches("<script").count(), 1);
    assert!(!a.contains("<script src"));
}

/// The largest page allowed for one repository.
const MAX_PAGE: usize = 24 * 1024 * 1024;

/// The corpus' Flux repositories.
fn corpus_repos(test: &str) -> Option<Vec<PathBuf>> {
    let corpus = fluxgate_testkit::corpus(test)?;
    let mut repos: Vec<PathBuf> = std::fs::read_dir(corpus.join("gitops"))
        .expect("the corpus' gitops folder reads")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    repos.sort();
    Some(repos)
}

#[test]
fn html_page_of_every_corpus_repository_is_bounded_and_the_biggest_loads_in_chromium() {
    let Some(repos) = corpus_repos("html_page_of_every_corpus_repository") else {
        return;
    };
    assert!(repos.len() >= 10, "{repos:?}");
    let _alone = super::heavy();
    let mut biggest: Option<(usize, PathBuf, String)> = None;
    for repo in repos {
        let (code, html) = page(&repo, &[]);
        let json = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
            .arg("check")
            .arg(&repo)
            .args(["--format", "json"])
            .output()
            .expect("the fluxgate binary runs");
        assert_eq!(
            code,
            json.status.code(),
            "{}: exit code differs from check's",
            repo.display()
        );
        if code == Some(2) {
            continue;
        }
        assert!(
            html.len() < MAX_PAGE,
            "{}: {} bytes",
            repo.display(),
            html.len()
        );
        assert!(html.trim_end().ends_with("</html>"), "{}", repo.display());
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("check JSON");
        let findings = v["diagnostics"].as_array().map_or(0, Vec::len);
        assert_eq!(
            html.matches("<article class=\"finding ").count(),
            findings,
            "{}: every finding is on the page",
            repo.display()
        );
        let envs = v["environments"].as_array().map_or(0, Vec::len);
        assert_eq!(html.matches("<section class=\"environment\"").count(), envs);
        // ahinko's storage cluster deploys Cilium as a k3s auto-deploy manifest
        // (`k3s_server_manifests_templates`): a step of its cold bootstrap.
        if repo.ends_with("ahinko__home-ops") {
            assert!(
                html.contains("custom-cilium-helmchart.yaml.j2 (auto-deploy)\""),
                "the auto-deploy manifest is not in the bootstrap graph"
            );
        }
        let nodes = flux_nodes(&html);
        if biggest.as_ref().is_none_or(|b| nodes > b.0) {
            biggest = Some((nodes, repo, html));
        }
    }
    // The biggest (the most Flux objects drawn) loads in headless Chromium like the example.
    let Some(chrome) = chromium("html_page_of_every_corpus_repository (Chromium)") else {
        return;
    };
    let (nodes, repo, html) = biggest.expect("a corpus repository checks");
    assert!(nodes >= 100, "{}: only {nodes} nodes", repo.display());
    let file = scratch("corpus-biggest.html");
    std::fs::write(&file, &html).expect("the page is written");
    let dom = load(&chrome, &file, &scratch("corpus-biggest.png"));
    assert_eq!(
        dom.matches("<article class=\"finding ").count(),
        html.matches("<article class=\"finding ").count()
    );
    assert_eq!(flux_nodes(&dom), nodes, "{}", repo.display());
    // Past a screenful the graph is collapsed by group, each group expandable.
    assert!(dom.contains("<details class=\"group"), "{}", repo.display());
}

/// The Kustomization and HelmRelease boxes of a page.
fn flux_nodes(html: &str) -> usize {
    html.matches("<g class=\"node ks").count() + html.matches("<g class=\"node hr").count()
}

// ---- headless Chromium ----

/// The Chromium binary, or `None` after saying why (a failure under CI).
fn chromium(test: &str) -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser"] {
        let ok = Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(PathBuf::from(name));
        }
    }
    fluxgate_testkit::missing(
        test,
        "chromium is not installed (Debian package `chromium`)",
    );
    None
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir.join(name)
}

/// Flags that let Chromium run headless in a container and as root, with no network at all.
const CHROMIUM_FLAGS: [&str; 7] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--hide-scrollbars",
    "--proxy-server=http://127.0.0.1:9",
];

/// Loads `file` in headless Chromium: its DOM after the page ran, and a screenshot.
fn load(chrome: &Path, file: &Path, shot: &Path) -> String {
    let profile = scratch(&format!(
        "profile-{}",
        file.file_stem().and_then(|s| s.to_str()).unwrap_or("page")
    ));
    let url = format!("file://{}", file.display());
    let out = Command::new(chrome)
        .args(CHROMIUM_FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium --dump-dom: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(shot);
    let s = Command::new(chrome)
        .args(CHROMIUM_FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .args(["--window-size=1280,1800", &url])
        .output()
        .expect("chromium runs");
    assert!(
        s.status.success(),
        "chromium --screenshot: {}",
        String::from_utf8_lossy(&s.stderr)
    );
    let png = std::fs::read(shot).expect("the screenshot was written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn chromium_shows_the_findings_and_graphs_of_the_examples() {
    let Some(chrome) = chromium("chromium_shows_the_findings_and_graphs_of_the_examples") else {
        return;
    };
    for example in ["homelab", "homelab-broken"] {
        let (_, html) = page(Path::new(&format!("examples/{example}")), &[]);
        let file = scratch(&format!("{example}.html"));
        std::fs::write(&file, &html).expect("the page is written");
        let shot = scratch(&format!("{example}.png"));
        let dom = load(&chrome, &file, &shot);
        // The browser parsed the page into the same structure: every finding and every graph
        // node is in its DOM.
        assert_eq!(
            dom.matches("<article class=\"finding ").count(),
            html.matches("<article class=\"finding ").count(),
            "{example}"
        );
        for id in [
            "flux-system/flux-system",
            "kube-system/cilium",
            "flux-system/platform",
        ] {
            assert!(
                dom.contains(&format!("data-id=\"{id}\"")),
                "{example}: node {id} not in the DOM"
            );
        }
        assert!(dom.contains("Cold-bootstrap order") && dom.contains("Failure domains"));
        if example == "homelab-broken" {
            assert!(dom.contains("MERGE GATE: FAIL"));
            for rule in ["ha-endpoint", "rollout-blast-radius", "bootstrap-order"] {
                assert!(
                    dom.contains(&format!("data-rule=\"{rule}\"")),
                    "{rule} not shown"
                );
            }
            assert!(
                dom.contains("class=\"node ks fail\"") || dom.contains("class=\"node hr fail\"")
            );
        } else {
            assert!(dom.contains("MERGE GATE: PASS"));
        }
        // FLUXGATE_UPDATE_SCREENSHOT=1 refreshes the README's pictures.
        if std::env::var_os("FLUXGATE_UPDATE_SCREENSHOT").is_some() {
            let name = if example == "homelab" {
                "html-report.png"
            } else {
                "html-report-findings.png"
            };
            std::fs::copy(&shot, workspace().join("docs").join(name)).expect("docs/ is writable");
        }
    }
}
