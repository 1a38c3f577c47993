//! The chart cache: `<chart>-<version>.tgz` archives or unpacked chart directories
//! (`<chart>-<version>/` or `<chart>/`) under one folder of the repository. Only `Chart.yaml`
//! and `values.yaml` are read; templates are never rendered.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_yaml::{Node, Schema, parse_one};

/// Where charts are looked up. `ChartCache::none()` finds nothing.
#[derive(Clone, Debug, Default)]
pub struct ChartCache {
    /// Absolute path of the repository root (nothing outside it is read).
    root: Option<PathBuf>,
    /// The cache folder, relative to the root, as written in locations.
    dir: String,
}

/// A chart found in the cache.
#[derive(Clone, Debug)]
pub struct Chart {
    pub name: String,
    pub version: String,
    /// `values.yaml`, located at `<cache file>/<member>` lines; `None` when the chart has none.
    pub values: Option<Node>,
    /// What was opened, for messages (`charts/cilium-1.20.1.tgz`).
    pub source: String,
    pub diagnostics: Vec<Diagnostic>,
}

/// Upper bound on an archive member that fluxgate reads (a values.yaml or Chart.yaml).
const MAX_MEMBER: u64 = 16 * 1024 * 1024;

impl ChartCache {
    #[must_use]
    pub fn none() -> ChartCache {
        ChartCache::default()
    }

    /// The cache at `dir` (relative to `repo_root`).
    #[must_use]
    pub fn new(repo_root: &Path, dir: &str) -> ChartCache {
        ChartCache {
            root: Some(repo_root.to_path_buf()),
            dir: dir.trim_matches('/').to_string(),
        }
    }

    fn abs(&self, rel: &str) -> Option<PathBuf> {
        let root = self.root.as_ref()?;
        let p = root.join(rel);
        // The load restrictor: a symlink out of the repository is not followed.
        let canon_root = root.canonicalize().ok()?;
        let canon = p.canonicalize().ok()?;
        canon.starts_with(&canon_root).then_some(canon)
    }

    fn rel(&self, name: &str) -> String {
        if self.dir.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.dir)
        }
    }

    /// Finds `chart` at `version` (an exact version; a range, `*` or no version takes the
    /// highest version in the cache).
    #[must_use]
    pub fn lookup(&self, chart: &str, version: Option<&str>) -> Option<Chart> {
        let dir = self.abs(if self.dir.is_empty() { "." } else { &self.dir })?;
        let exact = version
            .filter(|v| is_exact(v))
            .map(|v| v.trim_start_matches('v'));
        if let Some(v) = exact {
            let tgz = format!("{chart}-{v}.tgz");
            if dir.join(&tgz).is_file() {
                return self.open_tgz(&tgz);
            }
            let unpacked = format!("{chart}-{v}");
            if let Some(c) = self.open_dir(&unpacked).filter(|c| c.version == v) {
                return Some(c);
            }
            return self.open_dir(chart).filter(|c| c.version == v);
        }
        // No exact version: the highest one present.
        let mut found: Vec<Chart> = Vec::new();
        for entry in fs::read_dir(&dir).ok()?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix(chart) else {
                continue;
            };
            let is_dir = entry.path().is_dir();
            let candidate = if rest.is_empty() && is_dir {
                self.open_dir(&name)
            } else if let Some(v) = rest.strip_prefix('-') {
                // Helm writes the archive suffix in lower case; that is what the cache holds.
                let is_tgz = Path::new(v)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("tgz"));
                if is_tgz && starts_with_digit(v) {
                    self.open_tgz(&name)
                } else if is_dir && starts_with_digit(v) {
                    self.open_dir(&name)
                } else {
                    None
                }
            } else {
                None
            };
            found.extend(candidate.filter(|c| c.name == chart));
        }
        found
            .into_iter()
            .max_by(|a, b| compare_versions(&a.version, &b.version))
    }

    fn open_dir(&self, name: &str) -> Option<Chart> {
        let rel = self.rel(name);
        let dir = self.abs(&rel)?;
        let meta_text = fs::read_to_string(dir.join("Chart.yaml")).ok()?;
        let mut diagnostics = Vec::new();
        let (meta, d) = parse_one(&format!("{rel}/Chart.yaml"), &meta_text, Schema::Kube);
        diagnostics.extend(d);
        let meta = meta?;
        let values = match fs::read_to_string(dir.join("values.yaml")) {
            Ok(text) => {
                let (v, d) = parse_one(&format!("{rel}/values.yaml"), &text, Schema::Kube);
                diagnostics.extend(d);
                v
            }
            Err(_) => None,
        };
        Some(Chart {
            name: meta.str_at(&["name"]).unwrap_or(name).to_string(),
            version: meta_version(&meta),
            values,
            source: rel,
            diagnostics,
        })
    }

    fn open_tgz(&self, file: &str) -> Option<Chart> {
        let rel = self.rel(file);
        let path = self.abs(&rel)?;
        let mut diagnostics = Vec::new();
        let (meta, values) = match read_tgz(&path) {
            Ok(m) => m,
            Err(e) => {
                diagnostics.push(Diagnostic::render_error(
                    format!("cannot read chart archive: {e}"),
                    Some(Location::file(rel.clone())),
                ));
                (None, None)
            }
        };
        let meta_node = meta.and_then(|(member, text)| {
            let (n, d) = parse_one(&format!("{rel}/{member}"), &text, Schema::Kube);
            diagnostics.extend(d);
            n
        });
        let values = values.and_then(|(member, text)| {
            let (n, d) = parse_one(&format!("{rel}/{member}"), &text, Schema::Kube);
            diagnostics.extend(d);
            n
        });
        let stem = file.trim_end_matches(".tgz");
        let (name_guess, version_guess) = stem.rsplit_once('-').unwrap_or((stem, ""));
        Some(Chart {
            name: meta_node
                .as_ref()
                .and_then(|m| m.str_at(&["name"]))
                .unwrap_or(name_guess)
                .to_string(),
            version: meta_node
                .as_ref()
                .map_or_else(|| version_guess.to_string(), meta_version),
            values,
            source: rel,
            diagnostics,
        })
    }
}

