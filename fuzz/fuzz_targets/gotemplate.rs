//! Any text: parse it as a Go template and execute it over a small value (a map with a
//! string, an int, a float, a nil, a list and a nested map), with a few sprig-like functions
//! that mutate maps. Neither step may panic; the output bound holds.
#![no_main]

use std::collections::BTreeMap;

use fluxgate_gotemplate::{Arity, Funcs, MissingKey, Templates, Value};
use libfuzzer_sys::fuzz_target;

fn data() -> Value {
    let mut m = BTreeMap::new();
    m.insert("s".to_string(), Value::str("str"));
    m.insert("i".to_string(), Value::Int(3));
    m.insert("f".to_string(), Value::Float(1.5));
    m.insert("n".to_string(), Value::Nil);
    m.insert("l".to_string(), Value::list(vec![Value::Int(1), Value::str("x")]));
    m.insert("m".to_string(), Value::map(BTreeMap::from([("k".to_string(), Value::Bool(true))])));
    Value::map(m)
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let mut funcs = Funcs::new();
    funcs.insert("set", Arity::Exact(3), |_, a| {
        if let (Value::Map(m), Some(k)) = (&a[0], a[1].as_str()) {
            m.borrow_mut().insert(k.to_string(), a[2].clone());
        }
        Ok(a[0].clone())
    });
    funcs.insert("include", Arity::Exact(2), |c, a| {
        let name = a[0].as_str().unwrap_or_default().to_string();
        c.execute_template(&name, &a[1]).map(Value::from)
    });
    funcs.insert("tpl", Arity::Exact(2), |c, a| {
        let t = a[0].as_str().unwrap_or_default().to_string();
        c.execute_text("tpl", &t, &a[1]).map(Value::from)
    });
    for mk in [MissingKey::Default, MissingKey::Zero] {
        let mut set = Templates::new(funcs.clone());
        set.missing_key = mk;
        set.max_output = 1 << 16;
        if set.parse("fuzz", text).is_ok() {
            if let Ok(out) = set.execute("fuzz", &data()) {
                assert!(out.len() <= 1 << 16);
            }
        }
    }
});
