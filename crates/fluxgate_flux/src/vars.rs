//! The variables of one Flux Kustomization's post-build substitution, each with the place that
//! defined it.
//!
//! Flux reads `spec.postBuild.substituteFrom` in list order (ConfigMap `data`, Secret `data`
//! base64-decoded; a later source overrides an earlier one; a missing object is an error unless
//! `optional: true`), then lets the inline `spec.postBuild.substitute` override them all.
//! Newlines are removed from every value. Offline the objects come from the rendered
//! environment; a Secret written with `stringData` counts as the API server would store it.
//! A SOPS-encrypted Secret defines its keys, but its values are never decrypted: they read as
//! [`OPAQUE_VALUE`] and are flagged so that no rule treats them as real.

use fluxgate_diagnostics::Annotate;
use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Node, parse_stream};
use regex::Regex;

use crate::lookup::ObjectIndex;
use crate::problem::{Problem, ProblemKind};

/// What an encrypted value substitutes to: a plain scalar that reads back as a string.
pub const OPAQUE_VALUE: &str = "fluxgate-sops-opaque";

/// Flux's rule for variable names.
pub const NAME_PATTERN: &str = "^[_[:alpha:]][_[:alpha:][:digit:]]*$";

static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(NAME_PATTERN).expect("the variable name pattern is valid"));

/// One variable and where it was defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarDef {
    pub value: String,
    /// The line that set the value (a ConfigMap `data` key, an overlay patch, the inline
    /// `substitute` entry).
    pub definition: Location,
    /// `ConfigMap/<ns>/<name>`, `Secret/<ns>/<name>` or `spec.postBuild.substitute`.
    pub source: String,
    /// The value comes from an encrypted Secret and is not known.
    pub opaque: bool,
}

/// The variables of one Kustomization.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vars {
    map: BTreeMap<String, VarDef>,
    /// Sources that exist only once the cluster runs (a Secret an ExternalSecret creates):
    /// their keys are unknown offline.
    unknown: Vec<String>,
    /// Required sources that nothing creates: Flux fails the Kustomization.
    missing: Vec<String>,
    /// Defined names that are not valid variable names: Flux fails the Kustomization.
    invalid: Vec<String>,
}

impl Vars {
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&VarDef> {
        self.map.get(name)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        // An invalid name still counts: Flux loads it, then refuses it.
        self.map.is_empty() && self.unknown.is_empty() && self.invalid.is_empty()
    }

    /// Whether some variables come from a source whose keys are unknown offline: a variable
    /// not found here may still be defined in the cluster.
    #[must_use]
    pub fn has_unknown_keys(&self) -> bool {
        !self.unknown.is_empty()
    }

    /// Why Flux cannot load these variables at all (a required source that does not exist, a
    /// defined name that is not a valid variable name): then every substitution of the
    /// Kustomization fails.
    /// These variables with the `substituteFrom` sources the bootstrap seeds (`seeded`)
    /// present: each missing one that is seeded is no longer missing (its keys stay unknown)
    /// and its problem becomes a note that names the template creating it.
    #[must_use]
    pub fn with_seeded(
        mut self,
        problems: Vec<Problem>,
        seeded: &[Seeded],
        ks: &Node,
    ) -> (Vars, Vec<Problem>) {
        if seeded.is_empty() {
            return (self, problems);
        }
        let mut out = Vec::with_capacity(problems.len());
        for p in problems {
            let ProblemKind::MissingObject {
                field,
                kind,
                namespace,
                name,
            } = &p.kind
            else {
                out.push(p);
                continue;
            };
            let Some(s) = seeded.iter().find(|s| {
                s.kind == *kind
                    && s.name == *name
                    && s.namespace.as_deref().is_none_or(|n| n == namespace)
            }) else {
                out.push(p);
                continue;
            };
            self.missing.retain(|m| *m != format!("{kind}/{name}"));
            let mut note = Problem::new(
                ProblemKind::CreatedAtRuntime {
                    field: field.clone(),
                    kind: kind.clone(),
                    name: name.clone(),
                },
                format!(
                    "{field} {kind}/{name} is created before Flux runs by the bootstrap template \
                     {}: its keys are unknown offline, so what it defines is not checked",
                    s.at.file
                ),
                p.location.clone(),
            )
            .related(s.at.clone(), "created by this bootstrap template");
            if p.location.is_none() {
                note.location = Some(ks.loc.clone());
            }
            out.push(note);
        }
        (self, out)
    }

    #[must_use]
    pub fn load_failure(&self) -> Option<String> {
        if let Some(m) = self.missing.first() {
            return Some(format!("substitute from '{m}' error: not found"));
        }
        self.invalid
            .first()
            .map(|k| format!("'{k}' var name is invalid, must match '{NAME_PATTERN}'"))
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &VarDef)> {
        self.map.iter()
    }

    /// Defines (or overrides) a variable; the value loses its newlines as in Flux.
    pub fn define(&mut self, name: &str, mut def: VarDef) {
        def.value.retain(|c| c != '\n');
        self.map.insert(name.to_string(), def);
    }

