//! fluxgate's helmfile against helmfile v1.8.0 itself. `tests/oracle/<case>.yaml` is what
//! `helmfile build --embed-values` printed for each case (`<case>.error`: the first line of
//! its error), recorded with the Go oracle `oracles/helmfile` (helmfile's own command tree):
//! the five corpus repositories that bootstrap with helmfile and the cases of `tests/cases/`
//! (environments and `.gotmpl` values, bases and inherited templates, parts, `set`, `installed`,
//! hooks). Each release is compared field by field: chart, version, namespace, `installed`,
//! `needs`, and its values (the embedded values files merged as helm merges `-f`, then `set`
//! typed as `--set` types them); a case helmfile fails on must fail here too.
//!
//! `agrees_with_helmfile` compares with the recording (the corpus cases need
//! `FLUXGATE_CORPUS`). `recording_is_helmfiles_output` builds the oracle (about ten minutes
//! the first time, cached in `target/oracles/`) and checks the recording against a fresh run;
//! it runs when `FLUXGATE_HELMFILE_ORACLE=1` (`=update` rewrites the recording), because
//! building helmfile would double the CI run. Charts are never fetched: the oracle runs with
//! a chart cache of empty charts (`HELMFILE_CACHE_HOME`), so it works offline.

use std::path::{Path, PathBuf};

use fluxgate_helmfile::{Options, ProblemKind, coalesce, load};
use fluxgate_yaml::{Node, Schema, parse_one};

/// (corpus repository or `cases/` folder, state file, recording name).
const CASES: &[(&str, &str, &str)] = &[
    (
        "gitops/onedr0p__home-ops-head",
        "bootstrap/helmfile/apps.yaml",
        "onedr0p-apps",
    ),
    (
        "gitops/onedr0p__home-ops-head",
        "bootstrap/helmfile/crds.yaml",
        "onedr0p-crds",
    ),
    (
        "gitops/bjw-s-labs__home-ops",
        "kubernetes/bootstrap/helmfile/apps.yaml",
        "bjw-s-apps",
    ),
    (
        "gitops/bjw-s-labs__home-ops",
        "kubernetes/bootstrap/helmfile/crds.yaml",
        "bjw-s-crds",
    ),
    (
        "gitops/mirceanton__home-ops",
        "bootstrap/helmfile.yaml",
        "mirceanton",
    ),
    (
        "gitops/mirceanton__home-ops",
        "bootstrap/crds/helmfile.yaml",
        "mirceanton-crds",
    ),
    (
        "gitops/ahinko__home-ops",
        "infrastructure/talos/bootstrap/helmfile.yaml",
        "ahinko",
    ),
    (
        "gitops/billimek__k8s-gitops",
        "setup/bootstrap/helmfile.d/00-crds.yaml",
        "billimek-crds",
    ),
    (
        "gitops/billimek__k8s-gitops",
        "setup/bootstrap/helmfile.d/01-apps.yaml",
        "billimek-apps",
    ),
    ("cases/environments", "helmfile.yaml.gotmpl", "environments"),
    ("cases/bases", "helmfile.yaml", "bases"),
    ("cases/inherit", "helmfile.yaml", "inherit"),
    ("cases/parts", "helmfile.yaml.gotmpl", "parts"),
];

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The folder of a case, or `None` (said once) without the corpus.
fn root_of(src: &str, corpus: Option<&Path>) -> Option<PathBuf> {
    match src.strip_prefix("cases/") {
        Some(c) => Some(here().join("cases").join(c)),
        None => corpus.map(|c| c.join(src)),
    }
}

/// The recording of one case: `Ok(releases)` or `Err(helmfile's error)`.
fn recorded(name: &str) -> Result<Vec<Node>, String> {
    let dir = here().join("oracle");
    if let Ok(e) = std::fs::read_to_string(dir.join(format!("{name}.error"))) {
        return Err(e.trim().to_string());
    }
    let text = std::fs::read_to_string(dir.join(format!("{name}.yaml")))
        .unwrap_or_else(|_| panic!("no recording for {name}"));
    let doc = parse_one(name, &text, Schema::Kube)
        .0
        .expect("the recording parses");
    Ok(doc
        .get("releases")
        .and_then(Node::as_seq)
        .map(<[Node]>::to_vec)
        .unwrap_or_default())
}

