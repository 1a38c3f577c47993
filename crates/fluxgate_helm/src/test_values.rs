//! Values for unit tests, written briefly.

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
