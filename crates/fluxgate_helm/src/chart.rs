//! Loading a chart as Helm v4.3 does: a folder (with its `.helmignore`) or a `.tgz`;
//! `Chart.yaml` (v2, or v1 with `requirements.yaml`), `values.yaml`, templates, other files
//! (`.Files`, `crds/` among them) and subcharts under `charts/` (folders and `.tgz`; names
//! starting with `.` or `_` are skipped).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use fluxgate_gotemplate::Value;
use fluxgate_yaml::{Node, Schema, parse_one};

use crate::Error;
use crate::helmignore::Rules;

/// A dependency as Chart.yaml lists it.
#[derive(Debug, Clone, Default)]
pub struct Dependency {
    pub name: String,
    pub version: String,
    pub condition: String,
    pub tags: Vec<String>,
    pub alias: String,
    pub enabled: bool,
    /// `import-values`, as (child path, parent path): `- name` is `exports.name` into `.`.
    pub import_values: Vec<(String, String)>,
}

/// A loaded chart, its values held as `V`: a [`Chart`] to render, or a [`Frozen`] one that
/// threads can share.
#[derive(Debug, Clone)]
pub struct ChartOf<V> {
    /// Chart.yaml as read (keys as written).
    pub meta: Node,
    /// The name (an alias replaces it).
    pub name: String,
    pub version: String,
    /// `templates/...` files and their text, in path order (shared by every copy made from
    /// one load, so that the parse memo knows a text by its address).
    pub templates: Vec<(String, Arc<str>)>,
    /// Every other file (`crds/`, `files/`, ...), by path.
    pub files: BTreeMap<String, Arc<[u8]>>,
    /// values.yaml (numbers as float64, as Helm reads them).
    pub values: V,
    pub dependencies: Vec<Dependency>,
    pub subcharts: Vec<ChartOf<V>>,
    /// values.schema.json, as read.
    pub schema: Option<Arc<[u8]>>,
}

/// A chart's file (its path from the chart root) with bytes the chart can keep without a copy.
pub type SharedFile = (String, Arc<[u8]>);

/// A loaded chart to render: its values as templates see them (a render coalesces into them).
pub type Chart = ChartOf<Value>;

/// A loaded chart any thread can hold: its values as read (`None`: no values, or an empty
/// file). [`Frozen::thaw`] makes a [`Chart`] of it without reading or parsing a file again,
/// so the releases of one chart load it once for the process.
pub type Frozen = ChartOf<Option<Node>>;

/// Upper bound on a chart's total size (archives are decompressed into memory).
const MAX_CHART_BYTES: u64 = 256 << 20;

/// The loaders of [`Frozen`], each giving the chart thawed for one render.
impl Chart {
    /// [`Frozen::load`].
    pub fn load(path: &Path) -> Result<Chart, Error> {
        Frozen::load(path).map(|f| f.thaw())
    }

    /// [`Frozen::from_archive`].
    pub fn from_archive(bytes: &[u8], source: &str) -> Result<Chart, Error> {
        Frozen::from_archive(bytes, source).map(|f| f.thaw())
    }

    /// [`Frozen::from_folder`].
    pub fn from_folder(files: &[SharedFile], source: &str) -> Result<Chart, Error> {
        Frozen::from_folder(files, source).map(|f| f.thaw())
    }

    /// [`Frozen::from_files`].
    pub fn from_files(files: Vec<(String, Vec<u8>)>, source: &str) -> Result<Chart, Error> {
        Frozen::from_files(files, source).map(|f| f.thaw())
    }
}

impl Frozen {
    /// A chart to render: the values converted afresh (a render changes them), the rest
    /// shared.
    #[must_use]
    pub fn thaw(&self) -> Chart {
        Chart {
            meta: self.meta.clone(),
            name: self.name.clone(),
            version: self.version.clone(),
            templates: self.templates.clone(),
            files: self.files.clone(),
            values: self
                .values
                .as_ref()
                .map_or_else(Value::empty_map, crate::convert::from_yaml_node),
            dependencies: self.dependencies.clone(),
            subcharts: self.subcharts.iter().map(Frozen::thaw).collect(),
            schema: self.schema.clone(),
        }
    }

    /// Loads the chart at `path`: a folder or a `.tgz`.
    pub fn load(path: &Path) -> Result<Frozen, Error> {
        let io = |e: std::io::Error| Error::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        let files = if meta.is_dir() {
            let rules = std::fs::read_to_string(path.join(".helmignore"))
                .map_or_else(|_| Rules::parse(""), |t| Rules::parse(&t));
            let mut out = Vec::new();
            walk(path, "", &rules, &mut out, 0).map_err(io)?;
            out
        } else {
            let bytes = std::fs::read(path).map_err(io)?;
            untar(&bytes).map_err(io)?
        };
        Frozen::from_files(files, &path.display().to_string())
    }

    /// A chart archive (`.tgz`) already read into memory; `source` names it in messages.
    pub fn from_archive(bytes: &[u8], source: &str) -> Result<Frozen, Error> {
        let files = untar(bytes).map_err(|e| Error::Chart {
            chart: source.to_string(),
            message: format!("cannot read the chart archive: {e}"),
        })?;
        Frozen::from_files(files, source)
    }

