//! Provenance on small templates: the exact spans and origins of each case.

use std::collections::BTreeMap;

use crate::{Arity, Funcs, Origin, Templates, Trace, Traced, Tracer, Value};

/// Go's builtins plus Helm-like `include`, `tpl`, `default`, `quote`, `nindent`, `trim`,
/// `toString` and `upper`, with their traces.
pub(crate) fn funcs() -> Funcs {
    let mut f = Funcs::new();
    f.insert("include", Arity::Exact(2), |c, a| {
        let name = a[0].as_str().unwrap_or_default().to_string();
        c.execute_template(&name, &a[1]).map(Value::from)
    });
    f.insert("tpl", Arity::Exact(2), |c, a| {
        let text = a[0].as_str().unwrap_or_default().to_string();
        c.execute_text("gotpl", &text, &a[1]).map(Value::from)
    });
    f.insert("default", Arity::Exact(2), |_, a| {
        Ok(if a[1].truthy() {
            a[1].clone()
        } else {
            a[0].clone()
        })
    });
    f.insert("quote", Arity::Exact(1), |_, a| {
        Ok(Value::from(format!(
            "\"{}\"",
            crate::format::sprint_value(&a[0])
        )))
    });
    f.insert("nindent", Arity::Exact(2), |_, a| {
        let pad = " ".repeat(usize::try_from(a[0].as_int().unwrap_or(0)).unwrap_or(0));
        let s = crate::format::sprint_value(&a[1]);
        Ok(Value::from(format!(
            "\n{pad}{}",
            s.replace('\n', &format!("\n{pad}"))
        )))
    });
    f.insert("trim", Arity::Exact(1), |_, a| {
        Ok(Value::from(
            crate::format::sprint_value(&a[0]).trim().to_string(),
        ))
    });
    f.insert("toString", Arity::Exact(1), |_, a| {
        Ok(Value::from(crate::format::sprint_value(&a[0])))
    });
    f.insert("upper", Arity::Exact(1), |_, a| {
        Ok(Value::from(
            crate::format::sprint_value(&a[0]).to_uppercase(),
        ))
    });
    f.insert("dict", Arity::AtLeast(0), |_, a| {
        Ok(Value::map(
            a.chunks(2)
                .map(|p| {
                    let k = crate::format::sprint_value(&p[0]);
                    (k, p.get(1).cloned().unwrap_or(Value::Nil))
                })
                .collect(),
        ))
    });
    f.insert("set", Arity::Exact(3), |_, a| {
        if let (Value::Map(m), Some(k)) = (&a[0], a[1].as_str()) {
            m.borrow_mut().insert(k.to_string(), a[2].clone());
        }
        Ok(a[0].clone())
    });
    f.insert("list", Arity::AtLeast(0), |_, a| {
        Ok(Value::list(a.to_vec()))
    });
    f.insert("append", Arity::Exact(2), |_, a| {
        let mut items = match &a[0] {
            Value::List(l) => l.borrow().clone(),
            _ => Vec::new(),
        };
        items.push(a[1].clone());
        Ok(Value::list(items))
    });
    for (name, trace) in [
        ("dict", Trace::Dict),
        ("set", Trace::Set),
        ("list", Trace::List),
        ("append", Trace::Append),
        ("include", Trace::Include),
        ("tpl", Trace::Tpl),
        ("default", Trace::Choice),
        ("quote", Trace::Quote),
        ("nindent", Trace::Indent),
        ("trim", Trace::Piece),
        ("toString", Trace::Last),
    ] {
        f.set_trace(name, trace);
    }
    f
}

pub(crate) fn values() -> Value {
    let yaml_like = BTreeMap::from([
        (
            "a".to_string(),
            Value::map(BTreeMap::from([("b".to_string(), Value::Int(2))])),
        ),
        (
            "m".to_string(),
            Value::map(BTreeMap::from([
                ("x".to_string(), Value::str("ex")),
                ("k.8s".to_string(), Value::str("dotted")),
            ])),
        ),
        (
            "list".to_string(),
            Value::list(vec![
                Value::map(BTreeMap::from([("name".to_string(), Value::str("one"))])),
                Value::map(BTreeMap::from([("name".to_string(), Value::str("two"))])),
            ]),
        ),
        ("y".to_string(), Value::str("why")),
        ("empty".to_string(), Value::str("")),
        ("text".to_string(), Value::str("lit-{{ .Values.y }}")),
    ]);
    Value::map(yaml_like)
}

