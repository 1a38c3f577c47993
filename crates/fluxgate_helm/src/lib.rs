//! Helm charts rendered in Rust, on [`fluxgate_gotemplate`]: chart loading (folders and
//! `.tgz`, `.helmignore`, subcharts), values as Helm coalesces them, sprig and Helm's own
//! functions (`include`, `tpl`, `required`, `fail`, `toYaml`, `lookup` offline),
//! `values.schema.json` validation ([`schema`]: helm's error text, and each failure with its
//! path in the values), and the text `helm template` v4.3.2 prints.
//!
//! ```no_run
//! use fluxgate_helm::{Chart, Options};
//! let chart = Chart::load(std::path::Path::new("charts/podinfo")).unwrap();
//! let opts = Options { release_name: "demo".into(), namespace: "default".into(), ..Options::default() };
//! print!("{}", fluxgate_helm::template(chart.clone(), &opts).unwrap());
//!
//! // The same documents one by one, each piece with where it came from: a template line
//! // or the values path that set it (`SpanOrigin`).
//! for m in fluxgate_helm::render_manifests(chart, &opts).unwrap().manifests {
//!     for s in &m.spans {
//!         println!("{} {:?}: {:?}", m.source, &m.text[s.start..s.end], s.origin);
//!     }
//! }
//! ```
//!
//! Origins cover literal text (its file and line), values reached through field chains,
//! variables, `with`, `range`, `index`/`get`/`dig` and functions that pass a value on
//! (`quote`, `default`, `toYaml`, `nindent`, `b64enc`, ...; see `render::TRACES`), and what
//! `include` and `tpl` print; `printf` of `%s` verbs keeps each argument's origin. Copies keep
//! the paths of what they copy: `deepCopy`, and `fromYaml` of what `toYaml` printed (served
//! without a parse, see [`roundtrip`]); an entry `merge`/`mergeOverwrite` copies from one
//! traced map into another keeps the path it came from.
//!
//! A scalar stored in a map or list keeps its origin too ([`fluxgate_gotemplate::Held`]):
//! `dict`, `set`, `list`, `append` store their arguments' origins, `merge`, `omit`/`pick` and
//! `deepCopy` copy them, and `fromYaml` (`fromJson`) of a text a template printed gives each
//! scalar the origins of its bytes (a block printed from one values path is traced as that
//! path; a plain scalar printed in pieces, `image: {{ printf "%s:%s" repo tag }}`, keeps each
//! piece's; see [`origins`]). Reading the entry back (a field, `index`, `get`, `range`) gives that origin,
//! and `toYaml` prints each such scalar at its origin: a map or list that is not traced itself
//! is the action's but for those scalars (and those below traced maps, at their paths); a
//! block printed whole from a traced map is one span of its path (what is below it at its YAML
//! path from there) but for what a merge or a `set` put in it from elsewhere. So
//! app-template's containers, printed by a text template and parsed back, point at the
//! release's values.
//!
//! Not traced: a parsed scalar whose text is not what it parsed to (escapes, folding) and
//! whose bytes have several origins, and values other computing functions make (`printf` of
//! numbers, `concat`, `keys`) are attributed to the action that computed them; map keys are
//! their template's.
//!
//! Randomness and time are deterministic (see [`sprig::crypto`]): the same release renders
//! the same text, where Helm prints new values on every run.

// Helm compares file names case-sensitively (`Chart.yaml`, `.tgz`, `crds/*.yaml`).
#![allow(clippy::case_sensitive_file_extension_comparisons)]
// SHA-1, splitmix and the civil-date algorithm use their papers' one-letter names.
#![allow(clippy::many_single_char_names)]
// The small `s`/`i`/`list` helpers return `Result` so that function bodies end in them.
#![allow(clippy::unnecessary_wraps)]

mod chart;
pub mod convert;
mod helmignore;
mod objects;
pub mod origins;
mod output;
mod parsed;
mod render;
mod request;
pub mod roundtrip;
pub mod schema;
pub mod setvals;
pub mod sprig;
#[cfg(test)]
mod test_values;
mod toml;
pub mod values;

pub use chart::{Chart, ChartOf, Dependency, Frozen};
pub use output::{
    Manifest, Notes, Rendered, Span, SpanOrigin, check_manifest, render_manifests, template,
};
pub use render::helm_funcs;
pub use request::{Request, run, run_manifests, user_values};

use fluxgate_gotemplate::Value;

/// The Helm version `.Capabilities.HelmVersion` reports.
pub const HELM_VERSION: &str = "v4.3";
/// `.Capabilities.KubeVersion` when none is given (helm v4.3.2's client-go).
pub const DEFAULT_KUBE_VERSION: &str = "v1.37.0";

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// The chart cannot be loaded (no Chart.yaml, bad YAML, a bad subchart).
    #[error("{chart}: {message}")]
    Chart { chart: String, message: String },
    /// Values cannot be read or coalesced.
    #[error("{0}")]
    Values(String),
    /// A template failed to parse or execute: where Helm reports it (the file parsed or the
    /// outermost action executing; 1-based line, 1-based column in characters), the
    /// innermost cause (a `required`/`fail` message, Go's executor message), and Helm's
    /// text, which is what this error prints.
    #[error("{text}")]
    Template {
        file: String,
        line: usize,
        column: usize,
        message: String,
        text: String,
    },
    /// A render failed without a position (Helm's text): a depth or size bound.
    #[error("{0}")]
    Render(String),
    /// A bad option.
    #[error("{0}")]
    Usage(String),
    /// The values fail the schema of the chart or of a subchart (helm's text, then the
    /// failures one by one in [`schema::SchemaFailure::violations`]).
    #[error("{0}")]
    Schema(Box<schema::SchemaFailure>),
}

/// The arguments of `helm template`.
#[derive(Debug, Clone)]
pub struct Options {
    pub release_name: String,
    pub namespace: String,
    /// User values (from `-f` and `--set*`), merged.
    pub values: Value,
    pub kube_version: Option<String>,
    pub api_versions: Vec<String>,
    pub skip_tests: bool,
    pub include_crds: bool,
    /// `--skip-schema-validation`: render without checking values.schema.json.
    pub skip_schema_validation: bool,
    /// What a values.schema.json that cannot be read offline does to the render.
    pub unloadable_schemas: UnloadableSchemas,
}

/// What a values.schema.json that cannot be read offline (a `$ref` helm would fetch) does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UnloadableSchemas {
    /// Fails the render, as helm does offline.
    #[default]
    Fail,
    /// Renders on when the values break no schema that can be read: [`Rendered::unchecked`]
    /// lists the others (`fluxgate check` makes them a note, without rendering twice).
    RenderPast,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            release_name: "release-name".into(),
            namespace: "default".into(),
            values: Value::empty_map(),
            kube_version: None,
            api_versions: Vec::new(),
            skip_tests: false,
            include_crds: false,
            skip_schema_validation: false,
            unloadable_schemas: UnloadableSchemas::Fail,
        }
    }
}

/// The seed of the deterministic random functions for a release.
pub fn seed(release: &str, namespace: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in release.bytes().chain([0]).chain(namespace.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

pub(crate) fn sprig_path_base(p: &str) -> String {
    sprig::path_base(p)
}
