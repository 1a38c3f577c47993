//! The repository index: one walk of the repository (the folders [`crate::yaml_files`] walks),
//! on first use, and every YAML file of it read once through the confined filesystem and
//! parsed at most once, on first use. Discovery finds its roots and its Ansible files in it;
//! rules that look beyond what an environment renders (a Secret committed in a bootstrap
//! folder, the raw document of a rendered object, a parity mirror file) read it instead of
//! the disk: the repository is walked once per run, not once per lookup.
//!
//! ```
//! use fluxgate_kustomize::MemFs;
//! use fluxgate_model::RepoIndex;
//! let mut fs = MemFs::new();
//! fs.insert("/r/boot/s.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: token}\n");
//! let index = RepoIndex::from_files(Box::new(fs), "/r".as_ref(), &["boot/s.yaml"]);
//! assert_eq!(index.secret_file("token"), Some("boot/s.yaml"));
//! assert!(!index.file("boot/s.yaml").unwrap().is_sops());
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use fluxgate_kustomize::{Fs, RealFs};
use fluxgate_yaml::{Node, Schema, Stream, parse_stream};
use foldhash::{HashMap, HashMapExt as _};
use rayon::prelude::*;

/// One YAML file of the repository: its text as committed (comments included) and, parsed on
/// first use, its documents with their spans.
pub struct IndexedFile {
    /// The path relative to the repository root, with `/` separators.
    pub path: String,
    /// Shared with the readers of [`RepoIndex::reading_fs`] (a chart's files).
    pub text: Arc<str>,
    stream: OnceLock<Stream>,
}

impl IndexedFile {
    fn new(path: String, text: String) -> IndexedFile {
        IndexedFile {
            path,
            text: text.into(),
            stream: OnceLock::new(),
        }
    }

    /// The parsed stream (Kubernetes scalar rules): documents, comments and syntax problems.
    pub fn stream(&self) -> &Stream {
        self.stream
            .get_or_init(|| parse_stream(&self.path, &self.text, Schema::Kube))
    }

    /// The file's documents, as written (before any patch or substitution).
    pub fn docs(&self) -> &[Node] {
        &self.stream().docs
    }

    /// Whether the file is SOPS output (ciphertext with SOPS metadata): its values are not
    /// clear text.
    pub fn is_sops(&self) -> bool {
        fluxgate_flux::vars::is_sops_file(self.text.as_bytes())
            || self
                .docs()
                .iter()
                .any(fluxgate_flux::vars::is_sops_encrypted)
    }
}

/// Every file of one repository (walked once), its YAML files read once.
pub struct RepoIndex {
    root: PathBuf,
    fs: Arc<dyn Fs>,
    /// The walk, done on first use.
    walked: OnceLock<Arc<Walked>>,
    /// Files asked for that the walk does not list (a symlinked file, a hidden folder),
    /// read through the confined filesystem on first use.
    extra: Mutex<BTreeMap<String, Option<Arc<IndexedFile>>>>,
    /// Secret name -> the first file that defines a `kind: Secret` of that name.
    secrets: OnceLock<HashMap<String, usize>>,
}

struct Walked {
    /// Every file the walk found (absolute paths, sorted).
    paths: Vec<PathBuf>,
    /// The YAML ones, read, in walk order (sorted by path), which is the order lookups
    /// answer in.
    files: Vec<IndexedFile>,
    by_path: HashMap<String, usize>,
}
/// [`RepoIndex::reading_fs`]: the walked YAML files from the index, the rest from `inner`.
struct IndexedFs {
    walked: Arc<Walked>,
    inner: Arc<dyn Fs>,
    root: PathBuf,
}

impl IndexedFs {
    /// The walked file at the absolute `path`, read already. A path written another way (not
    /// below the root as the walk wrote it) is read from the filesystem instead.
    fn indexed(&self, path: &Path) -> Option<&IndexedFile> {
        let rel = path.strip_prefix(&self.root).ok()?.to_str()?;
        let &i = if std::path::MAIN_SEPARATOR == '/' {
            self.walked.by_path.get(rel)?
        } else {
            self.walked.by_path.get(&rel.replace('\\', "/"))?
        };
        self.walked.files.get(i)
    }
}

