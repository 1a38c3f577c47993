//! One module per command. Each exposes `Args` (clap) and `run(&Args) -> Result<ExitCode>`.

pub mod ansible;
pub mod base;
pub mod baseline;
pub mod check;
pub mod diff;
pub mod envs;
pub mod explain;
pub mod render;
pub mod rules;
pub mod values;
