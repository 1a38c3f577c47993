//! The direct reader for plain block YAML (`fast.rs`) builds exactly the trees the general
//! reader builds (values, key order, locations, tags, implicit nulls) on every text it takes,
//! over the YAML files of the corpus and the charts' rendered shapes below; and it takes most
//! of what tools print.
//!
//! The corpus part needs `FLUXGATE_CORPUS` (the corpus folder); skips otherwise.

use fluxgate_yaml::{Schema, compare_readers as check};

const SHAPES: &[&str] = &[
    "a: 1\nb: two\n",
    "---\n# Source: x/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels:\n    app.kubernetes.io/name: x\ndata:\n  a: |\n    line one\n      indented\n\n    after blank\n  b: |-\n    no break\n  c: \"quoted\"\n  d: 'it''s'\n",
    "items:\n- a\n- b: 1\n  c: 2\n-\n  d: 3\n- - nested\n  - more\n- []\n- {}\n",
    "key:\nother: 1\nlast:\n",
    "x:\n  - 1\n  - 2\ny: null\nz: ~\nw: true\nv: 1.5\nu: 0x1F\n",
    "a: b # a comment\n# a line comment\nc: 'd' # another\n",
    "spec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: \"repo:tag\"\n          args:\n            - --flag=1\n            - -v\n          env:\n            - name: A\n              value: \"1\"\n",
    "a: |\n  text\n\n\nb: 1\n",
    "a: |\n  trailing  \n  spaces \nb: 1\n",
    "a: |\n  at the end\n",
    "a: |-\n  at the end\n\n",
    "a: |\n\n  leading blank\n",
    "\"quoted key\": 1\n'single': 2\n",
    "a: http://example.com/x\nb: a:b\nc: -5\nd: --x\n",
    "- a: 1\n  b:\n  c: 3\n",
    "a:\n  b:\n    c: 1\n  d: 2\ne: 3\n",
    "---\na: 1\n---\nb: 2\n",
    "a: 1\n---\n- b\n",
    "a:\n- 1\n- 2\nb: 3\n",
    "- a:\n  - 1\n  b: 2\n",
    "a: [1, 2]\n",
    "a: b\n c\n",
    "a: &x 1\nb: *x\n",
    "a: >\n  folded\n",
    "a: \"esc\\n\"\n",
    "a: 1\na: 2\n",
    "a:\tb\n",
    "a: 1",
    "a: 'open\n  close'\n",
    "a: |2\n   x\n",
    "a: |\n  x\n # not a comment\n",
    "a:  spaced value   \nb:   'q'   \n",
    "k: v\n...\n",
    "verbs: [\"get\", \"list\", watch] # c\nr: [ x, 'y' , 1, true, a/b.c ]\ne: [x,]\n",
    "rules:\n- apiGroups: [\"\"]\n  resources: [\"secrets\"]\nsubjects:\n- kind: User\n",
    "a:\n  {}\nb:\n    []\n",
    "a: [b, [c]]\n",
    "a: [b: c]\n",
    "c: { drop: [\"ALL\"], add: [NET_ADMIN] }\n- x\n",
    "s:\n  - { a: 1, b: [x, 'y'], c: {d: e} }\n  - {}\nt: {a: {b: {c: [[], {}]}}}\n",
    "a:\nb: 1\nc:\n",
    "- a:\n  b: # c\n- \n-\n- x\n",
    "l:\n- \n- a:\nm:\n",
    "a:\n  b:\n---\nc:\n",
    "top:\n  - x:\n    y:\n  -\n",
    // Found by the fuzzer: characters YAML cannot print are the general reader's to refuse.
    "a: 1Jb:J  - x:q\u{18}\0\"@t\nc:\n",
    "a: b\u{7f}\nc: \u{9f}\nd: \u{fffe}\ne: \u{feff}x\nf: é\u{1F600}\n",
    // Columns count characters: a key or a flow item not in ASCII moves what follows.
    "x:   \n '''ayҌ''':\n",
    "\"é\": 1\n'ü': [a, b]\nl: [\"é\", x]\nm: é\n",
    // YAML bounds an implicit key at 1024 characters.
    concat!(
        "k",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ": v\n"
    ),
    "k: ---\nl: '---'\n",
    // Double-quoted escapes: every one YAML defines, hexadecimal ones, an escaped quote next
    // to the closing one, escapes in keys and flow items; then what the general reader must
    // judge (an undefined escape, a surrogate, short hex, an escaped line break).
    "a: \"\\0\\a\\b\\t\\\t\\n\\v\\f\\r\\e\\ \\\"\\/\\\\\\N\\_\\L\\P\"\nb: \"\\x41\\u00e9\\U0001F600\\x7f\"\n",
    "json: \"{\\n  \\\"a\\\": [1, \\\"x\\\"]\\n}\\\"\"\n\"k\\tey\": 1\nl: [\"\\u00e9\", \"a\\\"b\"]\n",
    "a: \"\\q\"\n",
    "a: \"\\ud800\"\n",
    "a: \"\\x4\"\n",
    "a: \"x\\\n  y\"\n",
    "a: \"\\U00110000\"\n",
    // No final line break (a document Helm renders, a patch written inline, nothing at all):
    // a literal block scalar on the last line is the general reader's.
    "",
    "  ",
    "# only a comment",
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: x",
    "a:\n  b: 1\n  ",
    "- a\n- [1, 2]\n- \"q\"",
    "a: |\n  x",
    "a: |-\n  x",
    "a: |\n  x\n  ",
    "a: |\n  x\nb: 1",
    // Documents after the first: the markers end the block above them.
    "---\n# c\napiVersion: v1\nkind: A\nspec:\n  wait: true\n---\n# c\nkind: B\n",
    "a:\n---\nb: 1\n",
    "a:\n- x\n---\n- y\n",
    "a: |\n  x\n---\nb: 1\n",
    "a: |-\n  x\n---\nb: 1",
    "a:\n  b:\n---\nc:\n",
    "- a:\n---\n- b:",
    "a: b\n---  \nc: d\n",
    "a: [1, 2]\n--- # c\nb: 'x'\n",
    "a: b\n...\n",
    "a: 1\n--- x\n",
    "a: 1\n----\n",
    "a: 1\n---a: 2\n",
    "a: 1\n---\n",
];

