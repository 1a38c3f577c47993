//! fluxgate_kustomize (being written)
