#!/usr/bin/env bash
# How `fluxgate check` scales with the size of a repository (issue 9). Builds synthetic
# repositories from one corpus repository: copy N (N = 1, 2, 4, 8, 16) holds the repository
# once plus N-1 renamed copies of its apps tree, each copy with its own Flux Kustomization
# next to the one that reconciles the original tree (paths, Kustomization names' namespaces
# and `namespace:`/`targetNamespace:` values renamed, so the copies are new Kustomizations, not
# duplicates). For each N it prints `fluxgate check` wall time, CPU time (user + system),
# CPU/wall, time per Flux Kustomization and peak RSS (the median of SCALE_RUNS runs by wall
# time, with the wall range), beside a `kubectl kustomize` loop over the same Kustomization
# folders (those that hold a kustomization file, as in bench/flux.sh).
#
# Usage: FLUXGATE_CORPUS=/path/to/corpus bench/scale.sh
# Settings (environment): SCALE_REPO (default bjw-s-labs__home-ops), SCALE_APPS (the apps
# tree, default kubernetes/apps), SCALE_KS (the file of the Flux Kustomization whose
# spec.path is the apps tree, default kubernetes/flux/cluster/ks.yaml), SCALE_SHARED (folders of
# the apps tree that are not copied and whose namespaces stay shared, default flux-system: the
# Flux installation itself exists once), SCALE_NS (default
# "1 2 4 8 16"), SCALE_RUNS (default 3), SCALE_BIN (a folder with prebuilt `fluxgate` and
# `render_envs` binaries, to measure another build; default: build this checkout), SCALE_BINS
# (`LABEL=FOLDER ...`: two or more prebuilt builds measured side by side on the same
# repositories, their runs interleaved so that the machine's load falls on each alike; one
# row per build and N, and a last column with each build's CPU against the first's),
# SCALE_KUBECTL (1: the whole loop, default; 0: skip; K: build every K-th folder only and
# extrapolate, said so in the table).
set -euo pipefail
corpus=${FLUXGATE_CORPUS:?set FLUXGATE_CORPUS to the corpus folder}
name=${SCALE_REPO:-bjw-s-labs__home-ops}
apps=${SCALE_APPS:-kubernetes/apps}
ks=${SCALE_KS:-kubernetes/flux/cluster/ks.yaml}
ns_list=${SCALE_NS:-1 2 4 8 16}
runs=${SCALE_RUNS:-3}
kubectl_every=${SCALE_KUBECTL:-1}
src="$corpus/gitops/$name"
[ -d "$src/$apps" ] || { echo "no apps tree $apps in $src" >&2; exit 2; }
[ -f "$src/$ks" ] || { echo "no Flux Kustomization file $ks in $src" >&2; exit 2; }

