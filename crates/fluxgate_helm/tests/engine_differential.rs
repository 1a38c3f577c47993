//! The template engine and the functions alone against Go: each program below becomes the
//! only template of a small chart (`v: {{ include "p" . | toJson }}`, so that any output is
//! valid YAML), rendered by helm v4.3.2 (built by the test, cached under `target/oracles/`)
//! and by fluxgate; output, or the error text, must be identical. The chart's values hold
//! the data programs read. Needs Go; skips visibly without it, fails under `CI=true`.

use std::path::Path;
use std::process::Command;

use fluxgate_helm::Request;

const TEST: &str = "engine_matches_go";

const VALUES: &str = r#"
s: hello
empty: ""
i: 3
f: 1.5
big: 1000000
neg: -2
t: true
n: null
list: [a, b, c]
nums: [3, 1, 2]
map: {b: 2, a: 1, c: {d: 4}}
long: "a long string that goes on and on past eighty columns so that the YAML emitter has to fold it somewhere"
multi: "line one\nline two\n"
special: "a: b # c"
quoted: "yes"
number_string: "123"
"#;

/// Programs: every action, structure and many functions, with Go's edge cases.
const PROGRAMS: &[&str] = &[
    "{{ .Values.s }} {{ .Values.i }} {{ .Values.f }} {{ .Values.big }} {{ .Values.neg }} {{ .Values.t }}",
    "[{{ .Values.n }}] [{{ .Values.missing }}] {{ .Values.list }} {{ .Values.map }}",
    "{{ printf \"%d %5.2f %q %x %v %s %t %03d %-4s| %e %g\" 7 3.14159 \"q\" 255 .Values.list \"s\" true 5 \"ab\" 1234.5678 0.000012 }}",
    "{{ printf \"%d\" \"x\" }} {{ printf \"%s\" }} {{ printf \"%s\" 1 2 }} {{ printf \"%v\" nil }} {{ printf \"%T %T %T\" 1 1.0 .Values.map }}",
    "{{ print 1 2 \"a\" \"b\" 3 nil }}|{{ println \"x\" 1 }}|",
    "{{ 1e3 }} {{ 0x1F }} {{ 'a' }} {{ 1.0 }} {{ -0.5 }} {{ 1e21 }} {{ 123456789.0 }} {{ 0.0001 }} {{ 0.00001 }}",
    "{{ if .Values.n }}a{{ else if .Values.empty }}b{{ else if .Values.i }}c{{ end }}",
    "{{ with .Values.missing }}x{{ else with .Values.s }}{{ . }}{{ end }}",
    "{{ range $k, $v := .Values.map }}{{ $k }}={{ $v }};{{ end }}",
    "{{ range $i, $e := .Values.list }}{{ $i }}{{ $e }}{{ else }}none{{ end }}{{ range .Values.missing }}x{{ else }}none{{ end }}",
    "{{ range 4 }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ if eq . 3 }}{{ break }}{{ end }}{{ . }}{{ end }}",
    "{{ $x := 1 }}{{ range .Values.list }}{{ $x = . }}{{ end }}{{ $x }}",
    "a  {{- \" b \" -}}  c {{/* comment */}} d {{- /* trimmed */ -}} e",
    "{{ `raw\\n` }} {{ \"esc\\t\\\"\" }}",
    "{{ and 1 0 }} {{ and 1 2 }} {{ or 0 \"\" }} {{ or 0 \"x\" }} {{ not 0 }} {{ and .Values.n (fail \"lazy\") }}",
    "{{ eq 1 1 }} {{ eq \"a\" \"b\" \"a\" }} {{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" \"a\" }} {{ ge 1 2 }} {{ eq .Values.n nil }} {{ eq .Values.missing \"x\" }}",
    "{{ eq .Values.i 3 }}",
    "{{ lt .Values.n 1 }}",
    "{{ eq .Values.map .Values.map }}",
    "{{ index .Values.list 1 }} {{ index .Values.map \"b\" }} {{ index .Values.map \"zz\" }} {{ len .Values.list }} {{ len .Values.s }} {{ slice .Values.s 1 3 }}",
    "{{ index .Values.list 5 }}",
    "{{ index .Values.n 0 }}",
    "{{ len 3 }}",
    "{{ .Values.missing.deeper }}",
    "{{ .Values.s.field }}",
    "{{ $m := .Values.missing }}{{ $m.x }}",
    "{{ nope }}",
    "{{ .Values.s | upper | quote }} {{ \"x\" | printf \"%s-%s\" \"y\" }}",
    "{{ define \"inner\" }}<{{ . }}>{{ end }}{{ template \"inner\" .Values.s }}{{ template \"inner\" }}",
    "{{ block \"blk\" .Values.i }}[{{ . }}]{{ end }}",
    "{{ template \"undefined\" }}",
    "{{ include \"undefined\" . }}",
    "{{ tpl \"{{ .Values.s }}-{{ .Release.Name }}\" . }}",
    "{{ tpl \"{{ .nope.x }}\" . }}",
    "{{ required \"need it\" .Values.missing }}",
    "{{ required \"need it\" .Values.s }}",
    "{{ fail \"boom\" }}",
    "{{ toYaml .Values }}",
    "{{ toYaml .Values.list }}|{{ toYaml .Values.n }}|{{ toYaml (dict) }}|{{ toYaml (list) }}|{{ toYaml 1.5 }}|{{ toYaml \"s\" }}",
    "{{ toJson .Values }}|{{ toPrettyJson .Values.map }}|{{ toRawJson (dict \"a\" \"<&>\") }}",
    // Every escape encoding/json writes (short ones for \b and \f since Go 1.22).
    "{{ toJson (list \"q\\\"b\\\\s\\b\\f\\n\\r\\t\\x01\\u2028\\u2029<&>é\") }}|{{ toRawJson \"\\b<&>\" }}",
    "{{ (fromYaml \"a: 1\\nb: [x, y]\\nc: yes\").c }} {{ fromYaml \"a: 1\" }} {{ fromYaml \"- x\" }} {{ fromYamlArray \"- 1\\n- b\" }} {{ fromYaml \"a: [\" }}",
    // Characters YAML cannot carry (C0, DEL, C1 but NEL, U+FFFE): go-yaml's reader refuses
    // them; tab and U+00A0 on are read (NEL is, but go-yaml folds it as a line break).
    "{{ fromYaml \"a: \\\"x\\x01\\\"\" }}|{{ fromYaml \"a: x\\x7fy\" }}|{{ fromYaml \"a: x\\u0080\" }}|{{ fromYaml \"a: x\\ufffe\" }}|{{ fromYaml \"a: \\\"x\\ty\\u00a0\\U0001F600\\\"\" }}",
    "{{ (fromJson \"{\\\"a\\\": 1.5}\").a }} {{ fromJsonArray \"[1, \\\"x\\\"]\" }} {{ fromJson \"{\" }}",
    "{{ toToml (dict \"a\" 1 \"b\" \"s\" \"t\" (dict \"c\" true)) }}",
    "{{ $d := dict \"a\" 1 }}{{ $e := $d }}{{ $_ := set $e \"b\" 2 }}{{ $d }} {{ unset $d \"a\" }} {{ $e }}",
    "{{ merge (dict \"a\" 1 \"b\" \"\" \"n\" (dict \"x\" 1)) (dict \"a\" 2 \"b\" \"B\" \"n\" (dict \"y\" 2)) }}",
    "{{ mergeOverwrite (dict \"a\" 1 \"b\" (list 1) \"n\" (dict \"x\" 1)) (dict \"a\" 0 \"b\" (list 2) \"n\" (dict \"x\" 3)) }}",
    "{{ $a := dict \"n\" (dict \"x\" 1) }}{{ $b := deepCopy $a }}{{ $_ := set $b.n \"x\" 2 }}{{ $a }} {{ $b }}",
    "{{ dig \"c\" \"d\" \"dflt\" .Values.map }} {{ dig \"c\" \"z\" \"dflt\" .Values.map }} {{ dig \"zz\" \"dflt\" .Values.map }}",
    "{{ hasKey .Values.map \"a\" }} {{ get .Values.map \"a\" }} {{ get .Values.map \"zz\" }} {{ keys .Values.map | sortAlpha }} {{ pick .Values.map \"a\" }} {{ omit .Values.map \"a\" }} {{ pluck \"a\" .Values.map (dict \"a\" 9) }}",
    "{{ default \"d\" .Values.empty }} {{ default \"d\" .Values.s }} {{ default \"d\" .Values.missing }} {{ default 5 0 }} {{ empty .Values.list }} {{ coalesce .Values.n .Values.empty \"c\" }} {{ ternary \"y\" \"n\" .Values.t }}",
    "{{ list 1 \"a\" nil }} {{ first .Values.list }} {{ last .Values.list }} {{ rest .Values.list }} {{ initial .Values.list }} {{ append .Values.list \"d\" }} {{ prepend .Values.list \"z\" }} {{ reverse .Values.list }} {{ uniq (list 1 1 2) }} {{ without .Values.list \"b\" }} {{ has \"b\" .Values.list }} {{ compact (list 1 \"\" nil 2) }} {{ concat (list 1) (list 2 3) }} {{ sortAlpha .Values.nums }}",
    "{{ typeOf 1 }} {{ typeOf .Values.i }} {{ typeOf (add 1 2) }} {{ typeOf .Values.s }} {{ typeOf .Values.map }} {{ typeOf .Values.list }} {{ typeOf nil }} {{ kindOf .Values.list }} {{ kindIs \"map\" .Values.map }} {{ kindIs \"int\" 1 }} {{ typeIs \"float64\" .Values.f }}",
    "{{ add 1 2.7 }} {{ sub 5 7 }} {{ mul 2 3 4 }} {{ div 7 2 }} {{ mod 7 3 }} {{ max 1 9 3 }} {{ min 4 2 }} {{ add1 .Values.f }} {{ int \"42\" }} {{ int .Values.f }} {{ int64 \"0x10\" }} {{ float64 \"2.5\" }} {{ atoi \"12\" }} {{ floor 1.7 }} {{ ceil 1.2 }} {{ round 2.555 2 }} {{ addf 1 2.5 }} {{ divf 1 3 }}",
    "{{ div 1 0 }}",
    "{{ upper .Values.s }} {{ lower \"ABC\" }} {{ title \"hello world\" }} {{ untitle \"Hello World\" }} {{ trim \"  x  \" }} {{ trimAll \"-\" \"--x--\" }} {{ trimPrefix \"he\" .Values.s }} {{ trimSuffix \"lo\" .Values.s }} {{ nospace \"a b c\" }} {{ trunc 3 .Values.s }} {{ trunc -2 .Values.s }} {{ abbrev 8 .Values.long }} {{ repeat 3 \"ab\" }} {{ substr 1 3 .Values.s }} {{ contains \"ell\" .Values.s }} {{ hasPrefix \"he\" .Values.s }} {{ hasSuffix \"x\" .Values.s }} {{ replace \"l\" \"L\" .Values.s }} {{ cat \"a\" nil \"b\" 1 }} {{ squote .Values.s }} {{ quote .Values.n .Values.i \"a\\\"b\" }}",
    "{{ indent 2 .Values.multi }}|{{ nindent 4 \"a\\nb\" }}|{{ snakecase \"FooBarHTTP\" }} {{ camelcase \"foo_bar\" }} {{ kebabcase \"FooBar\" }} {{ initials \"hello world\" }} {{ wrap 10 .Values.long }} {{ plural \"one\" \"many\" 2 }}",
    "{{ join \",\" .Values.list }} {{ join \"-\" (list 1 nil \"a\") }} {{ split \".\" \"a.b.c\" }} {{ splitList \",\" \"a,b\" }} {{ splitn \".\" 2 \"a.b.c\" }} {{ toString 1.5 }} {{ toStrings (list 1 \"a\") }}",
    "{{ b64enc \"hello\" }} {{ b64dec \"aGVsbG8=\" }} {{ b32enc \"hi\" }} {{ sha256sum \"x\" }} {{ sha1sum \"x\" }} {{ adler32sum \"x\" }} {{ sha512sum \"x\" | trunc 16 }}",
    "{{ regexMatch \"^h.l\" .Values.s }} {{ regexFind \"l+\" .Values.s }} {{ regexFindAll \"[a-c]\" \"abcabc\" 2 }} {{ regexReplaceAll \"l(l?)\" .Values.s \"[$1]\" }} {{ regexReplaceAllLiteral \"l\" .Values.s \"$1\" }} {{ regexSplit \"b\" \"abcbd\" -1 }} {{ regexQuoteMeta \"a.b*\" }}",
    "{{ semverCompare \">=1.21.0-0\" .Capabilities.KubeVersion.Version }} {{ semverCompare \"~1.2\" \"1.2.9\" }} {{ semverCompare \"^0.2.3\" \"0.3.0\" }} {{ (semver \"v1.30.2\").Minor }} {{ semverCompare \">=1.0\" \"1.2.0-beta\" }}",
    "{{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }} {{ .Capabilities.APIVersions.Has \"apps/v1\" }} {{ .Capabilities.APIVersions.Has \"apps/v1/Deployment\" }} {{ .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1\" }}",
    "{{ .Release.Name }} {{ .Release.Namespace }} {{ .Release.IsInstall }} {{ .Release.IsUpgrade }} {{ .Release.Revision }} {{ .Release.Service }} {{ .Chart.Name }} {{ .Chart.Version }} {{ .Chart.AppVersion }} {{ .Template.Name }} {{ .Template.BasePath }}",
    "{{ .Files.Get \"files/a.txt\" }}|{{ .Files.Get \"none\" }}|{{ .Files.Lines \"files/a.txt\" }}|{{ range $p, $_ := .Files.Glob \"files/*\" }}{{ $p }};{{ end }}|{{ (.Files.Glob \"files/*.txt\").AsConfig }}|{{ (.Files.Glob \"files/*.txt\").AsSecrets }}",
    "{{ lookup \"v1\" \"Secret\" \"ns\" \"name\" }} {{ empty (lookup \"v1\" \"Secret\" \"ns\" \"name\") }}",
    "{{ .Values.AsMap.s }} {{ toYaml (.Values.Table \"map.c\") }}",
    "{{ urlquery \"a b&c\" }} {{ html \"<a href='x'>\" }} {{ js \"it's <x>\" }}",
    "{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}",
    "{{ (list 1 2 3) | len }} {{ (dict \"a\" (dict \"b\" 1)).a.b }} {{ ((dict \"a\" 1)).a }}",
    "{{ toYaml (dict \"s\" .Values.long \"m\" .Values.multi \"sp\" .Values.special \"q\" .Values.quoted \"n\" .Values.number_string \"e\" \"\" \"t\" \"true\" \"z\" \"0.5\" \"k\" \"~\" \"at\" \"@x\" \"star\" \"*x\" \"dash\" \"- x\" \"colon\" \"a:b\" \"url\" \"http://x:1/y\") }}",
    "{{ toYaml (dict \"b\" 1 \"a10\" 1 \"a9\" 1 \"A\" 1 \"_x\" 1 \"a-b\" 1 \"ab\" 1) }}",
    "{{ toYaml (list (dict \"a\" (list 1 (dict \"b\" nil))) (list) (dict)) }}",
    "{{ 1 | printf \"%d\" | quote }} {{ \"a\" | eq \"a\" }} {{ .Values.list | join \"+\" }}",
    "{{ ternary 1 2 \"x\" }}",
    "{{ nindent 2 .Values.i }}",
    "{{ hasKey .Values.n \"a\" }}",
    "{{ until 3 }} {{ untilStep 0 10 4 }} {{ seq 3 }} {{ seq 2 5 }}",
    "{{ uuidv4 | len }} {{ randAlphaNum 5 | len }}",
];

