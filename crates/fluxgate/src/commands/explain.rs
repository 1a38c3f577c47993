//! `fluxgate explain RULE`: what a rule checks, why it matters, an example and the fix.

use std::process::ExitCode;

use fluxgate_rules::registry::{RULES, find};

use crate::output;

/// Arguments of `fluxgate explain`.
#[derive(clap::Args)]
pub struct Args {
    /// The rule's name (see `fluxgate rules`).
    pub rule: String,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let Some(rule) = find(&args.rule) else {
        let names: Vec<&str> = RULES.iter().map(|r| r.name).collect();
        anyhow::bail!(
            "no rule `{}`; the rules are: {}",
            args.rule,
            names.join(", ")
        );
    };
    output::emit(&format!(
        "{} ({}, per {})\n\n{}",
        rule.name,
        rule.default_severity,
        rule.scope().as_str(),
        rule.doc()
    ))?;
    Ok(ExitCode::SUCCESS)
}
