//! fluxgate_ansible (being written)
