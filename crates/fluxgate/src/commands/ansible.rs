//! `fluxgate ansible`: the hosts of an environment, each variable with its origin, a template
//! rendered for a host, and the flattened bootstrap order.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fluxgate_ansible::{Options, Origin, Project, Resolved};
use fluxgate_diagnostics::Diagnostic;
use serde_json::{Value as Json, json};

use crate::output::{Format, emit};
use fluxgate_check::Repo;

/// Arguments of `fluxgate ansible`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository (default: the current directory).
    pub repo: Option<PathBuf>,
    /// The environment whose Ansible inventory and playbook to read (from fluxgate.yaml).
    #[arg(long)]
    pub env: Option<String>,
    /// An inventory file or directory, relative to REPO (instead of --env).
    #[arg(long, value_name = "PATH")]
    pub inventory: Option<PathBuf>,
    /// The site playbook, relative to REPO (with --inventory).
    #[arg(long, value_name = "PATH")]
    pub playbook: Option<PathBuf>,
    /// An ansible.cfg, relative to REPO (with --inventory).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text", global = true)]
    pub format: Format,
    /// Print the values of secret variables (by name: `*password*`, `*token*`, `*secret*`,
    /// `vault_*`, `*_key`; or from a `vault*` file) instead of masking them; for local use.
    #[arg(long, global = true)]
    pub show_secrets: bool,
    #[command(subcommand)]
    pub what: What,
}

#[derive(clap::Subcommand)]
pub enum What {
    /// The hosts of the environment with their groups.
    Hosts,
    /// Every variable of HOST (or only VAR), each with its origin.
    Vars { host: String, var: Option<String> },
    /// Render a template for one host.
    Template {
        path: String,
        #[arg(long)]
        host: String,
    },
    /// The flattened play order: playbook file, play, hosts, roles and their tasks.
    Order,
}

struct Loaded {
    project: Project,
    group: Option<String>,
    config_diags: Vec<Diagnostic>,
}

fn load(args: &Args) -> anyhow::Result<Loaded> {
    let root = args
        .repo
        .clone()
        .unwrap_or_else(|| PathBuf::from("."))
        .canonicalize()?;
    // Paths name files of the repository: an absolute one, or one that leaves it, is a
    // usage error (the load restrictor every command has), never read.
    for (flag, p) in [
        ("--inventory", &args.inventory),
        ("--playbook", &args.playbook),
        ("--config", &args.config),
    ] {
        if let Some(p) = p {
            inside_repo(&root, p)
                .map_err(|why| anyhow::anyhow!("{flag} {}: {why}", p.display()))?;
        }
    }
    if let What::Template { path, .. } = &args.what {
        inside_repo(&root, Path::new(path))
            .map_err(|why| anyhow::anyhow!("template {path}: {why}"))?;
    }
    if let Some(inv) = &args.inventory {
        let project = Project::load(&Options {
            root,
            inventory: vec![inv.clone()],
            playbook: args.playbook.clone(),
            config: args.config.clone(),
            ..Options::default()
        });
        return Ok(Loaded {
            project,
            group: None,
            config_diags: Vec::new(),
        });
    }
    let Some(env_name) = &args.env else {
        anyhow::bail!("ansible needs --env NAME (or --inventory PATH)");
    };
    let repo = Repo::open(Some(&root))?;
    let env = repo.env(env_name)?;
    let Some(a) = &env.ansible else {
        anyhow::bail!("environment `{env_name}` has no ansible section");
    };
    let project = Project::load(&Options {
        root: repo.root.clone(),
        inventory: vec![PathBuf::from(&a.inventory)],
        playbook: a.playbook.as_ref().map(PathBuf::from),
        config: a.config.as_ref().map(PathBuf::from),
        ..Options::default()
    });
    Ok(Loaded {
        project,
        group: a.group.clone(),
        config_diags: repo.diagnostics.clone(),
    })
}

/// Whether `p` names something inside the repository at `root` (relative, and still
/// inside once `..` and symlinks are followed); the reason when not.
fn inside_repo(root: &Path, p: &Path) -> Result<(), String> {
    if p.is_absolute() {
        return Err(format!(
            "an absolute path; give a path relative to the repository {}",
            root.display()
        ));
    }
    let mut depth = 0_i32;
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return Err(format!("leaves the repository {}", root.display()));
        }
    }
    if let Ok(real) = root.join(p).canonicalize()
        && !real.starts_with(root)
    {
        return Err(format!(
            "leaves the repository {} (through a symlink)",
            root.display()
        ));
    }
    Ok(())
}

