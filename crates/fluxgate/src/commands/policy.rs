//! `fluxgate policy test DIR`: run Kyverno CLI tests (`kyverno-test.yaml`) with fluxgate's
//! policy engine and report agreement with their expected results (SPEC §4).
//!
//! DIR is a `kyverno-test.yaml`, a folder holding one (or `.kyverno-test/kyverno-test.yaml`),
//! or a tree: every test under it runs. Exit codes: 0 every expected result agreed, 1 some
//! did not, 2 a test could not be read.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fluxgate_policy::test_runner::{TestReport, kyverno_test, test_file};
use serde_json::json;

use crate::output::{Format, emit};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: PolicyCommand,
}

#[derive(clap::Subcommand)]
pub enum PolicyCommand {
    /// Run a Kyverno `kyverno-test.yaml` (or every one under DIR) and report agreement.
    Test(TestArgs),
}

#[derive(clap::Args)]
pub struct TestArgs {
    /// The test file, its folder, or a tree of test folders.
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

fn find_tests(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Some(f) = test_file(dir) {
        out.push(f);
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        find_tests(&d, out);
    }
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    crate::output::mask_with(fluxgate_diagnostics::redact::Redactor::default());
    let PolicyCommand::Test(t) = &args.command;
    let mut files = Vec::new();
    find_tests(&t.dir, &mut files);
    if files.is_empty() {
        anyhow::bail!("no kyverno-test.yaml in {}", t.dir.display());
    }
    let reports: Vec<(PathBuf, TestReport)> = files
        .into_iter()
        .map(|f| (f.clone(), kyverno_test(&f)))
        .collect();
    let expected: usize = reports.iter().map(|(_, r)| r.expected).sum();
    let agreed: usize = reports.iter().map(|(_, r)| r.agreed).sum();
    let problems: Vec<String> = reports
        .iter()
        .flat_map(|(_, r)| r.problems.clone())
        .collect();
    match t.format {
        Format::Json => {
            let results: Vec<_> = reports
                .iter()
                .flat_map(|(f, r)| {
                    r.results.iter().map(move |x| {
                        let mut v = json!({"policy": x.policy, "rule": x.rule, "resource": x.resource,
                            "kind": x.kind, "expected": x.expected, "actual": x.actual,
                            "test": f.display().to_string()});
                        if let Some(d) = &x.detail {
                            v["detail"] = json!(d);
                        }
                        v
                    })
                })
                .collect();
            let v = json!({"expected": expected, "agreed": agreed, "results": results, "problems": problems});
            emit(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
        }
        Format::Text => {
            let mut out = String::new();
            for (f, r) in &reports {
                let _ = writeln!(out, "{}: {}/{} agreed", f.display(), r.agreed, r.expected);
                for x in r.results.iter().filter(|x| x.expected != x.actual) {
                    let rule = if x.rule.is_empty() {
                        String::new()
                    } else {
                        format!("/{}", x.rule)
                    };
                    let _ = writeln!(
                        out,
                        "  {}{rule} {} {}: expected {}, got {}{}",
                        x.policy,
                        x.kind,
                        x.resource,
                        x.expected,
                        x.actual,
                        x.detail
                            .as_ref()
                            .map(|d| format!(" ({d})"))
                            .unwrap_or_default()
                    );
                }
                for p in &r.problems {
                    let _ = writeln!(out, "  problem: {p}");
                }
            }
            #[allow(clippy::cast_precision_loss)] // counts of test results
            let pct = if expected == 0 {
                100.0
            } else {
                agreed as f64 * 100.0 / expected as f64
            };
            let _ = writeln!(
                out,
                "agreement: {agreed} / {expected} expected results ({pct:.1}%)"
            );
            emit(&out)?;
        }
    }
    Ok(if !problems.is_empty() {
        ExitCode::from(2)
    } else if agreed == expected {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
