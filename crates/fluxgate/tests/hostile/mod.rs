//! The hostile suite (issue 26): repositories written as a hostile or careless user would,
//! each run through every command and format under a memory limit (`ulimit -v`), counting
//! what the probes of the issue counted:
//!
//! - leaks: a planted secret (or its derived form) printed by any command in any format;
//! - wrong PASS: `check` passes a repository that must fail (the gate failed open);
//! - aborts: a run killed by a signal, a panic, an exit code other than 0, 1 or 2, or a run
//!   past its time limit;
//! - peak memory: the highest resident set (VmHWM) of any run.
//!
//! The fixtures are generated into a temporary folder (some are large by design). Each
//! probe names the class of the issue it stands for. The counts are printed (the README's
//! trust section quotes them) and must stay zero.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The address space of one run (`ulimit -v`, KiB): 1 GiB.
const MEMORY_LIMIT_KIB: u64 = 1024 * 1024;
/// One run's wall-clock limit.
const TIME_LIMIT: Duration = Duration::from_secs(30);

#[allow(clippy::struct_excessive_bools)] // a probe's switches, set by name
struct Probe {
    name: &'static str,
    class: &'static str,
    files: Vec<(String, Vec<u8>)>,
    /// (link, target): symlinks to create.
    links: Vec<(String, String)>,
    /// Strings no output may contain.
    secrets: Vec<String>,
    /// `check` must not pass.
    must_fail: bool,
    /// The commands beyond the common matrix; `{base}` is the clean base repository.
    extra: Vec<Vec<String>>,
    ansible: bool,
    /// Runs only these commands (not the matrix).
    only: bool,
    /// The secrets are looked for in markdown output only (raw HTML, class 6).
    markdown_only: bool,
    /// A cost probe: one format per command (the cost does not depend on the format), and
    /// run first.
    heavy: bool,
}

impl Probe {
    fn new(name: &'static str, class: &'static str) -> Probe {
        Probe {
            name,
            class,
            files: Vec::new(),
            links: Vec::new(),
            secrets: Vec::new(),
            must_fail: false,
            extra: Vec::new(),
            ansible: false,
            only: false,
            markdown_only: false,
            heavy: false,
        }
    }
    fn file(mut self, path: &str, text: impl Into<Vec<u8>>) -> Probe {
        self.files.push((path.to_string(), text.into()));
        self
    }
    fn app(self, file: &str, text: impl Into<Vec<u8>>) -> Probe {
        let p = self.resources(&[file]);
        p.file(&format!("apps/{file}"), text)
    }
    /// Adds `names` to `apps/kustomization.yaml`'s resources.
    fn resources(mut self, names: &[&str]) -> Probe {
        let k = self
            .files
            .iter_mut()
            .find(|(p, _)| p == "apps/kustomization.yaml");
        let line = names.iter().fold(String::new(), |mut l, n| {
            let _ = writeln!(l, "  - {n}");
            l
        });
        match k {
            Some((_, t)) => t.extend_from_slice(line.as_bytes()),
            None => self.files.push((
                "apps/kustomization.yaml".into(),
                format!("resources:\n  - cm.yaml\n{line}").into_bytes(),
            )),
        }
        self
    }
    fn secret(mut self, s: &str) -> Probe {
        self.secrets.push(s.to_string());
        self
    }
    fn fails(mut self) -> Probe {
        self.must_fail = true;
        self
    }
    fn ansible(mut self) -> Probe {
        self.ansible = true;
        self
    }
    fn run(mut self, args: &[&str]) -> Probe {
        self.extra
            .push(args.iter().map(ToString::to_string).collect());
        self
    }
    fn only(mut self) -> Probe {
        self.only = true;
        self
    }
    fn heavy(mut self) -> Probe {
        self.heavy = true;
        self
    }
    fn markdown_only(mut self) -> Probe {
        self.markdown_only = true;
        self
    }
    fn link(mut self, link: &str, target: &str) -> Probe {
        self.links.push((link.to_string(), target.to_string()));
        self
    }
}

const FLUX_SYSTEM: &str = "apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m0s
  ref:
    branch: main
  url: https://git.example.net/platform.git
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./clusters/prod
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
";

const APPS: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substituteFrom:
      - kind: Secret
        name: cluster-secrets
";

const CLUSTER_SECRETS: &str = "apiVersion: v1
kind: Secret
metadata:
  name: cluster-secrets
  namespace: flux-system
