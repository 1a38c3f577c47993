//! Where a value came from: the one provenance type every renderer produces and every
//! finding reads. A value's history is a chain of [`Origin`]s, the most direct first: the
//! place that set it, then the places it came through (an overlay patch, a post-build
//! substitution variable, a HelmRelease's `valuesFrom`, a chart default; an inventory, a
//! `group_vars` file, a role default, a template expression).

use crate::Location;

/// One link of a value's history: where, in what role, and through which variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The place that set the value (or passed it on).
    pub location: Location,
    /// The role of that place, as a reader says it: `values`, `valuesFrom ConfigMap/x`,
    /// `chart default`, `group_vars/all`, `role defaults (k3s_server)`, `extra vars`.
    pub via: String,
    /// The variable that carried the value, when one did (an Ansible variable, a post-build
    /// substitution variable).
    pub var: Option<String>,
    /// The host a variable was resolved for (Ansible).
    pub host: Option<String>,
}

impl Origin {
    /// A link without a variable: a file's line in some role.
    pub fn new(location: Location, via: impl Into<String>) -> Origin {
        Origin {
            location,
            via: via.into(),
            var: None,
            host: None,
        }
    }

    /// A variable's definition, resolved for a host.
    pub fn variable(
        location: Location,
        via: impl Into<String>,
        var: impl Into<String>,
        host: impl Into<String>,
    ) -> Origin {
        Origin {
            location,
            via: via.into(),
            var: Some(var.into()),
            host: Some(host.into()),
        }
    }

    /// The variable's name, or "" when no variable carried the value.
    pub fn var_name(&self) -> &str {
        self.var.as_deref().unwrap_or_default()
    }
}

/// A value's whole history, the most direct link first.
pub type Chain = Vec<Origin>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_with_and_without_a_variable() {
        let plain = Origin::new(Location::new("values.yaml", 3, 1), "chart default");
        assert_eq!(plain.var_name(), "");
        assert_eq!(plain.host, None);
        let var = Origin::variable(
            Location::new("group_vars/all.yml", 1, 1),
            "group_vars/all",
            "vip",
            "k3s-1",
        );
        assert_eq!(var.var_name(), "vip");
        assert_eq!(var.host.as_deref(), Some("k3s-1"));
    }
}
