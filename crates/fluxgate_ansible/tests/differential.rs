//! Differential test against ansible-core: every variable of every host of the example
//! platform, of the `static_vars` fixture (include_vars, templated vars_files, inventory_dir
//! per host) and of the corpus repositories with inventories, resolved per play by fluxgate
//! and by `ansible-playbook` (one run per repository), must agree; the equal fraction per
//! repository may never drop below the recorded floor.
//!
//! Needs FLUXGATE_ANSIBLE_VENV (a venv with ansible-core) and, for the corpus repositories,
//! FLUXGATE_CORPUS. Without them the test prints why and passes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use fluxgate_ansible::{Options, Project, Scope};
use serde_json::{Value as Json, json};

struct Repo {
    name: &'static str,
    /// Directory, relative to the corpus (or absolute for the example).
    dir: PathBuf,
    inventory: &'static str,
    playbook: &'static str,
    config: Option<&'static str>,
    /// The recorded floor of the equal fraction (the measured value when it was recorded).
    floor: f64,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create copy dir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("dir entry");
        let name = e.file_name();
        if name == ".git" {
            continue;
        }
        let p = e.path();
        let t = to.join(&name);
        if p.is_dir() {
            copy_dir(&p, &t);
        } else if p.is_file() {
            std::fs::copy(&p, &t).expect("copy file");
        }
    }
}