/// One-line flow mappings and nested flow collections (`capabilities: { drop: ["ALL"] }`,
/// onedr0p's app-template releases) are read directly, at the general reader's columns;
/// what is not of that plain kind is left to it.
#[test]
fn one_line_flow_collections_are_read_directly() {
    assert_taken(&[
        ("capabilities: { drop: [\"ALL\"] }\n", true),
        ("a: {b: 1, 'c': x, \"d\": [e, [f]], g: {}}\n", true),
        (
            "- { name: x, value: \"1\" } # c\n- {}\n- { }\n- [ ]\n",
            true,
        ),
        ("a: { b: { c: { d: true } } }\nz: 1\n", true),
        ("a: {b: 1.5, c: null, e: a/b.c-d}\n", true),
        ("a: {d: -x}\n", false),
        ("a: {b}\n", false),
        ("a: {b: 1,}\n", false),
        ("a: {\"b\":1}\n", false),
        ("a: {b: c:d}\n", false),
        ("a: {b: 1, b: 2}\n", false),
        ("a: {b: 1\n  , c: 2}\n", false),
        ("a: {<<: x}\n", false),
        ("a: {b: &x 1}\n", false),
        ("a: {true: 1}\n", false),
        ("a: {b: 1} x\n", false),
        ("a: {b: [1, 2}\n", false),
    ]);
}

/// Each text is read directly or not as `taken` says, and read as the general reader reads it.
fn assert_taken(cases: &[(&str, bool)]) {
    for &(text, taken) in cases {
        let (took, differs) = check("t.yaml", text, Schema::Kube);
        assert_eq!(took, taken, "{text:?}");
        assert!(
            differs.is_none(),
            "{text:?}: {}",
            differs.unwrap_or_default()
        );
    }
}

