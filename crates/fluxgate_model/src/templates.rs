//! Every Ansible template the rules read, rendered once while the environment loads.
//!
//! A rule never renders: the site playbook's `template` tasks (for each host of the
//! environment their play targets), the manifests an external k3s role deploys from
//! `k3s_server_manifests_templates` (for every host of the environment), the templates
//! `parity:` groups name and the ones contracts pass to `template(...)` are rendered here,
//! with the text of each template source, and the rules look them up. A mutant then reaches
//! exactly the files the load read.

use std::collections::BTreeMap;

use fluxgate_ansible::{Problem as AnsibleProblem, Project, RenderedTemplate};

use crate::config::{Config, ParitySource};

/// The variables through which an external k3s role (xanmanning.k3s) renders templates into
/// k3s' auto-deploy folder (`/var/lib/rancher/k3s/server/manifests`) and its static pods
/// (`/var/lib/rancher/k3s/agent/pod-manifests`: kube-vip, often).
pub const MANIFEST_TEMPLATES_VARS: &[&str] = &[
    "k3s_server_manifests_templates",
    "k3s_server_pod_manifests_templates",
];

/// The rendered templates of one environment's bootstrap, by (template path, host), and the
/// text of each template source.
#[derive(Clone, Debug, Default)]
pub struct Templates {
    rendered: BTreeMap<(String, String), Result<RenderedTemplate, AnsibleProblem>>,
    sources: BTreeMap<String, String>,
}

impl Templates {
    /// Renders every template a rule may read for `hosts` (the environment's hosts).
    #[must_use]
    pub fn render(project: &Project, hosts: &[String], config: &Config) -> Templates {
        let mut t = Templates::default();
        for po in project.order() {
            for task in &po.play.tasks {
                let Some(path) = task.template.as_ref().and_then(|t| t.resolved.as_deref()) else {
                    continue;
                };
                for host in po.hosts.iter().filter(|h| hosts.contains(h)) {
                    t.add(project, path, host);
                }
            }
        }
        for host in hosts {
            for path in auto_deploy_templates(project, host) {
                t.add(project, &path, host);
            }
        }
        let first = hosts.first();
        for group in &config.parity {
            for s in &group.sources {
                let ParitySource::Template { path, host, .. } = s else {
                    continue;
                };
                match host.as_deref() {
                    None | Some("primary") => {
                        if let Some(h) = first {
                            t.add(project, path, h);
                        }
                    }
                    Some(h) => t.add(project, path, h),
                }
            }
        }
        if let Some(h) = first {
            for c in &config.contracts {
                for path in c.template_paths() {
                    t.add(project, &path, h);
                }
            }
        }
        t
    }

    fn add(&mut self, project: &Project, path: &str, host: &str) {
        let key = (path.to_string(), host.to_string());
        if self.rendered.contains_key(&key) {
            return;
        }
        let rendered = project.render_template(path, host);
        if let Ok(r) = &rendered
            && !self.sources.contains_key(&r.path)
        {
            let text = project.read_source(&r.path).unwrap_or_default();
            self.sources.insert(r.path.clone(), text);
        }
        self.rendered.insert(key, rendered);
    }

    /// The template at `path` rendered for `host`, when the load rendered it (`None`: no rule
    /// asked for that pair, so it was not rendered).
    #[must_use]
    pub fn get(&self, path: &str, host: &str) -> Option<&Result<RenderedTemplate, AnsibleProblem>> {
        self.rendered.get(&(path.to_string(), host.to_string()))
    }

    /// The text of a rendered template's source (its path as [`RenderedTemplate::path`]).
    #[must_use]
    pub fn source(&self, path: &str) -> Option<&str> {
        self.sources.get(path).map(String::as_str)
    }

    /// Every render, in (path, host) order.
    pub fn iter(
        &self,
    ) -> impl Iterator<Item = (&(String, String), &Result<RenderedTemplate, AnsibleProblem>)> {
        self.rendered.iter()
    }
}

/// The templates an external k3s role deploys on `host` ([`MANIFEST_TEMPLATES_VARS`]), as
/// paths of the repository.
#[must_use]
pub fn auto_deploy_templates(project: &Project, host: &str) -> Vec<String> {
    let mut out = Vec::new();
    for var in MANIFEST_TEMPLATES_VARS {
        let Ok(list) = project.resolve(host, var) else {
            continue;
        };
        for item in list.value.as_seq().unwrap_or_default() {
            if let Some(path) = item.as_str().and_then(|n| project.find_template(n)) {
                out.push(path);
            }
        }
    }
    out
}
