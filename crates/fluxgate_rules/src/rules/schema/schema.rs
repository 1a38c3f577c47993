//! `schema`: every rendered object against its schema, offline (SPEC §7, layer L0).

use fluxgate_diagnostics::Annotate;
use std::collections::BTreeMap;

use fluxgate_diagnostics::{Diagnostic, Location, Severity};
use fluxgate_schema::{Against, Builtin, Catalog, Mode, Outcome, Violation, ViolationKind};
use fluxgate_yaml::Node;

use crate::RepoContext;

crate::declare_rule! {
    /// ## What it checks
    /// Every object of every rendered environment against its schema, as the API server would
    /// check it on apply: built-in kinds against Kubernetes v1.32's OpenAPI definitions, and
    /// v1.37's where v1.32 rejects (both embedded in fluxgate, nothing is downloaded), custom resources against the
    /// `openAPIV3Schema` of their CustomResourceDefinition, found in the environment's render
    /// (Flux's own `gotk-components.yaml` carries every Flux CRD), elsewhere in the repository,
    /// or in the `schemas:` folders of fluxgate.yaml (CRD manifests, or JSON Schema files named
    /// `<group>/<kind>_<version>.json` as in the CRDs-catalog).
    ///
    /// Errors: a value of the wrong type (`replicas: "3"`), a required field that is missing
    /// (a container without `name`), a value outside an enum or a bound, and under a built-in
    /// kind an unknown field (`imgae:`), which server-side apply rejects ("field not declared
    /// in schema"). An unknown field under a custom resource is a warning: the API server
    /// prunes it, so it silently has no effect. A built-in API version that Kubernetes v1.32
    /// does not serve (`policy/v1beta1`) is a warning. `null` values, `format`s and
    /// `x-kubernetes-validations` (CEL) rules are not judged. Objects whose kind has no
    /// schema are counted and listed once, in a note; they are never failed.
    ///
    /// ## Why it matters
    /// A typo in a field name or a quoted number renders fine and passes review, then fails
    /// the Flux Kustomization that applies it (and with it every object of that
    /// Kustomization), or, under a CRD, is dropped without a word: a `spec.inteval` on a
    /// HelmRelease leaves the default in force.
    ///
    /// ## Example
    /// ```yaml
    /// apiVersion: apps/v1
    /// kind: Deployment
    /// spec:
    ///   replicas: "2"          # must be an integer
    ///   template:
    ///     spec:
    ///       containers:
    ///         - name: web
    ///           imgae: nginx   # not a field of Container (did you mean `image`?)
    /// ```
    ///
    /// ## How to fix
    /// Correct the field at the line shown (the finding points at the file that set the
    /// value: the overlay patch, the substituted variable). For a custom resource whose CRD
    /// is installed by a Helm chart (so fluxgate cannot see it), put the CRD manifest or its
    /// JSON Schema into a folder named under `schemas:` in fluxgate.yaml.
    pub static SCHEMA = {
        name: "schema",
        severity: Error,
        scope: Repository,
        check: check,
    }
}

/// What the schema layer did in one run: the figures `check` prints for L0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Objects checked against a schema (one per environment that renders them).
    pub validated: usize,
    /// Objects whose kind has no schema.
    pub without_schema: usize,
    /// Validated objects that break their schema.
    pub invalid: usize,
}

fn check(ctx: &RepoContext<'_>, out: &mut Vec<Diagnostic>) {
    out.extend(run(ctx).0);
}

