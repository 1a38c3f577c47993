//! Sprig functions through the engine, each against what Go's sprig prints.

use fluxgate_gotemplate::{Templates, Value};

fn run(src: &str) -> String {
    let mut t = Templates::new(crate::helm_funcs(0));
    t.missing_key = fluxgate_gotemplate::MissingKey::Zero;
    t.parse("t", src).unwrap();
    t.execute("t", &Value::empty_map()).unwrap()
}

#[test]
fn strings() {
    assert_eq!(
        run(
            r#"{{ "a\nb" | nindent 2 }}|{{ quote "x" 1 }}|{{ squote "y" }}|{{ trunc 3 "abcdef" }}|{{ trunc -2 "abcdef" }}"#
        ),
        "\n  a\n  b|\"x\" \"1\"|'y'|abc|ef"
    );
    assert_eq!(
        run(
            r#"{{ title "hello world" }}|{{ trimSuffix "-" "a-" }}|{{ replace "a" "b" "aaa" }}|{{ join "," (list 1 "a" nil) }}"#
        ),
        "Hello World|a|bbb|1,a"
    );
    assert_eq!(
        run(
            r#"{{ splitList "," "a,b" }}|{{ (split "." "a.b")._1 }}|{{ upper "x" }}|{{ snakecase "FooBar" }}|{{ kebabcase "fooBar" }}"#
        ),
        "[a b]|b|X|foo_bar|foo-bar"
    );
}

#[test]
fn logic_and_types() {
    assert_eq!(
        run(
            r#"{{ default "d" "" }}|{{ default "d" "v" }}|{{ empty 0 }}|{{ coalesce "" nil "c" }}|{{ ternary 1 2 false }}"#
        ),
        "d|v|true|c|2"
    );
    assert_eq!(
        run(
            r#"{{ typeOf 1 }}|{{ typeOf (add 1 2) }}|{{ kindOf (dict) }}|{{ kindIs "slice" (list) }}|{{ typeOf 1.5 }}"#
        ),
        "int|int64|map|true|float64"
    );
}

#[test]
fn dicts_alias_and_merge() {
    assert_eq!(
        run(
            r#"{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ $d }}|{{ $e := $d }}{{ $_ := unset $e "a" }}{{ $d }}"#
        ),
        "map[a:1 b:2]|map[b:2]"
    );
    assert_eq!(
        run(
            r#"{{ merge (dict "a" 1 "b" "") (dict "a" 2 "b" "x" "c" 3) }}|{{ mergeOverwrite (dict "a" 1 "n" (dict "x" 1)) (dict "a" 2 "n" (dict "y" 2)) }}"#
        ),
        "map[a:1 b:x c:3]|map[a:2 n:map[x:1 y:2]]"
    );
    assert_eq!(
        run(
            r#"{{ dig "a" "b" "def" (dict "a" (dict "b" 7)) }}|{{ dig "a" "x" "def" (dict "a" (dict "b" 7)) }}|{{ hasKey (dict "a" 1) "a" }}|{{ keys (dict "b" 1 "a" 2) | sortAlpha }}"#
        ),
        "7|def|true|[a b]"
    );
    assert_eq!(
        run(
            r#"{{ $a := dict "n" (dict "x" 1) }}{{ $b := deepCopy $a }}{{ $_ := set $b.n "x" 2 }}{{ $a.n.x }}"#
        ),
        "1"
    );
}

#[test]
fn encodings() {
    assert_eq!(
        run(r#"{{ dict "b" 1 "a" (list "x" 1.5) | toYaml }}"#),
        "a:\n- x\n- 1.5\nb: 1"
    );
    assert_eq!(
        run(
            r#"{{ dict "b" "<" "a" 1000000.0 | toJson }}|{{ (fromYaml "a: 1").a }}|{{ (fromJson "{\"x\": [1]}").x }}"#
        ),
        "{\"a\":1000000,\"b\":\"\\u003c\"}|1|[1]"
    );
    assert_eq!(
        run(
            r#"{{ b64enc "hi" }}|{{ sha256sum "a" | trunc 8 }}|{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}|{{ regexMatch "^v[0-9]" "v1" }}"#
        ),
        "aGk=|ca978112|-W-xxW-|true"
    );
}

#[test]
fn math() {
    assert_eq!(
        run(
            r#"{{ add 1 2 3 }}|{{ sub 5 7 }}|{{ mul 2 3 }}|{{ div 7 2 }}|{{ max 1 9 3 }}|{{ int "12" }}|{{ float64 "1.5" }}|{{ add1 1.9 }}"#
        ),
        "6|-2|6|3|9|12|1.5|2"
    );
}

#[test]
fn semver_and_required() {
    assert_eq!(
        run(r#"{{ semverCompare ">=1.21-0" "v1.30.0" }}|{{ (semver "v1.30.2").Minor }}"#),
        "true|30"
    );
    let mut t = Templates::new(crate::helm_funcs(0));
    t.parse("t", r#"{{ required "need x" .x }}"#).unwrap();
    assert!(
        t.execute("t", &Value::empty_map())
            .unwrap_err()
            .to_string()
            .contains("need x")
    );
}

/// `set` of a scalar equal to the one there changes nothing a template can read: an include
/// that names the object it is given, again on every call (as app-template's library does
/// with each object in its values), is run for the first change and once more, then kept.
#[test]
fn setting_an_equal_scalar_again_is_no_change_to_the_memo_of_include() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runs = Arc::new(AtomicUsize::new(0));
    let mut f = crate::helm_funcs(0);
    let counted = runs.clone();
    f.insert("tick", fluxgate_gotemplate::Arity::Exact(0), move |_, _| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(Value::str(""))
    });
    let mut t = Templates::new(f);
    t.parse(
        "t",
        r#"{{ define "name" }}{{ tick }}{{ $_ := set .v "name" "n" }}{{ .v.name }}{{ end }}{{ $m := dict }}{{ range until 4 }}{{ include "name" (dict "v" $m) }}{{ end }}|{{ $m.name }}"#,
    )
    .unwrap();
    assert_eq!(t.execute("t", &Value::empty_map()).unwrap(), "nnnn|n");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // A different value is a change: each call runs.
    runs.store(0, Ordering::SeqCst);
    t.parse(
        "u",
        r#"{{ define "count" }}{{ tick }}{{ $_ := set .v "n" (add1 (default 0 .v.n)) }}{{ .v.n }}{{ end }}{{ $m := dict }}{{ range until 3 }}{{ include "count" (dict "v" $m) }}{{ end }}"#,
    )
    .unwrap();
    assert_eq!(t.execute("u", &Value::empty_map()).unwrap(), "123");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}
