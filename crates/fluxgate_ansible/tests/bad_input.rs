//! Bad input never hangs or panics: undefined variables, Jinja syntax errors, recursive
//! definitions and missing templates are findings with file:line and the chain, and the
//! other variables still resolve.

use std::path::PathBuf;

use fluxgate_ansible::{Options, Project};

fn project() -> Project {
    Project::load(&Options {
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad"),
        inventory: vec!["hosts.yml".into()],
        playbook: Some("site.yml".into()),
        ..Options::default()
    })
}

#[test]
fn recursion_is_a_finding() {
    let e = project().resolve("web-1", "a").unwrap_err();
    assert!(e.to_string().contains("recursive loop"), "{e}");
    let d = e.to_problem();
    let loc = d.location.expect("located");
    assert_eq!((loc.file.as_ref(), loc.line), ("group_vars/all.yml", 1));
}

#[test]
fn undefined_and_syntax_errors_are_findings() {
    let p = project();
    let e = p.resolve("web-1", "undefined_ref").unwrap_err();
    assert!(e.to_string().contains("'nope' is undefined"), "{e}");
    assert_eq!(e.chain[0].location.line, 3);
    let e = p.resolve("web-1", "bad_syntax").unwrap_err();
    assert!(e.to_string().contains("syntax error"), "{e}");
    // Everything else still resolves.
    let all = p.host_vars("web-1");
    assert_eq!(all.vars["good"].value.as_i64(), Some(8081));
    assert_eq!(all.vars["derived"].value.as_str(), Some("fallback"));
    assert_eq!(all.vars["flag"].value.as_bool(), Some(false));
    assert_eq!(all.vars["web_listen"].value.as_str(), Some("0.0.0.0:8080"));
    assert!(all.errors.contains_key("a") && all.errors.contains_key("b"));
}

#[test]
fn vault_values_are_opaque() {
    let p = project();
    let r = p.resolve("web-1", "uses_secret").unwrap();
    assert!(r.opaque);
    assert!(p.resolve("web-1", "secret").unwrap().opaque);
}

#[test]
fn origin_chain_names_the_sources() {
    let r = project().resolve("web-1", "web_listen").unwrap();
    // web-2 is excluded by the play pattern, so the role default does not reach it.
    assert!(project().resolve("web-2", "web_listen").is_err());
    assert_eq!(
        r.origin[0].location.file.as_ref(),
        "roles/web/defaults/main.yml"
    );
    assert!(
        r.origin
            .iter()
            .any(|o| o.var_name() == "port" && o.location.file.as_ref() == "hosts.yml")
    );
}

#[test]
fn templates_render_per_host_and_fail_with_lines() {
    let p = project();
    let t = p
        .render_template("roles/web/templates/app.yaml.j2", "web-1")
        .unwrap();
    assert_eq!(
        t.text,
        "listen: 0.0.0.0:8080\nhosts:\n  - 10.0.0.1\n  - 10.0.0.1\n"
    );
    assert!(t.value.is_some());
    let d = p
        .render_template("roles/web/templates/broken.j2", "web-1")
        .unwrap_err();
    assert_eq!(d.location.as_ref().map(|l| l.line), Some(2));
    assert!(d.message.contains("missing_thing"), "{}", d.message);
    let d = p
        .render_template("roles/web/templates/none.j2", "web-1")
        .unwrap_err();
    assert!(d.message.contains("not found"));
}

#[test]
fn order_has_patterns_roles_and_task_flags() {
    let p = project();
    let order = p.order();
    assert_eq!(order.len(), 1);
    assert_eq!(order[0].hosts, ["web-1".to_string()]);
    let tasks = &order[0].play.tasks;
    assert_eq!(tasks[0].register.as_deref(), Some("os"));
    assert!(tasks[0].changed_when.is_some());
    assert_eq!(
        tasks[1]
            .template
            .as_ref()
            .and_then(|t| t.resolved.as_deref()),
        Some("roles/web/templates/app.yaml.j2")
    );
}

#[test]
fn python_percent_formatting_is_named() {
    let p = project();
    let e = p.resolve("web-1", "percent_tuple").unwrap_err();
    assert!(
        e.to_string().starts_with(
            "Python '%' string formatting (`'%s:%d' % (inventory_hostname, 80)`) is not supported"
        ),
        "{e}"
    );
    assert!(e.to_string().contains("format filter"), "{e}");
    let loc = e.to_problem().location.expect("located");
    assert_eq!((loc.file.as_ref(), loc.line), ("group_vars/all.yml", 12));
    let e = p.resolve("web-1", "percent_one").unwrap_err();
    assert!(e.to_string().contains(r#"(`"%s" % port`)"#), "{e}");
    assert_eq!(
        p.resolve("web-1", "modulo_ok").unwrap().value.as_i64(),
        Some(1)
    );
}

/// Issue 26 §4: 24 variables that each double the one before took 6 GB; a value past
/// `MAX_VALUE` is an error of its own and what reads it stops there.
#[test]
fn doubling_variables_are_bounded() {
    let dir = std::env::temp_dir().join(format!("fluxgate-doubling-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("group_vars")).expect("temp dir");
    let mut vars = String::from("v0: \"xxxxxxxx\"\n");
    for i in 1..=24 {
        vars.push_str(&format!(
            "v{i}: \"{{{{ v{p} }}}}{{{{ v{p} }}}}\"\n",
            p = i - 1
        ));
    }
    std::fs::write(dir.join("group_vars/all.yml"), vars).expect("write");
    std::fs::write(dir.join("hosts.yml"), "all:\n  hosts:\n    h1:\n").expect("write");
    let p = Project::load(&Options {
        root: dir.clone(),
        inventory: vec!["hosts.yml".into()],
        ..Options::default()
    });
    let e = p.resolve("h1", "v24").unwrap_err();
    assert!(e.reason.to_string().contains("MiB"), "{}", e.reason);
    assert!(p.resolve("h1", "v10").is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}
