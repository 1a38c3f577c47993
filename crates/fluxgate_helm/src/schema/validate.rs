//! The validator: JSON Schema drafts 4, 6, 7, 2019-09 and 2020-12, keyword by keyword in the
//! order santhosh-tekuri/jsonschema v6 evaluates them, so that its error tree (and the text
//! helm prints from it) comes out the same: `type`, `const`, `enum` and `format` stop at their
//! first failure; the keywords of objects, arrays, strings and numbers all report; `$ref`
//! alone counts before 2019-09; `allOf`/`anyOf`/`oneOf` nest their subschemas' errors.
//!
//! `unevaluatedProperties`/`unevaluatedItems` (2019-09 on) are evaluated last in a schema,
//! over the members and items that no keyword of that schema evaluated: `properties`,
//! `patternProperties`, `additionalProperties`, `items`/`prefixItems`/`additionalItems`,
//! `contains` (2020-12), an `unevaluated*` keyword, and those of every in-place subschema
//! (`$ref`, `$dynamicRef`, `allOf`/`anyOf`/`oneOf`, `if`/`then`/`else`, `dependentSchemas`)
//! that passed. As in santhosh, every `anyOf` branch is tried while something is left
//! unevaluated, and a passing `not` subschema counts as well (its error is raised anyway).
//!
//! Object members are visited in key order where Go visits a map in random order (helm's own
//! order of such errors changes from run to run). Content assertions are not evaluated
//! (helm's compiler leaves them off as well), nor is the schema itself checked against its
//! metaschema. An `invalid propertyName` error is
//! placed at the object that holds the name; helm v4.3.2 prints the location of whichever
//! sibling member it visited last (the validator shares one slice between siblings), which
//! changes from run to run.

use std::collections::BTreeSet;
use std::rc::Rc;

use foldhash::{HashMap, HashMapExt as _};
use serde_json::{Map, Number, Value as Json};

use super::doc::{Loc, Registry, escape_into, join, split_fragment};
use super::format;
use super::text::{display, float, int, join_quoted, quote};

/// One node of the error tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value's location (tokens of the instance).
    pub at: Vec<String>,
    pub kind: Kind,
    /// The keyword that failed (`type`, `required`, ...); empty for groups.
    pub keyword: &'static str,
    pub message: String,
    pub causes: Vec<Node>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Several errors of one schema at one value (`validation failed`).
    Group,
    /// A `$ref` whose target failed (shown only when it holds several errors).
    Reference,
    /// Any keyword's own failure.
    Keyword,
}

/// The members (of an object) or items (of an array) that no keyword has evaluated yet, for
/// `unevaluatedProperties`/`unevaluatedItems`. Empty when nobody needs them.
#[derive(Debug, Default)]
struct Uneval {
    props: BTreeSet<String>,
    items: BTreeSet<usize>,
}

impl Uneval {
    /// What a schema starts with for `v`: everything, if the schema itself or its caller
    /// needs to know, less what the schema's own `additionalProperties`/`items` evaluate
    /// wholesale (`unevalFrom`).
    fn start(obj: Option<Obj<'_>>, v: &Json, draft: u16, caller_needs: bool) -> Uneval {
        let mut u = Uneval::default();
        let has = |k: &str| {
            obj.is_some_and(|o| o.contains_key(k) && !(draft < 2019 && o.contains_key("$ref")))
        };
        let own = |k: &str| draft >= 2019 && has(k);
        match v {
            Json::Object(m)
                if !has("additionalProperties")
                    && (caller_needs || own("unevaluatedProperties")) =>
            {
                u.props = m.keys().cloned().collect();
            }
            Json::Array(a) => {
                let (all, n) = if draft < 2020 {
                    match obj.and_then(|o| o.get("items")).filter(|_| has("items")) {
                        Some(Json::Array(list)) => (has("additionalItems"), list.len()),
                        Some(_) => (true, 0),
                        None => (false, 0),
                    }
                } else {
                    let n = obj
                        .and_then(|o| o.get("prefixItems"))
                        .and_then(Json::as_array)
                        .filter(|_| has("prefixItems"))
                        .map_or(0, Vec::len);
                    (has("items"), n)
                };
                if !all && (caller_needs || own("unevaluatedItems")) && n < a.len() {
                    u.items = (n..a.len()).collect();
                }
            }
            _ => {}
        }
        u
    }

    fn is_empty(&self) -> bool {
        self.props.is_empty() && self.items.is_empty()
    }

    /// What a passing in-place subschema evaluated counts here too.
    fn merge(&mut self, other: &Uneval) {
        self.props.retain(|p| other.props.contains(p));
        self.items.retain(|i| other.items.contains(i));
    }
}

/// A schema object, with the keywords it holds noted once: most lookups of the validator are
/// for keywords a schema does not have, and those are answered without hashing.
#[derive(Clone, Copy)]
struct Obj<'r> {
    map: &'r Map<String, Json>,
    mask: u64,
}

impl<'r> Obj<'r> {
    fn new(map: &'r Map<String, Json>) -> Obj<'r> {
        let mask = map.keys().fold(0, |m, k| m | keyword_bit(k));
        Obj { map, mask }
    }

    fn get(&self, k: &str) -> Option<&'r Json> {
        let bit = keyword_bit(k);
        if bit != 0 && self.mask & bit == 0 {
            return None;
        }
        lookup(self.map, k)
    }

