//! Renderers, one file per output format. Each takes diagnostics already sorted.

mod json;
mod text;

pub use json::diagnostic_to_json;
pub use text::{SourceLookup, render_text};
