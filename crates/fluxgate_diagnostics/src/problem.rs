//! What a renderer found wrong with its input. A [`Problem`] is typed by `K`, the kind enum of
//! the crate that found it (kustomize, Flux, Ansible, the model), and told in a message with
//! its places, notes and help. A renderer decides neither the rule nor the severity: the rules
//! layer maps each kind to both and makes the [`Diagnostic`] users see.

use crate::{Diagnostic, Location, Related, Severity};

/// One problem of kind `K`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem<K> {
    pub kind: K,
    pub message: String,
    /// Where the bad input was written; `None` when no file says it.
    pub location: Option<Location>,
    pub related: Vec<Related>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

crate::builder::impl_annotate!(Problem<K>, K);

impl<K> Problem<K> {
    pub fn new(kind: K, message: impl Into<String>, location: Option<Location>) -> Self {
        Problem {
            kind,
            message: message.into(),
            location,
            related: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    /// The same problem as a kind of the crate above (a kustomize problem inside a Flux
    /// Kustomization's build).
    #[must_use]
    pub fn map_kind<L>(self, wrap: impl FnOnce(K) -> L) -> Problem<L> {
        Problem {
            kind: wrap(self.kind),
            message: self.message,
            location: self.location,
            related: self.related,
            notes: self.notes,
            help: self.help,
        }
    }

    /// The finding users see, once the rules layer has chosen its rule and severity.
    #[must_use]
    pub fn into_diagnostic(self, rule: &str, severity: Severity) -> Diagnostic {
        let mut d = Diagnostic::new(rule, severity, self.message);
        d.location = self.location;
        d.related = self.related;
        d.notes = self.notes;
        d.help = self.help;
        d
    }
}

impl<K> Problem<K> {
    /// A problem from a [`Diagnostic`] of the YAML parser (shared with fluxgate.yaml, whose
    /// findings are `config`): `kind` says what the renderer makes of it; the parser's rule
    /// and severity are dropped.
    #[must_use]
    pub fn from_diagnostic(kind: K, d: Diagnostic) -> Self {
        Problem {
            kind,
            message: d.message,
            location: d.location,
            related: d.related,
            notes: d.notes,
            help: d.help,
        }
    }
}

/// Sorts problems by place and message (stable, so equal ones keep the order they were found
/// in) and removes exact duplicates.
pub fn sort_and_dedup<K: PartialEq>(problems: &mut Vec<Problem<K>>) {
    problems.sort_by(|a, b| (&a.location, &a.message).cmp(&(&b.location, &b.message)));
    problems.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Annotate;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Inner {
        Missing,
    }
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Outer {
        Inner(Inner),
    }

    #[test]
    fn the_rules_layer_chooses_rule_and_severity() {
        let p = Problem::new(Inner::Missing, "gone", Some(Location::new("a.yaml", 2, 1)))
            .related(Location::new("b.yaml", 1, 1), "used here")
            .help("add it");
        let p = p.map_kind(Outer::Inner);
        assert_eq!(p.kind, Outer::Inner(Inner::Missing));
        let d = p.into_diagnostic("render", Severity::Note);
        assert_eq!((d.rule.as_str(), d.severity), ("render", Severity::Note));
        assert_eq!(d.location, Some(Location::new("a.yaml", 2, 1)));
        assert_eq!(d.related.len(), 1);
        assert_eq!(d.help.as_deref(), Some("add it"));
    }

    #[test]
    fn sorted_by_place_and_deduplicated() {
        let at = |l| Some(Location::new("a.yaml", l, 1));
        let mut ps = vec![
            Problem::new(Inner::Missing, "b", at(3)),
            Problem::new(Inner::Missing, "a", at(1)),
            Problem::new(Inner::Missing, "b", at(3)),
        ];
        sort_and_dedup(&mut ps);
        let got: Vec<&str> = ps.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(got, ["a", "b"]);
    }
}
