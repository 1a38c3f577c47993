//! The `static_vars` fixture: what blocks, imports and role references pass down to their
//! tasks, static `include_vars` at its precedence level, templated `vars_files` per host and
//! `inventory_dir` per host. `tests/differential.rs` checks the same variables against
//! ansible-core.

use std::path::PathBuf;

use fluxgate_ansible::ProblemKind;
use fluxgate_ansible::{Options, Project, Scope, Task};
use fluxgate_yaml::{Node, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/static_vars")
}

fn project() -> Project {
    Project::load(&Options {
        root: root(),
        inventory: vec!["inventory".into()],
        playbook: Some("site.yml".into()),
        ..Options::default()
    })
}

fn task(p: &Project, play: usize, name: &str) -> Task {
    p.order()[play]
        .play
        .tasks
        .iter()
        .find(|t| t.name.as_deref() == Some(name))
        .cloned()
        .unwrap_or_else(|| panic!("task {name} in play {play}"))
}

/// Each condition of a `when` with the line it was written on.
fn conditions(n: &Node) -> Vec<(String, u32)> {
    match &n.value {
        Value::Seq(s) => s
            .iter()
            .map(|c| (c.scalar_text().unwrap_or_default(), c.loc.line))
            .collect(),
        _ => vec![(n.scalar_text().unwrap_or_default(), n.loc.line)],
    }
}

fn tags(t: &Task) -> Vec<String> {
    match t.keywords.get("tags").map(|n| &n.value) {
        Some(Value::Seq(s)) => s.iter().filter_map(Node::scalar_text).collect(),
        Some(_) => t.keywords["tags"].scalar_text().into_iter().collect(),
        None => Vec::new(),
    }
}

#[test]
fn block_tasks_inherit_the_block_keywords() {
    let p = project();
    let probe = task(&p, 0, "Probe");
    assert_eq!(
        (probe.loc.file.as_ref(), probe.loc.line),
        ("site.yml", 27),
        "a task keeps its own file:line"
    );
    let when = probe.when.as_ref().expect("inherited when");
    assert_eq!(
        conditions(when),
        [("not ansible_check_mode".to_string(), 19)]
    );
    assert_eq!(
        probe.check_mode.as_ref().and_then(Node::as_bool),
        Some(false)
    );
    assert_eq!(probe.keywords["become"].as_bool(), Some(true));
    assert_eq!(tags(&probe), ["guarded"]);
    let vars = probe.keywords["vars"].as_map().expect("vars");
    assert_eq!(vars["block_var"].as_i64(), Some(1));
    assert_eq!(vars["shared"].as_str(), Some("task"), "the task's vars win");

    // Nested blocks: outer conditions first, the task's own last; its own become wins.
    let inner = task(&p, 0, "Inner");
    assert_eq!(
        conditions(inner.when.as_ref().expect("when")),
        [
            ("not ansible_check_mode".to_string(), 19),
            ("probe.rc == 0".to_string(), 34),
            ("inner_ok | default(true)".to_string(), 40),
        ]
    );
    assert_eq!(inner.keywords["become"].as_bool(), Some(false));
    assert_eq!(
        inner.keywords["vars"].as_map().map(indexmap::IndexMap::len),
        Some(2)
    );

    // `always:` and a static import in it: the import's condition is ANDed too.
    let imported = task(&p, 0, "Imported task");
    assert_eq!(imported.loc.file.as_ref(), "extra/more_tasks.yml");
    assert_eq!(
        conditions(imported.when.as_ref().expect("when"))
            .into_iter()
            .map(|c| c.0)
            .collect::<Vec<_>>(),
        ["not ansible_check_mode", "finally | default(true)"]
    );
    assert_eq!(tags(&imported), ["guarded"]);
}

#[test]
fn role_tasks_inherit_the_role_reference_keywords() {
    let p = project();
    // The dependency's tasks get the dependency reference's condition and become; the
    // play's reference passes its tags and become to both roles (a task's own wins).
    let base = task(&p, 0, "Base probe");
    assert_eq!(base.role.as_deref(), Some("base"));
    assert_eq!(
        conditions(base.when.as_ref().expect("when"))[0].0,
        "base_enabled | default(true)"
    );
    assert_eq!(base.keywords["become"].as_bool(), Some(true));
    assert_eq!(tags(&base), ["app"]);
    let app = task(&p, 0, "Override the role's variables");
    assert!(app.when.is_none());
    assert_eq!(app.keywords["become"].as_bool(), Some(false));
}

