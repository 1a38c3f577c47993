//! Lazy, recursive variable resolution: a variable is templated the first time something
//! reads it, in the context of one host and one scope, with cycle detection and the origin
//! chain of every value it was derived from.

use fluxgate_diagnostics::Annotate;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::Error;
use crate::problem::{Problem, ProblemKind};
use fluxgate_yaml::{Node, Value as Y};
use minijinja::value::{Enumerator, Object, ObjectRepr};
use minijinja::{ErrorKind, Value};

use crate::project::Data;
use crate::values::{OPAQUE, is_vault, node_to_value, value_to_node};

/// Which variables a host sees: Ansible's precedence depends on the play and role a value is
/// read from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every play of the playbook that targets the host, as if it were one play (what
    /// `fluxgate ansible vars` shows).
    Host,
    /// One play, by index in the flattened order.
    Play(usize),
    /// A task of a role inside a play: the role's own defaults and vars rank above the others.
    Role(usize, String),
    /// What entry `.1` of play `.0`'s `vars_files` is templated with: the layers below it and
    /// the extra vars (internal; Ansible templates `vars_files` names per host).
    #[doc(hidden)]
    VarsFile(usize, usize),
}

/// One step of an origin chain (the shared provenance type): a variable, the host it was
/// resolved for, the place that set it, and its precedence layer as `via` (`role defaults
/// (k3s_server)`, `group_vars/all`, `extra vars`...).
pub use fluxgate_diagnostics::Origin;

/// A resolved variable: its value (templated, native types kept), whether it depends on a
/// vault-encrypted value, and where it came from (its own definition first, then the
/// definitions it was derived from).
#[derive(Clone, Debug)]
pub struct Resolved {
    pub value: Node,
    pub opaque: bool,
    pub origin: Vec<Origin>,
}

/// Why a variable could not be resolved: this crate's error. It is reported as a finding
/// ([`ResolveError::to_diagnostic`]), so its message is the finding's.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{reason}")]
pub struct ResolveError {
    pub reason: Error,
    /// The chain that led there, outermost first.
    pub chain: Vec<Origin>,
}

impl ResolveError {
    /// Whether a variable was undefined (directly, or as the Jinja engine reports it).
    #[must_use]
    pub fn is_undefined(&self) -> bool {
        match &self.reason {
            Error::Undefined { .. } => true,
            Error::Template { reason } => reason.contains("is undefined"),
            _ => false,
        }
    }

    /// The problem: at the innermost definition, with the chain as notes.
    #[must_use]
    pub fn to_problem(&self) -> Problem {
        let loc = self.chain.last().map(|o| o.location.clone());
        let mut d = Problem::new(ProblemKind::Invalid, self.reason.to_string(), loc);
        for o in &self.chain {
            d = d.note(format!(
                "while resolving '{}' for {} ({}, {})",
                o.var_name(),
                o.host.as_deref().unwrap_or_default(),
                o.location,
                o.via
            ));
        }
        d
    }
}

/// A definition that won for a (scope, host): the node and the layer it came from.
#[derive(Clone, Debug)]
pub struct Def {
    pub node: Node,
    pub source: Arc<str>,
}

/// The winning definition of every variable for one (scope, host).
pub type Table = indexmap::IndexMap<String, Def>;

type Key = (Scope, String, String);
type Outcome = Result<Arc<Resolved>, ResolveError>;

/// Memoised results per (scope, host, variable).
#[derive(Default)]
pub struct Cache {
    pub results: Mutex<HashMap<Key, Outcome>>,
    pub tables: Mutex<HashMap<(Scope, String), Arc<Table>>>,
    /// Templated `vars_files` entries per (play, entry, host).
    pub vars_files: Mutex<HashMap<(usize, usize, String), Arc<crate::project::PerHostVarsFile>>>,
    /// Bytes of text rendered so far ([`MAX_RENDERED`] bounds it).
    pub rendered_bytes: std::sync::atomic::AtomicUsize,
}

struct Frame {
    key: Key,
    deps: Vec<Key>,
    opaque: bool,
}

