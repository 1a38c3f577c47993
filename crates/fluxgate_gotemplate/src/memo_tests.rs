//! The memo of `include`: a repeated include runs once while nothing it read changed, runs
//! again when something did, never stands for a run that changed its caller's data or drew
//! a random number, and prints the origins a run would have printed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::provenance_tests::{funcs, traced_data};
use crate::{Arity, Templates, Traced, Value, memo};

/// The tests that turn the memo off or count runs do not overlap.
static SERIAL: Mutex<()> = Mutex::new(());

/// `funcs()` plus `tick` (counts its calls, prints nothing), `draw` (a number that differs
/// each call, as a random one does), and what Helm's functions tell the tracer: `alias P
/// FROM` (a merge says the value at P came from FROM) and `traceAs M P` (M is a copy of the
/// map traced as P).
/// The origin of each span of `out`, as text.
fn origins_of(out: &Traced) -> Vec<String> {
    out.spans
        .iter()
        .map(|s| format!("{:?}", s.origin))
        .collect()
}

fn counting() -> (Templates, Arc<AtomicUsize>) {
    let ticks = Arc::new(AtomicUsize::new(0));
    let mut f = funcs();
    let t = ticks.clone();
    f.insert("tick", Arity::Exact(0), move |_, _| {
        t.fetch_add(1, Ordering::SeqCst);
        Ok(Value::str(""))
    });
    let drawn = Arc::new(AtomicUsize::new(0));
    f.insert("draw", Arity::Exact(0), move |_, _| {
        memo::unrepeatable();
        Ok(Value::Int(
            i64::try_from(drawn.fetch_add(1, Ordering::SeqCst)).unwrap_or(0),
        ))
    });
    f.insert("alias", Arity::Exact(2), |c, a| {
        if let (Some(path), Some(from)) = (a[0].as_str(), a[1].as_str()) {
            c.alias(path.to_string(), Arc::from(from));
        }
        Ok(Value::str(""))
    });
    f.insert("traceAs", Arity::Exact(2), |c, a| {
        c.trace_as(&a[0], Arc::from(a[1].as_str().unwrap_or_default()));
        Ok(Value::str(""))
    });
    (Templates::new(f), ticks)
}

/// Executes `main` of `texts` traced with `.Values` (and an untraced `.Release`), with the
/// memo on: what it printed and how often `tick` ran. With the memo off, the same.
fn run(texts: &[(&str, &str)]) -> (Traced, usize) {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let once = |on: bool| {
        memo::set_enabled(on);
        let (mut set, ticks) = counting();
        for (name, text) in texts {
            set.parse(name, text).unwrap();
        }
        let (data, tracer) = traced_data();
        let out = set.execute_traced("main", &data, &tracer).unwrap();
        (out, ticks.load(Ordering::SeqCst))
    };
    let (without, _) = once(false);
    let (with, ticks) = once(true);
    memo::set_enabled(true);
    assert_eq!(with, without, "the memo changes what is printed");
    (with, ticks)
}

/// [`run`] of a template `t` whose body is `body`, and `main`.
fn run_t(body: &str, main: &str) -> (Traced, usize) {
    let t = ["{{ define \"t\" }}", body, "{{ end }}"].concat();
    run(&[("t", &t), ("main", main)])
}

#[test]
fn a_repeated_include_runs_once() {
    let (out, ticks) = run_t(
        "{{ tick }}[{{ .v.x }}]",
        "{{ include \"t\" (dict \"v\" .Values.m) }}{{ include \"t\" (dict \"v\" .Values.m) }}",
    );
    assert_eq!(out.text, "[ex][ex]");
    assert_eq!(ticks, 1);
}

const CALL: &str = "{{ include \"t\" (dict \"v\" .Values.m) }}";

#[test]
fn a_change_to_what_it_read_runs_it_again_and_others_do_not() {
    let texts = |between: &str| run_t("{{ tick }}[{{ .v.x }}]", &[CALL, between, CALL].concat());
    let (out, ticks) = texts("{{ $_ := set .Values.m \"x\" \"new\" }}");
    assert_eq!((out.text.as_str(), ticks), ("[ex][new]", 2));
    // A change to a map the include never read: it is not run again.
    let (out, ticks) = texts("{{ $_ := set .Values.a \"z\" 1 }}");
    assert_eq!((out.text.as_str(), ticks), ("[ex][ex]", 1));
    // Different data is a different include.
    let (out, ticks) = run_t(
        "{{ tick }}[{{ .v.x }}]",
        "{{ include \"t\" (dict \"v\" .Values.m) }}{{ include \"t\" (dict \"v\" .Values.a) }}",
    );
    assert_eq!((out.text.as_str(), ticks), ("[ex][<no value>]", 2));
}

