//! Any text as a chart template with Helm's whole function table (sprig, include, tpl,
//! toYaml, fromYaml, semver, regex, ...) over chart-like values. No input may panic.
#![no_main]

use std::collections::BTreeMap;

use fluxgate_gotemplate::{MissingKey, Templates, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let mut set = Templates::new(fluxgate_helm::helm_funcs(0));
    set.missing_key = MissingKey::Zero;
    set.max_output = 1 << 16;
    if set.parse("chart/templates/t.yaml", text).is_err() {
        return;
    }
    let values = fluxgate_helm::values::parse_values("a: 1\nb: [x, {c: d}]\ns: \"1.2.3\"\nm: {k: v}\n").unwrap_or_default();
    let data = Value::map(BTreeMap::from([("Values".to_string(), values), ("Release".to_string(), Value::map(BTreeMap::from([("Name".to_string(), Value::str("r"))])))]));
    let _ = set.execute("chart/templates/t.yaml", &data);
});
