//! Objects the bootstrap seeds outside Flux (issue 20, class 2): templates a task runner or a
//! script renders and applies before Flux runs (`bootstrap/templates/resources.yaml.j2`
//! through `minijinja-cli ... | kubectl apply -f -`). They are read as the repository keeps
//! them, Jinja or Go template control lines dropped (a loop's body kept once) and each
//! `{{ ... }}` expression standing for an unknown value, so what they create (the Secrets a
//! `valuesFrom` or `substituteFrom` needs) is known present.

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Schema, parse_stream};

use crate::RepoIndex;

/// An object a bootstrap template creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeded {
    pub kind: String,
    /// `None` when the template leaves it to the default or to an expression.
    pub namespace: Option<String>,
    pub name: String,
    /// The document in the template.
    pub loc: Location,
}

/// The suffixes of the templates read: YAML behind a template engine's extension.
const TEMPLATE_SUFFIXES: &[&str] = &[
    ".yaml.j2",
    ".yml.j2",
    ".yaml.jinja",
    ".yaml.jinja2",
    ".yaml.tpl",
    ".yaml.tmpl",
    ".yaml.gotmpl",
];

/// What stands for a `{{ ... }}` expression.
const UNKNOWN: &str = "templated";

/// Every object the bootstrap templates of the repository create: templates whose path has a
/// `bootstrap` folder.
pub(crate) fn seeded(index: &RepoIndex) -> Vec<Seeded> {
    let root = index.root();
    let mut out = Vec::new();
    for path in index.paths_where(root, |n| TEMPLATE_SUFFIXES.iter().any(|s| n.ends_with(s))) {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        if !rel.split('/').any(|c| c.contains("bootstrap")) {
            continue;
        }
        let Ok(file) = index.read(&rel) else {
            continue;
        };
        let text = plain(&file.text);
        for doc in parse_stream(&rel, &text, Schema::Kube).docs {
            let (Some(kind), Some(name)) =
                (doc.str_at(&["kind"]), doc.str_at(&["metadata", "name"]))
            else {
                continue;
            };
            if name.contains(UNKNOWN) {
                continue;
            }
            out.push(Seeded {
                kind: kind.to_string(),
                namespace: doc
                    .str_at(&["metadata", "namespace"])
                    .filter(|n| !n.contains(UNKNOWN))
                    .map(str::to_string),
                name: name.to_string(),
                loc: doc.loc.clone(),
            });
        }
    }
    out
}

/// The template's text with its control lines blanked (kept as empty lines, so line numbers
/// hold) and each expression replaced by [`UNKNOWN`].
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let t = line.trim();
        let control = (t.starts_with("{%") && t.ends_with("%}"))
            || (t.starts_with("{{-") && t.ends_with("}}") && is_go_control(t))
            || (t.starts_with("{{") && t.ends_with("}}") && is_go_control(t))
            || (t.starts_with("{#") && t.ends_with("#}"));
        if !control {
            let mut rest = line;
            while let Some(start) = rest.find("{{") {
                out.push_str(&rest[..start]);
                match rest[start..].find("}}") {
                    Some(end) => {
                        out.push_str(UNKNOWN);
                        rest = &rest[start + end + 2..];
                    }
                    None => {
                        rest = "";
                    }
                }
            }
            out.push_str(rest);
        }
        out.push('\n');
    }
    out
}

/// A Go template action that is a control line (`{{ if ... }}`, `{{- range ... }}`,
/// `{{ end }}`).
fn is_go_control(t: &str) -> bool {
    let inner = t
        .trim_start_matches("{{")
        .trim_start_matches('-')
        .trim_end_matches("}}")
        .trim_end_matches('-')
        .trim();
    [
        "if ",
        "else",
        "end",
        "range ",
        "with ",
        "define ",
        "template ",
        "block ",
    ]
    .iter()
    .any(|k| inner.starts_with(k) || inner == k.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_read_without_their_control_lines() {
        let text = "{% for ns in [\"a\"] %}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ ns }}\n{% endfor %}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: ghcr-auth\n  namespace: flux-system\nstringData:\n  password: {{ op_password }}\n";
        let docs = parse_stream("t", &plain(text), Schema::Kube).docs;
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].str_at(&["metadata", "name"]), Some("ghcr-auth"));
        assert_eq!(docs[1].loc.line, 9);
    }
}
