//! Rules about the Ansible bootstrap: the order a cold bootstrap runs in
//! (`bootstrap-order`) and dry runs that lie (`check-mode-probe`).

pub mod bootstrap_order;
pub mod check_mode_probe;
