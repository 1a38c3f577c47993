//! HelmRelease effective values (SPEC §3.3): the chart's defaults from the chart cache, then
//! each `valuesFrom` in order, then the inline `spec.values`; maps merge deeply, lists
//! replace, `null` deletes. Every leaf keeps its origin chain: the chart default, the
//! valuesFrom object, or the inline line, and behind an inline line the substitution variable
//! that produced it.
//!
//! ```
//! use fluxgate_flux::helm::{effective_values, ChartCache};
//! use fluxgate_yaml::{parse_stream, Schema};
//! let hr = &parse_stream("hr.yaml", "kind: HelmRelease\nmetadata: {name: x, namespace: y}\n\
//!     spec:\n  chart: {spec: {chart: cilium, version: 1.20.1}}\n  values:\n    a: 1\n",
//!     Schema::Kube).docs[0];
//! let v = effective_values(hr, &[], &ChartCache::none());
//! assert_eq!(v.tree.get("a").and_then(|n| n.as_i64()), Some(1));
//! assert_eq!(v.origins["a"][0].location.line, 6);
//! // Not in the cache: recorded (the environment lists its missing charts in one note).
//! assert!(v.chart.as_ref().is_some_and(|c| c.found.is_none()));
//! ```

mod cache;
mod merge;
mod path;

pub use cache::{Chart, ChartCache};
pub use merge::{Origin, Origins};
pub use path::{leaf, leaf_mut};

use std::borrow::Borrow;
use std::collections::HashMap;

use fluxgate_diagnostics::Location;
use fluxgate_kustomize::Override;
use fluxgate_yaml::{Node, Schema, Value, parse_stream};

use crate::lookup::ObjectIndex;
use crate::problem::{Problem, ProblemKind};
use crate::substitute::Substituted;
use crate::vars::{
    OPAQUE_VALUE, RuntimeCreator, builtin_creators, is_sops_encrypted, runtime_note,
};

/// The chart a release installs, as far as it can be known offline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChartRef {
    pub name: String,
    /// The requested version (or range); `None` when the source does not say.
    pub version: Option<String>,
    /// The cached chart that was used (`charts/cilium-1.20.1.tgz`), if any.
    pub found: Option<String>,
    /// The version of the cached chart that was used.
    pub found_version: Option<String>,
    /// Where the release names its chart (`spec.chart.spec` or `spec.chartRef`).
    pub location: Location,
}

/// The effective values of one HelmRelease.
#[derive(Clone, Debug)]
pub struct Values {
    pub tree: Node,
    /// Dotted leaf path (`updateStrategy.rollingUpdate.maxUnavailable`, `a[0].b`, dots inside
    /// keys as `\.`) -> origin chain, the most direct first.
    pub origins: Origins,
    /// What helm-controller hands Helm: the `valuesFrom` and inline values merged, without
    /// the chart's defaults and with their `null`s (Helm's coalescing deletes those keys).
    pub user: Node,
    pub chart: Option<ChartRef>,
    pub problems: Vec<Problem>,
}

impl Values {
    /// Whether the leaf at `path` is the chart's own default.
    #[must_use]
    pub fn is_chart_default(&self, path: &str) -> bool {
        self.origins
            .get(path)
            .and_then(|c| c.first())
            .is_some_and(|o| o.via.starts_with(CHART_DEFAULT))
    }
}

const CHART_DEFAULT: &str = "chart default";

/// `node` without the leaves the chart's defaults set (a map they alone filled goes with
/// them); `None` when nothing of the user's is left under it.
fn without_chart_defaults(node: &Node, path: &str, origins: &Origins) -> Option<Node> {
    match &node.value {
        Value::Map(m) if !m.is_empty() => {
            let mut out = Node::map(node.loc.clone());
            let kept = out.as_map_mut()?;
            for (k, v) in m.iter() {
                if let Some(v) = without_chart_defaults(v, &merge::child_path(path, k), origins) {
                    kept.insert(k.clone(), v);
                }
            }
            (!kept.is_empty() || path.is_empty()).then_some(out)
        }
        // Lists replace as a whole: the first item tells where the list came from.
        Value::Seq(items) if !items.is_empty() => {
            without_chart_defaults(&items[0], &merge::index_path(path, 0), origins)
                .map(|_| node.clone())
        }
        _ => {
            let from_chart = origins
                .get(path)
                .and_then(|c| c.first())
                .is_some_and(|o| o.via.starts_with(CHART_DEFAULT));
            (!from_chart).then(|| node.clone())
        }
    }
}