thread_local! {
    static STACK: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
    /// Errors of nested resolutions that surfaced as "undefined" inside a template, so that
    /// the outer error can name the real cause.
    static NESTED: RefCell<Vec<(String, ResolveError)>> = const { RefCell::new(Vec::new()) };
    /// Names looked up and found undefined during the current template.
    static MISSING: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn take_from<T>(v: &mut Vec<T>, mark: usize) -> Vec<T> {
    let at = mark.min(v.len());
    v.split_off(at)
}

/// Deepest chain of variables that reference each other before resolution gives up.
const MAX_DEPTH: usize = 64;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The variables one host sees in one scope, as a template context.
#[derive(Debug)]
pub struct VarsView {
    pub data: Arc<Data>,
    pub scope: Scope,
    pub host: String,
    /// Extra names bound for one render (`item`, template-local vars).
    pub locals: Vec<(String, Value)>,
}

impl Object for VarsView {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        if let Some((_, v)) = self.locals.iter().find(|(k, _)| k == name) {
            return Some(v.clone());
        }
        if let Some(v) = self.data.magic(&self.scope, &self.host, name) {
            return Some(v);
        }
        if name == "vars" {
            return Some(Value::from_dyn_object(self.clone()));
        }
        match resolve(&self.data, &self.scope, &self.host, name) {
            Ok(r) => Some(node_to_value(&r.value)),
            Err(e) => {
                let undefined = e.is_undefined() && e.chain.len() <= 1;
                if undefined
                    && self
                        .data
                        .inventory
                        .hosts
                        .get(&self.host)
                        .is_some_and(|h| h.representative)
                {
                    return Some(Value::from(crate::values::symbolic(name)));
                }
                if !undefined {
                    NESTED.with(|n| n.borrow_mut().push((name.to_string(), e)));
                }
                MISSING.with(|m| m.borrow_mut().push(name.to_string()));
                None
            }
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let table = self.data.table(&self.scope, &self.host);
        Enumerator::Values(table.keys().map(|k| Value::from(k.as_str())).collect())
    }
}

/// `hostvars`: every host's variables, in the play context of the reader.
#[derive(Debug)]
pub struct HostVars {
    pub data: Arc<Data>,
    pub scope: Scope,
}

impl Object for HostVars {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let host = key.as_str()?;
        if !self.data.inventory.hosts.contains_key(host) {
            return None;
        }
        let scope = match &self.scope {
            Scope::Role(p, _) => Scope::Play(*p),
            s => s.clone(),
        };
        Some(Value::from_object(VarsView {
            data: self.data.clone(),
            scope,
            host: host.to_string(),
            locals: Vec::new(),
        }))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(
            self.data
                .inventory
                .hosts
                .keys()
                .map(|k| Value::from(k.as_str()))
                .collect(),
        )
    }
}

/// Resolves one variable for one host in one scope.
pub fn resolve(data: &Arc<Data>, scope: &Scope, host: &str, var: &str) -> Outcome {
    let key: Key = (scope.clone(), host.to_string(), var.to_string());
    if let Some(hit) = lock(&data.cache.results).get(&key) {
        let hit = hit.clone();
        note_dependency(&key, hit.as_ref().ok().is_some_and(|r| r.opaque));
        return hit;
    }
    let table = data.table(scope, host);
    let Some(def) = table.get(var).cloned() else {
        return Err(ResolveError {
            reason: Error::Undefined {
                var: var.to_string(),
            },
            chain: Vec::new(),
        });
    };
    let own = Origin::variable(def.node.loc.clone(), def.source.to_string(), var, host);
    // Cycle and depth checks.
    let cycle = STACK.with(|s| {
        let s = s.borrow();
        if let Some(pos) = s.iter().position(|f| f.key == key) {
            let path: Vec<String> = s[pos..].iter().map(|f| f.key.2.clone()).collect();
            Some(Error::RecursiveLoop {
                path,
                var: var.to_string(),
            })
        } else if s.len() >= MAX_DEPTH {
            Some(Error::TooDeep {
                max: MAX_DEPTH,
                var: var.to_string(),
            })
        } else {
            None
        }
    });
    if let Some(reason) = cycle {
        return Err(ResolveError {
            reason,
            chain: vec![own],
        });
    }
    STACK.with(|s| {
        s.borrow_mut().push(Frame {
            key: key.clone(),
            deps: Vec::new(),
            opaque: false,
        });
    });
    let result = template_node(data, scope, host, &def.node);
    let frame = STACK.with(|s| s.borrow_mut().pop());
    let (deps, mut opaque) = frame.map(|f| (f.deps, f.opaque)).unwrap_or_default();
    let outcome = match result {
        Ok((value, o)) => {
            opaque |= o;
            let mut origin = vec![own];
            let results = lock(&data.cache.results);
            for d in &deps {
                if let Some(Ok(r)) = results.get(d) {
                    for step in &r.origin {
                        if !origin.contains(step) && origin.len() < 32 {
                            origin.push(step.clone());
                        }
                    }
                }
            }
            drop(results);
            Ok(Arc::new(Resolved {
                value,
                opaque,
                origin,
            }))
        }
        Err(mut e) => {
            e.chain.insert(0, own);
            Err(e)
        }
    };
    lock(&data.cache.results).insert(key.clone(), outcome.clone());
    note_dependency(&key, outcome.as_ref().ok().is_some_and(|r| r.opaque));
    outcome
}

