//! The builder methods a [`Diagnostic`](crate::Diagnostic) and a
//! [`Problem`](crate::Problem) share: both carry a primary place, related places, notes and a
//! help line, and are built the same way.
//!
//! ```
//! use fluxgate_diagnostics::{Annotate, Diagnostic, Location, Severity};
//! let d = Diagnostic::new("render", Severity::Error, "bad value")
//!     .at(Location::new("a.yaml", 3, 7))
//!     .related(Location::new("b.yaml", 1, 1), "used here")
//!     .note("seen in prod")
//!     .help("quote it");
//! assert_eq!((d.related.len(), d.notes.len()), (1, 1));
//! ```

use crate::{Location, Related};

/// The parts of a finding the builder sets, borrowed from the finding.
pub struct Parts<'a> {
    pub location: &'a mut Option<Location>,
    pub related: &'a mut Vec<Related>,
    pub notes: &'a mut Vec<String>,
    pub help: &'a mut Option<String>,
}

/// Builds a finding's places and explanations: implementors give their [`Parts`], and get
/// `at`, `related`, `note` and `help`.
pub trait Annotate: Sized {
    /// The place, related places, notes and help of this finding.
    fn parts(&mut self) -> Parts<'_>;

    /// Sets the primary place: where the bad value was written.
    #[must_use]
    fn at(mut self, location: Location) -> Self {
        *self.parts().location = Some(location);
        self
    }

    /// Adds a related place with its label (where a value is consumed, a chart default, ...).
    #[must_use]
    fn related(mut self, location: Location, message: impl Into<String>) -> Self {
        self.parts().related.push(Related {
            location,
            message: message.into(),
        });
        self
    }

    /// Adds a note.
    #[must_use]
    fn note(mut self, note: impl Into<String>) -> Self {
        self.parts().notes.push(note.into());
        self
    }

    /// Sets the help line: what to do about it.
    #[must_use]
    fn help(mut self, help: impl Into<String>) -> Self {
        *self.parts().help = Some(help.into());
        self
    }
}

/// Implements [`Annotate`] for a finding type with the four fields `location`, `related`,
/// `notes` and `help` (one implementation for [`Diagnostic`](crate::Diagnostic) and
/// [`Problem`](crate::Problem)).
macro_rules! impl_annotate {
    ($ty:ty $(, $generic:ident)?) => {
        impl$(<$generic>)? $crate::Annotate for $ty {
            fn parts(&mut self) -> $crate::Parts<'_> {
                $crate::Parts {
                    location: &mut self.location,
                    related: &mut self.related,
                    notes: &mut self.notes,
                    help: &mut self.help,
                }
            }
        }
    };
}
pub(crate) use impl_annotate;
