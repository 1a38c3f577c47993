//! A classic Helm repository's `index.yaml`, read without trusting it: a size bound before
//! parsing, the YAML parser's own node budget (aliases cannot multiply a small file into a
//! huge tree) and depth bound, and a depth check of our own far below it (a real index is
//! six levels deep).

use fluxgate_yaml::{Node, Schema};

use crate::error::Error;

/// The largest index.yaml read (the largest public repositories' indexes are tens of MiB).
pub const MAX_INDEX_BYTES: u64 = 128 * 1024 * 1024;
/// Nesting deeper than this is not an index.
pub const MAX_INDEX_DEPTH: usize = 32;

/// One chart version of an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub version: String,
    pub urls: Vec<String>,
    /// The archive's sha256 as the index states it, when it does.
    pub digest: Option<crate::Digest>,
}

/// The versions of every chart of an index.
#[derive(Debug, Default)]
pub struct Index {
    charts: std::collections::BTreeMap<String, Vec<IndexEntry>>,
}

impl Index {
    /// Parses the text of an index.yaml; `source` names the repository in errors.
    pub fn parse(text: &str, source: &str) -> Result<Index, Error> {
        let refuse = |message: String| Error::Index {
            source_url: crate::display_url(source),
            message,
        };
        if text.len() as u64 > MAX_INDEX_BYTES {
            return Err(refuse(format!("larger than {MAX_INDEX_BYTES} bytes")));
        }
        let stream = fluxgate_yaml::parse_stream("index.yaml", text, Schema::Kube);
        if stream.has_errors() {
            let why = stream.diagnostics.first().map(|d| d.message.clone());
            return Err(refuse(why.unwrap_or_else(|| "not valid YAML".into())));
        }
        let [doc] = stream.docs.as_slice() else {
            return Err(refuse(format!(
                "expected one YAML document, found {}",
                stream.docs.len()
            )));
        };
        if depth(doc, 0) > MAX_INDEX_DEPTH {
            return Err(refuse(format!(
                "nested deeper than {MAX_INDEX_DEPTH} levels"
            )));
        }
        let entries = doc
            .get("entries")
            .and_then(Node::as_map)
            .ok_or_else(|| refuse("no `entries` mapping".into()))?;
        let mut charts = std::collections::BTreeMap::new();
        for (name, versions) in entries {
            let list: Vec<IndexEntry> = versions
                .as_seq()
                .unwrap_or_default()
                .iter()
                .filter_map(|v| {
                    Some(IndexEntry {
                        version: v.get("version").and_then(Node::scalar_text)?,
                        urls: v
                            .get("urls")
                            .and_then(Node::as_seq)
                            .unwrap_or_default()
                            .iter()
                            .filter_map(|u| u.as_str().map(str::to_string))
                            .collect(),
                        digest: v
                            .get("digest")
                            .and_then(Node::as_str)
                            .and_then(crate::Digest::parse),
                    })
                })
                .collect();
            charts.insert(name.clone(), list);
        }
        Ok(Index { charts })
    }

    /// The versions of `chart`, `None` when the index does not list it.
    #[must_use]
    pub fn versions(&self, chart: &str) -> Option<&[IndexEntry]> {
        self.charts.get(chart).map(Vec::as_slice)
    }
}

/// The nesting depth of `node`, stopping early past the bound.
fn depth(node: &Node, at: usize) -> usize {
    if at > MAX_INDEX_DEPTH {
        return at;
    }
    let children = node
        .as_seq()
        .map(|s| s.iter().map(|n| depth(n, at + 1)).max())
        .or_else(|| {
            node.as_map()
                .map(|m| m.iter().map(|(_, v)| depth(v, at + 1)).max())
        });
    children.flatten().unwrap_or(at)
}

/// The archive URL of an index entry: absolute as written, else relative to the repository.
#[must_use]
pub fn chart_url(repo_url: &str, url: &str) -> String {
    if url.contains("://") {
        return url.to_string();
    }
    let base = repo_url.trim_end_matches('/');
    if let Some(abs) = url.strip_prefix('/') {
        // Relative to the host.
        let after_scheme = base.find("://").map_or(0, |i| i + 3);
        let host_end = base[after_scheme..]
            .find('/')
            .map_or(base.len(), |i| after_scheme + i);
        return format!("{}/{abs}", &base[..host_end]);
    }
    format!("{base}/{url}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helm_index() {
        let index = Index::parse(
            r"apiVersion: v1
entries:
  demo:
  - name: demo
    version: 1.2.0
    urls: [demo-1.2.0.tgz]
    digest: 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
  - name: demo
    version: 1.10.0
    urls: [https://cdn.example/demo-1.10.0.tgz]
generated: 2026-01-01T00:00:00Z
",
            "https://charts.example.com",
        )
        .expect("parses");
        let v = index.versions("demo").expect("listed");
        assert_eq!(v.len(), 2);
        assert!(v[0].digest.is_some() && v[1].digest.is_none());
        assert!(index.versions("other").is_none());
        assert_eq!(
            chart_url("https://c.example/sub/", "demo-1.2.0.tgz"),
            "https://c.example/sub/demo-1.2.0.tgz"
        );
        assert_eq!(
            chart_url("https://c.example/sub", "/x/demo.tgz"),
            "https://c.example/x/demo.tgz"
        );
        assert_eq!(
            chart_url("https://c.example", "http://o/d.tgz"),
            "http://o/d.tgz"
        );
    }

    #[test]
    fn bombs_are_refused() {
        let deep = format!("entries: {}{}", "[".repeat(100), "]".repeat(100));
        let err = Index::parse(&deep, "https://x")
            .expect_err("deep")
            .to_string();
        assert!(
            err.starts_with("https://x: index.yaml refused: nested deeper"),
            "{err}"
        );
        let mut laughs = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..12 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("l{}", i - 1)
            };
            laughs.push_str(&format!("l{i}: &l{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        laughs.push_str("entries: {}\n");
        let err = Index::parse(&laughs, "https://x")
            .expect_err("laughs")
            .to_string();
        assert!(err.contains("index.yaml refused"), "{err}");
        assert!(Index::parse("entries: [", "https://x").is_err());
        assert!(Index::parse("apiVersion: v1\n", "https://x").is_err());
    }
}