    /// The variables a Flux Kustomization substitutes with, looked up among `objects` (the
    /// rendered environment). Problems are `render` diagnostics: a missing required source, an
    /// undecodable Secret value, an invalid variable name (Flux then fails the whole
    /// Kustomization; the name is left out here so that the rest still renders).
    #[must_use]
    pub fn for_kustomization(ks: &Node, objects: &[Node]) -> (Vars, Vec<Problem>) {
        Vars::for_kustomization_with(ks, objects, &builtin_creators())
    }

    /// [`Vars::for_kustomization`] with the controllers that create sources at runtime
    /// (the built-in ones and those fluxgate.yaml declares).
    #[must_use]
    pub fn for_kustomization_with(
        ks: &Node,
        objects: &[Node],
        creators: &[RuntimeCreator],
    ) -> (Vars, Vec<Problem>) {
        Vars::for_kustomization_in(ks, &ObjectIndex::new(objects, creators))
    }

    /// [`Vars::for_kustomization_with`] over objects already indexed (built once for many
    /// Kustomizations).
    #[must_use]
    pub fn for_kustomization_in<T: Borrow<Node>>(
        ks: &Node,
        objects: &ObjectIndex<T>,
    ) -> (Vars, Vec<Problem>) {
        let mut vars = Vars::default();
        let mut diags = Vec::new();
        let ns = ks
            .str_at(&["metadata", "namespace"])
            .unwrap_or("flux-system");
        let post = ks.path(&["spec", "postBuild"]);
        let from = post
            .and_then(|p| p.get("substituteFrom"))
            .and_then(Node::as_seq)
            .unwrap_or_default();
        for entry in from {
            let kind = entry.str_at(&["kind"]).unwrap_or_default();
            let name = entry.str_at(&["name"]).unwrap_or_default();
            let optional = entry.get("optional").and_then(Node::as_bool) == Some(true);
            if kind != "ConfigMap" && kind != "Secret" {
                diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!("substituteFrom kind must be ConfigMap or Secret, not `{kind}`"),
                    Some(entry.loc.clone()),
                ));
                continue;
            }
            match objects.find(kind, ns, name) {
                Some(obj) => vars.add_object(obj, kind, ns, name, &mut diags),
                None if optional => {}
                None if let Some(creator) = objects.created(kind, ns, name) => {
                    vars.unknown.push(format!("{kind}/{ns}/{name}"));
                    diags.push(runtime_note("substituteFrom", kind, name, creator, entry));
                }
                None => {
                    // Its keys are unknown: the missing source is the finding, not each
                    // variable it would have defined.
                    vars.unknown.push(format!("{kind}/{ns}/{name}"));
                    vars.missing.push(format!("{kind}/{name}"));
                    diags.push(
                    Problem::new(
                        ProblemKind::MissingObject {
                            field: "substituteFrom".into(),
                            kind: kind.into(),
                            namespace: ns.into(),
                            name: name.into(),
                        },
                        format!(
                            "substituteFrom {kind}/{name} does not exist in namespace {ns}: \
                             Flux fails this Kustomization (set `optional: true` if that is intended)"
                        ),
                        Some(entry.loc.clone()),
                    )
                    .help("define the object in a Kustomization this one depends on"),
                    );
                }
            }
        }
        if let Some(inline) = post
            .and_then(|p| p.get("substitute"))
            .and_then(Node::as_map)
        {
            for (k, v) in inline {
                vars.define(
                    k,
                    VarDef {
                        value: v.scalar_text().unwrap_or_default(),
                        definition: v.loc.clone(),
                        source: "spec.postBuild.substitute".into(),
                        opaque: false,
                    },
                );
            }
        }
        let invalid: Vec<String> = vars
            .map
            .keys()
            .filter(|k| !NAME.is_match(k))
            .cloned()
            .collect();
        for k in invalid {
            if let Some(def) = vars.map.remove(&k) {
                vars.invalid.push(k.clone());
                diags.push(Problem::new(
                    ProblemKind::Invalid,
                    format!(
                        "'{k}' var name is invalid, must match '{NAME_PATTERN}': Flux fails the \
                         substitution of this Kustomization"
                    ),
                    Some(def.definition),
                ));
            }
        }
        (vars, diags)
    }

    fn add_object(
        &mut self,
        obj: &Node,
        kind: &str,
        ns: &str,
        name: &str,
        diags: &mut Vec<Problem>,
    ) {
        let source = format!("{kind}/{ns}/{name}");
        let opaque = kind == "Secret" && is_sops_encrypted(obj);
        // A SOPS dotenv or INI file read by a secretGenerator: Flux decrypts it and its
        // `sops_*` metadata keys are gone; the other keys are the variables.
        let generated_from_sops = opaque
            && obj
                .get("data")
                .and_then(Node::as_map)
                .is_some_and(|m| m.keys().any(|k| is_sops_metadata_key(k)));
        if let Some(data) = obj.get("data").and_then(Node::as_map) {
            for (k, v) in data {
                if generated_from_sops && k.starts_with("sops_") {
                    continue;
                }
                let text = v.scalar_text().unwrap_or_default();
                let value = if opaque {
                    OPAQUE_VALUE.to_string()
                } else if kind == "Secret" {
                    match decode_base64(&text) {
                        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                        Err(e) => {
                            diags.push(Problem::new(
                                ProblemKind::Invalid,
                                format!("Secret {ns}/{name} key `{k}` is not valid base64: {e}"),
                                Some(v.loc.clone()),
                            ));
                            continue;
                        }
                    }
                } else {
                    text
                };
                self.define(
                    k,
                    VarDef {
                        value,
                        definition: v.loc.clone(),
                        source: source.clone(),
                        opaque,
                    },
                );
            }
        }
        if kind == "Secret"
            && let Some(data) = obj.get("stringData").and_then(Node::as_map)
        {
            for (k, v) in data {
                let value = if opaque {
                    OPAQUE_VALUE.to_string()
                } else {
                    v.scalar_text().unwrap_or_default()
                };
                self.define(
                    k,
                    VarDef {
                        value,
                        definition: v.loc.clone(),
                        source: source.clone(),
                        opaque,
                    },
                );
            }
        }
    }
}

