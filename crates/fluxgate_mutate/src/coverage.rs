//! Requirement coverage (SPEC §8): which checks map to each requirement, whether one of them
//! ran, and (with mutants) whether the files serving it are guarded by checks that bite.
//!
//! A check is anything that declares requirements: a rule (`rules.<name>.requirements`), a
//! parity group, a contract, a policy, a live-cluster test. [`CheckRef`] is the one shape they
//! share, so a new kind of check (the policies of `policies:`) plugs in by pushing its own.

use std::collections::{BTreeMap, BTreeSet};

use fluxgate_model::RepoIndex;
use fluxgate_model::config::Config;
use fluxgate_rules::registry::RULES;

use crate::requirements::{Requirement, Serving};

/// Where a check runs: L0/L1 run offline in every `fluxgate check`; L2 (drift) and L3
/// (runtime tests) need a cluster and do not run here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    L0,
    L1,
    L2,
    L3,
}

impl Layer {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::L0 => "L0",
            Layer::L1 => "L1",
            Layer::L2 => "L2",
            Layer::L3 => "L3",
        }
    }

    /// Whether checks of this layer run offline.
    #[must_use]
    pub fn runs_offline(self) -> bool {
        matches!(self, Layer::L0 | Layer::L1)
    }
}

/// One check that declares requirements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckRef {
    /// `rule:ha-endpoint`, `parity:cilium`, `contract:cni-dials-vip`, `policy:<name>`,
    /// `test:<file>`.
    pub name: String,
    pub layer: Layer,
    pub requirements: Vec<String>,
    /// False for a disabled rule: it maps, but it does not cover.
    pub enabled: bool,
}

/// The checks fluxgate.yaml declares: every rule with its `requirements` (disabled ones
/// marked), the parity groups and the contracts.
#[must_use]
pub fn config_checks(config: &Config) -> Vec<CheckRef> {
    let mut out = Vec::new();
    for rule in RULES.iter().filter(|r| r.runs()) {
        let Some(rc) = config.rules.get(rule.name) else {
            continue;
        };
        if rc.requirements.is_empty() {
            continue;
        }
        out.push(CheckRef {
            name: format!("rule:{}", rule.name),
            layer: Layer::L1,
            requirements: rc.requirements.clone(),
            enabled: rc.enabled != Some(false),
        });
    }
    for g in &config.parity {
        out.push(CheckRef {
            name: format!("parity:{}", g.name),
            layer: Layer::L1,
            requirements: g.requirements.clone(),
            enabled: true,
        });
    }
    for c in &config.contracts {
        out.push(CheckRef {
            name: format!("contract:{}", c.id),
            layer: Layer::L1,
            requirements: c.requirements.clone(),
            enabled: true,
        });
    }
    out
}

/// The annotation of a policy object that names the requirements it guards
/// (`fluxgate.dev/requirements: "R-SEC-01, R-SEC-02"`, ranges allowed).
pub const POLICY_REQUIREMENTS: &str = "fluxgate.dev/requirements";

