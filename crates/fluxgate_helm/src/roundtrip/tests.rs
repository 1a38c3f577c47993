//! The round trip against the parse it replaces, value by value.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use fluxgate_gotemplate::{Arity, MissingKey, Origin, Templates, Tracer, Value};

use super::{Scope, identical};
use crate::test_values::{map, s};

thread_local! {
    /// Round trips served from the table on this thread.
    pub(super) static HITS: Cell<usize> = const { Cell::new(0) };
    static KEPT: RefCell<Vec<Value>> = const { RefCell::new(Vec::new()) };
}

/// Runs `src` with `data` as dot; what it passed to `keep`, in order.
fn kept(src: &str, data: &Value, tracer: Option<&Tracer>) -> (String, Vec<Value>) {
    let mut funcs = crate::helm_funcs(0);
    funcs.insert("keep", Arity::Exact(1), |_, a| {
        KEPT.with(|k| k.borrow_mut().push(a[0].clone()));
        Ok(Value::str(""))
    });
    let mut t = Templates::new(funcs);
    t.missing_key = MissingKey::Zero;
    t.parse("t", src).unwrap();
    KEPT.with(|k| k.borrow_mut().clear());
    let out = match tracer {
        Some(tr) => t.execute_traced("t", data, tr).unwrap().text,
        None => t.execute("t", data).unwrap(),
    };
    (out, KEPT.with(RefCell::take))
}

fn hits() -> usize {
    HITS.with(Cell::get)
}

/// Values whose YAML printing is tricky: numbers of every kind, strings YAML would read as
/// something else, block strings, empty and nested containers.
#[allow(clippy::too_many_lines)]
fn samples() -> Vec<Value> {
    let mut v = vec![
        Value::Nil,
        Value::Missing,
        Value::Bool(true),
        Value::Bool(false),
        Value::Int(0),
        Value::Int(-5),
        Value::Int(i64::MAX),
        Value::Int(i64::MIN),
        Value::Int64((1 << 53) + 1),
        Value::Int64(-(1 << 62)),
        Value::Float(1e21),
        Value::Float(-1e21),
        Value::Float(1e20),
        Value::Float(9.3e18),
        Value::Float(9.1e18),
        Value::Float(1e300),
        Value::Float(f64::MAX),
        Value::Float(f64::MIN_POSITIVE),
        Value::Float(5e-324),
        Value::Float(0.5),
        Value::Float(-0.0),
        Value::Float(0.0),
        Value::Float(0.1),
        Value::Float(1e-7),
        Value::Float(1e-6),
        Value::Float(123_456_789.123),
        Value::Float(3.0),
        Value::Float(-2.5e-10),
        Value::Bytes(Rc::from(&b"bytes\x00\xff"[..])),
        Value::Bytes(Rc::from(&b""[..])),
        Value::empty_map(),
        Value::list(Vec::new()),
        Value::list(vec![Value::list(vec![Value::list(Vec::new())])]),
        Value::list(vec![Value::empty_map(), Value::Nil, Value::Int(1)]),
        map(&[
            ("1", Value::Int(1)),
            ("true", Value::Bool(true)),
            ("null", Value::Nil),
            ("", s("empty key")),
            ("a.b", s("dotted")),
            ("key with space", s("x")),
            ("-", s("dash")),
            ("?", s("q")),
            ("~", s("tilde")),
            ("y", s("yes key")),
            ("multi\nline key", s("k")),
            (
                "nested",
                map(&[("l", Value::list(vec![map(&[("z", Value::Float(0.25))])]))]),
            ),
        ]),
    ];
    for text in [
        "",
        " ",
        "1",
        "-1",
        "1.0",
        "1.",
        ".5",
        "+1",
        "0x1F",
        "0o17",
        "017",
        "0b101",
        "1_000",
        "1e3",
        "1E3",
        "1e+21",
        "6.02e23",
        "true",
        "True",
        "TRUE",
        "false",
        "yes",
        "Yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        "Y",
        "N",
        "~",
        "null",
        "Null",
        "NULL",
        ".inf",
        "-.inf",
        ".nan",
        ".NaN",
        "=",
        "<<",
        "!tag",
        "&a",
        "*a",
        "%x",
        "@x",
        "`x",
        "{a}",
        "[a]",
        "|",
        ">",
        "? x",
        "- x",
        "-",
        "a: b",
        "a:b",
        "a #c",
        "#c",
        "x#",
        "2001-01-01",
        "2001-01-01T00:00:00Z",
        "12:30",
        "1:20:30",
        "---",
        "...",
        " lead",
        "trail ",
        "multi\nline\n",
        "multi\nline",
        "multi\nline\n\n",
        "\nlead newline",
        "trailing spaces \nx",
        "x\n  indented\n",
        "\ttab",
        "a\tb",
        "quote'\"",
        "back\\slash",
        "unicode é ✓",
        "\u{1F600}",
        "\r\n",
        "cr\rx",
        "\u{85}next line",
        "\u{feff}bom",
        "\u{2028}",
        "nul\u{0}x",
        "bell\u{7}",
        "del\u{7f}",
        "a very long string that goes on and on well past eighty columns so that the emitter has to think about folding it somewhere",
        "long\nblock with a line that goes on and on well past eighty columns so that the emitter has to think about folding it somewhere\n",
        "{{ template }}",
        "'single'",
        "\"double\"",
        "0.1.2",
        "1e",
        "e1",
        "+",
        "-.5",
        "0",
        "-0",
        "00",
        "0.0",
        "1,000",
        "$x",
        "key: value\nother: 2",
    ] {
        v.push(s(text));
    }
    v
}

