//! From rendered files to what `helm template` prints: `NOTES.txt` and partials dropped,
//! documents split at `---`, hooks separated from manifests, manifests sorted by Helm's
//! install order of kinds, CRDs (`crds/`) first, each printed under its `# Source:` line.
//! [`render_manifests`] gives the same documents one by one with the origin of each piece.

use std::sync::Arc;

use fluxgate_gotemplate::trace::slice_spans;
use fluxgate_gotemplate::{Origin, Traced, Value};
use fluxgate_yaml::{Node, Schema, parse_stream};

use crate::chart::Chart;
use crate::render::render_files;
use crate::{Error, Options, values};

/// Helm's install order of kinds; other kinds come after these, by name.
const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// A chart rendered document by document, with origins.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// In the order `helm template` prints them: CRDs, manifests, hooks.
    pub manifests: Vec<Manifest>,
    /// The top chart's `templates/NOTES.txt` as rendered (Helm prints it on install).
    pub notes: Option<Notes>,
    /// The schemas the values were not checked against because they cannot be read offline
    /// (with [`crate::UnloadableSchemas::RenderPast`]; each its load error).
    pub unchecked: Vec<String>,
}

/// One YAML document of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The file as the `# Source:` line names it (`cilium/templates/cilium-agent/daemonset.yaml`).
    pub source: String,
    /// The document as `helm template` prints it after its `# Source:` line: the output is
    /// each printed manifest as `---\n# Source: {source}\n{text}\n`.
    pub text: String,
    /// `kind` of the document ("" when it has none).
    pub kind: String,
    /// Its `helm.sh/hook` annotation.
    pub hook: Option<String>,
    /// A file of `crds/` (printed only with `--include-crds`; always listed here).
    pub crd: bool,
    /// Origins of the pieces of `text`: sorted by start, not overlapping, on character
    /// boundaries.
    pub spans: Vec<Span>,
}

impl Manifest {
    /// The span that covers byte `offset` of the text (where a scalar the caller parsed
    /// starts), if any.
    pub fn span_at(&self, offset: usize) -> Option<&Span> {
        let i = self.spans.partition_point(|s| s.end <= offset);
        self.spans.get(i).filter(|s| s.start <= offset)
    }
}

/// The rendered `NOTES.txt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notes {
    pub source: String,
    pub text: String,
    pub spans: Vec<Span>,
}

/// A byte range of a manifest's text and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub origin: SpanOrigin,
}

/// Where a piece of a rendered manifest came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SpanOrigin {
    /// Literal template text, or a value computed in the template (`printf`, a literal
    /// argument of `default`, `.Release.Name`): the chart-relative file
    /// (`cilium/templates/_helpers.tpl`), 1-based line and 1-based column (characters).
    /// A file of `crds/` points at its own lines.
    Template {
        file: Arc<str>,
        line: u32,
        column: u32,
    },
    /// Text produced from a chart value: its dotted path in the top-level values
    /// (`updateStrategy.rollingUpdate.maxUnavailable`, `a[0].b`, a dot in a key as `\.`; a
    /// subchart's `.Values.x` is `<alias-or-name>.x`, globals `global.x`). A map or list
    /// printed whole (`toYaml .Values.x | nindent 4`) has the path of its root: what is
    /// below it has its YAML path within the block.
    Values { path: Arc<str> },
}

impl From<&Origin> for SpanOrigin {
    fn from(o: &Origin) -> SpanOrigin {
        match o {
            Origin::Template { file, line, column } => SpanOrigin::Template {
                file: file.clone(),
                line: *line,
                column: *column,
            },
            Origin::Value { path } => SpanOrigin::Values { path: path.clone() },
        }
    }
}

fn spans_of(spans: &[fluxgate_gotemplate::Span]) -> Vec<Span> {
    spans
        .iter()
        .map(|s| Span {
            start: s.start,
            end: s.end,
            origin: SpanOrigin::from(&s.origin),
        })
        .collect()
}

