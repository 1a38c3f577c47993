//! Stand-in for the `patch` module until it lands: every patch reports that patching is not
//! available. Replaced by `mod patch;` in lib.rs.

use fluxgate_yaml::Node;

pub fn strategic_merge(_target: &mut Node, _patch: &Node) -> Result<(), String> {
    Err("strategic merge patches are not implemented yet".into())
}

pub fn json6902(_target: &mut Node, _ops: &Node) -> Result<(), String> {
    Err("JSON 6902 patches are not implemented yet".into())
}

pub fn selector_matches(_obj: &Node, _selector: &Node) -> Result<bool, String> {
    Err("patch targets are not implemented yet".into())
}