/// The rule's findings and its figures.
pub fn run(ctx: &RepoContext<'_>) -> (Vec<Diagnostic>, Stats) {
    let mut out = Vec::new();
    let mut stats = Stats::default();
    let repo_catalog = &ctx.schemas.catalog;
    for p in &ctx.schemas.problems {
        out.push(
            Diagnostic::new(ctx.rule.name, Severity::Warning, p.message.clone())
                .at(p.loc.clone())
                .help("`schemas:` folders hold CRD manifests or JSON Schema files named <group>/<kind>_<version>.json"),
        );
    }
    // kind -> (objects, first object's location, why it has no schema)
    let mut unschemed: BTreeMap<String, (usize, Location, String)> = BTreeMap::new();
    for env in ctx.envs {
        let mut env_catalog = Catalog::new();
        for obj in env.objects() {
            env_catalog.add_crd(obj);
        }
        for obj in env.objects() {
            if let Some(d) = unsubstituted_name(ctx, obj) {
                out.push(d.in_env(env.name()));
            }
            if let Some(d) = too_large(ctx, obj) {
                out.push(d.in_env(env.name()));
            }
            match repo_catalog.validate(obj, &[&env_catalog]) {
                Outcome::Valid { .. } => stats.validated += 1,
                Outcome::Invalid {
                    against,
                    mode,
                    violations,
                } => {
                    stats.validated += 1;
                    let found = findings(ctx, obj, &against, mode, violations);
                    stats.invalid += usize::from(!found.is_empty());
                    out.extend(found.into_iter().map(|d| d.in_env(env.name())));
                }
                Outcome::NotServed { served } => {
                    stats.without_schema += 1;
                    out.push(not_served(ctx, obj, &served).in_env(env.name()));
                }
                Outcome::NoSchema { why } => {
                    stats.without_schema += 1;
                    let e = unschemed
                        .entry(kind_label(obj))
                        .or_insert_with(|| (0, obj.loc.clone(), why));
                    e.0 += 1;
                }
            }
        }
    }
    out.extend(summary(ctx, &stats, &unschemed));
    (out, stats)
}

/// The most an object may hold: the API server (etcd's request limit) refuses an object
/// over about 1.5 MiB, and a ConfigMap's or Secret's data over 1 MiB.
const MAX_OBJECT_BYTES: usize = 1024 * 1024;

/// An object whose text alone (strings and keys, a lower bound of its JSON) passes
/// [`MAX_OBJECT_BYTES`]: the apply fails, and with it the Kustomization.
fn too_large(ctx: &RepoContext<'_>, obj: &Node) -> Option<Diagnostic> {
    let bytes = obj.text_bytes();
    (bytes > MAX_OBJECT_BYTES).then(|| {
        Diagnostic::new(
            ctx.rule.name,
            Severity::Error,
            format!(
                "{} {} holds {} KiB of text, over the API server's 1 MiB limit: the apply \
                 fails, and with it the Kustomization",
                obj.str_at(&["kind"]).unwrap_or("object"),
                obj.str_at(&["metadata", "name"]).unwrap_or("(unnamed)"),
                bytes / 1024
            ),
        )
        .at(obj.loc.clone())
        .help("split the data, or mount it from a volume or an image instead of an object")
    })
}

/// Kinds whose names are path segments (any text without `/` or `%`), not DNS subdomains:
/// `${...}` is a valid name for them.
const PATH_SEGMENT_NAMES: &[&str] = &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"];

/// An object whose name or namespace still holds a `${...}` that nothing substituted (its
/// Flux Kustomization has no `postBuild`, or defines no variable so Flux skips the step):
/// names are DNS subdomains and namespaces DNS labels, so the API server rejects it.
fn unsubstituted_name(ctx: &RepoContext<'_>, obj: &Node) -> Option<Diagnostic> {
    let kind = obj.str_at(&["kind"])?;
    for (field, applies) in [
        ("name", !PATH_SEGMENT_NAMES.contains(&kind)),
        ("namespace", true),
    ] {
        let Some(v) = obj.path(&["metadata", field]) else {
            continue;
        };
        let Some(text) = v.as_str() else {
            continue;
        };
        if !applies || !text.contains("${") {
            continue;
        }
        return Some(
            Diagnostic::new(
                ctx.rule.name,
                Severity::Error,
                format!(
                    "{}: metadata.{field} `{text}` still holds a `${{...}}` that nothing \
                     substituted; a {} takes only lowercase letters, digits and `-`{}, so the \
                     API server rejects the object",
                    object_label(obj),
                    if field == "name" { "name" } else { "namespace" },
                    if field == "name" { " and `.`" } else { "" },
                ),
            )
            .at(v.loc.clone())
            .help("post-build substitution fills `${VAR}` only in a Flux Kustomization with `postBuild` that defines at least one variable (or sets `substituteStrategy: Always`): define the variable there"),
        );
    }
    None
}