stringData:
  DB_PASSWORD: hostile-subst-pw-0a1b
  PLAIN: plain-value
sops:
  age:
    - recipient: age1qqqq
  version: 3.9.0
";

/// The clean repository every probe starts from: one Flux environment whose `apps`
/// Kustomization substitutes from a (SOPS-marked, so not a finding) Secret, and, for Ansible
/// probes, a one-host inventory with a role that writes a template.
fn base(ansible: bool) -> Vec<(String, Vec<u8>)> {
    let mut config = String::from("environments:\n  prod:\n    flux: clusters/prod\n");
    if ansible {
        config.push_str(
            "    ansible:\n      inventory: ansible/inventory/hosts.yml\n      group: k3s\n      playbook: ansible/site.yml\n",
        );
    }
    // The substituteFrom Secret holds its values in clear so that derived values can be
    // followed; the base must pass, so plaintext-secret leaves that one file alone.
    config.push_str(&format!("{IGNORE_CLUSTER_SECRETS}\n"));
    let mut files: Vec<(String, String)> = vec![
        ("fluxgate.yaml".into(), config),
        (
            "clusters/prod/kustomization.yaml".into(),
            "resources:\n  - flux-system.yaml\n  - cluster-secrets.yaml\n  - apps.yaml\n".into(),
        ),
        ("clusters/prod/flux-system.yaml".into(), FLUX_SYSTEM.into()),
        ("clusters/prod/apps.yaml".into(), APPS.into()),
        (
            "clusters/prod/cluster-secrets.yaml".into(),
            CLUSTER_SECRETS.into(),
        ),
        (
            "apps/cm.yaml".into(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: default\ndata:\n  a: b\n".into(),
        ),
    ];
    if ansible {
        files.extend([
            (
                "ansible/site.yml".to_string(),
                "- name: App\n  hosts: k3s\n  roles:\n    - app\n".to_string(),
            ),
            (
                "ansible/inventory/hosts.yml".into(),
                "all:\n  children:\n    k3s:\n      hosts:\n        node-1:\n          ansible_host: 192.168.50.11\n".into(),
            ),
            (
                "ansible/inventory/group_vars/k3s/vars.yml".into(),
                "app_port: 8080\n".into(),
            ),
            (
                "ansible/roles/app/tasks/main.yml".into(),
                "- name: Write the app configuration\n  ansible.builtin.template:\n    src: app.conf.j2\n    dest: /etc/app.conf\n".into(),
            ),
            (
                "ansible/roles/app/templates/app.conf.j2".into(),
                "port={{ app_port }}\n".into(),
            ),
        ]);
    }
    files
        .into_iter()
        .map(|(p, t)| (p, t.into_bytes()))
        .collect()
}

const IGNORE_CLUSTER_SECRETS: &str =
    "rules:\n  plaintext-secret:\n    ignore: [clusters/prod/cluster-secrets.yaml]";

fn configmap(name: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n{data}"
    )
}

