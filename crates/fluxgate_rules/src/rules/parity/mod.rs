//! Rules that compare the bootstrap with the steady state.

// The layout is rules/<family>/<rule>.rs; this family's one rule has the family's name.
mod builtin;
#[allow(clippy::module_inception)]
pub mod parity;
