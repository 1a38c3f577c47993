//! Post-build substitution of one resource, as kustomize-controller does it, with origins.
//!
//! Flux serialises each rendered resource to YAML with go-yaml v2 (keys sorted, comments and
//! source quoting gone: `"${FLAG}"` is written `${FLAG}`), runs [`crate::envsubst`] over the
//! whole text (keys included) and parses the result again with go-yaml v2's YAML 1.1 rules into
//! JSON, so a value `yes` becomes a boolean, `017` the number 15 and `~` null, however the
//! source quoted the reference. fluxgate does the same, and then walks the new tree beside the original to
//! give every node back its location; a scalar that a variable produced is located at the
//! variable's definition instead, and a [`Substituted`] record keeps both ends: where the
//! variable was defined and where `${VAR}` was written.
//!
//! ```
//! use fluxgate_flux::substitute::{substitute_resource, Options};
//! use fluxgate_flux::vars::{VarDef, Vars};
//! use fluxgate_diagnostics::Location;
//! use fluxgate_yaml::{parse_stream, Schema};
//!
//! let doc = &parse_stream("hr.yaml", "spec:\n  host: ${HOST}\n", Schema::Kube).docs[0];
//! let mut vars = Vars::default();
//! let at = Location::new("vars.yaml", 9, 3);
//! vars.define("HOST", VarDef { value: "192.168.2.9".into(), definition: at.clone(),
//!     source: "ConfigMap/flux-system/cluster-vars".into(), opaque: false });
//! let out = substitute_resource(doc, &vars, Options::default());
//! let host = out.resource.path(&["spec", "host"]).unwrap();
//! assert_eq!(host.as_str(), Some("192.168.2.9"));
//! assert_eq!(host.loc, at);
//! assert_eq!(out.substituted[0].consumer.line, 2);
//! ```

use fluxgate_diagnostics::Annotate;
use std::collections::BTreeMap;

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{EmitOptions, Node, Schema, Value, emit_node, parse_stream};

use crate::envsubst::{self, VarRef};
use crate::problem::{Problem, ProblemKind};
use crate::vars::Vars;

/// The label or annotation that turns substitution off for one resource.
pub const DISABLE_KEY: &str = "kustomize.toolkit.fluxcd.io/substitute";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Flux >= 2.9 (kustomize-controller v1.9.0, strict, the default): an unset variable
    /// fails the whole Kustomization ([`crate::tree::FluxKustomization::failure`]). Before, or
    /// with the controller's `StrictPostBuildSubstitutions` feature gate off: it becomes the
    /// empty string. The finding is reported either way, worded for the mode.
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { strict: true }
    }
}

/// A value that came from a variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Substituted {
    pub var: String,
    /// Where the variable's value was set.
    pub definition: Location,
    /// Where `${VAR}` was written.
    pub consumer: Location,
    /// The value is an encrypted Secret's: not known, never to be judged.
    pub opaque: bool,
    /// The `${...}` writes a fallback for an unset variable (`${VAR:=default}`), as the
    /// parser saw it.
    pub falls_back: bool,
    /// Where in the resource: a dotted path with `[i]` for list items and `\.` for dots inside
    /// keys (`spec.values.k8sServiceHost`); a key that held the reference ends in `{key}`.
    pub path: String,
}

impl Substituted {
    /// The value's history as the one origin type: the variable's definition (through the
    /// variable), then the `${VAR}` that consumed it.
    #[must_use]
    pub fn chain(&self) -> fluxgate_diagnostics::Chain {
        let mut via = format!("substituted from variable {}", self.var);
        if self.opaque {
            via.push_str(" (an encrypted value, not known)");
        }
        let mut definition = fluxgate_diagnostics::Origin::new(self.definition.clone(), via);
        definition.var = Some(self.var.clone());
        vec![
            definition,
            fluxgate_diagnostics::Origin::new(
                self.consumer.clone(),
                format!("${{{}}} written here", self.var),
            ),
        ]
    }
}