/// The scan that [`ObjectIndex::find`] replaced, kept to test that the index answers the same.
#[cfg(test)]
pub(crate) fn find_object<'a>(
    objects: &'a [Node],
    kind: &str,
    ns: &str,
    name: &str,
) -> Option<&'a Node> {
    let matches = |o: &&Node| {
        o.str_at(&["kind"]) == Some(kind) && o.str_at(&["metadata", "name"]) == Some(name)
    };
    objects
        .iter()
        .filter(matches)
        .find(|o| o.str_at(&["metadata", "namespace"]) == Some(ns))
        .or_else(|| {
            // An object rendered without a namespace lands in the namespace the
            // Kustomization applies it to; accept it rather than report a false missing source.
            objects
                .iter()
                .filter(matches)
                .find(|o| o.path(&["metadata", "namespace"]).is_none())
        })
}

/// What a controller creates in the cluster from an object of the repository: the kind it
/// creates and the field paths (into the creator) that name it, the creator's own
/// `metadata.name` when the list is empty. A name suffix is appended (CloudNativePG's
/// `<cluster>-app`). `fluxgate.yaml` can add more ([`Vars::for_kustomization`] takes them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeCreator {
    /// The creator's kind.
    pub kind: String,
    /// An `apiVersion` prefix the creator must have (its API group); empty for any.
    pub group: String,
    /// `Secret` or `ConfigMap`.
    pub creates: String,
    /// Dotted field paths naming the created object; empty: the creator's own name.
    pub name_fields: Vec<String>,
    /// Suffixes appended to the creator's own name (when `name_fields` is empty).
    pub suffixes: Vec<String>,
    /// Whether the created object may land in other namespaces (a cluster-scoped creator).
    pub any_namespace: bool,
    /// A creator learned from the custom resources of the environment rather than named in
    /// the table: any custom resource (an API group with a dot, not Kubernetes' own, not
    /// Flux's) whose `spec` names the object in a `...secretName` key, or in Crossplane's
    /// `writeConnectionSecretToRef.name`: a PostgresUser's `secretName`, an OIDC client's
    /// `clientSecretName` (`...configMapName` for a ConfigMap, which the built-in table does
    /// not learn: such keys mostly name what a resource reads). `kind` and `group` are empty
    /// then.
    pub learned: bool,
}

impl RuntimeCreator {
    /// A creator of `creates` (`Secret` or `ConfigMap`) objects named by `name_fields` of a
    /// `kind` object whose apiVersion starts with `group`.
    #[must_use]
    pub fn new(kind: &str, group: &str, creates: &str, name_fields: &[&str]) -> Self {
        RuntimeCreator {
            kind: kind.to_string(),
            group: group.to_string(),
            creates: creates.to_string(),
            name_fields: name_fields.iter().map(ToString::to_string).collect(),
            suffixes: Vec::new(),
            any_namespace: false,
            learned: false,
        }
    }

    /// The creator of `creates` (`Secret` or `ConfigMap`) learned from custom resources (see
    /// [`Self::learned`]).
    #[must_use]
    pub fn learned(creates: &str) -> Self {
        RuntimeCreator {
            learned: true,
            ..RuntimeCreator::new("", "", creates, &[])
        }
    }