#[test]
fn unterminated_texts_and_later_documents_are_read_directly() {
    assert_taken(&[
        ("", true),
        ("apiVersion: v1\nkind: ConfigMap\ndata:\n  a: x", true),
        ("a: |\n  x\nb: 1", true),
        ("a: |\n  x", false),
        ("a: |-\n  x", false),
        ("a: 1\n---\n- b\n---\nc: |\n  d\n", true),
    ]);
}

#[test]
fn the_direct_reader_agrees_on_shapes() {
    let mut taken = 0;
    for text in SHAPES {
        for schema in [Schema::Kube, Schema::GoYamlV2, Schema::Yaml11] {
            let (took, differs) = check("shape.yaml", text, schema);
            taken += usize::from(took);
            assert!(
                differs.is_none(),
                "{text:?} ({schema:?}): {}",
                differs.unwrap_or_default()
            );
        }
    }
    // Most shapes are the plain kind (the others are there to be left alone).
    assert!(taken >= 40, "the direct reader took {taken} texts");
}

#[test]
fn the_direct_reader_agrees_over_the_corpus() {
    let Some(corpus) = fluxgate_testkit::corpus("the_direct_reader_agrees_over_the_corpus") else {
        return;
    };
    let files = fluxgate_testkit::files_below(&corpus, &|e| {
        matches!(e, "yaml" | "yml" | "yaml_expected" | "txt")
    });
    let (mut read, mut taken) = (0usize, 0usize);
    let mut differences = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        read += 1;
        let rel = f.strip_prefix(&corpus).unwrap_or(f).display().to_string();
        for schema in [Schema::Kube, Schema::GoYamlV2] {
            let (took, differs) = check(&rel, &text, schema);
            taken += usize::from(took && schema == Schema::Kube);
            if let Some(d) = differs {
                differences.push(format!("{rel} ({schema:?}): {d}"));
            }
        }
    }
    eprintln!("the direct reader took {taken} of {read} corpus files");
    assert!(
        differences.is_empty(),
        "{} texts read differently:\n{}",
        differences.len(),
        differences.join("\n")
    );
    assert!(read > 1000 && taken * 2 > read, "took {taken} of {read}");
}

/// Nesting past the general reader's bound (256) is its to refuse, in both its forms (compact
/// `- - -` and indented), without this reader recursing as deep: a hostile file must not
/// overflow the stack.
#[test]
fn deep_nesting_is_the_general_readers() {
    for depth in [100, 300, 20_000] {
        let compact = format!("{}x\n", "- ".repeat(depth));
        let levels = depth.min(2_000);
        let mut indented = String::new();
        for i in 0..levels {
            indented.push_str(&" ".repeat(i));
            indented.push_str(&format!("k{i}:\n"));
        }
        indented.push_str(&" ".repeat(levels));
        indented.push_str("v: 1\n");
        for text in [compact, indented] {
            let (_, differs) = check("deep.yaml", &text, Schema::Kube);
            assert!(
                differs.is_none(),
                "depth {depth}: {}",
                differs.unwrap_or_default()
            );
        }
    }
}

/// Double-quoted escapes are read directly (dashboards rendered by `toJson` are hundreds of
/// kilobytes of them); what only the general reader can judge is left to it (and a tab,
/// escaped or not, sends the whole text there).
#[test]
fn escapes_are_read_directly_and_the_rest_left_alone() {
    let taken = [
        "a: \"\\0\\a\\b\\t\\n\\v\\f\\r\\e\\ \\\"\\/\\\\\\N\\_\\L\\P\"\nb: \"\\x41\\u00e9\\U0001F600\\x7f\"\n",
        "json: \"{\\n  \\\"a\\\": [1, \\\"x\\\"]\\n}\\\"\"\nl: [\"\\u00e9\", \"a\\\"b\"]\n",
    ];
    let left = [
        "a: \"\\q\"\n",
        "a: \"\\ud800\"\n",
        "a: \"\\x4\"\n",
        "a: \"x\\\n  y\"\n",
        "a: \"\\U00110000\"\n",
    ];
    for text in taken {
        let (took, differs) = check("escapes.yaml", text, Schema::Kube);
        assert!(took, "{text:?}");
        assert!(
            differs.is_none(),
            "{text:?}: {}",
            differs.unwrap_or_default()
        );
    }
    for text in left {
        assert!(!check("escapes.yaml", text, Schema::Kube).0, "{text:?}");
    }
}

