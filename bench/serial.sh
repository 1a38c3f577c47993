#!/usr/bin/env bash
# How much of one `fluxgate check` runs on one core only (issue 9's CPU/wall goal), measured so
# that other load on the machine matters little: `perf record` samples the CPU clock of each
# thread of the run (1999 Hz); the run is cut into 4 ms windows, and a window in which only one
# thread was sampled is serial time. Prints per run: the sampled span, CPU time, the serial
# and the two-core time, and CPU/span. (On a loaded machine a thread that waits for a core
# also leaves a window to the other one; the figures are then an upper bound of the serial
# time.)
#
# Usage: bench/serial.sh FLUXGATE_BINARY REPO [RUNS] (default 2 runs). Needs perf and python3.
set -euo pipefail
bin=${1:?usage: bench/serial.sh FLUXGATE_BINARY REPO [RUNS]}
repo=${2:?usage: bench/serial.sh FLUXGATE_BINARY REPO [RUNS]}
runs=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'load average %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
  perf record -q -e cpu-clock -F 1999 -o "$work/run$i.data" "$bin" check "$repo" --format json > /dev/null 2>&1 || true
  perf script -i "$work/run$i.data" -F tid,time 2> /dev/null > "$work/run$i.txt"
  python3 - "$work/run$i.txt" <<'PY'
import collections, sys
window, rate = 0.004, 1999
samples = []
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) >= 2:
        samples.append((float(parts[1].rstrip(":")), parts[0]))
if not samples:
    sys.exit("no samples (is perf allowed to record? see /proc/sys/kernel/perf_event_paranoid)")
start = min(t for t, _ in samples)
span = max(t for t, _ in samples) - start
threads = collections.defaultdict(set)
for t, tid in samples:
    threads[int((t - start) / window)].add(tid)
one = sum(1 for s in threads.values() if len(s) == 1) * window
two = sum(1 for s in threads.values() if len(s) >= 2) * window
cpu = len(samples) / rate
print(f"span {span:.2f} s, CPU {cpu:.2f} s, one core only {one:.2f} s, two cores {two:.2f} s, CPU/span {cpu / span:.2f}")
PY
done
printf 'load average after %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
