//! Any bytes: the direct reader for plain block YAML either leaves the text to the general
//! reader or reads exactly what the general reader reads (values, key order, locations).
#![no_main]

use fluxgate_yaml::{Schema, compare_readers};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for schema in [Schema::Kube, Schema::GoYamlV2, Schema::Yaml11] {
        if let (_, Some(difference)) = compare_readers("fuzz.yaml", text, schema) {
            panic!("{schema:?}: {difference}\n{text:?}");
        }
    }
});
