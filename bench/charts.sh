#!/usr/bin/env bash
# What rendering charts adds to `fluxgate check` (issue 22 item 7: "check with templates within
# 2x of check without"), side by side in one run, on two repositories built here:
#   homelab:  examples/homelab with its stub chart (without) and with the real Cilium 1.17.18
#             of the corpus in `charts/` (with; the releases pin 1.17.18);
#   onedr0p:  the corpus' onedr0p__home-ops-head with an empty `charts/` (without) and with the
#             corpus charts stamped at the versions its releases pin (with: app-template 5.1.0,
#             cert-manager 1.21.1, cilium 1.20.1, external-dns 1.21.1, external-secrets 2.9.0;
#             each a copy of the corpus chart whose Chart.yaml says that version).
# For each: CPU time (task-clock, one rayon thread, median of RUNS, the two builds alternating)
# and, when valgrind is installed, instructions executed (callgrind, independent of the load).
# Prints a markdown table.
#
# The issue asks for "check with templates within 2x of check today": with
# FLUXGATE_BASELINE_BIN, a binary built from the commit the issue was filed on (2873325, the
# parent of the first Helm commit), the table also gives that check of the same repositories
# with charts (it does not render them) and the ratio against it.
#
# Usage: FLUXGATE_CORPUS=/path/to/corpus bench/charts.sh
# Settings: RUNS (default 9), FLUXGATE_BIN (default: build this checkout's release binary),
# FLUXGATE_BASELINE_BIN (optional, see above), CALLGRIND=0 to skip the instruction counts.
set -euo pipefail
corpus=${FLUXGATE_CORPUS:?set FLUXGATE_CORPUS to the corpus folder}
runs=${RUNS:-9}
cd "$(dirname "$0")/.."
if [ -n "${FLUXGATE_BIN:-}" ]; then
  fluxgate=$FLUXGATE_BIN
else
  cargo build --release --quiet -p fluxgate --bin fluxgate
  fluxgate=$PWD/target/release/fluxgate
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# homelab, without and with the real chart.
cp -r examples/homelab "$work/homelab-without"
cp -r examples/homelab "$work/homelab-with"
rm -rf "$work/homelab-with/charts/"cilium-*
cp -r "$corpus/helm-charts/cilium-1.17.18" "$work/homelab-with/charts/cilium-1.17.18"
sed -i 's/version: "1.16.5"/version: "1.17.18"/' "$work/homelab-with/platform/cilium/helmrelease.yaml"

# onedr0p, without and with the stamped charts.
src="$corpus/gitops/onedr0p__home-ops-head"
cp -r "$src" "$work/onedr0p-without"
mkdir -p "$work/onedr0p-without/charts"
echo 'charts: charts' > "$work/onedr0p-without/fluxgate.yaml"
cp -r "$work/onedr0p-without" "$work/onedr0p-with"
stamp() { # corpus chart folder, name-version
  cp -r "$corpus/helm-charts/$1" "$work/onedr0p-with/charts/$2"
  sed -i "s/^version:.*/version: ${2##*-}/" "$work/onedr0p-with/charts/$2/Chart.yaml"
}
stamp app-template-4.1.1 app-template-5.1.0
stamp cert-manager-v1.21.1 cert-manager-1.21.1
stamp cilium-1.17.18 cilium-1.20.1
stamp external-dns-1.21.1 external-dns-1.21.1
stamp external-secrets-2.9.0 external-secrets-2.9.0

cpu_ms() { # binary repository -> task-clock ms of one check
  RAYON_NUM_THREADS=1 perf stat -e task-clock -x, "$1" check "$2" 2>&1 >/dev/null \
    | awk -F, '/task-clock/ {print $1}' || true # a gate that fails exits 1
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
instructions() { # binary repository -> instructions of one check
  RAYON_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$1" check "$2" 2>&1 >/dev/null | awk '/Collected/ {print $4}' | tr -d , || true
}
ratio() { python3 -c "print(f'{$2/$1:.2f}x')"; }
baseline=${FLUXGATE_BASELINE_BIN:-}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
if [ -n "$baseline" ]; then
  echo "| repository | without charts | with charts | ratio | check on the day the issue was filed, same repository | ratio against it |"
  echo "|---|---|---|---|---|---|"
else
  echo "| repository | without charts | with charts | ratio |"
  echo "|---|---|---|---|"
fi
for repo in homelab onedr0p; do
  without=() with=() old=()
  for _ in $(seq "$runs"); do
    without+=("$(cpu_ms "$fluxgate" "$work/$repo-without")")
    with+=("$(cpu_ms "$fluxgate" "$work/$repo-with")")
    if [ -n "$baseline" ]; then old+=("$(cpu_ms "$baseline" "$work/$repo-with")"); fi
  done
  a=$(printf '%s\n' "${without[@]}" | median)
  b=$(printf '%s\n' "${with[@]}" | median)
  row="| $repo, CPU ms (median of $runs) | $a | $b | $(ratio "$a" "$b") |"
  if [ -n "$baseline" ]; then
    o=$(printf '%s\n' "${old[@]}" | median)
    row="$row $o | $(ratio "$o" "$b") |"
  fi
  echo "$row"
  if [ "${CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
    ia=$(instructions "$fluxgate" "$work/$repo-without")
    ib=$(instructions "$fluxgate" "$work/$repo-with")
    row="| $repo, instructions (callgrind) | $ia | $ib | $(ratio "$ia" "$ib") |"
    if [ -n "$baseline" ]; then
      io=$(instructions "$baseline" "$work/$repo-with")
      row="$row $io | $(ratio "$io" "$ib") |"
    fi
    echo "$row"
  fi
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
