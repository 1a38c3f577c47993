//! The rule registry: [`declare_rule!`] declares a rule with its metadata and explanation, and
//! [`RULES`] lists every rule, sorted by name (ripgrep's explicit `FLAGS` list rather than
//! discovery). Adding a rule touches four things: its file, a `mod` line, a line here, and its
//! fixtures under `tests/fixtures/<rule>/{pass,fail}/`.

use fluxgate_diagnostics::{Diagnostic, Severity};

use crate::{RepoContext, RuleContext, rules};

/// A check over one environment.
pub type EnvCheck = fn(&RuleContext<'_>, &mut Vec<Diagnostic>);
/// A check over the whole repository (findings belong to no single environment unless the
/// rule says so).
pub type RepoCheck = fn(&RepoContext<'_>, &mut Vec<Diagnostic>);

/// How a rule runs: once per environment, once per repository, or not in the rule loop at
/// all: `config` findings are made while `fluxgate.yaml` is read and `contract:<id>` findings
/// while contracts are evaluated; those entries exist so that every finding's rule is
/// registered (`explain`, SARIF's rule list, `rules.<name>` settings).
#[derive(Clone, Copy)]
pub enum Check {
    Environment(EnvCheck),
    Repository(RepoCheck),
    Reported(Scope),
}

/// The scope of a rule, as `fluxgate rules` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Environment,
    Repository,
}

impl Scope {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Environment => "environment",
            Scope::Repository => "repository",
        }
    }
}

/// A rule: its stable name, default severity, how it runs, and its explanation.
pub struct Rule {
    /// kebab-case, naming the defect.
    pub name: &'static str,
    pub default_severity: Severity,
    pub check: Check,
    /// The rule's own keys under `rules.<name>` in fluxgate.yaml, besides `enabled`,
    /// `severity` and `requirements`; any other key is a typo and a `config` finding.
    pub settings: &'static [&'static str],
    /// The doc comment of the declaration, as written (`///` lines).
    pub raw_doc: &'static str,
}

impl Rule {
    #[must_use]
    pub fn scope(&self) -> Scope {
        match self.check {
            Check::Environment(_) => Scope::Environment,
            Check::Repository(_) => Scope::Repository,
            Check::Reported(scope) => scope,
        }
    }

    /// Whether the rule loop runs this rule's check (false for `config` and `contract`, whose
    /// findings are made elsewhere).
    #[must_use]
    pub fn runs(&self) -> bool {
        !matches!(self.check, Check::Reported(_))
    }

    /// The explanation `fluxgate explain` prints: the doc comment without its leading spaces.
    #[must_use]
    pub fn doc(&self) -> String {
        let mut out = String::new();
        for line in self.raw_doc.lines() {
            out.push_str(line.strip_prefix(' ').unwrap_or(line));
            out.push('\n');
        }
        out.trim().to_string() + "\n"
    }

    /// One line: the first sentence under "What it checks".
    #[must_use]
    pub fn summary(&self) -> String {
        let doc = self.doc();
        let body = doc
            .split("## What it checks")
            .nth(1)
            .unwrap_or(&doc)
            .split("\n## ")
            .next()
            .unwrap_or_default();
        let para: Vec<&str> = body
            .trim()
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect();
        let para = para.join(" ");
        match para.find(". ") {
            Some(i) => para[..=i].to_string(),
            None => para,
        }
    }
}

