//! `hook-path`: a helmfile hook runs a script or applies a file that is not in the repository.

use fluxgate_diagnostics::{Annotate, Diagnostic};

use crate::RuleContext;

crate::declare_rule! {
    /// ## What it checks
    /// Every hook of the helmfiles that bootstrap an environment (`presync`, `postsync`,
    /// `prepare`, ... of each release): the script its command runs (a command written as a
    /// path, or the first operand of `bash`, `sh`, `python` and other interpreters) and the
    /// files `kubectl`/`kustomize` apply (`-f`, `--filename`, `-k`, `--kustomize`) must exist.
    /// Paths are relative to the helmfile's folder, where helmfile runs hooks. Hooks are never
    /// run; what they would do is read from their command line.
    ///
    /// ## Why it matters
    /// A hook that fails stops `helmfile sync` at that release: a `presync` hook before the
    /// release is installed, a `postsync` hook after it, leaving every release that needs it
    /// uninstalled. On a cold bootstrap that is the CNI, CoreDNS or Flux itself.
    ///
    /// ## Example
    /// ```yaml
    /// releases:
    ///   - name: cilium
    ///     hooks:
    ///       - events: [presync]
    ///         command: bash
    ///         args: [./scripts/wait-for-nodes.sh]   # the file is scripts/wait-nodes.sh
    /// ```
    ///
    /// ## How to fix
    /// Fix the path (relative to the helmfile's folder) or add the script to the repository.
    pub static HOOK_PATH = {
        name: "hook-path",
        severity: Error,
        scope: Environment,
        check: check,
    }
}

fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    for hf in &ctx.env.helmfiles {
        for state in &hf.states {
            for r in &state.releases {
                for h in &r.hooks {
                    for p in h.paths.iter().filter(|p| !p.exists) {
                        let what = if p.script {
                            "runs the script"
                        } else {
                            "applies"
                        };
                        out.push(
                            ctx.finding(format!(
                                "the {} hook `{}` of release {} {what} {}, which does not \
                                 exist ({}): helmfile sync fails at this release",
                                h.events.join("/"),
                                h.name.as_deref().unwrap_or(&h.command),
                                r.id(),
                                p.written,
                                p.resolved
                            ))
                            .at(p.loc.clone())
                            .related(h.loc.clone(), "the hook")
                            .help(
                                "hooks run in the helmfile's folder: fix the path relative \
                                 to it, or add the file",
                            ),
                        );
                    }
                }
            }
        }
    }
}