/// A `${VAR}` without a default whose variable is not defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undefined {
    pub var: String,
    pub consumer: Location,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled`.
    Disabled,
    /// Nothing in the text to substitute.
    Unchanged,
    Substituted,
    /// A parse error, a failed operator, or a result that is no longer YAML (or not JSON):
    /// Flux fails the whole Kustomization.
    Failed,
}

#[derive(Clone, Debug)]
pub struct Outcome {
    /// The substituted resource; with undefined variables, what non-strict Flux would apply
    /// (the empty string in their place); the original when disabled or failed.
    pub resource: Node,
    pub substituted: Vec<Substituted>,
    pub undefined: Vec<Undefined>,
    pub problems: Vec<Problem>,
    pub status: Status,
}

impl Outcome {
    fn unchanged(resource: &Node, status: Status) -> Outcome {
        Outcome {
            resource: resource.clone(),
            substituted: Vec::new(),
            undefined: Vec::new(),
            problems: Vec::new(),
            status,
        }
    }

    /// Strict Flux (>= 2.9) fails on this resource.
    #[must_use]
    pub fn strict_failed(&self) -> bool {
        !self.undefined.is_empty() || self.status == Status::Failed
    }
}

/// Labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled`.
#[must_use]
pub fn is_disabled(resource: &Node) -> bool {
    ["labels", "annotations"]
        .iter()
        .any(|f| resource.str_at(&["metadata", f, DISABLE_KEY]) == Some("disabled"))
}

/// Whether a key or a string of `node` holds a `$`.
fn has_dollar(node: &Node) -> bool {
    match &node.value {
        Value::String(s) => s.contains('$'),
        Value::Seq(items) => items.iter().any(has_dollar),
        Value::Map(m) => m.iter().any(|(k, v)| k.contains('$') || has_dollar(v)),
        _ => false,
    }
}

