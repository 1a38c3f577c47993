//! Any bytes: parse with both schemas, emit what parsed, parse the emitted text again.
#![no_main]

use fluxgate_yaml::{EmitOptions, Schema, emit_docs, parse_stream};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for schema in [Schema::Kube, Schema::Yaml11] {
        let s = parse_stream("fuzz.yaml", text, schema);
        for sort_keys in [false, true] {
            let out = emit_docs(&s.docs, EmitOptions { sort_keys, ..EmitOptions::default() });
            let _ = parse_stream("emitted.yaml", &out, schema);
        }
    }
});
