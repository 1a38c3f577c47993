//! Execution cases, each checked against what Go's text/template prints.

use std::collections::BTreeMap;

use crate::{Arity, Error, Funcs, MissingKey, Templates, Value};

fn data() -> Value {
    let mut m = BTreeMap::new();
    m.insert("s".to_string(), Value::str("str"));
    m.insert("i".to_string(), Value::Int(3));
    m.insert("f".to_string(), Value::Float(1_000_000.0));
    m.insert("n".to_string(), Value::Nil);
    m.insert(
        "l".to_string(),
        Value::list(vec![Value::str("a"), Value::str("b")]),
    );
    let mut inner = BTreeMap::new();
    inner.insert("z".to_string(), Value::Int(1));
    inner.insert("y".to_string(), Value::Bool(true));
    m.insert("m".to_string(), Value::map(inner));
    Value::map(m)
}

fn run_with(src: &str, mk: MissingKey) -> Result<String, Error> {
    let mut f = Funcs::new();
    f.insert("fail", Arity::Exact(1), |_, a| {
        Err(crate::format::sprint_value(&a[0]).into())
    });
    f.insert("include", Arity::Exact(2), |c, a| {
        let name = a[0].as_str().unwrap_or_default().to_string();
        c.execute_template(&name, &a[1]).map(Value::from)
    });
    f.insert("tpl", Arity::Exact(2), |c, a| {
        let text = a[0].as_str().unwrap_or_default().to_string();
        c.execute_text("tpl", &text, &a[1]).map(Value::from)
    });
    let mut t = Templates::new(f);
    t.missing_key = mk;
    t.parse("t", src)?;
    t.execute("t", &data())
}

fn run(src: &str) -> String {
    run_with(src, MissingKey::Default).unwrap()
}

fn err(src: &str) -> String {
    run_with(src, MissingKey::Zero).unwrap_err().to_string()
}

#[test]
fn actions_and_printing() {
    assert_eq!(
        run("{{ .s }} {{ .i }} {{ .f }} {{ .l }} {{ .m }} {{ .missing }} {{ .n }}"),
        "str 3 1e+06 [a b] map[y:true z:1] <no value> <no value>"
    );
    assert_eq!(
        run("{{ print 1 2 \"a\" nil }}|{{ println 1 }}|{{ printf \"%05.1f %v\" 3.14159 .l }}"),
        "1 2a<nil>|1\n|003.1 [a b]"
    );
    assert_eq!(
        run("{{ 1.5 }} {{ 0x10 }} {{ 'a' }} {{ \"q\" }} {{ `r\\n` }} {{ true }} {{ 1e3 }}"),
        "1.5 16 97 q r\\n true 1000"
    );
}

#[test]
fn trim_and_comments() {
    assert_eq!(
        run("a \n {{- .s -}} \n b {{/* no */}}c{{- /* x */ -}} d"),
        "astrb cd"
    );
}

#[test]
fn control_structures() {
    assert_eq!(
        run("{{ if .n }}1{{ else if .i }}2{{ else }}3{{ end }}"),
        "2"
    );
    assert_eq!(
        run("{{ with .m }}{{ .z }}{{ end }}{{ with .n }}x{{ else with .s }}{{ . }}{{ end }}"),
        "1str"
    );
    assert_eq!(
        run("{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}"),
        "y=true;z=1;"
    );
    assert_eq!(
        run(
            "{{ range $i, $e := .l }}{{ $i }}{{ $e }}{{ end }}{{ range .missing }}x{{ else }}empty{{ end }}"
        ),
        "0a1bempty"
    );
    assert_eq!(
        run(
            "{{ range 5 }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ if eq . 3 }}{{ break }}{{ end }}{{ . }}{{ end }}"
        ),
        "02"
    );
    assert_eq!(
        run("{{ $x := 1 }}{{ range .l }}{{ $x = . }}{{ end }}{{ $x }}"),
        "b"
    );
}

#[test]
fn define_template_block() {
    assert_eq!(
        run(
            "{{ define \"a\" }}<{{ . }}>{{ end }}{{ template \"a\" .s }}{{ block \"b\" .i }}[{{ . }}]{{ end }}"
        ),
        "<str>[3]"
    );
    assert_eq!(
        run("{{ define \"a\" }}{{ .z }}{{ end }}{{ include \"a\" .m | printf \"%s!\" }}"),
        "1!"
    );
    assert_eq!(
        run("{{ tpl \"{{ .s }}-{{ define \\\"q\\\" }}Q{{ end }}{{ template \\\"q\\\" }}\" . }}"),
        "str-Q"
    );
}

