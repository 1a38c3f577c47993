//! The rules, one file each, grouped by family. Each declares itself with
//! [`crate::declare_rule!`] and is listed in [`crate::registry::RULES`].

pub mod bootstrap;
pub mod config;
pub mod flux;
pub mod ha;
pub mod network;
pub mod parity;
pub mod rollout;
pub mod schema;
pub mod secrets;
