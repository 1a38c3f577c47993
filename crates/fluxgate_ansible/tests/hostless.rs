//! An inventory that defines groups (their `group_vars/`) but no host, as a template repository
//! keeps it: with `representative_hosts`, one stand-in host per group, and a variable nobody
//! defines renders as itself (`<name>`), so that two values from one variable compare equal.

use std::path::PathBuf;

use fluxgate_ansible::{Options, Project, symbolic, symbolic_var};

fn project(representative_hosts: bool) -> Project {
    Project::load(&Options {
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostless"),
        inventory: vec!["inventory".into()],
        representative_hosts,
        ..Options::default()
    })
}

#[test]
fn without_the_option_there_is_no_host() {
    let p = project(false);
    assert!(p.hosts().is_empty());
    assert!(p.problems().is_empty(), "{:?}", p.problems());
}

#[test]
fn one_representative_per_group_with_a_warning() {
    let p = project(true);
    assert_eq!(
        p.hosts(),
        ["representative-of-kubernetes", "representative-of-master"]
    );
    assert!(p.is_representative("representative-of-master"));
    assert_eq!(
        p.group_hosts("master"),
        ["representative-of-master".to_string()]
    );
    let warnings: Vec<_> = p
        .problems()
        .iter()
        .filter(|d| d.kind == fluxgate_ansible::ProblemKind::Representative)
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", p.problems());
    assert_eq!(p.problems().len(), 1, "{:?}", p.problems());
    assert!(warnings[0].message.contains("(kubernetes, master)"));
    assert_eq!(
        warnings[0].location.as_ref().map(|l| l.file.to_string()),
        Some("inventory".to_string())
    );
    // The group's own variables are the representative's.
    let r = p
        .resolve("representative-of-master", "k3s_control_node")
        .unwrap();
    assert_eq!(r.value.as_bool(), Some(true));
}

#[test]
fn undefined_variables_stand_for_themselves() {
    let p = project(true);
    let host = "representative-of-kubernetes";
    let r = p.resolve(host, "k3s_registration_address").unwrap();
    assert_eq!(r.value.as_str(), Some("<kubevip_address>"));
    assert_eq!(
        symbolic_var(r.value.as_str().unwrap()),
        Some("kubevip_address")
    );
    let r = p.resolve(host, "api_url").unwrap();
    assert_eq!(r.value.as_str(), Some("https://<kubevip_address>:6443"));
    let t = p.render_template("templates/cni.yaml.j2", host).unwrap();
    // `default` does not apply: the variable will be defined when the repository is used.
    assert_eq!(
        t.text,
        "host: <kubevip_address>\nnode: <ansible_host>\nname: representative-of-kubernetes\n"
    );
    assert_eq!(symbolic("x"), "<x>");
    assert_eq!(symbolic_var("<a b>"), None);
    assert_eq!(symbolic_var("<>"), None);
}

#[test]
fn a_project_reads_through_an_overlay() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostless");
    let real = root.canonicalize().unwrap();
    let mut overlay = fluxgate_fs::Overlay::new(fluxgate_fs::RealFs::new(&real));
    overlay.replace(
        real.join("inventory/group_vars/master.yml"),
        "k3s_control_node: false\n",
    );
    let p = Project::load(&Options {
        root,
        fs: Some(std::sync::Arc::new(overlay)),
        inventory: vec!["inventory".into()],
        representative_hosts: true,
        ..Options::default()
    });
    let r = p
        .resolve("representative-of-master", "k3s_control_node")
        .unwrap();
    assert_eq!(
        r.value.as_bool(),
        Some(false),
        "the mutant's value, not the file's"
    );
}