/// The values helm gets from a recorded release: its embedded values merged in order, then
/// `set` (`--set` types `1` as an integer, `true` as a boolean).
fn oracle_values(r: &Node) -> Node {
    let mut out = Node::map(r.loc.clone());
    for v in r.get("values").and_then(Node::as_seq).unwrap_or(&[]) {
        coalesce(&mut out, v);
    }
    for s in r.get("set").and_then(Node::as_seq).unwrap_or(&[]) {
        let (Some(name), Some(value)) = (s.str_at(&["name"]), s.get("value")) else {
            continue;
        };
        let typed = value
            .scalar_text()
            .and_then(|t| parse_one("set", &t, Schema::Kube).0)
            .unwrap_or_else(|| value.clone());
        let mut cur = &mut out;
        let keys: Vec<&str> = name.split('.').collect();
        for (i, k) in keys.iter().enumerate() {
            let m = cur.as_map_mut().expect("set paths go through maps");
            if i + 1 == keys.len() {
                m.insert((*k).to_string(), typed.clone());
                break;
            }
            cur = m
                .entry((*k).to_string())
                .or_insert_with(|| Node::map(s.loc.clone()));
        }
    }
    out
}

fn strings(n: Option<&Node>) -> Vec<String> {
    n.and_then(Node::as_seq)
        .map(|s| s.iter().filter_map(Node::scalar_text).collect())
        .unwrap_or_default()
}

/// Compares one case: (releases compared, releases that agree, what differs).
fn compare(root: &Path, path: &str, name: &str) -> (usize, usize, Vec<String>) {
    let hf = load(&Options::new(root, path));
    let invalid: Vec<String> = hf
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::Invalid)
        .map(|p| p.message.clone())
        .collect();
    let releases = match recorded(name) {
        Err(e) => {
            // A failure counts as one comparison: both fail, or they disagree.
            return if invalid.is_empty() {
                (
                    1,
                    0,
                    vec![format!("{name}: helmfile fails ({e}), fluxgate does not")],
                )
            } else {
                (1, 1, Vec::new())
            };
        }
        Ok(r) => r,
    };
    let mut diffs: Vec<String> = invalid
        .iter()
        .map(|m| format!("{name}: fluxgate fails where helmfile does not: {m}"))
        .collect();
    let mine: Vec<_> = hf.releases().collect();
    if mine.len() != releases.len() {
        diffs.push(format!(
            "{name}: {} releases, helmfile has {}",
            mine.len(),
            releases.len()
        ));
    }
    let mut agree = 0;
    for r in &releases {
        let rname = r.str_at(&["name"]).unwrap_or_default();
        let ns = r.str_at(&["namespace"]).unwrap_or_default();
        let Some(m) = mine.iter().find(|m| m.name == rname && m.namespace == ns) else {
            diffs.push(format!("{name}: {ns}/{rname} is missing"));
            continue;
        };
        let mut d = Vec::new();
        let field = |k: &str| r.get(k).and_then(Node::scalar_text).unwrap_or_default();
        if m.chart != field("chart") {
            d.push(format!("chart {} vs {}", m.chart, field("chart")));
        }
        if m.version.clone().unwrap_or_default() != field("version") {
            d.push(format!("version {:?} vs {}", m.version, field("version")));
        }
        let installed = r.get("installed").and_then(Node::as_bool).unwrap_or(true);
        if m.installed != installed {
            d.push(format!("installed {} vs {installed}", m.installed));
        }
        let needs: Vec<String> = m.needs.iter().map(|n| n.raw.clone()).collect();
        if needs != strings(r.get("needs")) {
            d.push(format!("needs {needs:?} vs {:?}", strings(r.get("needs"))));
        }
        let theirs = oracle_values(r);
        if m.values != theirs {
            d.push(format!(
                "values\n{}\nvs helmfile's\n{}",
                fluxgate_yaml::emit_node(&m.values, fluxgate_yaml::EmitOptions::default()),
                fluxgate_yaml::emit_node(&theirs, fluxgate_yaml::EmitOptions::default())
            ));
        }
        if d.is_empty() {
            agree += 1;
        } else {
            diffs.push(format!("{name}: {ns}/{rname}: {}", d.join("; ")));
        }
    }
    (releases.len(), agree, diffs)
}

