//! Never print a secret (issue 8 §2): every command, in every format it has, on a repository
//! whose secrets are known unique strings (`fixtures/secrets-planted`, see its README), and
//! none of them may appear in stdout or stderr. `render --show-secrets` must show them, so
//! that this test can fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/secrets-planted")
}

/// Every value planted in the fixture, in the forms the repository holds it.
fn planted() -> Vec<String> {
    let decoded = [
        "planted-data-pw-71c3",
        "planted-stringdata-token-9a2e",
        "planted-block-line-44d1",
        "planted-literal-8c0b",
        "planted-genfile-5b8e",
        "planted-genenv-2d6f",
        "planted-vf-host-3e9d.example.net",
        "planted-vf-target-6a1c",
        "planted-subst-pw-1f7b",
        "planted-subst-smtp-6e0a",
    ];
    let mut all: Vec<String> = decoded.iter().map(ToString::to_string).collect();
    all.extend(
        decoded
            .iter()
            .map(|v| base64::engine::general_purpose::STANDARD.encode(v)),
    );
    all.extend(
        [
            // SOPS ciphertext, IV, tag and MAC.
            "plantedSopsCipher0e4a",
            "plantedSopsIv7b1d",
            "plantedSopsTag2c9f",
            "plantedSopsMac5d2c",
            // Ansible Vault payloads (the hex of "planted-vault-line-one", ...).
            "706c616e7465642d7661756c742d6c696e652d6f6e65",
            "706c616e7465642d7661756c742d6c696e652d74776f",
            "706c616e7465642d77686f6c652d66696c652d6f6e65",
            "706c616e7465642d77686f6c652d66696c652d74776f",
        ]
        .map(String::from),
    );
    all
}

/// The planted values found in `text`, and any other trace of one: the word `planted` (other
/// than in the fixture's folder name), its base64 start or its hex.
fn leaks(text: &str) -> Vec<String> {
    let mut found: Vec<String> = planted()
        .into_iter()
        .filter(|p| text.contains(p.as_str()))
        .collect();
    let scrubbed = text.replace("secrets-planted", "");
    for trace in ["planted", "cGxhbnRlZC", "706c616e746564"] {
        if scrubbed
            .to_ascii_lowercase()
            .contains(&trace.to_ascii_lowercase())
            && !found.iter().any(|f| f.contains(trace))
        {
            found.push(format!("trace `{trace}`"));
        }
    }
    found
}

struct Run {
    label: String,
    code: Option<i32>,
    out: String,
}

fn run(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_fluxgate"))
        .args(args)
        .current_dir(fixture())
        .output()
        .expect("the fluxgate binary runs");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Run {
        label: args.join(" "),
        code: out.status.code(),
        out: text,
    }
}

/// The matrix: every command of the binary that reads a repository, in every format it has.
fn matrix() -> Vec<Vec<String>> {
    let mut m: Vec<Vec<String>> = Vec::new();
    let mut add = |args: &[&str]| m.push(args.iter().map(ToString::to_string).collect());
    for f in [
        "text", "json", "sarif", "junit", "github", "markdown", "html",
    ] {
        add(&["check", "--format", f]);
    }
    for f in ["yaml", "json"] {
        add(&["render", "--env", "prod", "--format", f]);
        add(&["render", "--env", "prod", "--format", f, "--origins"]);
        add(&["render", "--env", "prod", "--format", f, "--kind", "Secret"]);
        add(&["render", "--kustomization", "platform/app", "--format", f]);
        add(&[
            "render",
            "--kustomization",
            "platform/cilium",
            "--format",
            f,
        ]);
    }
    for f in ["text", "json"] {
        add(&[
            "values",
            "--env",
            "prod",
            "kube-system/cilium",
            "--format",
            f,
        ]);
        add(&["envs", "--format", f]);
        add(&["ansible", "--env", "prod", "--format", f, "hosts"]);
        add(&["ansible", "--env", "prod", "--format", f, "vars", "node-1"]);
        for var in ["vault_db_password", "db_url"] {
            add(&[
                "ansible", "--env", "prod", "--format", f, "vars", "node-1", var,
            ]);
        }
        add(&[
            "ansible",
            "--env",
            "prod",
            "--format",
            f,
            "template",
            "ansible/roles/app/templates/app.conf.j2",
            "--host",
            "node-1",
        ]);
        add(&["ansible", "--env", "prod", "--format", f, "order"]);
        add(&["rules", "--format", f]);
    }
    add(&["explain", "plaintext-secret"]);
    m
}

#[test]
fn no_command_in_any_format_prints_a_planted_secret() {
    let mut report = String::from("command | exit | planted values found\n");
    let mut total = 0;
    for args in matrix() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(&args);
        assert!(
            matches!(r.code, Some(0..=1)),
            "{} exited {:?}:\n{}",
            r.label,
            r.code,
            r.out
        );
        let found = leaks(&r.out);
        total += found.len();
        report.push_str(&format!(
            "{} | {:?} | {}{}\n",
            r.label,
            r.code.unwrap_or(-1),
            found.len(),
            if found.is_empty() {
                String::new()
            } else {
                format!(" {found:?}")
            }
        ));
    }
    println!("{report}total planted values found: {total}");
    assert_eq!(total, 0, "secret values were printed:\n{report}");
}

/// The commands above did meet the secrets: the findings that interpolate them and the
/// snippets that show their lines are there, masked; `--show-secrets` shows them.
#[test]
fn the_secrets_were_there_to_leak() {
    let check = run(&["check"]).out;
    for masked in [
        "dials ********, which is not an HA endpoint",
        "  password: ********",
        "  DB_PASSWORD: ********",
        "      - ADMIN_PASSWORD=********",
        "has \"********\"",
    ] {
        assert!(check.contains(masked), "{masked:?} not in:\n{check}");
    }
    let values = run(&["values", "--env", "prod", "kube-system/cilium"]).out;
    assert!(
        values.contains("k8sServiceHost = ******** (from a Secret)"),
        "{values}"
    );
    let rendered = run(&["render", "--env", "prod", "--format", "json"]).out;
    assert!(
        rendered.contains("\"SMTP_PASSWORD\": \"********\""),
        "{rendered}"
    );
    assert!(
        rendered.contains("\"password\": \"KioqKioqKio=\""),
        "{rendered}"
    );

    for format in ["yaml", "json"] {
        let shown = run(&[
            "render",
            "--env",
            "prod",
            "--show-secrets",
            "--format",
            format,
        ])
        .out;
        let found = leaks(&shown);
        for expected in [
            "planted-stringdata-token-9a2e",
            "planted-subst-pw-1f7b",
            "planted-subst-smtp-6e0a",
            "plantedSopsCipher0e4a",
            &base64::engine::general_purpose::STANDARD.encode("planted-data-pw-71c3"),
            &base64::engine::general_purpose::STANDARD.encode("planted-literal-8c0b"),
        ] {
            assert!(
                found.iter().any(|f| f == expected),
                "--show-secrets --format {format} does not show {expected}: {found:?}"
            );
        }
    }
}
