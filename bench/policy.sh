#!/usr/bin/env bash
# Layer L0 over the whole gitops corpus in one run (issue 11): the schema rule over every
# repository, then the 165 policies of kyverno-policies over every rendered object
# (crates/fluxgate_rules/examples/l0_corpus.rs; rendering first, not timed). Three runs, each
# with the load average beside it; the process's peak RSS includes the rendered corpus.
# Then the policies alone as crates/fluxgate_policy/examples/l0_bench.rs measures them
# (glibc malloc; the figure issue 11 was first measured with).
set -euo pipefail
cd "$(dirname "$0")/.."
export FLUXGATE_CORPUS="${FLUXGATE_CORPUS:-../shared/corpus}"
cargo build --release -q -p fluxgate_rules --example l0_corpus
cargo build --release -q -p fluxgate_policy --example l0_bench
for i in 1 2 3; do
  echo "run $i: load $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "process: %e s wall, %U+%S s CPU, %M KB peak RSS" \
    ./target/release/examples/l0_corpus
done
for i in 1 2 3; do
  echo "policies alone, run $i: load $(cut -d' ' -f1-3 /proc/loadavg)"
  ./target/release/examples/l0_bench | tail -1
done