    /// A chart folder's files (paths relative to the chart root, read by the caller), with
    /// the folder's `.helmignore` applied as [`Frozen::load`] applies it. The chart shares
    /// the files' bytes with the caller (templates aside, which it holds as text).
    pub fn from_folder(files: &[SharedFile], source: &str) -> Result<Frozen, Error> {
        let rules = files.iter().find(|(n, _)| n == ".helmignore").map_or_else(
            || Rules::parse(""),
            |(_, d)| Rules::parse(&String::from_utf8_lossy(d)),
        );
        // A file is ignored when it or any folder above it is; each folder is asked once.
        let mut folders: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
        let kept = files
            .iter()
            .filter(|(n, _)| {
                let mut at = 0;
                while let Some(i) = n[at..].find('/') {
                    let folder = &n[..at + i];
                    let ignored = *folders
                        .entry(folder.to_string())
                        .or_insert_with(|| rules.ignore(folder, true));
                    if ignored {
                        return false;
                    }
                    at += i + 1;
                }
                !rules.ignore(n, false)
            })
            .cloned()
            .collect();
        Frozen::from_shared(kept, source)
    }

    /// Builds a chart from its files (paths relative to the chart root).
    pub fn from_files(files: Vec<(String, Vec<u8>)>, source: &str) -> Result<Frozen, Error> {
        Frozen::from_shared(
            files.into_iter().map(|(n, d)| (n, Arc::from(d))).collect(),
            source,
        )
    }

    /// [`Frozen::from_files`] of bytes the chart keeps without a copy (`files/`, `crds/`,
    /// values.schema.json: whatever it does not parse).
    fn from_shared(files: Vec<SharedFile>, source: &str) -> Result<Frozen, Error> {
        let bad = |m: String| Error::Chart {
            chart: source.to_string(),
            message: m,
        };
        let mut meta = None;
        let mut values = None;
        let mut requirements = None;
        let mut schema = None;
        let mut templates = Vec::new();
        let mut other = BTreeMap::new();
        let mut sub: BTreeMap<String, Vec<SharedFile>> = BTreeMap::new();
        for (name, data) in files {
            match name.as_str() {
                "Chart.yaml" => meta = Some(yaml_doc("Chart.yaml", &data, bad)?),
                "values.yaml" => {
                    let text = utf8_text(&data);
                    values = crate::values::parse_values_node(&text)
                        .map_err(|e| bad(format!("values.yaml: {e}")))?;
                }
                "requirements.yaml" => {
                    requirements = Some(yaml_doc("requirements.yaml", &data, bad)?);
                }
                "values.schema.json" => schema = Some(data),
                "Chart.lock" | "requirements.lock" => {}
                n if n.starts_with("templates/") => {
                    templates.push((name.clone(), Arc::from(utf8_text(&data))));
                }
                n if n.starts_with("charts/") && !n.ends_with(".prov") => {
                    let rest = &n["charts/".len()..];
                    let (first, _) = rest.split_once('/').unwrap_or((rest, ""));
                    sub.entry(first.to_string())
                        .or_default()
                        .push((rest.to_string(), data));
                }
                _ => {
                    other.insert(name, data);
                }
            }
        }
        let meta = meta.ok_or_else(|| bad("Chart.yaml file is missing".into()))?;
        let text = |k: &str| meta.get(k).and_then(Node::scalar_text).unwrap_or_default();
        let name = text("name");
        if name.is_empty() {
            return Err(bad("validation: chart.metadata.name is required".into()));
        }
        let deps_node = meta
            .get("dependencies")
            .or_else(|| requirements.as_ref().and_then(|r| r.get("dependencies")));
        let dependencies = deps_node
            .and_then(Node::as_seq)
            .map(|s| s.iter().map(dependency).collect())
            .unwrap_or_default();
        let mut subcharts = Vec::new();
        for (dir, members) in sub {
            if dir.starts_with(['.', '_']) {
                continue;
            }
            let chart = if dir.ends_with(".tgz") {
                let Some((_, data)) = members.into_iter().next() else {
                    continue;
                };
                let files = untar(&data).map_err(|e| bad(format!("charts/{dir}: {e}")))?;
                Frozen::from_files(files, &format!("{source}/charts/{dir}"))?
            } else {
                let files: Vec<SharedFile> = members
                    .into_iter()
                    .filter_map(|(n, d)| n.split_once('/').map(|(_, rest)| (rest.to_string(), d)))
                    .collect();
                if files.is_empty() {
                    continue;
                }
                Frozen::from_shared(files, &format!("{source}/charts/{dir}"))?
            };
            subcharts.push(chart);
        }
        templates.sort();
        Ok(Frozen {
            version: text("version"),
            name,
            meta,
            templates,
            files: other,
            values,
            dependencies,
            subcharts,
            schema,
        })
    }
}

/// [`utf8`] of bytes the caller keeps: valid UTF-8 (nearly every file) borrowed.
/// (`String::from_utf8_lossy` checks a valid text a chunk at a time, several times slower.)
pub(crate) fn utf8_text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    std::str::from_utf8(data).map_or_else(|_| String::from_utf8_lossy(data), Into::into)
}