#[allow(clippy::vec_init_then_push)] // one probe per block, each with its class comment
fn probes() -> Vec<Probe> {
    let mut p = Vec::new();

    // 1. Masking follows the value.
    p.push(
        Probe::new("derived-substitution", "1 masking")
            .app(
                "derived.yaml",
                configmap(
                    "derived",
                    "  offset: ${DB_PASSWORD:3}\n  upper: ${DB_PASSWORD^^}\n  replaced: ${DB_PASSWORD/hostile/x}\n  concat: pre-${PLAIN}-${DB_PASSWORD}\n  undefined: ${NOT_DEFINED_ANYWHERE}\n",
                ),
            )
            .secret("hostile-subst-pw-0a1b")
            .secret("tile-subst-pw-0a1b")
            .secret("HOSTILE-SUBST-PW-0A1B")
            .secret("x-subst-pw-0a1b")
            .fails(),
    );
    p.push(
        Probe::new("secret-unparseable", "1 masking")
            .app(
                "broken-secret.yaml",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: broken\n  namespace: default\nstringData:\n  password: \"hostile-unterminated-7c2d\n  other: x\n",
            )
            .secret("hostile-unterminated-7c2d")
            .fails(),
    );
    p.push(
        Probe::new("secret-duplicate-key", "1 masking")
            .app(
                "dup-secret.yaml",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: dup\n  namespace: default\nstringData:\n  password: hostile-first-dup-3e4f\n  password: hostile-second-dup-5a6b\n",
            )
            .secret("hostile-first-dup-3e4f")
            .secret("hostile-second-dup-5a6b")
            .fails(),
    );
    p.push(
        Probe::new("secret-base64-forms", "1 masking")
            .app(
                "b64-secret.yaml",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: default\nstringData:\n  password: hostile-b64-pw-8d9e\n",
            )
            .app(
                "b64-cm.yaml",
                configmap("b64", "  auth: Basic YWRtaW46aG9zdGlsZS1iNjQtcHctOGQ5ZQ==\n  token: aG9zdGlsZS1iNjQtcHctOGQ5ZQ==\n"),
            )
            .secret("hostile-b64-pw-8d9e")
            .secret("YWRtaW46aG9zdGlsZS1iNjQtcHctOGQ5ZQ==")
            .secret("aG9zdGlsZS1iNjQtcHctOGQ5ZQ==")
            .fails(),
    );
    // 2. Ansible secrets by name, by vault file, through filters.
    p.push(
        Probe::new("ansible-derived-secrets", "2 ansible secrets")
            .ansible()
            .file(
                "ansible/inventory/group_vars/k3s/vars.yml",
                "app_port: 8080\ndb_password: hostile-ans2-pw-1a2b\ndb_url: \"postgres://app:{{ db_password | trim }}@db\"\nurl_copy: \"{{ db_url | upper }}\"\nadmin_pass_plain: hostile-ans2-nolog-3c4d\napp_cred: hostile-ans2-k8s-5e6f\n",
            )
            .file(
                "ansible/roles/app/tasks/main.yml",
                "- name: Write the app configuration\n  ansible.builtin.template:\n    src: app.conf.j2\n    dest: /etc/app.conf\n- name: Write the credentials Secret\n  ansible.builtin.template:\n    src: secret.yaml.j2\n    dest: /var/lib/rancher/k3s/server/manifests/cred.yaml\n- name: Set the admin password\n  ansible.builtin.command: \"setpass {{ admin_pass_plain | trim }}\"\n  no_log: true\n",
            )
            .file(
                "ansible/roles/app/templates/app.conf.j2",
                "port={{ app_port }}\nb64={{ db_password | b64encode }}\nhead={{ db_password[:12] }}\nrev={{ db_password | reverse | join }}\nsum={{ db_password | hash('sha256') }}\n{% set tail = db_password[8:] %}tail={{ tail }}\nurl={{ url_copy }}\ncred={{ app_cred | upper }}\n",
            )
            .file(
                "ansible/roles/app/templates/secret.yaml.j2",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cred\nstringData:\n  cred: \"{{ app_cred }}\"\n",
            )
            .secret("hostile-ans2-pw-1a2b")
            .secret("aG9zdGlsZS1hbnMyLXB3LTFhMmI")
            .secret("head=hostile-ans2")
            .secret("b2a1-wp-2sna-elitsoh")
            .secret("fa5e4ed7668a9b66aace61aa7dd3535caf65aafc926cfc384a917e4afb1be2b8")
            .secret("tail=ans2-pw-1a2b")
            .secret("HOSTILE-ANS2-PW-1A2B")
            .secret("hostile-ans2-nolog-3c4d")
            .secret("hostile-ans2-k8s-5e6f")
            .secret("HOSTILE-ANS2-K8S-5E6F"),
    );
    p.push(
        Probe::new("ansible-secret-names", "2 ansible secrets")
            .ansible()
            .file(
                "ansible/inventory/group_vars/k3s/vars.yml",
                "app_port: 8080\ndb_password: hostile-ans-pw-1c2d\napi_token: hostile-ans-token-3e4f\nvault_thing: hostile-ans-vault-5a6b\ntls_key: hostile-ans-key-7c8d\n",
            )
            .file(
                "ansible/inventory/group_vars/k3s/vault.yml",
                "plain_in_vault_file: hostile-ans-vaultfile-9e0f\n",
            )
            .file(
                "ansible/roles/app/templates/app.conf.j2",
                "port={{ app_port }}\npw={{ db_password | upper }}\nt={{ api_token }}-{{ vault_thing }}-{{ tls_key }}-{{ plain_in_vault_file }}\n",
            )
            .secret("hostile-ans-pw-1c2d")
            .secret("HOSTILE-ANS-PW-1C2D")
            .secret("hostile-ans-token-3e4f")
            .secret("hostile-ans-vault-5a6b")
            .secret("hostile-ans-key-7c8d")
            .secret("hostile-ans-vaultfile-9e0f"),
    );
    // 3. Fail closed.
    p.push(
        Probe::new("sops-plaintext-key", "3 fail closed")
            .app(
                "sops.yaml",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: default\nstringData:\n  password: ENC[AES256_GCM,data:abcd,iv:efgh,tag:ijkl,type:str]\n  added: hostile-sops-added-2b3c\nsops:\n  age:\n    - recipient: age1qqqq\n  version: 3.9.0\n",
            )
            .secret("hostile-sops-added-2b3c")
            .fails(),
    );
    p.push(
        Probe::new("secret-in-list", "3 fail closed")
            .app(
                "list.yaml",
                "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Secret\n    metadata:\n      name: s\n      namespace: default\n    stringData:\n      password: hostile-list-4d5e\n",
            )
            .secret("hostile-list-4d5e")
            .fails(),
    );
    p.push(
        Probe::new("helmrelease-no-source", "3 fail closed")
            .app(
                "hr.yaml",
                "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\n  namespace: default\nspec:\n  interval: 30m\n  chart:\n    spec:\n      chart: app\n      version: \"1.0.0\"\n      sourceRef:\n        kind: HelmRepository\n        name: nowhere\n",
            )
            .fails(),
    );
    p.push(
        Probe::new("chartref-missing-oci", "3 fail closed")
            .app(
                "hr.yaml",
                "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\n  namespace: default\nspec:\n  interval: 30m\n  chartRef:\n    kind: OCIRepository\n    name: missing\n",
            )
            .fails(),
    );
    p.push(
        Probe::new("config-names-nothing", "3 fail closed")
            .file(
                "fluxgate.yaml",
                "environments:\n  prod:\n    flux: clusters/prod\nrules:\n  plaintext-secret:\n    ignore: [clusters/prod/cluster-secrets.yaml]\nparity:\n  - name: ghost\n    sources:\n      - helmrelease: default/ghost\n      - file: apps/cm.yaml\n    keys: [a]\n",
            )
            .fails(),
    );
    p.push(
        Probe::new("config-names-missing-key", "3 fail closed")
            .file(
                "fluxgate.yaml",
                "environments:\n  prod:\n    flux: clusters/prod\nrules:\n  plaintext-secret:\n    ignore: [clusters/prod/cluster-secrets.yaml]\nparity:\n  - name: typo\n    sources:\n      - file: apps/cm.yaml\n      - file: apps/mirror.yaml\n    keys: [data.aa]\n",
            )
            .file("apps/mirror.yaml", "data:\n  a: b\n")
            .fails(),
    );
    p.push(
        Probe::new("config-names-missing-requirement", "3 fail closed")
            .file(
                "fluxgate.yaml",
                "environments:\n  prod:\n    flux: clusters/prod\nrequirements: spec/requirements.yaml\nrules:\n  plaintext-secret:\n    ignore: [clusters/prod/cluster-secrets.yaml]\n    requirements: [R-SEC-02]\n",
            )
            .file(
                "spec/requirements.yaml",
                "- id: R-SEC-01\n  title: No secret in clear\n",
            )
            .fails(),
    );
    p.push(
        Probe::new("ansible-template-src-missing", "3 fail closed")
            .ansible()
            .file(
                "ansible/roles/app/tasks/main.yml",
                "- name: Write\n  ansible.builtin.template:\n    src: nowhere.j2\n    dest: /etc/x\n",
            )
            .fails(),
    );
    p.push(
        Probe::new("ansible-template-invalid-utf8", "3 fail closed")
            .ansible()
            .file(
                "ansible/roles/app/templates/app.conf.j2",
                b"port={{ app_port }}\n\xff\xfe bad bytes\n".to_vec(),
            )
            .fails(),
    );
    p.push(
        Probe::new("ansible-jinja-error-in-args", "3 fail closed")
            .ansible()
            .file(
                "ansible/roles/app/tasks/main.yml",
                "- name: Write\n  ansible.builtin.template:\n    src: app.conf.j2\n    dest: \"/etc/{{ app_port + }}\"\n",
            )
            .fails(),
    );
    p.push(
        Probe::new("ansible-jinja-error-in-when", "3 fail closed")
            .ansible()
            .file(
                "ansible/roles/app/tasks/main.yml",
                "- name: Write\n  ansible.builtin.template:\n    src: app.conf.j2\n    dest: /etc/app.conf\n  when: app_port ==\n",
            )
            .fails(),
    );
    p.push(
        Probe::new("ansible-variable-cycle", "3 fail closed")
            .ansible()
            .file(
                "ansible/inventory/group_vars/k3s/vars.yml",
                "app_port: \"{{ other_port }}\"\nother_port: \"{{ app_port }}\"\n",
            )
            .fails(),
    );
    p.push(
        Probe::new("chart-values-symlink-out", "3 fail closed")
            .file(
                "fluxgate.yaml",
                "environments:\n  prod:\n    flux: clusters/prod\ncharts: charts\nrules:\n  plaintext-secret:\n    ignore: [clusters/prod/cluster-secrets.yaml]\n",
            )
            .file(
                "charts/app/Chart.yaml",
                "apiVersion: v2\nname: app\nversion: 1.0.0\n",
            )
            .link("charts/app/values.yaml", "/etc/passwd")
            .app(
                "hr.yaml",
                "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\n  namespace: default\nspec:\n  interval: 30m\n  chart:\n    spec:\n      chart: app\n      version: \"1.0.0\"\n      sourceRef:\n        kind: HelmRepository\n        name: repo\n        namespace: flux-system\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: repo\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: https://charts.example.net\n",
            )
            .secret("root:x:0:0")
            .fails(),
    );
    // 4. Bounded cost.
    let nested = format!("{}x{}", "${A:=".repeat(3000), "}".repeat(3000));
    p.push(
        Probe::new("substitution-nesting-3000", "4 bounded cost")
            .app(
                "deep.yaml",
                configmap("deep", &format!("  v: \"{nested}\"\n")),
            )
            .run(&["mutate"])
            .fails(),
    );
    p.push(
        Probe::new("alias-bytes", "4 bounded cost")
            .app("aliases.yaml", alias_bomb())
            .heavy()
            .fails(),
    );
    p.push(
        Probe::new("ansible-doubling", "4 bounded cost")
            .ansible()
            .file("ansible/inventory/group_vars/k3s/vars.yml", doubling(24)),
    );
    p.push(
        Probe::new("ansible-wide-values", "4 bounded cost")
            .ansible()
            .file("ansible/inventory/group_vars/k3s/vars.yml", wide(400))
            .file(
                "ansible/roles/app/templates/app.conf.j2",
                (0..400).fold(String::from("port={{ app_port }}\n"), |mut t, i| {
                    let _ = writeln!(t, "{{{{ w{i} | length }}}}");
                    t
                }),
            )
            .heavy()
            .fails(),
    );
    p.push(
        Probe::new("ansible-out-of-fuel", "4 bounded cost")
            .ansible()
            .file(
                "ansible/inventory/group_vars/k3s/vars.yml",
                "app_port: 8080\nmul: \"{{ 'x' * 2000000000 }}\"\n",
            )
            .file(
                "ansible/roles/app/templates/app.conf.j2",
                "port={{ app_port }}\nm={{ mul | length }}\n",
            )
            .fails(),
    );
    let mut fanout = Probe::new("kustomize-fanout", "4 bounded cost").resources(&["l0"]);
    for (path, text) in fan_out(18) {
        fanout = fanout.file(&path, text);
    }
    p.push(fanout.heavy().fails());
    p.push(
        Probe::new("host-ranges", "4 bounded cost")
            .ansible()
            .file(
                "ansible/inventory/hosts.yml",
                "all:\n  children:\n    k3s:\n      hosts:\n        a[0001:4000]:\n        b[0001:4000]:\n        c[0001:4000]:\n",
            )
            .heavy()
            .fails(),
    );
    p.push(
        Probe::new("object-over-1mib", "4 bounded cost")
            .app(
                "big.yaml",
                configmap("big", &format!("  blob: {}\n", "x".repeat(1_100_000))),
            )
            .fails(),
    );
    p.push(
        Probe::new("jobs-unbounded", "4 bounded cost")
            .run(&["mutate", "--jobs", "100000"])
            .only(),
    );
    // 5. policy test's load restrictor.
    p.push(
        Probe::new("policy-test-escape", "5 load restrictor")
            .file(
                "tests/kyverno-test.yaml",
                "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: escape\npolicies:\n  - /etc/passwd\n  - ../../../../../../etc/hostname\nresources:\n  - ../../../../../../etc/passwd\nresults: []\n",
            )
            .run(&["policy", "test", "tests"])
            .run(&["policy", "test", "tests", "--format", "json"])
            .secret("root:x:0:0")
            .only(),
    );
    // 6. Markdown escapes repository text.
    p.push(
        Probe::new("markdown-html", "6 escaping")
            .app(
                "html.yaml",
                configmap(
                    "html",
                    "  v: \"${UNDEFINED_<script>alert(1)</script>}\"\n  w: ${MISSING_VAR}\n",
                ),
            )
            .file(
                "apps/<img src=x onerror=alert(1)>.yaml",
                configmap("img", "  a: b\n"),
            )
            .resources(&["<img src=x onerror=alert(1)>.yaml"])
            .secret("<script>")
            .secret("<img src")
            .markdown_only()
            .fails(),
    );
    // 7. Exit codes.
    p.push(
        Probe::new("usage-errors", "7 exit codes")
            .ansible()
            .run(&["ansible", "--env", "prod", "vars", "node-1", "no_such_var"])
            .run(&[
                "ansible",
                "--env",
                "prod",
                "template",
                "/etc/passwd",
                "--host",
                "node-1",
            ])
            .run(&["ansible", "--inventory", "/etc", "hosts"])
            .secret("root:x:0:0")
            .only(),
    );
    p
}

