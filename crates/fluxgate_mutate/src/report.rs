//! The reports of `fluxgate mutate` and `fluxgate coverage`: text, JSON and Markdown. Text
//! groups survivors by file and ends with the score (mutate) or the conformance line
//! (coverage).

use std::collections::BTreeMap;

use fluxgate_diagnostics::render::cell;
use serde_json::{Value, json};

use crate::coverage::{Coverage, Status as CovStatus};
use crate::operators::OPERATORS;
use crate::requirements::RegistryProblem;
use crate::{Outcome, Run, Status};

/// When an equivalent mutant would stop being one: a sentence per operator.
#[must_use]
pub fn why_equivalent(o: &Outcome) -> String {
    match o.mutant.operator {
        "base-default-changed" => "every overlay that includes this base overrides the key, so no environment renders the base value; it matters for a future environment without the override".into(),
        "overlay-key-removed" => "the base already holds this overlay's value, so removing the override renders the same; it matters once the base default changes".into(),
        "chart-override-removed" => "the chart's own default is the same value, so the effective values do not change; it matters when a chart upgrade changes that default".into(),
        "parity-value" => "no environment renders this source differently (nothing reads the changed value); it matters once a render or a parity group reads it".into(),
        _ => format!(
            "the {} environment{} that read{} the file rendered the same; it matters if a future render reads the changed text",
            o.reached.len(),
            if o.reached.len() == 1 { "" } else { "s" },
            if o.reached.len() == 1 { "s" } else { "" }
        ),
    }
}

/// `Mutation score: 27 / 30 killed (90.0%), 3 survived, 4 equivalent, 5 skipped`.
#[must_use]
pub fn score_line(run: &Run) -> String {
    let killed = run.count(Status::Killed);
    let survived = run.count(Status::Survived);
    let score = run.score().map_or_else(
        || "no mutant could be judged".to_string(),
        |s| format!("{s:.1}%"),
    );
    format!(
        "Mutation score: {killed} / {} killed ({score}), {survived} survived, {} equivalent, {} skipped",
        killed + survived,
        run.count(Status::Equivalent),
        run.skipped.len()
    )
}

/// Per operator: (killed, survived, equivalent, skipped), in operator order.
#[must_use]
pub fn per_operator(run: &Run) -> Vec<(&'static str, [usize; 4])> {
    OPERATORS
        .iter()
        .map(|op| {
            let mut n = [0usize; 4];
            for o in run.outcomes.iter().filter(|o| o.mutant.operator == op.name) {
                n[match o.status {
                    Status::Killed => 0,
                    Status::Survived => 1,
                    Status::Equivalent => 2,
                }] += 1;
            }
            n[3] = run.skipped.iter().filter(|s| s.operator == op.name).count();
            (op.name, n)
        })
        .collect()
}

fn at(o: &Outcome) -> String {
    if o.environments.is_empty() {
        String::new()
    } else {
        format!(" [{}]", o.environments.join(", "))
    }
}

/// The text report.
#[must_use]
pub fn mutate_text(run: &Run) -> String {
    let mut out = String::new();
    out.push_str("Mutants per operator (killed / survived / equivalent / skipped):\n");
    for (name, n) in per_operator(run) {
        out.push_str(&format!(
            "  {name:<26} {:>3} / {:>3} / {:>3} / {:>3}\n",
            n[0], n[1], n[2], n[3]
        ));
    }
    if run.baseline_errors > 0 {
        out.push_str(&format!(
            "\nThe gate already reports {} error{} on this repository; a mutant is killed only by a new one.\n",
            run.baseline_errors,
            if run.baseline_errors == 1 { "" } else { "s" }
        ));
    }
    let survived: Vec<&Outcome> = run
        .outcomes
        .iter()
        .filter(|o| o.status == Status::Survived)
        .collect();
    if !survived.is_empty() {
        out.push_str(&format!(
            "\nSurvived ({}): no check noticed, an unguarded value\n",
            survived.len()
        ));
        let mut by_file: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
        for o in survived {
            by_file.entry(&o.mutant.file).or_default().push(o);
        }
        for (file, list) in by_file {
            out.push_str(&format!("  {file}\n"));
            for o in list {
                out.push_str(&format!(
                    "    {}  {}  {}{}\n",
                    o.mutant.line,
                    o.mutant.operator,
                    o.mutant.what,
                    at(o)
                ));
                if !o.requirements.is_empty() {
                    out.push_str(&format!(
                        "      the file serves {}\n",
                        o.requirements.join(", ")
                    ));
                }
            }
        }
    }
    let equivalent: Vec<&Outcome> = run
        .outcomes
        .iter()
        .filter(|o| o.status == Status::Equivalent)
        .collect();
    if !equivalent.is_empty() {
        out.push_str(&format!(
            "\nEquivalent ({}): no environment's render changed (not counted in the score)\n",
            equivalent.len()
        ));
        for o in equivalent {
            out.push_str(&format!(
                "  {}:{}  {}  {}\n",
                o.mutant.file, o.mutant.line, o.mutant.operator, o.mutant.what
            ));
            out.push_str(&format!("    {}\n", why_equivalent(o)));
        }
    }
    if !run.skipped.is_empty() {
        out.push_str(&format!(
            "\nSkipped ({}): mutants that could not be made\n",
            run.skipped.len()
        ));
        for s in &run.skipped {
            out.push_str(&format!(
                "  {}:{}  {}  {}\n",
                s.file, s.line, s.operator, s.reason
            ));
        }
    }
    out.push('\n');
    out.push_str(&score_line(run));
    out.push('\n');
    out
}

