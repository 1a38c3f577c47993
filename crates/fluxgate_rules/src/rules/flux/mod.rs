//! Rules about rendering the Flux tree: render errors and post-build substitution.

pub mod render;
pub mod substitution_undefined;
