//! values.schema.json validation against helm v4.3.2's (the oracle built by fluxgate_testkit,
//! cached under `target/oracles/`): the small charts of `tests/schema_charts/` (a passing
//! schema and failing values of every kind: wrong type, missing required,
//! additionalProperties, enum, bounds, formats, `$ref`s, `allOf`/`anyOf`/`oneOf`,
//! `unevaluatedProperties`/`unevaluatedItems` through every in-place applicator, drafts 4 to
//! 2020-12, subcharts) and the corpus charts that ship a schema, each with values that pass
//! and values that fail. Output or error text must be identical; where helm's error order
//! depends on Go's map order (members of one object), helm is run again until one of its
//! orders is ours, and a case whose lines agree but never the order is counted apart.
//! Skips visibly without the oracle or corpus; under `CI=true` it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use fluxgate_helm::Request;

const TEST: &str = "schema_validation_matches_helm";

/// How many more times helm runs when its first text differs from ours.
const HELM_RERUNS: usize = 30;

/// `(chart folder, flags)`: the fixtures under tests/schema_charts.
const FIXTURE_CASES: &[(&str, &[&str])] = &[
    ("basic", &[]),
    ("basic", &["--set", "replicas=three"]),
    ("basic", &["--set", "replicas=0"]),
    ("basic", &["--set", "replicas=2000"]),
    ("basic", &["--set", "name="]),
    ("basic", &["--set", "name=ABC"]),
    ("basic", &["--set", "mode=c"]),
    ("basic", &["--set", "mode=3"]),
    ("basic", &["--set", "foo=1"]),
    ("basic", &["--set", "foo=1,bar=2"]),
    ("basic", &["--set", "image.pullPolicy=Sometimes"]),
    ("basic", &["--set", "image.tag=2"]),
    ("basic", &["--set", "image.tag=2,image.pullPolicy=x"]),
    ("basic", &["--set", "image.repository=null"]),
    ("basic", &["--set", "image=null"]),
    ("basic", &["--set", "tags={a,a}"]),
    ("basic", &["--set", "tags={a,b,c,d}"]),
    ("basic", &["--set", "tags=null"]),
    ("basic", &["--set", "host=1.2.3"]),
    ("basic", &["--set", "host=1.2.3.04"]),
    ("basic", &["--set", "host=10.0.0.1"]),
    ("basic", &["--set", "port=65536"]),
    ("basic", &["--set", "port=7"]),
    ("basic", &["--set", "ratio=0"]),
    ("basic", &["--set", "ratio=0.5"]),
    ("basic", &["--set", "labels.a=1"]),
    ("basic", &["--set", "labels.a=x,labels.b=y,labels.c=z"]),
    ("basic", &["--set-json", "replicas=1.5"]),
    ("basic", &["--set-json", "replicas=1000000"]),
    (
        "basic",
        &["--set", "name=web", "--set-string", "replicas=1"],
    ),
    ("basic", &["-f", "values-bad.yaml"]),
    ("parent", &[]),
    ("parent", &["--set", "enabled=1"]),
    ("parent", &["--set", "alpha.size=9"]),
    ("parent", &["--set", "enabled=no,alpha.size=9,beta.mode=z"]),
    ("parent", &["--set", "beta.level=0"]),
    ("parent", &["--set", "beta.level=0.1"]),
    ("parent", &["--set", "gamma.enabled=true"]),
    ("parent", &["--set", "alpha=null"]),
    ("parent", &["--set", "beta.mode=null,alpha.name=1"]),
    ("parent", &["--set", "global.region=mars"]),
    (
        "parent",
        &["--skip-schema-validation", "--set", "enabled=1"],
    ),
    ("combinators", &[]),
    ("combinators", &["--set", "port=http"]),
    ("combinators", &["--set", "port=-1"]),
    ("combinators", &["--set", "port=true"]),
    ("combinators", &["--set", "storage.type=nfs"]),
    ("combinators", &["--set", "storage.type=pvc"]),
    (
        "combinators",
        &[
            "--set",
            "storage.type=pvc,storage.size=1Gi,storage.server=x",
        ],
    ),
    ("combinators", &["--set", "storage=null"]),
    ("combinators", &["--set", "env[0].name=A"]),
    ("combinators", &["--set", "env[0].name=A,env[0].value=1"]),
    ("combinators", &["--set", "env[0].value=x"]),
    ("combinators", &["--set", "mode=debug,level=1"]),
    ("combinators", &["--set", "mode=debug,level=9"]),
    ("combinators", &["--set", "mode=prod,level=9"]),
    ("combinators", &["--set", "secret=x"]),
    ("combinators", &["--set", "secret=x,secretRef=y"]),
    ("combinators", &["--set", "nums={1,2,x}"]),
    ("combinators", &["--set", "pair={a}"]),
    ("combinators", &["--set", "pair={a,1,true}"]),
    ("combinators", &["--set", "pair={1,1}"]),
    ("combinators", &["--set", "forbidden=1"]),
    ("combinators", &["--set", "tuple={1,x,3}"]),
    ("combinators", &["--set", "contacts={a,b}"]),
    ("combinators", &["--set", "contacts={a@b.c,x}"]),
    ("combinators", &["--set", "name=x,name2=y"]),
    ("draft4", &[]),
    ("draft4", &["--set", "size=10"]),
    ("draft4", &["--set", "size=0"]),
    ("draft4", &["--set", "ref.x=1"]),
    ("draft4", &["--set", "ref.x=s,ref.y=1"]),
    ("draft4", &["--set", "addr=host_name"]),
    ("draft2019", &[]),
    ("draft2019", &["--set", "a=1"]),
    ("draft2019", &["--set", "a=1,b=2"]),
    ("draft2019", &["--set", "list={x,1,y}"]),
    ("draft2019", &["--set", "list={x,y,z,w}"]),
    ("draft2019", &["--set", "host=not_a_host"]),
    ("draft2019", &["--set", "ref.n=-1"]),
    ("draft2019", &["--set", "ref.n=x,ref.m=2"]),
    ("bad-ref", &[]),
    ("bad-anchor", &[]),
    ("urn-ref", &[]),
    ("urn-ref", &["--set", "x=1"]),
    ("with-id", &[]),
    ("with-id", &["--set", "port=x"]),
    ("unevaluated", &[]),
    ("unevaluated", &["--set", "foo=1"]),
    ("unevaluated", &["--set", "x-a=s"]),
    ("unevaluated", &["--set", "x-a=1,y=2"]),
    ("unevaluated", &["--set", "extra=1"]),
    ("unevaluated", &["--set", "extra=s"]),
    ("unevaluated", &["--set", "alpha=1,beta=2"]),
    ("unevaluated", &["--set", "forbidden=1"]),
    ("unevaluated", &["--set", "kind=db,dsn=x"]),
    ("unevaluated", &["--set", "kind=web,url=u"]),
    ("unevaluated", &["--set", "kind=web,dsn=x"]),
    ("unevaluated", &["--set", "dep=1,depx=2"]),
    ("unevaluated", &["--set", "depx=2"]),
    ("unevaluated", &["--set", "server.extra=1"]),
    ("unevaluated", &["--set", "server.socket=s"]),
    (
        "unevaluated",
        &["--set", "server.port=null,server.socket=s"],
    ),
    ("unevaluated", &["--set", "labels.long=abcd,labels.n=1"]),
    ("unevaluated", &["--set", "open.x=1"]),
    ("unevaluated", &["--set", "list={a,b,c}"]),
    ("unevaluated", &["--set", "ports={1,2}"]),
    ("unevaluated", &["--set", "ports={1,true}"]),
    ("unevaluated", &["--set", "ports={a,b}"]),
    ("unevaluated", &["--set", "nested.b=1"]),
    ("unevaluated", &["--set", "nested.b=x"]),
    ("unevaluated", &["--set", "nested.d=1,nested.c=2"]),
    ("unevaluated", &["--set", "tuple={1,2,3}"]),
    ("unevaluated", &["--set", "tuple={1,2,x}"]),
    ("unevaluated", &["--set", "tuple={1,2,true}"]),
    ("unevaluated", &["--set", "tuple={a,b}"]),
    ("unevaluated2019", &[]),
    ("unevaluated2019", &["--set", "foo=1"]),
    ("unevaluated2019", &["--set", "list={a,b}"]),
    ("unevaluated2019", &["--set", "all={a,1,x}"]),
    ("unevaluated2019", &["--set", "tags={abcd}"]),
    ("unevaluated2019", &["--set", "obj.c=1"]),
    ("unevaluated2019", &["--set", "obj.a=null"]),
];