/// Renders `chart` with `opts`: what `helm template` prints.
pub fn template(chart: Chart, opts: &Options) -> Result<String, Error> {
    let rendered = render(chart, opts, false)?;
    check_yaml(&rendered.manifests)?;
    Ok(print(&rendered.manifests, opts.include_crds))
}

/// Helm reads every document its templates rendered (hooks too, not the `crds/` files) to
/// sort them, and fails on one that is not YAML: `YAML parse error on <template>: ...`, with
/// go-yaml's line and problem. (A traced render leaves this to its caller, which parses every
/// document anyway: `fluxgate check` makes it the release's render finding.)
fn check_yaml(manifests: &[Manifest]) -> Result<(), Error> {
    for m in manifests.iter().filter(|m| !m.crd) {
        if let Err(e) = check_manifest(m) {
            return Err(Error::Render(e));
        }
    }
    Ok(())
}

/// Whether Helm can read `m` to sort it: YAML whose value is a mapping or null (the head
/// Helm reads, `kind` and the hook annotations, is an object). Otherwise Helm's error, as it
/// words it.
pub fn check_manifest(m: &Manifest) -> Result<(), String> {
    let stream = fluxgate_yaml::parse_stream("manifest", &m.text, Schema::GoYamlV2);
    let value = crate::sprig::encoding::yaml_value(&m.text, &stream)
        .map_err(|e| format!("YAML parse error on {}: {e}", m.source))?;
    let json = match value {
        Value::Missing | Value::Nil | Value::Map(_) => return Ok(()),
        Value::List(_) => "array",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Int64(_) | Value::Float(_) => "number",
        _ => "string",
    };
    Err(format!(
        "YAML parse error on {}: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {json} into Go value of type util.SimpleHead",
        m.source
    ))
}

/// Renders `chart` with `opts` into the documents `helm template` prints, in its order,
/// each with the origins of its pieces; the CRDs of `crds/` are listed whatever
/// `opts.include_crds` says (it decides only which document is printed last, whose
/// trailing whitespace Helm trims).
pub fn render_manifests(chart: Chart, opts: &Options) -> Result<Rendered, Error> {
    render(chart, opts, true)
}

fn render(mut chart: Chart, opts: &Options, trace: bool) -> Result<Rendered, Error> {
    let user = opts.values.deep_copy();
    values::process_dependencies(&mut chart, &user, "")
        .map_err(|e| Error::Values(format!("chart dependencies processing failed: {e}")))?;
    values::process_import_values(&mut chart)?;
    let vals = values::coalesce_values_copy(&chart, &user)?;
    let mut unchecked = Vec::new();
    if !opts.skip_schema_validation {
        match crate::schema::validate(&chart, &vals) {
            Ok(()) => {}
            Err(f)
                if opts.unloadable_schemas == crate::UnloadableSchemas::RenderPast
                    && f.violations.is_empty() =>
            {
                unchecked = f.unloadable.into_iter().map(|u| u.message).collect();
            }
            Err(f) => return Err(Error::Schema(Box::new(f))),
        }
    }
    let files = render_files(&chart, &vals, opts, trace)?;
    Ok(Rendered {
        unchecked,
        ..assemble(&chart, files, opts, trace)
    })
}

/// What `helm template` prints for `manifests`.
pub(crate) fn print(manifests: &[Manifest], include_crds: bool) -> String {
    let mut body = String::new();
    let mut hooks = String::new();
    for m in manifests {
        let out = if m.hook.is_some() {
            &mut hooks
        } else if !m.crd || include_crds {
            &mut body
        } else {
            continue;
        };
        out.push_str("---\n# Source: ");
        out.push_str(&m.source);
        out.push('\n');
        out.push_str(&m.text);
        out.push('\n');
    }
    let mut out = body.trim().to_string();
    out.push('\n');
    out.push_str(&hooks);
    out
}

