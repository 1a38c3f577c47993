//! Inventory parsers (YAML and INI, host ranges) must never panic or hang on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for name in ["hosts.yml", "hosts.ini"] {
        let mut inv = fluxgate_ansible::Inventory::default();
        let mut diags = Vec::new();
        fluxgate_ansible::parse_inventory_text(&mut inv, name, text, &mut diags);
        inv.reconcile();
        for h in inv.hosts.keys() {
            let _ = inv.sorted_host_groups(h);
        }
        for g in inv.groups.keys() {
            let _ = inv.group_hosts(g);
        }
    }
    let _ = fluxgate_ansible::expand_hostname(text);
});