/// Writes the chart for `program` under `dir`.
fn write_chart(dir: &Path, program: &str) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("templates")).expect("temp chart");
    std::fs::create_dir_all(dir.join("files")).expect("temp chart");
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: prog\nversion: 0.1.0\nappVersion: \"1.0\"\n",
    )
    .expect("chart");
    std::fs::write(dir.join("values.yaml"), VALUES).expect("values");
    std::fs::write(dir.join("files/a.txt"), "one\ntwo\n").expect("file");
    std::fs::write(dir.join("files/b.conf"), "k=v").expect("file");
    std::fs::write(
        dir.join("templates/_p.tpl"),
        format!("{{{{- define \"p\" -}}}}{program}{{{{- end -}}}}"),
    )
    .expect("tpl");
    std::fs::write(
        dir.join("templates/out.yaml"),
        "v: {{ include \"p\" . | toJson }}\n",
    )
    .expect("tpl");
}

/// Renders each program with helm and with fluxgate; the programs that differ, described.
fn differing(helm: &Path, root: &Path, programs: &[String]) -> Vec<String> {
    let mut differ = Vec::new();
    for (i, program) in programs.iter().enumerate() {
        let dir = root.join(format!("p{i}"));
        write_chart(&dir, program);
        let out = Command::new(helm)
            .args([
                "template",
                "rel",
                &dir.display().to_string(),
                "--namespace",
                "ns",
                "--kube-version",
                "1.30.0",
            ])
            .output()
            .expect("helm runs");
        let req = Request {
            release_name: "rel".into(),
            namespace: "ns".into(),
            chart: dir.clone(),
            kube_version: Some("1.30.0".into()),
            ..Request::default()
        };
        let ours = fluxgate_helm::run(&req);
        let (want, got) = match (out.status.success(), &ours) {
            (true, Ok(text)) => (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                text.clone(),
            ),
            (false, Err(e)) => (fluxgate_testkit::helm_error(&out.stderr), e.to_string()),
            (true, Err(e)) => (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                format!("error: {e}"),
            ),
            (false, Ok(text)) => (
                format!("error: {}", fluxgate_testkit::helm_error(&out.stderr)),
                text.clone(),
            ),
        };
        if want != got {
            differ.push(format!(
                "program {i}: {program}\n  helm: {want}\n  ours: {got}"
            ));
        }
    }
    differ
}

