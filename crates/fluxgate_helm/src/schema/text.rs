//! The words of santhosh-tekuri/jsonschema v6 (the validator helm v4.3.2 links), as its
//! English `message.Printer` prints them: quoted strings in single quotes, numbers with
//! thousands separators and exponents as `1×10⁰⁶`.

use serde_json::Value as Json;

/// `quote`: Go's `%q` with `\"` unescaped and `'` escaped, in single quotes.
pub fn quote(s: &str) -> String {
    let q = fluxgate_gotemplate::format::quote(s);
    let inner = &q[1..q.len() - 1];
    format!("'{}'", inner.replace("\\\"", "\"").replace('\'', "\\'"))
}

/// `joinQuoted(arr, ", ")`.
pub fn join_quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|s| quote(s))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `display`: a primitive as `%v` prints it (schema numbers keep their JSON text), a string
/// quoted, arrays and objects as `value`.
pub fn display(v: &Json) -> String {
    match v {
        Json::String(s) => quote(s),
        Json::Array(_) | Json::Object(_) => "value".into(),
        Json::Null => "<nil>".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
    }
}

/// An integer as the printer's `%d` shows it: `65,536`.
pub fn int(n: usize) -> String {
    group(&n.to_string())
}

/// A float64 as the printer's `%v` shows it: Go's shortest `%g` (exponent below -4 or from
/// 6 up), the integer part grouped, the exponent as `×10` and superscript digits (at least two).
pub fn float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    // Rust's `{:e}` is the shortest round-trip form: `1.2345e3`, `1e-6`.
    let e = format!("{:e}", f.abs());
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let mut sup = String::new();
        if exp < 0 {
            sup.push('⁻');
        }
        for c in format!("{:02}", exp.unsigned_abs()).chars() {
            sup.push(superscript(c));
        }
        return format!("{sign}{mantissa}×10{sup}");
    }
    let point = exp + 1;
    let (int_part, frac) = if point <= 0 {
        (
            "0".to_string(),
            "0".repeat(point.unsigned_abs() as usize) + &digits,
        )
    } else {
        let p = point.unsigned_abs() as usize;
        if digits.len() <= p {
            (
                digits.clone() + &"0".repeat(p - digits.len()),
                String::new(),
            )
        } else {
            (digits[..p].to_string(), digits[p..].to_string())
        }
    };
    if frac.is_empty() {
        format!("{sign}{}", group(&int_part))
    } else {
        format!("{sign}{}.{frac}", group(&int_part))
    }
}

fn superscript(c: char) -> char {
    match c {
        '0' => '⁰',
        '1' => '¹',
        '2' => '²',
        '3' => '³',
        '4' => '⁴',
        '5' => '⁵',
        '6' => '⁶',
        '7' => '⁷',
        '8' => '⁸',
        _ => '⁹',
    }
}

fn group(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A JSON pointer of instance tokens (`/a/b~1c`), as `jsonPtr` writes it.
pub fn pointer(tokens: &[String]) -> String {
    let mut out = String::new();
    for t in tokens {
        out.push('/');
        out.push_str(&t.replace('~', "~0").replace('/', "~1"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_the_go_printer_does() {
        assert_eq!(float(1234.5), "1,234.5");
        assert_eq!(float(-5000.0), "-5,000");
        assert_eq!(float(-4999.5), "-4,999.5");
        assert_eq!(float(65536.0), "65,536");
        assert_eq!(float(0.001), "0.001");
        assert_eq!(float(0.000_001), "1×10⁻⁰⁶");
        assert_eq!(float(1e21), "1×10²¹");
        assert_eq!(float(123_456_789_012.0), "1.23456789012×10¹¹");
        assert_eq!(float(1e6), "1×10⁰⁶");
        assert_eq!(float(123_456.0), "123,456");
        assert_eq!(float(0.5), "0.5");
        assert_eq!(int(1000), "1,000");
        assert_eq!(int(12), "12");
    }

    #[test]
    fn strings_quote_as_santhosh_does() {
        assert_eq!(quote("x'y\"z\n"), "'x\\'y\"z\\n'");
        assert_eq!(quote("héllo"), "'héllo'");
    }
}
