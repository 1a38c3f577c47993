#!/usr/bin/env bash
# How long `fluxgate mutate` takes on a repository (default examples/homelab): wall time, CPU
# time (user + system), peak RSS and the mutant count, the median of MUTATE_RUNS runs by wall
# time with the wall range. Like bench/scale.sh, MUTATE_BINS (`LABEL=FOLDER ...`, folders
# holding a prebuilt `fluxgate`) measures two or more builds side by side, their runs
# interleaved so that the machine's load falls on each alike; default: build this checkout.
#
# Usage: bench/mutate.sh [REPO]
# Settings (environment): MUTATE_RUNS (default 3), MUTATE_BINS, MUTATE_JOBS (`--jobs`,
# default: fluxgate's own choice).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=${1:-examples/homelab}
runs=${MUTATE_RUNS:-3}
builds=()
if [ -n "${MUTATE_BINS:-}" ]; then
  read -r -a builds <<< "$MUTATE_BINS"
else
  cargo build --release --quiet -p fluxgate --bin fluxgate
  builds=("this=$PWD/target/release")
fi
jobs=()
[ -z "${MUTATE_JOBS:-}" ] || jobs=(--jobs "$MUTATE_JOBS")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf 'repository: %s, %s run(s) each, %s cores, load average %s\n' \
  "$repo" "$runs" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| build | mutants | wall s (range) | CPU s (user+sys) | CPU/wall | peak RSS MB | CPU / first build |\n'
printf '|---|---|---|---|---|---|---|\n'
for b in "${builds[@]}"; do : > "$work/times-${b%%=*}"; done
for _ in $(seq "$runs"); do
  for b in "${builds[@]}"; do
    /usr/bin/time -f '%e %U %S %M' -o "$work/t" "${b#*=}/fluxgate" mutate "$repo" --format json \
      "${jobs[@]}" > "$work/out-${b%%=*}.json" || true
    grep -v "^Command" "$work/t" >> "$work/times-${b%%=*}"
  done
done
first_cpu=""
for b in "${builds[@]}"; do
  label=${b%%=*}
  mutants=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
m=d.get("mutants", d.get("results", []))
print(len(m) if isinstance(m, list) else m)' "$work/out-$label.json" 2>/dev/null || echo "?")
  read -r wall user sys rss lo hi < <(sort -n "$work/times-$label" | awk -v n="$runs" '
    { w[NR]=$1; line[NR]=$0 }
    END { m=int((n+1)/2); printf "%s %s %s\n", line[m], w[1], w[NR] }')
  cpu=$(echo "$user + $sys" | bc -l)
  [ -n "$first_cpu" ] || first_cpu=$cpu
  printf '| %s | %s | %.2f (%.2f-%.2f) | %.2f | %.2f | %.0f | %.2f |\n' \
    "$label" "$mutants" "$wall" "$lo" "$hi" "$cpu" "$(echo "$cpu / $wall" | bc -l)" \
    "$(echo "$rss / 1024" | bc -l)" "$(echo "$cpu / ($first_cpu + ($first_cpu == 0))" | bc -l)"
done
printf 'load average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
