//! sprig's arithmetic (int64 through spf13/cast, floats for the `*f` forms) and conversions.

use fluxgate_gotemplate::{Arity, FuncError, Funcs, Value};

use super::{to_f64, to_i64};

fn i(v: i64) -> Result<Value, FuncError> {
    Ok(Value::Int64(v))
}

pub fn add(f: &mut Funcs) {
    f.insert("add1", Arity::Exact(1), |_, a| {
        i(to_i64(&a[0]).wrapping_add(1))
    });
    f.insert("add", Arity::AtLeast(0), |_, a| {
        i(a.iter().map(to_i64).fold(0, i64::wrapping_add))
    });
    f.insert("sub", Arity::Exact(2), |_, a| {
        i(to_i64(&a[0]).wrapping_sub(to_i64(&a[1])))
    });
    f.insert("mul", Arity::AtLeast(1), |_, a| {
        i(a.iter().map(to_i64).fold(1, i64::wrapping_mul))
    });
    f.insert("div", Arity::Exact(2), |_, a| {
        let d = to_i64(&a[1]);
        if d == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        i(to_i64(&a[0]).wrapping_div(d))
    });
    f.insert("mod", Arity::Exact(2), |_, a| {
        let d = to_i64(&a[1]);
        if d == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        i(to_i64(&a[0]).wrapping_rem(d))
    });
    f.insert("max", Arity::AtLeast(1), |_, a| {
        i(a.iter().map(to_i64).max().unwrap_or(0))
    });
    f.insert("min", Arity::AtLeast(1), |_, a| {
        i(a.iter().map(to_i64).min().unwrap_or(0))
    });
    f.insert("add1f", Arity::Exact(1), |_, a| {
        Ok(Value::Float(to_f64(&a[0]) + 1.0))
    });
    f.insert("addf", Arity::AtLeast(0), |_, a| {
        Ok(Value::Float(a.iter().map(to_f64).sum()))
    });
    f.insert("subf", Arity::AtLeast(1), |_, a| {
        Ok(Value::Float(
            a[1..].iter().map(to_f64).fold(to_f64(&a[0]), |x, y| x - y),
        ))
    });
    f.insert("mulf", Arity::AtLeast(1), |_, a| {
        Ok(Value::Float(a.iter().map(to_f64).product()))
    });
    f.insert("divf", Arity::AtLeast(1), |_, a| {
        Ok(Value::Float(
            a[1..].iter().map(to_f64).fold(to_f64(&a[0]), |x, y| x / y),
        ))
    });
    f.insert("maxf", Arity::AtLeast(1), |_, a| {
        Ok(Value::Float(
            a.iter().map(to_f64).fold(f64::NEG_INFINITY, f64::max),
        ))
    });
    f.insert("minf", Arity::AtLeast(1), |_, a| {
        Ok(Value::Float(
            a.iter().map(to_f64).fold(f64::INFINITY, f64::min),
        ))
    });
    f.insert("floor", Arity::Exact(1), |_, a| {
        Ok(Value::Float(to_f64(&a[0]).floor()))
    });
    f.insert("ceil", Arity::Exact(1), |_, a| {
        Ok(Value::Float(to_f64(&a[0]).ceil()))
    });
    f.insert("round", Arity::AtLeast(2), |_, a| {
        let places = i32::try_from(to_i64(&a[1])).unwrap_or(0);
        let half = a.get(2).map_or(0.5, to_f64);
        let pow = 10f64.powi(places);
        let digit = pow * to_f64(&a[0]);
        let (int, frac) = (digit.trunc(), digit.fract());
        let r = if frac >= half { int + 1.0 } else { int };
        Ok(Value::Float(r / pow))
    });
    f.insert("int", Arity::Exact(1), |_, a| Ok(Value::Int(to_i64(&a[0]))));
    f.insert("int64", Arity::Exact(1), |_, a| {
        Ok(Value::Int64(to_i64(&a[0])))
    });
    f.insert("float64", Arity::Exact(1), |_, a| {
        Ok(Value::Float(to_f64(&a[0])))
    });
    f.insert("atoi", Arity::Exact(1), |_, a| {
        Ok(Value::Int(super::arg_str(a, 0)?.parse().unwrap_or(0)))
    });
    f.insert("toDecimal", Arity::Exact(1), |_, a| {
        Ok(Value::Int64(
            i64::from_str_radix(&super::strval(&a[0]), 8).unwrap_or(0),
        ))
    });
}
