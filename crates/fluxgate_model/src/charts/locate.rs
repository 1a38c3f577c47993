//! Every node of a rendered chart document at the line that set it, from the spans the
//! engine traced: a value from the release's values at that value's origin, a literal at its
//! template line and column.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use fluxgate_diagnostics::Location;
use fluxgate_flux::helm::{Origins, Values};
use fluxgate_gotemplate::trace::extend_key;
use fluxgate_yaml::{Node, Schema, Value, parse_stream};

/// The file a `# Source:` path of the output lives at in the cache: inside an archive the
/// members keep the chart's folder (`charts/cilium-1.17.18.tgz/cilium/templates/x.yaml`); an
/// unpacked chart's folder stands for it (`charts/cilium/templates/x.yaml`).
pub(crate) fn cache_file(source: &str, template: &str) -> String {
    if Path::new(source)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tgz"))
    {
        [source, "/", template].concat()
    } else {
        let rest = template.split_once('/').map_or(template, |(_, r)| r);
        [source, "/", rest].concat()
    }
}

/// A test hook runs on `helm test` (Flux's `spec.test`), not on install.
pub(crate) fn is_test_hook(m: &fluxgate_helm::Manifest) -> bool {
    m.hook.as_deref().is_some_and(|h| {
        h.split(',')
            .any(|e| matches!(e.trim(), "test" | "test-success"))
    })
}

/// One rendered document and what locates its values.
pub(crate) struct Located<'a> {
    pub source: &'a str,
    pub manifest: &'a fluxgate_helm::Manifest,
    pub values: &'a Values,
    /// The last template file's name in the cache ([`cache_file`]): the nodes of a document
    /// mostly come from one template.
    pub last_file: std::cell::RefCell<Option<(Arc<str>, Arc<str>)>>,
}