#[test]
fn an_include_that_changes_its_callers_data_or_draws_runs_each_time() {
    let (out, ticks) = run_t(
        "{{ tick }}{{ len .v }}{{ $_ := set .v (printf \"k%d\" (len .v)) 1 }}",
        "{{ $m := dict }}{{ include \"t\" (dict \"v\" $m) }},{{ include \"t\" (dict \"v\" $m) }},{{ include \"t\" (dict \"v\" $m) }}",
    );
    assert_eq!((out.text.as_str(), ticks), ("0,1,2", 3));
    // A scratch map of its own is the include's business: it is kept.
    let (out, ticks) = run_t(
        "{{ tick }}{{ $own := dict }}{{ $_ := set $own \"a\" .v.x }}{{ $own.a }}",
        "{{ include \"t\" (dict \"v\" .Values.m) }},{{ include \"t\" (dict \"v\" .Values.m) }}",
    );
    assert_eq!((out.text.as_str(), ticks), ("ex,ex", 1));
    let (out, ticks) = run_t(
        "{{ tick }}{{ draw }}",
        "{{ include \"t\" . }},{{ include \"t\" . }}",
    );
    assert_eq!((out.text.as_str(), ticks), ("0,1", 2));
}

#[test]
fn origins_are_those_of_each_call() {
    // What the included template prints of the data falls back to the `dict` at each call
    // (`.Release` is not traced), and the include is still run once.
    let (out, ticks) = run_t(
        "{{ tick }}<{{ .r }}>",
        "{{ include \"t\" (dict \"r\" .Release.Name) }}\n{{ include \"t\" (dict \"r\" .Release.Name) }}",
    );
    assert_eq!(out.text, "<rel>\n<rel>");
    assert_eq!(ticks, 1);
    let origins = origins_of(&out);
    assert_ne!(origins[1], origins[origins.len() - 2], "{origins:?}");
    // Held in a map of its own, the fallback cannot be told apart: each call runs.
    let (out, ticks) = run_t(
        "{{ tick }}{{ $own := dict \"w\" .r }}<{{ $own.w }}>",
        "{{ include \"t\" (dict \"r\" .Release.Name) }}\n{{ include \"t\" (dict \"r\" .Release.Name) }}\n{{ include \"t\" (dict \"r\" .Release.Name) }}",
    );
    assert_eq!(out.text, "<rel>\n<rel>\n<rel>");
    assert_eq!(ticks, 3);
}

#[test]
fn a_render_after_a_panic_starts_clean() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let (mut set, ticks) = counting();
    let mut f = funcs();
    f.insert("boom", Arity::Exact(0), |_, _| {
        panic!("a function that panics")
    });
    let mut broken = Templates::new(f);
    broken
        .parse(
            "main",
            "{{ define \"t\" }}{{ boom }}{{ end }}{{ include \"t\" (dict) }}",
        )
        .unwrap();
    let (data, tracer) = traced_data();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        broken.execute_traced("main", &data, &tracer)
    }));
    assert!(caught.is_err());
    assert_eq!(memo::running(), 1, "the panic left its include running");
    set.parse("t", "{{ define \"t\" }}{{ tick }}[{{ .v.x }}]{{ end }}")
        .unwrap();
    set.parse("main", &[CALL, CALL].concat()).unwrap();
    let (data, tracer) = traced_data();
    let out = set.execute_traced("main", &data, &tracer).unwrap();
    assert_eq!(out.text, "[ex][ex]");
    assert_eq!(ticks.load(Ordering::SeqCst), 1);
    assert_eq!(memo::running(), 0);
}

#[test]
fn what_the_tracer_learns_between_two_calls_runs_the_include_again() {
    // A path the included template resolved is now an alias: its origin changed.
    let (out, ticks) = run_t(
        "{{ tick }}{{ .v.x }}",
        &[CALL, "{{ alias \"m.x\" \"y\" }}", CALL].concat(),
    );
    assert_eq!(out.text, "exex");
    assert_eq!(ticks, 2);
    let paths = origins_of(&out);
    assert!(
        paths[0].contains("m.x") && paths[1].contains("\"y\""),
        "{paths:?}"
    );
    // A map the include read gets a path: what it printed of it has one now.
    let call = "{{ include \"t\" (dict \"v\" $d) }}";
    let (out, ticks) = run_t(
        "{{ tick }}{{ .v.x }}",
        &[
            "{{ $d := dict \"x\" .Release.Name }}",
            call,
            "{{ traceAs $d \"m\" }}",
            call,
        ]
        .concat(),
    );
    assert_eq!(out.text, "relrel");
    assert_eq!(ticks, 2);
}
