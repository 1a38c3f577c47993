//! Rules about the control-plane endpoint: what running components dial (`ha-endpoint`) and
//! whether the API server's certificate covers it (`tls-san`).

pub(crate) mod consumers;
pub(crate) mod endpoints;
pub mod ha_endpoint;
pub mod tls_san;
