#!/usr/bin/env bash
# `fluxgate template` against `helm template` (helm v4.3.2, the oracle the differential tests
# build under target/oracles/), side by side in one run, both as processes (issue 22 item 7):
#   1. per corpus chart (its default values, the flags of the differential test): HELM_RUNS
#      runs of each tool, alternating, median wall time with the range, and helm / fluxgate;
#   2. every HelmRelease of the gitops corpus that installs one of the corpus charts (by
#      `spec.chart.spec.chart`, or `spec.chartRef` to an OCIRepository whose URL ends in the
#      chart's name), with its values: one process per release for each tool, the whole loop
#      HELM_LOOPS times, median with the range.
# Prints a markdown table and writes it (with the machine's load average before and after)
# to bench/results/helm-<UTC date and time>.md.
#
# Usage: FLUXGATE_CORPUS=/path/to/corpus bench/helm.sh
# Settings (environment): HELM_RUNS (default 7), HELM_LOOPS (default 3), HELM_BIN (the helm
# binary; default: the oracle under target/oracles/), FLUXGATE_BIN (default: build this
# checkout's release binary).
set -euo pipefail
corpus=${FLUXGATE_CORPUS:?set FLUXGATE_CORPUS to the corpus folder}
runs=${HELM_RUNS:-7}
loops=${HELM_LOOPS:-3}
cd "$(dirname "$0")/.."
helm=${HELM_BIN:-$(ls -d target/oracles/helm-*/helm 2>/dev/null | head -n 1)}
[ -x "$helm" ] || { echo "no helm oracle under target/oracles/ (run the fluxgate_helm differential test once, or set HELM_BIN)" >&2; exit 2; }
if [ -n "${FLUXGATE_BIN:-}" ]; then
  fluxgate=$FLUXGATE_BIN
else
  cargo build --release --quiet -p fluxgate --bin fluxgate
  fluxgate=$PWD/target/release/fluxgate
fi
mkdir -p bench/results
out="bench/results/helm-$(date -u +%Y%m%d-%H%M).md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$corpus" "$helm" "$fluxgate" "$runs" "$loops" "$work" "$out" <<'PY'
import json, os, re, resource, statistics, subprocess, sys, time

corpus, helm, fluxgate, runs, loops, work, out = sys.argv[1:8]
runs, loops = int(runs), int(loops)
charts_dir = os.path.join(corpus, "helm-charts")
gitops = os.path.join(corpus, "gitops")

def chart_flags(d):
    # The flags of crates/fluxgate_helm/tests/differential.rs: deterministic output.
    f = ["--kube-version", "1.30.0"]
    if d.startswith("podinfo"):
        f.append("--skip-tests")
    if d.startswith("app-template"):
        f.append("--skip-schema-validation")  # helm would fetch the schema
    if d.startswith("cilium"):
        f += ["--set", "hubble.tls.auto.method=cronJob"]
    return f

charts = sorted(d for d in os.listdir(charts_dir)
                if os.path.isfile(os.path.join(charts_dir, d, "Chart.yaml")))
chart_name = {d: re.sub(r"-v?[0-9][0-9.]*$", "", d) for d in charts}

def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def run(cmd):
    """Wall time, CPU time (user + system, all threads) and exit code of one process."""
    c, t = cpu(), time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, cpu() - c, p.returncode

def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])

def fmt(xs):
    m = statistics.median(xs)
    return m, f"{m*1000:.0f} ms ({min(xs)*1000:.0f}-{max(xs)*1000:.0f})"

lines = []
def say(s=""):
    print(s, flush=True)
    lines.append(s)

