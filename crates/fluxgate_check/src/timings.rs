//! A hidden switch for profiling: with `FLUXGATE_TIMINGS=1` in the environment, each phase of a
//! run (`open`, `render`, `rules`, ...) writes one line to stderr with its wall time and the
//! CPU time every thread of the process spent during it, so the serial parts of a run show as
//! phases whose CPU is close to their wall time. Off by default; never part of the output.
//!
//! CPU time is read from `/proc/self/task/*/schedstat` (nanoseconds on a CPU, per thread, as
//! the scheduler last accounted them: a few milliseconds of granularity); on a system without
//! it the CPU columns are left out. `busiest thread` is the most CPU one thread spent in the
//! phase: next to `cpu` it says how much of the phase could use a second core, whatever the
//! load of the machine.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Whether `FLUXGATE_TIMINGS` asks for timings (set, and not `0` or empty).
fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var_os("FLUXGATE_TIMINGS").is_some_and(|v| !v.is_empty() && v != "0")
    })
}

/// The CPU time of each thread of this process so far (thread id -> nanoseconds), when the
/// kernel says.
fn cpu_now() -> Option<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        let ns = stat
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())
            .unwrap_or(0);
        out.insert(task.file_name().to_string_lossy().into_owned(), ns);
    }
    Some(out)
}

/// The minor page faults of this process so far (field 10 of `/proc/self/stat`): each is a
/// fresh page of memory the kernel zeroed, so a phase's count says how much memory it touched
/// for the first time.
fn faults_now() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after it do not.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(7)?.parse().ok()
}

/// The CPU time all threads spent between `a` and `b`, and the most one thread spent: when
/// the two are close, the phase ran on one core whatever the number of cores.
fn spent(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>) -> (Duration, Duration) {
    let mut total = 0;
    let mut busiest = 0;
    for (tid, ns) in b {
        let d = ns.saturating_sub(a.get(tid).copied().unwrap_or(0));
        total += d;
        busiest = busiest.max(d);
    }
    (Duration::from_nanos(total), Duration::from_nanos(busiest))
}

/// Runs `f` as the phase `name`, timed when the switch is on.
pub fn phase<T>(name: &str, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    let (wall, cpu, faults) = (Instant::now(), cpu_now(), faults_now());
    let out = f();
    let wall = wall.elapsed();
    let faults = match (faults, faults_now()) {
        (Some(a), Some(b)) => format!("  page faults {:>7}", b.saturating_sub(a)),
        _ => String::new(),
    };
    let line = match (cpu, cpu_now()) {
        (Some(a), Some(b)) => {
            let (cpu, busiest) = spent(&a, &b);
            format!(
                "fluxgate timings: {name:<10} wall {:>8.1} ms  cpu {:>8.1} ms  cpu/wall {:.2}  \
                 busiest thread {:>8.1} ms{faults}",
                ms(wall),
                ms(cpu),
                cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9),
                ms(busiest)
            )
        }
        _ => format!(
            "fluxgate timings: {name:<10} wall {:>8.1} ms{faults}",
            ms(wall)
        ),
    };
    // Timings carry names and durations only: nothing to mask.
    eprintln!("{line}");
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