    fn contains_key(&self, k: &str) -> bool {
        self.get(k).is_some()
    }
}

/// `map[k]`, by a scan where the map is small (cheaper than hashing `k`).
fn lookup<'a>(map: &'a Map<String, Json>, k: &str) -> Option<&'a Json> {
    if map.len() <= 8 {
        map.iter()
            .find(|(key, _)| key.as_str() == k)
            .map(|(_, v)| v)
    } else {
        map.get(k)
    }
}

/// The bit of a keyword the validator looks up; 0 for any other key.
fn keyword_bit(k: &str) -> u64 {
    match k {
        "$ref" => 1 << 0,
        "$recursiveRef" => 1 << 1,
        "$dynamicRef" => 1 << 2,
        "type" => 1 << 3,
        "const" => 1 << 4,
        "enum" => 1 << 5,
        "format" => 1 << 6,
        "properties" => 1 << 7,
        "patternProperties" => 1 << 8,
        "additionalProperties" => 1 << 9,
        "required" => 1 << 10,
        "dependencies" => 1 << 11,
        "dependentRequired" => 1 << 12,
        "dependentSchemas" => 1 << 13,
        "propertyNames" => 1 << 14,
        "minProperties" => 1 << 15,
        "maxProperties" => 1 << 16,
        "items" => 1 << 17,
        "prefixItems" => 1 << 18,
        "additionalItems" => 1 << 19,
        "contains" => 1 << 20,
        "minContains" => 1 << 21,
        "maxContains" => 1 << 22,
        "minItems" => 1 << 23,
        "maxItems" => 1 << 24,
        "uniqueItems" => 1 << 25,
        "unevaluatedItems" => 1 << 26,
        "unevaluatedProperties" => 1 << 27,
        "minLength" => 1 << 28,
        "maxLength" => 1 << 29,
        "pattern" => 1 << 30,
        "minimum" => 1 << 31,
        "maximum" => 1 << 32,
        "exclusiveMinimum" => 1 << 33,
        "exclusiveMaximum" => 1 << 34,
        "multipleOf" => 1 << 35,
        "not" => 1 << 36,
        "allOf" => 1 << 37,
        "anyOf" => 1 << 38,
        "oneOf" => 1 << 39,
        "if" => 1 << 40,
        "then" => 1 << 41,
        "else" => 1 << 42,
        _ => 0,
    }
}

/// Deepest nesting of schemas followed for one value tree.
const MAX_DEPTH: usize = 400;

/// A schema being applied: its JSON (`None` where a pointer leads nowhere: it accepts every
/// value), its document, where it is there and the base URL its `$ref`s resolve against.
/// Its JSON pointer is that of its anchor (the document's root or a `$ref`'s target) and the
/// path from there to it, spelled out only for a cycle's error: moving to a subschema copies
/// no text.
#[derive(Clone)]
pub struct Cur<'r> {
    doc: usize,
    node: Option<&'r Json>,
    anchor: Option<&'r Json>,
    anchor_ptr: Rc<str>,
    base: Rc<str>,
    draft: u16,
    /// Whether the document has `$id`s.
    ids: bool,
}

impl<'r> Cur<'r> {
    /// Where `loc` (a registry location) is.
    pub fn at(reg: &'r Registry, loc: &Loc) -> Cur<'r> {
        let node = reg.get(loc);
        Cur {
            doc: loc.doc,
            node,
            anchor: node,
            anchor_ptr: Rc::from(loc.ptr.as_str()),
            base: Rc::from(loc.base.as_str()),
            draft: reg.draft(loc),
            ids: reg.ids(loc),
        }
    }

    /// The JSON pointer: the anchor's, then the keys from the anchor down to the node.
    fn ptr(&self) -> String {
        let mut out = self.anchor_ptr.to_string();
        if let (Some(anchor), Some(node)) = (self.anchor, self.node) {
            path_to(anchor, node, &mut out, 0);
        }
        out
    }
}

/// Appends to `out` the escaped keys from `from` down to `to` (the same JSON node, compared
/// by address); false when `to` is not below `from`.
fn path_to(from: &Json, to: &Json, out: &mut String, depth: usize) -> bool {
    if std::ptr::eq(from, to) {
        return true;
    }
    if depth > 1024 {
        return false;
    }
    let len = out.len();
    match from {
        Json::Object(o) => {
            for (k, v) in o {
                out.push('/');
                escape_into(k, out);
                if path_to(v, to, out, depth + 1) {
                    return true;
                }
                out.truncate(len);
            }
        }
        Json::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                out.push('/');
                out.push_str(&i.to_string());
                if path_to(v, to, out, depth + 1) {
                    return true;
                }
                out.truncate(len);
            }
        }
        _ => {}
    }
    false
}

/// A value's location in the instance: a chain of tokens up to the root, turned into
/// `Vec<String>` only for an error.
#[derive(Clone, Copy)]
pub struct At<'a> {
    parent: Option<&'a At<'a>>,
    tok: Tok<'a>,
}

