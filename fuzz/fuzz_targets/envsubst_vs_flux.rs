//! Differential fuzzing of post-build substitution: each input is a text with `${...}`
//! expressions, evaluated by fluxgate's envsubst and by Flux's (fluxcd/pkg envsubst v1.7.0,
//! through the Go oracle `oracles/flux-envsubst -lines`), in strict and in lax mode. A
//! difference (success against failure, or another text) is a crash.
//!
//! The oracle is the binary the tests build: `FLUXGATE_ENVSUBST_ORACLE=target/oracles/
//! flux-envsubst-<hash> RUSTC_BOOTSTRAP=1 cargo fuzz run envsubst_vs_flux`.
#![no_main]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

struct Oracle {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn oracle() -> &'static Mutex<Oracle> {
    static ORACLE: OnceLock<Mutex<Oracle>> = OnceLock::new();
    ORACLE.get_or_init(|| {
        let path = std::env::var("FLUXGATE_ENVSUBST_ORACLE")
            .expect("FLUXGATE_ENVSUBST_ORACLE names the built Go oracle");
        let mut child = Command::new(path)
            .arg("-lines")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the oracle starts");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Mutex::new(Oracle {
            _child: child,
            stdin,
            stdout,
        })
    })
}

fn vars() -> BTreeMap<String, String> {
    [
        ("SET", "val"),
        ("EMPTY", ""),
        ("D", "a.b.c"),
        ("P", "path/to/file.tar.gz"),
        ("U", "ünï"),
        ("N", "3"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
    .collect()
}

fn flux(text: &str, strict: bool, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut o = oracle().lock().expect("one fuzz thread");
    let line = json!({"text": text, "vars": vars, "strict": strict}).to_string();
    writeln!(o.stdin, "{line}").expect("the oracle reads");
    let mut answer = String::new();
    o.stdout.read_line(&mut answer).expect("the oracle answers");
    let a: Value = serde_json::from_str(&answer).expect("a JSON answer");
    if a["ok"] == Value::Bool(true) {
        Ok(a["out"].as_str().unwrap_or_default().to_string())
    } else {
        Err(a["err"].as_str().unwrap_or_default().to_string())
    }
}

fn ours(text: &str, strict: bool, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let lookup = |n: &str| vars.get(n).cloned();
    match fluxgate_flux::envsubst::expand(text, &lookup) {
        Ok(e) if strict && !e.strict_ok() => Err("variable not set (strict mode)".into()),
        Ok(e) => Ok(e.text),
        Err(e) => Err(e.to_string()),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Each reference costs a round trip to the oracle: keep inputs short.
    if text.len() > 512 || text.contains('\0') {
        return;
    }
    let vars = vars();
    for strict in [true, false] {
        let theirs = flux(text, strict, &vars);
        let mine = ours(text, strict, &vars);
        let same = match (&theirs, &mine) {
            (Ok(a), Ok(b)) => a == b || a.contains('\u{fffd}') || b.contains('\u{fffd}'),
            (Err(_), Err(_)) => true,
            _ => false,
        };
        assert!(same, "{text:?} strict={strict}: flux {theirs:?}, fluxgate {mine:?}");
    }
});