cd "$(dirname "$0")/.."
builds=()
if [ -n "${SCALE_BINS:-}" ]; then
  read -r -a builds <<< "$SCALE_BINS"
  fluxgate=${builds[0]#*=}/fluxgate
  render=${builds[0]#*=}/render_envs
elif [ -n "${SCALE_BIN:-}" ]; then
  fluxgate=$SCALE_BIN/fluxgate
  render=$SCALE_BIN/render_envs
else
  cargo build --release --quiet -p fluxgate --bin fluxgate
  cargo build --release --quiet -p fluxgate_flux --example render_envs
  fluxgate=$PWD/target/release/fluxgate
  render=$PWD/target/release/examples/render_envs
fi
[ ${#builds[@]} -gt 0 ] || builds=("this=$(dirname "$fluxgate")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One renamed copy of the apps tree: APPS-cK, its namespaces NS-cK, and a Flux Kustomization
# (the original one's document, renamed and pointed at the copy) in a file beside the original.
copy_apps() {
  python3 - "$1" "$apps" "$ks" "$2" <<'PY'
import os, re, shutil, sys
root, apps, ks, k = sys.argv[1], sys.argv[2].strip("/"), sys.argv[3], sys.argv[4]
suffix = f"-c{k}"
dst = f"{apps}{suffix}"
shared = set(os.environ.get("SCALE_SHARED", "flux-system").split())
shutil.copytree(os.path.join(root, apps), os.path.join(root, dst), symlinks=True,
                ignore=lambda d, names: [n for n in names if os.path.samefile(d, os.path.join(root, apps)) and n in shared])
namespaces = {d for d in os.listdir(os.path.join(root, apps))
              if os.path.isdir(os.path.join(root, apps, d)) and d not in shared}
ns_line = re.compile(r"^(\s*(?:- )?(?:namespace|targetNamespace):\s*)([\"']?)([A-Za-z0-9-]+)\2(\s*(?:#.*)?)$")
path_ref = re.compile(re.escape(apps) + r"(?=/|\"|'|\s|$)")
def rename(text):
    text = path_ref.sub(dst, text)
    out = []
    for line in text.split("\n"):
        m = ns_line.match(line)
        if m and m.group(3) in namespaces:
            line = f"{m.group(1)}{m.group(2)}{m.group(3)}{suffix}{m.group(2)}{m.group(4)}"
        out.append(line)
    return "\n".join(out)
for d, _, files in os.walk(os.path.join(root, dst)):
    for f in files:
        if f.endswith((".yaml", ".yml")):
            p = os.path.join(d, f)
            with open(p, encoding="utf-8", errors="surrogateescape") as fh:
                text = fh.read()
            with open(p, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(rename(text))
# The Flux Kustomization of the copy: the document of KS whose spec.path is the apps tree.
with open(os.path.join(root, ks), encoding="utf-8") as fh:
    docs = re.split(r"(?m)^---\s*$", fh.read())
mine = [d for d in docs if re.search(r"(?m)^\s*path:\s*[\"']?\./" + re.escape(apps) + r"/?[\"']?\s*$", d)]
if not mine:
    sys.exit(f"no document of {ks} has spec.path ./{apps}")
doc = re.sub(r"(?m)^(\s*path:\s*[\"']?\./)" + re.escape(apps), r"\g<1>" + dst, mine[0])
doc = re.sub(r"(?m)^(  name:\s*)([A-Za-z0-9-]+)", r"\g<1>\g<2>" + suffix, doc, count=1)
base, ext = os.path.splitext(os.path.join(root, ks))
with open(f"{base}{suffix}{ext}", "w", encoding="utf-8") as fh:
    fh.write("---" + doc)
PY
}

# Runs `check` SCALE_RUNS times per build on the repository $1, the builds' runs interleaved;
# then prints, per build, "label wall user sys rss_kb lo hi": the median run by wall time and
# the wall range.
median_runs() {
  local out=$1 f b
  for b in "${builds[@]}"; do : > "$work/times-${b%%=*}"; done
  for _ in $(seq "$runs"); do
    for b in "${builds[@]}"; do
      f=$(mktemp -p "$work")
      /usr/bin/time -f '%e %U %S %M' -o "$f" "${b#*=}/fluxgate" check "$out" --format json > /dev/null || true
      grep -v "^Command" "$f" >> "$work/times-${b%%=*}"
    done
  done
  for b in "${builds[@]}"; do
    sort -n "$work/times-${b%%=*}" | awk -v n="$runs" -v label="${b%%=*}" '
      { w[NR]=$1; line[NR]=$0 }
      END { m=int((n+1)/2); printf "%s %s %s %s\n", label, line[m], w[1], w[NR] }'
  done
}

printf 'repository: %s, apps tree %s, %s run(s) each, %s cores, load average %s\n' \
  "$name" "$apps" "$runs" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| N | build | Kustomizations | check wall s (range) | CPU s (user+sys) | CPU/wall | ms per Kustomization | peak RSS MB | kubectl kustomize loop s | kubectl / check | CPU / first build |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for n in $ns_list; do
  out="$work/n$n"
  rm -rf "$out"
  mkdir -p "$out"
  (cd "$src" && tar --exclude=.git -cf - .) | (cd "$out" && tar -xf -)
  for k in $(seq 2 "$n"); do copy_apps "$out" "$k"; done
  entries=$("$fluxgate" envs "$out" --format json | python3 -c \
    'import json,sys; [print(e["flux"]) for e in json.load(sys.stdin) if e.get("flux")]')
  args=()
  while IFS= read -r e; do [ -n "$e" ] && args+=("$out=$e"); done <<< "$entries"
  "$render" --paths "$work/paths" "${args[@]}" > "$work/render.txt"
  kusts=$(grep -c . "$work/paths" || true)
  median_runs "$out" > "$work/medians"
  read -r _ first_wall _ < "$work/medians"
  kubectl_cell="skipped"
  ratio_cell="—"
  if [ "$kubectl_every" != 0 ]; then
    built=0
    total=0
    start=$(date +%s.%N)
    while IFS= read -r d; do
      if [ -f "$d/kustomization.yaml" ] || [ -f "$d/kustomization.yml" ] || [ -f "$d/Kustomization" ]; then
        if [ $((total % kubectl_every)) -eq 0 ]; then
          kubectl kustomize --load-restrictor LoadRestrictionsNone "$d" > /dev/null 2>&1 || true
          built=$((built + 1))
        fi
        total=$((total + 1))
      fi
    done < "$work/paths"
    end=$(date +%s.%N)
    theirs=$(echo "($end - $start) * $total / ($built + ($built == 0))" | bc -l)
    if [ "$kubectl_every" = 1 ]; then
      kubectl_cell=$(printf '%.1f (%d folders)' "$theirs" "$total")
    else
      kubectl_cell=$(printf '%.1f (extrapolated from %d of %d folders)' "$theirs" "$built" "$total")
    fi
    ratio_cell=$(printf '%.0fx' "$(echo "$theirs / $first_wall" | bc -l)")
  fi
  first_cpu=""
  while read -r label wall user sys rss lo hi; do
    cpu=$(echo "$user + $sys" | bc -l)
    [ -n "$first_cpu" ] || first_cpu=$cpu
    printf '| %d | %s | %d | %.2f (%.2f-%.2f) | %.2f | %.2f | %.2f | %.0f | %s | %s | %.2f |\n' \
      "$n" "$label" "$kusts" "$wall" "$lo" "$hi" "$cpu" "$(echo "$cpu / $wall" | bc -l)" \
      "$(echo "$wall * 1000 / $kusts" | bc -l)" "$(echo "$rss / 1024" | bc -l)" \
      "$kubectl_cell" "$ratio_cell" "$(echo "$cpu / ($first_cpu + ($first_cpu == 0))" | bc -l)"
  done < "$work/medians"
done
printf 'load average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