    /// The names of the objects `creator` makes, when it is this creator's kind.
    pub(crate) fn names<'a>(&self, creator: &'a Node) -> Vec<std::borrow::Cow<'a, str>> {
        if self.learned {
            return learned_names(creator, &self.creates)
                .into_iter()
                .map(std::borrow::Cow::Borrowed)
                .collect();
        }
        let api = creator.str_at(&["apiVersion"]).unwrap_or_default();
        if creator.str_at(&["kind"]) != Some(self.kind.as_str()) || !api.starts_with(&self.group) {
            return Vec::new();
        }
        let own = creator.str_at(&["metadata", "name"]);
        let mut out = Vec::new();
        for field in &self.name_fields {
            let path: Vec<&str> = field.split('.').collect();
            if let Some(n) = creator.str_at(&path) {
                out.push(std::borrow::Cow::Borrowed(n));
            }
        }
        if (self.name_fields.is_empty() || out.is_empty())
            && let Some(own) = own
        {
            if self.suffixes.is_empty() {
                out.push(std::borrow::Cow::Borrowed(own));
            }
            for s in &self.suffixes {
                out.push(std::borrow::Cow::Owned(format!("{own}{s}")));
            }
        }
        out
    }
}

/// Whether `api` is a custom resource's apiVersion an operator acts on: a group with a dot
/// that is neither Kubernetes' own (`*.k8s.io`) nor Flux's (whose HelmRelease values hold
/// any chart's `secretName`).
fn is_custom_api(api: &str) -> bool {
    let Some((group, _)) = api.split_once('/') else {
        return false;
    };
    group.contains('.')
        && !group.ends_with(".k8s.io")
        && !group.ends_with("fluxcd.io")
        && !group.ends_with("fluxcd.controlplane.io")
}

/// The values of `...secretName` keys (and Crossplane's `writeConnectionSecretToRef.name`
/// for a Secret) below `node`, to a bounded depth.
fn learned_walk<'a>(
    node: &'a Node,
    suffix: &str,
    secret: bool,
    depth: usize,
    out: &mut Vec<&'a str>,
) {
    if depth > 6 {
        return;
    }
    match &node.value {
        fluxgate_yaml::Value::Map(m) => {
            for (k, v) in m.iter() {
                if k.to_ascii_lowercase().ends_with(suffix)
                    && let Some(name) = v.as_str()
                {
                    out.push(name);
                } else if secret
                    && k == "writeConnectionSecretToRef"
                    && let Some(name) = v.str_at(&["name"])
                {
                    out.push(name);
                } else {
                    learned_walk(v, suffix, secret, depth + 1, out);
                }
            }
        }
        fluxgate_yaml::Value::Seq(items) => {
            for v in items {
                learned_walk(v, suffix, secret, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// The names a custom resource's `spec` gives the `creates` objects it makes (see
/// [`RuntimeCreator::learned`]), at any depth below `spec`.
fn learned_names<'a>(creator: &'a Node, creates: &str) -> Vec<&'a str> {
    let api = creator.str_at(&["apiVersion"]).unwrap_or_default();
    let mut out = Vec::new();
    if !is_custom_api(api) {
        return out;
    }
    let suffix = match creates {
        "Secret" => "secretname",
        "ConfigMap" => "configmapname",
        _ => return out,
    };
    if let Some(spec) = creator.get("spec") {
        learned_walk(spec, suffix, creates == "Secret", 0, &mut out);
    }
    out
}

/// The controllers seen creating Secrets and ConfigMaps on real repositories, and the
/// creators learned from custom resources ([`RuntimeCreator::learned`]) last.
///
/// | kind | group | creates | named by |
/// |---|---|---|---|
/// | ExternalSecret | external-secrets.io | Secret | `spec.target.name` |
/// | ClusterExternalSecret | external-secrets.io | Secret (any namespace) | `spec.externalSecretSpec.target.name`, `spec.externalSecretName` |
/// | SealedSecret | bitnami.com | Secret | `spec.template.metadata.name` |
/// | OnePasswordItem | onepassword.com | Secret | its name |
/// | ObjectBucketClaim | objectbucket.io | Secret, ConfigMap | its name |
/// | Certificate | cert-manager.io | Secret | `spec.secretName` |
/// | Cluster | postgresql.cnpg.io | Secret | its name + `-app`, `-superuser`, `-ca`, `-replication`, `-server` |
/// | InfisicalSecret | secrets.infisical.com | Secret | `spec.managedSecretReference.secretName` |
/// | VaultStaticSecret | secrets.hashicorp.com | Secret | `spec.destination.name` |
/// | DopplerSecret | secrets.doppler.com | Secret | `spec.managedSecret.name` |
/// | any custom resource | not `*.k8s.io`, not Flux | Secret | a `spec` key ending in `secretName`, `writeConnectionSecretToRef.name` |
///
/// `fluxgate.yaml` adds more with `generators:` entries (`kind`, `apiVersion`,
/// `creates: Secret|ConfigMap`, `name:` field paths).
#[must_use]
pub fn builtin_creators() -> Vec<RuntimeCreator> {
    let mut cnpg = RuntimeCreator::new("Cluster", "postgresql.cnpg.io/", "Secret", &[]);
    cnpg.suffixes = ["-app", "-superuser", "-ca", "-replication", "-server"]
        .iter()
        .map(ToString::to_string)
        .collect();
    let mut cluster_es = RuntimeCreator::new(
        "ClusterExternalSecret",
        "external-secrets.io/",
        "Secret",
        &[
            "spec.externalSecretSpec.target.name",
            "spec.externalSecretName",
        ],
    );
    cluster_es.any_namespace = true;
    vec![
        RuntimeCreator::new(
            "ExternalSecret",
            "external-secrets.io/",
            "Secret",
            &["spec.target.name"],
        ),
        cluster_es,
        RuntimeCreator::new(
            "SealedSecret",
            "bitnami.com/",
            "Secret",
            &["spec.template.metadata.name"],
        ),
        RuntimeCreator::new("OnePasswordItem", "onepassword.com/", "Secret", &[]),
        RuntimeCreator::new("ObjectBucketClaim", "objectbucket.io/", "Secret", &[]),
        RuntimeCreator::new("ObjectBucketClaim", "objectbucket.io/", "ConfigMap", &[]),
        RuntimeCreator::new(
            "Certificate",
            "cert-manager.io/",
            "Secret",
            &["spec.secretName"],
        ),
        cnpg,
        RuntimeCreator::new(
            "InfisicalSecret",
            "secrets.infisical.com/",
            "Secret",
            &["spec.managedSecretReference.secretName"],
        ),
        RuntimeCreator::new(
            "VaultStaticSecret",
            "secrets.hashicorp.com/",
            "Secret",
            &["spec.destination.name"],
        ),
        RuntimeCreator::new(
            "DopplerSecret",
            "secrets.doppler.com/",
            "Secret",
            &["spec.managedSecret.name"],
        ),
        RuntimeCreator::learned("Secret"),
    ]
}

/// The object that creates `kind` `ns/name` once the cluster runs (an `ExternalSecret` whose
/// target is that Secret, an `ObjectBucketClaim` of that name, a Certificate's `secretName`,
/// and the rest of [`builtin_creators`] and `extra`).
#[must_use]
pub fn created_at_runtime<'a>(
    objects: &'a [Node],
    kind: &str,
    ns: &str,
    name: &str,
) -> Option<&'a Node> {
    created_by(objects, &builtin_creators(), kind, ns, name)
}

/// [`created_at_runtime`] with an explicit list of creators.
#[must_use]
pub fn created_by<'a>(
    objects: impl IntoIterator<Item = &'a Node>,
    creators: &[RuntimeCreator],
    kind: &str,
    ns: &str,
    name: &str,
) -> Option<&'a Node> {
    let relevant: Vec<&RuntimeCreator> = creators.iter().filter(|c| c.creates == kind).collect();
    if relevant.is_empty() {
        return None;
    }
    let creates = |o: &Node| {
        relevant.iter().any(|c| {
            let in_ns =
                c.any_namespace || o.str_at(&["metadata", "namespace"]).is_none_or(|n| n == ns);
            in_ns && c.names(o).iter().any(|n| n == name)
        })
    };
    objects.into_iter().find(|o| {
        creates(o)
            || resource_set_objects(o).iter().any(|t| {
                let same = t.str_at(&["kind"]) == Some(kind)
                    && t.str_at(&["metadata", "name"]) == Some(name)
                    && t.str_at(&["metadata", "namespace"]).is_none_or(|n| n == ns);
                same || creates(t)
            })
    })
}

