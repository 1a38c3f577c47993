//! The one error type of this crate: a renderer that could not write its format.

/// Why a renderer could not produce its output. Findings are never errors; this is fluxgate
/// itself failing to write a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The JUnit XML writer failed (quick-junit's serializer).
    #[error("cannot write the JUnit report")]
    Junit(#[from] quick_junit::SerializeError),
    /// A JSON-based report (JSON, SARIF) could not be serialized.
    #[error("cannot write the {format} report")]
    Json {
        /// The output format being written: `json` or `sarif`.
        format: &'static str,
        #[source]
        source: serde_json::Error,
    },
}
