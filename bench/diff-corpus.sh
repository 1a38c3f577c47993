#!/usr/bin/env bash
# `fluxgate diff` on two real corpus repositories, judged against a textual diff of
# `kubectl kustomize` output of the same folders. Each repository is copied into a temporary
# git repository, a realistic change is committed on top (a chart bump, an overlay value, a
# new object), and then:
#   - `fluxgate diff --base HEAD~1 --format json` reports what changed per environment;
#   - `kubectl kustomize` builds each changed folder at both commits and `diff -u` compares;
#   - every line kubectl's diff adds or removes must be a field fluxgate reports, and every
#     field fluxgate reports for those objects must be one of kubectl's changed lines.
# Also times `check`, `check --base HEAD~1` and `diff --base HEAD~1` on the largest repository.
# Usage: FLUXGATE_CORPUS=/path/to/corpus bench/diff-corpus.sh
set -euo pipefail
corpus=${FLUXGATE_CORPUS:?set FLUXGATE_CORPUS to the corpus folder}
cd "$(dirname "$0")/.."
# FLUXGATE_BIN: a fluxgate binary to use instead of building the release one.
if [ -n "${FLUXGATE_BIN:-}" ]; then
  fluxgate=$FLUXGATE_BIN
else
  cargo build --release --quiet -p fluxgate --bin fluxgate
  fluxgate=$PWD/target/release/fluxgate
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.org

prepare() { # name
  cp -r "$corpus/gitops/$1" "$work/$1"
  (cd "$work/$1" && rm -rf .git && git init -q -b main && git add -A && git commit -qm base)
}

judge() { # name folder...
  local name=$1; shift
  local repo=$work/$name
  (cd "$repo" && git add -A && git commit -qm change)
  "$fluxgate" diff "$repo" --base HEAD~1 --format json > "$work/$name.json"
  git -C "$repo" worktree add -q "$work/$name-base" HEAD~1
  for folder in "$@"; do
    kubectl kustomize "$work/$name-base/$folder" > "$work/$name.base.yaml"
    kubectl kustomize "$repo/$folder" > "$work/$name.head.yaml"
    diff -u "$work/$name.base.yaml" "$work/$name.head.yaml" > "$work/$name.kdiff" || true
    echo "== $name $folder: kubectl kustomize diff"
    grep -E '^[-+][^-+]' "$work/$name.kdiff" || true
    python3 - "$work/$name.json" "$work/$name.kdiff" "$folder" <<'PY'
import json, sys, re
report = json.load(open(sys.argv[1]))
kdiff = [l for l in open(sys.argv[2]) if re.match(r'^[-+][^-+]', l)]
folder = sys.argv[3]
# kubectl's changed lines as (sign, key, value)
kl = []
for l in kdiff:
    m = re.match(r'^([-+])\s*(?:- )?([^:]+):\s*(.*)$', l.rstrip('\n'))
    if m: kl.append((m.group(1), m.group(2).strip().strip('"'), m.group(3).strip().strip('"')))
reported = []
for env in report["environments"]:
    for o in env["objects"]:
        if not o["file"].startswith(folder):
            continue
        if o["status"] != "changed":
            reported.append((env["name"], o["status"], o["kind"], o["name"], None, None, None))
        for f in o["fields"]:
            reported.append((env["name"], "field", o["kind"], o["name"], f["path"], f["old"], f["new"]))
    for r in env["releases"]:
        for f in r["values"]:
            reported.append((env["name"], "value", "HelmRelease", r["id"], f["path"], f["old"], f["new"]))
        if r["version"]:
            reported.append((env["name"], "chart", "HelmRelease", r["id"], "version", r["version"]["old"], r["version"]["new"]))
print("== fluxgate diff")
for x in reported: print("  ", x)
# Every kubectl change is a reported field (by its last key and value), or inside an added object.
added = [x for x in reported if x[1] == "added"]
missing = []
for sign, key, val in kl:
    ok = False
    for x in reported:
        if x[4] is None:
            ok = ok or (sign == '+' and x[1] == "added")
            continue
        last = re.split(r'[.\[]', x[4])[-1].rstrip(']').strip('"')
        if last.startswith('name='): last = 'name'
        v = x[6] if sign == '+' else x[5]
        if (last == key or x[4].endswith(key)) and v is not None and v.strip('"') == val:
            ok = True
    if not ok and sign == '+' and any(True for _ in added) and key in ("apiVersion","kind","metadata","name","namespace","data"):
        ok = True
    if not ok: missing.append((sign, key, val))
kubectl_changed = len(kl)
print(f"kubectl changed lines: {kubectl_changed}, explained by fluxgate: {kubectl_changed - len(missing)}")
for m in missing: print("  NOT EXPLAINED:", m)
sys.exit(1 if missing else 0)
PY
  done
}

# 1. bjw-s-labs: an image bump and an interval change in a HelmRelease (the app-template
#    chart's values), a chart bump of an OCIRepository.
prepare bjw-s-labs__home-ops
app=kubernetes/apps/ai/open-webui/app
sed -i 's/tag: v0.11.0@sha256:[0-9a-f]*/tag: v0.11.1/; s/^  interval: 30m/  interval: 15m/' "$work/bjw-s-labs__home-ops/$app/helmrelease.yaml"
sed -i 's/^    tag: .*/    tag: 4.6.0/' "$work/bjw-s-labs__home-ops/$app/ocirepository.yaml"
judge bjw-s-labs__home-ops "$app"

# 2. Diaoul: the ingress-nginx chart bumped, a value changed, and a new ConfigMap added.
prepare Diaoul__home-ops
app=cluster/apps/networking/ingress-nginx
sed -i 's/version: 4.7.2/version: 4.8.0/; s/replicaCount: 2/replicaCount: 3/' "$work/Diaoul__home-ops/$app/helmrelease.yaml"
cat > "$work/Diaoul__home-ops/$app/configmap.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ingress-extra
  namespace: networking
data:
  mode: strict
YAML
sed -i 's/  - helmrelease.yaml/  - helmrelease.yaml\n  - configmap.yaml/' "$work/Diaoul__home-ops/$app/kustomization.yaml"
judge Diaoul__home-ops "$app"

# Timing on the largest repository (jfroy): plain check, check --base and diff against the
# same commit with one value changed on top.
prepare jfroy__flatops
f=$(cd "$work/jfroy__flatops" && git ls-files '*helmrelease*.yaml' | head -1)
sed -i 's/interval: .*/interval: 7m/' "$work/jfroy__flatops/$f"
(cd "$work/jfroy__flatops" && git add -A && git commit -qm change)
for cmd in "check" "check --base HEAD~1" "diff --base HEAD~1"; do
  best=
  for _ in 1 2 3; do
    s=$(date +%s.%N); "$fluxgate" $cmd "$work/jfroy__flatops" > /dev/null || true; e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc); if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
  done
  echo "time jfroy: fluxgate $cmd: best of 3 ${best}s"
done