/// Effective values of `release` with the ConfigMaps and Secrets among `objects`.
#[must_use]
pub fn effective_values(release: &Node, objects: &[Node], charts: &ChartCache) -> Values {
    effective_values_with(release, objects, charts, &[])
}

/// As [`effective_values`], with the substitution records of the Kustomization that rendered
/// `release`, so that a value produced by a variable names it.
#[must_use]
pub fn effective_values_with(
    release: &Node,
    objects: &[Node],
    charts: &ChartCache,
    substituted: &[Substituted],
) -> Values {
    effective_values_in(release, objects, charts, substituted, &builtin_creators())
}

/// As [`effective_values_with`], knowing which controllers create the ConfigMaps and Secrets
/// a `valuesFrom` may name at runtime (the built-in ones and those fluxgate.yaml declares).
#[must_use]
pub fn effective_values_in(
    release: &Node,
    objects: &[Node],
    charts: &ChartCache,
    substituted: &[Substituted],
    creators: &[RuntimeCreator],
) -> Values {
    effective_values_indexed(
        release,
        &ObjectIndex::new(objects, creators),
        charts,
        substituted,
    )
}

/// As [`effective_values_in`], over objects indexed once for every release of an environment.
#[must_use]
pub fn effective_values_indexed<T: Borrow<Node>>(
    release: &Node,
    objects: &ObjectIndex<T>,
    charts: &ChartCache,
    substituted: &[Substituted],
) -> Values {
    effective_values_traced(release, objects, charts, substituted, &Replaced::new())
}

/// What kustomize patches replaced in an environment, by the place of the patch's value: the
/// place of the value it replaced ([`Override`]).
pub type Replaced = HashMap<Location, Location>;

/// The [`Replaced`] map of a build's (or a tree's) overrides.
pub fn replaced_map<'a>(overrides: impl IntoIterator<Item = &'a Override>) -> Replaced {
    overrides
        .into_iter()
        .map(|o| (o.patch.clone(), o.base.clone()))
        .collect()
}

/// As [`effective_values_indexed`], knowing what kustomize patches replaced: an inline value
/// an overlay set (or a variable whose definition an overlay patched) has the base value it
/// replaced as the next link of its origin.
#[must_use]
pub fn effective_values_traced<T: Borrow<Node>>(
    release: &Node,
    objects: &ObjectIndex<T>,
    charts: &ChartCache,
    substituted: &[Substituted],
    replaced: &Replaced,
) -> Values {
    let ns = release
        .str_at(&["metadata", "namespace"])
        .unwrap_or("default");
    let mut diagnostics = Vec::new();
    let mut tree = Node::map(release.loc.clone());
    let mut origins = Origins::new();

    let chart = resolve_chart(release, objects, &mut diagnostics).map(|(mut r, loc)| {
        r.location = loc;
        // A chart missing from the cache is reported once per environment for all its
        // releases (the model aggregates the charts whose `found` is `None`).
        if let Some(c) = charts.lookup(&r.name, r.version.as_deref()) {
            diagnostics.extend(c.problems.iter().cloned());
            let label = format!("{CHART_DEFAULT} ({} {})", c.name, c.version);
            if let Some(values) = c.values.as_ref().filter(|v| v.as_map().is_some()) {
                let chain = |n: &Node| vec![origin(&n.loc, &label)];
                merge::merge(&mut tree, values, "", &mut origins, &chain);
            }
            r.found = Some(c.source.clone());
            r.found_version = Some(c.version.clone());
        }
        r
    });

    if let Some(from) = release.path(&["spec", "valuesFrom"]).and_then(Node::as_seq) {
        for entry in from {
            values_from(
                entry,
                ns,
                objects,
                &mut tree,
                &mut origins,
                &mut diagnostics,
            );
        }
    }

    if let Some(inline) = release.path(&["spec", "values"]) {
        if inline.as_map().is_some() {
            let release_file = release.loc.file.clone();
            let chain = |n: &Node| {
                let mut chain = inline_chain(n, &release_file, substituted);
                // What the place that set the value replaced, back to the first base.
                let set_at = chain.first().map(|o| o.location.clone());
                if let Some(set_at) = set_at {
                    chain.extend(replaced_chain(&set_at, replaced));
                }
                chain
            };
            merge::merge(&mut tree, inline, "", &mut origins, &chain);
        } else if !inline.is_null() {
            diagnostics.push(Problem::new(
                ProblemKind::Invalid,
                "spec.values must be a mapping",
                Some(inline.loc.clone()),
            ));
        }
    }
    let user = without_chart_defaults(&tree, "", &origins)
        .unwrap_or_else(|| Node::map(release.loc.clone()));
    merge::drop_nulls(&mut tree, "", &mut origins);
    origins.remove("");
    Values {
        tree,
        origins,
        user,
        chart,
        problems: diagnostics,
    }
}