/// The policies of `policies:` (SPEC §7), each a check of layer L0 named `policy:<name>`
/// with the requirements of its `fluxgate.dev/requirements` annotation and of its file's
/// `Serves:`/`Refs` header. Each runs in every `check`, over every environment, except: a
/// ValidatingAdmissionPolicy without a binding in those files enforces nothing (it maps,
/// disabled), and a Kyverno policy whose every rule needs the cluster (API calls, image
/// verification, mutate, generate) is enforced only there (L3: deferred without a cluster).
/// Policy objects the environments render are evaluated by `check` too; they are not
/// counted here, since coverage does not render.
#[must_use]
pub fn policy_checks(
    fs: &dyn fluxgate_fs::Fs,
    root: &std::path::Path,
    config: &Config,
) -> Vec<CheckRef> {
    let (docs, _) = fluxgate_policy::load_paths(fs, root, &config.policies);
    let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut declared: Vec<(String, Vec<String>)> = Vec::new();
    for (doc, loc) in &docs {
        let file = loc.file.to_string();
        let header = headers.entry(file.clone()).or_insert_with(|| {
            fs.read(&root.join(&file))
                .map(|text| crate::requirements::header_ids(&text).0)
                .unwrap_or_default()
        });
        let mut ids = doc
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(POLICY_REQUIREMENTS))
            .and_then(serde_json::Value::as_str)
            .map(|s| crate::requirements::ids_in(s).0)
            .unwrap_or_default();
        for id in header.iter() {
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        let name = doc
            .pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_string();
        if !ids.is_empty() && fluxgate_policy::is_policy(doc) && !is_binding(doc) {
            declared.push((name, ids));
        }
    }
    let set = fluxgate_policy::PolicySet::from_documents(docs);
    declared
        .into_iter()
        .map(|(name, requirements)| {
            let cel = set.cel.iter().find(|p| p.name == name);
            let kyverno = set.kyverno.iter().find(|p| p.name == name);
            let unbound = cel.is_some_and(|p| {
                p.kind == fluxgate_policy::vap::CelKind::Vap
                    && !set.bindings.iter().any(|b| b.policy == name)
            });
            let cluster_only = kyverno.is_some_and(|p| !p.evaluates_offline());
            CheckRef {
                name: format!("policy:{name}"),
                layer: if cluster_only { Layer::L3 } else { Layer::L0 },
                requirements,
                enabled: !unbound,
            }
        })
        .collect()
}

fn is_binding(doc: &serde_json::Value) -> bool {
    doc.get("kind").and_then(serde_json::Value::as_str) == Some("ValidatingAdmissionPolicyBinding")
}

/// Live-cluster tests in the repository: Chainsaw `Test` documents (their requirement ids
/// from the name, labels, annotations, description and the file's `Serves:`/`Refs` header),
/// and any other file whose name says it is a test and carries requirement ids. Without a
/// cluster they do not run: L3.
#[must_use]
pub fn cluster_tests(index: &RepoIndex) -> Vec<CheckRef> {
    let mut out = Vec::new();
    for f in index.files() {
        if !f.text.contains("Test") && !f.path.to_ascii_lowercase().contains("test") {
            continue;
        }
        let header = crate::requirements::header_ids(&f.text).0;
        let mut found = false;
        for doc in f.docs() {
            let chainsaw = doc.str_at(&["kind"]) == Some("Test")
                && doc
                    .str_at(&["apiVersion"])
                    .is_some_and(|a| a.starts_with("chainsaw.kyverno.io/"));
            if !chainsaw {
                continue;
            }
            found = true;
            let mut text = String::new();
            for path in [&["metadata", "name"][..], &["spec", "description"][..]] {
                if let Some(s) = doc.str_at(path) {
                    text.push_str(s);
                    text.push(' ');
                }
            }
            for field in ["labels", "annotations"] {
                if let Some(m) = doc.path(&["metadata", field]).and_then(|n| n.as_map()) {
                    for (k, v) in m {
                        text.push_str(k);
                        text.push(' ');
                        text.push_str(&v.scalar_text().unwrap_or_default());
                        text.push(' ');
                    }
                }
            }
            let mut ids = crate::requirements::ids_in(&text).0;
            for id in &header {
                if !ids.contains(id) {
                    ids.push(id.clone());
                }
            }
            let name = doc.str_at(&["metadata", "name"]).unwrap_or(&f.path);
            out.push(CheckRef {
                name: format!("test:{name}"),
                layer: Layer::L3,
                requirements: ids,
                enabled: true,
            });
        }
        let file_name = f.path.rsplit('/').next().unwrap_or(&f.path);
        if !found && file_name.to_ascii_lowercase().contains("test") {
            let ids = crate::requirements::ids_in(file_name).0;
            if !ids.is_empty() {
                out.push(CheckRef {
                    name: format!("test:{}", f.path),
                    layer: Layer::L3,
                    requirements: ids,
                    enabled: true,
                });
            }
        }
    }
    out.retain(|c| !c.requirements.is_empty());
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Covered,
    Deferred,
    Gap,
}