#[derive(Clone, Copy)]
enum Tok<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> At<'a> {
    pub const ROOT: At<'static> = At {
        parent: None,
        tok: Tok::Root,
    };

    fn push(&'a self, tok: Tok<'a>) -> At<'a> {
        At {
            parent: Some(self),
            tok,
        }
    }

    /// The tokens, outermost first.
    pub fn tokens(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = Some(self);
        while let Some(a) = cur {
            match a.tok {
                Tok::Root => {}
                Tok::Key(k) => out.push(k.to_string()),
                Tok::Index(i) => out.push(i.to_string()),
            }
            cur = a.parent;
        }
        out.reverse();
        out
    }
}

pub struct Validator<'r> {
    reg: &'r Registry,
    /// (schema, value id) of each schema being applied, outermost first: a schema met again on
    /// the same value is a `$ref` cycle.
    stack: Vec<(Cur<'r>, usize)>,
    next_vid: usize,
    /// `$ref` targets already resolved: base URL -> reference -> target.
    refs: HashMap<Rc<str>, HashMap<&'r str, Option<Cur<'r>>>>,
}

fn node(at: &At<'_>, keyword: &'static str, message: String) -> Node {
    Node {
        at: at.tokens(),
        kind: Kind::Keyword,
        keyword,
        message,
        causes: Vec::new(),
    }
}

fn with_causes(mut n: Node, causes: Vec<Node>) -> Node {
    n.causes = causes;
    n
}

fn type_of(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

const TYPE_ORDER: [&str; 7] = [
    "null", "boolean", "number", "integer", "string", "array", "object",
];

fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn num(n: &Number) -> f64 {
    n.as_f64().unwrap_or(0.0)
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
pub fn equals(a: &Json, b: &Json) -> bool {
    match (a, b) {
        // Exact equality, as big.Rat compares.
        #[allow(clippy::float_cmp)]
        (Json::Number(x), Json::Number(y)) => num(x) == num(y),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equals(p, q))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| equals(v, w)))
        }
        _ => a == b,
    }
}

/// A number as decimal digits and a power of ten, from its shortest text.
fn decimal(n: &Number) -> Option<(i128, i32)> {
    if let Some(i) = n.as_i64() {
        return Some((i128::from(i), 0));
    }
    if let Some(u) = n.as_u64() {
        return Some((i128::from(u), 0));
    }
    let f = n.as_f64()?;
    let e = format!("{f:e}");
    let (m, x) = e.split_once('e')?;
    let x: i32 = x.parse().ok()?;
    let (int_part, frac) = m.split_once('.').unwrap_or((m, ""));
    let digits: i128 = format!("{int_part}{frac}").parse().ok()?;
    Some((digits, x - i32::try_from(frac.len()).ok()?))
}

/// Whether `a / b` is an integer, exactly (as big.Rat does) where the digits allow.
fn multiple_of(a: &Number, b: &Number) -> bool {
    if let (Some((ma, ea)), Some((mb, eb))) = (decimal(a), decimal(b))
        && mb != 0
    {
        let e = ea.min(eb);
        let scale = |m: i128, d: i32| -> Option<i128> {
            10i128
                .checked_pow(u32::try_from(d).ok()?)
                .and_then(|p| m.checked_mul(p))
        };
        if let (Some(x), Some(y)) = (scale(ma, ea - e), scale(mb, eb - e)) {
            return x.checked_rem(y) == Some(0);
        }
    }
    let q = num(a) / num(b);
    q.is_finite() && q.fract() == 0.0
}

