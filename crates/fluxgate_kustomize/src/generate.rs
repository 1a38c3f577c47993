//! configMapGenerator and secretGenerator: objects built from literals, files and env files,
//! and the content hash kustomize appends to their names.

use base64::Engine as _;
use fluxgate_diagnostics::Location;

use crate::problem::{Problem, ProblemKind};
use fluxgate_yaml::{Map, Node, Value};
use sha2::{Digest, Sha256};

use crate::resource::{Behavior, Resource};

/// Options from `generatorOptions` and a generator's `options`.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub labels: Vec<(String, Node)>,
    pub annotations: Vec<(String, Node)>,
    pub disable_hash: bool,
    pub immutable: Option<Node>,
}

impl Options {
    #[must_use]
    pub fn from_node(node: Option<&Node>) -> Options {
        let Some(node) = node else {
            return Options::default();
        };
        Options {
            labels: string_entries(node.get("labels")),
            annotations: string_entries(node.get("annotations")),
            disable_hash: node
                .get("disableNameSuffixHash")
                .and_then(Node::as_bool)
                .unwrap_or(false),
            immutable: node
                .get("immutable")
                .filter(|n| n.as_bool() == Some(true))
                .cloned(),
        }
    }

    /// kustomize merges the kustomization-wide options into a generator's own: global labels
    /// and annotations win, and a global `disableNameSuffixHash`/`immutable` applies.
    #[must_use]
    pub fn merged_with_global(mut self, global: &Options) -> Options {
        for (k, v) in &global.labels {
            upsert(&mut self.labels, k, v);
        }
        for (k, v) in &global.annotations {
            upsert(&mut self.annotations, k, v);
        }
        self.disable_hash |= global.disable_hash;
        if self.immutable.is_none() {
            self.immutable.clone_from(&global.immutable);
        }
        self
    }
}

fn upsert(v: &mut Vec<(String, Node)>, k: &str, val: &Node) {
    if let Some(e) = v.iter_mut().find(|(x, _)| x == k) {
        e.1 = val.clone();
    } else {
        v.push((k.to_string(), val.clone()));
    }
}

/// A map of scalars as `(key, string node)` pairs, values turned to text.
#[must_use]
pub fn string_entries(node: Option<&Node>) -> Vec<(String, Node)> {
    let Some(map) = node.and_then(Node::as_map) else {
        return Vec::new();
    };
    map.iter()
        .map(|(k, v)| {
            let text = v.scalar_text().unwrap_or_default();
            (k.clone(), Node::string(text, v.loc.clone()))
        })
        .collect()
}

/// One generator's result before it is added to the build.
pub struct Generated {
    pub resource: Resource,
    pub behavior: Behavior,
}

/// Reads a file named by a generator, relative to the kustomization directory: its bytes and
/// its path relative to the repository root (the origin of the values it gives).
pub type ReadFile<'a> = dyn FnMut(&str, &Location) -> Option<(Vec<u8>, String)> + 'a;