impl Status {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Covered => "covered",
            Status::Deferred => "deferred",
            Status::Gap => "gap",
        }
    }
}

/// How the mutants of a requirement's serving files fared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bites {
    pub killed: usize,
    pub survived: usize,
    pub equivalent: usize,
}

/// One requirement's coverage.
#[derive(Clone, Debug)]
pub struct Covered {
    pub requirement: Requirement,
    pub status: Status,
    /// The checks that map to it and ran (or, for deferred, that would run on a cluster).
    pub checks: Vec<String>,
    /// Checks that map to it but did not run (disabled, or need a cluster).
    pub not_run: Vec<String>,
    /// The files whose header serves it.
    pub files: Vec<String>,
    /// With mutants: how the mutants of `files` fared.
    pub bites: Option<Bites>,
    /// Why it is not covered (a gap or deferred).
    pub why: Option<String>,
}

/// The coverage of a repository.
#[derive(Clone, Debug)]
pub struct Coverage {
    pub requirements: Vec<Covered>,
    /// Checks or headers naming ids the registry does not have: (where, id).
    pub unknown: Vec<(String, String)>,
}

impl Coverage {
    #[must_use]
    pub fn count(&self, status: Status) -> usize {
        self.requirements
            .iter()
            .filter(|r| r.status == status)
            .count()
    }

    #[must_use]
    pub fn safety_critical_gaps(&self) -> Vec<&Covered> {
        self.requirements
            .iter()
            .filter(|r| r.status == Status::Gap && r.requirement.safety_critical)
            .collect()
    }

    /// `Conformance: 5 / 7 requirements covered (71.4%), 2 gaps, 1 safety-critical gap`.
    #[must_use]
    pub fn summary(&self) -> String {
        let total = self.requirements.len();
        let covered = self.count(Status::Covered);
        let deferred = self.count(Status::Deferred);
        let gaps = self.count(Status::Gap);
        let critical = self.safety_critical_gaps().len();
        #[allow(clippy::cast_precision_loss)] // counts of requirements, far below 2^52
        let pct = if total == 0 {
            0.0
        } else {
            covered as f64 * 100.0 / total as f64
        };
        let mut s = format!("Conformance: {covered} / {total} requirements covered ({pct:.1}%)");
        if deferred > 0 {
            s.push_str(&format!(", {deferred} deferred"));
        }
        s.push_str(&format!(
            ", {gaps} gap{}, {critical} safety-critical gap{}",
            if gaps == 1 { "" } else { "s" },
            if critical == 1 { "" } else { "s" }
        ));
        s
    }
}

/// Per file, how its mutants fared (from a mutation run).
pub type FileBites = BTreeMap<String, Bites>;