fn origin(loc: &Location, via: &str) -> Origin {
    Origin::new(loc.clone(), via)
}

/// The values a patch at `loc` replaced, the most recent first, followed back to the base
/// that first had the value.
fn replaced_chain(loc: &Location, replaced: &Replaced) -> Vec<Origin> {
    let mut out = Vec::new();
    let mut at = loc;
    while let Some(base) = replaced.get(at) {
        out.push(origin(
            base,
            "the base value, replaced by a kustomize patch",
        ));
        at = base;
        if out.len() > replaced.len() {
            break;
        }
    }
    out
}

fn inline_chain(n: &Node, release_file: &str, substituted: &[Substituted]) -> Vec<Origin> {
    let found = substituted
        .iter()
        .filter(|s| s.definition == n.loc)
        .find(|s| s.consumer.file.as_ref() == release_file)
        .or_else(|| substituted.iter().find(|s| s.definition == n.loc));
    if let Some(s) = found {
        // The variable's definition set the value; the `${VAR}` in the inline values passed
        // it on.
        let definition = s.chain().swap_remove(0);
        return vec![definition, origin(&s.consumer, "inline values")];
    }
    let via = if n.loc.file.as_ref() == release_file {
        "inline values"
    } else {
        "inline values, set by an overlay patch"
    };
    vec![origin(&n.loc, via)]
}

/// The chart name and version a release asks for, and the location that asks.
fn resolve_chart<T: Borrow<Node>>(
    release: &Node,
    objects: &ObjectIndex<T>,
    diagnostics: &mut Vec<Problem>,
) -> Option<(ChartRef, Location)> {
    let make = |name: &str, version: Option<String>| ChartRef {
        name: name.to_string(),
        version,
        found: None,
        found_version: None,
        location: release.loc.clone(),
    };
    if let Some(spec) = release.path(&["spec", "chart", "spec"]) {
        let name = spec.str_at(&["chart"])?;
        // A chart from a Git or bucket source is a path; its last segment names it.
        let name = name
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(name);
        let version = spec.get("version").and_then(Node::scalar_text);
        if let Some(source) = spec.get("sourceRef") {
            let kind = source.str_at(&["kind"]).unwrap_or_default();
            let name = source.str_at(&["name"]).unwrap_or_default();
            let ns = source
                .str_at(&["namespace"])
                .or_else(|| release.str_at(&["metadata", "namespace"]))
                .unwrap_or("default");
            if let Some(p) = missing_source("chart.spec.sourceRef", kind, ns, name, source, objects)
            {
                diagnostics.push(p);
            }
        }
        return Some((make(name, version), spec.loc.clone()));
    }
    let chart_ref = release.path(&["spec", "chartRef"])?;
    let kind = chart_ref.str_at(&["kind"]).unwrap_or_default();
    let name = chart_ref.str_at(&["name"]).unwrap_or_default();
    let ns = chart_ref
        .str_at(&["namespace"])
        .or_else(|| release.str_at(&["metadata", "namespace"]))
        .unwrap_or("default");
    let Some(source) = objects.find(kind, ns, name) else {
        diagnostics.extend(missing_source(
            "chartRef", kind, ns, name, chart_ref, objects,
        ));
        return None;
    };
    match kind {
        "OCIRepository" => {
            let url = source.str_at(&["spec", "url"]).unwrap_or_default();
            let chart = url.trim_end_matches('/').rsplit('/').next().unwrap_or(url);
            let version = source
                .path(&["spec", "ref", "tag"])
                .or_else(|| source.path(&["spec", "ref", "semver"]))
                .and_then(Node::scalar_text);
            Some((make(chart, version), chart_ref.loc.clone()))
        }
        "HelmChart" => {
            let chart = source.str_at(&["spec", "chart"])?;
            let chart = chart
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or(chart);
            let version = source
                .path(&["spec", "version"])
                .and_then(Node::scalar_text);
            Some((make(chart, version), chart_ref.loc.clone()))
        }
        _ => None,
    }
}

