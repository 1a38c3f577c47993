//! SARIF 2.1.0 as typed serde structs: only the properties fluxgate fills, named as the
//! standard names them (camelCase), so a misspelt property cannot reach a code-scanning upload.

use serde::Serialize;

use crate::{Diagnostic, Error, Severity};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const INFORMATION_URI: &str = "https://github.com/fluxgate/fluxgate";

/// The top-level `sarifLog` object.
#[derive(Debug, Serialize)]
pub struct SarifLog<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<Run<'a>>,
}

#[derive(Debug, Serialize)]
struct Run<'a> {
    tool: Tool<'a>,
    results: Vec<SarifResult<'a>>,
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    driver: Driver<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver<'a> {
    name: &'static str,
    version: &'a str,
    information_uri: &'static str,
    rules: Vec<ReportingDescriptor<'a>>,
}

/// A rule in `tool.driver.rules`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportingDescriptor<'a> {
    id: &'a str,
    name: &'a str,
    short_description: Message<'a>,
}

#[derive(Debug, Serialize)]
struct Message<'a> {
    text: std::borrow::Cow<'a, str>,
}

impl<'a> Message<'a> {
    fn new(text: impl Into<std::borrow::Cow<'a, str>>) -> Self {
        Message { text: text.into() }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    /// The rule's position in `tool.driver.rules`, when it is listed there (contracts and
    /// configuration findings are not).
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_index: Option<usize>,
    level: &'static str,
    message: Message<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<SarifLocation<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<SarifLocation<'a>>,
    /// A fingerprint that survives line shifts (`check --base`), so that code scanning
    /// tracks a finding across runs; one entry, keyed by its scheme's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    partial_fingerprints: Option<std::collections::BTreeMap<&'a str, &'a str>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifLocation<'a> {
    physical_location: PhysicalLocation<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Message<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation<'a> {
    artifact_location: ArtifactLocation<'a>,
    region: Region,
}

#[derive(Debug, Serialize)]
struct ArtifactLocation<'a> {
    uri: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_column: Option<u32>,
}

/// A SARIF 2.1.0 log with one run: the rules (`rule_docs`: name and one-line summary) in
/// `tool.driver.rules`, one result per diagnostic.
#[must_use]
pub fn sarif_log<'a>(
    diags: &'a [Diagnostic],
    rule_docs: &'a [(&'a str, &'a str)],
    version: &'a str,
) -> SarifLog<'a> {
    let rules = rule_docs
        .iter()
        .map(|(name, summary)| ReportingDescriptor {
            id: name,
            name,
            short_description: Message::new(*summary),
        })
        .collect();
    let results = diags
        .iter()
        .map(|d| result(d, rule_docs.iter().position(|(name, _)| *name == d.rule)))
        .collect();
    SarifLog {
        schema: SCHEMA,
        version: "2.1.0",
        runs: vec![Run {
            tool: Tool {
                driver: Driver {
                    name: "fluxgate",
                    version,
                    information_uri: INFORMATION_URI,
                    rules,
                },
            },
            results,
        }],
    }
}

/// [`sarif_log`] as pretty-printed JSON, ending with a newline.
pub fn render_sarif(
    diags: &[Diagnostic],
    rule_docs: &[(&str, &str)],
    version: &str,
) -> Result<String, Error> {
    render_sarif_fingerprinted(diags, rule_docs, version, None)
}

/// [`render_sarif`] with each result's `partialFingerprints`: `(key, one per diagnostic)`.
pub fn render_sarif_fingerprinted<'a>(
    diags: &'a [Diagnostic],
    rule_docs: &'a [(&'a str, &'a str)],
    version: &'a str,
    fingerprints: Option<(&'a str, &'a [String])>,
) -> Result<String, Error> {
    let mut log = sarif_log(diags, rule_docs, version);
    if let Some((key, prints)) = fingerprints {
        for run in &mut log.runs {
            for (r, f) in run.results.iter_mut().zip(prints) {
                r.partial_fingerprints = Some(std::iter::once((key, f.as_str())).collect());
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&log).map_err(|source| Error::Json {
        format: "sarif",
        source,
    })?;
    text.push('\n');
    Ok(text)
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

fn physical(file: &str, line: u32, column: u32) -> PhysicalLocation<'_> {
    PhysicalLocation {
        artifact_location: ArtifactLocation { uri: file },
        region: Region {
            // SARIF lines are 1-based; a finding about a whole file points at its first line.
            start_line: line.max(1),
            start_column: (column > 0).then_some(column),
        },
    }
}

fn result(d: &Diagnostic, rule_index: Option<usize>) -> SarifResult<'_> {
    let env = d
        .environment_label()
        .map(|e| format!("[{e}] "))
        .unwrap_or_default();
    let locations = d
        .location
        .iter()
        .map(|l| SarifLocation {
            physical_location: physical(&l.file, l.line, l.column),
            id: None,
            message: None,
        })
        .collect();
    let related_locations = d
        .related
        .iter()
        .enumerate()
        .map(|(i, rel)| SarifLocation {
            physical_location: physical(&rel.location.file, rel.location.line, rel.location.column),
            id: Some(i),
            message: Some(Message::new(rel.message.as_str())),
        })
        .collect();
    SarifResult {
        rule_id: &d.rule,
        rule_index,
        level: level(d.severity),
        message: Message::new(format!("{env}{}", d.message)),
        locations,
        related_locations,
        partial_fingerprints: None,
    }
}