/// `fromYaml (toYaml $m)` served from the table equals the parse of the text, for `$m` a
/// map holding each sample (and `fromYamlArray` of a list holding it); the samples the
/// printer would print plain though YAML reads them as numbers are parsed instead.
#[test]
fn round_trip_equals_the_parse() {
    let prog = "{{ keep (fromYaml (toYaml .m)) }}{{ keep (fromYamlArray (toYaml .l)) }}{{ keep (fromYaml (mustToYaml .m)) }}{{ keep (fromYamlArray (toYamlPretty .l)) }}";
    let mut checked = 0;
    for sample in samples() {
        // `z` and the last item come last, so that a block string is not the last scalar.
        let data = map(&[
            (
                "m",
                map(&[
                    ("k", sample.clone()),
                    ("n", map(&[("deep", sample.clone())])),
                    ("z", Value::Int(1)),
                ]),
            ),
            (
                "l",
                Value::list(vec![
                    sample.clone(),
                    Value::list(vec![sample.clone()]),
                    Value::Int(1),
                ]),
            ),
        ]);
        let before = hits();
        let (_, parsed) = kept(prog, &data, None);
        assert_eq!(hits(), before, "no table, no hit");
        let scope = Scope::install();
        let (_, copied) = kept(prog, &data, None);
        drop(scope);
        let unserved = matches!(&sample, Value::String(x) if &**x == "1_000");
        let want = if unserved { before } else { before + 4 };
        assert_eq!(hits(), want, "served or not: {sample:?}");
        assert_eq!(parsed.len(), 4);
        for (p, c) in parsed.iter().zip(&copied) {
            assert!(
                identical(p, c),
                "{sample:?}: parse {p:?} != round trip {c:?}"
            );
            checked += 1;
        }
    }
    assert!(checked > 400, "{checked}");
}

/// A string ending in a newline printed last loses that newline (`toYaml` drops the last
/// one): not served, and the parse says so.
#[test]
fn block_string_printed_last_is_parsed() {
    let prog = "{{ keep (fromYaml (toYaml .m)) }}{{ keep (fromYamlArray (toYaml .l)) }}";
    for text in ["x\n", "multi\nline\n", "keep\n\n"] {
        let sample = s(text);
        // `a10` is printed after `a9` (go-yaml's order), though it sorts first as a string.
        let data = map(&[
            ("m", map(&[("a9", Value::Int(1)), ("a10", sample.clone())])),
            ("l", Value::list(vec![Value::Int(1), sample.clone()])),
        ]);
        let scope = Scope::install();
        let before = hits();
        let (_, got) = kept(prog, &data, None);
        drop(scope);
        assert_eq!(hits(), before, "{text:?}");
        let back = got[0].get("a10").unwrap();
        assert_eq!(
            format!("{back:?}"),
            text.strip_suffix('\n').unwrap(),
            "the parse drops the newline"
        );
    }
    // Not last (in go-yaml's order): served, the newline kept.
    let data = map(&[(
        "m",
        map(&[("a10", s("x\n")), ("a9", s("y\n")), ("b", Value::Int(1))]),
    )]);
    let scope = Scope::install();
    let before = hits();
    let (_, got) = kept("{{ keep (fromYaml (toYaml .m)) }}", &data, None);
    drop(scope);
    assert_eq!(hits(), before + 1);
    assert_eq!(format!("{:?}", got[0].get("a10").unwrap()), "x\n");
}

/// The check the tests rely on tells apart what the round trip must keep apart.
#[test]
fn identical_is_strict() {
    assert!(!identical(&Value::Float(0.0), &Value::Float(-0.0)));
    assert!(!identical(&Value::Int(1), &Value::Float(1.0)));
    assert!(!identical(&s("1"), &Value::Float(1.0)));
    assert!(!identical(&Value::Nil, &Value::Missing));
    assert!(!identical(&map(&[("a", Value::Nil)]), &Value::empty_map()));
    assert!(identical(
        &map(&[("a", Value::list(vec![s("x")]))]),
        &map(&[("a", Value::list(vec![s("x")]))])
    ));
}