/// Ten 2 KB strings, each level a list of ten aliases of the one below, five levels deep.
fn alias_bomb() -> String {
    let mut t = configmap("aliases", "  a: b\n");
    t.push_str("x:\n  s: &s \"");
    t.push_str(&"y".repeat(2048));
    t.push_str("\"\n");
    let mut prev = "s".to_string();
    for level in 0..5 {
        let name = format!("l{level}");
        let _ = writeln!(
            t,
            "  {name}: &{name} [{}]",
            vec![format!("*{prev}"); 10].join(", ")
        );
        prev = name;
    }
    t
}

/// `v0` eight bytes, each next one twice the one before, `levels` deep; nothing reads them.
fn doubling(levels: usize) -> String {
    let mut t = String::from("app_port: 8080\nv0: \"xxxxxxxx\"\n");
    for i in 1..=levels {
        let _ = writeln!(t, "v{i}: \"{{{{ v{p} }}}}{{{{ v{p} }}}}\"", p = i - 1);
    }
    t
}

/// `v18` 2 MiB (eight bytes doubled 18 times), then `count` variables of twice that each:
/// none is over the bound of one value, all of them together are hundreds of MiB.
fn wide(count: usize) -> String {
    let mut t = doubling(18);
    for j in 0..count {
        let _ = writeln!(t, "w{j}: \"{{{{ v18 }}}}{{{{ v18 }}}}\"");
    }
    t
}