/// `SplitManifests`: documents at lines starting `---`, leading whitespace removed; each
/// document as its range in `text`.
fn split_manifests(text: &str) -> Vec<(usize, usize)> {
    let lead = text.len() - text.trim_start().len();
    let mut docs = Vec::new();
    let mut start = lead;
    let mut pos = lead;
    for line in text[lead..].split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("---") {
            docs.push((start, pos));
            // What follows `---` and its spaces on the same line starts the next document.
            start = pos + 3 + (rest.len() - rest.trim_start_matches([' ', '\t']).len());
        }
        pos += line.len();
    }
    docs.push((start, pos));
    docs.into_iter()
        .filter(|&(a, b)| !text[a..b].trim().is_empty())
        .map(|(a, b)| (b - text[a..b].trim_start().len(), b))
        .collect()
}

/// The document's `kind` and `helm.sh/hook` annotation, as Helm reads them to sort.
fn head(doc: &str) -> (String, Option<String>) {
    match plain_kind(doc) {
        Some(kind) => (kind, None),
        None => parsed_head(doc),
    }
}

fn parsed_head(doc: &str) -> (String, Option<String>) {
    let stream = parse_stream("manifest", doc, Schema::GoYamlV2);
    let Some(d) = stream.docs.first() else {
        return (String::new(), None);
    };
    let kind = d
        .get("kind")
        .and_then(Node::scalar_text)
        .unwrap_or_default();
    let hook = d
        .path(&["metadata", "annotations", "helm.sh/hook"])
        .and_then(Node::scalar_text);
    (kind, hook)
}

/// The `kind` of a document read off its lines, without parsing it, when the text is plain
/// enough that a parse could read nothing else: a block mapping at column 0, every top-level
/// line a `key: value` with a simple key and a value that ends on its line (or opens a block),
/// one `kind:` whose value is a plain word that resolves to a string; no `helm.sh/hook`
/// anywhere and no key that could spell it with escapes ([`may_hide_a_key`]). `None` asks for the parse. Most rendered documents are this plain, and parsing each one only for
/// its head was a tenth of a chart's render.
fn plain_kind(doc: &str) -> Option<String> {
    // The per-line look for a hidden key only where the characters it needs are there at all
    // (CRDs are long, and seldom have either).
    if memchr::memmem::find(doc.as_bytes(), b"helm.sh/hook").is_some()
        || (doc.contains('?') || doc.contains('\\')) && may_hide_a_head_key(doc)
    {
        return None;
    }
    let mut kind = None;
    let mut keyed = false;
    let mut lines = fluxgate_yaml::lines(doc).peekable();
    while let Some(line) = lines.next() {
        let Some(c) = line.chars().next() else {
            continue;
        };
        // Indented lines are most of a document: they are skipped without trimming them
        // (a blank one is skipped anyway).
        if c == ' ' || c == '\t' {
            if !keyed && !line.trim().is_empty() {
                // Indented content before the first key: not a plain block mapping.
                return None;
            }
            continue;
        }
        if c == '#' || !c.is_ascii_alphabetic() && line.trim().is_empty() {
            continue;
        }
        // A quoted, complex (`?`), merge (`<<`), anchored or flow key, a document marker, a
        // directive, a sequence: the parse decides.
        if !c.is_ascii_alphabetic() {
            return None;
        }
        let (key, value) = split_key(line)?;
        keyed = true;
        if key != "kind" {
            continue;
        }
        let plain = value
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && matches!(
                fluxgate_yaml::resolve_plain(value, Schema::GoYamlV2),
                fluxgate_yaml::Value::String(_)
            );
        // A value continued on the next (indented) line is a longer scalar.
        let continued = lines
            .peek()
            .is_some_and(|next| next.starts_with([' ', '\t']) && !next.trim().is_empty());
        if kind.is_some() || !plain || continued {
            return None;
        }
        kind = Some(value.to_string());
    }
    // No `kind:` line: a parse finds none either (or fails, which reads as no kind).
    Some(kind.unwrap_or_default())
}

