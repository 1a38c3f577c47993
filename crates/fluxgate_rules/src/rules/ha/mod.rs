//! Rules about the control-plane endpoint: what running components dial (`ha-endpoint`) and
//! whether the API server's certificate covers it (`tls-san`).

pub mod ha_endpoint;
mod kube_prism;
pub mod tls_san;

use fluxgate_model::endpoints::{Render, Topology, Vip, vips_of};

use crate::RuleContext;

/// The HA endpoints of the rule's environment ([`vips_of`]), with the rule's `vip_vars`.
pub(crate) fn vips(ctx: &RuleContext<'_>, topo: &Topology, renders: &[Render]) -> Vec<Vip> {
    vips_of(
        ctx.env,
        topo,
        renders,
        &crate::support::setting_strings(ctx.settings, "vip_vars"),
    )
}