/// Values for the corpus charts that ship a schema: `(chart folder prefix, flags)`.
const CORPUS_CASES: &[(&str, &[&str])] = &[
    ("cert-manager", &["--set", "replicaCount=two"]),
    ("cert-manager", &["--set", "unknownKey=1"]),
    (
        "cert-manager",
        &["--set", "webhook.timeoutSeconds=x,cainjector.enabled=maybe"],
    ),
    (
        "cert-manager",
        &["--set", "global.leaderElection.namespace=1"],
    ),
    ("cilium", &["--set", "MTU=large"]),
    (
        "cilium",
        &["--set", "hubble.tls.auto.method=cronJob,k8sServicePort=x"],
    ),
    (
        "cilium",
        &[
            "--set",
            "hubble.tls.auto.method=cronJob,kubeProxyReplacement=maybe",
        ],
    ),
    (
        "cilium",
        &[
            "--set",
            "hubble.tls.auto.method=cronJob,operator.replicas=two,bpf.masquerade=1",
        ],
    ),
    ("external-dns", &["--set", "provider.name=1"]),
    ("external-dns", &["--set", "sources={service,service}"]),
    ("external-dns", &["--set", "policy=delete-all"]),
    ("external-dns", &["--set", "replicaCount=x,interval=1"]),
    ("external-secrets", &["--set", "replicaCount=x"]),
    (
        "external-secrets",
        &["--set", "installCRDs=1,webhook.create=x"],
    ),
    (
        "external-secrets",
        &[
            "--set",
            "bitwarden-sdk-server.enabled=true,bitwarden-sdk-server.image.tag=1",
        ],
    ),
];

