//! The requirements registry (`requirements:` of fluxgate.yaml: `[{id, title,
//! safety_critical}]`) and the files that serve each requirement, read from the `Serves:` and
//! `Refs` comments at the top of a file (`# Serves: R-NET-01..07, R-DNS-01`; a range expands
//! to every id between its ends, zero-padding kept).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Schema, parse_one};
use regex::Regex;

/// One requirement of the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub id: String,
    pub title: String,
    pub safety_critical: bool,
    pub loc: Location,
}

/// What is wrong with a requirements file, each at its line: the registry is still used as
/// far as it could be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryProblem {
    pub message: String,
    pub loc: Location,
}

/// The most ids one range may expand to: a typo such as `R-NET-01..9999` is reported, not
/// expanded into thousands of requirements.
pub const MAX_RANGE: u64 = 1000;

/// Parses a requirements file: a list of `{id, title, safety_critical}`.
#[must_use]
pub fn parse_registry(file: &str, text: &str) -> (Vec<Requirement>, Vec<RegistryProblem>) {
    let mut out: Vec<Requirement> = Vec::new();
    let mut problems = Vec::new();
    let (root, diags) = parse_one(file, text, Schema::Kube);
    for d in diags {
        problems.push(RegistryProblem {
            message: d.message.clone(),
            loc: d.location.clone().unwrap_or_else(|| Location::file(file)),
        });
    }
    let Some(root) = root else {
        if problems.is_empty() {
            problems.push(RegistryProblem {
                message: "the requirements file is empty: expected a list of {id, title, safety_critical}".into(),
                loc: Location::file(file),
            });
        }
        return (out, problems);
    };
    let Some(items) = root.as_seq() else {
        problems.push(RegistryProblem {
            message: "the requirements file must be a list of {id, title, safety_critical}".into(),
            loc: root.loc.clone(),
        });
        return (out, problems);
    };
    for item in items {
        let Some(map) = item.as_map() else {
            problems.push(RegistryProblem {
                message: "a requirement must be a mapping {id, title, safety_critical}".into(),
                loc: item.loc.clone(),
            });
            continue;
        };
        for (k, v) in map {
            if !matches!(k.as_str(), "id" | "title" | "safety_critical") {
                problems.push(RegistryProblem {
                    message: format!(
                        "unknown key `{k}` in a requirement; known keys: id, title, safety_critical"
                    ),
                    loc: v.loc.clone(),
                });
            }
        }
        let Some(id) = item
            .get("id")
            .and_then(fluxgate_yaml::Node::scalar_text)
            .filter(|s| !s.is_empty())
        else {
            problems.push(RegistryProblem {
                message: "a requirement without an `id`".into(),
                loc: item.loc.clone(),
            });
            continue;
        };
        let safety_critical = match item.get("safety_critical") {
            None => false,
            Some(v) => v.as_bool().unwrap_or_else(|| {
                problems.push(RegistryProblem {
                    message: format!("`safety_critical` of {id} must be true or false"),
                    loc: v.loc.clone(),
                });
                // Fail closed: a requirement whose criticality cannot be read is treated as critical.
                true
            }),
        };
        if let Some(first) = out.iter().find(|r| r.id == id) {
            problems.push(RegistryProblem {
                message: format!(
                    "requirement {id} is listed twice (first at line {})",
                    first.loc.line
                ),
                loc: item.loc.clone(),
            });
            continue;
        }
        out.push(Requirement {
            title: item
                .get("title")
                .and_then(fluxgate_yaml::Node::scalar_text)
                .unwrap_or_default(),
            safety_critical,
            loc: item.loc.clone(),
            id,
        });
    }
    (out, problems)
}

static ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b((?:[A-Z][A-Z0-9]*-)+)(\d+)(?:\s*\.\.\s*((?:[A-Z][A-Z0-9]*-)+)?(\d+))?\b")
        .expect("static regex")
});

/// The requirement ids named in `text` (`R-NET-01..03, R-DNS-01`), ranges expanded, in
/// order, each once; and the ranges that could not be expanded.
#[must_use]
pub fn ids_in(text: &str) -> (Vec<String>, Vec<String>) {
    let mut out: Vec<String> = Vec::new();
    let mut bad = Vec::new();
    let mut push = |id: String| {
        if !out.contains(&id) {
            out.push(id);
        }
    };
    for c in ID.captures_iter(text) {
        let prefix = &c[1];
        let from = &c[2];
        let Some(to) = c.get(4) else {
            push(format!("{prefix}{from}"));
            continue;
        };
        let same_prefix = c.get(3).is_none_or(|p| p.as_str() == prefix);
        let (a, b) = (from.parse::<u64>(), to.as_str().parse::<u64>());
        match (a, b) {
            (Ok(a), Ok(b)) if same_prefix && a <= b && b - a < MAX_RANGE => {
                let width = from.len();
                for n in a..=b {
                    push(format!("{prefix}{n:0width$}"));
                }
            }
            _ => bad.push(c[0].to_string()),
        }
    }
    (out, bad)
}

