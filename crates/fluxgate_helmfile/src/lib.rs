//! helmfile read offline, on [`fluxgate_gotemplate`] and [`fluxgate_helm`]'s sprig: no Go, no
//! helm, no cluster, and nothing it names is ever run.
//!
//! [`load`] reads a `helmfile.yaml`, a `helmfile.yaml.gotmpl` or a `helmfile.d` folder (its
//! files in name order, each a state of its own) the way helmfile v1 does:
//!
//! - a state file is split into parts at `\n---\n`; a `.gotmpl` part is a template rendered
//!   twice (first with `readFile` and `exec` stubbed and missing keys zero, to read its
//!   `environments:`; then with the environment's values), a plain `.yaml` part is read as is;
//!   later parts override earlier ones key by key;
//! - `bases:` are loaded first (with the same environment) and merged under the file;
//! - the environment (`default` unless [`Options::environment`] says) takes its `values:`
//!   (files, `.gotmpl` rendered with `.Environment.Name` and the values so far, and inline
//!   maps), merged over the state's top-level `values:`;
//! - each release inherits its `templates:` (`inherit:` and `defaultInherit:`; the template's
//!   fields win over the release's, lists append), then its string fields are rendered as
//!   templates with `.Release`, `.Values` and `.Environment` until they stop changing;
//! - a release's values files (`.gotmpl` rendered with the release's data, paths relative to
//!   the state file's folder and `readFile` relative to the values file's) and inline values
//!   are merged as helm coalesces `-f` files, then `set:` entries.
//!
//! Template functions are sprig's and helmfile's, with three limits that are the point:
//! `env`/`requiredEnv`/`expandenv` read [`Options::env`], an explicit set (never the caller's
//! environment); `readFile`, `readDir`, `isFile` and `isDir` stay inside the repository; `exec`,
//! `envExec`, `fetchSecretValue` and `getHostByName` run nothing and return nothing, and the
//! release (or file) records what was not evaluated ([`Release::unevaluated`]) so that its
//! values are not compared as if they were known. Hooks are read, their templates rendered with
//! `.Event`, and the paths they would run checked to exist ([`Hook::paths`]); they never run.
//!
//! Every value keeps where it was written ([`Release::values`] is a YAML tree whose locations
//! are origins): a plain values file's own lines; for a rendered values file the template line
//! that printed it, or the line of the environment value it printed, or, when a template
//! prints a document it read with `readFile` (`(fromYaml (readFile X)).spec.values | toYaml`),
//! the lines of X.
//!
//! ```
//! use fluxgate_helmfile::{Options, load};
//! let mut fs = fluxgate_fs::MemFs::new();
//! fs.insert("/r/helmfile.yaml", "releases:\n  - name: cilium\n    namespace: kube-system\n    chart: cilium/cilium\n    version: 1.16.2\n    values: [values.yaml]\n");
//! fs.insert("/r/values.yaml", "kubeProxyReplacement: true\n");
//! let opts = Options::new("/r", "helmfile.yaml").with_fs(std::sync::Arc::new(fs));
//! let hf = load(&opts);
//! let cilium = &hf.states[0].releases[0];
//! assert_eq!(cilium.version.as_deref(), Some("1.16.2"));
//! let v = cilium.values.get("kubeProxyReplacement").unwrap();
//! assert_eq!((v.loc.file.as_ref(), v.loc.line), ("values.yaml", 1));
//! ```

mod funcs;
mod hooks;
mod load;
mod merge;
mod render;
mod state;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use load::{is_helmfile_name, load};
pub use merge::{coalesce, merge_override};
pub use state::{Helmfile, Hook, HookPath, Need, Problem, ProblemKind, Release, State, ValuesFile};

/// What to load and how.
#[derive(Clone)]
pub struct Options {
    /// The repository: every path stays inside it.
    pub root: PathBuf,
    /// The state file or `helmfile.d` folder, relative to `root`.
    pub path: String,
    /// helmfile's `--environment` (`default` when none).
    pub environment: String,
    /// What `env`, `requiredEnv` and `expandenv` see: this set only.
    pub env: BTreeMap<String, String>,
    /// Where files are read; `None`: the repository on disk, confined to `root`.
    pub fs: Option<Arc<dyn fluxgate_fs::Fs>>,
}

impl Options {
    pub fn new(root: impl Into<PathBuf>, path: impl Into<String>) -> Options {
        Options {
            root: root.into(),
            path: path.into(),
            environment: "default".to_string(),
            env: BTreeMap::new(),
            fs: None,
        }
    }

    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn fluxgate_fs::Fs>) -> Options {
        self.fs = Some(fs);
        self
    }
}