fn note_dependency(key: &Key, opaque: bool) {
    STACK.with(|s| {
        if let Some(top) = s.borrow_mut().last_mut() {
            if !top.deps.contains(key) {
                top.deps.push(key.clone());
            }
            top.opaque |= opaque;
        }
    });
}

/// Templates every string of a node tree. Returns the value and whether it is opaque.
fn template_node(
    data: &Arc<Data>,
    scope: &Scope,
    host: &str,
    node: &Node,
) -> Result<(Node, bool), ResolveError> {
    if is_vault(node) {
        return Ok((Node::string(OPAQUE, node.loc.clone()), true));
    }
    match &node.value {
        Y::String(s) if s.contains("{{") || s.contains("{%") || s.contains("{#") => {
            let v = render_value(data, scope, host, s, &[])?;
            Ok((value_to_node(&v, &node.loc), false))
        }
        Y::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            let mut opaque = false;
            for it in items {
                let (n, o) = template_node(data, scope, host, it)?;
                opaque |= o;
                out.push(n);
            }
            Ok((Node::new(Y::Seq(out), node.loc.clone()), opaque))
        }
        Y::Map(m) => {
            let mut out = fluxgate_yaml::Map::default();
            let mut opaque = false;
            for (k, v) in m.iter() {
                let (n, o) = template_node(data, scope, host, v)?;
                opaque |= o;
                out.insert(k.clone(), n);
            }
            Ok((Node::new(Y::Map(Box::new(out)), node.loc.clone()), opaque))
        }
        _ => Ok((node.clone(), false)),
    }
}

/// Whether a string is exactly one `{{ expression }}`: Ansible then keeps the native type.
fn single_expression(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?;
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    let inner = inner.strip_suffix('-').unwrap_or(inner);
    if inner.contains("{{") || inner.contains("}}") || inner.contains("{%") || inner.contains("{#")
    {
        return None;
    }
    Some(inner)
}

/// Renders one template string in a host's context: a single expression keeps its type,
/// anything else is text.
pub fn render_value(
    data: &Arc<Data>,
    scope: &Scope,
    host: &str,
    text: &str,
    locals: &[(String, Value)],
) -> Result<Value, ResolveError> {
    let ctx = Value::from_object(VarsView {
        data: data.clone(),
        scope: scope.clone(),
        host: host.to_string(),
        locals: locals.to_vec(),
    });
    let nested_mark = NESTED.with(|n| n.borrow().len());
    let missing_mark = MISSING.with(|m| m.borrow().len());
    let result = match single_expression(text) {
        Some(expr) => data
            .env
            .compile_expression_owned(expr.to_string())
            .and_then(|e| e.eval(ctx))
            .and_then(|v| {
                if v.is_undefined() {
                    Err(minijinja::Error::from(ErrorKind::UndefinedError))
                } else {
                    Ok(v)
                }
            }),
        None => data.env.render_str(text, ctx).map(Value::from),
    };
    let nested: Vec<(String, ResolveError)> =
        NESTED.with(|n| take_from(&mut n.borrow_mut(), nested_mark));
    let missing: Vec<String> = MISSING.with(|m| take_from(&mut m.borrow_mut(), missing_mark));
    let value = result.map_err(|e| jinja_error(&e, &nested, &missing, text))?;
    let size = text_size(&value, 0);
    if size > MAX_VALUE {
        return Err(ResolveError {
            reason: crate::Error::TooLarge {
                mib: MAX_VALUE / (1024 * 1024),
            },
            chain: Vec::new(),
        });
    }
    charge(data, size)?;
    Ok(value)
}