/// Python's and Rust's numbers compare by value; everything else structurally.
fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[derive(Debug)]
enum Outcome {
    Value(Json),
    Opaque,
    Error(#[allow(dead_code)] String), // shown in the mismatch list
}

fn run_repo(venv: &Path, repo: &Repo) -> Option<(usize, usize, Vec<String>)> {
    let tmp = std::env::temp_dir().join(format!("fg-diff-{}-{}", repo.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    copy_dir(&repo.dir, &tmp);
    let project = Project::load(&Options {
        root: tmp.clone(),
        inventory: vec![repo.inventory.into()],
        playbook: Some(repo.playbook.into()),
        config: repo.config.map(Into::into),
        ..Options::default()
    });
    // fluxgate's side, and the generated playbook that asks ansible-core the same.
    let mut ours: BTreeMap<(usize, String, String), Outcome> = BTreeMap::new();
    let mut plays = Vec::new();
    let pb_dir = tmp
        .join(repo.playbook)
        .parent()
        .map(Path::to_path_buf)
        .expect("playbook dir");
    // The include_vars tasks fluxgate applied, as written, per role (they go back into the
    // copy's role tasks so that ansible-core resolves their paths itself).
    let mut role_includes: BTreeMap<String, Vec<(String, Json)>> = BTreeMap::new();
    let root = tmp.canonicalize().expect("copy root");
    let out_dir = tmp.join(".fgdump-out");
    std::fs::create_dir_all(&out_dir).expect("out dir");
    for p in project.order() {
        if p.hosts.is_empty() {
            continue;
        }
        let mut names: Vec<String> = Vec::new();
        for h in p.hosts {
            let table_names = project_var_names(&project, p.index, h);
            for n in table_names {
                let outcome = match project.resolve_in(&Scope::Play(p.index), h, &n) {
                    Ok(r) if r.opaque => Outcome::Opaque,
                    Ok(r) => Outcome::Value(r.value.to_json()),
                    Err(e) => Outcome::Error(e.to_string()),
                };
                ours.insert((p.index, h.clone(), n.clone()), outcome);
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let roles: Vec<Json> = p
            .play
            .role_refs
            .iter()
            .filter_map(|r| {
                let role = project.roles().get(&r.name)?;
                let mut m = serde_json::Map::new();
                m.insert("role".into(), json!(role.abs.display().to_string()));
                for (k, v) in &r.params {
                    m.insert(k.clone(), v.to_json());
                }
                Some(Json::Object(m))
            })
            .collect();
        let vars: serde_json::Map<String, Json> = p
            .play
            .vars
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json()))
            .collect();
        // As written when the generated playbook sits beside the play (ansible-core then
        // searches them itself), else absolute.
        let same_dir = p.play.dir == pb_dir;
        let vf_name = |n: &fluxgate_yaml::Node| {
            let s = n.scalar_text()?;
            Some(if same_dir {
                json!(s)
            } else {
                json!(p.play.dir.join(s).display().to_string())
            })
        };
        let vars_files: Vec<Json> = p
            .play
            .vars_files
            .iter()
            .filter_map(|n| match n.as_seq() {
                Some(list) => Some(Json::Array(list.iter().filter_map(vf_name).collect())),
                None => vf_name(n),
            })
            .collect();
        let (pre_tasks, mut tasks) =
            include_vars_tasks(&project, &p, &root, &pb_dir, &mut role_includes);
        plays.push(json!({
            "name": format!("fgdump-{}", p.index),
            "hosts": p.play.hosts,
            "gather_facts": false,
            "vars": vars,
            "vars_files": vars_files,
            "pre_tasks": pre_tasks,
            "roles": roles,
            "tasks": tasks.drain(..).chain([json!({
                "name": "dump",
                "ansible.builtin.debug": {"msg": "{{ lookup('ansible.builtin.vars', item) }}"},
                "loop": names,
                "ignore_errors": true,
                "register": "fgdump_result",
                "tags": ["fgdump"],
            }), json!({
                "name": "write",
                "ansible.builtin.copy": {
                    "content": "{{ fgdump_result.results | to_json }}",
                    "dest": format!("{}/{}-{{{{ inventory_hostname }}}}.json", out_dir.display(), p.index),
                },
                "tags": ["fgdump"],
            })]).collect::<Vec<_>>(),
        }));
    }
    if ours.is_empty() {
        println!(
            "{}: no host is selected by any play; nothing to compare",
            repo.name
        );
        let _ = std::fs::remove_dir_all(&tmp);
        return None;
    }
    // Role tasks may call modules of collections the oracle venv lacks; only the roles'
    // variables matter here, so the copy loses its tasks and handlers.
    // The include_vars tasks fluxgate applied stay.
    for (name, role) in project.roles() {
        for d in ["tasks", "handlers"] {
            let _ = std::fs::remove_dir_all(role.abs.join(d));
        }
        if let Some(list) = role_includes.get(name) {
            let tasks: Vec<&Json> = list.iter().map(|(_, t)| t).collect();
            std::fs::create_dir_all(role.abs.join("tasks")).expect("tasks dir");
            std::fs::write(
                role.abs.join("tasks/main.yml"),
                serde_json::to_string_pretty(&tasks).expect("json"),
            )
            .expect("write role tasks");
        }
    }
    let gen_path = pb_dir.join("__fluxgate_dump.yml");
    std::fs::write(
        &gen_path,
        serde_json::to_string_pretty(&Json::Array(plays)).expect("json"),
    )
    .expect("write playbook");
    let mut cmd = Command::new(venv.join("bin/ansible-playbook"));
    cmd.current_dir(&tmp)
        .arg("-i")
        .arg(tmp.join(repo.inventory))
        .arg(&gen_path)
        .args([
            "--tags",
            "fgdump",
            "--skip-tags",
            "always",
            "-e",
            "ansible_connection=local",
        ])
        .arg("-e")
        .arg(format!(
            "ansible_python_interpreter={}",
            venv.join("bin/python").display()
        ))
        .env("ANSIBLE_HOME", tmp.join(".ansible-home"))
        .env("ANSIBLE_LOCAL_TEMP", tmp.join(".ansible-tmp"))
        .env("ANSIBLE_REMOTE_TEMP", tmp.join(".ansible-tmp"))
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_HOST_KEY_CHECKING", "False");
    match repo.config {
        Some(c) => cmd.env("ANSIBLE_CONFIG", tmp.join(c)),
        None => cmd.env("ANSIBLE_CONFIG", tmp.join(".no-ansible.cfg")),
    };
    let out = cmd.output().expect("run ansible-playbook");
    let mut theirs: BTreeMap<(usize, String, String), Outcome> = BTreeMap::new();
    let mut files = 0;
    for e in std::fs::read_dir(&out_dir).expect("read out dir") {
        let path = e.expect("entry").path();
        let Some(stem) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        let Some((idx, host)) = stem.split_once('-') else {
            continue;
        };
        let Ok(idx) = idx.parse::<usize>() else {
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("read dump");
        let items: Json = serde_json::from_str(&text).expect("dump is JSON");
        files += 1;
        for item in items.as_array().into_iter().flatten() {
            let Some(var) = item["item"].as_str() else {
                continue;
            };
            let o = if item["failed"].as_bool() == Some(true) {
                let msg = item["msg"].as_str().unwrap_or_default().to_string();
                if msg.contains("vault") || msg.contains("Vault") {
                    Outcome::Opaque
                } else {
                    Outcome::Error(msg)
                }
            } else {
                Outcome::Value(item["msg"].clone())
            };
            theirs.insert((idx, host.to_string(), var.to_string()), o);
        }
    }
    assert!(
        files > 0,
        "{}: ansible-playbook wrote no results; stdout:\n{}\nstderr:\n{}",
        repo.name,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut equal = 0;
    let mut both_failed = 0;
    let mut diffs = Vec::new();
    for (key, o) in &ours {
        let t = theirs.get(key);
        let ok = match (o, t) {
            (Outcome::Value(a), Some(Outcome::Value(b))) => same(a, b),
            (Outcome::Opaque, Some(Outcome::Opaque))
            | (Outcome::Error(_), Some(Outcome::Error(_))) => true,
            _ => false,
        };
        if ok {
            equal += 1;
            if matches!(o, Outcome::Error(_)) {
                both_failed += 1;
            }
        } else {
            diffs.push(format!(
                "play {} host {} var {}: fluxgate {:?} ansible {:?}",
                key.0, key.1, key.2, o, t
            ));
        }
    }
    println!(
        "{}: {both_failed} of the equal results fail to template in both tools",
        repo.name
    );
    let _ = std::fs::remove_dir_all(&tmp);
    Some((equal, ours.len(), diffs))
}

/// The include_vars tasks fluxgate applied in one play, for the generated playbook: those of
/// a role the play lists (or one of its dependencies) go to `role_includes` as written; the
/// play's own are returned as written when the play sits beside the generated playbook (else
/// with the loaded path, absolute), split into those before the roles and those after.
fn include_vars_tasks(
    project: &Project,
    p: &fluxgate_ansible::PlayOrder<'_>,
    root: &Path,
    pb_dir: &Path,
    role_includes: &mut BTreeMap<String, Vec<(String, Json)>>,
) -> (Vec<Json>, Vec<Json>) {
    let mut listed: Vec<String> = p.play.role_refs.iter().map(|r| r.name.clone()).collect();
    let mut i = 0;
    while i < listed.len() {
        if let Some(role) = project.roles().get(&listed[i]) {
            for d in &role.dependencies {
                if !listed.contains(&d.name) {
                    listed.push(d.name.clone());
                }
            }
        }
        i += 1;
    }
    let first_role_task = p
        .play
        .tasks
        .iter()
        .position(|t| t.role.as_ref().is_some_and(|r| listed.contains(r)))
        .unwrap_or(usize::MAX);
    let (mut pre, mut post) = (Vec::new(), Vec::new());
    for (loc, file) in project.included_vars(p.index) {
        let Some((idx, task)) = p.play.tasks.iter().enumerate().find(|(_, t)| t.loc == loc) else {
            continue;
        };
        let as_written = json!({
            "name": format!("include_vars at {loc}"),
            task.module.clone(): task.args.to_json(),
            "tags": ["fgdump"],
        });
        if let Some(role) = task.role.as_ref().filter(|r| listed.contains(r)) {
            let list = role_includes.entry(role.clone()).or_default();
            if !list.iter().any(|(l, _)| *l == loc.to_string()) {
                list.push((loc.to_string(), as_written));
            }
            continue;
        }
        let task_dir = Path::new(&*loc.file).parent().map(Path::to_path_buf);
        let beside = task.role.is_none() && task_dir.is_some_and(|d| root.join(d) == pb_dir);
        let t = if beside {
            as_written
        } else {
            let abs = root.join(&file);
            let key = if abs.is_dir() { "dir" } else { "file" };
            let mut args = serde_json::Map::new();
            args.insert(key.into(), json!(abs.display().to_string()));
            if let Some(name) = task.args.str_at(&["name"]) {
                args.insert("name".into(), json!(name));
            }
            json!({"ansible.builtin.include_vars": args, "tags": ["fgdump"]})
        };
        if idx < first_role_task {
            pre.push(t);
        } else {
            post.push(t);
        }
    }
    (pre, post)
}

fn project_var_names(project: &Project, play: usize, host: &str) -> Vec<String> {
    project.var_names_in(&Scope::Play(play), host)
}

/// The virtual environment with ansible-core (`FLUXGATE_ANSIBLE_VENV`), or `None` after
/// saying why (a failure under CI).
fn oracle_venv(test: &str) -> Option<PathBuf> {
    let Some(venv) = std::env::var_os("FLUXGATE_ANSIBLE_VENV").map(PathBuf::from) else {
        fluxgate_testkit::missing(test, "FLUXGATE_ANSIBLE_VENV is not set");
        return None;
    };
    if !venv.join("bin/ansible-playbook").is_file() {
        let what = format!("no ansible-playbook in {}", venv.display());
        fluxgate_testkit::missing(test, &what);
        return None;
    }
    Some(venv)
}

#[test]
fn variables_agree_with_ansible_core() {
    const TEST: &str = "variables_agree_with_ansible_core";
    let Some(venv) = oracle_venv(TEST) else {
        return;
    };
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut repos = vec![
        Repo {
            name: "homelab",
            dir: manifest.join("../../examples/homelab"),
            inventory: "infra/ansible/inventory/hosts.yml",
            playbook: "infra/ansible/playbooks/site.yml",
            config: Some("infra/ansible/ansible.cfg"),
            floor: 1.0,
        },
        Repo {
            name: "static_vars",
            dir: manifest.join("tests/fixtures/static_vars"),
            inventory: "inventory",
            playbook: "site.yml",
            config: None,
            floor: 1.0,
        },
    ];
    match std::env::var_os("FLUXGATE_CORPUS").map(PathBuf::from) {
        Some(corpus) => {
            let g = corpus.join("gitops");
            repos.push(Repo {
                name: "techno-tim__k3s-ansible",
                dir: g.join("techno-tim__k3s-ansible"),
                inventory: "inventory/sample/hosts.ini",
                playbook: "site.yml",
                config: None,
                floor: 1.0,
            });
            repos.push(Repo {
                name: "k3s-io__k3s-ansible",
                dir: g.join("k3s-io__k3s-ansible"),
                inventory: "inventory-sample.yml",
                playbook: "playbooks/site.yml",
                config: Some("ansible.cfg"),
                floor: 1.0,
            });
            repos.push(Repo {
                name: "onedr0p__cluster-template",
                dir: g.join("onedr0p__cluster-template"),
                inventory: "ansible/inventory",
                playbook: "ansible/playbooks/cluster-installation.yml",
                config: Some("ansible.cfg"),
                floor: 1.0,
            });
        }
        None => fluxgate_testkit::missing(
            TEST,
            "FLUXGATE_CORPUS is not set: comparing the example platform only",
        ),
    }
    let mut failures = Vec::new();
    for repo in &repos {
        if !repo.dir.join(repo.inventory).exists() {
            println!("{}: {} missing, skipped", repo.name, repo.inventory);
            continue;
        }
        let Some((equal, total, diffs)) = run_repo(&venv, repo) else {
            continue;
        };
        #[allow(clippy::cast_precision_loss)] // counts are small
        let fraction = equal as f64 / total as f64;
        println!(
            "{}: {equal}/{total} equal ({:.1}%)",
            repo.name,
            fraction * 100.0
        );
        for d in diffs.iter().take(40) {
            println!("  {d}");
        }
        if fraction + 1e-9 < repo.floor {
            failures.push(format!(
                "{}: {:.4} < floor {:.4}",
                repo.name, fraction, repo.floor
            ));
        }
    }
    assert!(failures.is_empty(), "agreement dropped: {failures:?}");
}

/// Every `template` task of the example platform, rendered for every host of its play, must
/// equal what ansible-core's `template` lookup gives (one ansible-playbook run).
#[test]
fn example_templates_agree_with_ansible_core() {
    const TEST: &str = "example_templates_agree_with_ansible_core";
    let Some(venv) = oracle_venv(TEST) else {
        return;
    };
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab");
    if !src.join("infra/ansible/playbooks/site.yml").is_file() {
        fluxgate_testkit::missing(TEST, "examples/homelab has no Ansible playbook");
        return;
    }
    let tmp = std::env::temp_dir().join(format!("fg-tpl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    copy_dir(&src, &tmp);
    let project = Project::load(&Options {
        root: tmp.clone(),
        inventory: vec!["infra/ansible/inventory/hosts.yml".into()],
        playbook: Some("infra/ansible/playbooks/site.yml".into()),
        config: Some("infra/ansible/ansible.cfg".into()),
        ..Options::default()
    });
    let out_dir = tmp.join(".fgtpl-out");
    std::fs::create_dir_all(&out_dir).expect("out dir");
    let mut ours: BTreeMap<(usize, String, String), String> = BTreeMap::new();
    let mut plays = Vec::new();
    for p in project.order() {
        let templates: Vec<String> = p
            .play
            .tasks
            .iter()
            .filter_map(|t| t.template.as_ref().and_then(|x| x.resolved.clone()))
            .collect();
        if templates.is_empty() || p.hosts.is_empty() {
            continue;
        }
        for h in p.hosts {
            for t in &templates {
                let text = project
                    .render_template(t, h)
                    .map_or_else(|d| format!("ERROR {}", d.message), |r| r.text);
                ours.insert((p.index, h.clone(), t.clone()), text);
            }
        }
        let roles: Vec<Json> = p
            .play
            .roles
            .iter()
            .filter_map(|r| project.roles().get(r))
            .map(|r| json!({"role": r.abs.display().to_string()}))
            .collect();
        let abs: Vec<String> = templates
            .iter()
            .map(|t| tmp.join(t).display().to_string())
            .collect();
        plays.push(json!({
            "name": format!("fgtpl-{}", p.index),
            "hosts": p.play.hosts,
            "gather_facts": false,
            "vars": p.play.vars.iter().map(|(k, v)| (k.clone(), v.to_json())).collect::<serde_json::Map<_, _>>(),
            "roles": roles,
            "tasks": [{
                "ansible.builtin.debug": {"msg": "{{ lookup('ansible.builtin.template', item) }}"},
                "loop": abs, "ignore_errors": true, "register": "fgtpl", "tags": ["fgdump"],
            }, {
                "ansible.builtin.copy": {
                    "content": "{{ fgtpl.results | to_json }}",
                    "dest": format!("{}/{}-{{{{ inventory_hostname }}}}.json", out_dir.display(), p.index),
                },
                "tags": ["fgdump"],
            }],
        }));
    }
    for role in project.roles().values() {
        for d in ["tasks", "handlers"] {
            let _ = std::fs::remove_dir_all(role.abs.join(d));
        }
    }
    let gen_path = tmp.join("infra/ansible/playbooks/__fluxgate_tpl.yml");
    std::fs::write(
        &gen_path,
        serde_json::to_string_pretty(&Json::Array(plays)).expect("json"),
    )
    .expect("write");
    let out = Command::new(venv.join("bin/ansible-playbook"))
        .current_dir(&tmp)
        .arg("-i")
        .arg(tmp.join("infra/ansible/inventory/hosts.yml"))
        .arg(&gen_path)
        .args([
            "--tags",
            "fgdump",
            "--skip-tags",
            "always",
            "-e",
            "ansible_connection=local",
            "-e",
        ])
        .arg(format!(
            "ansible_python_interpreter={}",
            venv.join("bin/python").display()
        ))
        .env("ANSIBLE_CONFIG", tmp.join("infra/ansible/ansible.cfg"))
        .env("ANSIBLE_HOME", tmp.join(".ansible-home"))
        .env("ANSIBLE_LOCAL_TEMP", tmp.join(".ansible-tmp"))
        .output()
        .expect("run ansible-playbook");
    let mut equal = 0;
    let mut total = 0;
    for ((idx, host, path), text) in &ours {
        let file = out_dir.join(format!("{idx}-{host}.json"));
        let theirs: Json = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Json::Null);
        let abs = tmp.join(path).display().to_string();
        let item = theirs
            .as_array()
            .into_iter()
            .flatten()
            .find(|i| i["item"].as_str() == Some(abs.as_str()));
        let their_text = item.and_then(|i| i["msg"].as_str()).unwrap_or("<missing>");
        total += 1;
        // The lookup drops the template's final newline; the template module keeps it.
        if text.trim_end_matches('\n') == their_text.trim_end_matches('\n') {
            equal += 1;
        } else {
            println!(
                "DIFF {path} for {host}:\n--- fluxgate\n{text}\n--- ansible-core\n{their_text}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("homelab templates: {equal}/{total} equal");
    assert!(
        total > 0,
        "no template rendered; ansible stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(equal, total, "rendered templates differ from ansible-core");
}