/// Whether a key the text does not spell out could change the document's head: on a
/// top-level line ([`may_hide_a_key`]), or in the top-level `metadata` block, where the hook
/// annotation is. There, an alias, anchor or merge key (which could bring in a key written
/// elsewhere) and a quote left open at the end of a line (a scalar running on over lines could
/// make a later line look top-level) count as hiding one too. The rest of the document (its
/// spec, data, dashboards, CRD schemas) holds no key Helm's sort reads, so a `? 1 : 0` in a CEL
/// rule or escaped quotes in a dashboard's JSON no longer send a 300 KB document to the parser.
fn may_hide_a_head_key(doc: &str) -> bool {
    let mut in_metadata = false;
    for line in fluxgate_yaml::lines(doc) {
        let top = line.starts_with(|c: char| !matches!(c, ' ' | '\t' | '#'));
        if top {
            in_metadata = line.starts_with("metadata:");
        }
        let hides = if top {
            may_hide_a_key(line)
        } else {
            in_metadata
                && (may_hide_a_key(line)
                    || line.contains(['*', '&'])
                    || line.contains("<<")
                    || leaves_a_quote_open(line))
        };
        if hides {
            return true;
        }
    }
    false
}

/// Whether `line` ends inside a quoted scalar (YAML's escapes: `\"` in double quotes, `''` in
/// single ones; a `#` after a space outside quotes starts a comment). An apostrophe in a plain
/// scalar reads as an open quote: that only sends the document to the parser.
fn leaves_a_quote_open(line: &str) -> bool {
    let mut open: Option<char> = None;
    let mut chars = line.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        match (open, c) {
            (None, '#') if prev == ' ' || prev == '\t' => return false,
            (None, '"' | '\'') => open = Some(c),
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some('\''), '\'') if chars.peek() == Some(&'\'') => {
                chars.next();
            }
            (Some(q), c) if c == q => open = None,
            _ => {}
        }
        prev = c;
    }
    open.is_some()
}

/// Whether `line` could hold a key the text does not spell out: a double-quoted one with an
/// escape (`"helm.sh/ho\x6fk":`), or an explicit `? key` (which may be escaped over lines).
fn may_hide_a_key(line: &str) -> bool {
    line.trim_start().starts_with('?') || line.contains('\\') && line.contains("\":")
}

/// A top-level `key: value` line as its key and its value (comment cut, trimmed), when the key
/// is simple and the value ends on this line or opens an indented block.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let colon = line.find(':')?;
    let key = &line[..colon];
    let rest = &line[colon + 1..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        // `a:b` is one plain scalar, not a key.
        return None;
    }
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
    {
        // `kind :`, a key with spaces or quotes.
        return None;
    }
    let value = match rest.find(" #").or_else(|| rest.find("\t#")) {
        Some(at) => &rest[..at],
        None => rest,
    }
    .trim();
    // Nothing, a block scalar's header or a plain scalar ends here; quotes and brackets must
    // close on the line.
    let closed = match value.chars().next() {
        Some(q @ ('"' | '\'')) => value.len() > 1 && value.ends_with(q),
        Some('[') => value.ends_with(']'),
        Some('{') => value.ends_with('}'),
        Some('&' | '*' | '!' | '%' | '@' | '`') => false,
        _ => true,
    };
    closed.then_some((key, value))
}

fn kind_rank(kind: &str) -> (usize, String) {
    match INSTALL_ORDER.iter().position(|k| *k == kind) {
        Some(i) => (i, String::new()),
        None => (INSTALL_ORDER.len(), kind.to_string()),
    }
}

fn is_test_hook(hook: &str) -> bool {
    hook.split(',')
        .any(|x| matches!(x.trim(), "test" | "test-success"))
}

