//! Merging values trees with their locations: the winning node keeps where it was set.

use fluxgate_yaml::{Node, Value};

/// helmfile's environment merge (mergo with override): maps merge key by key, anything else in
/// `over` replaces what `base` has, except that a null in `over` replaces nothing.
pub fn merge_override(base: &mut Node, over: &Node) {
    match (&mut base.value, &over.value) {
        (Value::Map(b), Value::Map(o)) => {
            for (k, v) in o.iter() {
                match b.get_mut(k) {
                    Some(existing) => merge_override(existing, v),
                    None => {
                        if !v.is_null() {
                            b.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
        }
        (_, Value::Null) => {}
        _ => *base = over.clone(),
    }
}

/// helm's merge of `-f` values files and `--set` (strvals): maps merge key by key, anything
/// else in `over` (a null included) replaces what `base` has.
pub fn coalesce(base: &mut Node, over: &Node) {
    match (&mut base.value, &over.value) {
        (Value::Map(b), Value::Map(o)) => {
            for (k, v) in o.iter() {
                match b.get_mut(k) {
                    Some(existing) => coalesce(existing, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        _ => *base = over.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_one};

    fn y(file: &str, t: &str) -> Node {
        parse_one(file, t, Schema::Kube).0.unwrap()
    }

    #[test]
    fn coalesce_keeps_the_winner_location() {
        let mut a = y("a.yaml", "x:\n  y: 1\n  z: 2\nl: [1, 2]\n");
        let b = y("b.yaml", "x:\n  y: 3\nl: [9]\n");
        coalesce(&mut a, &b);
        let xy = a.path(&["x", "y"]).unwrap();
        assert_eq!(
            (xy.as_i64(), xy.loc.file.as_ref(), xy.loc.line),
            (Some(3), "b.yaml", 2)
        );
        let xz = a.path(&["x", "z"]).unwrap();
        assert_eq!((xz.as_i64(), xz.loc.file.as_ref()), (Some(2), "a.yaml"));
        assert_eq!(a.get("l").unwrap().as_seq().unwrap().len(), 1);
    }

    #[test]
    fn override_ignores_null() {
        let mut a = y("a.yaml", "x: 1\n");
        merge_override(&mut a, &y("b.yaml", "x: null\n"));
        assert_eq!(a.get("x").unwrap().as_i64(), Some(1));
        let mut c = y("a.yaml", "x: 1\n");
        coalesce(&mut c, &y("b.yaml", "x: null\n"));
        assert!(c.get("x").unwrap().is_null());
    }
}