/// A copy of a set shares its table: what is added to the copy (as `tpl` adds its text) is
/// the copy's alone, replaces the shared definition of the same name there, and keeps Go's
/// rule that an empty definition never replaces a non-empty one.
#[test]
fn templates_added_to_a_copy_stay_in_the_copy() {
    let mut base = Templates::new(Funcs::new());
    base.parse(
        "a",
        "{{ define \"x\" }}X{{ end }}{{ define \"y\" }}Y{{ end }}A",
    )
    .unwrap();
    let mut copy = base.clone();
    copy.parse(
        "b",
        "{{ define \"x\" }}X2{{ end }}{{ define \"y\" }}{{ end }}B",
    )
    .unwrap();
    let d = Value::Nil;
    assert_eq!(copy.execute("x", &d).unwrap(), "X2");
    assert_eq!(copy.execute("y", &d).unwrap(), "Y");
    assert_eq!(copy.execute("b", &d).unwrap(), "B");
    assert_eq!(copy.names(), ["a", "b", "x", "y"]);
    copy.parse("c", "{{ define \"x\" }}X3{{ end }}").unwrap();
    assert_eq!(copy.execute("x", &d).unwrap(), "X3");
    assert_eq!(base.execute("x", &d).unwrap(), "X");
    assert!(!base.has("b") && copy.has("b"));
    assert_eq!(base.names(), ["a", "x", "y"]);
    // Once the table is no longer shared, additions go into it and still replace the
    // copy's own definitions.
    drop(base);
    copy.parse("d", "{{ define \"x\" }}X4{{ end }}").unwrap();
    assert_eq!(copy.execute("x", &d).unwrap(), "X4");
}

#[test]
fn pipelines_and_and_or() {
    assert_eq!(run("{{ .s | printf \"%s-%s\" \"x\" }}"), "x-str");
    assert_eq!(
        run("{{ or .n .missing \"dflt\" }} {{ and .i .s }} {{ and .n (fail \"never\") }}"),
        "dflt str <no value>"
    );
    assert_eq!(
        run("{{ (index .l 1) }} {{ len .m }} {{ not .i }} {{ (.m).z }}"),
        "b 2 false 1"
    );
}

#[test]
fn comparisons() {
    assert_eq!(
        run(
            "{{ eq .i 3 }} {{ eq .s \"x\" \"str\" }} {{ ne .i 4 }} {{ lt 1 2 }} {{ ge \"b\" \"a\" }} {{ eq .n nil }}"
        ),
        "true true true true true true"
    );
    assert!(
        err("{{ eq .f 1 }}")
            .ends_with("error calling eq: incompatible types for comparison: float64 and int")
    );
}

#[test]
fn errors_read_like_go() {
    assert_eq!(
        err("x\n  {{ .m.z.q }}"),
        "template: t:2:7: executing \"t\" at <.m.z.q>: can't evaluate field q in type interface {}"
    );
    assert_eq!(
        err("{{ .missing.x }}"),
        "template: t:1:11: executing \"t\" at <.missing.x>: nil pointer evaluating interface {}.x"
    );
    assert_eq!(
        err("{{ fail \"boom\" }}"),
        "template: t:1:3: executing \"t\" at <fail \"boom\">: error calling fail: boom"
    );
    assert_eq!(
        err("{{ template \"nope\" }}"),
        "template: t:1:12: executing \"t\" at <{{template \"nope\"}}>: template \"nope\" not defined"
    );
    assert_eq!(
        err("{{ index .n 1 }}"),
        "template: t:1:3: executing \"t\" at <index .n 1>: error calling index: index of untyped nil"
    );
    assert_eq!(
        err("{{ len }}"),
        "template: t:1:3: executing \"t\" at <len>: wrong number of args for len: want 1 got 0"
    );
    assert_eq!(
        err("{{ define \"d\" }}\n{{ fail \"in define\" }}{{ end }}{{ include \"d\" . }}"),
        "template: t:2:34: executing \"t\" at <include \"d\" .>: error calling include: template: t:2:3: executing \"d\" at <fail \"in define\">: error calling fail: in define"
    );
    assert_eq!(
        run_with("{{ .missing.x }}", MissingKey::Default).unwrap(),
        "<no value>"
    );
    assert!(
        run_with("{{ .missing }}", MissingKey::Error)
            .unwrap_err()
            .to_string()
            .ends_with("map has no entry for key \"missing\"")
    );
    assert_eq!(
        run_with("{{ .s", MissingKey::Default)
            .unwrap_err()
            .to_string(),
        "template: t:1: unclosed action"
    );
}