/// Builds one ConfigMap (`secret == false`) or Secret from a generator entry.
pub fn generate(
    entry: &Node,
    secret: bool,
    global: &Options,
    read: &mut ReadFile<'_>,
    diags: &mut Vec<Problem>,
) -> Option<Generated> {
    let loc = entry.loc.clone();
    let Some(name) = entry.str_at(&["name"]) else {
        diags.push(Problem::new(
            ProblemKind::Invalid,
            "generator entry without a name",
            Some(loc),
        ));
        return None;
    };
    let behavior = match entry.str_at(&["behavior"]).unwrap_or("create") {
        "" | "create" => Behavior::Create,
        "merge" => Behavior::Merge,
        "replace" => Behavior::Replace,
        other => {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("unknown generator behavior {other:?} (create, merge or replace)"),
                entry.get("behavior").map(|n| n.loc.clone()),
            ));
            return None;
        }
    };
    // Each value with whether it is already base64 (a file that is not UTF-8 text: kustomize
    // puts it in a ConfigMap's `binaryData`, and a Secret's bytes are encoded as they are).
    let mut data: Vec<(String, Node, bool)> = Vec::new();
    let mut put = |k: String, v: Node, binary: bool, diags: &mut Vec<Problem>| {
        if data.iter().any(|(x, _, _)| *x == k) {
            diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("generator {name:?}: key {k:?} is defined twice"),
                Some(v.loc.clone()),
            ));
        } else {
            data.push((k, v, binary));
        }
    };
    for lit in seq(entry.get("literals")) {
        let Some(text) = lit.scalar_text() else {
            continue;
        };
        match text.split_once('=') {
            Some((k, v)) => put(
                k.to_string(),
                Node::string(remove_quotes(v), lit.loc.clone()),
                false,
                diags,
            ),
            None => diags.push(Problem::new(
                ProblemKind::Invalid,
                format!("invalid literal {text:?}: expected key=value"),
                Some(lit.loc.clone()),
            )),
        }
    }
    for f in seq(entry.get("files")) {
        let Some(spec) = f.scalar_text() else {
            continue;
        };
        let (key, path) = match spec.split_once('=') {
            Some((k, p)) => (k.to_string(), p.to_string()),
            None => (
                spec.rsplit('/').next().unwrap_or(&spec).to_string(),
                spec.clone(),
            ),
        };
        if let Some((bytes, file)) = read(&path, &f.loc) {
            // The value starts at the file's first line: a finding inside it (a `${VAR}` on
            // line 193) points into the file, not at the generator entry.
            let at = Location::new(file, 1, 1);
            match String::from_utf8(bytes) {
                Ok(text) => put(key, Node::string(text, at), false, diags),
                Err(e) => {
                    let encoded = base64::engine::general_purpose::STANDARD.encode(e.as_bytes());
                    put(key, Node::string(wrap_base64(&encoded), at), true, diags);
                }
            }
        }
    }
    let mut envs: Vec<&Node> = seq(entry.get("envs")).iter().collect();
    if let Some(e) = entry.get("env") {
        envs.push(e);
    }
    for e in envs {
        let Some(path) = e.scalar_text() else {
            continue;
        };
        if let Some((bytes, file)) = read(&path, &e.loc) {
            for (line, k, v) in parse_env(&String::from_utf8_lossy(&bytes)) {
                let at = Location::new(file.clone(), line, 1);
                put(k, Node::string(v, at), false, diags);
            }
        }
    }
    let opts = Options::from_node(entry.get("options")).merged_with_global(global);
    let mut obj = Map::default();
    obj.insert("apiVersion".into(), Node::string("v1", loc.clone()));
    let kind = if secret { "Secret" } else { "ConfigMap" };
    obj.insert("kind".into(), Node::string(kind, loc.clone()));
    let mut meta = Map::default();
    meta.insert("name".into(), Node::string(name, loc.clone()));
    if let Some(ns) = entry.get("namespace").filter(|n| n.as_str().is_some()) {
        meta.insert("namespace".into(), ns.clone());
    }
    if !opts.labels.is_empty() {
        meta.insert("labels".into(), to_map(&opts.labels, &loc));
    }
    if !opts.annotations.is_empty() {
        meta.insert("annotations".into(), to_map(&opts.annotations, &loc));
    }
    obj.insert(
        "metadata".into(),
        Node::new(Value::Map(Box::new(meta)), loc.clone()),
    );
    let mut binary_data = Vec::new();
    if secret {
        let engine = base64::engine::general_purpose::STANDARD;
        for (_, v, binary) in &mut data {
            if !*binary {
                let encoded = engine.encode(v.as_str().unwrap_or_default());
                v.value = Value::String(wrap_base64(&encoded));
            }
        }
        let ty = entry
            .get("type")
            .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
            .cloned()
            .unwrap_or_else(|| Node::string("Opaque", loc.clone()));
        obj.insert("type".into(), ty);
    } else {
        binary_data = data.iter().filter(|e| e.2).cloned().collect();
        data.retain(|e| !e.2);
    }
    let data: Vec<(String, Node)> = data.into_iter().map(|(k, v, _)| (k, v)).collect();
    let binary_data: Vec<(String, Node)> =
        binary_data.into_iter().map(|(k, v, _)| (k, v)).collect();
    if !binary_data.is_empty() {
        obj.insert("binaryData".into(), to_map(&binary_data, &loc));
    }
    // A Secret always has `data`, a ConfigMap only when it holds something.
    if secret || !data.is_empty() {
        obj.insert("data".into(), to_map(&data, &loc));
    }
    if let Some(imm) = opts.immutable {
        obj.insert("immutable".into(), imm);
    }
    let mut resource = Resource::new(Node::new(Value::Map(Box::new(obj)), loc));
    resource.needs_hash = !opts.disable_hash;
    resource.generated = true;
    Some(Generated { resource, behavior })
}

/// kustomize breaks base64 longer than 70 characters into lines of 70, each ending in `\n`.
fn wrap_base64(s: &str) -> String {
    const LINE: usize = 70;
    if s.len() < LINE {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + s.len() / LINE + 1);
    for chunk in s.as_bytes().chunks(LINE) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out
}

fn seq(node: Option<&Node>) -> &[Node] {
    node.and_then(Node::as_seq).unwrap_or(&[])
}

fn to_map(entries: &[(String, Node)], loc: &Location) -> Node {
    Node::new(
        Value::Map(Box::new(entries.iter().cloned().collect())),
        loc.clone(),
    )
}

/// kustomize strips one pair of matching quotes around a literal's value.
fn remove_quotes(v: &str) -> String {
    let b = v.as_bytes();
    if b.len() >= 2
        && ((b[0] == b'"' && b[b.len() - 1] == b'"') || (b[0] == b'\'' && b[b.len() - 1] == b'\''))
    {
        v[1..v.len() - 1].to_string()
    } else {
        v.to_string()
    }
}