#[test]
fn agrees_with_helmfile() {
    let corpus = fluxgate_testkit::corpus("agrees_with_helmfile");
    let (mut total, mut agree, mut diffs) = (0, 0, Vec::new());
    for (src, path, name) in CASES {
        let Some(root) = root_of(src, corpus.as_deref()) else {
            continue;
        };
        let (t, a, d) = compare(&root, path, name);
        total += t;
        agree += a;
        diffs.extend(d);
    }
    eprintln!("helmfile agreement: {agree}/{total} releases (failures count as one)");
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    // The four cases of our own hold 8 releases; the corpus adds 46.
    let least = if corpus.is_some() { 50 } else { 8 };
    assert!(total >= least, "too few releases compared: {total}");
}

/// `PATH` with the folder of `bin` first.
fn path_with(bin: &Path) -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = bin.parent().map(Path::to_path_buf).into_iter().collect();
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap_or_default()
}

/// The recording without what names this machine (absolute paths).
fn normalized(text: &str) -> String {
    let mut out = String::new();
    for l in text.lines() {
        if !l.starts_with("#  Source:") && !l.trim_start().starts_with("chartPath:") {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[test]
fn recording_is_helmfiles_output() {
    let mode = std::env::var("FLUXGATE_HELMFILE_ORACLE").unwrap_or_default();
    if mode.is_empty() {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"recording_is_helmfiles_output: skipped (set FLUXGATE_HELMFILE_ORACLE=1 to build helmfile and check the recording)\n",
        );
        return;
    }
    let Some(oracle) = fluxgate_testkit::go_oracle("recording_is_helmfiles_output", "helmfile")
    else {
        return;
    };
    let Some(helm) = fluxgate_testkit::go_install_oracle(
        "recording_is_helmfiles_output",
        "helm",
        "helm.sh/helm/v4/cmd/helm@v4.3.2",
    ) else {
        return;
    };
    let corpus = fluxgate_testkit::corpus("recording_is_helmfiles_output");
    let cache =
        std::env::temp_dir().join(format!("fluxgate-helmfile-cache-{}", std::process::id()));
    let mut stale = Vec::new();
    for (src, path, name) in CASES {
        let Some(root) = root_of(src, corpus.as_deref()) else {
            continue;
        };
        // An empty chart in helmfile's cache for each OCI chart, so nothing is fetched.
        for r in load(&Options::new(&root, *path)).releases() {
            let (Some(url), Some(v)) = (r.chart.strip_prefix("oci://"), &r.version) else {
                continue;
            };
            let dir = cache
                .join(format!("oci__{}", url.replace(['.', ':'], "_")))
                .join(v);
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(
                dir.join("Chart.yaml"),
                format!("apiVersion: v2\nname: {}\nversion: 0.0.1\n", r.chart_name()),
            );
        }
        let out = std::process::Command::new(&oracle)
            .args(["-f", path, "build", "--embed-values"])
            .current_dir(&root)
            .env("HELMFILE_CACHE_HOME", &cache)
            // On the PATH rather than named, so the output says `helmBinary: helm`.
            .env("PATH", path_with(&helm))
            .output()
            .expect("the oracle runs");
        let dir = here().join("oracle");
        let (file, text) = if out.status.success() {
            (
                format!("{name}.yaml"),
                normalized(&String::from_utf8_lossy(&out.stdout)),
            )
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            (
                format!("{name}.error"),
                format!("{}\n", err.lines().next().unwrap_or_default()),
            )
        };
        if mode == "update" {
            let _ = std::fs::remove_file(dir.join(format!("{name}.yaml")));
            let _ = std::fs::remove_file(dir.join(format!("{name}.error")));
            std::fs::write(dir.join(&file), &text).expect("the recording is writable");
        } else if std::fs::read_to_string(dir.join(&file)).ok().as_deref() != Some(&text) {
            stale.push(file);
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    assert!(
        stale.is_empty(),
        "recordings differ from helmfile: {stale:?}"
    );
}
