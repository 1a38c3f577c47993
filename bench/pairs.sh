#!/usr/bin/env bash
# Alternating single runs of two builds' `check` on one repository, CPU time (task-clock, one
# rayon thread): the medians, the fastest, and the median of the pairwise ratios B/A. On a
# noisy machine a ratio of two medians taken minutes apart moves by 10-15%; pairs taken
# back to back share the load.
# Usage: bench/pairs.sh N BINARY_A BINARY_B REPOSITORY
set -euo pipefail
n=${1:?pairs}; a=${2:?binary A}; b=${3:?binary B}; repo=${4:?repository}
one() {
  RAYON_NUM_THREADS=1 perf stat -x, -e task-clock "$1" check "$repo" 2>&1 >/dev/null |
    awk -F, '/task-clock/ {print $1}'
}
for _ in $(seq "$n"); do echo "$(one "$a") $(one "$b")"; done | python3 -c '
import statistics as s, sys
r = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
a = [x for x, _ in r]; b = [y for _, y in r]
print(f"A median {s.median(a):.1f} ms, fastest {min(a):.1f} ms; B median {s.median(b):.1f} ms, fastest {min(b):.1f} ms")
print(f"B/A: median of the pairwise ratios {s.median([y / x for x, y in r]):.3f}x, "
      f"ratio of the medians {s.median(b) / s.median(a):.3f}x, of the fastest {min(b) / min(a):.3f}x")
'
