#!/usr/bin/env bash
# Renders every environment of the gitops corpus (found with `fluxgate envs`) with fluxgate in
# one process, then runs `kubectl kustomize` over the same Kustomization folders in a loop, and
# prints both wall times, the ratio and fluxgate's peak RSS (VmHWM).
# kubectl builds only the folders that hold a kustomization file (it cannot build the others;
# fluxgate generates theirs as Flux does), so the ratio understates fluxgate's lead slightly.
# Usage: FLUXGATE_CORPUS=/path/to/corpus bench/flux.sh
set -euo pipefail
corpus=${FLUXGATE_CORPUS:?set FLUXGATE_CORPUS to the corpus folder}
cd "$(dirname "$0")/.."
cargo build --release --quiet -p fluxgate --bin fluxgate
cargo build --release --quiet -p fluxgate_flux --example render_envs
fluxgate=target/release/fluxgate
bin=target/release/examples/render_envs

envs=()
for repo in "$corpus"/gitops/*/; do
  repo=${repo%/}
  while IFS= read -r entry; do
    [ -n "$entry" ] && envs+=("$repo=$entry")
  done < <("$fluxgate" envs "$repo" --format json | python3 -c \
    'import json,sys; [print(e["flux"]) for e in json.load(sys.stdin)]')
done
echo "environments: ${#envs[@]}"
if [ "${#envs[@]}" -eq 0 ]; then echo "no environment found" >&2; exit 1; fi

paths=$(mktemp)
start=$(date +%s.%N)
"$bin" --paths "$paths" "${envs[@]}"
end=$(date +%s.%N)
ours=$(echo "$end - $start" | bc -l)

built=0
start=$(date +%s.%N)
while IFS= read -r d; do
  if [ -f "$d/kustomization.yaml" ] || [ -f "$d/kustomization.yml" ] || [ -f "$d/Kustomization" ]; then
    kubectl kustomize --load-restrictor LoadRestrictionsNone "$d" >/dev/null 2>&1 || true
    built=$((built + 1))
  fi
done < "$paths"
end=$(date +%s.%N)
theirs=$(echo "$end - $start" | bc -l)
echo "kubectl kustomize folders: $built of $(wc -l < "$paths")"
rm -f "$paths"

printf 'fluxgate (one process, every environment): %.2f s\nkubectl kustomize loop: %.2f s\nratio: %.1fx\n' \
  "$ours" "$theirs" "$(echo "$theirs / $ours" | bc -l)"