/// What cannot come back exactly is not recorded: the parse runs (and gives what it gives).
#[test]
fn unreproducible_values_are_parsed() {
    for v in [
        Value::Float(f64::NAN),
        Value::Float(f64::INFINITY),
        map(&[("<<", map(&[("a", Value::Int(1))]))]),
    ] {
        let data = map(&[("m", map(&[("k", v.clone())]))]);
        let before = hits();
        let scope = Scope::install();
        kept("{{ keep (fromYaml (toYaml .m)) }}", &data, None);
        drop(scope);
        assert_eq!(hits(), before, "{v:?} must not be served");
    }
    // A map printed then read as an array (and the reverse) is parsed: Helm's error value.
    let data = map(&[("m", map(&[("k", Value::Int(1))]))]);
    let scope = Scope::install();
    let before = hits();
    let (_, got) = kept(
        "{{ keep (fromYamlArray (toYaml .m)) }}{{ keep (fromYaml (toYaml (list 1))) }}",
        &data,
        None,
    );
    drop(scope);
    assert_eq!(hits(), before);
    assert!(
        format!("{:?}", got[0]).contains("cannot unmarshal object"),
        "{got:?}"
    );
    assert!(
        format!("{:?}", got[1]).contains("cannot unmarshal array"),
        "{got:?}"
    );
}

/// Each hit is a fresh copy: what a template `set`s into one does not reach the next.
#[test]
fn copies_are_fresh() {
    let prog = r#"{{ $t := toYaml .m }}{{ $a := fromYaml $t }}{{ $_ := set $a "x" 1 }}{{ $_ := set $a.n "w" 2 }}{{ $_ := set (index $a.l 0) "v" 3 }}{{ $b := fromYaml $t }}{{ keep $b }}{{ keep $a }}{{ keep .m }}"#;
    let data = map(&[(
        "m",
        map(&[
            ("n", map(&[("z", Value::Int(3))])),
            ("l", Value::list(vec![Value::empty_map()])),
        ]),
    )]);
    let scope = Scope::install();
    let before = hits();
    let (_, got) = kept(prog, &data, None);
    drop(scope);
    assert_eq!(hits(), before + 2);
    assert_eq!(format!("{:?}", got[0]), "map[l:[map[]] n:map[z:3]]");
    assert_eq!(
        format!("{:?}", got[1]),
        "map[l:[map[v:3]] n:map[w:2 z:3] x:1]"
    );
    // The original is untouched too.
    assert_eq!(format!("{:?}", got[2]), "map[l:[map[]] n:map[z:3]]");
}

/// The table is a snapshot: a change to the original after `toYaml` is not in the copy
/// (the text still says what it said), and a scope restores the one before it.
#[test]
fn snapshot_is_taken_at_to_yaml() {
    let prog = r#"{{ $t := toYaml .m }}{{ $_ := set .m.q "late" 1 }}{{ keep (fromYaml $t) }}"#;
    let data = map(&[("m", map(&[("q", map(&[("z", Value::Int(3))]))]))]);
    let outer = Scope::install();
    let inner = Scope::install();
    let before = hits();
    let (_, got) = kept(prog, &data, None);
    drop(inner);
    assert_eq!(hits(), before + 1);
    assert_eq!(format!("{:?}", got[0]), "map[q:map[z:3]]");
    // The outer scope's table is back, and empty: the inner one's text is unknown to it.
    let (_, got) = kept(
        r#"{{ keep (fromYaml "q:\n  late: 1\n  z: 3") }}"#,
        &data,
        None,
    );
    drop(outer);
    assert_eq!(hits(), before + 1);
    assert_eq!(format!("{:?}", got[0]), "map[q:map[late:1 z:3]]");
}

/// The table keeps its bounds: many distinct texts evict the oldest.
#[test]
fn table_is_bounded() {
    let scope = Scope::install();
    let prog = r#"{{ range $i := until 200 }}{{ $_ := toYaml (dict "i" $i) }}{{ end }}{{ keep (fromYaml "i: 199") }}{{ keep (fromYaml "i: 0") }}"#;
    let before = hits();
    kept(prog, &Value::empty_map(), None);
    let (entries, bytes, nodes) = super::TABLE.with(|t| {
        let t = t.borrow();
        let t = t.as_ref().unwrap();
        (t.entries.len(), t.bytes, t.nodes)
    });
    drop(scope);
    assert_eq!(entries, super::MAX_ENTRIES);
    assert!(bytes <= super::MAX_BYTES && nodes <= super::MAX_NODES);
    // The newest is served; the oldest was evicted and parsed.
    assert_eq!(hits(), before + 1);
}

