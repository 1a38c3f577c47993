//! Any text as a chart template with Helm's whole function table (sprig, include, tpl,
//! toYaml, fromYaml, semver, regex, ...) over chart-like values. No input may panic; traced,
//! the output is the same and its spans are in order, on character boundaries.
#![no_main]

use std::collections::BTreeMap;

use fluxgate_gotemplate::{MissingKey, Templates, Tracer, Value};
use libfuzzer_sys::fuzz_target;

fn run(text: &str, trace: bool) {
    let mut set = Templates::new(fluxgate_helm::helm_funcs(0));
    set.missing_key = MissingKey::Zero;
    set.max_output = 1 << 16;
    if set.parse("chart/templates/t.yaml", text).is_err() {
        return;
    }
    let values = fluxgate_helm::values::parse_values("a: 1\nb: [x, {c: d}]\ns: \"1.2.3\"\nm: {k: v}\n").unwrap_or_default();
    let data = Value::map(BTreeMap::from([("Values".to_string(), values.clone()), ("Release".to_string(), Value::map(BTreeMap::from([("Name".to_string(), Value::str("r"))])))]));
    if !trace {
        let _ = set.execute("chart/templates/t.yaml", &data);
        return;
    }
    let mut tracer = Tracer::new();
    tracer.add_root(&values, "");
    if let Ok(out) = set.execute_traced("chart/templates/t.yaml", &data, &tracer) {
        let mut end = 0;
        for s in &out.spans {
            assert!(end <= s.start && s.start < s.end && s.end <= out.text.len());
            assert!(out.text.is_char_boundary(s.start) && out.text.is_char_boundary(s.end));
            end = s.end;
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    run(text, false);
    run(text, true);
});
