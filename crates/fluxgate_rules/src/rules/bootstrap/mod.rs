//! Rules about the bootstrap (Ansible, helmfile): the order a cold bootstrap runs in
//! (`bootstrap-order`), dry runs that lie (`check-mode-probe`) and hooks that run missing
//! files (`hook-path`).

pub mod bootstrap_order;
pub mod check_mode_probe;
mod helmfile_order;
pub mod hook_path;