/// Substitutes one rendered resource with `vars`.
#[must_use]
pub fn substitute_resource(resource: &Node, vars: &Vars, opts: Options) -> Outcome {
    if is_disabled(resource) {
        return Outcome::unchanged(resource, Status::Disabled);
    }
    if !has_dollar(resource) {
        // The serialised text can hold a `$` only where a key or a string does.
        return Outcome::unchanged(resource, Status::Unchanged);
    }
    let text = emit_node(resource, EmitOptions::default());
    if !text.contains('$') {
        return Outcome::unchanged(resource, Status::Unchanged);
    }
    let lookup = |name: &str| vars.get(name).map(|d| d.value.clone());
    let locator = Locator::new(&text, resource);
    let expansion = match envsubst::expand(&text, &lookup) {
        Ok(e) => e,
        Err(e) if e.message == envsubst::TOO_LARGE || e.message == envsubst::TOO_DEEP => {
            let mut out = Outcome::unchanged(resource, Status::Failed);
            out.problems.push(Problem::new(
                ProblemKind::Invalid,
                format!(
                    "post-build substitution stopped: {}; fluxgate does not check this resource \
                     (Flux fails the whole Kustomization)",
                    e.message
                ),
                Some(locator.locate(e.offset).0),
            ));
            return out;
        }
        Err(e) if e.message == envsubst::SUBSTRING_OUT_OF_RANGE => {
            let mut out = Outcome::unchanged(resource, Status::Failed);
            let snippet = snippet(&text, e.offset);
            out.problems.push(Problem::new(
                ProblemKind::SubstitutionSyntax,
                format!(
                    "post-build substitution fails on `{snippet}`: {e}; Flux fails the whole \
                     Kustomization, nothing of it is applied"
                ),
                Some(locator.locate(e.offset).0),
            ));
            return out;
        }
        Err(e) => {
            let mut out = Outcome::unchanged(resource, Status::Failed);
            let snippet = snippet(&text, e.offset);
            out.problems.push(
                Problem::new(
                    ProblemKind::SubstitutionSyntax,
                    format!(
                        "post-build substitution cannot parse `{snippet}`: {e}; Flux fails \
                         the whole Kustomization, nothing of it is applied"
                    ),
                    Some(locator.locate(e.offset).0),
                )
                .help("write `$${` for a literal `${`, or use a form Flux knows (`${VAR}`, `${VAR:=default}`)"),
            );
            return out;
        }
    };

    let mut out = Outcome::unchanged(resource, Status::Substituted);
    let mut scalar_defs: BTreeMap<Vec<Step>, (Location, bool)> = BTreeMap::new();
    // One finding per undefined variable and resource (a dashboard repeats `${DS_X}` forty
    // times): the first use is the finding, the others its related locations.
    let mut first_use: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in &expansion.refs {
        let (consumer, path) = locator.locate(r.start);
        // A source whose keys are unknown offline may define it: not reported.
        if r.is_strict_error() && !vars.has_unknown_keys() {
            if let Some((i, uses)) = first_use.get_mut(r.name.as_str()) {
                *uses += 1;
                let d: &mut Problem = &mut out.problems[*i];
                if d.related.len() < MAX_RELATED_USES {
                    d.related.push(fluxgate_diagnostics::Related {
                        location: consumer.clone(),
                        message: "also used here".to_string(),
                    });
                }
            } else {
                first_use.insert(r.name.as_str(), (out.problems.len(), 1));
                out.problems
                    .push(undefined_problem(r, &text, &consumer, opts));
            }
            out.undefined.push(Undefined {
                var: r.name.clone(),
                consumer: consumer.clone(),
            });
        }
        if let (true, Some(def)) = (r.value_used, vars.get(&r.name)) {
            out.substituted.push(Substituted {
                var: r.name.clone(),
                definition: def.definition.clone(),
                consumer,
                opaque: def.opaque,
                falls_back: r.falls_back(),
                path: path
                    .as_deref()
                    .map(|p| dotted(resource, p))
                    .unwrap_or_default(),
            });
            if let Some(p) = path {
                // The scalar is located at its first variable's definition, unless a later
                // one comes from a Secret: then at the Secret's, so that the whole derived
                // value (`pre-${SECRET}`, `${PLAIN}${SECRET:2}`) is tainted as secret.
                let from_secret = def.source.starts_with("Secret/");
                match scalar_defs.entry(p) {
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert((def.definition.clone(), from_secret));
                    }
                    std::collections::btree_map::Entry::Occupied(mut e) => {
                        if from_secret && !e.get().1 {
                            e.insert((def.definition.clone(), true));
                        }
                    }
                }
            }
        }
    }

    for (i, uses) in first_use.into_values() {
        if uses > 1 {
            out.problems[i]
                .notes
                .push(format!("used {uses} times in this resource"));
        }
    }

    // Flux reads the text back with go-yaml v2 (YAML 1.1), then as JSON.
    let reparsed = parse_stream(&resource.loc.file, &expansion.text, Schema::GoYamlV2);
    if reparsed.has_errors() || reparsed.docs.len() > 1 {
        let first = out
            .substituted
            .first()
            .map_or_else(|| resource.loc.clone(), |s| s.consumer.clone());
        out.problems.push(Problem::new(
            ProblemKind::Invalid,
            "after post-build substitution the resource is no longer one valid YAML document \
             (a value broke the syntax); Flux fails the whole Kustomization",
            Some(first),
        ));
        out.status = Status::Failed;
        return out;
    }
    let mut node = reparsed
        .docs
        .into_iter()
        .next()
        .unwrap_or_else(|| Node::null(resource.loc.clone()));
    if let Some(bad) = not_json(&node) {
        let first = out
            .substituted
            .first()
            .map_or_else(|| resource.loc.clone(), |s| s.consumer.clone());
        out.problems.push(Problem::new(
            ProblemKind::Invalid,
            format!(
                "after post-build substitution the resource holds {bad}, which JSON cannot \
                 hold; Flux fails the whole Kustomization"
            ),
            Some(first),
        ));
        out.status = Status::Failed;
        return out;
    }
    relocate(&mut node, resource, &mut Vec::new(), &scalar_defs);
    out.resource = node;
    unbraced(resource, vars, &mut out.problems);
    out
}

