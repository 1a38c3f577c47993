//! Any values.schema.json against any values: the input is the schema, then a NUL byte,
//! then values.yaml. Compiling (refs, ids, anchors, drafts) and validating may fail; no
//! input may panic or recurse without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let (schema, values) = match bytes.iter().position(|b| *b == 0) {
        Some(i) => (&bytes[..i], &bytes[i + 1..]),
        None => (bytes, &b""[..]),
    };
    let files = vec![
        (
            "Chart.yaml".to_string(),
            b"apiVersion: v2\nname: f\nversion: 0.1.0\n".to_vec(),
        ),
        ("values.yaml".to_string(), values.to_vec()),
        ("values.schema.json".to_string(), schema.to_vec()),
        (
            "schemas/a.json".to_string(),
            br#"{"$id": "https://x.test/a.json", "$defs": {"n": {"type": "integer"}}}"#.to_vec(),
        ),
    ];
    let Ok(chart) = fluxgate_helm::Chart::from_files(files, "f") else {
        return;
    };
    let user = fluxgate_gotemplate::Value::empty_map();
    let Ok(vals) = fluxgate_helm::values::coalesce_values_copy(&chart, &user) else {
        return;
    };
    let _ = fluxgate_helm::schema::validate(&chart, &vals);
});