/// Fresh data with `.Values` ([`values`], traced from the root) and `.Release.Name` (not
/// traced), and the tracer.
pub(crate) fn traced_data() -> (Value, Tracer) {
    let vals = values();
    let data = Value::map(BTreeMap::from([
        ("Values".to_string(), vals.clone()),
        (
            "Release".to_string(),
            Value::map(BTreeMap::from([("Name".to_string(), Value::str("rel"))])),
        ),
    ]));
    let mut tracer = Tracer::new();
    tracer.add_root(&vals, "");
    (data, tracer)
}

/// Executes `main` (and the other texts, parsed first) with `.Values`; each span as the
/// text it covers and its origin (`f:LINE:COL` or `=path`).
fn spans(texts: &[(&str, &str)]) -> (String, Vec<(String, String)>) {
    let mut set = Templates::new(funcs());
    for (name, text) in texts {
        set.parse(name, text).unwrap();
    }
    let (data, tracer) = traced_data();
    let Traced { text, spans } = set.execute_traced("main", &data, &tracer).unwrap();
    assert_eq!(
        text,
        set.execute("main", &data).unwrap(),
        "tracing changes nothing"
    );
    let mut end = 0;
    for s in &spans {
        assert!(
            s.start >= end && s.start < s.end && s.end <= text.len(),
            "{spans:?}"
        );
        end = s.end;
    }
    let shown = spans
        .iter()
        .map(|s| {
            let origin = match &s.origin {
                Origin::Template { file, line, column } => format!("{file}:{line}:{column}"),
                Origin::Value { path } => format!("={path}"),
            };
            (text[s.start..s.end].to_string(), origin)
        })
        .collect();
    (text, shown)
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
        .collect()
}

#[test]
fn literal_text_has_the_line_of_each_byte() {
    let (_, got) = spans(&[("main", "a: 1\n{{- /* c */}}\nb: 2\nc: 3")]);
    assert_eq!(
        got,
        pairs(&[
            ("a: 1", "main:1:1"),
            ("\n", "main:2:14"),
            ("b: 2\n", "main:3:1"),
            ("c: 3", "main:4:1")
        ])
    );
}

#[test]
fn field_chains_variables_with_and_index() {
    let (_, got) = spans(&[(
        "main",
        "{{ .Values.a.b }} {{ $.Values.m.x }} {{ $v := .Values.m }}{{ $v.x }} {{ with .Values.a }}{{ .b }}{{ end }} {{ index .Values.m \"k.8s\" }}",
    )]);
    assert_eq!(
        got,
        pairs(&[
            ("2", "=a.b"),
            (" ", "main:1:18"),
            ("ex", "=m.x"),
            (" ", "main:1:37"),
            ("ex", "=m.x"),
            (" ", "main:1:69"),
            ("2", "=a.b"),
            (" ", "main:1:107"),
            ("dotted", "=m.k\\.8s"),
        ])
    );
}

#[test]
fn range_items_keep_their_paths() {
    let (_, got) = spans(&[(
        "main",
        "{{ range $i, $e := .Values.list }}{{ $e.name }},{{ end }}{{ range $k, $v := .Values.m }}{{ $k }}{{ end }}",
    )]);
    assert_eq!(
        got,
        pairs(&[
            ("one", "=list[0].name"),
            (",", "main:1:48"),
            ("two", "=list[1].name"),
            (",", "main:1:48"),
            ("k.8s", "=m.k\\.8s"),
            ("x", "=m.x"),
        ])
    );
}

#[test]
fn default_names_the_value_or_the_literal() {
    let (_, got) = spans(&[(
        "main",
        "{{ default \"d\" .Values.y }}\n{{ default \"d\" .Values.nope }}\n{{ .Values.empty | default \"e\" }}",
    )]);
    assert_eq!(
        got,
        pairs(&[
            ("why", "=y"),
            ("\n", "main:1:28"),
            ("d", "main:2:12"),
            ("\n", "main:2:31"),
            ("e", "main:3:28"),
        ])
    );
}

#[test]
fn passing_functions_keep_the_path_and_computing_ones_the_action() {
    // `printf` of string verbs passes each argument on, its format text is the action's.
    let (_, got) = spans(&[(
        "main",
        "{{ .Values.y | quote }}{{ .Values.a | toString }}{{ printf \"%s\" .Values.y }}{{ printf \"%s-%s\" .Values.y .Values.y }}{{ upper .Values.y }}{{ .Release.Name }}",
    )]);
    assert_eq!(
        got,
        pairs(&[
            ("\"why\"", "=y"),
            ("map[b:2]", "=a"),
            ("why", "=y"),
            ("why", "=y"),
            ("-", "main:1:80"),
            ("why", "=y"),
            ("WHY", "main:1:120"),
            ("rel", "main:1:141"),
        ])
    );
}

