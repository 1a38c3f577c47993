#!/usr/bin/env bash
# Schema validation (rule `schema`, layer L0): (1) the rule alone over every repository of the
# gitops corpus in one process, three runs; (2) what it adds to `fluxgate check` on the largest
# corpus repository (jfroy__flatops): `check` three times as it is and three times with
# `rules: {schema: {enabled: false}}` in a copy of the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus="${FLUXGATE_CORPUS:-../shared/corpus}"
cargo build --release -q -p fluxgate
cargo build --release -q -p fluxgate_rules --example schema_bench
for i in 1 2 3; do ./target/release/examples/schema_bench "$corpus/gitops"; done
repo="$corpus/gitops/jfroy__flatops"
off="$(mktemp -d)"
trap 'rm -rf "$off"' EXIT
cp -r "$repo/." "$off/"
printf 'rules:\n  schema: {enabled: false}\n' > "$off/fluxgate.yaml"
for run in on off on off on off; do
  dir="$repo"; [ "$run" = off ] && dir="$off"
  /usr/bin/time -f "check jfroy schema $run: %e s wall, %U+%S s CPU, %M KB peak" \
    ./target/release/fluxgate check "$dir" --format json >/dev/null || true
done