/// The objects a Flux Operator `ResourceSet` applies: its `spec.resources` and its
/// `spec.resourcesTemplate` documents, with each `<< input >>` placeholder left unknown (a
/// templated namespace counts as the ResourceSet's own).
pub(crate) fn resource_set_objects(o: &Node) -> Vec<Node> {
    if o.str_at(&["kind"]) != Some("ResourceSet")
        || !o
            .str_at(&["apiVersion"])
            .is_some_and(|a| a.starts_with("fluxcd.controlplane.io/"))
    {
        return Vec::new();
    }
    let mut out: Vec<Node> = o
        .path(&["spec", "resources"])
        .and_then(Node::as_seq)
        .map(<[Node]>::to_vec)
        .unwrap_or_default();
    if let Some(template) = o.str_at(&["spec", "resourcesTemplate"]) {
        // Control lines (`<<- if inputs.x >>`, `<<- end >>`) go: every branch is kept, which
        // is enough to know which objects the set may create.
        let kept: String = template
            .lines()
            .filter(|l| {
                let t = l.trim();
                !(t.starts_with("<<") && t.ends_with(">>") && !t[2..].contains("<<"))
            })
            .fold(String::new(), |mut acc, l| {
                acc.push_str(l);
                acc.push('\n');
                acc
            });
        let mut text = String::with_capacity(kept.len());
        let mut rest = kept.as_str();
        while let Some(at) = rest.find("<<") {
            text.push_str(&rest[..at]);
            let Some(end) = rest[at..].find(">>") else {
                break;
            };
            text.push_str(RESOURCE_SET_INPUT);
            rest = &rest[at + end + 2..];
        }
        text.push_str(rest);
        out.extend(parse_stream(&o.loc.file, &text, fluxgate_yaml::Schema::Kube).docs);
    }
    for t in &mut out {
        let templated = t
            .str_at(&["metadata", "namespace"])
            .is_some_and(|n| n.contains(RESOURCE_SET_INPUT));
        if templated && let Some(meta) = t.get_mut("metadata").and_then(Node::as_map_mut) {
            meta.shift_remove("namespace");
        }
    }
    out
}

