//! Small helpers shared by rules.

use fluxgate_model::Documents;
use fluxgate_model::config::RuleConfig;
use fluxgate_yaml::{Node, Value};

/// A list-of-strings setting (`rules.<name>.settings.<key>`); a single string counts as one.
pub(crate) fn setting_strings(settings: &RuleConfig, key: &str) -> Vec<String> {
    match settings.settings.get(key).map(|n| &n.value) {
        Some(Value::Seq(items)) => items.iter().filter_map(Node::scalar_text).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// The environment's node count and where it came from: the hosts of its Ansible group, else
/// `nodes:` in fluxgate.yaml.
pub fn node_count(env: &fluxgate_model::Environment) -> Option<(usize, String)> {
    if let Some(b) = &env.bootstrap
        && !b.hosts.is_empty()
    {
        return Some((b.hosts.len(), "the Ansible inventory".to_string()));
    }
    if let Some(t) = &env.talos
        && !t.nodes.is_empty()
    {
        return Some((
            t.nodes.len(),
            format!(
                "the Talos config {}: {} control plane, {} worker",
                t.source,
                t.control_planes().count(),
                t.workers().count()
            ),
        ));
    }
    env.config
        .nodes
        .map(|n| (n as usize, "`nodes:` in fluxgate.yaml".to_string()))
}

/// The repository file (relative path) that defines a Secret called `name`, if any, from the
/// repository index (built on the first question: only render findings about a missing
/// Secret ask).
pub(crate) fn repository_secret(repo: Documents<'_>, name: &str) -> Option<String> {
    repo.secret_file(name).map(str::to_string)
}
