//! sprig's time functions on a fixed clock: `now` is the Unix epoch in UTC, so that renders
//! are reproducible; `dateModify` adds a Go duration (`5m0s`, `-1.5h`), `date` formats with
//! Go's reference layout (`2006-01-02T15:04:05Z07:00`).

use std::rc::Rc;

use fluxgate_gotemplate::{Arity, FuncError, Funcs, Object, Value};

use super::{arg_str, strval};

/// A point in time, in nanoseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Time(pub i128);

impl Object for Time {
    fn type_name(&self) -> String {
        "time.Time".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "Unix" => Value::Int64(i64::try_from(self.0.div_euclid(1_000_000_000)).unwrap_or(0)),
            "Year" => Value::Int(civil(self.0).0),
            "String" => Value::from(self.display()),
            _ => return None,
        })
    }
    fn call(&self, _: &str, _: &[Value]) -> Option<Result<Value, FuncError>> {
        None
    }
    fn has_method(&self, _: &str) -> bool {
        false
    }
    fn display(&self) -> String {
        format_layout(self.0, "2006-01-02 15:04:05.999999999 -0700 MST")
    }
    fn key(&self) -> Option<String> {
        Some(self.0.to_string())
    }
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_duration(s: &str) -> Option<i128> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if n == 0 {
            return None;
        }
        let num: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[u..];
        total += num * unit;
    }
    #[allow(clippy::cast_possible_truncation)] // durations fit in i128 nanoseconds
    let t = total as i128;
    Some(if neg { -t } else { t })
}

