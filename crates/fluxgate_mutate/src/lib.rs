//! Proof that the gate bites (SPEC §8, §9): requirement coverage, and mutation testing of the
//! repository's own checks.
//!
//! `fluxgate mutate` plants one small realistic defect at a time ([`operators`]), serves it
//! to every renderer through an in-memory [`fluxgate_fs::Overlay`] (nothing is copied or
//! written), renders again only the environments that read the mutated file, runs the gate,
//! and says whether a check noticed: [`Status::Killed`] (with the rules that fired),
//! [`Status::Survived`] (an unguarded value), or [`Status::Equivalent`] (no environment's
//! render changed). `fluxgate coverage` maps requirements to the checks that declare them
//! ([`coverage`]) and, given a mutation run, to whether those checks bite on the files that
//! serve each requirement.
//!
//! ```
//! use fluxgate_mutate::requirements::ids_in;
//! assert_eq!(ids_in("Serves: R-NET-01..03").0, ["R-NET-01", "R-NET-02", "R-NET-03"]);
//! ```

pub mod coverage;
pub mod engine;
mod error;
pub mod fs;
pub mod operators;
pub mod outline;
pub mod report;
pub mod scalar;

pub use error::Error;
/// The requirements registry, read by the model (it checks the ids fluxgate.yaml names).
pub use fluxgate_model::requirements;

/// One edit of a mutant: a file's whole new text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    /// Relative to the repository root.
    pub file: String,
    pub text: String,
}

/// One planted defect.
#[derive(Clone, Debug)]
pub struct Mutant {
    pub operator: &'static str,
    /// Where it is shown: the file and line it changes first.
    pub file: String,
    pub line: u32,
    /// What changed, one line.
    pub what: String,
    pub edits: Vec<Edit>,
}

/// A mutant an operator could not make, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub operator: &'static str,
    pub file: String,
    pub line: u32,
    pub reason: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Killed,
    Survived,
    Equivalent,
}

impl Status {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Killed => "killed",
            Status::Survived => "survived",
            Status::Equivalent => "equivalent",
        }
    }
}

/// A mutant and what the gate made of it.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub mutant: Mutant,
    pub status: Status,
    /// The rules whose new errors killed it, sorted.
    pub killed_by: Vec<String>,
    /// The environments whose render the mutant changed (or, killed, where it was caught),
    /// in the configuration's order.
    pub environments: Vec<String>,
    /// The environments that read the mutated file and were rendered again.
    pub reached: Vec<String>,
    /// The requirements the mutated file serves (its `Serves:`/`Refs` header).
    pub requirements: Vec<String>,
}

/// A whole mutation run.
#[derive(Clone, Debug)]
pub struct Run {
    pub outcomes: Vec<Outcome>,
    pub skipped: Vec<Skipped>,
    /// Errors the gate reports on the repository as it is (a mutant is killed only by new ones).
    pub baseline_errors: usize,
}

impl Run {
    #[must_use]
    pub fn count(&self, status: Status) -> usize {
        self.outcomes.iter().filter(|o| o.status == status).count()
    }

    /// Killed / (killed + survived), in percent; `None` when no mutant could be judged.
    #[must_use]
    pub fn score(&self) -> Option<f64> {
        let killed = self.count(Status::Killed);
        let judged = killed + self.count(Status::Survived);
        #[allow(clippy::cast_precision_loss)] // mutant counts, far below 2^52
        (judged > 0).then(|| (killed as f64 * 1000.0 / judged as f64).round() / 10.0)
    }

    /// Per mutated file: how its mutants fared (for coverage `--mutants`).
    #[must_use]
    pub fn file_bites(&self) -> coverage::FileBites {
        let mut out = coverage::FileBites::new();
        for o in &self.outcomes {
            for e in &o.mutant.edits {
                let b = out.entry(e.file.clone()).or_default();
                match o.status {
                    Status::Killed => b.killed += 1,
                    Status::Survived => b.survived += 1,
                    Status::Equivalent => b.equivalent += 1,
                }
            }
        }
        out
    }
}
