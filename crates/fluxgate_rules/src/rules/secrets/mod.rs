//! Rules about secrets in the repository.

pub mod plaintext_secret;