fn request(chart: &Path, flags: &[String]) -> Request {
    let mut req = Request {
        release_name: "rel".into(),
        chart: chart.to_path_buf(),
        namespace: "ns".into(),
        kube_version: Some("1.30.0".into()),
        ..Request::default()
    };
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        match f.as_str() {
            "--skip-schema-validation" => req.skip_schema_validation = true,
            "--set" => req.set.extend(it.next().cloned()),
            "--set-string" => req.set_string.extend(it.next().cloned()),
            "--set-json" => req.set_json.extend(it.next().cloned()),
            "-f" => req.values_files.extend(it.next().map(|p| chart.join(p))),
            other => panic!("unknown flag {other}"),
        }
    }
    req
}

fn helm_args(chart: &Path, flags: &[String]) -> Vec<String> {
    let mut args = vec![
        "template".to_string(),
        "rel".into(),
        chart.display().to_string(),
        "--namespace".into(),
        "ns".into(),
        "--kube-version".into(),
        "1.30.0".into(),
    ];
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        args.push(f.clone());
        if f == "-f"
            && let Some(p) = it.next()
        {
            args.push(chart.join(p).display().to_string());
        }
    }
    args
}

fn sorted_lines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().collect();
    v.sort_unstable();
    v
}

#[derive(PartialEq)]
enum Agreement {
    Identical,
    /// The same lines, in an order helm did not print in its runs (Go's map order).
    SameLines,
    Differs(String),
}

fn compare(helm: &Path, req: &Request, args: &[String]) -> Agreement {
    let ours = fluxgate_helm::run(req);
    let ours_text = match &ours {
        Ok(t) => t.clone(),
        Err(e) => e.to_string().trim_end().to_string(),
    };
    let mut same_lines = false;
    let mut last = String::new();
    for _ in 0..=HELM_RERUNS {
        let out = Command::new(helm).args(args).output().expect("helm runs");
        let (theirs, ok) = if out.status.success() {
            (String::from_utf8_lossy(&out.stdout).into_owned(), true)
        } else {
            (fluxgate_testkit::helm_error(&out.stderr), false)
        };
        if ok != ours.is_ok() {
            return Agreement::Differs(format!(
                "helm {} / fluxgate {}:\n--- helm\n{theirs}\n--- fluxgate\n{ours_text}",
                if ok { "renders" } else { "fails" },
                if ours.is_ok() { "renders" } else { "fails" }
            ));
        }
        if theirs == ours_text {
            return Agreement::Identical;
        }
        if ok {
            return Agreement::Differs(format!(
                "output differs:\n--- helm\n{theirs}\n--- fluxgate\n{ours_text}"
            ));
        }
        same_lines |= sorted_lines(&theirs) == sorted_lines(&ours_text);
        last = theirs;
    }
    if same_lines {
        Agreement::SameLines
    } else {
        Agreement::Differs(format!(
            "errors differ:\n--- helm\n{last}\n--- fluxgate\n{ours_text}"
        ))
    }
}

