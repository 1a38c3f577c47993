//! The repository model: `fluxgate.yaml` ([`config`]), environment discovery ([`discover`])
//! when there is no config, each rendered [`Environment`], and what the rules read of it:
//! the nodes and HA endpoints ([`endpoints`]: topology, VIPs, bootstrap template renders),
//! the components that dial the API server ([`consumers`]) and the addresses claimed on the
//! network ([`claims`]).
//!
//! ```
//! use fluxgate_model::config::parse_config;
//! let (cfg, diags) = parse_config("fluxgate.yaml", "environments:\n  prod:\n    flux: clusters/prod\n");
//! assert!(diags.is_empty());
//! assert_eq!(cfg.environments[0].name, "prod");
//! ```

pub mod claims;
pub mod config;
pub mod consumers;
pub mod discover;
pub mod endpoints;
pub mod environment;
mod error;
pub mod index;
pub mod problem;
pub mod vip;
mod walk;

pub use environment::{
    Bootstrap, Environment, Release, load_environment, load_environment_in, object_id,
};
pub use error::Error;
pub use index::{IndexedFile, RepoIndex};
pub use problem::{Problem, ProblemKind};
pub use walk::yaml_files;
