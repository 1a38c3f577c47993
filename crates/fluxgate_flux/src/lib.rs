//! Flux for fluxgate: post-build substitution ([`substitute`], with its variables in [`vars`]
//! and its text engine in [`envsubst`]) and HelmRelease effective values ([`helm`]), with the
//! origin of every value kept.

pub mod envsubst;
pub mod helm;
pub mod ignore;
mod pathmatch;
pub mod substitute;
pub mod tree;
pub mod vars;
