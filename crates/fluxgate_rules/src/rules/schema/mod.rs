//! Schema validation of the rendered objects (layer L0).

// The layout is rules/<family>/<rule>.rs; this family's only rule has the family's name.
#[allow(clippy::module_inception)]
pub mod schema;
