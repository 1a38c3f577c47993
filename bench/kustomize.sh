#!/usr/bin/env bash
# Builds every kustomization directory of the corpus with fluxgate (one process) and with a
# loop of `kubectl kustomize`, and prints both wall times, the ratio and fluxgate's peak RSS.
# Usage: FLUXGATE_CORPUS=/path/to/corpus bench/kustomize.sh
set -euo pipefail
corpus=${FLUXGATE_CORPUS:?set FLUXGATE_CORPUS to the corpus folder}
cd "$(dirname "$0")/.."
mapfile -t dirs < <(find "$corpus/gitops" "$corpus/kustomize-cases" \
  \( -name kustomization.yaml -o -name kustomization.yml -o -name Kustomization \) \
  -printf '%h\n' | sort -u)
echo "directories: ${#dirs[@]}"
cargo build --release --quiet -p fluxgate_kustomize --example build_all
bin=target/release/examples/build_all

start=$(date +%s.%N)
"$bin" "$corpus" "${dirs[@]}"
end=$(date +%s.%N)
ours=$(echo "$end - $start" | bc -l)

start=$(date +%s.%N)
for d in "${dirs[@]}"; do kubectl kustomize "$d" >/dev/null 2>&1 || true; done
end=$(date +%s.%N)
theirs=$(echo "$end - $start" | bc -l)

printf 'fluxgate (one process): %.2f s\nkubectl kustomize loop: %.2f s\nratio: %.1fx\n' \
  "$ours" "$theirs" "$(echo "$theirs / $ours" | bc -l)"
