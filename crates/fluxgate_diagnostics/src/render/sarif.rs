use serde_json::{Value, json};

use crate::{Diagnostic, Severity};

/// A SARIF 2.1.0 log with one run, one result per diagnostic, rules listed by name.
#[must_use]
pub fn render_sarif(diags: &[Diagnostic], rule_docs: &[(&str, &str)], version: &str) -> Value {
    let rules: Vec<Value> = rule_docs
        .iter()
        .map(|(name, summary)| json!({"id": name, "name": name, "shortDescription": {"text": summary}}))
        .collect();
    let results: Vec<Value> = diags.iter().map(result).collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "fluxgate", "version": version, "informationUri": "https://github.com/fluxgate/fluxgate", "rules": rules}},
            "results": results,
        }],
    })
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

fn physical(file: &str, line: u32, column: u32) -> Value {
    let mut region = json!({"startLine": line.max(1)});
    if column > 0 {
        region["startColumn"] = json!(column);
    }
    json!({"physicalLocation": {"artifactLocation": {"uri": file}, "region": region}})
}

fn result(d: &Diagnostic) -> Value {
    let env = d
        .environment_label()
        .map(|e| format!("[{e}] "))
        .unwrap_or_default();
    let mut r = json!({
        "ruleId": d.rule,
        "level": level(d.severity),
        "message": {"text": format!("{env}{}", d.message)},
    });
    if let Some(l) = &d.location {
        r["locations"] = json!([physical(&l.file, l.line, l.column)]);
    }
    if !d.related.is_empty() {
        let related: Vec<Value> = d
            .related
            .iter()
            .enumerate()
            .map(|(i, rel)| {
                let mut p = physical(&rel.location.file, rel.location.line, rel.location.column);
                p["id"] = json!(i);
                p["message"] = json!({"text": rel.message});
                p
            })
            .collect();
        r["relatedLocations"] = json!(related);
    }
    r
}
