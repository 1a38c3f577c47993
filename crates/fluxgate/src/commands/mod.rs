//! One module per command. Each exposes `Args` (clap) and `run(&Args) -> Result<ExitCode>`.

pub mod ansible;
pub mod base;
pub mod baseline;
pub mod check;
pub mod coverage;
pub mod diff;
pub mod envs;
pub mod explain;
pub mod fetch;
pub mod mutate;
pub mod policy;
pub mod render;
pub mod rules;
pub mod template;
pub mod values;