/// What the direct reader builds holds no room to grow: each mapping and each sequence is as
/// large as what it holds (grown item by item, they kept up to twice that), and so is a copy.
#[test]
fn read_collections_hold_exactly_their_items() {
    fn exact(n: &fluxgate_yaml::Node) {
        match &n.value {
            fluxgate_yaml::Value::Map(m) => {
                assert_eq!(m.capacity(), m.len(), "mapping at {}", n.loc);
                m.values().for_each(exact);
            }
            fluxgate_yaml::Value::Seq(s) => {
                assert_eq!(s.capacity(), s.len(), "sequence at {}", n.loc);
                s.iter().for_each(exact);
            }
            _ => {}
        }
    }
    let text =
        "a: 1\nb:\n  c: [1, 2]\n  d:\n    - x: 1\n      y: 2\n      z: 3\n    - 2\n    - 3\ne: f\n";
    let (took, diff) = check("t.yaml", text, Schema::Kube);
    assert!(took && diff.is_none(), "{diff:?}");
    let stream = fluxgate_yaml::parse_stream("t.yaml", text, Schema::Kube);
    let doc = &stream.docs[0];
    exact(doc);
    exact(&doc.clone());
}

/// Anchored scalars and their aliases are read directly, each alias a copy of its anchor's
/// node (place included); anchored collections, unknown or later anchors, names of other
/// characters and aliases with more on their line are the general reader's.
#[test]
fn scalar_anchors_and_aliases_are_read_directly() {
    assert_taken(&[
        ("a: &x foo\nb: *x\n", true),
        ("a: &x foo\nb: *x   # c\n", true),
        ("c:\n  - &y \"bar\"\n  - *y\nd: &z 12\ne: *z\n", true),
        (
            "metadata:\n  name: &app cilium\nspec:\n  l:\n    n: *app\n  x: &app other\n  y: *app\n",
            true,
        ),
        ("a: &x-1.b_c foo # c\nb: *x-1.b_c\n", true),
        ("a: &x foo\n---\nb: *x\n", false),
        ("a: &x\n  b: 1\nc: *x\n", false),
        ("a: &x [1, 2]\nc: *x\n", false),
        ("a: &x |\n  y\nc: *x\n", false),
        ("a: *x\nb: &x foo\n", false),
        ("a: &x foo\nb: *x\n  c\n", false),
        ("a: &x foo\nb: *x y\n", false),
        ("a: &x:y foo\nb: *x:y\n", false),
        ("a: &x &y foo\n", false),
        ("a: &x\n", false),
        ("a: &x foo\nb: [*x]\n", false),
        ("- &x foo\n- *x\n", true),
    ]);
}

/// Aliases that copy more than the general reader's byte bound (an alias bomb, here 65 copies
/// of a 1 MiB string) are that reader's to report: the direct reader gives the text up
/// instead of copying them.
#[test]
fn alias_bombs_are_left_to_the_general_reader() {
    let mut text = format!("a: &x {}\n", "y".repeat(1 << 20));
    for i in 0..65 {
        text.push_str(&format!("b{i}: *x\n"));
    }
    assert_taken(&[(&text, false)]);
    let stream = fluxgate_yaml::parse_stream("t.yaml", &text, Schema::Kube);
    assert!(
        stream
            .diagnostics
            .iter()
            .any(|d| d.message.contains("alias bomb")),
        "{:?}",
        stream.diagnostics
    );
}