fn value(p: &Project, scope: &Scope, host: &str, var: &str) -> serde_json::Value {
    p.resolve_in(scope, host, var)
        .unwrap_or_else(|e| panic!("{var} for {host}: {}", e.reason))
        .value
        .to_json()
}

#[test]
fn include_vars_rank_above_role_and_play_vars() {
    let p = project();
    let play = Scope::Play(0);
    assert_eq!(value(&p, &play, "web-1", "layer"), "include_vars");
    let r = p.resolve_in(&play, "web-1", "layer").unwrap();
    assert_eq!(r.origin[0].via, "include_vars");
    assert_eq!(
        r.origin[0].location.file.as_ref(),
        "roles/app/vars/overrides.yml"
    );
    assert_eq!(value(&p, &play, "web-1", "app_port"), 8080);
    assert_eq!(value(&p, &play, "web-1", "app_url"), "http://web-1:8080");
    // Tasks run in order: the role's include_vars come after the pre_tasks' one.
    assert_eq!(value(&p, &play, "web-1", "order_probe"), "role");
    assert_eq!(value(&p, &play, "web-1", "play_level"), "loaded");
    // A folder: folder by folder, files in name order (sub/ after the top files).
    assert_eq!(value(&p, &play, "web-1", "conf_shared"), "c");
    assert_eq!(value(&p, &play, "web-1", "conf_a"), 1);
    // Included variables stay on the host for the later plays, above their play vars.
    assert_eq!(value(&p, &Scope::Play(2), "web-2", "layer"), "include_vars");
    // `name:` puts the file's variables under one key.
    assert_eq!(
        value(&p, &Scope::Play(1), "db-1", "bundle"),
        serde_json::json!({"alpha": 1, "beta": 5432})
    );
    assert!(p.resolve_in(&Scope::Play(1), "db-1", "app_port").is_err());
    // Conditional and templated include_vars are notes, not applied.
    assert!(p.resolve_in(&Scope::Play(2), "web-1", "never").is_err());
    let notes: Vec<String> = p
        .problems()
        .iter()
        .filter(|d| d.kind == ProblemKind::Skipped)
        .map(|d| d.message.clone())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("under a condition")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("'{{ env_name }}-extra.yml' is not resolved statically")),
        "{notes:?}"
    );
    assert_eq!(
        p.included_vars(0)
            .into_iter()
            .map(|(_, f)| f)
            .collect::<Vec<_>>(),
        [
            "extra/play_level.yml",
            "roles/app/vars/overrides.yml",
            "roles/app/vars/conf.d"
        ]
    );
}

#[test]
fn templated_vars_files_resolve_per_host() {
    let p = project();
    let play = Scope::Play(0);
    assert_eq!(value(&p, &play, "web-1", "vf_env"), "production");
    assert_eq!(value(&p, &play, "web-1", "common_setting"), "shared");
    assert_eq!(value(&p, &Scope::Play(1), "db-1", "db_engine"), "postgres");
    let d = p
        .problems()
        .iter()
        .find(|d| d.message.contains("undefined_flavour"))
        .expect("a note for the entry that cannot be templated");
    assert_eq!(d.kind, ProblemKind::Skipped);
    assert_eq!(d.location.as_ref().map(|l| l.line), Some(9));
    assert!(d.message.contains("web-1, web-2"), "{}", d.message);
    assert!(
        !p.problems().iter().any(|d| d.kind.fails()),
        "{:?}",
        p.problems()
    );
}

#[test]
fn inventory_dir_is_the_source_of_each_host() {
    let p = project();
    let inv = root().canonicalize().expect("fixture").join("inventory");
    let web = value(&p, &Scope::Host, "web-1", "where_from");
    assert_eq!(web, inv.display().to_string());
    let db = value(&p, &Scope::Host, "db-1", "inventory_dir");
    assert_eq!(db, inv.join("more").display().to_string());
    let file = value(&p, &Scope::Host, "db-1", "inventory_file");
    assert_eq!(file, inv.join("more/db.ini").display().to_string());
}