/// An object the bootstrap creates outside Flux, before it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeded {
    pub kind: String,
    /// `None` when the template leaves it to the default or to an expression.
    pub namespace: Option<String>,
    pub name: String,
    /// The document in the bootstrap template.
    pub at: Location,
}

/// What a `<< input >>` of a ResourceSet template stands for offline.
const RESOURCE_SET_INPUT: &str = "resourceset-input";

/// A reference to a Secret that only the running cluster creates.
pub(crate) fn runtime_note(
    field: &str,
    kind: &str,
    name: &str,
    creator: &Node,
    entry: &Node,
) -> Problem {
    Problem::new(
        ProblemKind::CreatedAtRuntime {
            field: field.into(),
            kind: kind.into(),
            name: name.into(),
        },
        format!(
            "{field} {kind}/{name} is created in the cluster by {} {}: its keys are unknown \
             offline, so what it defines is not checked",
            creator.str_at(&["kind"]).unwrap_or_default(),
            creator.str_at(&["metadata", "name"]).unwrap_or_default(),
        ),
        Some(entry.loc.clone()),
    )
    .related(creator.loc.clone(), "created by this object")
}

/// A SOPS-encrypted Secret: a top-level `sops:` mapping or `ENC[...]` values (a manifest
/// encrypted in place), or one a `secretGenerator` made from a SOPS-encrypted file, which Flux
/// decrypts before building: a dotenv or INI file read by `envs` (its `sops_mac` and
/// `sops_version` keys are in `data`), or a YAML, JSON, dotenv, INI or binary file read by
/// `files` (its decoded value carries SOPS ciphertext and metadata).
#[must_use]
pub fn is_sops_encrypted(obj: &Node) -> bool {
    carries_sops_metadata(obj) || !sops_ciphertext_values(obj).is_empty()
}

/// Whether Flux would decrypt the object: it carries the metadata SOPS writes (a top-level
/// `sops:` mapping, the keys of an encrypted dotenv or INI file in `data`, or a `data` value
/// that is a whole SOPS file). `ENC[...]` values alone are not enough: without the metadata
/// Flux applies the ciphertext as the value.
#[must_use]
pub fn carries_sops_metadata(obj: &Node) -> bool {
    if obj.get("sops").is_some_and(|s| s.as_map().is_some()) {
        return true;
    }
    ["data", "stringData"].iter().any(|f| {
        obj.get(f).and_then(Node::as_map).is_some_and(|m| {
            m.keys().any(|k| is_sops_metadata_key(k))
                || (*f == "data"
                    && m.values().any(|v| {
                        v.as_str()
                            .is_some_and(|s| decode_base64(s).is_ok_and(|b| is_sops_file(&b)))
                    }))
        })
    })
}

/// The `data`/`stringData` values that are SOPS ciphertext (`ENC[...]`), as `field.key` with
/// the value's node.
#[must_use]
pub fn sops_ciphertext_values(obj: &Node) -> Vec<(String, &Node)> {
    let mut out = Vec::new();
    for f in ["data", "stringData"] {
        let Some(m) = obj.get(f).and_then(Node::as_map) else {
            continue;
        };
        for (k, v) in m {
            if v.as_str().is_some_and(is_sops_ciphertext) {
                out.push((format!("{f}.{k}"), v));
            }
        }
    }
    out
}

/// The keys SOPS adds to a dotenv or INI file it encrypts (`sops_mac`, `sops_version`, ...).
/// Flux removes them when it decrypts; they are never variables.
#[must_use]
pub fn is_sops_metadata_key(key: &str) -> bool {
    matches!(key, "sops_mac" | "sops_version" | "sops_lastmodified")
}

fn is_sops_ciphertext(s: &str) -> bool {
    s.starts_with("ENC[") && s.ends_with(']')
}

/// Whether a whole file's bytes are SOPS output: ciphertext plus the metadata SOPS writes in
/// each of its formats.
#[must_use]
pub fn is_sops_file(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.contains("ENC[AES256_GCM,")
        && (text.contains("sops_mac=")
            || text.contains("\"sops\"")
            || text.contains("[sops]")
            || text.lines().any(|l| l.trim_end() == "sops:"))
}