/// Declares a rule. The doc comment is its explanation and must have the headings
/// `## What it checks`, `## Why it matters`, `## Example` and `## How to fix`.
///
/// A rule whose findings are made outside the rule loop leaves out `check:`.
///
/// ```ignore
/// declare_rule! {
///     /// ## What it checks
///     /// ...
///     pub static PLAINTEXT_SECRET = {
///         name: "plaintext-secret",
///         severity: Error,
///         scope: Repository,
///         check: check,
///     }
/// }
/// ```
#[macro_export]
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $ident:ident = {
            name: $name:literal,
            severity: $sev:ident,
            scope: $scope:ident,
            check: $check:path
            $(, settings: [$($setting:literal),* $(,)?])? $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        $vis static $ident: $crate::registry::Rule = $crate::registry::Rule {
            name: $name,
            default_severity: $crate::Severity::$sev,
            check: $crate::registry::Check::$scope($check),
            settings: &[$($($setting),*)?],
            raw_doc: concat!($($doc, "\n"),*),
        };
    };
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $ident:ident = {
            name: $name:literal,
            severity: $sev:ident,
            scope: $scope:ident $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        $vis static $ident: $crate::registry::Rule = $crate::registry::Rule {
            name: $name,
            default_severity: $crate::Severity::$sev,
            check: $crate::registry::Check::Reported($crate::registry::Scope::$scope),
            settings: &[],
            raw_doc: concat!($($doc, "\n"),*),
        };
    };
}

/// Every rule, sorted by name.
pub static RULES: &[&Rule] = &[
    &rules::network::address_conflict::ADDRESS_CONFLICT,
    &rules::bootstrap::bootstrap_order::BOOTSTRAP_ORDER,
    &rules::bootstrap::check_mode_probe::CHECK_MODE_PROBE,
    &rules::config::config::CONFIG,
    &rules::config::contract::CONTRACT,
    &rules::ha::ha_endpoint::HA_ENDPOINT,
    &rules::bootstrap::hook_path::HOOK_PATH,
    &rules::parity::parity::PARITY,
    &rules::secrets::plaintext_secret::PLAINTEXT_SECRET,
    &rules::config::policy::POLICY,
    &rules::flux::render::RENDER,
    &rules::rollout::rollout_blast_radius::ROLLOUT_BLAST_RADIUS,
    &rules::schema::schema::SCHEMA,
    &rules::flux::substitution_undefined::SUBSTITUTION_UNDEFINED,
    &rules::ha::tls_san::TLS_SAN,
];

/// The rule called `name`; a contract's findings, `contract:<id>`, belong to `contract`.
#[must_use]
pub fn find(name: &str) -> Option<&'static Rule> {
    let name = match name.split_once(':') {
        Some(("contract", id)) if !id.is_empty() => rules::config::contract::CONTRACT.name,
        Some(("policy", id)) if !id.is_empty() => rules::config::policy::POLICY.name,
        _ => name,
    };
    RULES.iter().copied().find(|r| r.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_unique() {
        for w in RULES.windows(2) {
            assert!(
                w[0].name < w[1].name,
                "{} must sort before {}",
                w[0].name,
                w[1].name
            );
        }
    }

    #[test]
    fn every_finding_source_is_registered() {
        for name in ["config", "render", "contract", "contract:cni-dials-vip"] {
            let rule = find(name).unwrap_or_else(|| panic!("{name} is not registered"));
            assert!(rule.doc().contains("## What it checks"), "{name}");
        }
        assert_eq!(find("contract:x").map(|r| r.name), Some("contract"));
        assert!(find("contract:").is_none());
        assert_eq!(
            find("policy:disallow-latest-tag/validation-0").map(|r| r.name),
            Some("policy")
        );
        assert!(!crate::is_known_rule("policy"));
        assert!(find("render:x").is_none());
        assert!(!find("config").is_some_and(Rule::runs));
        assert!(find("render").is_some_and(Rule::runs));
        // They have no `rules.<name>` settings: naming them there is a typo finding.
        assert!(!crate::is_known_rule("config") && !crate::is_known_rule("contract"));
        assert!(crate::is_known_rule("render"));
    }

    #[test]
    fn names_are_kebab_case() {
        for r in RULES {
            assert!(
                r.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{}",
                r.name
            );
        }
    }

    #[test]
    fn docs_have_the_headings() {
        for r in RULES {
            let doc = r.doc();
            for h in [
                "## What it checks",
                "## Why it matters",
                "## Example",
                "## How to fix",
            ] {
                assert!(doc.contains(h), "rule {} lacks `{h}`", r.name);
            }
            assert!(!r.summary().is_empty(), "{}", r.name);
        }
    }
}