fn origin_json(o: &[Origin]) -> Json {
    Json::Array(
        o.iter()
            .map(|s| {
                json!({
                    "file": s.location.file.as_ref(),
                    "line": s.location.line,
                    "var": s.var_name(),
                    "host": s.host.as_deref().unwrap_or_default(),
                    "source": s.via,
                })
            })
            .collect(),
    )
}

fn value_json(r: &Resolved) -> Json {
    r.value.to_json()
}

fn origin_text(o: &[Origin]) -> String {
    o.iter()
        .enumerate()
        .map(|(i, s)| {
            if i == 0 {
                format!("{}:{} ({})", s.location.file, s.location.line, s.via)
            } else {
                format!(
                    "{} at {}:{}",
                    s.var_name(),
                    s.location.file,
                    s.location.line
                )
            }
        })
        .collect::<Vec<_>>()
        .join(" <- ")
}

fn print_diags(diags: &[Diagnostic]) {
    for d in diags {
        let loc = d
            .location
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        crate::output::warn(&format!(
            "{}: {} [{}] {}",
            d.severity, loc, d.rule, d.message
        ));
        for n in &d.notes {
            crate::output::warn(&format!("    note: {n}"));
        }
    }
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let loaded = load(args)?;
    // Vault values are opaque already (`<vault-encrypted>`); a Vault payload or SOPS value
    // that reaches a template's text is masked on the way out.
    // Variables that are secrets by name or by their vault file are masked wherever their
    // value (or its upper/lower-cased form) shows, unless --show-secrets.
    let project = &loaded.project;
    if args.show_secrets {
        crate::output::mask_with(fluxgate_diagnostics::redact::Redactor::default());
    } else {
        let secrets = fluxgate_check::Secrets::from_ansible(project, &project.hosts());
        crate::output::mask_with(secrets.redactor().clone());
    }
    let mut findings: Vec<Diagnostic> = loaded.config_diags.clone();
    findings.extend(
        project
            .problems()
            .iter()
            .map(fluxgate_rules::problems::finding),
    );
    let json = matches!(args.format, Format::Json);
    let mut out = String::new();
    match &args.what {
        What::Hosts => {
            let hosts = match &loaded.group {
                Some(g) => project.group_hosts(g),
                None => project.hosts(),
            };
            if json {
                let list: Vec<Json> = hosts
                    .iter()
                    .map(
                        |h| json!({"host": h, "groups": project.inventory().sorted_host_groups(h)}),
                    )
                    .collect();
                out = format!("{}\n", serde_json::to_string_pretty(&list)?);
            } else {
                for h in &hosts {
                    let _ = writeln!(
                        out,
                        "{h}  [{}]",
                        project.inventory().sorted_host_groups(h).join(", ")
                    );
                }
            }
        }
        What::Vars {
            host,
            var: Some(var),
        } => match project.resolve(host, var) {
            // A name the host does not have at all is a usage error, not a finding.
            Err(_) if !project.inventory().hosts.contains_key(host) => {
                anyhow::bail!("host `{host}` is not in the inventory");
            }
            Err(_) if !project.var_names(host).contains(var) => {
                anyhow::bail!(
                    "variable `{var}` is not defined for host `{host}` (`fluxgate ansible vars {host}` lists its variables)"
                );
            }
            Ok(r) => {
                if json {
                    let v = json!({"host": host, "var": var, "value": value_json(&r), "opaque": r.opaque, "origin": origin_json(&r.origin)});
                    out = format!("{}\n", serde_json::to_string_pretty(&v)?);
                } else {
                    let _ = writeln!(out, "{var} = {}", compact(&r));
                    let _ = writeln!(out, "  from {}", origin_text(&r.origin));
                }
            }
            Err(e) => findings.push(fluxgate_rules::problems::finding(&e.to_problem())),
        },
        What::Vars { host, var: None } => {
            anyhow::ensure!(
                project.inventory().hosts.contains_key(host),
                "host `{host}` is not in the inventory"
            );
            let all = project.host_vars(host);
            if json {
                let vars: serde_json::Map<String, Json> = all
                    .vars
                    .iter()
                    .map(|(k, r)| (k.clone(), json!({"value": value_json(r), "opaque": r.opaque, "origin": origin_json(&r.origin)})))
                    .collect();
                let errors: serde_json::Map<String, Json> = all
                    .errors
                    .iter()
                    .map(|(k, e)| {
                        (
                            k.clone(),
                            json!({"message": e.to_string(), "chain": origin_json(&e.chain)}),
                        )
                    })
                    .collect();
                let v = json!({"host": host, "vars": vars, "errors": errors});
                out = format!("{}\n", serde_json::to_string_pretty(&v)?);
            } else {
                for (k, r) in &all.vars {
                    let _ = writeln!(out, "{k} = {}", compact(r));
                    let _ = writeln!(out, "  from {}", origin_text(&r.origin));
                }
                for (k, e) in &all.errors {
                    let _ = writeln!(out, "{k}: error: {}", e.reason);
                    let _ = writeln!(out, "  via {}", origin_text(&e.chain));
                }
            }
            findings.extend(
                all.errors
                    .values()
                    .map(|e| fluxgate_rules::problems::finding(&e.to_problem())),
            );
        }
        What::Template { path, host } => match project.render_template(path, host) {
            Ok(t) => {
                if json {
                    let v = json!({"path": t.path, "host": t.host, "text": t.text, "value": t.value.as_ref().map(fluxgate_yaml::Node::to_json), "opaque": t.opaque});
                    out = format!("{}\n", serde_json::to_string_pretty(&v)?);
                } else {
                    out = t.text;
                }
            }
            Err(p) => findings.push(fluxgate_rules::problems::finding(&p)),
        },
        What::Order => {
            let order = project.order();
            if json {
                let plays: Vec<Json> = order.iter().map(|p| play_json(project, p)).collect();
                out = format!(
                    "{}\n",
                    serde_json::to_string_pretty(
                        &json!({"playbooks": project.playbook_files(), "plays": plays})
                    )?
                );
            } else {
                for p in &order {
                    let _ = writeln!(
                        out,
                        "{}. {} ({}:{})  hosts: {} -> [{}]",
                        p.index + 1,
                        p.play.name.as_deref().unwrap_or("(unnamed)"),
                        p.play.file,
                        p.play.loc.line,
                        p.play.hosts,
                        p.hosts.join(", ")
                    );
                    for r in &p.play.roles {
                        let _ = writeln!(out, "     role {r}");
                    }
                    for t in &p.play.tasks {
                        let tpl = t
                            .template
                            .as_ref()
                            .map(|t| format!(" src={}", t.src))
                            .unwrap_or_default();
                        let _ = writeln!(
                            out,
                            "       - {} [{}]{} ({}:{})",
                            t.name.as_deref().unwrap_or("(unnamed)"),
                            t.module,
                            tpl,
                            t.loc.file,
                            t.loc.line
                        );
                    }
                }
            }
        }
    }
    emit(&out)?;
    print_diags(&findings);
    let failed = findings
        .iter()
        .any(|d| d.severity == fluxgate_diagnostics::Severity::Error);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn compact(r: &Resolved) -> String {
    let j = r.value.to_json();
    let s = match &j {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    };
    if r.opaque {
        format!("{s} (opaque: vault)")
    } else {
        s
    }
}

fn play_json(project: &Project, p: &fluxgate_ansible::PlayOrder<'_>) -> Json {
    let roles: Vec<Json> = p
        .play
        .roles
        .iter()
        .map(|r| {
            let tasks: Vec<Json> = p
                .play
                .tasks
                .iter()
                .filter(|t| t.role.as_deref() == Some(r))
                .map(task_json)
                .collect();
            json!({"name": r, "path": project.roles().get(r).map(|x| x.path.clone()), "tasks": tasks})
        })
        .collect();
    let tasks: Vec<Json> = p
        .play
        .tasks
        .iter()
        .filter(|t| t.role.is_none())
        .map(task_json)
        .collect();
    json!({
        "file": p.play.file, "line": p.play.loc.line, "name": p.play.name,
        "hosts_pattern": p.play.hosts, "hosts": p.hosts, "roles": roles, "tasks": tasks,
        "imported_via": p.play.imported_via.iter().map(|l| json!({"file": l.file.as_ref(), "line": l.line})).collect::<Vec<_>>(),
    })
}

fn task_json(t: &fluxgate_ansible::Task) -> Json {
    json!({
        "name": t.name, "module": t.module, "file": t.loc.file.as_ref(), "line": t.loc.line,
        "register": t.register,
        "changed_when": t.changed_when.as_ref().map(fluxgate_yaml::Node::to_json),
        "check_mode": t.check_mode.as_ref().map(fluxgate_yaml::Node::to_json),
        "template": t.template.as_ref().map(|x| json!({"src": x.src, "resolved": x.resolved, "dest": x.dest})),
    })
}