/// Computes coverage. `bites`, from a mutation run, makes "covered" mean that a check ran and
/// that a mutant of a file serving the requirement was killed.
#[must_use]
pub fn coverage(
    registry: &[Requirement],
    checks: &[CheckRef],
    serving: &Serving,
    bites: Option<&FileBites>,
) -> Coverage {
    let known: BTreeSet<&str> = registry.iter().map(|r| r.id.as_str()).collect();
    let mut unknown = Vec::new();
    for c in checks {
        for id in &c.requirements {
            if !known.contains(id.as_str()) {
                unknown.push((c.name.clone(), id.clone()));
            }
        }
    }
    for (id, files) in serving {
        if !known.contains(id.as_str()) {
            for f in files {
                unknown.push((f.clone(), id.clone()));
            }
        }
    }
    unknown.sort();
    unknown.dedup();
    let requirements = registry
        .iter()
        .map(|req| {
            let mapped: Vec<&CheckRef> = checks.iter().filter(|c| c.requirements.contains(&req.id)).collect();
            let ran: Vec<String> = mapped
                .iter()
                .filter(|c| c.enabled && c.layer.runs_offline())
                .map(|c| c.name.clone())
                .collect();
            let cluster: Vec<String> = mapped
                .iter()
                .filter(|c| c.enabled && !c.layer.runs_offline())
                .map(|c| c.name.clone())
                .collect();
            let disabled: Vec<String> = mapped
                .iter()
                .filter(|c| !c.enabled)
                .map(|c| format!("{} (disabled)", c.name))
                .collect();
            let files = serving.get(&req.id).cloned().unwrap_or_default();
            let file_bites = bites.map(|b| {
                let mut t = Bites::default();
                for f in &files {
                    if let Some(x) = b.get(f) {
                        t.killed += x.killed;
                        t.survived += x.survived;
                        t.equivalent += x.equivalent;
                    }
                }
                t
            });
            let (status, why) = if ran.is_empty() {
                if cluster.is_empty() {
                    let why = if disabled.is_empty() {
                        "no check maps to it".to_string()
                    } else {
                        format!("only disabled checks map to it: {}", disabled.join(", "))
                    };
                    (Status::Gap, Some(why))
                } else {
                    (Status::Deferred, Some(format!("only live-cluster checks map to it ({}); L2/L3 did not run: no cluster", cluster.join(", "))))
                }
            } else {
                match file_bites {
                    Some(b) if b.killed == 0 => {
                        let why = if files.is_empty() {
                            "its checks ran, but no file declares `Serves:` it, so no mutant shows they bite".to_string()
                        } else if b.survived == 0 {
                            format!("its checks ran, but no mutant of the {} file{} serving it could show they bite", files.len(), if files.len() == 1 { "" } else { "s" })
                        } else {
                            format!("its checks ran, but none of the {} mutant{} of the files serving it was killed", b.survived, if b.survived == 1 { "" } else { "s" })
                        };
                        (Status::Gap, Some(why))
                    }
                    _ => (Status::Covered, None),
                }
            };
            let mut not_run = cluster_if(status != Status::Deferred, &cluster);
            not_run.extend(disabled);
            Covered {
                requirement: req.clone(),
                status,
                checks: if status == Status::Deferred { cluster.clone() } else { ran },
                not_run,
                files,
                bites: file_bites,
                why,
            }
        })
        .collect();
    Coverage {
        requirements,
        unknown,
    }
}

fn cluster_if(keep: bool, cluster: &[String]) -> Vec<String> {
    if keep { cluster.to_vec() } else { Vec::new() }
}

/// What coverage is computed from: the registry (with what is wrong in its file), the files
/// serving each requirement, and every check that declares requirements.
pub struct Inputs {
    /// The requirements file, relative.
    pub file: String,
    pub registry: Vec<Requirement>,
    pub problems: Vec<crate::requirements::RegistryProblem>,
    pub serving: Serving,
    pub checks: Vec<CheckRef>,
}

/// The largest file whose header is read for `Serves:` lines (bigger ones are data).
const MAX_HEADER_FILE: usize = 4 * 1024 * 1024;

/// Reads the inputs of coverage for the repository at `root`. `Ok(None)`: fluxgate.yaml
/// names no requirements file. `Err`: the file it names cannot be read.
pub fn inputs(
    fs: &dyn fluxgate_fs::Fs,
    root: &std::path::Path,
    config: &Config,
    index: &RepoIndex,
) -> Result<Option<Inputs>, crate::Error> {
    let Some(file) = config.requirements.clone() else {
        return Ok(None);
    };
    let text = fs
        .read(&root.join(&file))
        .map_err(|source| crate::Error::ReadRequirements {
            file: file.clone(),
            source,
        })?;
    let (registry, problems) = crate::requirements::parse_registry(&file, &text);
    let serving = serving_files(fs, root, index);
    let mut checks = config_checks(config);
    checks.extend(policy_checks(fs, root, config));
    checks.extend(cluster_tests(index));
    Ok(Some(Inputs {
        file,
        registry,
        problems,
        serving,
        checks,
    }))
}