/// With a tracer, the copy's maps and lists are traced by their originals' paths, so what
/// is printed from them points at the values.
#[test]
fn copies_keep_paths() {
    let values = map(&[(
        "controllers",
        map(&[(
            "main",
            map(&[
                ("replicas", Value::Float(2.0)),
                (
                    "ports",
                    Value::list(vec![map(&[("port", Value::Float(80.0))])]),
                ),
            ]),
        )]),
    )]);
    let data = map(&[("Values", values.clone())]);
    let mut tracer = Tracer::new();
    tracer.add_root(&values, "Values");
    let prog = "{{ define \"enabled\" }}{{ $m := dict }}{{ range $k, $v := .Values.controllers }}{{ $_ := set $m $k $v }}{{ end }}{{ $m | toYaml }}{{ end }}\
{{- $c := include \"enabled\" . | fromYaml }}{{ $main := get $c \"main\" }}{{ $main.replicas }} {{ (index $main.ports 0).port }}";
    let mut funcs = crate::helm_funcs(0);
    funcs.insert("keep", Arity::Exact(1), |_, _| Ok(Value::str("")));
    let mut t = Templates::new(funcs);
    t.missing_key = MissingKey::Zero;
    t.parse("t", prog).unwrap();
    let scope = Scope::install();
    let out = t.execute_traced("t", &data, &tracer).unwrap();
    drop(scope);
    assert_eq!(out.text, "2 80");
    let origin = |needle: &str| {
        let at = out.text.find(needle).unwrap();
        out.spans
            .iter()
            .find(|s| s.start <= at && at < s.end)
            .map(|s| s.origin.clone())
    };
    let value = |p: &str| Some(Origin::Value { path: Arc::from(p) });
    assert_eq!(origin("2"), value("Values.controllers.main.replicas"));
    assert_eq!(origin("80"), value("Values.controllers.main.ports[0].port"));

    // Without the table the same program parses; the parse keeps the origins of the
    // printed scalars (`crate::origins`).
    let out = t.execute_traced("t", &data, &tracer).unwrap();
    let at = out.text.find('2').unwrap();
    let span = out.spans.iter().find(|s| s.start <= at && at < s.end);
    assert_eq!(
        span.map(|s| s.origin.clone()),
        value("Values.controllers.main.replicas")
    );
}

/// `deepCopy` of traced values is traced too (bjw-s' library replaces `.Values` by one).
#[test]
fn deep_copies_keep_paths() {
    let values = map(&[("a", map(&[("b", map(&[("c", s("x"))]))]))]);
    let data = map(&[("Values", values.clone())]);
    let mut tracer = Tracer::new();
    tracer.add_root(&values, "Values");
    let mut t = Templates::new(crate::helm_funcs(0));
    t.missing_key = MissingKey::Zero;
    t.parse("t", "{{ $v := deepCopy .Values }}{{ $v.a.b.c }}")
        .unwrap();
    let out = t.execute_traced("t", &data, &tracer).unwrap();
    assert_eq!(out.text, "x");
    assert_eq!(
        out.spans[0].origin,
        Origin::Value {
            path: Arc::from("Values.a.b.c")
        }
    );
}

/// An entry a merge copies from the user's values into the chart defaults' map points at
/// the user's values (bjw-s' `values.init`), not at a path below the defaults.
#[test]
fn merged_entries_point_at_their_source() {
    let values = map(&[
        (
            "common",
            map(&[("pod", map(&[("sc", map(&[("fs", Value::Float(1.0))]))]))]),
        ),
        (
            "pod",
            map(&[("sc", map(&[("user", Value::Float(1000.0))]))]),
        ),
    ]);
    let data = map(&[("Values", values.clone())]);
    let mut tracer = Tracer::new();
    tracer.add_root(&values, "Values");
    let mut t = Templates::new(crate::helm_funcs(0));
    t.missing_key = MissingKey::Zero;
    t.parse(
        "t",
        "{{ $m := mustMergeOverwrite (deepCopy .Values.common) (deepCopy (omit .Values \"common\")) }}{{ $m.pod.sc.user }} {{ $m.pod.sc.fs }} {{ index $m.pod.sc \"user\" }}{{ range $k, $v := $m.pod.sc }} {{ $v }}{{ end }}",
    )
    .unwrap();
    let out = t.execute_traced("t", &data, &tracer).unwrap();
    assert_eq!(out.text, "1000 1 1000 1 1000");
    let paths: Vec<String> = out
        .spans
        .iter()
        .filter_map(|s| match &s.origin {
            Origin::Value { path } => Some(path.to_string()),
            Origin::Template { .. } => None,
        })
        .collect();
    assert_eq!(
        paths,
        [
            "Values.pod.sc.user",
            "Values.common.pod.sc.fs",
            "Values.pod.sc.user",
            "Values.common.pod.sc.fs",
            "Values.pod.sc.user"
        ]
    );
}