impl Fs for IndexedFs {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        match self.indexed(path) {
            Some(f) => Ok(f.text.to_string()),
            None => self.inner.read(path),
        }
    }

    fn read_bytes(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match self.indexed(path) {
            Some(f) => Ok(f.text.as_bytes().to_vec()),
            None => self.inner.read_bytes(path),
        }
    }

    fn read_shared(&self, path: &Path) -> std::io::Result<Arc<[u8]>> {
        match self.indexed(path) {
            Some(f) => Ok(Arc::from(f.text.clone())),
            None => self.inner.read_shared(path),
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.indexed(path).is_none() && self.inner.is_dir(path)
    }

    fn is_file(&self, path: &Path) -> bool {
        self.indexed(path).is_some() || self.inner.is_file(path)
    }

    fn list_dir_kinds(&self, path: &Path) -> std::io::Result<Vec<(PathBuf, bool)>> {
        self.inner.list_dir_kinds(path)
    }

    fn confines(&self, path: &Path) -> bool {
        // A walked file was read through the confined filesystem.
        self.indexed(path).is_some() || self.inner.confines(path)
    }

    fn memo(&self) -> Option<&fluxgate_kustomize::Memo> {
        self.inner.memo()
    }

    fn is_symlink(&self, path: &Path) -> bool {
        self.inner.is_symlink(path)
    }
}

/// A file of the index: one the walk found, or one read on request.
pub enum FileRef<'a> {
    Walked(&'a IndexedFile),
    Extra(Arc<IndexedFile>),
}

impl std::ops::Deref for FileRef<'_> {
    type Target = IndexedFile;
    fn deref(&self) -> &IndexedFile {
        match self {
            FileRef::Walked(f) => f,
            FileRef::Extra(f) => f,
        }
    }
}

impl RepoIndex {
    /// The index of the repository at `root`, read through a confined [`RealFs`] (symlinks
    /// that leave the repository are refused). Nothing is read until it is asked.
    #[must_use]
    pub fn new(root: &Path) -> RepoIndex {
        RepoIndex::with_fs(Arc::new(RealFs::new(root)), root)
    }

    /// The index of the repository at `root` as `fs` serves it (an overlay's mutant, a git
    /// tree): discovery, the config and the rules then see what `fs` serves, and nothing is
    /// read until it is asked.
    #[must_use]
    pub fn with_fs(fs: Arc<dyn Fs>, root: &Path) -> RepoIndex {
        RepoIndex {
            root: root.to_path_buf(),
            fs,
            walked: OnceLock::new(),
            extra: Mutex::default(),
            secrets: OnceLock::new(),
        }
    }

    /// The filesystem the index reads through (confined to the repository).
    pub fn fs(&self) -> &Arc<dyn Fs> {
        &self.fs
    }

    /// [`RepoIndex::new`], walked and read now.
    #[must_use]
    pub fn build(root: &Path) -> RepoIndex {
        let index = RepoIndex::new(root);
        index.walked();
        index
    }

    /// The index of the files `rels` (paths relative to `root`, as if the walk had found
    /// exactly them), read through `fs`.
    #[must_use]
    pub fn from_files(fs: Box<dyn Fs>, root: &Path, rels: &[&str]) -> RepoIndex {
        let index = RepoIndex::with_fs(Arc::from(fs), root);
        let mut paths: Vec<PathBuf> = rels.iter().map(|r| root.join(r)).collect();
        paths.sort();
        let walked = index.read_walk(paths);
        let _ = index.walked.set(Arc::new(walked));
        index
    }

    fn walked(&self) -> &Walked {
        self.walked_shared()
    }

    fn walked_shared(&self) -> &Arc<Walked> {
        self.walked.get_or_init(|| {
            Arc::new(self.read_walk(crate::walk::files_where(&*self.fs, &self.root, |_| true)))
        })
    }