/// `levels` levels of kustomizations, each with two overlays (`a`, `b`) of the next.
fn fan_out(levels: usize) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for l in 0..levels {
        out.push((
            format!("apps/l{l}/kustomization.yaml"),
            "resources:\n  - a\n  - b\n".to_string(),
        ));
        for side in ["a", "b"] {
            let next = if l + 1 == levels {
                "../leaf".to_string()
            } else {
                format!("../../l{}", l + 1)
            };
            out.push((
                format!("apps/l{l}/{side}/kustomization.yaml"),
                format!("namePrefix: {side}-\nresources:\n  - {next}\n"),
            ));
        }
    }
    out.push((
        format!("apps/l{}/leaf/kustomization.yaml", levels - 1),
        "resources:\n  - cm.yaml\n".into(),
    ));
    out.push((
        format!("apps/l{}/leaf/cm.yaml", levels - 1),
        configmap("leaf", "  a: b\n"),
    ));
    out
}

fn write_tree(dir: &Path, files: &[(String, Vec<u8>)], links: &[(String, String)]) {
    let _ = std::fs::remove_dir_all(dir);
    for (path, text) in files {
        let p = dir.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("create the fixture folder");
        }
        std::fs::write(&p, text).expect("write a fixture file");
    }
    for (link, target) in links {
        let p = dir.join(link);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("create the fixture folder");
        }
        let _ = std::fs::remove_file(&p);
        std::os::unix::fs::symlink(target, &p).expect("symlink");
    }
}