/// The JSON report: `{"score", "mutants": [{"operator", "file", "line", "environment",
/// "status", "killed_by"}], ...}`.
#[must_use]
pub fn mutate_json(run: &Run) -> Value {
    let mutants: Vec<Value> = run
        .outcomes
        .iter()
        .map(|o| {
            let mut v = json!({
                "operator": o.mutant.operator,
                "file": o.mutant.file,
                "line": o.mutant.line,
                "environment": o.environments.first(),
                "environments": o.environments,
                "status": o.status.as_str(),
                "killed_by": o.killed_by,
                "what": o.mutant.what,
                "requirements": o.requirements,
            });
            if o.status == Status::Equivalent {
                v["why"] = json!(why_equivalent(o));
            }
            v
        })
        .collect();
    let operators: serde_json::Map<String, Value> = per_operator(run)
        .into_iter()
        .map(|(name, n)| {
            (
                name.to_string(),
                json!({"killed": n[0], "survived": n[1], "equivalent": n[2], "skipped": n[3]}),
            )
        })
        .collect();
    json!({
        "score": run.score(),
        "killed": run.count(Status::Killed),
        "survived": run.count(Status::Survived),
        "equivalent": run.count(Status::Equivalent),
        "baseline_errors": run.baseline_errors,
        "operators": operators,
        "mutants": mutants,
        "skipped": run.skipped.iter().map(|s| json!({"operator": s.operator, "file": s.file, "line": s.line, "reason": s.reason})).collect::<Vec<_>>(),
    })
}

/// The Markdown report (a pull-request comment).
#[must_use]
pub fn mutate_markdown(run: &Run) -> String {
    let mut out = String::from("## fluxgate mutate\n\n");
    out.push_str(&format!("**{}**\n\n", score_line(run)));
    out.push_str(
        "| operator | killed | survived | equivalent | skipped |\n|---|---:|---:|---:|---:|\n",
    );
    for (name, n) in per_operator(run) {
        out.push_str(&format!(
            "| `{name}` | {} | {} | {} | {} |\n",
            n[0], n[1], n[2], n[3]
        ));
    }
    for (status, title) in [
        (Status::Survived, "Survived"),
        (Status::Equivalent, "Equivalent"),
    ] {
        let list: Vec<&Outcome> = run.outcomes.iter().filter(|o| o.status == status).collect();
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n### {title} ({})\n\n| where | operator | what |\n|---|---|---|\n",
            list.len()
        ));
        for o in list {
            let what = if status == Status::Equivalent {
                format!("{} ({})", o.mutant.what, why_equivalent(o))
            } else {
                format!("{}{}", o.mutant.what, at(o))
            };
            out.push_str(&format!(
                "| `{}:{}` | `{}` | {} |\n",
                o.mutant.file,
                o.mutant.line,
                o.mutant.operator,
                cell(&what)
            ));
        }
    }
    out
}

