//! What `fetch` reads from servers and files must never panic or hang: a lock file, a version
//! constraint (and matching versions against it), an index.yaml, a chart archive.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = fluxgate_fetch::extract::check_tgz(data, "fuzz", fluxgate_fetch::extract::Limits::default());
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = fluxgate_fetch::Lock::parse(text, "fluxgate.lock");
    let _ = fluxgate_fetch::Digest::parse(text);
    let _ = fluxgate_fetch::index::Index::parse(text, "https://fuzz.example");
    let (constraint, version) = text.split_once('\n').unwrap_or((text, "1.2.3"));
    if let Ok(c) = fluxgate_fetch::constraint::Constraint::parse(constraint)
        && let Some(v) = fluxgate_fetch::constraint::parse_version(version)
    {
        let _ = c.matches(&v);
    }
});