/// The files of a probe: the base, with the probe's files replacing or adding.
fn tree(probe: &Probe) -> Vec<(String, Vec<u8>)> {
    let mut files = base(probe.ansible);
    for (path, text) in &probe.files {
        match files.iter_mut().find(|(p, _)| p == path) {
            Some((_, t)) => t.clone_from(text),
            None => files.push((path.clone(), text.clone())),
        }
    }
    files
}

fn matrix(probe: &Probe, base_dir: &Path) -> Vec<Vec<String>> {
    let mut m: Vec<Vec<String>> = Vec::new();
    let s = |a: &[&str]| a.iter().map(ToString::to_string).collect::<Vec<String>>();
    let pick = |all: &'static [&'static str]| -> &'static [&'static str] {
        if probe.heavy { &all[..1] } else { all }
    };
    if !probe.only {
        for f in pick(&["markdown", "text", "json", "sarif", "junit", "github"]) {
            m.push(s(&["check", "--format", f]));
        }
        for f in pick(&["json", "yaml"]) {
            m.push(s(&["render", "--env", "prod", "--format", f]));
        }
        let base = base_dir.to_string_lossy().into_owned();
        for f in pick(&["markdown", "text", "json"]) {
            m.push(s(&["diff", "--base-path", &base, "--format", f]));
        }
        m.push(s(&["envs"]));
        if probe.ansible {
            for f in pick(&["json", "text"]) {
                m.push(s(&[
                    "ansible", "--env", "prod", "--format", f, "vars", "node-1",
                ]));
                m.push(s(&["ansible", "--env", "prod", "--format", f, "hosts"]));
            }
            m.push(s(&[
                "ansible",
                "--env",
                "prod",
                "template",
                "ansible/roles/app/templates/app.conf.j2",
                "--host",
                "node-1",
            ]));
        }
    }
    m.extend(probe.extra.iter().cloned());
    m
}