type Member = Option<(String, String)>;

/// Reads the top-level chart's `Chart.yaml` and `values.yaml` (`<chart>/<file>` members).
fn read_tgz(path: &Path) -> std::io::Result<(Member, Member)> {
    let file = fs::File::open(path)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let (mut meta, mut values) = (None, None);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let member = entry.path()?.to_string_lossy().into_owned();
        let parts: Vec<&str> = member.split('/').filter(|p| !p.is_empty()).collect();
        let [_, leaf] = parts.as_slice() else {
            continue;
        };
        let slot = match *leaf {
            "Chart.yaml" => &mut meta,
            "values.yaml" => &mut values,
            _ => continue,
        };
        let mut text = String::new();
        entry.by_ref().take(MAX_MEMBER).read_to_string(&mut text)?;
        *slot = Some((parts.join("/"), text));
        if meta.is_some() && values.is_some() {
            break;
        }
    }
    Ok((meta, values))
}

fn meta_version(meta: &Node) -> String {
    meta.get("version")
        .and_then(Node::scalar_text)
        .unwrap_or_default()
}

fn starts_with_digit(s: &str) -> bool {
    s.trim_start_matches('v')
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit())
}

/// A version that names one release (`1.20.1`, `v1.2.3-rc.1`), not a range.
fn is_exact(v: &str) -> bool {
    let v = v.trim();
    !v.is_empty()
        && starts_with_digit(v)
        && !v.contains(['*', 'x', 'X', '>', '<', '~', '^', ' ', '|', ','])
}

/// Orders versions by their numeric dotted parts, then by the rest as text.
fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |v: &str| {
        let v = v.trim_start_matches('v');
        let (core, pre) = v.split_once('-').unwrap_or((v, ""));
        let nums: Vec<u64> = core.split('.').map(|p| p.parse().unwrap_or(0)).collect();
        // A release sorts after its pre-releases.
        (nums, pre.is_empty(), pre.to_string())
    };
    key(a).cmp(&key(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(is_exact("1.20.1"));
        assert!(is_exact("v1.2.3-rc.1"));
        assert!(!is_exact(">=1.0.0 <2.0.0"));
        assert!(!is_exact("1.x"));
        assert!(!is_exact("*"));
        assert_eq!(
            compare_versions("1.10.0", "1.9.3"),
            std::cmp::Ordering::Greater
        );
        assert_eq!(
            compare_versions("1.0.0", "1.0.0-rc.1"),
            std::cmp::Ordering::Greater
        );
    }

    #[test]
    fn missing_cache_finds_nothing() {
        assert!(
            ChartCache::none()
                .lookup("cilium", Some("1.20.1"))
                .is_none()
        );
    }
}