/// The text report of `fluxgate coverage`: safety-critical gaps first, then every
/// requirement, then the conformance line.
#[must_use]
pub fn coverage_text(c: &Coverage, problems: &[RegistryProblem]) -> String {
    let mut out = String::new();
    for p in problems {
        out.push_str(&format!("{}:{}: {}\n", p.loc.file, p.loc.line, p.message));
    }
    let critical = c.safety_critical_gaps();
    if !critical.is_empty() {
        out.push_str("Safety-critical gaps:\n");
        for r in critical {
            out.push_str(&format!(
                "  {}  {}\n    {}\n",
                r.requirement.id,
                r.requirement.title,
                r.why.as_deref().unwrap_or_default()
            ));
        }
        out.push('\n');
    }
    let width = c
        .requirements
        .iter()
        .map(|r| r.requirement.id.len())
        .max()
        .unwrap_or(0);
    for r in &c.requirements {
        let star = if r.requirement.safety_critical {
            "*"
        } else {
            " "
        };
        out.push_str(&format!(
            "{:<8} {:<width$}{star} {}\n",
            r.status.as_str(),
            r.requirement.id,
            r.requirement.title
        ));
        if !r.checks.is_empty() {
            out.push_str(&format!("           checks: {}\n", r.checks.join(", ")));
        }
        if !r.not_run.is_empty() {
            out.push_str(&format!("           not run: {}\n", r.not_run.join(", ")));
        }
        if !r.files.is_empty() {
            out.push_str(&format!("           served by: {}\n", r.files.join(", ")));
        }
        if let Some(b) = r.bites {
            out.push_str(&format!(
                "           mutants of its files: {} killed, {} survived, {} equivalent\n",
                b.killed, b.survived, b.equivalent
            ));
        }
        if r.status != CovStatus::Covered
            && let Some(why) = &r.why
        {
            out.push_str(&format!("           {why}\n"));
        }
    }
    if !c.unknown.is_empty() {
        out.push_str("\nIds the requirements file does not list:\n");
        for (wher, id) in &c.unknown {
            out.push_str(&format!("  {id} (named by {wher})\n"));
        }
    }
    out.push_str("(* safety-critical)\n");
    out.push_str(&c.summary());
    out.push('\n');
    out
}

/// The JSON report of `fluxgate coverage` (SPEC §8).
#[must_use]
pub fn coverage_json(c: &Coverage, problems: &[RegistryProblem]) -> Value {
    json!({
        "total": c.requirements.len(),
        "covered": c.count(CovStatus::Covered),
        "deferred": c.count(CovStatus::Deferred),
        "gaps": c.count(CovStatus::Gap),
        "safety_critical_gaps": c.safety_critical_gaps().len(),
        "requirements": c.requirements.iter().map(|r| {
            let mut v = json!({
                "id": r.requirement.id,
                "title": r.requirement.title,
                "safety_critical": r.requirement.safety_critical,
                "status": r.status.as_str(),
                "checks": r.checks,
                "not_run": r.not_run,
                "files": r.files,
                "why": r.why,
            });
            if let Some(b) = r.bites {
                v["mutants"] = json!({"killed": b.killed, "survived": b.survived, "equivalent": b.equivalent});
            }
            v
        }).collect::<Vec<_>>(),
        "unknown": c.unknown.iter().map(|(w, id)| json!({"id": id, "named_by": w})).collect::<Vec<_>>(),
        "problems": problems.iter().map(|p| json!({"file": p.loc.file.to_string(), "line": p.loc.line, "message": p.message})).collect::<Vec<_>>(),
        "summary": c.summary(),
    })
}

/// The Markdown report of `fluxgate coverage`.
#[must_use]
pub fn coverage_markdown(c: &Coverage, problems: &[RegistryProblem]) -> String {
    let mut out = String::from("## fluxgate coverage\n\n");
    out.push_str(&format!("**{}**\n\n", c.summary()));
    for p in problems {
        out.push_str(&format!(
            "- `{}:{}`: {}\n",
            p.loc.file,
            p.loc.line,
            cell(&p.message)
        ));
    }
    let critical = c.safety_critical_gaps();
    if !critical.is_empty() {
        out.push_str("### Safety-critical gaps\n\n");
        for r in critical {
            out.push_str(&format!(
                "- **{}** {}: {}\n",
                r.requirement.id,
                cell(&r.requirement.title),
                cell(r.why.as_deref().unwrap_or_default())
            ));
        }
        out.push('\n');
    }
    out.push_str(
        "| requirement | safety-critical | status | checks | served by |\n|---|---|---|---|---|\n",
    );
    for r in &c.requirements {
        let checks = if r.checks.is_empty() {
            r.why.clone().unwrap_or_default()
        } else {
            r.checks
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| {} {} | {} | {} | {} | {} |\n",
            r.requirement.id,
            cell(&r.requirement.title),
            if r.requirement.safety_critical {
                "yes"
            } else {
                "no"
            },
            r.status.as_str(),
            cell(&checks),
            r.files.len()
        ));
    }
    out
}