struct Outcome {
    code: Option<i32>,
    out: String,
    peak_kib: u64,
    timed_out: bool,
}

/// Runs the binary in `dir` under the memory limit, sampling its peak resident set.
fn run(dir: &Path, args: &[String]) -> Outcome {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_LIMIT_KIB} && exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_fluxgate"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let readers = (
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stdout, &mut b);
            b
        }),
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stderr, &mut b);
            b
        }),
    );
    let start = Instant::now();
    let mut peak = 0;
    let mut timed_out = false;
    let status = loop {
        if let Ok(s) = std::fs::read_to_string(&status_file)
            && let Some(kib) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kib);
        }
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > TIME_LIMIT {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(3));
    };
    let mut out = String::from_utf8_lossy(&readers.0.join().unwrap_or_default()).into_owned();
    out.push_str(&String::from_utf8_lossy(
        &readers.1.join().unwrap_or_default(),
    ));
    Outcome {
        code: status.code(),
        out,
        peak_kib: peak,
        timed_out,
    }
}

/// What a probe's runs did wrong, by count.
#[derive(Default)]
struct Counts {
    seconds: f64,
    runs: usize,
    leaks: usize,
    wrong_pass: usize,
    aborts: usize,
    peak_kib: u64,
}

#[test]
fn hostile_inputs_under_a_memory_limit() {
    let _alone = super::heavy();
    let root = std::env::temp_dir().join(format!("fluxgate-hostile-{}", std::process::id()));
    let base_dir = root.join("_base");
    write_tree(&base_dir, &base(true), &[]);
    // The base passes: a probe that must fail fails for what it adds.
    for ansible in [false, true] {
        let dir = root.join(format!("_clean-{ansible}"));
        write_tree(&dir, &base(ansible), &[]);
        let o = run(&dir, &["check".to_string()]);
        assert_eq!(o.code, Some(0), "the clean base must pass:\n{}", o.out);
    }
    let started = Instant::now();
    let mut probes = probes();
    // FLUXGATE_HOSTILE=name,name runs those probes only (while working on one class).
    if let Ok(only) = std::env::var("FLUXGATE_HOSTILE") {
        probes.retain(|p| only.split(',').any(|n| n == p.name));
    }
    probes.sort_by_key(|p| !p.heavy);
    // Two workers take the probes in turn (the heaviest first), so that neither waits.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<(usize, String, Counts, Vec<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (root, base_dir, probes, next) = (&root, &base_dir, &probes, &next);
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(probe) = probes.get(i) else { break };
                        let (name, c, p) = run_probe(probe, root, base_dir);
                        done.push((i, name, c, p));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a probe thread"))
            .collect()
    });
    results.sort_by_key(|r| r.0);
    let results: Vec<(String, Counts, Vec<String>)> =
        results.into_iter().map(|(_, n, c, p)| (n, c, p)).collect();
    let mut total = Counts::default();
    let mut report =
        String::from("probe | runs | leaks | wrong PASS | aborts | peak MiB | seconds\n");
    let mut problems = Vec::new();
    for (name, c, p) in &results {
        let _ = writeln!(
            report,
            "{name} | {} | {} | {} | {} | {} | {:.1}",
            c.runs,
            c.leaks,
            c.wrong_pass,
            c.aborts,
            c.peak_kib / 1024,
            c.seconds
        );
        total.runs += c.runs;
        total.leaks += c.leaks;
        total.wrong_pass += c.wrong_pass;
        total.aborts += c.aborts;
        total.peak_kib = total.peak_kib.max(c.peak_kib);
        problems.extend(p.iter().cloned());
    }
    let _ = writeln!(
        report,
        "total: {} probes, {} runs, {} leaks, {} wrong PASS, {} aborts, peak {} MiB (limit {} MiB), {:.0} s",
        results.len(),
        total.runs,
        total.leaks,
        total.wrong_pass,
        total.aborts,
        total.peak_kib / 1024,
        MEMORY_LIMIT_KIB / 1024,
        started.elapsed().as_secs_f64()
    );
    println!("{report}");
    let _ = std::fs::remove_dir_all(&root);
    assert!(problems.is_empty(), "{report}\n{}", problems.join("\n\n"));
}

