//! Flux for fluxgate: post-build substitution ([`substitute`], with its variables in [`vars`]
//! and its text engine in [`envsubst`]) and HelmRelease effective values ([`helm`]), with the
//! origin of every value kept. What cannot be rendered is a typed [`problem::Problem`]. Lookups among rendered objects go through [`lookup`].

pub mod envsubst;
mod error;
pub mod helm;
pub mod ignore;
pub mod lookup;
mod pathmatch;
pub mod problem;
pub mod substitute;
pub mod tree;
pub mod vars;

pub use error::Error;