#[test]
fn engine_matches_go() {
    let Some(helm) =
        fluxgate_testkit::go_install_oracle(TEST, "helm", "helm.sh/helm/v4/cmd/helm@v4.3.2")
    else {
        return;
    };
    let root = fluxgate_testkit::workspace_root()
        .join("target")
        .join("tmp")
        .join("engine-differential");
    let programs: Vec<String> = PROGRAMS.iter().map(|p| (*p).to_string()).collect();
    let differ = differing(&helm, &root, &programs);
    for d in &differ {
        eprintln!("{TEST}: {d}");
    }
    eprintln!(
        "{TEST}: {}/{} programs identical",
        PROGRAMS.len() - differ.len(),
        PROGRAMS.len()
    );
    assert!(
        differ.is_empty(),
        "{} of {} programs differ from Go",
        differ.len(),
        PROGRAMS.len()
    );
}

const GENERATED: &str = "engine_matches_go_on_generated_programs";

/// Operands of the generated programs: every kind of value the executor meets.
const OPERANDS: &[&str] = &[
    ".Values.s",
    ".Values.empty",
    ".Values.i",
    ".Values.f",
    ".Values.big",
    ".Values.neg",
    ".Values.t",
    ".Values.n",
    ".Values.missing",
    ".Values.list",
    ".Values.map",
    ".Values.number_string",
    "1",
    "-2",
    "1.5",
    "\"x\"",
    "\"\"",
    "true",
    "nil",
    "(list 1 \"a\")",
    "(list)",
    "(dict \"k\" 1)",
    "(dict)",
    "(int64 3)",
    "(float64 2)",
];

