//! Rendered objects indexed for the lookups that substitution and HelmRelease values make: an
//! object by kind, namespace and name, and the object that creates a Secret or ConfigMap at run
//! time. Each lookup was a scan over every rendered object, once per `substituteFrom` and
//! `valuesFrom` entry, so an environment twice as large took four times as long; the index is
//! built once (or grown as objects arrive) and answers exactly as the scans did: the first
//! matching object in render order.

use std::borrow::Borrow;
use std::collections::HashMap;

use fluxgate_yaml::Node;

use crate::vars::{RuntimeCreator, resource_set_objects};

/// The namespaces an entry of [`ObjectIndex::created`] matches.
#[derive(Clone, Debug)]
enum InNamespace {
    Any,
    Only(String),
}

impl InNamespace {
    fn of(obj: &Node) -> InNamespace {
        obj.str_at(&["metadata", "namespace"])
            .map_or(InNamespace::Any, |n| InNamespace::Only(n.to_string()))
    }

    fn matches(&self, ns: &str) -> bool {
        match self {
            InNamespace::Any => true,
            InNamespace::Only(n) => n == ns,
        }
    }
}

/// Objects (owned, or borrowed from the environment) with their lookup tables.
pub struct ObjectIndex<T> {
    objects: Vec<T>,
    creators: Vec<RuntimeCreator>,
    /// `(kind, name)` -> positions, in order.
    by_kind_name: HashMap<(String, String), Vec<usize>>,
    /// `(kind, name)` of an object made at run time -> the position of the object that makes
    /// it (a creator such as an ExternalSecret, or a ResourceSet that applies it or its
    /// creator) and the namespaces it lands in, in order.
    created: HashMap<(String, String), Vec<(usize, InNamespace)>>,
}

impl<T: Borrow<Node>> ObjectIndex<T> {
    /// The index of `objects`, knowing which controllers create objects at run time.
    pub fn new(objects: impl IntoIterator<Item = T>, creators: &[RuntimeCreator]) -> Self {
        let mut index = ObjectIndex {
            objects: Vec::new(),
            creators: creators.to_vec(),
            by_kind_name: HashMap::new(),
            created: HashMap::new(),
        };
        for o in objects {
            index.push(o);
        }
        index
    }

    /// Adds an object after the others.
    pub fn push(&mut self, obj: T) {
        let at = self.objects.len();
        let o: &Node = obj.borrow();
        if let (Some(kind), Some(name)) = (o.str_at(&["kind"]), o.str_at(&["metadata", "name"])) {
            self.by_kind_name
                .entry((kind.to_string(), name.to_string()))
                .or_default()
                .push(at);
        }
        let mut made: Vec<(String, String, InNamespace)> = Vec::new();
        creations(&self.creators, o, &mut made);
        for t in resource_set_objects(o) {
            if let (Some(kind), Some(name)) = (t.str_at(&["kind"]), t.str_at(&["metadata", "name"]))
            {
                made.push((kind.to_string(), name.to_string(), InNamespace::of(&t)));
            }
            creations(&self.creators, &t, &mut made);
        }
        for (kind, name, ns) in made {
            self.created.entry((kind, name)).or_default().push((at, ns));
        }
        self.objects.push(obj);
    }

    /// Every object, in order.
    pub fn objects(&self) -> &[T] {
        &self.objects
    }

    /// The object `kind` `ns/name`; an object of that kind and name rendered without a
    /// namespace stands in when none has `ns` (it lands in the namespace the Kustomization
    /// applies it to).
    pub fn find(&self, kind: &str, ns: &str, name: &str) -> Option<&Node> {
        let at = self
            .by_kind_name
            .get(&(kind.to_string(), name.to_string()))?;
        let node = |i: &usize| self.objects[*i].borrow();
        at.iter()
            .map(node)
            .find(|o| o.str_at(&["metadata", "namespace"]) == Some(ns))
            .or_else(|| {
                at.iter()
                    .map(node)
                    .find(|o| o.path(&["metadata", "namespace"]).is_none())
            })
    }

    /// The object that creates `kind` `ns/name` once the cluster runs (see
    /// [`crate::vars::created_by`]).
    pub fn created(&self, kind: &str, ns: &str, name: &str) -> Option<&Node> {
        if !self.creators.iter().any(|c| c.creates == kind) {
            return None;
        }
        let entries = self.created.get(&(kind.to_string(), name.to_string()))?;
        entries
            .iter()
            .filter(|(_, in_ns)| in_ns.matches(ns))
            .map(|(i, _)| *i)
            .min()
            .map(|i| self.objects[i].borrow())
    }
}

/// What the creators make from `obj`: `(kind, name, namespaces)`.
fn creations(
    creators: &[RuntimeCreator],
    obj: &Node,
    out: &mut Vec<(String, String, InNamespace)>,
) {
    for c in creators {
        let names = c.names(obj);
        if names.is_empty() {
            continue;
        }
        let in_ns = if c.any_namespace {
            InNamespace::Any
        } else {
            InNamespace::of(obj)
        };
        for n in names {
            out.push((c.creates.clone(), n.into_owned(), in_ns.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vars::{builtin_creators, created_by, find_object};
    use fluxgate_yaml::{Schema, parse_stream};

    #[test]
    fn answers_as_the_scans_do() {
        let docs = parse_stream(
            "x.yaml",
            "kind: Secret\nmetadata: {name: a}\n---\n\
             kind: Secret\nmetadata: {name: a, namespace: apps}\n---\n\
             kind: ExternalSecret\napiVersion: external-secrets.io/v1\n\
             metadata: {name: es, namespace: apps}\nspec: {target: {name: made}}\n---\n\
             kind: ClusterExternalSecret\napiVersion: external-secrets.io/v1\n\
             metadata: {name: ces}\nspec: {externalSecretName: everywhere}\n---\n\
             kind: ResourceSet\napiVersion: fluxcd.controlplane.io/v1\n\
             metadata: {name: rs, namespace: apps}\n\
             spec:\n  resources:\n    - {kind: ConfigMap, metadata: {name: set-cm}}\n",
            Schema::Kube,
        )
        .docs;
        let creators = builtin_creators();
        let index = ObjectIndex::new(docs.iter(), &creators);
        for (kind, ns, name) in [
            ("Secret", "apps", "a"),
            ("Secret", "other", "a"),
            ("Secret", "apps", "made"),
            ("Secret", "other", "made"),
            ("Secret", "other", "everywhere"),
            ("ConfigMap", "apps", "set-cm"),
            ("ConfigMap", "apps", "none"),
            ("Deployment", "apps", "a"),
        ] {
            assert_eq!(
                index.find(kind, ns, name).map(|n| n.loc.clone()),
                find_object(&docs, kind, ns, name).map(|n| n.loc.clone()),
                "find {kind} {ns}/{name}"
            );
            assert_eq!(
                index.created(kind, ns, name).map(|n| n.loc.clone()),
                created_by(&docs, &creators, kind, ns, name).map(|n| n.loc.clone()),
                "created {kind} {ns}/{name}"
            );
        }
        assert!(index.created("Secret", "apps", "made").is_some());
        assert!(index.created("Secret", "other", "made").is_none());
        assert!(index.find("Secret", "apps", "a").is_some());
    }
}