/// The serving map of every file the repository walk found (text files only).
pub fn serving_files(
    fs: &dyn fluxgate_fs::Fs,
    root: &std::path::Path,
    index: &RepoIndex,
) -> Serving {
    // The index's texts are shared, not copied.
    let mut texts: Vec<(String, std::borrow::Cow<'_, str>)> = Vec::new();
    for p in index.paths_where(root, |_| true) {
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .replace('\\', "/");
        if let Some(f) = index.file(&rel) {
            texts.push((rel, std::borrow::Cow::Borrowed(&f.text)));
            continue;
        }
        let Ok(bytes) = fs.read_bytes(&p) else {
            continue;
        };
        if bytes.len() > MAX_HEADER_FILE || bytes.contains(&0) {
            continue;
        }
        if let Ok(text) = String::from_utf8(bytes) {
            texts.push((rel, std::borrow::Cow::Owned(text)));
        }
    }
    crate::requirements::serving(texts.iter().map(|(a, b)| (a.as_str(), &**b))).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_diagnostics::Location;

    fn req(id: &str, critical: bool) -> Requirement {
        Requirement {
            id: id.into(),
            title: format!("title of {id}"),
            safety_critical: critical,
            loc: Location::file("r.yaml"),
        }
    }

    fn check(name: &str, layer: Layer, ids: &[&str], enabled: bool) -> CheckRef {
        CheckRef {
            name: name.into(),
            layer,
            requirements: ids.iter().map(|s| (*s).to_string()).collect(),
            enabled,
        }
    }

    #[test]
    fn covered_deferred_and_gaps() {
        let registry = [
            req("R-A-01", true),
            req("R-A-02", false),
            req("R-A-03", true),
            req("R-A-04", false),
        ];
        let checks = [
            check("rule:x", Layer::L1, &["R-A-01"], true),
            check("test:failover", Layer::L3, &["R-A-02", "R-A-01"], true),
            check("rule:y", Layer::L1, &["R-A-03", "R-Z-09"], false),
        ];
        let c = coverage(&registry, &checks, &Serving::new(), None);
        let status: Vec<&str> = c.requirements.iter().map(|r| r.status.as_str()).collect();
        assert_eq!(status, ["covered", "deferred", "gap", "gap"]);
        assert_eq!(c.requirements[0].not_run, ["test:failover"]);
        assert!(
            c.requirements[2]
                .why
                .as_deref()
                .unwrap()
                .contains("disabled")
        );
        assert_eq!(c.unknown, [("rule:y".to_string(), "R-Z-09".to_string())]);
        assert_eq!(
            c.summary(),
            "Conformance: 1 / 4 requirements covered (25.0%), 1 deferred, 2 gaps, 1 safety-critical gap"
        );
    }

    #[test]
    fn with_mutants_a_check_must_bite() {
        let registry = [req("R-A-01", true), req("R-A-02", false)];
        let checks = [check("rule:x", Layer::L1, &["R-A-01", "R-A-02"], true)];
        let mut serving = Serving::new();
        serving.insert("R-A-01".into(), vec!["a.yaml".into()]);
        serving.insert("R-A-02".into(), vec!["b.yaml".into()]);
        let mut bites = FileBites::new();
        bites.insert(
            "a.yaml".into(),
            Bites {
                killed: 2,
                survived: 1,
                equivalent: 0,
            },
        );
        bites.insert(
            "b.yaml".into(),
            Bites {
                killed: 0,
                survived: 3,
                equivalent: 1,
            },
        );
        let c = coverage(&registry, &checks, &serving, Some(&bites));
        assert_eq!(c.requirements[0].status, Status::Covered);
        assert_eq!(c.requirements[1].status, Status::Gap);
        assert!(
            c.requirements[1]
                .why
                .as_deref()
                .unwrap()
                .contains("none of the 3 mutants")
        );
    }
}
