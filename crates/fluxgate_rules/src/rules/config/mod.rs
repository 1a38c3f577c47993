//! `fluxgate.yaml` itself: its own mistakes (`config`) and the user's contracts
//! (`contract:<id>`). Neither runs in the rule loop; they are registered so that every finding
//! names a rule that `fluxgate explain` describes and SARIF lists.

// The layout is rules/<family>/<rule>.rs; this family's first rule has the family's name.
#[allow(clippy::module_inception)]
pub mod config;
pub mod contract;
pub mod policy;