/// (year, month, day, hour, minute, second, nanosecond, weekday) of a UTC instant.
fn civil(nanos: i128) -> (i64, u32, u32, u32, u32, u32, u32, u32) {
    let secs = i64::try_from(nanos.div_euclid(1_000_000_000)).unwrap_or(0);
    let nano = u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let sod = u32::try_from(secs.rem_euclid(86_400)).unwrap_or(0);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    let weekday = u32::try_from((days + 4).rem_euclid(7)).unwrap_or(0);
    (
        y,
        m,
        d,
        sod / 3600,
        sod % 3600 / 60,
        sod % 60,
        nano,
        weekday,
    )
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Formats a UTC instant with a Go layout.
pub fn format_layout(nanos: i128, layout: &str) -> String {
    let (y, mo, d, h, mi, s, ns, wd) = civil(nanos);
    let month = MONTHS[(mo as usize).saturating_sub(1) % 12];
    let day = DAYS[wd as usize % 7];
    let tokens: &[(&str, String)] = &[
        ("January", month.to_string()),
        ("Monday", day.to_string()),
        ("2006", format!("{y:04}")),
        ("-07:00", "+00:00".into()),
        ("Z07:00", "Z".into()),
        ("-0700", "+0000".into()),
        ("Z0700", "Z".into()),
        (".000000000", format!(".{ns:09}")),
        (".999999999", frac(ns)),
        (".000", format!(".{:03}", ns / 1_000_000)),
        ("Jan", month[..3].to_string()),
        ("Mon", day[..3].to_string()),
        ("MST", "UTC".into()),
        ("01", format!("{mo:02}")),
        ("02", format!("{d:02}")),
        ("_2", format!("{d:>2}")),
        (
            "03",
            format!("{:02}", if h % 12 == 0 { 12 } else { h % 12 }),
        ),
        ("04", format!("{mi:02}")),
        ("05", format!("{s:02}")),
        ("06", format!("{:02}", y.rem_euclid(100))),
        ("15", format!("{h:02}")),
        ("PM", if h >= 12 { "PM" } else { "AM" }.into()),
        ("pm", if h >= 12 { "pm" } else { "am" }.into()),
        ("1", mo.to_string()),
        ("2", d.to_string()),
        ("3", (if h % 12 == 0 { 12 } else { h % 12 }).to_string()),
        ("4", mi.to_string()),
        ("5", s.to_string()),
    ];
    let mut out = String::new();
    let mut rest = layout;
    'outer: while !rest.is_empty() {
        for (tok, val) in tokens {
            if rest.starts_with(tok) {
                out.push_str(val);
                rest = &rest[tok.len()..];
                continue 'outer;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn frac(ns: u32) -> String {
    if ns == 0 {
        return String::new();
    }
    let s = format!(".{ns:09}");
    s.trim_end_matches('0').to_string()
}

fn time_arg(v: &Value) -> Option<i128> {
    match v {
        Value::Object(o) => o.key().and_then(|k| k.parse().ok()),
        Value::Int(i) | Value::Int64(i) => Some(i128::from(*i) * 1_000_000_000),
        _ => None,
    }
}

fn t(n: i128) -> Value {
    Value::Object(Rc::new(Time(n)))
}

pub fn add(f: &mut Funcs) {
    f.insert("now", Arity::Exact(0), |_, _| Ok(t(0)));
    f.insert("date", Arity::Exact(2), |_, a| {
        Ok(Value::from(format_layout(
            time_arg(&a[1]).unwrap_or(0),
            &arg_str(a, 0)?,
        )))
    });
    for name in ["dateInZone", "date_in_zone"] {
        f.insert(name, Arity::Exact(3), |_, a| {
            Ok(Value::from(format_layout(
                time_arg(&a[1]).unwrap_or(0),
                &arg_str(a, 0)?,
            )))
        });
    }
    f.insert("htmlDate", Arity::Exact(1), |_, a| {
        Ok(Value::from(format_layout(
            time_arg(&a[0]).unwrap_or(0),
            "2006-01-02",
        )))
    });
    f.insert("htmlDateInZone", Arity::Exact(2), |_, a| {
        Ok(Value::from(format_layout(
            time_arg(&a[0]).unwrap_or(0),
            "2006-01-02",
        )))
    });
    f.insert("unixEpoch", Arity::Exact(1), |_, a| {
        Ok(Value::from(
            (time_arg(&a[0]).unwrap_or(0) / 1_000_000_000).to_string(),
        ))
    });
    f.insert("dateModify", Arity::Exact(2), |_, a| {
        let base = time_arg(&a[1]).unwrap_or(0);
        Ok(t(parse_duration(&arg_str(a, 0)?).map_or(base, |d| base + d)))
    });
    f.insert("mustDateModify", Arity::Exact(2), |_, a| {
        let base = time_arg(&a[1]).unwrap_or(0);
        let s = arg_str(a, 0)?;
        let d = parse_duration(&s).ok_or_else(|| {
            format!(
                "time: invalid duration {}",
                fluxgate_gotemplate::format::quote(&s)
            )
        })?;
        Ok(t(base + d))
    });
    f.insert("ago", Arity::Exact(1), |_, _| Ok(Value::str("0s")));
    f.insert("toDate", Arity::Exact(2), |_, _| Ok(t(0)));
    f.insert("mustToDate", Arity::Exact(2), |_, _| Ok(t(0)));
    f.insert("duration", Arity::Exact(1), |_, a| {
        Ok(Value::from(format!("{}s", strval(&a[0]))))
    });
    f.insert("durationRound", Arity::Exact(1), |_, a| {
        Ok(Value::from(strval(&a[0])))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_layouts() {
        assert_eq!(parse_duration("5m0s"), Some(300_000_000_000));
        assert_eq!(parse_duration("1.5h"), Some(5_400_000_000_000));
        assert_eq!(parse_duration(""), None);
        assert_eq!(parse_duration("5x"), None);
        assert_eq!(
            format_layout(0, "2006-01-02T15:04:05Z07:00 Mon Jan"),
            "1970-01-01T00:00:00Z Thu Jan"
        );
        assert_eq!(
            format_layout(86_400_000_000_000 * 365, "2006-01-02"),
            "1971-01-01"
        );
        assert_eq!(Time(0).display(), "1970-01-01 00:00:00 +0000 UTC");
    }
}