/// A file's bytes as text, as Go reads them into a string for Helm: valid UTF-8 (nearly every
/// file) kept without a copy, anything else with U+FFFD for each bad sequence.
pub(crate) fn utf8(data: Vec<u8>) -> String {
    String::from_utf8(data).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The one YAML document of `name`; `bad` makes the chart's error from a message.
fn yaml_doc(name: &str, data: &[u8], bad: impl Fn(String) -> Error) -> Result<Node, Error> {
    let (doc, diags) = parse_one(name, &String::from_utf8_lossy(data), Schema::GoYamlV2);
    if let Some(d) = diags.first() {
        return Err(bad(format!("{name}: {}", d.message)));
    }
    doc.ok_or_else(|| bad(format!("{name} is empty")))
}

fn dependency(n: &Node) -> Dependency {
    let text = |k: &str| n.get(k).and_then(Node::scalar_text).unwrap_or_default();
    Dependency {
        name: text("name"),
        version: text("version"),
        condition: text("condition"),
        alias: text("alias"),
        tags: n
            .get("tags")
            .and_then(Node::as_seq)
            .map(|s| s.iter().filter_map(Node::scalar_text).collect())
            .unwrap_or_default(),
        enabled: true,
        import_values: n
            .get("import-values")
            .and_then(Node::as_seq)
            .map(|s| {
                s.iter()
                    .filter_map(|iv| match iv.as_str() {
                        Some(name) => Some((format!("exports.{name}"), ".".to_string())),
                        None => Some((
                            iv.get("child").and_then(Node::scalar_text)?,
                            iv.get("parent").and_then(Node::scalar_text)?,
                        )),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn walk(
    root: &Path,
    rel: &str,
    rules: &Rules,
    out: &mut Vec<(String, Vec<u8>)>,
    depth: usize,
) -> std::io::Result<()> {
    if depth > 64 {
        return Ok(());
    }
    let dir = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    let mut entries: Vec<_> = std::fs::read_dir(&dir)?.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        // The directory entry's type costs no system call; a symlink is followed, as helm does.
        let ft = e.file_type()?;
        let meta = if ft.is_symlink() {
            std::fs::metadata(e.path())?.file_type()
        } else {
            ft
        };
        if meta.is_dir() {
            if !rules.ignore(&path, true) {
                walk(root, &path, rules, out, depth + 1)?;
            }
        } else if meta.is_file() && !rules.ignore(&path, false) {
            out.push((path, std::fs::read(e.path())?));
        }
    }
    Ok(())
}

/// The members of a chart archive, without their first path component (the chart's name).
fn untar(bytes: &[u8]) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let gz = flate2::read::GzDecoder::new(bytes);
    let mut archive = tar::Archive::new(gz.take(MAX_CHART_BYTES));
    let mut out = Vec::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path()?.to_string_lossy().replace('\\', "/");
        let Some((_, rest)) = path.split_once('/') else {
            continue;
        };
        let mut data = Vec::new();
        entry.read_to_end(&mut data)?;
        out.push((rest.to_string(), data));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgz(members: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (name, data) in members {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, name, data.as_bytes())
                .unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn loads_subcharts_from_folders_and_archives() {
        let sub = tgz(&[
            (
                "sub/Chart.yaml",
                "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
            ),
            ("sub/values.yaml", "x: 1\n"),
            ("sub/templates/a.yaml", "a: {{ .Values.x }}\n"),
        ]);
        let files = vec![
            ("Chart.yaml".to_string(), b"apiVersion: v2\nname: top\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 1.0.0\n  condition: sub.enabled\n  alias: other\n".to_vec()),
            ("values.yaml".to_string(), b"num: 1000000\non: yes\n".to_vec()),
            ("templates/t.yaml".to_string(), b"t: 1\n".to_vec()),
            ("files/f.txt".to_string(), b"hi".to_vec()),
            ("charts/sub-1.0.0.tgz".to_string(), sub),
            ("charts/folder/Chart.yaml".to_string(), b"name: folder\nversion: 2.0.0\n".to_vec()),
            ("charts/_skipped/Chart.yaml".to_string(), b"name: skipped\n".to_vec()),
        ];
        let c = Chart::from_files(files, "top").unwrap();
        assert_eq!(c.name, "top");
        assert_eq!(
            c.subcharts
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["folder", "sub"]
        );
        assert_eq!(c.subcharts[1].templates[0].0, "templates/a.yaml");
        assert_eq!(c.dependencies[0].alias, "other");
        assert!(c.files.contains_key("files/f.txt"));
        // Values are read as Helm reads them: numbers float64, YAML 1.1 booleans (keys too).
        assert_eq!(
            fluxgate_gotemplate::format::sprint_value(&c.values),
            "map[num:1e+06 true:true]"
        );
    }

    #[test]
    fn a_chart_without_chart_yaml_is_an_error() {
        assert!(Chart::from_files(vec![("values.yaml".into(), Vec::new())], "x").is_err());
    }
}
