//! The renderer says which template line wrote each output line (loops, conditionals, block
//! tags and multi-line expressions included), and locates the parsed output there.

use std::path::PathBuf;
use std::sync::Arc;

use fluxgate_ansible::{Options, Project};
use fluxgate_fs::MemFs;

const TEMPLATE: &str = "\
{# Cilium values rendered for the bootstrap #}
cluster:
  name: {{ cluster_name }}
{% if kube_proxy_replacement %}
kubeProxyReplacement: true
{% endif %}
k8sServiceHost: \"{{ vip }}\"
ports:
{% for p in ports %}
  - {{ p }}
{% endfor %}
extra:
  {{ extra | to_nice_yaml | indent(2) }}
tail: 1
";

fn project(template: &str) -> Project {
    let mut fs = MemFs::new();
    fs.insert("/r/inventory.yml", "all:\n  hosts:\n    n1:\n");
    fs.insert(
        "/r/group_vars/all.yml",
        "cluster_name: prod\nkube_proxy_replacement: true\nvip: 10.0.0.9\nports: [1, 2]\nextra: {a: 1, b: 2}\n",
    );
    fs.insert("/r/templates/values.yaml.j2", template);
    Project::load(&Options {
        root: PathBuf::from("/r"),
        fs: Some(Arc::new(fs)),
        inventory: vec!["inventory.yml".into()],
        ..Options::default()
    })
}

#[test]
fn every_output_line_has_the_template_line_that_wrote_it() {
    let p = project(TEMPLATE);
    let t = p
        .render_template("templates/values.yaml.j2", "n1")
        .expect("renders");
    let out: Vec<&str> = t.text.lines().collect();
    assert_eq!(
        out,
        [
            "cluster:",
            "  name: prod",
            "kubeProxyReplacement: true",
            "k8sServiceHost: \"10.0.0.9\"",
            "ports:",
            "  - 1",
            "  - 2",
            "extra:",
            "  a: 1",
            "  b: 2",
            "tail: 1",
        ]
    );
    assert!(
        t.exact_lines,
        "the marked render should match the plain one"
    );
    assert_eq!(t.lines, [2, 3, 5, 7, 8, 10, 10, 12, 13, 13, 14]);
    // The parsed output is located in the template.
    let doc = t.value.as_ref().expect("YAML");
    let host = doc.get("k8sServiceHost").expect("key");
    assert_eq!((host.loc.line, host.loc.column), (7, 17));
    let b = doc.path(&["extra", "b"]).expect("key");
    assert_eq!(b.loc.line, 13);
    let second = &doc.get("ports").and_then(|p| p.as_seq()).expect("list")[1];
    assert_eq!((second.loc.line, second.loc.column), (10, 5));
    assert_eq!(t.template_line(3), 5);
}

#[test]
fn a_template_that_renders_differently_when_traced_is_aligned_by_text() {
    // A captured block compared as a string: the markers would change the comparison.
    let template = "{% set body %}x\n{% endset %}\nsame: {{ body == 'x\\n' }}\nk: v\n";
    let p = project(template);
    let t = p
        .render_template("templates/values.yaml.j2", "n1")
        .expect("renders");
    assert!(!t.exact_lines, "{:?}", t.text);
    assert_eq!(t.text, "same: True\nk: v\n");
    assert_eq!(t.lines, [3, 4]);
}

/// The undefined variable a failed render names is the one that failed, in every build: a
/// variable read earlier through `default()` is not it (minijinja's debug mode, on in debug
/// builds, used to add its own lookups after the failure).
#[test]
fn the_undefined_variable_named_is_the_one_that_failed() {
    let p =
        project("{% if pxe | default(false) %}--snapshotter native{% endif %}\n{{ extra_args }}\n");
    let e = p
        .render_template("templates/values.yaml.j2", "n1")
        .expect_err("extra_args is undefined");
    assert!(
        e.message.contains("'extra_args' is undefined"),
        "{}",
        e.message
    );
}