/// The documents of the rendered `files` in `helm template`'s order (CRDs only when
/// printed or traced).
fn assemble(chart: &Chart, files: Vec<(String, Traced)>, opts: &Options, trace: bool) -> Rendered {
    let mut files: Vec<(String, Traced)> = files;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let notes_name = format!("{}/templates/NOTES.txt", chart.name);
    let mut notes = None;
    let mut docs = Vec::new();
    for (name, file) in files {
        if name.ends_with("NOTES.txt") {
            if name == notes_name {
                notes = Some(Notes {
                    source: name,
                    text: file.text,
                    spans: spans_of(&file.spans),
                });
            }
            continue;
        }
        let base = name.rsplit('/').next().unwrap_or(&name);
        if base.starts_with('_') || file.text.trim().is_empty() {
            continue;
        }
        for (a, b) in split_manifests(&file.text) {
            let text = &file.text[a..b];
            let (kind, hook) = head(text);
            docs.push(Manifest {
                source: name.clone(),
                text: text.to_string(),
                kind,
                hook,
                crd: false,
                spans: spans_of(&slice_spans(&file.spans, a, b)),
            });
        }
    }
    let (mut hooks, mut generic): (Vec<Manifest>, Vec<Manifest>) =
        docs.into_iter().partition(|m| m.hook.is_some());
    generic.sort_by_key(|m| kind_rank(&m.kind));
    hooks.sort_by_key(|m| kind_rank(&m.kind));
    if opts.skip_tests {
        hooks.retain(|h| !h.hook.as_deref().is_some_and(is_test_hook));
    }
    let mut manifests = Vec::new();
    if opts.include_crds || trace {
        for (path, data) in crds(chart, &chart.name) {
            let kind = if trace { head(&data).0 } else { String::new() };
            let spans = if trace {
                file_spans(&path, &data)
            } else {
                Vec::new()
            };
            manifests.push(Manifest {
                source: path,
                text: data,
                kind,
                hook: None,
                crd: true,
                spans,
            });
        }
    }
    manifests.extend(generic);
    trim_last_printed(&mut manifests, opts.include_crds);
    manifests.extend(hooks);
    Rendered {
        manifests,
        notes,
        unchecked: Vec::new(),
    }
}

/// Helm trims the whitespace after the last document before the hooks.
fn trim_last_printed(manifests: &mut [Manifest], include_crds: bool) {
    if let Some(last) = manifests.iter_mut().rev().find(|m| !m.crd || include_crds) {
        let keep = last.text.trim_end().len();
        last.text.truncate(keep);
        last.spans.retain(|s| s.start < keep);
        if let Some(s) = last.spans.last_mut() {
            s.end = s.end.min(keep);
        }
    }
}

/// The spans of a file printed as it is: each line at its own line.
fn file_spans(path: &str, data: &str) -> Vec<Span> {
    let file: Arc<str> = Arc::from(path);
    let mut out = Vec::new();
    let mut at = 0;
    for (n, line) in data.split_inclusive('\n').enumerate() {
        out.push(Span {
            start: at,
            end: at + line.len(),
            origin: SpanOrigin::Template {
                file: file.clone(),
                line: u32::try_from(n + 1).unwrap_or(u32::MAX),
                column: 1,
            },
        });
        at += line.len();
    }
    out
}

