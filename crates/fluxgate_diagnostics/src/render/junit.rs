use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::{Diagnostic, Error};

/// `JUnit` XML: one test suite per rule that ran (and per other rule that reported), one
/// failed test case per finding, and one passing case for a rule without findings. The
/// `tests`/`failures` counts are the cases written (quick-junit counts them).
pub fn render_junit(diags: &[Diagnostic], rules_ran: &[&str]) -> Result<String, Error> {
    let mut names: Vec<&str> = rules_ran.to_vec();
    for d in diags {
        if !names.contains(&d.rule.as_str()) {
            names.push(&d.rule);
        }
    }
    let mut report = Report::new("fluxgate");
    for rule in names {
        let classname = format!("fluxgate.{rule}");
        let mut suite = TestSuite::new(rule);
        let mine: Vec<&Diagnostic> = diags.iter().filter(|d| d.rule == rule).collect();
        if mine.is_empty() {
            let mut case = TestCase::new(rule, TestCaseStatus::success());
            case.set_classname(classname.as_str());
            suite.add_test_case(case);
        }
        for d in mine {
            let at = d
                .location
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            let env = d.environment_label();
            let env = env.as_deref().unwrap_or("-");
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type(d.severity.as_str())
                .set_message(d.message.as_str())
                .set_description(at.as_str());
            let mut case = TestCase::new(format!("{env} {at}"), status);
            case.set_classname(classname.as_str());
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    Ok(report.to_string()?)
}