fn kind_label(obj: &Node) -> String {
    format!(
        "{} {}",
        obj.str_at(&["apiVersion"]).unwrap_or("(no apiVersion)"),
        obj.str_at(&["kind"]).unwrap_or("(no kind)")
    )
}

fn object_label(obj: &Node) -> String {
    let kind = obj.str_at(&["kind"]).unwrap_or("(no kind)");
    let name = obj.str_at(&["metadata", "name"]).unwrap_or("(unnamed)");
    match obj.str_at(&["metadata", "namespace"]) {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

fn findings(
    ctx: &RepoContext<'_>,
    obj: &Node,
    against: &Against,
    mode: Mode,
    violations: Vec<Violation>,
) -> Vec<Diagnostic> {
    // Flux decrypts a SOPS file before applying it: its `sops:` metadata is removed and its
    // values are ciphertext here, so only the field names can be judged.
    let sops = fluxgate_model::sops::is_sops_encrypted(obj);
    let schema_label = match against {
        Against::Builtin { versions, .. } => format!("Kubernetes {}", versions.join(" and ")),
        Against::Custom(origin) => origin.label(),
    };
    let mut out = Vec::new();
    for v in violations {
        if sops
            && (v.path == "sops"
                || matches!(v.kind, ViolationKind::WrongType | ViolationKind::NotAllowed))
        {
            continue;
        }
        let pruned = mode == Mode::Structural && v.kind == ViolationKind::UnknownField;
        let severity = if pruned {
            Severity::Warning
        } else {
            Severity::Error
        };
        let what = match v.kind {
            ViolationKind::UnknownField if pruned => format!(
                "`{}` is not a field of {} ({schema_label}): the API server drops it, so it \
                 has no effect",
                v.path,
                kind_label(obj)
            ),
            ViolationKind::UnknownField => format!(
                "`{}` is not a field of {} ({schema_label}): the API server rejects the object",
                v.path,
                kind_label(obj)
            ),
            _ => format!("`{}` {} ({schema_label})", v.path, v.message),
        };
        let mut d = Diagnostic::new(
            ctx.rule.name,
            severity,
            format!("{}: {what}", object_label(obj)),
        )
        .at(key_location(ctx, &v));
        if v.kind == ViolationKind::UnknownField
            && let Some(key) = &v.key
        {
            let known: Vec<&str> = v.known.iter().map(String::as_str).collect();
            if let Some(c) = fluxgate_model::config::closest(key, &known) {
                d = d.help(format!("did you mean `{c}`?"));
            }
        }
        if let Against::Custom(origin) = against {
            d = d.related(origin.location(), "the schema of this kind");
        }
        out.push(d);
    }
    out
}

/// The line of the field's key, when the violation names one, in the file that set it: for
/// an unknown field, the value's own line (a scalar) or one of the lines above it (a block
/// mapping or list); for a missing field, the key of the mapping that lacks it. Falls back to
/// the value's location.
fn key_location(ctx: &RepoContext<'_>, v: &Violation) -> Location {
    let (key, from) = match v.kind {
        ViolationKind::UnknownField => (v.key.as_deref(), v.loc.line as usize),
        // `spec.template.spec` lacks `containers`: the key `spec` above the mapping. A list
        // item (`containers[0]`) is pointed at as it is.
        ViolationKind::MissingRequired => {
            let parent = v.path.rsplit_once('.').map(|(p, _)| p).unwrap_or_default();
            let last = parent.rsplit('.').next().unwrap_or_default();
            let plain = !last.is_empty() && !last.ends_with(']');
            (
                plain.then_some(last),
                (v.loc.line as usize).saturating_sub(1),
            )
        }
        _ => (None, 0),
    };
    let Some(key) = key.filter(|_| from > 0) else {
        return v.loc.clone();
    };
    let Some(file) = ctx.repo.file(&v.loc.file) else {
        return v.loc.clone();
    };
    let lines: Vec<&str> = file.text.lines().collect();
    let last = from.min(lines.len());
    for n in (last.saturating_sub(20).max(1)..=last).rev() {
        if let Some(col) = key_column(lines[n - 1], key) {
            return Location::new(v.loc.file.clone(), n as u32, col as u32 + 1);
        }
    }
    v.loc.clone()
}

/// Where `key:` (plain or quoted) starts on a line, as a mapping key.
fn key_column(line: &str, key: &str) -> Option<usize> {
    for quoted in [key.to_string(), format!("\"{key}\""), format!("'{key}'")] {
        let needle = format!("{quoted}:");
        let mut from = 0;
        while let Some(i) = line[from..].find(&needle) {
            let at = from + i;
            let before = line[..at].trim_end();
            if before.is_empty() || before.ends_with(['-', '{', ',']) {
                return Some(at);
            }
            from = at + 1;
        }
    }
    None
}

fn not_served(ctx: &RepoContext<'_>, obj: &Node, served: &[String]) -> Diagnostic {
    let b = Builtin::get();
    let at = obj
        .get("apiVersion")
        .map_or_else(|| obj.loc.clone(), |n| n.loc.clone());
    Diagnostic::new(
        ctx.rule.name,
        Severity::Warning,
        format!(
            "{}: neither Kubernetes {} nor {} serves {} (their versions of {}: {}), so the \
             API server answers \"no matches for kind\"",
            object_label(obj),
            b.primary.version,
            b.newest.version,
            kind_label(obj),
            obj.str_at(&["kind"]).unwrap_or(""),
            served.join(", ")
        ),
    )
    .at(at)
    .help("use a served apiVersion (a removed beta API has a stable successor)")
}

/// One note for the whole run: how many objects were validated, and the kinds that have no
/// schema (never failed, but said, so that nothing passes unnoticed).
fn summary(
    ctx: &RepoContext<'_>,
    stats: &Stats,
    unschemed: &BTreeMap<String, (usize, Location, String)>,
) -> Option<Diagnostic> {
    let (_, (_, first, _)) = unschemed.iter().next()?;
    let listed: Vec<String> = unschemed
        .iter()
        .map(|(k, (n, _, _))| format!("{k} ({n})"))
        .collect();
    let mut d = Diagnostic::new(
        ctx.rule.name,
        Severity::Note,
        format!(
            "{} object{} of {} kind{} have no schema, so they were not validated ({} {} \
             validated): {}",
            stats.without_schema,
            if stats.without_schema == 1 { "" } else { "s" },
            unschemed.len(),
            if unschemed.len() == 1 { "" } else { "s" },
            stats.validated,
            if stats.validated == 1 { "was" } else { "were" },
            listed.join(", ")
        ),
    )
    .at(first.clone())
    .help("put the CRD manifests (or their JSON Schemas) into a folder named under `schemas:` in fluxgate.yaml");
    for (k, (_, loc, why)) in unschemed.iter().take(10) {
        d = d.related(loc.clone(), format!("{k}: {why}"));
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::key_column;

    #[test]
    fn finds_the_key_of_a_field() {
        assert_eq!(key_column("  imgae: nginx", "imgae"), Some(2));
        assert_eq!(key_column("  - imgae: nginx", "imgae"), Some(4));
        assert_eq!(key_column("  a: {b: 1, \"imgae\": x}", "imgae"), Some(12));
        assert_eq!(key_column("  image: imgae: x", "imgae"), None);
    }
}
