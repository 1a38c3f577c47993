//! Small helpers shared by rules.

use std::path::Path;

use fluxgate_model::config::RuleConfig;
use fluxgate_yaml::{Node, Value};

/// `path` relative to `root`, with `/` separators.
pub(crate) fn rel_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

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
pub(crate) fn node_count(env: &fluxgate_model::Environment) -> Option<(usize, String)> {
    if let Some(b) = &env.bootstrap
        && !b.hosts.is_empty()
    {
        return Some((b.hosts.len(), "the Ansible inventory".to_string()));
    }
    env.config
        .nodes
        .map(|n| (n as usize, "`nodes:` in fluxgate.yaml".to_string()))
}

/// The repository file (relative path) that defines a Secret called `name`, if any. Read
/// lazily: only render findings about a missing Secret ask.
pub(crate) fn repository_secret(root: &Path, name: &str) -> Option<String> {
    fluxgate_model::yaml_files(root).into_iter().find_map(|p| {
        let text = std::fs::read_to_string(&p).ok()?;
        if !text.contains(name) || !text.contains("Secret") {
            return None;
        }
        let file = rel_path(root, &p);
        fluxgate_yaml::parse_stream(&file, &text, fluxgate_yaml::Schema::Kube)
            .docs
            .iter()
            .any(|d| {
                d.str_at(&["kind"]) == Some("Secret")
                    && d.str_at(&["metadata", "name"]) == Some(name)
            })
            .then_some(file)
    })
}
