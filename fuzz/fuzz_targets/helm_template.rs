//! Any text as a chart template with Helm's whole function table (sprig, include, tpl,
//! toYaml, fromYaml, semver, regex, ...) over chart-like values. No input may panic; traced,
//! the output is the same and its spans are in order, on character boundaries; the memo of
//! `include` off, output and spans are the same again.
#![no_main]

use std::collections::BTreeMap;

use fluxgate_gotemplate::{MissingKey, Templates, Traced, Tracer, Value};
use libfuzzer_sys::fuzz_target;

const NAME: &str = "chart/templates/t.yaml";

/// A set of Helm's functions (its random ones seeded alike) with `text`, if it parses.
fn set(text: &str) -> Option<Templates> {
    let mut set = Templates::new(fluxgate_helm::helm_funcs(0));
    set.missing_key = MissingKey::Zero;
    set.max_output = 1 << 16;
    set.parse(NAME, text).ok()?;
    Some(set)
}

/// Fresh chart-like values, and the data a chart template gets.
fn data() -> (Value, Value) {
    let values = fluxgate_helm::values::parse_values("a: 1\nb: [x, {c: d}]\ns: \"1.2.3\"\nm: {k: v}\n").unwrap_or_default();
    let data = Value::map(BTreeMap::from([("Values".to_string(), values.clone()), ("Release".to_string(), Value::map(BTreeMap::from([("Name".to_string(), Value::str("r"))])))]));
    (values, data)
}

/// The traced output with the memo of `include` on or off.
fn traced(text: &str, memo: bool) -> Option<Result<Traced, String>> {
    let set = set(text)?;
    let (values, data) = data();
    let mut tracer = Tracer::new();
    tracer.add_root(&values, "");
    fluxgate_gotemplate::memo::set_enabled(memo);
    let out = set.execute_traced(NAME, &data, &tracer).map_err(|e| e.to_string());
    fluxgate_gotemplate::memo::set_enabled(true);
    Some(out)
}

fn run(text: &str) {
    let Some(set) = set(text) else { return };
    let _ = set.execute(NAME, &data().1);
    let Some(with) = traced(text, true) else { return };
    if let Ok(out) = &with {
        let mut end = 0;
        for s in &out.spans {
            assert!(end <= s.start && s.start < s.end && s.end <= out.text.len());
            assert!(out.text.is_char_boundary(s.start) && out.text.is_char_boundary(s.end));
            end = s.end;
        }
    }
    // The memo of `include` changes neither what is printed nor its origins.
    assert_eq!(with, traced(text, false).expect("parsed before"));
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    run(text);
});
