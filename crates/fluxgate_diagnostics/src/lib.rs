//! Diagnostics: what fluxgate tells its users, where, and how it is printed.
//!
//! A [`Diagnostic`] names a rule, a severity, a message and a primary [`Location`] (where the
//! bad value was *set*), with related locations (where it is consumed) and notes. Renderers in
//! [`render`] turn a sorted list of diagnostics into text, JSON and the other formats;
//! [`redact`] masks secret values before anything is printed. Renderers report a typed
//! [`Problem`] instead, and the rules layer decides its rule and severity.
//!
//! ```
//! use fluxgate_diagnostics::{Annotate, Diagnostic, Location, Severity};
//! let d = Diagnostic::new("render", Severity::Error, "mapping values are not allowed here")
//!     .at(Location::new("clusters/prod/kustomization.yaml", 3, 7));
//! assert_eq!(d.location.as_ref().map(|l| l.line), Some(3));
//! ```

mod builder;
mod error;
pub mod origin;
pub mod problem;
pub mod redact;
pub mod render;

pub use builder::{Annotate, Parts};
pub use error::Error;
pub use problem::Problem;

use std::fmt;
use std::sync::Arc;

pub use origin::{Chain, Origin};

/// How serious a finding is. Ordered so that `Error > Warning > Note`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// Parses the names used in `fluxgate.yaml` and on the command line.
    #[must_use]
    pub fn parse(text: &str) -> Option<Severity> {
        match text {
            "note" | "info" => Some(Severity::Note),
            "warning" | "warn" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A place in a file of the repository: path relative to the repository root, 1-based line
/// and 1-based column (in characters).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    pub file: Arc<str>,
    pub line: u32,
    pub column: u32,
}

impl Location {
    pub fn new(file: impl Into<Arc<str>>, line: u32, column: u32) -> Location {
        Location {
            file: file.into(),
            line,
            column,
        }
    }

    /// A location that names a file but no line inside it (a missing file, a directory).
    pub fn file(file: impl Into<Arc<str>>) -> Location {
        Location {
            file: file.into(),
            line: 0,
            column: 0,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

/// A secondary location with a label: where a value is consumed, the chart default, ...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Related {
    pub location: Location,
    pub message: String,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub rule: String,
    pub severity: Severity,
    pub message: String,
    pub environment: Option<String>,
    /// Every environment the same defect was seen in, when more than one (the first is
    /// `environment`); empty otherwise.
    pub environments: Vec<String>,
    pub location: Option<Location>,
    pub related: Vec<Related>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    pub requirements: Vec<String>,
}

builder::impl_annotate!(Diagnostic);

impl Diagnostic {
    pub fn new(rule: impl Into<String>, severity: Severity, message: impl Into<String>) -> Self {
        Diagnostic {
            rule: rule.into(),
            severity,
            message: message.into(),
            environment: None,
            environments: Vec::new(),
            location: None,
            related: Vec::new(),
            notes: Vec::new(),
            help: None,
            requirements: Vec::new(),
        }
    }

    /// A `render` error: what the YAML parser reports for input it cannot read (renderers
    /// report a typed [`Problem`] instead, whose rule the rules layer chooses).
    pub fn render_error(message: impl Into<String>, location: Option<Location>) -> Self {
        let mut d = Diagnostic::new("render", Severity::Error, message);
        d.location = location;
        d
    }

    #[must_use]
    pub fn in_env(mut self, env: impl Into<String>) -> Self {
        self.environment = Some(env.into());
        self
    }

    /// The environments as shown to users: `prod` or `dev, prod`.
    #[must_use]
    pub fn environment_label(&self) -> Option<String> {
        if self.environments.len() > 1 {
            Some(self.environments.join(", "))
        } else {
            self.environment.clone()
        }
    }

    /// The order users see: by file, line, column, then rule and message, so that no hash
    /// map iteration order ever reaches the output.
    #[must_use]
    pub fn sort_key(&self) -> (Option<&Location>, &str, &str, Option<&str>) {
        (
            self.location.as_ref(),
            &self.rule,
            &self.message,
            self.environment.as_deref(),
        )
    }
}

/// Sorts diagnostics into the stable order users see and removes exact duplicates (the same
/// finding reached through two environments' shared files stays once per environment).
pub fn sort_and_dedup(diags: &mut Vec<Diagnostic>) {
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    diags.dedup();
}

/// Merges findings that differ only in their environment (a shared base seen by `dev` and
/// `prod`) into one that lists them all in [`Diagnostic::environments`], SPEC §4. Expects
/// the order of [`sort_and_dedup`], which puts such findings next to each other.
pub fn merge_environments(diags: &mut Vec<Diagnostic>) {
    let same_defect = |a: &Diagnostic, b: &Diagnostic| {
        a.rule == b.rule
            && a.severity == b.severity
            && a.message == b.message
            && a.location == b.location
            && a.related == b.related
            && a.notes == b.notes
            && a.help == b.help
            && a.requirements == b.requirements
            && a.environment.is_some()
            && b.environment.is_some()
    };
    let mut out: Vec<Diagnostic> = Vec::with_capacity(diags.len());
    for d in diags.drain(..) {
        if let Some(last) = out.last_mut()
            && same_defect(last, &d)
        {
            if last.environments.is_empty() {
                last.environments.extend(last.environment.clone());
            }
            for e in d.environments.iter().cloned().chain(d.environment.clone()) {
                if !last.environments.contains(&e) {
                    last.environments.push(e);
                }
            }
            continue;
        }
        out.push(d);
    }
    *diags = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_defect_in_several_environments_is_one_finding() {
        let at = Location::new("base/cm.yaml", 3, 1);
        let d = |env: &str| {
            Diagnostic::new("render", Severity::Error, "bad")
                .at(at.clone())
                .in_env(env)
        };
        let other = Diagnostic::new("render", Severity::Error, "other")
            .at(at.clone())
            .in_env("dev");
        let mut diags = vec![d("prod"), other, d("dev"), d("staging")];
        sort_and_dedup(&mut diags);
        merge_environments(&mut diags);
        assert_eq!(diags.len(), 2);
        assert_eq!(diags[0].environment.as_deref(), Some("dev"));
        assert_eq!(diags[0].environments, ["dev", "prod", "staging"]);
        assert_eq!(
            diags[0].environment_label().as_deref(),
            Some("dev, prod, staging")
        );
        assert!(diags[1].environments.is_empty());
    }
}