/// The CRD files of a chart and its subcharts (`crds/`), subcharts first as Helm lists them.
fn crds(chart: &Chart, path: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, data) in &chart.files {
        if name.starts_with("crds/")
            && (name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json"))
        {
            out.push((
                format!("{path}/{name}"),
                String::from_utf8_lossy(data).into_owned(),
            ));
        }
    }
    for sub in &chart.subcharts {
        out.extend(crds(sub, &format!("{path}/charts/{}", sub.name)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_values::chart;

    fn values_path(o: &SpanOrigin) -> Option<&str> {
        match o {
            SpanOrigin::Values { path } => Some(path),
            SpanOrigin::Template { .. } => None,
        }
    }

    /// The origin of the span covering `needle` in `m`.
    fn origin<'m>(m: &'m Manifest, needle: &str) -> &'m SpanOrigin {
        let at = m.text.find(needle).unwrap();
        let span = m
            .span_at(at)
            .unwrap_or_else(|| panic!("{needle}: {:?}", m.spans));
        assert!(at + needle.len() <= span.end, "{needle}: {span:?}");
        &span.origin
    }

    /// A schema that cannot be read offline fails the render as helm fails it, unless the
    /// caller renders past it: then the values are still held to the schemas that can be
    /// read, and the one that cannot is listed, once, without a second render.
    #[test]
    fn rendering_past_a_schema_that_cannot_be_read_offline() {
        let c = chart(&[
            ("Chart.yaml", "apiVersion: v2\nname: top\nversion: 0.1.0\n"),
            ("values.yaml", "port: 80\n"),
            (
                "values.schema.json",
                r#"{"properties": {"port": {"type": "integer"}}}"#,
            ),
            (
                "templates/cm.yaml",
                "kind: ConfigMap\ndata:\n  port: {{ .Values.port | quote }}\n",
            ),
            (
                "charts/lib/Chart.yaml",
                "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
            ),
            (
                "charts/lib/values.schema.json",
                r#"{"$ref": "https://example.com/lib.schema.json"}"#,
            ),
        ]);
        let helm = Options::default();
        let Err(Error::Schema(f)) = render_manifests(c.clone(), &helm) else {
            panic!("helm fails on a schema it would fetch");
        };
        assert!(f.violations.is_empty() && f.unloadable.len() == 1, "{f}");
        let past = Options {
            unloadable_schemas: crate::UnloadableSchemas::RenderPast,
            ..Options::default()
        };
        let r = render_manifests(c.clone(), &past).unwrap();
        assert_eq!(r.manifests.len(), 1);
        assert_eq!(r.unchecked.len(), 1, "{:?}", r.unchecked);
        assert!(
            r.unchecked[0].contains("https://example.com/lib.schema.json"),
            "{:?}",
            r.unchecked
        );
        let bad = Options {
            values: crate::values::parse_values("port: eighty\n").unwrap(),
            ..past
        };
        let Err(Error::Schema(f)) = render_manifests(c, &bad) else {
            panic!("the schema that can be read still holds");
        };
        assert_eq!(f.violations.len(), 1, "{f}");
    }

    /// A rendered document that is not YAML fails the render with Helm's words (helm v4.3.2
    /// prints exactly this for the same chart); `crds/` files are not read.
    #[test]
    fn a_document_that_is_not_yaml_fails_as_helm_fails() {
        let meta = ("Chart.yaml", "apiVersion: v2\nname: delc\nversion: 0.1.0\n");
        let broken = chart(&[meta, ("templates/t.yaml", "a: [\n")]);
        let err = template(broken, &Options::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "YAML parse error on delc/templates/t.yaml: error converting YAML to JSON: yaml: line 1: did not find expected node content"
        );
        // A character YAML cannot carry: go-yaml's reader refuses it without a line.
        let del = chart(&[
            meta,
            (
                "templates/t.yaml",
                "kind: ConfigMap\ndata:\n  k: \"a\u{7f}b\"\n",
            ),
        ]);
        let err = template(del, &Options::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "YAML parse error on delc/templates/t.yaml: error converting YAML to JSON: yaml: control characters are not allowed"
        );
        // YAML that is no object: Helm cannot read its head (helm v4.3.2's words).
        for (text, json) in [
            ("- a\n", "array"),
            ("hello\n", "string"),
            ("\"s\"\n", "string"),
            ("42\n", "number"),
            ("true\n", "bool"),
            ("a: 1\n---\n[]\n", "array"),
        ] {
            let err = template(
                chart(&[meta, ("templates/t.yaml", text)]),
                &Options::default(),
            )
            .unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "YAML parse error on delc/templates/t.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {json} into Go value of type util.SimpleHead"
                ),
                "{text:?}"
            );
        }
        for text in ["null\n", "~\n", "# c\n", "{}\n"] {
            let out = template(
                chart(&[meta, ("templates/t.yaml", text)]),
                &Options::default(),
            );
            assert!(out.is_ok(), "{text:?}: {out:?}");
        }
        let crd_only = chart(&[meta, ("crds/c.yaml", "a: [\n")]);
        assert!(template(crd_only, &Options::default()).is_ok());
    }

    #[test]
    fn manifests_name_values_paths_of_subcharts_and_globals() {
        let c = chart(&[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: top\nversion: 1.0.0\ndependencies:\n- name: sub\n  version: 1.0.0\n  alias: db\n",
            ),
            (
                "values.yaml",
                "global: {region: eu}\nport: 80\ndb: {size: 3}\n",
            ),
            (
                "templates/cm.yaml",
                "kind: ConfigMap\ndata:\n  port: {{ .Values.port | quote }}\n",
            ),
            (
                "templates/hook.yaml",
                "kind: Job\nmetadata:\n  annotations:\n    helm.sh/hook: pre-install\n",
            ),
            ("crds/crd.yaml", "kind: CustomResourceDefinition\n"),
            (
                "charts/sub/Chart.yaml",
                "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
            ),
            ("charts/sub/values.yaml", "size: 1\n"),
            (
                "charts/sub/templates/s.yaml",
                "kind: Secret\nsize: {{ .Values.size }}\nregion: {{ .Values.global.region }}\n",
            ),
        ]);
        let opts = Options::default();
        let r = render_manifests(c.clone(), &opts).unwrap();
        let kinds: Vec<(&str, bool)> = r
            .manifests
            .iter()
            .map(|m| (m.kind.as_str(), m.crd))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("CustomResourceDefinition", true),
                ("Secret", false),
                ("ConfigMap", false),
                ("Job", false)
            ]
        );
        assert_eq!(r.manifests[1].source, "top/charts/db/templates/s.yaml");
        assert_eq!(values_path(origin(&r.manifests[1], "3")), Some("db.size"));
        assert_eq!(
            values_path(origin(&r.manifests[1], "eu")),
            Some("global.region")
        );
        assert_eq!(values_path(origin(&r.manifests[2], "\"80\"")), Some("port"));
        assert_eq!(
            origin(&r.manifests[2], "data:"),
            &SpanOrigin::Template {
                file: "top/templates/cm.yaml".into(),
                line: 2,
                column: 1
            }
        );
        // The documents print as template() prints them; CRDs only when asked.
        let mut printed = String::new();
        for m in &r.manifests[1..] {
            printed.push_str(&format!("---\n# Source: {}\n{}\n", m.source, m.text));
        }
        assert_eq!(printed, template(c, &opts).unwrap());
    }

    #[test]
    fn template_errors_are_data() {
        let c = chart(&[
            ("Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n"),
            (
                "templates/_h.tpl",
                "{{ define \"need\" }}\n{{ required \"x is required\" .Values.x }}{{ end }}",
            ),
            ("templates/a.yaml", "a: 1\nb: {{ include \"need\" . }}\n"),
        ]);
        let Err(Error::Template {
            file,
            line,
            column,
            message,
            text,
        }) = template(c, &Options::default())
        else {
            panic!("a template error");
        };
        assert_eq!(
            text,
            "execution error at (c/templates/a.yaml:2:6): x is required"
        );
        assert_eq!(
            (file.as_str(), line, column, message.as_str()),
            ("c/templates/a.yaml", 2, 7, "x is required")
        );
        let c = chart(&[
            ("Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n"),
            ("templates/a.yaml", "a: 1\nb: {{ .x \n"),
        ]);
        let err = template(c, &Options::default()).unwrap_err();
        let Error::Template {
            file,
            line,
            message,
            ..
        } = &err
        else {
            panic!("a template error");
        };
        assert_eq!(
            (file.as_str(), *line, message.as_str()),
            ("c/templates/a.yaml", 3, "unclosed action")
        );
        assert_eq!(
            err.to_string(),
            "parse error at (c/templates/a.yaml:3): unclosed action"
        );
    }

    #[test]
    fn plain_kinds_read_off_the_lines_agree_with_the_parse() {
        let docs = [
            (
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n",
                Some("Service"),
            ),
            (
                "# c\n\nkind: ConfigMap # trailing\ndata:\n  kind: x\n",
                Some("ConfigMap"),
            ),
            ("apiVersion: v1\nmetadata: {name: a}\n", Some("")),
            (
                "kind: Deployment\nspec:\n  template: |\n    kind: Pod\n",
                Some("Deployment"),
            ),
            ("kind: 'Service'\n", None),
            ("kind: \"Service\"\n", None),
            ("\"kind\": Service\n", None),
            ("kind : Service\n", None),
            ("kind: true\n", None),
            ("kind: Null\n", None),
            ("kind: Yes\n", None),
            ("kind: Ser\n  vice\n", None),
            ("kind: A\nkind: B\n", None),
            ("base: &b\n  kind: Service\n<<: *b\n", None),
            ("? kind\n: Service\n", None),
            ("  kind: Service\n", None),
            ("- kind: Service\n", None),
            ("{kind: Service}\n", None),
            ("a: \"x\nkind: Service\ny\"\n", None),
            ("a: [1,\nkind: Service]\n", None),
            (
                "kind: Job\nmetadata:\n  annotations:\n    helm.sh/hook: pre-install\n",
                None,
            ),
            (
                "kind: Job\nmetadata:\n  annotations:\n    \"helm.sh/h\\x6fok\": test\n",
                None,
            ),
            (
                "kind: Job\nmetadata:\n  annotations: &a\n    x: y\n",
                Some("Job"),
            ),
            ("kind: Job\nx: *a\n", None),
            // A `?` or escapes outside the head (a CEL rule in a CRD, a dashboard's JSON) leave
            // the lines to read.
            (
                "kind: CustomResourceDefinition\nmetadata:\n  name: a\nspec:\n  rule: 'a\n    ? 1 : 0'\n",
                Some("CustomResourceDefinition"),
            ),
            (
                "kind: ConfigMap\nmetadata:\n  name: d\ndata:\n  d.json: |\n    {\"expr\": \"a{k=\\\"v\\\"}\"}\n",
                Some("ConfigMap"),
            ),
            // In the metadata block, what could bring in or hide a key sends it to the parse.
            (
                "kind: Job\nspec:\n  x: &s\n    \"helm.sh/ho\\x6fk\": test\nmetadata:\n  annotations: *s\n",
                None,
            ),
            (
                "kind: Job\nspec:\n  x: &s\n    \"helm.sh/ho\\x6fk\": test\nmetadata:\n  annotations:\n    <<: *s\n",
                None,
            ),
            (
                "kind: Job\nmetadata:\n  annotations:\n    a: \"x\nspec: y\"\n    \"helm.sh/ho\\x6fk\": test\n",
                None,
            ),
            (
                "kind: Job\nmetadata:\n  annotations:\n    ? \"helm.sh/ho\\x6fk\"\n    : test\n",
                None,
            ),
        ];
        for (doc, want) in docs {
            let got = plain_kind(doc);
            assert_eq!(got.as_deref(), want, "{doc:?}");
            if let Some(kind) = got {
                assert_eq!(parsed_head(doc), (kind, None), "{doc:?}");
            } else if doc.contains("x6fk") {
                // The hidden hooks are there for the parse to find.
                assert_eq!(parsed_head(doc).1.as_deref(), Some("test"), "{doc:?}");
            }
        }
    }

    #[test]
    fn manifests_split_like_helm() {
        let text = "\n---\na: 1\n---  \nb: 2\n\n---\n";
        let docs: Vec<&str> = split_manifests(text)
            .into_iter()
            .map(|(a, b)| &text[a..b])
            .collect();
        assert_eq!(docs, vec!["a: 1\n", "b: 2\n\n"]);
    }
}