/// One-argument functions (`F X`); `keys` and `values` are left out (Go's map order).
const UNARY: &[&str] = &[
    "print",
    "len",
    "not",
    "toString",
    "toJson",
    "toYaml",
    "quote",
    "squote",
    "upper",
    "trim",
    "empty",
    "kindOf",
    "typeOf",
    "int",
    "int64",
    "float64",
    "first",
    "last",
    "toStrings",
    "b64enc",
    "nindent 2",
    "indent 1",
    "title",
    "default \"d\"",
    "html",
    "js",
    "urlquery",
    "uniq",
    "compact",
    "atoi",
    "toDecimal",
    "sha256sum",
    "trunc 2",
    "add1",
    "ceil",
    "round",
    "splitList \",\"",
    "semver",
    "fromYaml",
    "hasKey",
    "len",
    "deepCopy",
    "required \"r\"",
    "ternary 1 2",
    "join \"-\"",
    "sortAlpha",
    "reverse",
    "rest",
    "initial",
    "dig \"k\" \"d\"",
    "toPrettyJson",
    "index",
    "slice",
    "coalesce",
    "list",
    "dict",
];

/// Two-argument forms (`F X Y`).
const BINARY: &[&str] = &[
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "and",
    "or",
    "add",
    "sub",
    "mul",
    "div",
    "mod",
    "max",
    "min",
    "index",
    "hasKey",
    "has",
    "contains",
    "hasPrefix",
    "default",
    "coalesce",
    "concat",
    "append",
    "merge",
    "cat",
    "printf \"%v-%v\"",
    "ternary \"a\"",
    "repeat",
    "without",
];