/// Counts `bytes` of rendered text against [`MAX_RENDERED`]: past it, every later render of
/// the project fails with [`crate::Error::Budget`] (a finding at what asked for it), so that
/// no inventory makes a run hold more than that in rendered values.
pub(crate) fn charge(data: &Data, bytes: usize) -> Result<(), ResolveError> {
    let before = data
        .cache
        .rendered_bytes
        .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    if before.saturating_add(bytes) > MAX_RENDERED {
        return Err(ResolveError {
            reason: crate::Error::Budget {
                mib: MAX_RENDERED / (1024 * 1024),
            },
            chain: Vec::new(),
        });
    }
    Ok(())
}

/// The bytes of text a value holds (strings of lists and maps too, to a depth of 32; keys
/// counted): what caching it costs.
fn text_size(v: &Value, depth: usize) -> usize {
    if let Some(s) = v.as_str() {
        return s.len();
    }
    if depth > 32 {
        return 0;
    }
    let is_map = v.kind() == minijinja::value::ValueKind::Map;
    match v.kind() {
        minijinja::value::ValueKind::Seq | minijinja::value::ValueKind::Map => {
            v.try_iter().map_or(0, |items| {
                items
                    .map(|k| {
                        if is_map {
                            let item = v.get_item(&k).unwrap_or_default();
                            text_size(&k, depth + 1) + text_size(&item, depth + 1)
                        } else {
                            text_size(&k, depth + 1)
                        }
                    })
                    .fold(0usize, usize::saturating_add)
            })
        }
        _ => 0,
    }
}

/// The longest text one variable may render to: 24 variables that each double the one
/// before reach gigabytes; a real value (a certificate, a config file) is kilobytes.
pub const MAX_VALUE: usize = 4 * 1024 * 1024;

/// The text one project may render in all, variables and templates of every host: the
/// largest inventories of the corpus render a few MiB; a hostile one that asks for hundreds
/// of values of [`MAX_VALUE`] each stops here instead of exhausting memory.
pub const MAX_RENDERED: usize = 64 * 1024 * 1024;

/// The first Python `%` string formatting of a template (`'%s:%d' % (host, port)`): a
/// string literal followed by `%` inside `{{ }}` or `{% %}`. minijinja has no string `%`
/// operator and no way to add one.
fn percent_formatting(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(open) = [rest.find("{{"), rest.find("{%")]
        .into_iter()
        .flatten()
        .min()
    {
        let body = &rest[open + 2..];
        let close = [body.find("}}"), body.find("%}")]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(body.len());
        let region = &body[..close];
        if let Some(found) = percent_in_expression(region) {
            return Some(found);
        }
        rest = &body[close..];
        if rest.len() >= 2 {
            rest = &rest[2..];
        } else {
            break;
        }
    }
    None
}

fn percent_in_expression(expr: &str) -> Option<String> {
    let chars: Vec<(usize, char)> = expr.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if c != '\'' && c != '"' {
            i += 1;
            continue;
        }
        // A string literal: to its closing quote (backslash escapes skipped).
        let mut j = i + 1;
        while j < chars.len() && chars[j].1 != c {
            j += if chars[j].1 == '\\' { 2 } else { 1 };
        }
        let mut k = j + 1;
        while k < chars.len() && chars[k].1.is_whitespace() {
            k += 1;
        }
        if k < chars.len() && chars[k].1 == '%' {
            let snippet: String = expr[start..].trim().chars().take(60).collect();
            return Some(snippet.trim_end().to_string());
        }
        i = j + 1;
    }
    None
}

