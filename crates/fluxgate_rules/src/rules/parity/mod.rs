//! Rules that compare the bootstrap with the steady state.

pub mod parity;
mod sources;