/// The ids a file's header says it serves: `Serves:` and `Refs` lines among the comments at
/// its top (before the first line that is not a comment, a blank or a document marker;
/// `#`, `//`, `--` and `;` comments, and Jinja `{# #}` blocks).
#[must_use]
pub fn header_ids(text: &str) -> (Vec<String>, Vec<String>) {
    let mut ids = Vec::new();
    let mut bad = Vec::new();
    let mut in_jinja = false;
    for line in text.lines().take(200) {
        let t = line.trim();
        let comment = if in_jinja {
            if t.contains("#}") {
                in_jinja = false;
            }
            Some(t.trim_end_matches("#}"))
        } else if let Some(rest) = t.strip_prefix("{#") {
            in_jinja = !rest.contains("#}");
            Some(rest.trim_end_matches("#}"))
        } else if t.is_empty() || t == "---" {
            continue;
        } else {
            ["#", "//", "--", ";"]
                .iter()
                .find_map(|p| t.strip_prefix(p))
        };
        let Some(comment) = comment else {
            break;
        };
        let c = comment.trim_start_matches(['#', '/', '-', ';', ' ']);
        for marker in ["Serves:", "Serves ", "Refs:", "Refs "] {
            if let Some(at) = c.find(marker) {
                let (found, broken) = ids_in(&c[at + marker.len()..]);
                for id in found {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                bad.extend(broken);
                break;
            }
        }
    }
    (ids, bad)
}

/// Requirement id -> the files (relative paths, sorted) whose header serves it.
pub type Serving = BTreeMap<String, Vec<String>>;

/// The serving map of `files` (relative path, text).
pub fn serving<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> (Serving, Vec<(String, String)>) {
    let mut out: Serving = BTreeMap::new();
    let mut bad = Vec::new();
    for (path, text) in files {
        let (ids, broken) = header_ids(text);
        for id in ids {
            let files = out.entry(id).or_default();
            if !files.iter().any(|f| f == path) {
                files.push(path.to_string());
            }
        }
        bad.extend(broken.into_iter().map(|b| (path.to_string(), b)));
    }
    for files in out.values_mut() {
        files.sort();
    }
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand_with_their_padding() {
        let (ids, bad) = ids_in("R-NET-01..03, R-DNS-01, R-SEC-9..R-SEC-10, R-X-5..2");
        assert_eq!(
            ids,
            [
                "R-NET-01", "R-NET-02", "R-NET-03", "R-DNS-01", "R-SEC-9", "R-SEC-10"
            ]
        );
        assert_eq!(bad, ["R-X-5..2"]);
        let (_, bad) = ids_in("R-NET-01..99999");
        assert_eq!(bad.len(), 1);
    }

    #[test]
    fn only_the_header_comments_count() {
        let text = "---\n# Cilium\n# Serves: R-NET-01..02, R-DNS-01. Owner: WS-NET\napiVersion: v1\n# Serves: R-LATE-01\n";
        assert_eq!(header_ids(text).0, ["R-NET-01", "R-NET-02", "R-DNS-01"]);
        let j2 = "{#\n  Values for the bootstrap.\n  Refs R-PLAT-01, R-NET-01.\n#}\nkey: 1\n";
        assert_eq!(header_ids(j2).0, ["R-PLAT-01", "R-NET-01"]);
        assert!(header_ids("a: 1\n# Serves: R-A-01\n").0.is_empty());
    }

    #[test]
    fn the_registry_reports_what_it_cannot_read() {
        let (reqs, problems) = parse_registry(
            "spec/requirements.yaml",
            "- id: R-A-01\n  title: A\n  safety_critical: true\n- id: R-A-01\n- title: no id\n- id: R-B-01\n  safety_critical: maybe\n  owner: x\n",
        );
        assert_eq!(
            reqs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["R-A-01", "R-B-01"]
        );
        assert!(
            reqs[1].safety_critical,
            "an unreadable criticality counts as critical"
        );
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        let (_, problems) = parse_registry("r.yaml", "id: R-A-01\n");
        assert!(problems[0].message.contains("must be a list"));
    }
}
