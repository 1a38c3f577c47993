//! The repository model: `fluxgate.yaml` ([`config`]) and environment discovery
//! ([`discover`]) when there is no config.
//!
//! ```
//! use fluxgate_model::config::parse_config;
//! let (cfg, diags) = parse_config("fluxgate.yaml", "environments:\n  prod:\n    flux: clusters/prod\n");
//! assert!(diags.is_empty());
//! assert_eq!(cfg.environments[0].name, "prod");
//! ```

pub mod config;
pub mod discover;
pub mod environment;
mod error;
pub mod vip;
mod walk;

pub use environment::{Bootstrap, Environment, Release, load_environment, object_id};
pub use error::Error;
pub use walk::yaml_files;
