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

pub mod charts;
pub mod claims;
pub mod config;
pub mod consumers;
pub mod discover;
pub mod endpoints;
pub mod environment;
mod error;
pub mod index;
mod model;
pub mod parity;
mod postrender;
pub mod problem;
pub mod requirements;
pub mod templates;
pub mod vip;
mod walk;

pub use environment::{
    Bootstrap, Environment, HelmfileInstall, Release, load_environment, load_environment_in,
    object_id,
};
pub use error::Error;
pub use index::{IndexedFile, RepoIndex};
pub use model::{Documents, Model, Schemas};
pub use problem::{Problem, ProblemKind};
pub use walk::yaml_files;

/// The helmfile layer, for the rules that read [`Environment::helmfiles`].
pub use fluxgate_helmfile as helmfile;
/// The confined filesystem the model reads a repository through (symlinks that leave the
/// root are refused), for readers that open a repository themselves (tests, benchmarks).
pub use fluxgate_kustomize::RealFs;

/// The renderers' types the model holds, for its readers (the rules), which never call a
/// renderer: they read what the load derived.
pub mod ansible {
    pub use fluxgate_ansible::{
        Play, PlayOrder, Project, RenderedTemplate, Task, TemplateUse, symbolic_var,
    };
}

/// What the Flux renderer recorded, as the model holds it.
pub mod flux {
    pub use fluxgate_flux::helm::{Origins, Values};
    pub use fluxgate_flux::tree::{FluxKustomization, Tree};
    pub use fluxgate_flux::vars::{RuntimeCreator, Vars};
}

/// SOPS as Flux's decryption reads it: whether a document or a file is SOPS output, and its
/// ciphertext values (never decrypted).
pub mod sops {
    pub use fluxgate_flux::vars::{
        carries_sops_metadata, decode_base64, is_sops_encrypted, is_sops_file,
        sops_ciphertext_values,
    };
}