    /// The index's filesystem, with the YAML files the walk read served from the index:
    /// what the renderers read through (they read most of those files again, and each read of
    /// the disk is a handful of system calls). Everything else is read as [`RepoIndex::fs`]
    /// reads it; the walk is done now if it was not.
    #[must_use]
    pub fn reading_fs(&self) -> Arc<dyn Fs> {
        Arc::new(IndexedFs {
            walked: self.walked_shared().clone(),
            inner: self.fs.clone(),
            root: self.root.clone(),
        })
    }

    /// Reads the YAML files among `paths`; a file that cannot be read is left out.
    fn read_walk(&self, paths: Vec<PathBuf>) -> Walked {
        let yaml: Vec<&PathBuf> = paths.iter().filter(|p| is_yaml(p)).collect();
        // Reading is per file, so it is the unit of parallel work.
        let files: Vec<IndexedFile> = yaml
            .par_iter()
            .filter_map(|p| {
                let text = self.fs.read(p).ok()?;
                Some(IndexedFile::new(rel_path(&self.root, p), text))
            })
            .collect();
        let by_path = files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), i))
            .collect();
        Walked {
            paths,
            files,
            by_path,
        }
    }

    /// The repository root (absolute).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every YAML file the walk found, sorted by path.
    pub fn files(&self) -> &[IndexedFile] {
        &self.walked().files
    }

    /// The walked YAML file at `rel` (relative to the root).
    pub fn file(&self, rel: &str) -> Option<&IndexedFile> {
        let w = self.walked();
        w.by_path.get(rel).map(|&i| &w.files[i])
    }

    /// Whether `rel` is a template of a Helm chart in the repository (below a `templates/`
    /// folder beside a `Chart.yaml`): Go-template source, not YAML the repository applies, so
    /// the scan for CRDs leaves it alone (what the chart installs is rendered), while a
    /// chart's `crds/` are read.
    pub fn is_chart_template(&self, rel: &str) -> bool {
        folders_above(rel).any(|(parent, name)| name == "templates" && self.is_chart(parent))
    }

    /// The folder of the Helm chart `rel` is part of (the nearest folder above it with a
    /// `Chart.yaml`): its templates, values, `crds/` and `ci/` files are the chart's, not YAML
    /// a Kustomization applies.
    pub fn chart_root<'r>(&self, rel: &'r str) -> Option<&'r str> {
        folders_above(rel)
            .map(|(parent, _)| parent)
            .find(|parent| self.is_chart(parent))
    }

    fn is_chart(&self, folder: &str) -> bool {
        let mut chart_yaml = String::with_capacity(folder.len() + 11);
        chart_yaml.push_str(folder);
        chart_yaml.push_str("/Chart.yaml");
        self.walked().by_path.contains_key(&chart_yaml)
    }

    /// Every file the walk found below `dir` whose name `keep` accepts (absolute paths,
    /// sorted): what [`crate::walk::files_where`] would walk for, without walking again.
    pub fn paths_where(&self, dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
        // Sorted part by part, the paths below `dir` are one run, from `dir` on.
        let paths = &self.walked().paths;
        let start = paths.partition_point(|p| p.as_path() < dir);
        let below = &paths[start..];
        let end = below.partition_point(|p| p.starts_with(dir));
        below[..end]
            .iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| keep(n.to_string_lossy().as_ref()))
            })
            .cloned()
            .collect()
    }

    /// The file at `rel`, YAML or not and walked or not, read through the confined filesystem
    /// when the walk did not list it (once; later calls share it). `Err` is the reason it
    /// cannot be read.
    pub fn read(&self, rel: &str) -> std::io::Result<FileRef<'_>> {
        if let Some(f) = self.file(rel) {
            return Ok(FileRef::Walked(f));
        }
        let mut extra = self.extra.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = extra.get(rel) {
            return known.clone().map(FileRef::Extra).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "cannot be read")
            });
        }
        match self.fs.read(&self.root.join(rel)) {
            Ok(text) => {
                let f = Arc::new(IndexedFile::new(rel.to_string(), text));
                extra.insert(rel.to_string(), Some(f.clone()));
                Ok(FileRef::Extra(f))
            }
            Err(e) => {
                extra.insert(rel.to_string(), None);
                Err(e)
            }
        }
    }

    /// Whether the walk found `rel` (a YAML file such as a chart's `Chart.yaml`).
    pub fn contains(&self, rel: &str) -> bool {
        self.walked().by_path.contains_key(rel)
    }

    /// The first file (in path order) that defines a `kind: Secret` named `name`.
    pub fn secret_file(&self, name: &str) -> Option<&str> {
        let files = self.files();
        let secrets = self.secrets.get_or_init(|| {
            let mut out: HashMap<String, usize> = HashMap::new();
            for (i, f) in files.iter().enumerate() {
                if !f.text.contains("Secret") || self.chart_root(&f.path).is_some() {
                    continue;
                }
                for d in f.docs() {
                    if d.str_at(&["kind"]) == Some("Secret")
                        && let Some(n) = d.str_at(&["metadata", "name"])
                    {
                        out.entry(n.to_string()).or_insert(i);
                    }
                }
            }
            out
        });
        secrets.get(name).map(|&i| files[i].path.as_str())
    }
}