load_before = loadavg()
say(f"# `bench/helm.sh`, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
say()
say(f"helm: `{helm}`; fluxgate: `{fluxgate}`; {runs} runs per chart (alternating), "
    f"{loops} loops over the HelmReleases; load average before: {load_before} "
    f"({os.cpu_count()} cores).")
say()
say("| chart | fluxgate template wall | helm template wall | helm / fluxgate (wall) | fluxgate CPU | helm CPU | helm / fluxgate (CPU) | exit codes (fluxgate/helm) |")
say("|---|---|---|---|---|---|---|---|")
ratios, cpu_ratios = [], []
for d in charts:
    path = os.path.join(charts_dir, d)
    args = ["template", "rel", path, "--namespace", "ns"] + chart_flags(d)
    ours, theirs, ours_cpu, theirs_cpu, codes = [], [], [], [], set()
    run([fluxgate] + args); run([helm] + args)  # warm the page cache
    for _ in range(runs):
        t, c, c1 = run([fluxgate] + args); ours.append(t); ours_cpu.append(c)
        t, c, c2 = run([helm] + args); theirs.append(t); theirs_cpu.append(c)
        codes.add((c1, c2))
    mo, so = fmt(ours)
    mt, st = fmt(theirs)
    co, sco = fmt(ours_cpu)
    ct, sct = fmt(theirs_cpu)
    ratios.append(mt / mo)
    cpu_ratios.append(ct / max(co, 1e-6))
    say(f"| {d} | {so} | {st} | {mt/mo:.1f}x | {sco} | {sct} | {ct/max(co, 1e-6):.1f}x | "
        f"{', '.join(f'{a}/{b}' for a, b in sorted(codes))} |")
say()
say(f"Ratio per chart, wall: median {statistics.median(ratios):.1f}x, min {min(ratios):.1f}x, "
    f"max {max(ratios):.1f}x; CPU: median {statistics.median(cpu_ratios):.1f}x, "
    f"min {min(cpu_ratios):.1f}x, max {max(cpu_ratios):.1f}x. Wall times are medians with the "
    f"range of the {runs} runs in brackets; CPU is user + system time of the process (all "
    f"its threads: helm's Go runtime runs several).")
say()

# HelmReleases: the values of each release that installs a corpus chart.
def docs_of(text):
    try:
        import yaml
    except ImportError:
        sys.exit("bench/helm.sh needs PyYAML (python3-yaml) to read the HelmReleases")
    try:
        return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except Exception:
        return []

files = []
for root, dirs, names in os.walk(gitops):
    dirs[:] = sorted(x for x in dirs if x != ".git")
    for n in sorted(names):
        if n.endswith((".yaml", ".yml")):
            files.append(os.path.join(root, n))
oci, hrs = {}, []
for p in files:
    try:
        text = open(p, encoding="utf-8", errors="replace").read()
    except OSError:
        continue
    if "OCIRepository" not in text and "HelmRelease" not in text:
        continue
    repo = os.path.relpath(p, gitops).split(os.sep)[0]
    for doc in docs_of(text):
        spec = doc.get("spec") or {}
        if doc.get("kind") == "OCIRepository":
            name = (doc.get("metadata") or {}).get("name")
            url = str(spec.get("url", "")).rstrip("/")
            oci.setdefault((repo, name), set()).add(url.rsplit("/", 1)[-1])
        elif doc.get("kind") == "HelmRelease":
            hrs.append((repo, doc))
cases = []
for repo, doc in hrs:
    spec = doc.get("spec") or {}
    meta = doc.get("metadata") or {}
    name = ((spec.get("chart") or {}).get("spec") or {}).get("chart")
    if not name:
        ref = (spec.get("chartRef") or {}).get("name")
        names = oci.get((repo, ref), {ref})
    else:
        names = {name}
    d = next((c for c in charts if chart_name[c] in names), None)
    if d is None:
        continue
    release = spec.get("releaseName") or meta.get("name") or "release"
    ns = spec.get("targetNamespace") or meta.get("namespace") or "default"
    vf = os.path.join(work, f"hr{len(cases)}.json")
    with open(vf, "w") as f:
        json.dump(spec.get("values") or {}, f, default=str)
    cases.append((d, ["template", str(release), os.path.join(charts_dir, d),
                      "--namespace", str(ns), "-f", vf] + chart_flags(d)))
per_chart = {}
for d, _ in cases:
    per_chart[d] = per_chart.get(d, 0) + 1
ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
failed = [0, 0]
for _ in range(loops):
    c0, t0 = cpu(), time.perf_counter()
    for _, a in cases:
        _, _, c = run([fluxgate] + a); failed[0] += c != 0
    ours.append(time.perf_counter() - t0); ours_cpu.append(cpu() - c0)
    c0, t0 = cpu(), time.perf_counter()
    for _, a in cases:
        _, _, c = run([helm] + a); failed[1] += c != 0
    theirs.append(time.perf_counter() - t0); theirs_cpu.append(cpu() - c0)
mo, mt = statistics.median(ours), statistics.median(theirs)
co, ct = statistics.median(ours_cpu), statistics.median(theirs_cpu)
say(f"HelmReleases of the gitops corpus that install a corpus chart: {len(cases)} "
    f"({', '.join(f'{chart_name[d]} {n}' for d, n in sorted(per_chart.items()))}); "
    f"one process per release; failures per loop (both tools fail on the same ones in the "
    f"differential test): fluxgate {failed[0]//max(loops,1)}, helm {failed[1]//max(loops,1)}.")
say()
say("| loop | fluxgate template wall | helm template wall | helm / fluxgate (wall) | fluxgate CPU | helm CPU | helm / fluxgate (CPU) |")
say("|---|---|---|---|---|---|---|")
say(f"| all {len(cases)} releases | {mo:.2f} s ({min(ours):.2f}-{max(ours):.2f}) | "
    f"{mt:.2f} s ({min(theirs):.2f}-{max(theirs):.2f}) | {mt/mo:.1f}x | "
    f"{co:.2f} s ({min(ours_cpu):.2f}-{max(ours_cpu):.2f}) | "
    f"{ct:.2f} s ({min(theirs_cpu):.2f}-{max(theirs_cpu):.2f}) | {ct/max(co, 1e-6):.1f}x |")
say(f"| per release | {mo/len(cases)*1000:.1f} ms | {mt/len(cases)*1000:.1f} ms | | "
    f"{co/len(cases)*1000:.1f} ms | {ct/len(cases)*1000:.1f} ms | |")
say()
say(f"Load average after: {loadavg()}.")
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"\nwritten to {out}")
PY