impl Located<'_> {
    /// The document's objects, every node at the line that set it: a value from the chart's
    /// values at that value's origin (the release's values line, the chart's values.yaml
    /// line), a literal at its template line.
    /// A document that is not YAML, or whose value is not a mapping or null, is Helm's error
    /// (`YAML parse error on <template>`): the release fails, so it is returned, never
    /// skipped.
    pub(crate) fn objects(&self) -> Result<Vec<Node>, String> {
        let file = cache_file(self.source, &self.manifest.source);
        let text = &self.manifest.text;
        let stream = parse_stream(&file, text, Schema::Kube);
        if let Some(d) = stream.diagnostics.first() {
            let line = d.location.as_ref().map_or(0, |l| l.line);
            return Err(format!(
                "YAML parse error on {}: line {line} of the rendered document: {}",
                self.manifest.source, d.message
            ));
        }
        let lines = Lines {
            starts: fluxgate_yaml::line_starts(text),
            ascii: text.is_ascii(),
        };
        let mut out = Vec::new();
        for mut node in stream.docs {
            if node.as_map().is_none() {
                // Null is read (and installs nothing); a list or a scalar fails the release.
                fluxgate_helm::check_manifest(self.manifest)?;
                continue;
            }
            let top = Location::file(file.clone());
            self.locate(&mut node, &lines, None, &mut String::new(), &top);
            out.push(node);
        }
        Ok(out)
    }

    /// Locates `node` and what is below it. `block`: the span the parent was written by,
    /// when that span printed values; `path` then holds the values path the node has in it
    /// (one buffer for the whole document, grown and cut as the walk goes down and up).
    fn locate(
        &self,
        node: &mut Node,
        lines: &Lines,
        block: Option<usize>,
        path: &mut String,
        parent: &Location,
    ) {
        let text = &self.manifest.text;
        let offset = lines
            .starts
            .get(node.loc.line.saturating_sub(1) as usize)
            .map(|start| {
                let col = node.loc.column.saturating_sub(1) as usize;
                // Columns count characters: bytes, in a document of ASCII.
                if lines.ascii {
                    return (start + col).min(text.len());
                }
                text[*start..]
                    .char_indices()
                    .nth(col)
                    .map_or(text.len(), |(i, _)| start + i)
            });
        let spans = &self.manifest.spans;
        let found = offset.and_then(|o| {
            let i = spans.partition_point(|s| s.end <= o);
            spans.get(i).filter(|s| s.start <= o).map(|s| (i, s))
        });
        let mut here = None;
        node.loc = match found {
            Some((
                _,
                fluxgate_helm::Span {
                    start,
                    origin: fluxgate_helm::SpanOrigin::Template { file, line, column },
                    ..
                },
            )) => {
                // The span starts at `line:column` of the template: the node's own column is
                // further right when the span's text before it is on the same line.
                let before = offset.and_then(|o| text.get(*start..o)).unwrap_or_default();
                let column = if before.contains('\n') {
                    *column
                } else {
                    let chars = if lines.ascii {
                        before.len()
                    } else {
                        before.chars().count()
                    };
                    column.saturating_add(u32::try_from(chars).unwrap_or(0))
                };
                Location::new(self.cache_file(file), *line, column)
            }
            Some((
                i,
                fluxgate_helm::Span {
                    origin: fluxgate_helm::SpanOrigin::Values { path: span_path },
                    ..
                },
            )) => {
                // Inside a block printed whole (`toYaml .Values.x`) the path continues from
                // the parent's; a node that starts a span starts at the span's path.
                if block != Some(i) {
                    path.clear();
                    path.push_str(span_path);
                }
                here = Some(i);
                self.origin(path).unwrap_or_else(|| parent.clone())
            }
            None => parent.clone(),
        };
        let here_loc = node.loc.clone();
        let base = path.len();
        match &mut node.value {
            Value::Map(m) => {
                for (k, v) in m.iter_mut() {
                    if here.is_some() {
                        extend_key(path, k);
                    }
                    self.locate(v, lines, here, path, &here_loc);
                    path.truncate(base);
                }
            }
            Value::Seq(items) => {
                for (n, v) in items.iter_mut().enumerate() {
                    if here.is_some() {
                        use std::fmt::Write as _;
                        let _ = write!(path, "[{n}]");
                    }
                    self.locate(v, lines, here, path, &here_loc);
                    path.truncate(base);
                }
            }
            _ => {}
        }
    }

    /// [`cache_file`] of `template`, remembered for the next node.
    fn cache_file(&self, template: &Arc<str>) -> Arc<str> {
        let mut last = self.last_file.borrow_mut();
        if let Some((t, f)) = last.as_ref()
            && Arc::ptr_eq(t, template)
        {
            return f.clone();
        }
        let file: Arc<str> = Arc::from(cache_file(self.source, template));
        *last = Some((template.clone(), file.clone()));
        file
    }

    /// Where the value at `path` of the release's values was set: the most direct origin of
    /// that leaf, else of the first leaf below it.
    fn origin(&self, path: &str) -> Option<Location> {
        origin_of(&self.values.origins, path)
    }
}

/// Where the lines of a rendered document start, and whether it is all ASCII (then a column,
/// counted in characters, is a count of bytes).
struct Lines {
    starts: Vec<usize>,
    ascii: bool,
}

/// Where the value at `path` of a release's values was set: the most direct origin of that
/// leaf, else of the first leaf below it.
pub(crate) fn origin_of(origins: &Origins, path: &str) -> Option<Location> {
    if let Some(chain) = origins.get(path) {
        return chain.first().map(|o| o.location.clone());
    }
    // The first path below `path` (`path.x`, `path[0]`) in key order.
    origins
        .range::<str, _>((Bound::Included(path), Bound::Unbounded))
        .take_while(|(k, _)| k.starts_with(path))
        .find(|(k, _)| matches!(k.as_bytes().get(path.len()), Some(b'.' | b'[')))
        .and_then(|(_, chain)| chain.first())
        .map(|o| o.location.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_members_keep_the_chart_folder() {
        assert_eq!(
            cache_file("charts/cilium-1.17.18.tgz", "cilium/templates/a.yaml"),
            "charts/cilium-1.17.18.tgz/cilium/templates/a.yaml"
        );
        assert_eq!(
            cache_file("charts/cilium-1.16.5", "cilium/templates/a.yaml"),
            "charts/cilium-1.16.5/templates/a.yaml"
        );
    }
}
