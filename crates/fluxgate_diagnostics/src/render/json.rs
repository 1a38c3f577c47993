use serde_json::{Value, json};

use crate::Diagnostic;

/// The JSON shape of SPEC §4: `{"rule", "severity", "environment", "file", "line", "column",
/// "message", "requirements", "related": [{"file", "line", "message"}]}`.
#[must_use]
pub fn diagnostic_to_json(d: &Diagnostic) -> Value {
    let (file, line, column) = match &d.location {
        Some(l) => (
            Value::from(&*l.file),
            Value::from(l.line),
            Value::from(l.column),
        ),
        None => (Value::Null, Value::Null, Value::Null),
    };
    let related: Vec<Value> = d
        .related
        .iter()
        .map(|r| json!({"file": &*r.location.file, "line": r.location.line, "message": r.message}))
        .collect();
    let mut obj = json!({
        "rule": d.rule,
        "severity": d.severity.as_str(),
        "environment": d.environment,
        "file": file,
        "line": line,
        "column": column,
        "message": d.message,
        "requirements": d.requirements,
        "related": related,
    });
    if d.environments.len() > 1 {
        obj["environments"] = json!(d.environments);
    }
    if !d.notes.is_empty() {
        obj["notes"] = json!(d.notes);
    }
    if let Some(help) = &d.help {
        obj["help"] = json!(help);
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Annotate;
    use crate::{Location, Severity};

    #[test]
    fn shape_matches_spec() {
        let d = Diagnostic::new("ha-endpoint", Severity::Error, "dials a node")
            .at(Location::new("a.yaml", 9, 3))
            .related(Location::new("b.yaml", 31, 5), "consumed here")
            .in_env("prod");
        let v = diagnostic_to_json(&d);
        assert_eq!(v["file"], "a.yaml");
        assert_eq!(v["line"], 9);
        assert_eq!(v["environment"], "prod");
        assert_eq!(v["related"][0]["line"], 31);
        assert!(v.get("notes").is_none());
    }
}