/// Parses an env file: `KEY=value` lines; blank lines and `#` comments skipped; a line
/// without `=` takes its value from the environment in kustomize, which fluxgate never reads
/// (it gets the empty string). Each entry comes with its 1-based line.
#[must_use]
pub fn parse_env(text: &str) -> Vec<(u32, String, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let n = u32::try_from(n + 1).unwrap_or(u32::MAX);
        match line.split_once('=') {
            Some((k, v)) => out.push((n, k.to_string(), v.to_string())),
            None => out.push((n, line.trim_end().to_string(), String::new())),
        }
    }
    out
}

/// Merges a generated object into an existing one (`behavior: merge` or `replace`).
pub fn merge_into(existing: &mut Resource, new: Resource, behavior: Behavior) {
    let new_node = new.node;
    for field in ["data", "binaryData"] {
        let incoming = new_node.get(field).cloned();
        let Some(map) = existing.node.as_map_mut() else {
            return;
        };
        match behavior {
            Behavior::Replace => {
                match incoming {
                    Some(n) => map.insert(field.to_string(), n),
                    None => map.shift_remove(field),
                };
            }
            _ => {
                if let Some(Value::Map(inc)) = incoming.map(|n| n.value) {
                    let slot = map
                        .entry(field.to_string())
                        .or_insert_with(|| Node::map(new_node.loc.clone()));
                    if let Some(m) = slot.as_map_mut() {
                        for (k, v) in *inc {
                            m.insert(k, v);
                        }
                    }
                }
            }
        }
    }
    for field in ["labels", "annotations"] {
        if let Some(inc) = new_node.path(&["metadata", field]).and_then(Node::as_map) {
            let inc = inc.clone();
            if let Some(meta) = existing.node.get_mut("metadata").and_then(Node::as_map_mut) {
                let slot = meta
                    .entry(field.to_string())
                    .or_insert_with(|| Node::map(new_node.loc.clone()));
                if slot.is_null() {
                    *slot = Node::map(new_node.loc.clone());
                }
                if let Some(m) = slot.as_map_mut() {
                    for (k, v) in inc {
                        m.insert(k, v);
                    }
                }
            }
        }
    }
    // Merging into an object that was not generated keeps its name as it is.
    existing.needs_hash = existing.needs_hash && new.needs_hash;
}

/// The suffix kustomize appends: the first ten hex digits of a SHA-256 over a JSON encoding
/// of the data, with some characters swapped so the result never reads as a number.
#[must_use]
pub fn content_hash(node: &Node) -> String {
    let kind = node.str_at(&["kind"]).unwrap_or("");
    let mut json = String::from("{");
    if kind == "ConfigMap"
        && let Some(bd) = node
            .get("binaryData")
            .and_then(Node::as_map)
            .filter(|m| !m.is_empty())
    {
        json.push_str("\"binaryData\":");
        json.push_str(&json_string_map(bd));
        json.push(',');
    }
    json.push_str("\"data\":");
    // An absent `data` encodes as "", a present one (even empty, as a Secret's) as a map.
    match node.get("data").and_then(Node::as_map) {
        Some(d) => json.push_str(&json_string_map(d)),
        None => json.push_str("\"\""),
    }
    json.push_str(",\"kind\":");
    json.push_str(&go_json_string(kind));
    json.push_str(",\"name\":\"\"");
    if kind == "Secret" {
        json.push_str(",\"type\":");
        json.push_str(&go_json_string(node.str_at(&["type"]).unwrap_or("")));
    }
    json.push('}');
    let digest = Sha256::digest(json.as_bytes());
    let hex: String = digest.iter().fold(String::new(), |mut acc, b| {
        use std::fmt::Write as _;
        let _ = write!(acc, "{b:02x}");
        acc
    });
    hex[..10]
        .chars()
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            c => c,
        })
        .collect()
}

fn json_string_map(m: &Map) -> String {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    let parts: Vec<String> = keys
        .into_iter()
        .map(|k| {
            let v = m[k].scalar_text().unwrap_or_default();
            format!("{}:{}", go_json_string(k), go_json_string(&v))
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// A JSON string as Go's `json.Marshal` writes it (HTML-escaped).
#[must_use]
pub fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_yaml::{Schema, parse_stream};

    fn node(text: &str) -> Node {
        parse_stream("t.yaml", text, Schema::Kube).docs.remove(0)
    }

    #[test]
    fn hashes_match_kubectl() {
        // Names as `kubectl kustomize` (kustomize v5.5.0) printed them.
        assert_eq!(content_hash(&node("kind: ConfigMap\n")), "6ct58987ht");
        assert_eq!(
            content_hash(&node("kind: ConfigMap\ndata: {a: \"1\"}\n")),
            "h29d89cmmt"
        );
        assert_eq!(
            content_hash(&node("kind: ConfigMap\ndata: {a: \"1\", b: \"<x&y>\"}\n")),
            "cchh4fmt2g"
        );
        assert_eq!(
            content_hash(&node("kind: Secret\ntype: Opaque\ndata: {k: dg==}\n")),
            "ftgtgc4t9f"
        );
    }

    #[test]
    fn env_files_skip_comments() {
        assert_eq!(
            parse_env("# c\n\nA=1\n  B=x=y\n"),
            vec![(3, "A".into(), "1".into()), (4, "B".into(), "x=y".into())]
        );
    }
}
