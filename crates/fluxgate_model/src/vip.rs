//! An environment's HA API endpoint, as far as it is known without rendering Flux: `vip:` in
//! fluxgate.yaml (an IP, a DNS name, or `{{ var }}` resolved on the environment's hosts),
//! else the first of [`VIP_VARS`] that its Ansible hosts set. A value that comes from an
//! encrypted file or a vault is never taken: what `envs` prints must not be a secret.

use std::path::{Path, PathBuf};

use fluxgate_ansible::{Options, Project};

use crate::config::{EnvConfig, is_valid_vip};

/// Ansible variables that hold the HA endpoint (SPEC §5.1).
pub const VIP_VARS: &[&str] = &[
    "kube_vip_address",
    "apiserver_endpoint",
    "k3s_registration_address",
    "control_plane_endpoint",
];

/// The endpoint and where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    /// `vip: in fluxgate.yaml`, `Ansible kube_vip_address`.
    pub source: String,
}

/// The HA endpoint of `env` in the repository at `root`, or `None` when it is unknown.
#[must_use]
pub fn endpoint(root: &Path, env: &EnvConfig) -> Option<Endpoint> {
    let raw = env.vip.as_deref();
    if let Some(v) = raw.filter(|v| !v.contains("{{")) {
        return Some(Endpoint {
            host: v.to_string(),
            source: "vip: in fluxgate.yaml".to_string(),
        });
    }
    if env.ansible.is_none()
        && raw.is_none()
        && let Some(path) = &env.talos
    {
        // A value from an encrypted talenv is unknown and never taken.
        let fs = fluxgate_kustomize::RealFs::new(root);
        let cluster = fluxgate_talos::load(&fs, root, path);
        return crate::endpoints::talos_vips(&cluster)
            .into_iter()
            .next()
            .map(|v| Endpoint {
                host: v.host,
                source: v.source,
            });
    }
    let a = env.ansible.as_ref()?;
    let project = Project::load(&Options {
        root: root.to_path_buf(),
        inventory: vec![PathBuf::from(&a.inventory)],
        playbook: a.playbook.as_ref().map(PathBuf::from),
        config: a.config.as_ref().map(PathBuf::from),
        ..Options::default()
    });
    let hosts = match &a.group {
        Some(g) => project.group_hosts(g),
        None => project.hosts(),
    };
    let vars: Vec<String> = match raw.and_then(jinja_var) {
        Some(var) => vec![var],
        None if raw.is_some() => return None,
        None => VIP_VARS.iter().map(|v| (*v).to_string()).collect(),
    };
    for host in &hosts {
        for var in &vars {
            let Ok(r) = project.resolve(host, var) else {
                continue;
            };
            let encrypted = r.origin.iter().any(|o| o.location.file.contains(".sops."));
            let Some(value) = r.value.scalar_text() else {
                continue;
            };
            let value = value.trim().to_string();
            if r.opaque || encrypted || value.contains("ENC[") || !is_valid_vip(&value) {
                continue;
            }
            if value.contains("{{") {
                continue;
            }
            return Some(Endpoint {
                host: value,
                source: match raw {
                    Some(_) => format!("vip: in fluxgate.yaml ({var})"),
                    None => format!("Ansible `{var}`"),
                },
            });
        }
    }
    None
}

/// `var` of a `{{ var }}` expression.
fn jinja_var(raw: &str) -> Option<String> {
    let inner = raw.trim().strip_prefix("{{")?.strip_suffix("}}")?.trim();
    (!inner.is_empty() && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AnsibleConfig;
    use crate::discover::temp_repo;
    use fluxgate_diagnostics::Location;

    fn env(vip: Option<&str>, group: Option<&str>) -> EnvConfig {
        EnvConfig {
            name: "prod".into(),
            flux: None,
            vip: vip.map(str::to_string),
            vip_loc: None,
            nodes: None,
            talos: None,
            ansible: Some(AnsibleConfig {
                inventory: "inventory/hosts.yml".into(),
                group: group.map(str::to_string),
                playbook: None,
                config: None,
            }),
            loc: Location::file("fluxgate.yaml"),
            reason: String::new(),
            flux_version: None,
            helmfile: Vec::new(),
        }
    }

    #[test]
    fn the_environment_s_own_hosts_say_its_vip() {
        let dir = temp_repo(
            "vip",
            &[
                (
                    "inventory/hosts.yml",
                    "dev:\n  hosts:\n    d1:\nprod:\n  hosts:\n    p1:\nvault:\n  hosts:\n    v1:\n",
                ),
                (
                    "inventory/group_vars/dev.yml",
                    "kube_vip_address: 10.0.1.9\n",
                ),
                (
                    "inventory/group_vars/prod.yml",
                    "apiserver_endpoint: 10.0.2.9\nlb: 10.0.2.8\n",
                ),
                (
                    "inventory/host_vars/v1/vip.sops.yml",
                    "kube_vip_address: 10.6.6.6\nsops: {version: 3.8.1}\n",
                ),
            ],
        );
        let found = endpoint(&dir, &env(None, Some("prod"))).expect("a VIP");
        assert_eq!(found.host, "10.0.2.9");
        assert_eq!(found.source, "Ansible `apiserver_endpoint`");
        let declared = endpoint(&dir, &env(Some("192.168.2.9"), Some("prod"))).expect("declared");
        assert_eq!(declared.host, "192.168.2.9");
        let expr = endpoint(&dir, &env(Some("{{ lb }}"), Some("prod"))).expect("resolved");
        assert_eq!(expr.host, "10.0.2.8");
        assert_eq!(
            endpoint(&dir, &env(Some("{{ nothing }}"), Some("prod"))),
            None
        );
        // A value from an encrypted file is never printed, even when nothing else is known.
        let project = Project::load(&Options {
            root: dir.clone(),
            inventory: vec!["inventory/hosts.yml".into()],
            ..Options::default()
        });
        assert!(
            project.resolve("v1", "kube_vip_address").is_ok(),
            "the file is read"
        );
        assert_eq!(endpoint(&dir, &env(None, Some("vault"))), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn jinja_var_is_a_bare_name() {
        assert_eq!(jinja_var("{{ kube_vip }}").as_deref(), Some("kube_vip"));
        assert_eq!(jinja_var("{{ a | default('x') }}"), None);
        assert_eq!(jinja_var("10.0.0.1"), None);
    }
}
