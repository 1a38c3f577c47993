//! Rules about the addresses a platform claims on its network: the VIP, the nodes, the
//! LoadBalancer Services and the LB IPAM pools (`address-conflict`).

pub mod address_conflict;