/// Base64 as the Kubernetes API decodes a Secret's `data`: Go's decoder skips `\r` and `\n`,
/// so values that kustomize (or a person) wrapped across lines decode.
pub fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine as _;
    let compact: String = text.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    base64::engine::general_purpose::STANDARD.decode(compact.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_stream};

    fn b64(s: &str) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn secret_with_data(entries: &[(&str, String)]) -> Node {
        let mut text =
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: flux-system}\ndata:\n"
                .to_string();
        for (k, v) in entries {
            text.push_str(&format!("  {k}: {v}\n"));
        }
        docs(&text).remove(0)
    }

    #[test]
    fn sops_files_of_every_format_read_by_a_generator_are_encrypted() {
        let enc = "ENC[AES256_GCM,data:PVPZsOXZsg==,iv:rU5j,tag:x,type:str]";
        // `envs: [x.sops.env]`: every line a key, SOPS's metadata among them.
        let dotenv = secret_with_data(&[
            ("SECRET_DOMAIN", b64(enc)),
            ("sops_mac", b64(enc)),
            ("sops_version", b64("3.8.1")),
        ]);
        assert!(is_sops_encrypted(&dotenv));
        let files = [
            format!("token: {enc}\nsops:\n    mac: {enc}\n    version: 3.8.1\n"),
            format!("{{\"token\": \"{enc}\", \"sops\": {{\"mac\": \"{enc}\"}}}}"),
            format!("TOKEN={enc}\nsops_mac={enc}\n"),
            format!("[app]\ntoken = {enc}\n\n[sops]\nmac = {enc}\n"),
            format!("{{\n\t\"data\": \"{enc}\",\n\t\"sops\": {{}}\n}}"),
        ];
        for f in &files {
            // kustomize wraps long base64 values: Go's decoder skips the breaks.
            let wrapped: String = b64(f)
                .as_bytes()
                .chunks(70)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>()
                .join("\n");
            let obj = secret_with_data(&[("values.yaml", format!("{wrapped:?}"))]);
            assert!(is_sops_encrypted(&obj), "{f}");
        }
        let clear = secret_with_data(&[("token", b64("hunter2"))]);
        assert!(!is_sops_encrypted(&clear));
    }

    #[test]
    fn generated_sops_dotenv_defines_its_keys_as_opaque_variables() {
        let enc = "ENC[AES256_GCM,data:zoMSER3YWX8=,iv:G2,tag:x,type:str]";
        let obj = secret_with_data(&[
            ("SECRET_DOMAIN", b64(enc)),
            ("sops_mac", b64(enc)),
            (
                "sops_age__list_0__map_enc",
                format!("{:?}", b64(&"x".repeat(200))),
            ),
        ]);
        let mut vars = Vars::default();
        let mut diags = Vec::new();
        vars.add_object(&obj, "Secret", "flux-system", "s", &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(vars.len(), 1);
        assert!(vars.get("SECRET_DOMAIN").is_some_and(|d| d.opaque));
    }

    #[test]
    fn controllers_create_what_the_repository_references() {
        let objects = docs(concat!(
            "apiVersion: objectbucket.io/v1alpha1\nkind: ObjectBucketClaim\nmetadata: {name: loki-bucket, namespace: monitoring}\n---\n",
            "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: web, namespace: net}\nspec: {secretName: web-tls}\n---\n",
            "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata: {name: app-db, namespace: app}\nspec:\n  resourcesTemplate: |\n    apiVersion: postgresql.cnpg.io/v1\n    kind: Cluster\n    metadata:\n      name: app-db\n      namespace: << inputs.provider.namespace >>\n    spec:\n      bootstrap:\n        <<- if inputs.initdb >>\n        initdb: {database: app}\n        <<- end >>\n",
        ));
        let made = |kind: &str, ns: &str, name: &str| {
            created_at_runtime(&objects, kind, ns, name).and_then(|o| o.str_at(&["kind"]))
        };
        assert_eq!(
            made("ConfigMap", "monitoring", "loki-bucket"),
            Some("ObjectBucketClaim")
        );
        assert_eq!(
            made("Secret", "monitoring", "loki-bucket"),
            Some("ObjectBucketClaim")
        );
        assert_eq!(made("Secret", "net", "web-tls"), Some("Certificate"));
        assert_eq!(made("Secret", "app", "app-db-app"), Some("ResourceSet"));
        assert_eq!(made("Secret", "other", "web-tls"), None);
        assert_eq!(made("ConfigMap", "net", "web-tls"), None);
    }

    #[test]
    fn wrapped_base64_decodes_as_kubernetes_does() {
        assert_eq!(decode_base64("aHVu\ndGVy\r\nMg==").unwrap(), b"hunter2");
        assert!(decode_base64("not base64!").is_err());
    }

    fn docs(text: &str) -> Vec<Node> {
        parse_stream("t.yaml", text, Schema::Kube).docs
    }

    const OBJECTS: &str = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-vars, namespace: flux-system}
data:
  K3S_API_HOST: 192.168.2.9
  MULTI: \"a\\nb\"
  SHARED: from-configmap
---
apiVersion: v1
kind: Secret
metadata: {name: cluster-secrets, namespace: flux-system}
data:
  TOKEN: c2VjcmV0
  SHARED: ZnJvbS1zZWNyZXQ=