/// Verbs of `printf` with one operand.
const VERBS: &[&str] = &[
    "%v", "%+v", "%#v", "%d", "%s", "%q", "%x", "%X", "%t", "%f", "%.2f", "%e", "%g", "%T", "%5v|",
    "%-5v|", "%05d", "%c", "%o", "%b", "%U", "%+d", "%#x", "%08.3f", "%-8.2v|", "%#q", "% x",
    "%6.2e", "%+q",
];

/// The generated programs: every unary function, `printf` verb (with flags) and action
/// (with field chains on pipelines, piped finals, index, and/or/not) over every
/// operand; binary forms over a deterministic sample of operand pairs.
fn generated_programs() -> Vec<String> {
    let mut out = Vec::new();
    for f in UNARY {
        for x in OPERANDS {
            out.push(format!("{{{{ {f} {x} }}}}"));
        }
    }
    for v in VERBS {
        for x in OPERANDS {
            out.push(format!("{{{{ printf \"{v}\" {x} }}}}"));
        }
    }
    for x in OPERANDS {
        out.push(format!("{{{{ if {x} }}}}T{{{{ else }}}}F{{{{ end }}}}"));
        out.push(format!(
            "{{{{ with {x} }}}}[{{{{ . }}}}]{{{{ else }}}}E{{{{ end }}}}"
        ));
        out.push(format!(
            "{{{{ range $k, $v := {x} }}}}{{{{ $k }}}}={{{{ $v }}}};{{{{ else }}}}E{{{{ end }}}}"
        ));
        out.push(format!("{{{{ {x} | toJson | fromJson }}}}"));
        out.push(format!(
            "{{{{ $a := {x} }}}}{{{{ $a }}}}|{{{{ $a | default 7 }}}}"
        ));
        out.push(format!(
            "{{{{- /* c */ -}}}}\n  {{{{- {x} -}}}}  \n{{{{- \"end\" }}}}"
        ));
        out.push(format!("{{{{ ({x}).k }}}}"));
        out.push(format!("{{{{ {x} | upper }}}}"));
        out.push(format!("{{{{ index {x} 0 }}}}|{{{{ index {x} \"k\" }}}}"));
        out.push(format!(
            "{{{{ with $v := {x} }}}}{{{{ $v }}}}{{{{ else }}}}E{{{{ end }}}}"
        ));
        out.push(format!("{{{{ range {x} }}}}[{{{{ . }}}}]{{{{ end }}}}"));
        out.push(format!(
            "{{{{ and {x} \"y\" }}}}|{{{{ or {x} \"y\" }}}}|{{{{ not {x} }}}}"
        ));
        out.push(format!("{{{{ printf \"%v %v\" {x} }}}}"));
        out.push(format!("{{{{ printf \"%[2]v %[1]v %v\" {x} 1 }}}}"));
        out.push(format!("{{{{ printf \"%*d|%-*d|\" {x} 7 {x} 8 }}}}"));
        out.push(format!("{{{{ printf \"%.*f\" {x} 1.5 }}}}"));
    }
    // A fixed linear congruential sequence picks three operand pairs per binary form.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(seed >> 33).unwrap_or(0) % n
    };
    for f in BINARY {
        for _ in 0..8 {
            let (x, y) = (
                OPERANDS[next(OPERANDS.len())],
                OPERANDS[next(OPERANDS.len())],
            );
            out.push(format!("{{{{ {f} {x} {y} }}}}"));
        }
    }
    out
}

/// The identical fraction measured when this floor was set; it may only rise.
const GENERATED_FLOOR: f64 = 1.0;

#[test]
fn engine_matches_go_on_generated_programs() {
    let Some(helm) =
        fluxgate_testkit::go_install_oracle(GENERATED, "helm", "helm.sh/helm/v4/cmd/helm@v4.3.2")
    else {
        return;
    };
    let root = fluxgate_testkit::workspace_root()
        .join("target")
        .join("tmp")
        .join("engine-generated");
    let programs = generated_programs();
    let differ = differing(&helm, &root, &programs);
    for d in &differ {
        eprintln!("{GENERATED}: {d}");
    }
    let same = programs.len() - differ.len();
    #[allow(clippy::cast_precision_loss)] // program counts are small
    let fraction = same as f64 / programs.len().max(1) as f64;
    eprintln!(
        "{GENERATED}: {same}/{} generated programs identical ({:.1}%)",
        programs.len(),
        fraction * 100.0
    );
    assert!(
        fraction >= GENERATED_FLOOR,
        "identical fraction {fraction:.3} fell below the floor {GENERATED_FLOOR}"
    );
}
