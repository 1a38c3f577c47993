//! Go's `eq`, `ne`, `lt`, `le`, `gt`, `ge`: numbers compare only with numbers of the same
//! kind (an `int` with a `float64` is "incompatible types for comparison"), `int` and `int64`
//! compare by value, nil equals only nil, and `eq` takes several right-hand operands.

use crate::format::sprintf;
use crate::funcs::FuncError;
use crate::value::Value;

#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    String,
    /// Maps, slices, objects: comparable only by identity or against nil.
    Other,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Missing | Value::Nil => Kind::Invalid,
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) | Value::Int64(_) => Kind::Int,
        Value::Float(_) => Kind::Float,
        Value::String(_) => Kind::String,
        _ => Kind::Other,
    }
}

/// Go's reflect kind of a value that is not a basic one: maps and slices are not comparable
/// with each other.
fn reflect_kind(v: &Value) -> u8 {
    match v {
        Value::Map(_) => 1,
        Value::List(_) | Value::Bytes(_) => 2,
        _ => 3,
    }
}

/// Go 1.26's "incompatible types for comparison: float64 and int".
fn bad(a: &Value, b: &Value) -> String {
    format!(
        "incompatible types for comparison: {} and {}",
        a.type_name(),
        b.type_name()
    )
}
const BAD_TYPE: &str = "invalid type for comparison";

/// `eq arg1 arg2...`: whether `arg1` equals any of the others.
pub fn eq(arg1: &Value, rest: &[Value]) -> Result<bool, FuncError> {
    if rest.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let k1 = kind(arg1);
    for arg in rest {
        let k2 = kind(arg);
        let truth = if k1 == k2 {
            match (arg1, arg) {
                (Value::Bool(a), Value::Bool(b)) => a == b,
                (Value::String(a), Value::String(b)) => a == b,
                #[allow(clippy::float_cmp)] // Go's == on float64 is exact.
                (Value::Float(a), Value::Float(b)) => a == b,
                _ if k1 == Kind::Int => arg1.as_int() == arg.as_int(),
                _ if k1 == Kind::Invalid => true,
                (Value::Object(a), Value::Object(b)) => match (a.key(), b.key()) {
                    (Some(x), Some(y)) => x == y,
                    _ => std::rc::Rc::ptr_eq(a, b),
                },
                _ if reflect_kind(arg1) != reflect_kind(arg) => {
                    return Err(format!(
                        "non-comparable types {}: {}, {}: {}",
                        sprintf("%s", std::slice::from_ref(arg1)),
                        arg1.type_name(),
                        arg.type_name(),
                        sprintf("%v", std::slice::from_ref(arg))
                    )
                    .into());
                }
                (Value::Map(_) | Value::List(_) | Value::Bytes(_), _) => {
                    return Err(format!(
                        "non-comparable type {}: {}",
                        sprintf("%s", std::slice::from_ref(arg)),
                        arg.type_name()
                    )
                    .into());
                }
                _ => return Err(bad(arg1, arg).into()),
            }
        } else if k1 == Kind::Invalid || k2 == Kind::Invalid {
            false
        } else {
            return Err(bad(arg1, arg).into());
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `lt a b`.
pub fn lt(a: &Value, b: &Value) -> Result<bool, FuncError> {
    let (k1, k2) = (kind(a), kind(b));
    if matches!(k1, Kind::Invalid | Kind::Other) || matches!(k2, Kind::Invalid | Kind::Other) {
        return Err(BAD_TYPE.into());
    }
    if k1 != k2 {
        return Err(bad(a, b).into());
    }
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        (Value::String(x), Value::String(y)) => Ok(x < y),
        _ if k1 == Kind::Int => Ok(a.as_int() < b.as_int()),
        _ => Err(BAD_TYPE.into()),
    }
}

/// `le a b`.
pub fn le(a: &Value, b: &Value) -> Result<bool, FuncError> {
    Ok(lt(a, b)? || eq(a, std::slice::from_ref(b))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_comparison_rules() {
        assert_eq!(eq(&Value::Int(1), &[Value::Int64(1)]), Ok(true));
        assert_eq!(
            eq(&Value::Float(1.0), &[Value::Int(1)]),
            Err("incompatible types for comparison: float64 and int".into())
        );
        assert_eq!(
            eq(&Value::str("a"), &[Value::str("b"), Value::str("a")]),
            Ok(true)
        );
        assert_eq!(eq(&Value::Nil, &[Value::str("a")]), Ok(false));
        assert_eq!(eq(&Value::Nil, &[Value::Nil]), Ok(true));
        assert!(eq(&Value::empty_map(), &[Value::empty_map()]).is_err());
        assert_eq!(lt(&Value::Int(1), &Value::Int(2)), Ok(true));
        assert_eq!(lt(&Value::Nil, &Value::Int(2)), Err(BAD_TYPE.into()));
        assert_eq!(le(&Value::str("a"), &Value::str("a")), Ok(true));
    }
}