stringData:
  PLAIN: text
---
apiVersion: v1
kind: Secret
metadata: {name: sops-secrets, namespace: flux-system}
stringData:
  API_KEY: ENC[AES256_GCM,data:abc,type:str]
sops:
  version: 3.8.1
";

    #[test]
    fn sources_in_order_inline_last() {
        let objects = docs(OBJECTS);
        let ks = &docs(
            "kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  postBuild:
    substitute:
      K3S_API_HOST: 10.0.0.1
    substituteFrom:
      - {kind: ConfigMap, name: cluster-vars}
      - {kind: Secret, name: cluster-secrets}
      - {kind: Secret, name: sops-secrets}
      - {kind: ConfigMap, name: optional-vars, optional: true}
",
        )[0];
        let (vars, diags) = Vars::for_kustomization(ks, &objects);
        assert!(diags.is_empty(), "{diags:?}");
        let host = vars.get("K3S_API_HOST").expect("defined");
        assert_eq!(host.value, "10.0.0.1");
        assert_eq!(host.source, "spec.postBuild.substitute");
        assert_eq!(host.definition.line, 6);
        assert_eq!(vars.get("MULTI").map(|v| v.value.as_str()), Some("ab"));
        assert_eq!(vars.get("TOKEN").map(|v| v.value.as_str()), Some("secret"));
        assert_eq!(
            vars.get("SHARED").map(|v| v.value.as_str()),
            Some("from-secret")
        );
        assert_eq!(vars.get("PLAIN").map(|v| v.value.as_str()), Some("text"));
        let key = vars.get("API_KEY").expect("sops keys are defined");
        assert!(key.opaque);
        assert_eq!(key.value, OPAQUE_VALUE);
    }

    #[test]
    fn missing_required_source_and_bad_names() {
        let ks = &docs(
            "kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  postBuild:
    substitute:
      bad-name: x
      good_name: y
    substituteFrom:
      - {kind: ConfigMap, name: nowhere}
",
        )[0];
        let (vars, diags) = Vars::for_kustomization(ks, &[]);
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert!(matches!(diags[0].kind, ProblemKind::MissingObject { .. }));
        assert_eq!(diags[1].kind, ProblemKind::Invalid);
        assert!(diags[0].message.contains("ConfigMap/nowhere"));
        assert_eq!(diags[0].location.as_ref().map(|l| l.line), Some(9));
        assert!(diags[1].message.contains("'bad-name' var name is invalid"));
        assert!(vars.get("bad-name").is_none());
        assert_eq!(vars.len(), 1);
    }

    #[test]
    fn secret_created_by_an_external_secret_has_unknown_keys() {
        let objects = docs(
            "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: tunnel, namespace: network}\nspec:\n  target: {name: tunnel-id}\n",
        );
        let ks = docs(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: app, namespace: network}\nspec:\n  postBuild:\n    substituteFrom:\n      - {kind: Secret, name: tunnel-id}\n      - {kind: Secret, name: tunnel}\n",
        );
        let (vars, diags) = Vars::for_kustomization(&ks[0], &objects);
        assert!(vars.has_unknown_keys());
        assert!(!vars.is_empty());
        // The target is created at runtime (a note); the ExternalSecret's own name is not a
        // Secret when a target name is set (an error).
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert!(matches!(
            diags[0].kind,
            ProblemKind::CreatedAtRuntime { .. }
        ));
        assert!(diags[0].message.contains("ExternalSecret tunnel"));
        assert!(diags[1].message.contains("Secret/tunnel does not exist"));
    }

    #[test]
    fn a_source_the_bootstrap_seeds_exists_with_unknown_keys() {
        let ks = docs(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec:\n  postBuild:\n    substituteFrom:\n      - {kind: Secret, name: cluster-secrets}\n      - {kind: Secret, name: absent}\n",
        );
        let (vars, diags) = Vars::for_kustomization(&ks[0], &[]);
        assert!(vars.load_failure().is_some());
        let seeded = [Seeded {
            kind: "Secret".into(),
            namespace: Some("flux-system".into()),
            name: "cluster-secrets".into(),
            at: Location::new("bootstrap/templates/resources.yaml.j2", 3, 1),
        }];
        let (vars, diags) = vars.with_seeded(diags, &seeded, &ks[0]);
        // The seeded source no longer fails the Kustomization; the absent one still does.
        assert_eq!(
            vars.load_failure().as_deref(),
            Some("substitute from 'Secret/absent' error: not found")
        );
        assert!(vars.has_unknown_keys());
        assert!(matches!(
            diags[0].kind,
            ProblemKind::CreatedAtRuntime { .. }
        ));
        assert!(
            diags[0]
                .message
                .contains("bootstrap template bootstrap/templates/resources.yaml.j2"),
            "{diags:?}"
        );
        assert!(matches!(diags[1].kind, ProblemKind::MissingObject { .. }));
    }
}