#[test]
fn include_keeps_the_included_spans_through_edits() {
    let helpers = "{{- define \"lbl\" -}}\napp: {{ .Values.y }}\nfixed: x\n{{- end }}";
    let (text, got) = spans(&[
        ("_helpers.tpl", helpers),
        (
            "main",
            "labels:{{ include \"lbl\" . | nindent 2 }}\nq: {{ include \"lbl\" . | trim | quote }}",
        ),
    ]);
    assert!(
        text.starts_with("labels:\n  app: why\n  fixed: x\nq: \""),
        "{text}"
    );
    assert_eq!(
        got[..8],
        pairs(&[
            ("labels:", "main:1:1"),
            ("\n  ", "main:1:29"),
            ("app: ", "_helpers.tpl:2:1"),
            ("why", "=y"),
            ("\n", "_helpers.tpl:2:21"),
            ("  ", "main:1:29"),
            ("fixed: x", "_helpers.tpl:3:1"),
            ("\n", "main:1:41"),
        ])[..]
    );
    assert_eq!(
        got[8..],
        pairs(&[
            ("q: ", "main:2:1"),
            ("\"", "main:2:32"),
            ("app: ", "_helpers.tpl:2:1"),
            ("why", "=y"),
            ("\n", "_helpers.tpl:2:21"),
            ("fixed: x", "_helpers.tpl:3:1"),
            ("\"", "main:2:32"),
        ])[..]
    );
}

#[test]
fn tpl_text_from_values_points_at_the_values() {
    let (text, got) = spans(&[("main", "v: {{ tpl .Values.text . }}")]);
    assert_eq!(text, "v: lit-why");
    assert_eq!(
        got,
        pairs(&[("v: ", "main:1:1"), ("lit-", "=text"), ("why", "=y")])
    );
}

/// A scalar stored in a map or list by `dict`, `set`, `list` or `append` holds its origin:
/// a field, `index` and `range` read it back; a later `set` of something else forgets it.
#[test]
fn maps_and_lists_hold_the_origins_of_their_scalars() {
    let (_, got) = spans(&[(
        "main",
        "{{ $d := dict \"y\" .Values.y \"lit\" \"L\" }}{{ $d.y }} {{ $d.lit }} \
{{ $_ := set $d \"x\" .Values.m.x }}{{ index $d \"x\" }} \
{{ $l := append (list .Values.y) .Values.m.x }}{{ range $l }}{{ . }}{{ end }} \
{{ $_ := set $d \"y\" (printf \"%d\" 1) }}{{ $d.y }}",
    )]);
    assert_eq!(
        got,
        pairs(&[
            ("why", "=y"),
            (" ", "main:1:51"),
            ("L", "main:1:35"),
            (" ", "main:1:64"),
            ("ex", "=m.x"),
            (" ", "main:1:117"),
            ("why", "=y"),
            ("ex", "=m.x"),
            (" ", "main:1:195"),
            ("1", "main:1:229"),
        ])
    );
}

#[test]
fn exec_errors_name_each_step() {
    let mut set = Templates::new(funcs());
    set.parse("_h.tpl", "{{ define \"x\" }}\n  {{ .a.b.c }}{{ end }}")
        .unwrap();
    set.parse("main", "x: {{ include \"x\" .Values }}").unwrap();
    let data = Value::map(BTreeMap::from([("Values".to_string(), Value::Nil)]));
    set.missing_key = crate::MissingKey::Zero;
    let err = set.execute("main", &data).unwrap_err();
    let frames = err.frames();
    assert_eq!(frames.len(), 2, "{err}");
    assert_eq!(
        (frames[0].file.as_str(), frames[0].line, frames[0].column),
        ("main", 1, 7)
    );
    assert_eq!(
        (frames[1].file.as_str(), frames[1].line, frames[1].column),
        ("_h.tpl", 2, 8)
    );
    assert_eq!(frames[1].message, "nil pointer evaluating interface {}.a");
    assert!(err.to_string().starts_with("template: main:1:6: executing \"main\" at <include \"x\" .Values>: error calling include: template: _h.tpl:2:7:"), "{err}");
    let perr = set.parse("bad", "ok\n  {{ .x ").unwrap_err();
    let p = perr.position().unwrap();
    assert_eq!(
        (p.line, p.column, p.message.as_str()),
        (2, 9, "unclosed action")
    );
}
