//! Values and charts for unit tests, written briefly.

use fluxgate_gotemplate::Value;

/// A string.
pub(crate) fn s(x: &str) -> Value {
    Value::str(x)
}

/// A map of `entries`.
pub(crate) fn map(entries: &[(&str, Value)]) -> Value {
    Value::map(
        entries
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect(),
    )
}

/// A chart of `files` (path in the chart, text), loaded as from a folder.
pub(crate) fn chart(files: &[(&str, &str)]) -> crate::Chart {
    let files = files
        .iter()
        .map(|(p, t)| ((*p).to_string(), t.as_bytes().to_vec()))
        .collect();
    crate::Chart::from_files(files, "test").unwrap()
}