#[test]
fn aliasing_through_variables() {
    let mut f = Funcs::new();
    f.insert("set", Arity::Exact(3), |_, a| {
        if let (Value::Map(m), Some(k)) = (&a[0], a[1].as_str()) {
            m.borrow_mut().insert(k.to_string(), a[2].clone());
        }
        Ok(a[0].clone())
    });
    let mut t = Templates::new(f);
    t.parse(
        "t",
        "{{ $m := .m }}{{ $_ := set $m \"new\" 1 }}{{ .m.new }}",
    )
    .unwrap();
    assert_eq!(t.execute("t", &data()).unwrap(), "1");
}

#[test]
fn recursion_is_bounded() {
    let e = err("{{ define \"r\" }}{{ template \"r\" . }}{{ end }}{{ template \"r\" . }}");
    assert!(e.contains("exceeded maximum template depth"), "{e}");
}

#[test]
fn hostile_inputs_do_not_panic() {
    for src in [
        "{{",
        "}}",
        "{{ ( }}",
        "{{ ) }}",
        "{{ $ }}",
        "{{ $x := }}",
        "{{ range $a, $b, $c := . }}{{ end }}",
        "{{ else }}",
        "{{ end }}",
        "{{ define }}",
        "{{ if }}{{ end }}",
        "{{ .a.b.c.d | | }}",
        "{{ 1 | 2 }}",
        "{{ \"\\xzz\" }}",
        "{{ 99999999999999999999 }}",
        "{{ range .s }}{{ end }}",
        "{{ slice .s 3 1 }}",
        "{{ printf \"%*d\" -5 1 }}",
        "{{ index .l -1 }}",
        "{{ template \"t\" }}",
        "{{ break }}",
        "{{ with $x := 1 }}{{ $x }}{{ end }}{{ $x }}",
    ] {
        let _ = run_with(src, MissingKey::Zero);
    }
}

/// A shared table's copies see its functions, keep what they add or change to themselves,
/// and a function added to a copy replaces the shared one of that name there.
#[test]
fn shared_function_tables_stay_apart() {
    use crate::funcs::Ty;
    let mut base = Funcs::new();
    base.insert("greet", Arity::Exact(0), |_, _| Ok(Value::str("shared")));
    let base = base.share();
    let mut a = base.clone();
    a.insert("greet", Arity::Exact(0), |_, _| Ok(Value::str("own")));
    a.insert("extra", Arity::Exact(0), |_, _| Ok(Value::str("x")));
    let mut b = base.clone();
    b.set_params("greet", &[Ty::Str]);
    let run = |f: &Funcs, src: &str| {
        let mut t = Templates::new(f.clone());
        t.parse("t", src)?;
        t.execute("t", &Value::Nil)
    };
    assert_eq!(
        run(&a, "{{ greet }} {{ extra }} {{ len \"ab\" }}").unwrap(),
        "own x 2"
    );
    assert_eq!(run(&base, "{{ greet }}").unwrap(), "shared");
    assert!(run(&base, "{{ extra }}").is_err());
    assert!(!b.contains("extra") && a.contains("extra") && b.contains("len"));
    assert_eq!(b.get("greet").map(|f| f.params), Some(&[Ty::Str][..]));
    assert_eq!(base.get("greet").map(|f| f.params), Some(&[][..]));
    // A copy that only adds finds both.
    let mut c = base.clone();
    c.insert("other", Arity::Exact(0), |_, _| Ok(Value::str("o")));
    assert_eq!(run(&c, "{{ greet }} {{ other }}").unwrap(), "shared o");
    // Sharing again keeps the copy's own functions over the shared ones.
    assert_eq!(run(&a.share(), "{{ greet }}").unwrap(), "own");
}