/// The folders above the file `rel`, nearest first, each with the name of the folder or file
/// below it on the way to `rel`.
fn folders_above(rel: &str) -> impl Iterator<Item = (&str, &str)> {
    std::iter::successors(rel.rsplit_once('/'), |(parent, _)| parent.rsplit_once('/'))
}

#[allow(clippy::case_sensitive_file_extension_comparisons)] // as crate::yaml_files: Flux reads `.yaml`/`.yml` case-sensitively
fn is_yaml(p: &Path) -> bool {
    p.file_name()
        .map(|n| n.to_string_lossy())
        .is_some_and(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
}

/// `path` relative to `root`, with `/` separators.
fn rel_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

#[cfg(test)]
impl RepoIndex {
    /// An index of `files` (repository-relative path, text) held in memory; names starting
    /// with `.` are left out of the walk, as hidden folders are.
    pub(crate) fn in_memory(files: &[(&str, &str)]) -> RepoIndex {
        let mut fs = fluxgate_kustomize::MemFs::new();
        for (p, t) in files {
            fs.insert(format!("/r/{p}"), *t);
        }
        let walked: Vec<&str> = files
            .iter()
            .map(|(p, _)| *p)
            .filter(|p| !p.starts_with('.'))
            .collect();
        RepoIndex::from_files(Box::new(fs), Path::new("/r"), &walked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(files: &[(&str, &str)]) -> RepoIndex {
        RepoIndex::in_memory(files)
    }

    #[test]
    fn the_reading_fs_serves_walked_yaml_from_the_index() {
        let mut mem = fluxgate_kustomize::MemFs::new();
        mem.insert("/r/apps/a.yaml", "kind: A\n");
        mem.insert(
            "/r/charts/c/templates/_h.tpl",
            "{{ define \"h\" }}{{ end }}",
        );
        let counting = Arc::new(fluxgate_kustomize::RecordingFs::new(mem));
        let index = RepoIndex::with_fs(counting.clone(), "/r".as_ref());
        let fs = index.reading_fs();
        let reads = || counting.reads();
        // The walk read the YAML file once; the renderers' reads of it are served.
        assert_eq!(reads(), 1);
        for _ in 0..3 {
            assert_eq!(fs.read("/r/apps/a.yaml".as_ref()).unwrap(), "kind: A\n");
            assert_eq!(
                fs.read_bytes("/r/apps/a.yaml".as_ref()).unwrap(),
                b"kind: A\n"
            );
        }
        assert!(fs.is_file("/r/apps/a.yaml".as_ref()));
        assert!(!fs.is_dir("/r/apps/a.yaml".as_ref()));
        assert_eq!(reads(), 1);
        // Shared reads hand out the index's own text: no copy (a chart's files are kept for
        // the run, and a copy of each was 8% of a chart check's fresh pages).
        let shared = fs.read_shared("/r/apps/a.yaml".as_ref()).unwrap();
        let text = &index.file("apps/a.yaml").expect("walked").text;
        assert_eq!(&*shared, b"kind: A\n");
        assert_eq!(shared.as_ptr(), text.as_ptr());
        assert_eq!(reads(), 1);
        // What the index does not hold is read (and counted) as any read is.
        let tpl = fs
            .read_shared("/r/charts/c/templates/_h.tpl".as_ref())
            .unwrap();
        assert_eq!(&*tpl, b"{{ define \"h\" }}{{ end }}");
        assert_eq!(reads(), 2);
        // What the walk did not read comes from the filesystem, as do paths written otherwise.
        assert!(fs.read("/r/charts/c/templates/_h.tpl".as_ref()).is_ok());
        assert!(fs.read("/r/apps/../apps/a.yaml".as_ref()).is_ok());
        assert!(fs.read("/r/apps/missing.yaml".as_ref()).is_err());
        assert_eq!(reads(), 5);
        assert!(fs.is_dir("/r/apps".as_ref()));
    }

    #[test]
    fn secrets_are_found_in_path_order_and_sops_is_seen() {
        let i = index(&[
            ("a/one.yaml", "kind: ConfigMap\nmetadata: {name: token}\n"),
            (
                "b/two.yaml",
                "kind: Secret\nmetadata: {name: token}\nsops:\n  version: 3\n",
            ),
            ("c/three.yaml", "kind: Secret\nmetadata: {name: token}\n"),
        ]);
        assert_eq!(i.secret_file("token"), Some("b/two.yaml"));
        assert_eq!(i.secret_file("other"), None);
        assert!(i.file("b/two.yaml").is_some_and(IndexedFile::is_sops));
        assert!(!i.file("c/three.yaml").is_some_and(IndexedFile::is_sops));
    }

    #[test]
    fn chart_files_are_not_scanned_for_secrets() {
        let secret = "kind: Secret\nmetadata: {name: token}\n";
        let i = index(&[
            ("charts/demo/Chart.yaml", "name: demo\n"),
            ("charts/demo/templates/secret.yaml", secret),
            ("charts/demo/templates/sub/secret.yaml", secret),
            ("charts/demo/ci/secret-values.yaml", secret),
            (
                "charts/demo/crds/crd.yaml",
                "kind: CustomResourceDefinition\n",
            ),
            ("templates/secret.yaml", secret),
        ]);
        assert!(i.is_chart_template("charts/demo/templates/secret.yaml"));
        assert!(i.is_chart_template("charts/demo/templates/sub/secret.yaml"));
        assert!(!i.is_chart_template("charts/demo/crds/crd.yaml"));
        assert!(!i.is_chart_template("templates/secret.yaml"));
        assert_eq!(
            i.chart_root("charts/demo/crds/crd.yaml"),
            Some("charts/demo")
        );
        assert_eq!(i.chart_root("charts/demo/values.yaml"), Some("charts/demo"));
        assert_eq!(i.chart_root("charts/other/values.yaml"), None);
        assert_eq!(i.chart_root("values.yaml"), None);
        assert_eq!(i.secret_file("token"), Some("templates/secret.yaml"));
    }

    #[test]
    fn files_the_walk_skipped_are_read_on_request() {
        let i = index(&[(".hidden/x.yaml", "a: 1 # kept\n")]);
        assert!(!i.contains(".hidden/x.yaml"));
        let f = i.read(".hidden/x.yaml").expect("readable");
        assert!(f.text.contains("# kept"));
        assert_eq!(f.docs().len(), 1);
        assert!(i.read("missing.yaml").is_err());
        assert!(i.read("missing.yaml").is_err());
    }
}
