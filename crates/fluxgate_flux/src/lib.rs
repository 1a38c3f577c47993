//! fluxgate_flux (being written)