/// Values that are a bare `$NAME` where `NAME` is a variable of the Kustomization
/// (`k8sServiceHost: $CONTROLPLANE_IP`): Flux substitutes only `${NAME}`, so the literal
/// reaches the consumer. Only a whole value counts: a script's `$HOME` inside a longer text
/// is the shell's.
fn unbraced(node: &Node, vars: &Vars, problems: &mut Vec<Problem>) {
    match &node.value {
        Value::String(s) => {
            let t = s.trim();
            let Some(name) = t.strip_prefix('$') else {
                return;
            };
            let identifier = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if identifier && vars.get(name).is_some() {
                problems.push(
                    Problem::new(
                        ProblemKind::Unbraced {
                            name: name.to_string(),
                        },
                        format!(
                            "`${name}` is not substituted: Flux replaces only `${{{name}}}`, so \
                             the literal text `${name}` reaches the consumer although the \
                             Kustomization defines {name}"
                        ),
                        Some(node.loc.clone()),
                    )
                    .help(format!("write `${{{name}}}`")),
                );
            }
        }
        Value::Map(m) => {
            for v in m.values() {
                unbraced(v, vars, problems);
            }
        }
        Value::Seq(items) => {
            for v in items {
                unbraced(v, vars, problems);
            }
        }
        _ => {}
    }
}

/// What in a re-parsed resource has no JSON form (Flux's YAML-to-JSON step fails on it): an
/// infinite or NaN number, or a document that is not a mapping.
fn not_json(node: &Node) -> Option<&'static str> {
    match &node.value {
        Value::Float(f) if !f.is_finite() => Some("an infinite or NaN number (`.inf`, `.nan`)"),
        Value::Seq(items) => items.iter().find_map(not_json),
        Value::Map(m) => m.values().find_map(not_json),
        _ => None,
    }
}

/// How many further uses of one undefined variable a finding lists as related locations.
const MAX_RELATED_USES: usize = 5;

fn undefined_problem(r: &VarRef, text: &str, consumer: &Location, opts: Options) -> Problem {
    let written = text.get(r.start..r.end).unwrap_or(&r.name);
    let consequence = if opts.strict {
        "Flux (strict substitution, the default since 2.9) fails the whole Kustomization, \
         nothing of it is applied; older Flux substitutes the empty string"
    } else {
        "the Flux this environment runs (before 2.9) substitutes the empty string and applies \
         the resource"
    };
    Problem::new(
        ProblemKind::UndefinedVariable {
            name: r.name.clone(),
            strict: opts.strict,
        },
        format!("`{written}`: variable {} is not defined; {consequence}", r.name),
        Some(consumer.clone()),
    )
    .help(format!(
        "define {} in postBuild.substitute or a substituteFrom source, or give a default: `${{{}:=value}}`",
        r.name, r.name
    ))
}

fn snippet(text: &str, offset: usize) -> String {
    let rest = text.get(offset..).unwrap_or_default();
    let line = rest.lines().next().unwrap_or_default();
    let end = line.find('}').map_or(line.len(), |i| i + 1);
    line.chars().take(end.min(60)).collect()
}

/// A step from a node to a child: the value of entry `i` (or item `i`), or the key of entry `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Index(usize),
    Key(usize),
}

