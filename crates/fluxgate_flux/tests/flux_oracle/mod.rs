//! Running the Go oracle `oracles/flux-envsubst` (shared by the substitution tests).

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// Sends one request; returns the answers and the time the oracle spent substituting.
pub fn run(bin: &Path, request: &Value) -> (Vec<Value>, Duration) {
    let mut child = Command::new(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the oracle starts");
    let body = serde_json::to_vec(request).expect("the request serialises");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(&body)
        .expect("the oracle reads its request");
    let out = child.wait_with_output().expect("the oracle answers");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the oracle failed: {stderr}");
    let elapsed = stderr
        .lines()
        .find_map(|l| l.strip_prefix("elapsed_ns="))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_nanos);
    let answers = serde_json::from_slice(&out.stdout).expect("the oracle answers JSON");
    (answers, elapsed)
}
