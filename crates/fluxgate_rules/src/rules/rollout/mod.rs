//! Rules about how changes roll out over the nodes.

pub mod rollout_blast_radius;