/// The dotted form of a path of steps through `node`.
fn dotted(node: &Node, steps: &[Step]) -> String {
    let mut out = String::new();
    let mut cur = Some(node);
    for step in steps {
        let n = cur.take();
        match (step, n.map(|n| &n.value)) {
            (Step::Index(i) | Step::Key(i), Some(Value::Map(m))) => {
                if let Some((k, v)) = m.get_index(*i) {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(&k.replace('.', "\\."));
                    if matches!(step, Step::Key(_)) {
                        out.push_str("{key}");
                    } else {
                        cur = Some(v);
                    }
                }
            }
            (Step::Index(i), Some(Value::Seq(s))) => {
                out.push_str(&format!("[{i}]"));
                cur = s.get(*i);
            }
            _ => {}
        }
    }
    out
}

/// Where a piece of the serialised text sits: its line and column there, the path to it, and
/// the original location of the same thing.
struct Anchor {
    line: u32,
    column: u32,
    path: Vec<Step>,
    original: Location,
    /// A multi-line string (a literal block): later lines count from its start.
    block: bool,
}

/// Maps byte offsets of the serialised text back to the original file.
struct Locator {
    line_starts: Vec<usize>,
    text: String,
    anchors: Vec<Anchor>,
    fallback: Location,
}

impl Locator {
    fn new(text: &str, original: &Node) -> Locator {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let mut anchors = Vec::new();
        let emitted = parse_stream("<serialised>", text, Schema::Kube);
        if let [doc] = emitted.docs.as_slice() {
            collect_anchors(doc, original, &mut Vec::new(), &mut anchors);
        }
        anchors.sort_by_key(|a| (a.line, a.column));
        Locator {
            line_starts,
            text: text.to_string(),
            anchors,
            fallback: original.loc.clone(),
        }
    }

    /// The original location of byte `offset` and, when it falls in a scalar, that scalar's
    /// path (keys have their own steps).
    fn locate(&self, offset: usize) -> (Location, Option<Vec<Step>>) {
        let li = self
            .line_starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.line_starts[li];
        let line = li as u32 + 1;
        let column = self
            .text
            .get(start..offset)
            .map_or(1, |s| s.chars().count() as u32 + 1);
        let i = self
            .anchors
            .partition_point(|a| (a.line, a.column) <= (line, column));
        let Some(a) = i.checked_sub(1).map(|i| &self.anchors[i]) else {
            return (self.fallback.clone(), None);
        };
        let mut loc = a.original.clone();
        if a.block && line > a.line {
            loc.line += line - a.line;
            loc.column = column;
        } else if line == a.line {
            loc.column += column.saturating_sub(a.column);
        }
        (loc, Some(a.path.clone()))
    }
}

fn is_block_collection(n: &Node) -> bool {
    match &n.value {
        Value::Map(m) => !m.is_empty(),
        Value::Seq(s) => !s.is_empty(),
        _ => false,
    }
}

fn collect_anchors(emitted: &Node, original: &Node, path: &mut Vec<Step>, out: &mut Vec<Anchor>) {
    match (&emitted.value, &original.value) {
        (Value::Map(me), Value::Map(mo)) => {
            for (i, ((_, ve), (_, vo))) in me.iter().zip(mo.iter()).enumerate() {
                // The emitter writes a key on its value's line, or on the line above a
                // nested block; the original is assumed to be laid out the same way.
                let key_line = |v: &Node| {
                    if is_block_collection(v) {
                        v.loc.line.saturating_sub(1).max(1)
                    } else {
                        v.loc.line
                    }
                };
                let mut key_loc = original.loc.clone();
                key_loc.line = key_line(vo).max(original.loc.line);
                path.push(Step::Key(i));
                out.push(Anchor {
                    line: key_line(ve),
                    column: emitted.loc.column,
                    path: path.clone(),
                    original: key_loc,
                    block: false,
                });
                path.pop();
                path.push(Step::Index(i));
                collect_anchors(ve, vo, path, out);
                path.pop();
            }
        }
        (Value::Seq(se), Value::Seq(so)) => {
            for (i, (ve, vo)) in se.iter().zip(so.iter()).enumerate() {
                path.push(Step::Index(i));
                collect_anchors(ve, vo, path, out);
                path.pop();
            }
        }
        (Value::Map(_) | Value::Seq(_), _) | (_, Value::Map(_) | Value::Seq(_)) => {}
        (v, _) => out.push(Anchor {
            line: emitted.loc.line,
            column: emitted.loc.column,
            path: path.clone(),
            original: original.loc.clone(),
            block: matches!(v, Value::String(s) if s.contains('\n')),
        }),
    }
}

