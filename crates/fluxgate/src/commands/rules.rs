//! `fluxgate rules`: the built-in rules with their default severity, scope and summary.

use std::process::ExitCode;

use fluxgate_rules::registry::RULES;
use serde_json::json;

use crate::output::{self, Format};

/// Arguments of `fluxgate rules`.
#[derive(clap::Args)]
pub struct Args {
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let text = match args.format {
        Format::Text => {
            let width = RULES.iter().map(|r| r.name.len()).max().unwrap_or(0);
            let mut s = String::new();
            for r in RULES {
                s.push_str(&format!(
                    "{:width$}  {:7}  {:11}  {}\n",
                    r.name,
                    r.default_severity.as_str(),
                    r.scope().as_str(),
                    r.summary()
                ));
            }
            s.push_str("\n`fluxgate explain RULE` shows what a rule checks, why, an example and the fix.\n");
            s
        }
        Format::Json => {
            let list: Vec<serde_json::Value> = RULES
                .iter()
                .map(|r| {
                    json!({
                        "name": r.name,
                        "severity": r.default_severity.as_str(),
                        "scope": r.scope().as_str(),
                        "summary": r.summary(),
                    })
                })
                .collect();
            format!("{}\n", serde_json::to_string_pretty(&list)?)
        }
    };
    output::emit(&text)?;
    Ok(ExitCode::SUCCESS)
}
