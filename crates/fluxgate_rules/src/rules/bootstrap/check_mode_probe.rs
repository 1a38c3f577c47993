//! `check-mode-probe`: a read-only probe skipped under `--check` (SPEC §5.8).

use fluxgate_diagnostics::Annotate;
use std::collections::BTreeSet;

use fluxgate_diagnostics::Diagnostic;
use fluxgate_model::ansible::Task;
use fluxgate_yaml::{Node, Value};

use crate::RuleContext;

crate::declare_rule! {
    /// ## What it checks
    /// A read-only Ansible probe — a `command`, `shell`, `raw` or `script` task with
    /// `changed_when: false` and `register:` — that lacks `check_mode: false` while a later
    /// task reads what it registered. A later task guarded by `not ansible_check_mode` does
    /// not count.
    ///
    /// ## Why it matters
    /// Under `ansible-playbook --check` these modules are skipped: the registered result has no
    /// `stdout` or `rc`, and the task that reads it fails or decides wrongly, with a message
    /// that points anywhere but at the probe. A dry run is the one run that must not lie.
    ///
    /// ## Example
    /// ```yaml
    /// - name: Find the interface that routes to the VIP
    ///   ansible.builtin.command: ip -o -4 route get {{ kube_vip_address }}
    ///   register: kube_vip_route
    ///   changed_when: false           # read-only, but skipped under --check
    /// - ansible.builtin.assert:
    ///     that: kube_vip_route.stdout is search('dev ' ~ kube_vip_interface)
    /// ```
    ///
    /// ## How to fix
    /// Add `check_mode: false` to the probe: it changes nothing, so it may run in a dry run.
    pub static CHECK_MODE_PROBE = {
        name: "check-mode-probe",
        severity: Warning,
        scope: Environment,
        check: check,
    }
}

const PROBE_MODULES: &[&str] = &["command", "shell", "raw", "script"];

fn is_false(n: Option<&Node>) -> bool {
    match n.map(|n| &n.value) {
        Some(Value::Bool(b)) => !b,
        Some(Value::String(s)) => matches!(s.trim().to_ascii_lowercase().as_str(), "false" | "no"),
        _ => false,
    }
}

/// Whether a task is a read-only probe that a dry run skips.
fn is_probe(task: &Task) -> bool {
    PROBE_MODULES.contains(&task.short_module())
        && task.register.is_some()
        && is_false(task.changed_when.as_ref())
        && !is_false(task.check_mode.as_ref())
        && !when_text(task).contains("not ansible_check_mode")
}

fn when_text(task: &Task) -> String {
    let mut s = String::new();
    if let Some(w) = &task.when {
        text(w, &mut s);
    }
    s
}

fn text(node: &Node, out: &mut String) {
    match &node.value {
        Value::Map(m) => m.iter().for_each(|(k, v)| {
            out.push_str(k);
            out.push(' ');
            text(v, out);
        }),
        Value::Seq(s) => s.iter().for_each(|v| text(v, out)),
        _ => {
            out.push_str(&node.scalar_text().unwrap_or_default());
            out.push(' ');
        }
    }
}

/// Whether `var` appears as a whole word in `hay`.
fn mentions(hay: &str, var: &str) -> bool {
    hay.match_indices(var).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + var.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// Everything a task reads: its arguments and its keywords (when, loop, failed_when...).
fn task_text(task: &Task) -> String {
    let mut s = String::new();
    text(&task.args, &mut s);
    for (k, v) in &task.keywords {
        if k != "register" && k != "name" {
            text(v, &mut s);
        }
    }
    for n in [&task.when, &task.changed_when].into_iter().flatten() {
        text(n, &mut s);
    }
    s
}

fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(boot) = &ctx.env.bootstrap else {
        return;
    };
    let order = boot.project.order();
    let targets = |hosts: &[String]| hosts.iter().any(|h| boot.hosts.contains(h));
    // Tasks in run order, across plays (registered results live on per host).
    let tasks: Vec<&Task> = order
        .iter()
        .filter(|po| targets(po.hosts) || boot.hosts.is_empty())
        .flat_map(|po| po.play.tasks.iter())
        .collect();
    let mut reported = BTreeSet::new();
    for (i, probe) in tasks.iter().enumerate() {
        if !is_probe(probe) || reported.contains(&probe.loc) {
            continue;
        }
        let var = probe.register.as_deref().unwrap_or_default();
        // Up to the next task that registers the same name: from there on the variable
        // holds that task's result (and a task reading its own result, in `until:`, reads
        // nothing of the probe's).
        let reader = tasks[i + 1..]
            .iter()
            .take_while(|t| t.register.as_deref() != Some(var))
            .find(|t| {
                mentions(&task_text(t), var) && !when_text(t).contains("not ansible_check_mode")
            });
        let Some(reader) = reader else {
            continue;
        };
        reported.insert(probe.loc.clone());
        let name = probe.name.as_deref().unwrap_or(&probe.module);
        out.push(
            ctx.finding(format!(
                "read-only probe `{name}` has no `check_mode: false`: under --check it is \
                 skipped and `{var}` holds no result for the task that reads it"
            ))
            .at(probe.loc.clone())
            .related(reader.loc.clone(), format!("reads `{var}`"))
            .help("add `check_mode: false` to the probe"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words() {
        assert!(mentions(
            "kube_vip_route.stdout is search",
            "kube_vip_route"
        ));
        assert!(!mentions("kube_vip_route_2.stdout", "kube_vip_route"));
        assert!(!mentions("my_kube_vip_route", "kube_vip_route"));
    }
}
