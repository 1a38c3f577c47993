//! `ansible.cfg`: the `[defaults]` keys a static reading needs (`inventory`, `roles_path`).

use std::path::{Path, PathBuf};

/// What fluxgate reads from an `ansible.cfg`.
#[derive(Clone, Debug, Default)]
pub struct AnsibleCfg {
    /// Inventory sources, relative paths already joined to the config's directory.
    pub inventory: Vec<PathBuf>,
    /// Role search path, in order.
    pub roles_path: Vec<PathBuf>,
}

/// Parses the text of an `ansible.cfg` found in `dir`.
#[must_use]
pub fn parse_cfg(text: &str, dir: &Path) -> AnsibleCfg {
    let mut cfg = AnsibleCfg::default();
    let mut section = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            section = line[1..line.len() - 1].trim().to_string();
            continue;
        }
        if section != "defaults" {
            continue;
        }
        let Some((key, value)) = line.split_once('=').or_else(|| line.split_once(':')) else {
            continue;
        };
        let value = strip_inline_comment(value.trim());
        match key.trim() {
            "inventory" | "hostfile" => {
                cfg.inventory = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| dir.join(s))
                    .collect();
            }
            "roles_path" => {
                cfg.roles_path = value
                    .split(':')
                    .map(str::trim)
                    .filter(|s| !s.is_empty() && !s.starts_with('~') && !s.starts_with('$'))
                    .map(|s| dir.join(s))
                    .collect();
            }
            _ => {}
        }
    }
    cfg
}

fn strip_inline_comment(v: &str) -> &str {
    let cut = [" ;", " #", "\t;", "\t#"]
        .iter()
        .filter_map(|p| v.find(p))
        .min()
        .unwrap_or(v.len());
    v[..cut].trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_defaults() {
        let c = parse_cfg(
            "[defaults]\ninventory = inventory/x/hosts.ini  ; adapt\nroles_path = ~/.ansible/roles:./roles\n[ssh]\ninventory=no\n",
            Path::new("/r"),
        );
        assert_eq!(c.inventory, vec![PathBuf::from("/r/inventory/x/hosts.ini")]);
        assert_eq!(c.roles_path, vec![PathBuf::from("/r/./roles")]);
    }
}