#[test]
fn schema_validation_matches_helm() {
    let Some(helm) =
        fluxgate_testkit::go_install_oracle(TEST, "helm", "helm.sh/helm/v4/cmd/helm@v4.3.2")
    else {
        return;
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema_charts");
    let mut cases: Vec<(String, PathBuf, Vec<String>)> = FIXTURE_CASES
        .iter()
        .map(|(c, f)| {
            (
                (*c).to_string(),
                fixtures.join(c),
                f.iter().map(|s| (*s).to_string()).collect(),
            )
        })
        .collect();
    if let Some(corpus) = fluxgate_testkit::corpus(TEST) {
        let charts = corpus.join("helm-charts");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&charts)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        dirs.sort();
        for (prefix, flags) in CORPUS_CASES {
            let Some(dir) = dirs.iter().find(|d| {
                d.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{prefix}-")))
            }) else {
                fluxgate_testkit::missing(TEST, &format!("the corpus has no {prefix} chart"));
                continue;
            };
            cases.push((
                (*prefix).to_string(),
                dir.clone(),
                flags.iter().map(|s| (*s).to_string()).collect(),
            ));
        }
    }
    let (mut identical, mut same_lines) = (0, 0);
    let mut differ = Vec::new();
    for (name, chart, flags) in &cases {
        match compare(&helm, &request(chart, flags), &helm_args(chart, flags)) {
            Agreement::Identical => identical += 1,
            Agreement::SameLines => {
                same_lines += 1;
                eprintln!(
                    "{TEST}: {name} {flags:?}: same lines, in an order helm did not print in {HELM_RERUNS} runs"
                );
            }
            Agreement::Differs(why) => differ.push(format!("{name} {flags:?}: {why}")),
        }
    }
    for d in &differ {
        eprintln!("{TEST}: differs: {d}");
    }
    eprintln!(
        "{TEST}: {identical}/{} byte-identical, {same_lines} the same up to Go's map order, {} differ",
        cases.len(),
        differ.len()
    );
    assert!(differ.is_empty(), "{} cases differ from helm", differ.len());
}

/// app-template's schema is a `$ref` to a URL that helm fetches (offline helm fails). The
/// document it names is the common subchart's values.schema.json (same `$id`), but that one
/// `$ref`s `schemas/*.json`, which the subchart's `.helmignore` leaves out of the chart: the
/// schema cannot be compiled offline, and fluxgate says so without touching the network.
#[test]
fn app_template_schema_is_unloadable_offline() {
    let Some(corpus) = fluxgate_testkit::corpus("app_template_schema_is_unloadable_offline") else {
        return;
    };
    let chart = corpus.join("helm-charts/app-template-4.1.1");
    let Err(fluxgate_helm::Error::Schema(f)) = fluxgate_helm::run(&request(&chart, &[])) else {
        panic!("app-template's schema needs the network");
    };
    assert!(f.violations.is_empty(), "{f}");
    assert_eq!(
        f.unloadable
            .iter()
            .map(|u| u.chart_path.as_str())
            .collect::<Vec<_>>(),
        ["app-template", "app-template/charts/common"]
    );
    assert!(
        f.unloadable[1]
            .message
            .starts_with("failing loading \"https://raw.githubusercontent.com/bjw-s-labs/helm-charts/common-4.1.1/charts/library/common/schemas/"),
        "{}",
        f.unloadable[1].message
    );
    let skip = request(&chart, &["--skip-schema-validation".into()]);
    assert!(fluxgate_helm::run(&skip).is_ok());
}

/// A `$ref` to a URL is found among the chart's files by `$id` (and paths below it), as helm
/// would find it online: `id-lookup` refers to its subchart's schema by URL, and that schema
/// to a file beside it.
#[test]
fn schema_ref_resolves_to_a_file_of_the_chart() {
    let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema_charts/id-lookup");
    if let Err(e) = fluxgate_helm::run(&request(&chart, &[])) {
        panic!("the defaults pass: {e}");
    }
    let bad = request(
        &chart,
        &["--set".into(), "server.port=http,lib.port=70000".into()],
    );
    let Err(fluxgate_helm::Error::Schema(f)) = fluxgate_helm::run(&bad) else {
        panic!("a string port fails");
    };
    assert!(f.unloadable.is_empty(), "{f}");
    let got: Vec<(String, String, String)> = f
        .violations
        .iter()
        .map(|v| (v.chart_path.clone(), v.path.join("."), v.message.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "id-lookup".to_string(),
                "server.port".to_string(),
                "got string, want integer".to_string()
            ),
            (
                "id-lookup/charts/lib".to_string(),
                "lib.port".to_string(),
                "maximum: got 70,000, want 65,535".to_string()
            ),
        ]
    );
    assert_eq!(
        f.to_string(),
        "values don't meet the specifications of the schema(s) in the following chart(s):\nid-lookup:\n- at '/server/port': got string, want integer\nlib:\n- at '/port': maximum: got 70,000, want 65,535\n"
    );
}