fn jinja_error(
    e: &minijinja::Error,
    nested: &[(String, ResolveError)],
    missing: &[String],
    text: &str,
) -> ResolveError {
    if e.kind() == ErrorKind::OutOfFuel {
        return ResolveError {
            reason: Error::OutOfFuel,
            chain: Vec::new(),
        };
    }
    if e.kind() == ErrorKind::InvalidOperation
        && e.detail().is_some_and(|d| d.contains("% operator"))
        && let Some(construct) = percent_formatting(text)
    {
        return ResolveError {
            reason: Error::PercentFormatting { construct },
            chain: Vec::new(),
        };
    }
    if e.kind() == ErrorKind::UndefinedError {
        if let Some((_, inner)) = nested.last() {
            return inner.clone();
        }
        if let Some(name) = missing.last() {
            return ResolveError {
                reason: Error::Undefined { var: name.clone() },
                chain: Vec::new(),
            };
        }
    }
    let mut msg = e.kind().to_string();
    if let Some(detail) = e.detail() {
        msg = format!("{msg}: {detail}");
    }
    if e.kind() == ErrorKind::SyntaxError
        && let Some(line) = e.line()
    {
        msg = format!("{msg} (template line {line})");
    }
    ResolveError {
        reason: Error::Template { reason: msg },
        chain: Vec::new(),
    }
}

thread_local! {
    static OPAQUE_SEEN: RefCell<bool> = const { RefCell::new(false) };
}

/// Starts watching whether an opaque value is read (for whole-template renders).
pub fn opaque_probe_start() -> bool {
    OPAQUE_SEEN.with(|o| o.replace(false))
}

/// Whether an opaque value was read since [`opaque_probe_start`].
pub fn opaque_probe_end(previous: bool) -> bool {
    OPAQUE_SEEN.with(|o| o.replace(previous))
}

/// Renders a whole template file as text. Errors carry the template line when known.
pub fn render_text(
    data: &Arc<Data>,
    scope: &Scope,
    host: &str,
    text: &str,
    locals: &[(String, Value)],
) -> Result<String, (ResolveError, Option<u32>)> {
    let ctx = Value::from_object(VarsView {
        data: data.clone(),
        scope: scope.clone(),
        host: host.to_string(),
        locals: locals.to_vec(),
    });
    // A frame collects the opaque flag of everything the template reads.
    STACK.with(|s| {
        s.borrow_mut().push(Frame {
            key: (scope.clone(), host.to_string(), "<template>".to_string()),
            deps: Vec::new(),
            opaque: false,
        });
    });
    let nested_mark = NESTED.with(|n| n.borrow().len());
    let missing_mark = MISSING.with(|m| m.borrow().len());
    let result = data.env.render_str(text, ctx);
    let frame = STACK.with(|s| s.borrow_mut().pop());
    if frame.is_some_and(|f| f.opaque) {
        OPAQUE_SEEN.with(|o| *o.borrow_mut() = true);
    }
    let nested: Vec<(String, ResolveError)> =
        NESTED.with(|n| take_from(&mut n.borrow_mut(), nested_mark));
    let missing: Vec<String> = MISSING.with(|m| take_from(&mut m.borrow_mut(), missing_mark));
    let out = result.map_err(|e| {
        let line = e.line().and_then(|l| u32::try_from(l).ok());
        (jinja_error(&e, &nested, &missing, text), line)
    })?;
    charge(data, out.len()).map_err(|e| (e, None))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_formatting_is_found_inside_expressions_only() {
        assert_eq!(
            percent_formatting("x {{ '%s:%d' % (h, p) }} y").as_deref(),
            Some("'%s:%d' % (h, p)")
        );
        assert_eq!(
            percent_formatting(r#"{% set a = "%s" % b %}{{ a }}"#).as_deref(),
            Some(r#""%s" % b"#)
        );
        assert_eq!(percent_formatting("it's 50% off {{ 7 % 3 }}"), None);
        assert_eq!(percent_formatting("{{ 'a%' ~ b }}"), None);
        assert_eq!(
            percent_formatting("{{ 'it\\'s' % x }}").as_deref(),
            Some("'it\\'s' % x")
        );
    }
}
