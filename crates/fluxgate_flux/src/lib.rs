//! Flux for fluxgate: post-build substitution ([`substitute`]), HelmRelease effective values
//! ([`helm`]), with the origin of every value kept.

pub mod envsubst;