/// The source a release's chart comes from, when the environment neither renders it nor has
/// an operator that creates it: helm-controller cannot fetch the chart and the release fails
/// (an error, fail closed). One an operator creates is only unknown offline (a note).
fn missing_source<T: Borrow<Node>>(
    field: &str,
    kind: &str,
    ns: &str,
    name: &str,
    at: &Node,
    objects: &ObjectIndex<T>,
) -> Option<Problem> {
    if objects.find(kind, ns, name).is_some() {
        return None;
    }
    if objects.created(kind, ns, name).is_some() {
        return Some(Problem::new(
            ProblemKind::Offline,
            format!("{field} {kind}/{ns}/{name} is created in the cluster: the chart is unknown"),
            Some(at.loc.clone()),
        ));
    }
    Some(Problem::new(
        ProblemKind::MissingObject {
            field: field.into(),
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
        },
        format!(
            "{field} {kind}/{name} does not exist in namespace {ns} (nothing in this \
             environment renders it): helm-controller cannot fetch the chart and the release \
             fails"
        ),
        Some(at.loc.clone()),
    ))
}

fn values_from<T: Borrow<Node>>(
    entry: &Node,
    ns: &str,
    objects: &ObjectIndex<T>,
    tree: &mut Node,
    origins: &mut Origins,
    diagnostics: &mut Vec<Problem>,
) {
    let kind = entry.str_at(&["kind"]).unwrap_or_default();
    let name = entry.str_at(&["name"]).unwrap_or_default();
    let key = entry.str_at(&["valuesKey"]).unwrap_or("values.yaml");
    let target = entry.str_at(&["targetPath"]).filter(|t| !t.is_empty());
    let optional = entry.get("optional").and_then(Node::as_bool) == Some(true);
    let missing = |kind: ProblemKind, what: String, diagnostics: &mut Vec<Problem>| {
        if !optional {
            diagnostics.push(Problem::new(
                kind,
                format!("{what}: helm-controller fails this release (set `optional: true` if that is intended)"),
                Some(entry.loc.clone()),
            ));
        }
    };
    if kind != "ConfigMap" && kind != "Secret" {
        diagnostics.push(Problem::new(
            ProblemKind::Invalid,
            format!("valuesFrom kind must be ConfigMap or Secret, not `{kind}`"),
            Some(entry.loc.clone()),
        ));
        return;
    }
    let Some(obj) = objects.find(kind, ns, name) else {
        if let Some(creator) = objects.created(kind, ns, name) {
            diagnostics.push(runtime_note("valuesFrom", kind, name, creator, entry));
            return;
        }
        let absent = ProblemKind::MissingObject {
            field: "valuesFrom".into(),
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
        };
        missing(
            absent,
            format!("valuesFrom {kind}/{name} does not exist in namespace {ns}"),
            diagnostics,
        );
        return;
    };
    let secret = kind == "Secret";
    let encrypted = secret && is_sops_encrypted(obj);
    let (raw, value_node, decoded) =
        match (obj.path(&["data", key]), obj.path(&["stringData", key])) {
            (Some(v), _) if secret && !encrypted => {
                let text = v.scalar_text().unwrap_or_default();
                match crate::vars::decode_base64(&text) {
                    Ok(b) => (String::from_utf8_lossy(&b).into_owned(), v, true),
                    Err(e) => {
                        diagnostics.push(Problem::new(
                            ProblemKind::Invalid,
                            format!("Secret {ns}/{name} key `{key}` is not valid base64: {e}"),
                            Some(v.loc.clone()),
                        ));
                        return;
                    }
                }
            }
            (Some(v), _) | (None, Some(v)) => (v.scalar_text().unwrap_or_default(), v, false),
            (None, None) => {
                missing(
                    ProblemKind::Invalid,
                    format!("{kind}/{ns}/{name} has no key `{key}`"),
                    diagnostics,
                );
                return;
            }
        };
    let label = format!("valuesFrom {kind}/{ns}/{name} key {key}");
    if encrypted {
        diagnostics.push(Problem::new(
            ProblemKind::Offline,
            format!("{label} is SOPS-encrypted: its values are not known"),
            Some(entry.loc.clone()),
        ));
        if let Some(t) = target {
            let v = Node::string(OPAQUE_VALUE, value_node.loc.clone());
            set_target(
                tree,
                origins,
                t,
                v,
                &format!("{label} (encrypted, not known)"),
                entry,
                diagnostics,
            );
        }
        return;
    }
    if let Some(t) = target {
        match merge::typed_value(&raw, &value_node.loc) {
            Ok(v) => set_target(
                tree,
                origins,
                t,
                v,
                &format!("{label} targetPath {t}"),
                entry,
                diagnostics,
            ),
            Err(e) => diagnostics.push(Problem::new(
                ProblemKind::Invalid,
                format!("{label}: {e}"),
                Some(value_node.loc.clone()),
            )),
        }
        return;
    }
    let stream = parse_stream(&value_node.loc.file, &raw, Schema::Kube);
    for d in stream.diagnostics {
        diagnostics.push(Problem::new(
            ProblemKind::Invalid,
            format!("{label}: {}", d.message),
            Some(value_node.loc.clone()),
        ));
    }
    let Some(mut values) = stream.docs.into_iter().next() else {
        return;
    };
    if decoded || !raw.contains('\n') {
        values.relocate(&value_node.loc);
    } else {
        // A literal block, located at its first content line.
        shift_lines(&mut values, value_node.loc.line.saturating_sub(1));
    }
    match &values.value {
        Value::Map(_) => {
            let chain = |n: &Node| vec![origin(&n.loc, &label)];
            merge::merge(tree, &values, "", origins, &chain);
        }
        Value::Null => {}
        _ => diagnostics.push(Problem::new(
            ProblemKind::Invalid,
            format!("{label} is not a mapping of values"),
            Some(value_node.loc.clone()),
        )),
    }
}

fn set_target(
    tree: &mut Node,
    origins: &mut Origins,
    target: &str,
    value: Node,
    via: &str,
    entry: &Node,
    diagnostics: &mut Vec<Problem>,
) {
    let mut overlay = Node::map(entry.loc.clone());
    match merge::set_path(&mut overlay, target, value) {
        Ok(_) => {
            let chain = |n: &Node| vec![origin(&n.loc, via)];
            merge::merge(tree, &overlay, "", origins, &chain);
        }
        Err(e) => diagnostics.push(Problem::new(
            ProblemKind::Invalid,
            format!("targetPath `{target}`: {e}"),
            entry.get("targetPath").map(|n| n.loc.clone()),
        )),
    }
}

fn shift_lines(node: &mut Node, by: u32) {
    node.loc.line += by;
    match &mut node.value {
        Value::Map(m) => m.values_mut().for_each(|n| shift_lines(n, by)),
        Value::Seq(s) => s.iter_mut().for_each(|n| shift_lines(n, by)),
        _ => {}
    }
}
