//! Hooks: read and shown, their templates rendered with `.Event`, the paths they would run
//! or read checked against the repository. Nothing is run.

use std::path::Path;

use fluxgate_gotemplate::Value;
use fluxgate_yaml::Node;

use crate::funcs::Ctx;
use crate::render::render;
use crate::state::{Hook, HookPath};

/// Interpreters whose first operand is a script they run.
const INTERPRETERS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "python", "python3", "node", "pwsh", "ruby", "perl",
];

/// The hooks of a release item (`hooks:`), rendered with `data` plus `.Event`. Each hook runs
/// in the state file's folder `base`.
pub(crate) fn read(ctx: &Ctx, base: &Path, item: &Node, data: &Value) -> Vec<Hook> {
    let Some(list) = item.get("hooks").and_then(Node::as_seq) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for h in list {
        let events: Vec<String> = h
            .get("events")
            .and_then(Node::as_seq)
            .map(|s| s.iter().filter_map(Node::scalar_text).collect())
            .unwrap_or_default();
        let event = events.first().cloned().unwrap_or_default();
        let data = with_event(data, &event);
        let text = |n: &Node| {
            let raw = n.scalar_text().unwrap_or_default();
            if raw.contains("{{") {
                render(ctx, base, &n.loc.file, &raw, &data, false).map_or(raw, |t| t.text)
            } else {
                raw
            }
        };
        let Some(command) = h.get("command") else {
            continue;
        };
        let cmd = text(command);
        let arg_nodes: Vec<&Node> = h
            .get("args")
            .and_then(Node::as_seq)
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        let args: Vec<String> = arg_nodes.iter().map(|n| text(n)).collect();
        let mut paths = Vec::new();
        let mut check = |written: &str, loc: &fluxgate_diagnostics::Location, script: bool| {
            if written.is_empty() || written.contains("://") || written == "-" {
                return;
            }
            let Ok(abs) = ctx.inside(base, written) else {
                return;
            };
            paths.push(HookPath {
                written: written.to_string(),
                resolved: ctx.rel(&abs),
                exists: ctx.fs.is_file(&abs) || (!script && ctx.fs.is_dir(&abs)),
                loc: loc.clone(),
                script,
            });
        };
        if cmd.contains('/') {
            check(&cmd, &command.loc, true);
        }
        let name = cmd.rsplit('/').next().unwrap_or(&cmd);
        if INTERPRETERS.contains(&name) {
            // `bash -c '...'` runs inline text; otherwise the first operand is the script.
            if !args.iter().any(|a| a == "-c")
                && let Some(i) = args.iter().position(|a| !a.starts_with('-'))
            {
                check(&args[i], &arg_nodes[i].loc, true);
            }
        }
        if name == "kubectl" || name == "kustomize" {
            let mut i = 0;
            while i < args.len() {
                let a = &args[i];
                let (flag, value) = match a.split_once('=') {
                    Some((f, v)) => (f, Some(v.to_string())),
                    None => (a.as_str(), args.get(i + 1).cloned()),
                };
                if matches!(flag, "-f" | "--filename" | "-k" | "--kustomize")
                    && let Some(v) = value
                {
                    let at = if a.contains('=') { i } else { i + 1 };
                    check(&v, &arg_nodes[at.min(arg_nodes.len() - 1)].loc, false);
                    i = at;
                }
                i += 1;
            }
        }
        out.push(Hook {
            name: h.get("name").and_then(Node::scalar_text),
            events,
            command: cmd,
            args,
            loc: h.loc.clone(),
            paths,
        });
    }
    out
}

fn with_event(data: &Value, event: &str) -> Value {
    let d = data.deep_copy();
    if let Value::Map(m) = &d {
        m.borrow_mut().insert(
            "Event".to_string(),
            Value::map(
                [
                    ("Name".to_string(), Value::from(event)),
                    ("Error".to_string(), Value::Nil),
                ]
                .into_iter()
                .collect(),
            ),
        );
    }
    d
}