/// Gives the re-parsed tree the original locations, and substituted scalars the location of
/// their variable's definition.
fn relocate(
    node: &mut Node,
    original: &Node,
    path: &mut Vec<Step>,
    defs: &BTreeMap<Vec<Step>, (Location, bool)>,
) {
    let loc = defs
        .get(path.as_slice())
        .map_or(&original.loc, |(l, _)| l)
        .clone();
    match (&mut node.value, &original.value) {
        (Value::Map(m), Value::Map(mo)) => {
            let same_shape = m.len() == mo.len();
            for (i, (k, v)) in m.iter_mut().enumerate() {
                let counterpart = if same_shape {
                    mo.get_index(i).map(|(_, n)| n)
                } else {
                    mo.get(k.as_str())
                };
                match counterpart {
                    Some(o) => {
                        path.push(Step::Index(i));
                        relocate(v, o, path, defs);
                        path.pop();
                    }
                    None => v.relocate(&original.loc),
                }
            }
            node.loc = original.loc.clone();
        }
        (Value::Seq(s), Value::Seq(so)) => {
            for (i, v) in s.iter_mut().enumerate() {
                match so.get(i) {
                    Some(o) => {
                        path.push(Step::Index(i));
                        relocate(v, o, path, defs);
                        path.pop();
                    }
                    None => v.relocate(&original.loc),
                }
            }
            node.loc = original.loc.clone();
        }
        _ => node.relocate(&loc),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vars::VarDef;

    fn doc(text: &str) -> Node {
        parse_stream("platform/cilium/helmrelease.yaml", text, Schema::Kube)
            .docs
            .into_iter()
            .next()
            .expect("one document")
    }

    fn vars(pairs: &[(&str, &str)]) -> Vars {
        let mut v = Vars::default();
        for (i, (k, val)) in pairs.iter().enumerate() {
            v.define(
                k,
                VarDef {
                    value: (*val).to_string(),
                    definition: Location::new(
                        "clusters/prod/cluster-vars-patch.yaml",
                        9 + i as u32,
                        3,
                    ),
                    source: "ConfigMap/flux-system/cluster-vars".into(),
                    opaque: false,
                },
            );
        }
        v
    }

    const HR: &str = "\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: cilium
  namespace: kube-system
spec:
  values:
    # the API endpoint
    k8sServiceHost: \"${K3S_API_HOST}\"
    k8sServicePort: 6443
    enabled: ${ENABLED}
    port: ${PORT}
";

    #[test]
    fn values_come_back_typed_and_located_at_the_definition() {
        let v = vars(&[
            ("K3S_API_HOST", "192.168.2.9"),
            ("ENABLED", "true"),
            ("PORT", "8080"),
        ]);
        let out = substitute_resource(&doc(HR), &v, Options::default());
        assert_eq!(out.status, Status::Substituted);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        let values = out.resource.path(&["spec", "values"]).expect("values");
        let host = values.get("k8sServiceHost").expect("host");
        assert_eq!(host.as_str(), Some("192.168.2.9"));
        assert_eq!(
            host.loc.file.as_ref(),
            "clusters/prod/cluster-vars-patch.yaml"
        );
        assert_eq!(host.loc.line, 9);
        assert_eq!(values.get("enabled").and_then(Node::as_bool), Some(true));
        assert_eq!(values.get("port").and_then(Node::as_i64), Some(8080));
        // Untouched values keep their own lines.
        assert_eq!(values.get("k8sServicePort").map(|n| n.loc.line), Some(10));
        assert_eq!(
            out.resource.path(&["metadata", "name"]).map(|n| n.loc.line),
            Some(4)
        );
        let s = &out.substituted[0];
        assert_eq!(s.var, "K3S_API_HOST");
        assert_eq!(s.consumer.file.as_ref(), "platform/cilium/helmrelease.yaml");
        assert_eq!(s.consumer.line, 9);
        assert_eq!(s.path, "spec.values.k8sServiceHost");
        assert_eq!(out.substituted.len(), 3);
    }

    #[test]
    fn undefined_variable_is_reported_at_its_line_with_both_outcomes() {
        let v = vars(&[("ENABLED", "true"), ("PORT", "1")]);
        let out = substitute_resource(&doc(HR), &v, Options::default());
        assert!(out.strict_failed());
        assert_eq!(out.undefined.len(), 1);
        assert_eq!(out.undefined[0].var, "K3S_API_HOST");
        assert_eq!(out.undefined[0].consumer.line, 9);
        let d = &out.problems[0];
        assert_eq!(
            d.kind,
            ProblemKind::UndefinedVariable {
                name: "K3S_API_HOST".into(),
                strict: true,
            }
        );
        assert_eq!(d.location.as_ref().map(|l| l.line), Some(9));
        assert!(d.message.contains("strict"));
        // The lenient render: what shipped in the incident (an empty plain scalar is null).
        let host = out.resource.path(&["spec", "values", "k8sServiceHost"]);
        assert!(host.is_some_and(Node::is_null));
    }

    #[test]
    fn substitution_output_is_bounded() {
        let big = "x".repeat(1024 * 1024);
        let refs = "${BIG}".repeat(70);
        let text = format!("kind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {refs}\n");
        let out = substitute_resource(&doc(&text), &vars(&[("BIG", &big)]), Options::default());
        assert_eq!(out.status, Status::Failed);
        assert!(
            out.problems[0].message.contains("64 MiB"),
            "{:?}",
            out.problems
        );
        assert_eq!(out.problems[0].location.as_ref().map(|l| l.line), Some(5));
    }

    #[test]
    fn one_finding_per_undefined_variable_and_resource() {
        let text = "kind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: ${DS} ${DS}\n  b: ${DS}\n  c: ${OTHER}\n";
        let out = substitute_resource(&doc(text), &vars(&[("A", "b")]), Options::default());
        assert_eq!(out.undefined.len(), 4);
        assert_eq!(out.problems.len(), 2, "{:#?}", out.problems);
        let ds = &out.problems[0];
        assert!(ds.message.contains("variable DS"), "{}", ds.message);
        assert_eq!(ds.location.as_ref().map(|l| l.line), Some(5));
        assert_eq!(ds.related.len(), 2);
        assert_eq!(ds.related[1].location.line, 6);
        assert_eq!(ds.notes, vec!["used 3 times in this resource".to_string()]);
        assert!(out.problems[1].notes.is_empty());
    }

    #[test]
    fn parse_error_fails_the_whole_resource() {
        let text = "kind: ConfigMap\nmetadata:\n  name: x\ndata:\n  script: echo ${X.Y}\n";
        let out = substitute_resource(&doc(text), &vars(&[("A", "b")]), Options::default());
        assert_eq!(out.status, Status::Failed);
        assert!(out.strict_failed());
        let d = &out.problems[0];
        assert_eq!(d.kind, ProblemKind::SubstitutionSyntax);
        assert_eq!(d.location.as_ref().map(|l| l.line), Some(5));
        assert!(d.message.contains("${X.Y}"), "{}", d.message);
    }

    #[test]
    fn disabled_resources_are_skipped() {
        let text = "kind: ConfigMap\nmetadata:\n  name: x\n  labels:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  a: ${UNSET} ${X.Y}\n";
        let out = substitute_resource(&doc(text), &vars(&[("A", "b")]), Options::default());
        assert_eq!(out.status, Status::Disabled);
        assert!(out.problems.is_empty());
        let text = text.replace("labels", "annotations");
        let out = substitute_resource(&doc(&text), &vars(&[("A", "b")]), Options::default());
        assert_eq!(out.status, Status::Disabled);
    }

    #[test]
    fn keys_and_escapes_and_literal_blocks() {
        let text = "kind: ConfigMap\nmetadata:\n  name: x\ndata:\n  ${KEY}: v\n  price: $$5\n  script: |\n    line one\n    echo ${SET}\n";
        let v = vars(&[("KEY", "realkey"), ("SET", "val")]);
        let out = substitute_resource(&doc(text), &v, Options::default());
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        let data = out.resource.get("data").expect("data");
        assert_eq!(data.get("realkey").and_then(Node::as_str), Some("v"));
        assert_eq!(data.get("price").and_then(Node::as_str), Some("$5"));
        assert_eq!(
            data.get("script").and_then(Node::as_str),
            Some("line one\necho val\n")
        );
        let key = out
            .substituted
            .iter()
            .find(|s| s.var == "KEY")
            .expect("key");
        assert_eq!(key.consumer.line, 5);
        assert_eq!(key.path, "data.${KEY}{key}");
        let set = out
            .substituted
            .iter()
            .find(|s| s.var == "SET")
            .expect("set");
        assert_eq!(set.consumer.line, 9);
    }

    #[test]
    fn quoting_is_lost_and_yaml_1_1_decides_the_type() {
        let text = "kind: ConfigMap\ndata:\n  flag: \"${FLAG}\"\n  port: '${PORT}'\n  on: ${ON}\n  n: ${N}\n  tilde: ${T}\n  hex: ${HEX}\n  oct: ${OCT}\n  exp: ${EXP}\n  kept: x-${FLAG}\n";
        let v = vars(&[
            ("FLAG", "yes"),
            ("PORT", "8080"),
            ("ON", "on"),
            ("N", "n"),
            ("T", "~"),
            ("HEX", "0x1F"),
            ("OCT", "017"),
            ("EXP", "1e3"),
        ]);
        let out = substitute_resource(&doc(text), &v, Options::default());
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        let data = out.resource.get("data").expect("data");
        let json = |k: &str| data.get(k).map(Node::to_json);
        assert_eq!(json("flag"), Some(serde_json::json!(true)));
        assert_eq!(json("port"), Some(serde_json::json!(8080)));
        assert_eq!(json("on"), Some(serde_json::json!(true)));
        assert_eq!(json("n"), Some(serde_json::json!(false)));
        assert_eq!(json("tilde"), Some(serde_json::Value::Null));
        assert_eq!(json("hex"), Some(serde_json::json!(31)));
        assert_eq!(json("oct"), Some(serde_json::json!(15)));
        assert_eq!(json("exp"), Some(serde_json::json!(1000.0)));
        assert_eq!(json("kept"), Some(serde_json::json!("x-yes")));
    }

    #[test]
    fn infinity_is_not_json() {
        let text = "kind: ConfigMap\ndata:\n  a: ${V}\n";
        let out = substitute_resource(&doc(text), &vars(&[("V", ".inf")]), Options::default());
        assert_eq!(out.status, Status::Failed);
        assert!(out.problems[0].message.contains("JSON"));
    }

    #[test]
    fn value_that_breaks_yaml_fails() {
        let text = "kind: ConfigMap\ndata:\n  a: ${V}\n";
        let out = substitute_resource(&doc(text), &vars(&[("V", "[unclosed")]), Options::default());
        assert_eq!(out.status, Status::Failed);
        assert_eq!(out.problems[0].kind, ProblemKind::Invalid);
    }
}