fn run_probe(probe: &Probe, root: &Path, base_dir: &Path) -> (String, Counts, Vec<String>) {
    let dir = root.join(probe.name);
    write_tree(&dir, &tree(probe), &probe.links);
    let mut c = Counts::default();
    let mut problems = Vec::new();
    let started = Instant::now();
    for args in matrix(probe, base_dir) {
        let o = run(&dir, &args);
        c.runs += 1;
        c.peak_kib = c.peak_kib.max(o.peak_kib);
        let label = format!(
            "[{} {}] fluxgate {}",
            probe.class,
            probe.name,
            args.join(" ")
        );
        let tail = || {
            o.out
                .chars()
                .rev()
                .take(1500)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<String>()
        };
        let aborted = o.timed_out
            || !matches!(o.code, Some(0..=2))
            || o.out.contains("panicked")
            || o.out.contains("memory allocation")
            || o.out.contains("stack overflow");
        if aborted {
            c.aborts += 1;
            problems.push(format!(
                "{label}: aborted (exit {:?}, timed out {}):\n{}",
                o.code,
                o.timed_out,
                tail()
            ));
        }
        let looked = !probe.markdown_only || args.iter().any(|a| a == "markdown");
        // Markdown shows code spans and fenced blocks literally: raw HTML counts outside them.
        let text = if probe.markdown_only {
            outside_code(&o.out)
        } else {
            o.out.clone()
        };
        let leaked: Vec<&String> = probe
            .secrets
            .iter()
            .filter(|s| looked && text.contains(s.as_str()))
            .collect();
        if !leaked.is_empty() {
            c.leaks += leaked.len();
            problems.push(format!("{label}: printed {leaked:?}"));
        }
        if probe.must_fail && args[0] == "check" && o.code == Some(0) {
            c.wrong_pass += 1;
            problems.push(format!(
                "{label}: PASS on a repository that must fail:\n{}",
                tail()
            ));
        }
        if probe.class.starts_with('5') && !aborted && o.code == Some(0) {
            c.wrong_pass += 1;
            problems.push(format!("{label}: not refused:\n{}", tail()));
        }
        if probe.only && !aborted && probe.class.starts_with('7') && o.code != Some(2) {
            c.wrong_pass += 1;
            problems.push(format!(
                "{label}: not a usage error (exit {:?}):\n{}",
                o.code,
                tail()
            ));
        }
    }
    c.seconds = started.elapsed().as_secs_f64();
    (probe.name.to_string(), c, problems)
}

/// The text of a Markdown document outside fenced blocks and code spans (which GitHub shows
/// literally, HTML included).
fn outside_code(md: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_span = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                if let Some(n) = chars.next()
                    && !in_span
                {
                    out.push(n);
                }
                continue;
            }
            if c == '`' {
                in_span = !in_span;
                continue;
            }
            if !in_span {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}
