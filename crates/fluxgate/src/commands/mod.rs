//! One module per command. Each exposes `Args` (clap) and `run(&Args) -> Result<ExitCode>`.

pub mod ansible;
pub mod envs;
pub mod render;
pub mod values;