impl<'r> Validator<'r> {
    pub fn new(reg: &'r Registry) -> Validator<'r> {
        Validator {
            reg,
            stack: Vec::new(),
            next_vid: 0,
            refs: HashMap::new(),
        }
    }

    /// The errors of `v` against the schema at `loc`, as the top level returns them.
    pub fn validate_root(&mut self, loc: &Cur<'r>, v: &Json) -> Vec<Node> {
        match self.validate(loc, v, &At::ROOT, false, 0, false) {
            Ok(_) => Vec::new(),
            Err(n) if n.kind == Kind::Group => n.causes,
            Err(n) => vec![n],
        }
    }

    /// The subschema at `keys` below `loc` (each key a member name or an array index).
    fn child(loc: &Cur<'r>, keys: &[&str]) -> Cur<'r> {
        let mut node = loc.node;
        for k in keys {
            node = match node {
                Some(Json::Object(o)) => lookup(o, k),
                Some(Json::Array(a)) => k.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            };
        }
        Self::sub(loc, node)
    }

    /// `node`, a subschema of `loc` (a member's value, at any depth), as a [`Cur`].
    fn sub(loc: &Cur<'r>, node: Option<&'r Json>) -> Cur<'r> {
        let key = if loc.draft == 4 { "id" } else { "$id" };
        let base = match node {
            Some(Json::Object(o)) if loc.ids => match lookup(o, key) {
                Some(Json::String(id)) if !id.starts_with('#') => {
                    Rc::from(split_fragment(&join(&loc.base, id)).0)
                }
                _ => loc.base.clone(),
            },
            _ => loc.base.clone(),
        };
        Cur {
            doc: loc.doc,
            node,
            anchor: loc.anchor,
            anchor_ptr: loc.anchor_ptr.clone(),
            base,
            draft: loc.draft,
            ids: loc.ids,
        }
    }

    /// `validateVal`: a member or item of `v` against a subschema.
    fn validate_val(
        &mut self,
        loc: &Cur<'r>,
        v: &Json,
        at: &At<'_>,
        tok: Tok<'_>,
        bool_only: bool,
    ) -> Result<(), Node> {
        let at = at.push(tok);
        self.next_vid += 1;
        let vid = self.next_vid;
        self.validate(loc, v, &at, bool_only, vid, false).map(drop)
    }

    /// `v` against the schema at `loc`; what it leaves unevaluated when it passes.
    #[allow(clippy::too_many_lines)]
    fn validate(
        &mut self,
        loc: &Cur<'r>,
        v: &Json,
        at: &At<'_>,
        bool_only: bool,
        vid: usize,
        caller_needs: bool,
    ) -> Result<Uneval, Node> {
        let Some(schema) = loc.node else {
            return Ok(Uneval::start(None, v, 0, caller_needs));
        };
        let obj = schema.as_object().map(Obj::new);
        let mut uneval = Uneval::start(obj, v, loc.draft, caller_needs);
        let obj = match (schema, obj) {
            (Json::Bool(false), _) => return Err(node(at, "false", "false schema".into())),
            (_, Some(o)) => o,
            // `true`, and anything that is not a schema, accepts every value.
            _ => return Ok(uneval),
        };
        // A schema met again on the same value without consuming any of it: a `$ref` cycle.
        // Equal pointers lead to the same node: only then are the pointers compared.
        for (other, id) in self.stack.iter().rev() {
            if *id != vid {
                break;
            }
            if other.doc == loc.doc
                && other.node.is_some_and(|n| std::ptr::eq(n, schema))
                && other.ptr() == loc.ptr()
            {
                let ptr = loc.ptr();
                let url = format!("{}#{ptr}", self.reg.docs[loc.doc].url);
                return Err(node(
                    at,
                    "$ref",
                    format!(
                        "both {ptr} and {ptr} resolve to {} causing reference cycle",
                        super::doc::go_quote(&url)
                    ),
                ));
            }
        }
        if self.stack.len() > MAX_DEPTH {
            return Err(node(
                at,
                "$ref",
                format!("schemas nest deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.stack.push((loc.clone(), vid));
        let out = self.apply(loc, obj, v, at, bool_only, vid, &mut uneval);
        self.stack.pop();
        out.map(|()| uneval)
    }

    #[allow(clippy::too_many_lines, clippy::too_many_arguments)]
    fn apply(
        &mut self,
        loc: &Cur<'r>,
        obj: Obj<'r>,
        v: &Json,
        at: &At<'_>,
        bool_only: bool,
        vid: usize,
        uneval: &mut Uneval,
    ) -> Result<(), Node> {
        let draft = loc.draft;
        let mut errors: Vec<Node> = Vec::new();

        if let Some(Json::String(r)) = obj.get("$ref") {
            let res = self.validate_ref(loc, r, "$ref", v, at, bool_only, vid, uneval);
            if draft < 2019 {
                // Before 2019-09 a `$ref` replaces every keyword beside it.
                return res;
            }
            if let Err(e) = res {
                errors.push(e);
            }
        }
        if let Some(t) = obj.get("type") {
            let want: Vec<&str> = match t {
                Json::String(s) => vec![s.as_str()],
                Json::Array(a) => a.iter().filter_map(Json::as_str).collect(),
                _ => Vec::new(),
            };
            let got = type_of(v);
            let ok = want.is_empty()
                || want.contains(&got)
                || (got == "number"
                    && want.contains(&"integer")
                    && matches!(v, Json::Number(n) if is_integer(n)));
            if !ok {
                let want: Vec<&str> = TYPE_ORDER
                    .iter()
                    .copied()
                    .filter(|t| want.contains(t))
                    .collect();
                return Err(node(
                    at,
                    "type",
                    format!("got {got}, want {}", want.join(" or ")),
                ));
            }
        }
        if draft >= 6
            && let Some(c) = obj.get("const")
            && !equals(v, c)
        {
            let msg = match c {
                Json::Array(_) | Json::Object(_) => "'const' failed".to_string(),
                other => format!("value must be {}", display(other)),
            };
            return Err(node(at, "const", msg));
        }
        if let Some(Json::Array(items)) = obj.get("enum") {
            let type_ok = items.iter().any(|i| {
                type_of(i) == type_of(v)
                    || (matches!(i, Json::Number(_)) && matches!(v, Json::Number(_)))
            });
            if !(type_ok && items.iter().any(|i| equals(v, i))) {
                let primitive = items
                    .iter()
                    .all(|i| !matches!(i, Json::Array(_) | Json::Object(_)));
                let msg = if !primitive {
                    "'enum' failed".to_string()
                } else if items.len() == 1 {
                    format!("value must be {}", display(&items[0]))
                } else {
                    format!(
                        "value must be one of {}",
                        items.iter().map(display).collect::<Vec<_>>().join(", ")
                    )
                };
                return Err(node(at, "enum", msg));
            }
        }
        if draft < 2019
            && let Some(Json::String(f)) = obj.get("format")
            && let Some(err) = format::check(f, v)
        {
            return Err(node(
                at,
                "format",
                format!("{} is not valid {f}: {err}", display(v)),
            ));
        }

        match v {
            Json::Object(m) => self.object(loc, obj, m, at, bool_only, draft, uneval, &mut errors),
            Json::Array(a) => self.array(loc, obj, a, at, bool_only, draft, uneval, &mut errors),
            Json::String(s) => string(obj, s, at, draft, &mut errors),
            Json::Number(n) => number(obj, n, at, &mut errors),
            _ => {}
        }

        if errors.is_empty() || !bool_only {
            if draft >= 2019 {
                for key in ["$recursiveRef", "$dynamicRef"] {
                    if let Some(Json::String(r)) = obj.get(key) {
                        let kw = if key == "$dynamicRef" {
                            "$dynamicRef"
                        } else {
                            "$recursiveRef"
                        };
                        if let Err(e) = self.validate_ref(loc, r, kw, v, at, bool_only, vid, uneval)
                        {
                            errors.push(e);
                        }
                    }
                }
            }
            self.conditions(loc, obj, v, at, bool_only, draft, uneval, &mut errors);
            if draft >= 2019 {
                self.unevaluated(loc, obj, v, at, bool_only, uneval, &mut errors);
            }
        }

        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(Node {
                at: at.tokens(),
                kind: Kind::Group,
                keyword: "",
                message: "validation failed".into(),
                causes: errors,
            }),
        }
    }

    /// Where reference `r` (in a schema whose base URL is `loc.base`) leads, resolved once
    /// per validation.
    fn target(&mut self, loc: &Cur<'r>, r: &'r str) -> Option<Cur<'r>> {
        if let Some(t) = self.refs.get(&*loc.base).and_then(|m| m.get(r)) {
            return t.clone();
        }
        let url = join(&loc.base, r);
        let t = self.reg.find(&url).map(|l| Cur::at(self.reg, &l));
        self.refs
            .entry(loc.base.clone())
            .or_default()
            .insert(r, t.clone());
        t
    }

    #[allow(clippy::too_many_arguments)]
    fn validate_ref(
        &mut self,
        loc: &Cur<'r>,
        r: &'r str,
        keyword: &'static str,
        v: &Json,
        at: &At<'_>,
        bool_only: bool,
        vid: usize,
        uneval: &mut Uneval,
    ) -> Result<(), Node> {
        let Some(target) = self.target(loc, r) else {
            let url = join(&loc.base, r);
            return Err(node(
                at,
                keyword,
                format!("{} not found", super::doc::go_quote(&url)),
            ));
        };
        match self.validate(&target, v, at, bool_only, vid, !uneval.is_empty()) {
            Ok(sub) => {
                uneval.merge(&sub);
                Ok(())
            }
            Err(e) => {
                let causes = if e.kind == Kind::Group {
                    e.causes
                } else {
                    vec![e]
                };
                Err(Node {
                    at: at.tokens(),
                    kind: Kind::Reference,
                    keyword,
                    message: "validation failed".into(),
                    causes,
                })
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn object(
        &mut self,
        loc: &Cur<'r>,
        s: Obj<'r>,
        m: &Map<String, Json>,
        at: &At<'_>,
        bool_only: bool,
        draft: u16,
        uneval: &mut Uneval,
        errors: &mut Vec<Node>,
    ) {
        if let Some(min) = s.get("minProperties").and_then(Json::as_u64)
            && (m.len() as u64) < min
        {
            errors.push(node(
                at,
                "minProperties",
                format!(
                    "minProperties: got {}, want {}",
                    int(m.len()),
                    int(min as usize)
                ),
            ));
        }
        if let Some(max) = s.get("maxProperties").and_then(Json::as_u64)
            && (m.len() as u64) > max
        {
            errors.push(node(
                at,
                "maxProperties",
                format!(
                    "maxProperties: got {}, want {}",
                    int(m.len()),
                    int(max as usize)
                ),
            ));
        }
        if let Some(Json::Array(req)) = s.get("required") {
            let missing = missing(m, req);
            if !missing.is_empty() {
                let msg = if missing.len() == 1 {
                    format!("missing property {}", quote(&missing[0]))
                } else {
                    format!("missing properties {}", join_quoted(&missing))
                };
                errors.push(node(at, "required", msg));
            }
        }
        if bool_only && !errors.is_empty() {
            return;
        }
        if let Some(Json::Object(deps)) = s.get("dependencies") {
            for (p, dep) in deps {
                if !m.contains_key(p) {
                    continue;
                }
                if let Json::Array(req) = dep {
                    let missing = missing(m, req);
                    if !missing.is_empty() {
                        errors.push(node(
                            at,
                            "dependencies",
                            format!(
                                "properties {} required, if {} exists",
                                join_quoted(&missing),
                                quote(p)
                            ),
                        ));
                    }
                } else {
                    let sub = Self::child(loc, &["dependencies", p]);
                    if let Err(e) =
                        self.validate_self(&sub, &Json::Object(m.clone()), at, false, uneval)
                    {
                        errors.push(e);
                    }
                }
            }
        }
        let props = s.get("properties").and_then(Json::as_object);
        let patterns: Vec<(&Json, regex::Regex)> = s
            .get("patternProperties")
            .and_then(Json::as_object)
            .map(|p| {
                p.iter()
                    .filter_map(|(k, sub)| format::regex(k).map(|r| (sub, r)))
                    .collect()
            })
            .unwrap_or_default();
        let additional = s.get("additionalProperties");
        let mut not_allowed = Vec::new();
        for (name, value) in m {
            if bool_only && !errors.is_empty() {
                return;
            }
            let mut evaluated = false;
            if let Some(schema) = props.and_then(|p| p.get(name)) {
                evaluated = true;
                let sub = Self::sub(loc, Some(schema));
                if let Err(e) = self.validate_val(&sub, value, at, Tok::Key(name), bool_only) {
                    errors.push(e);
                }
            }
            for (schema, re) in &patterns {
                if re.is_match(name) {
                    evaluated = true;
                    let sub = Self::sub(loc, Some(schema));
                    if let Err(e) = self.validate_val(&sub, value, at, Tok::Key(name), bool_only) {
                        errors.push(e);
                    }
                }
            }
            if !evaluated && additional.is_some() {
                evaluated = true;
                match additional {
                    Some(Json::Bool(false)) => not_allowed.push(name.clone()),
                    Some(schema @ Json::Object(_)) => {
                        let sub = Self::sub(loc, Some(schema));
                        if let Err(e) =
                            self.validate_val(&sub, value, at, Tok::Key(name), bool_only)
                        {
                            errors.push(e);
                        }
                    }
                    _ => {}
                }
            }
            if evaluated {
                uneval.props.remove(name);
            }
        }
        if !not_allowed.is_empty() {
            errors.push(node(
                at,
                "additionalProperties",
                format!(
                    "additional properties {} not allowed",
                    join_quoted(&not_allowed)
                ),
            ));
        }
        if draft == 4 {
            return;
        }
        if s.contains_key("propertyNames") {
            let sub = Self::child(loc, &["propertyNames"]);
            for name in m.keys() {
                let errs = {
                    let mut inner = Validator::new(self.reg);
                    inner.validate_root(&sub, &Json::String(name.clone()))
                };
                if !errs.is_empty() {
                    errors.push(with_causes(
                        node(
                            at,
                            "propertyNames",
                            format!("invalid propertyName {}", quote(name)),
                        ),
                        errs,
                    ));
                }
            }
        }
        if draft == 6 {
            return;
        }
        if draft >= 2019 {
            if let Some(Json::Object(ds)) = s.get("dependentSchemas") {
                for p in ds.keys() {
                    if m.contains_key(p) {
                        let sub = Self::child(loc, &["dependentSchemas", p]);
                        if let Err(e) =
                            self.validate_self(&sub, &Json::Object(m.clone()), at, false, uneval)
                        {
                            errors.push(e);
                        }
                    }
                }
            }
            if let Some(Json::Object(dr)) = s.get("dependentRequired") {
                for (p, req) in dr {
                    if let (true, Json::Array(req)) = (m.contains_key(p), req) {
                        let missing = missing(m, req);
                        if !missing.is_empty() {
                            errors.push(node(
                                at,
                                "dependentRequired",
                                format!(
                                    "properties {} required, if {} exists",
                                    join_quoted(&missing),
                                    quote(p)
                                ),
                            ));
                        }
                    }
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn array(
        &mut self,
        loc: &Cur<'r>,
        s: Obj<'r>,
        a: &[Json],
        at: &At<'_>,
        bool_only: bool,
        draft: u16,
        uneval: &mut Uneval,
        errors: &mut Vec<Node>,
    ) {
        if let Some(min) = s.get("minItems").and_then(Json::as_u64)
            && (a.len() as u64) < min
        {
            errors.push(node(
                at,
                "minItems",
                format!("minItems: got {}, want {}", int(a.len()), int(min as usize)),
            ));
        }
        if let Some(max) = s.get("maxItems").and_then(Json::as_u64)
            && (a.len() as u64) > max
        {
            errors.push(node(
                at,
                "maxItems",
                format!("maxItems: got {}, want {}", int(a.len()), int(max as usize)),
            ));
        }
        if s.get("uniqueItems") == Some(&Json::Bool(true)) && a.len() > 1 {
            'outer: for i in 1..a.len() {
                for j in 0..i {
                    if equals(&a[i], &a[j]) {
                        errors.push(node(
                            at,
                            "uniqueItems",
                            format!("items at {} and {} are equal", int(j), int(i)),
                        ));
                        break 'outer;
                    }
                }
            }
        }
        let item = |this: &mut Self, keys: &[&str], i: usize, errors: &mut Vec<Node>| {
            let sub = Self::child(loc, keys);
            if let Err(e) = this.validate_val(&sub, &a[i], at, Tok::Index(i), bool_only) {
                errors.push(e);
            }
        };
        if draft < 2020 {
            let mut evaluated = 0;
            match s.get("items") {
                Some(Json::Array(list)) => {
                    let n = list.len().min(a.len());
                    for i in 0..n {
                        let idx = i.to_string();
                        item(self, &["items", &idx], i, errors);
                    }
                    evaluated = n;
                    match s.get("additionalItems") {
                        Some(Json::Bool(false)) if evaluated != a.len() => {
                            errors.push(node(
                                at,
                                "additionalItems",
                                format!(
                                    "last {} additionalItem(s) not allowed",
                                    int(a.len() - evaluated)
                                ),
                            ));
                        }
                        Some(Json::Object(_)) => {
                            for i in evaluated..a.len() {
                                item(self, &["additionalItems"], i, errors);
                            }
                        }
                        _ => {}
                    }
                }
                Some(Json::Object(_) | Json::Bool(_)) => {
                    for i in 0..a.len() {
                        item(self, &["items"], i, errors);
                    }
                    evaluated = a.len();
                }
                _ => {}
            }
            let _ = evaluated;
        } else {
            let n = s
                .get("prefixItems")
                .and_then(Json::as_array)
                .map_or(0, |p| p.len().min(a.len()));
            for i in 0..n {
                let idx = i.to_string();
                item(self, &["prefixItems", &idx], i, errors);
            }
            if s.contains_key("items") {
                for i in n..a.len() {
                    item(self, &["items"], i, errors);
                }
            }
        }
        if draft >= 6 && s.contains_key("contains") {
            let sub = Self::child(loc, &["contains"]);
            let mut errs = Vec::new();
            let mut matched = Vec::new();
            for (i, x) in a.iter().enumerate() {
                match self.validate_val(&sub, x, at, Tok::Index(i), bool_only) {
                    Ok(()) => {
                        matched.push(i);
                        if draft >= 2020 {
                            uneval.items.remove(&i);
                        }
                    }
                    Err(e) => errs.push(e),
                }
            }
            let list = |m: &[usize]| {
                m.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let min_contains = if draft >= 2019 {
                s.get("minContains").and_then(Json::as_u64)
            } else {
                None
            };
            if let Some(min) = min_contains {
                if (matched.len() as u64) < min {
                    let msg = if matched.is_empty() {
                        format!(
                            "min {} items required to match contains schema, but none matched",
                            int(min as usize)
                        )
                    } else {
                        format!(
                            "min {} items required to match contains schema, but matched {} items at {}",
                            int(min as usize),
                            int(matched.len()),
                            list(&matched)
                        )
                    };
                    errors.push(with_causes(node(at, "minContains", msg), errs));
                }
            } else if matched.is_empty() {
                errors.push(with_causes(
                    node(at, "contains", "no items match contains schema".into()),
                    errs,
                ));
            }
            if draft >= 2019
                && let Some(max) = s.get("maxContains").and_then(Json::as_u64)
                && matched.len() as u64 > max
            {
                errors.push(node(
                    at,
                    "maxContains",
                    format!(
                        "max {} items required to match contains schema, but matched {} items at {}",
                        int(max as usize),
                        int(matched.len()),
                        list(&matched)
                    ),
                ));
            }
        }
    }

    /// `validateSelf`: the same value against another schema (allOf, not, if, ...).
    fn validate_self(
        &mut self,
        loc: &Cur<'r>,
        v: &Json,
        at: &At<'_>,
        bool_only: bool,
        uneval: &mut Uneval,
    ) -> Result<(), Node> {
        let vid = self.stack.last().map_or(0, |s| s.1);
        let sub = self.validate(loc, v, at, bool_only, vid, !uneval.is_empty())?;
        uneval.merge(&sub);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn conditions(
        &mut self,
        loc: &Cur<'r>,
        s: Obj<'r>,
        v: &Json,
        at: &At<'_>,
        bool_only: bool,
        draft: u16,
        uneval: &mut Uneval,
        errors: &mut Vec<Node>,
    ) {
        if s.contains_key("not") {
            let sub = Self::child(loc, &["not"]);
            if self.validate_self(&sub, v, at, true, uneval).is_ok() {
                errors.push(node(at, "not", "'not' failed".into()));
            }
        }
        let count = |k: &str| s.get(k).and_then(Json::as_array).map_or(0, Vec::len);
        let n = count("allOf");
        if n > 0 {
            let mut errs = Vec::new();
            for i in 0..n {
                let sub = Self::child(loc, &["allOf", &i.to_string()]);
                if let Err(e) = self.validate_self(&sub, v, at, bool_only, uneval) {
                    errs.push(e);
                    if bool_only {
                        break;
                    }
                }
            }
            if !errs.is_empty() {
                errors.push(with_causes(
                    node(at, "allOf", "'allOf' failed".into()),
                    errs,
                ));
            }
        }
        let n = count("anyOf");
        if n > 0 {
            let mut errs = Vec::new();
            let mut matched = false;
            for i in 0..n {
                let sub = Self::child(loc, &["anyOf", &i.to_string()]);
                match self.validate_self(&sub, v, at, bool_only, uneval) {
                    Ok(()) => {
                        matched = true;
                        // While something is unevaluated, every branch may evaluate more.
                        if uneval.is_empty() {
                            break;
                        }
                    }
                    Err(e) => errs.push(e),
                }
            }
            if !matched {
                errors.push(with_causes(
                    node(at, "anyOf", "'anyOf' failed".into()),
                    errs,
                ));
            }
        }
        let n = count("oneOf");
        if n > 0 {
            let mut errs = Vec::new();
            let mut matched: Option<usize> = None;
            for i in 0..n {
                let sub = Self::child(loc, &["oneOf", &i.to_string()]);
                if let Err(e) =
                    self.validate_self(&sub, v, at, bool_only || matched.is_some(), uneval)
                {
                    if matched.is_none() {
                        errs.push(e);
                    }
                } else {
                    if let Some(first) = matched {
                        errors.push(node(
                            at,
                            "oneOf",
                            format!("'oneOf' failed, subschemas {first}, {i} matched"),
                        ));
                        break;
                    }
                    matched = Some(i);
                }
            }
            if matched.is_none() {
                errors.push(with_causes(
                    node(at, "oneOf", "'oneOf' failed, none matched".into()),
                    errs,
                ));
            }
        }
        if draft >= 7 && s.contains_key("if") {
            let cond = Self::child(loc, &["if"]);
            let branch = if self.validate_self(&cond, v, at, true, uneval).is_ok() {
                "then"
            } else {
                "else"
            };
            // `if: true` never takes `else`, `if: false` never `then` (santhosh compiles
            // neither).
            let skip = matches!(
                (s.get("if"), branch),
                (Some(Json::Bool(true)), "else") | (Some(Json::Bool(false)), "then")
            );
            if !skip && s.contains_key(branch) {
                let sub = Self::child(loc, &[branch]);
                if let Err(e) = self.validate_self(&sub, v, at, false, uneval) {
                    errors.push(e);
                }
            }
        }
    }

    /// `unevaluatedProperties`/`unevaluatedItems`: the members and items left over, each
    /// against the subschema (Go visits them in map order; here in key/index order). Then
    /// all of them count as evaluated.
    #[allow(clippy::too_many_arguments)]
    fn unevaluated(
        &mut self,
        loc: &Cur<'r>,
        s: Obj<'r>,
        v: &Json,
        at: &At<'_>,
        bool_only: bool,
        uneval: &mut Uneval,
        errors: &mut Vec<Node>,
    ) {
        if let (Json::Object(m), true) = (v, s.contains_key("unevaluatedProperties")) {
            let sub = Self::child(loc, &["unevaluatedProperties"]);
            for name in std::mem::take(&mut uneval.props) {
                if let Some(value) = m.get(&name)
                    && let Err(e) = self.validate_val(&sub, value, at, Tok::Key(&name), bool_only)
                {
                    errors.push(e);
                }
            }
        }
        if let (Json::Array(a), true) = (v, s.contains_key("unevaluatedItems")) {
            let sub = Self::child(loc, &["unevaluatedItems"]);
            for i in std::mem::take(&mut uneval.items) {
                if let Some(item) = a.get(i)
                    && let Err(e) = self.validate_val(&sub, item, at, Tok::Index(i), bool_only)
                {
                    errors.push(e);
                }
            }
        }
    }
}

fn missing(m: &Map<String, Json>, req: &[Json]) -> Vec<String> {
    req.iter()
        .filter_map(Json::as_str)
        .filter(|p| !m.contains_key(*p))
        .map(ToString::to_string)
        .collect()
}

fn string(s: Obj<'_>, v: &str, at: &At<'_>, _draft: u16, errors: &mut Vec<Node>) {
    let len = v.chars().count();
    if let Some(min) = s.get("minLength").and_then(Json::as_u64)
        && (len as u64) < min
    {
        errors.push(node(
            at,
            "minLength",
            format!("minLength: got {}, want {}", int(len), int(min as usize)),
        ));
    }
    if let Some(max) = s.get("maxLength").and_then(Json::as_u64)
        && (len as u64) > max
    {
        errors.push(node(
            at,
            "maxLength",
            format!("maxLength: got {}, want {}", int(len), int(max as usize)),
        ));
    }
    if let Some(Json::String(p)) = s.get("pattern")
        && let Some(re) = format::regex(p)
        && !re.is_match(v)
    {
        errors.push(node(
            at,
            "pattern",
            format!("{} does not match pattern {}", quote(v), quote(p)),
        ));
    }
}

fn number(s: Obj<'_>, n: &Number, at: &At<'_>, errors: &mut Vec<Node>) {
    let x = num(n);
    let bound = |k: &str| s.get(k).and_then(Json::as_number).map(num);
    // A boolean `exclusiveMinimum: true` (draft 4's form) turns `minimum` exclusive.
    let (mut min, mut max) = (bound("minimum"), bound("maximum"));
    let mut xmin = bound("exclusiveMinimum");
    let mut xmax = bound("exclusiveMaximum");
    if s.get("exclusiveMinimum") == Some(&Json::Bool(true)) {
        xmin = min.take();
    }
    if s.get("exclusiveMaximum") == Some(&Json::Bool(true)) {
        xmax = max.take();
    }
    let mut push = |kw: &'static str, want: f64| {
        errors.push(node(
            at,
            kw,
            format!("{kw}: got {}, want {}", float(x), float(want)),
        ));
    };
    if let Some(m) = min
        && x < m
    {
        push("minimum", m);
    }
    if let Some(m) = max
        && x > m
    {
        push("maximum", m);
    }
    if let Some(m) = xmin
        && x <= m
    {
        push("exclusiveMinimum", m);
    }
    if let Some(m) = xmax
        && x >= m
    {
        push("exclusiveMaximum", m);
    }
    if let Some(Json::Number(d)) = s.get("multipleOf")
        && num(d) != 0.0
        && !multiple_of(n, d)
    {
        push("multipleOf", num(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiples_are_exact_on_decimals() {
        let n = |f: f64| Number::from_f64(f).expect("finite");
        assert!(multiple_of(&n(0.9), &n(0.3)));
        assert!(!multiple_of(&n(0.5), &n(0.3)));
        assert!(multiple_of(&Number::from(8), &Number::from(2)));
        assert!(!multiple_of(&Number::from(7), &Number::from(2)));
    }

    #[test]
    fn numbers_equal_by_value() {
        assert!(equals(&serde_json::json!(1), &serde_json::json!(1.0)));
        assert!(!equals(&serde_json::json!("1"), &serde_json::json!(1)));
    }
}
