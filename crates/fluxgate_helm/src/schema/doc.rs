//! Schema documents and `$ref` resolution, offline.
//!
//! Helm compiles `values.schema.json` as `file:///values.schema.json` and loads every
//! document a `$ref` names before validating: `file://` URLs from the local disk, `http(s)`
//! from the network, `urn:` as the permissive `true`. fluxgate reads neither disk nor network
//! here: a URL is found among the chart's own JSON files (the chart and its subcharts), by a
//! file's top-level `$id` or by a path below such an `$id` (a schema `$ref`ing its sibling
//! `schemas/pod.json`); a URL found nowhere is a load error, as it is for helm offline.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use foldhash::{HashMap, HashMapExt as _};
use serde_json::Value as Json;

use crate::chart::Chart;

/// The URL helm gives a chart's `values.schema.json`.
pub const ROOT_URL: &str = "file:///values.schema.json";

/// Largest schema document read (bytes).
const MAX_DOC: usize = 16 << 20;

/// A loaded document: its URL, JSON and draft (4, 6, 7, 2019, 2020).
pub struct Doc {
    pub url: String,
    pub json: Json,
    pub draft: u16,
    /// Whether any object of the document has an `$id` or `id` member (when none has, a
    /// subschema never changes the base URL).
    pub ids: bool,
}

/// Where a schema is: a document, a JSON pointer in it and the base URL `$ref`s resolve against.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    pub doc: usize,
    pub ptr: String,
    pub base: String,
}

/// Every document one validation needs, loaded before it runs (as helm compiles first).
pub struct Registry {
    pub docs: Vec<Doc>,
    /// Resource URL (no fragment) -> where its root is.
    resources: HashMap<String, Loc>,
    /// (resource URL, anchor name) -> where it is.
    anchors: HashMap<(String, String), Loc>,
    /// The chart tree's JSON files (for URLs not yet loaded).
    files: Vec<FileSet>,
    index: Option<Vec<(String, usize, String)>>,
}

#[derive(Clone, PartialEq)]
struct FileSet(BTreeMap<String, Arc<[u8]>>);

/// A schema compiled (or failing to compile), as [`compile_cached`] shares it.
pub type Compiled = Arc<Result<(Registry, Loc), LoadError>>;

/// What a compiled schema was compiled from: its bytes and, when it has references, the
/// files of the chart tree they may load.
struct CacheEntry {
    schema: Arc<[u8]>,
    has_refs: bool,
    files: Vec<FileSet>,
    compiled: Compiled,
}

/// Compiled schemas kept for the process (the releases of one chart share their schema, on
/// whichever render thread they run), most recent last.
const CACHE_SIZE: usize = 8;

static CACHE: Mutex<Vec<CacheEntry>> = Mutex::new(Vec::new());

/// [`Registry::compile_with`] once per schema and chart tree: an entry is reused only when the
/// schema's bytes and (for a schema with references) every file of the tree are the same.
pub fn compile_cached(schema: &Arc<[u8]>, tree: &Chart) -> Compiled {
    // A poisoned cache still holds only finished compilations.
    let cache = || CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    let mut tree_files: Option<Vec<FileSet>> = None;
    let tree_of = |tree_files: &mut Option<Vec<FileSet>>| -> Vec<FileSet> {
        tree_files
            .get_or_insert_with(|| {
                let mut f = Vec::new();
                collect_files(tree, &mut f, 0);
                f
            })
            .clone()
    };
    let same = |e: &CacheEntry, tree_files: &mut Option<Vec<FileSet>>| {
        *e.schema == **schema && (!e.has_refs || e.files == tree_of(tree_files))
    };
    if let Some(hit) = cache()
        .iter()
        .find(|e| same(e, &mut tree_files))
        .map(|e| e.compiled.clone())
    {
        return hit;
    }
    let has_refs = has_refs(schema);
    let files = if has_refs {
        tree_of(&mut tree_files)
    } else {
        Vec::new()
    };
    let compiled = Arc::new(Registry::compile_with(schema, has_refs, files.clone()));
    let mut c = cache();
    if c.len() >= CACHE_SIZE {
        c.remove(0);
    }
    c.push(CacheEntry {
        schema: schema.clone(),
        has_refs,
        files,
        compiled: compiled.clone(),
    });
    compiled
}

/// Whether `schema` holds a `"$ref"`, `"$dynamicRef"` or `"$recursiveRef"` key (or text).
fn has_refs(schema: &[u8]) -> bool {
    let mut rest = schema;
    while let Some(i) = rest.iter().position(|&b| b == b'$') {
        let after = &rest[i + 1..];
        if i > 0
            && rest[i - 1] == b'"'
            && (after.starts_with(b"ref\"")
                || after.starts_with(b"dynamicRef\"")
                || after.starts_with(b"recursiveRef\""))
        {
            return true;
        }
        rest = after;
    }
    false
}

/// A compile-time failure, in santhosh-tekuri/jsonschema's words.
#[derive(Debug, Clone)]
pub struct LoadError(pub String);

impl Registry {
    /// Loads `schema` (the bytes of a chart's values.schema.json) and everything it refers to;
    /// `tree` is the chart whose files may hold referenced documents.
    /// Loads `schema` (the bytes of a chart's values.schema.json) and, when it `has_refs`,
    /// everything it refers to among `files` (the chart tree's). Without a reference there
    /// is nothing to resolve: no index of `$id`s and anchors, no look at the chart's other
    /// files.
    fn compile_with(
        schema: &[u8],
        has_refs: bool,
        files: Vec<FileSet>,
    ) -> Result<(Registry, Loc), LoadError> {
        let mut reg = Registry {
            docs: Vec::new(),
            resources: HashMap::new(),
            anchors: HashMap::new(),
            files,
            index: None,
        };
        let json = parse(schema)?;
        let root = reg.add_doc(ROOT_URL.to_string(), json, has_refs)?;
        if has_refs {
            reg.load_refs(0)?;
        }
        // Loaded: the files are no longer needed.
        reg.files = Vec::new();
        reg.index = None;
        Ok((reg, root))
    }

    /// The JSON at `loc`.
    pub fn get(&self, loc: &Loc) -> Option<&Json> {
        pointer(&self.docs.get(loc.doc)?.json, &loc.ptr)
    }

    /// Whether the document of `loc` has `$id`s (see [`Doc::ids`]).
    pub fn ids(&self, loc: &Loc) -> bool {
        self.docs.get(loc.doc).is_none_or(|d| d.ids)
    }

    pub fn draft(&self, loc: &Loc) -> u16 {
        self.docs.get(loc.doc).map_or(2020, |d| d.draft)
    }

    fn add_doc(&mut self, url: String, json: Json, index: bool) -> Result<Loc, LoadError> {
        let draft = draft_of(&json, &url)?;
        let doc = self.docs.len();
        let base = match id_of(&json, draft) {
            Some(id) => join(&url, id),
            None => url.clone(),
        };
        let ids = has_ids(&json, 0);
        self.docs.push(Doc {
            url: url.clone(),
            json,
            draft,
            ids,
        });
        let root = Loc {
            doc,
            ptr: String::new(),
            base: strip_fragment(&base).to_string(),
        };
        self.resources.insert(url, root.clone());
        self.resources
            .insert(strip_fragment(&base).to_string(), root.clone());
        if index {
            self.index_ids(doc, &root.base.clone());
        }
        Ok(root)
    }

    /// Registers the embedded `$id`s and anchors of document `doc`.
    fn index_ids(&mut self, doc: usize, base: &str) {
        let mut found = Found::default();
        let d = &self.docs[doc];
        index(&d.json, doc, d.draft, "", base, &mut found, 0);
        self.resources.extend(found.resources);
        self.anchors.extend(found.anchors);
    }

    /// Loads, transitively, every document the `$ref`s of document `first` (and later ones) name.
    fn load_refs(&mut self, first: usize) -> Result<(), LoadError> {
        let mut next = first;
        while next < self.docs.len() {
            let mut refs = Vec::new();
            let base = self.resources_base(next);
            collect_refs(
                &self.docs[next].json,
                &base,
                self.docs[next].draft,
                &mut refs,
                0,
            );
            for r in refs {
                self.resolve_url(&r)?;
            }
            next += 1;
        }
        Ok(())
    }

    fn resources_base(&self, doc: usize) -> String {
        let d = &self.docs[doc];
        match id_of(&d.json, d.draft) {
            Some(id) => strip_fragment(&join(&d.url, id)).to_string(),
            None => d.url.clone(),
        }
    }

    /// Makes sure the resource of absolute `url` is loaded, then finds `url`'s target.
    fn resolve_url(&mut self, url: &str) -> Result<Loc, LoadError> {
        let (res, frag) = split_fragment(url);
        if !self.resources.contains_key(res) {
            let json = self.fetch(res)?;
            self.add_doc(res.to_string(), json, true)?;
        }
        self.find(url)
            .ok_or_else(|| LoadError(not_found(url, frag)))
    }

    /// The target of absolute `url` among loaded documents.
    pub fn find(&self, url: &str) -> Option<Loc> {
        let (res, frag) = split_fragment(url);
        let root = self.resources.get(res)?;
        if frag.is_empty() {
            return Some(root.clone());
        }
        if let Some(p) = frag.strip_prefix('/') {
            let ptr = format!("{}/{}", root.ptr, p);
            let ptr = percent_decode(&ptr);
            let json = &self.docs[root.doc].json;
            pointer(json, &ptr)?;
            let base = base_along(json, &root.ptr, &ptr, &root.base, self.docs[root.doc].draft);
            return Some(Loc {
                doc: root.doc,
                ptr,
                base,
            });
        }
        self.anchors
            .get(&(res.to_string(), frag.to_string()))
            .cloned()
    }

    /// A document from the chart's files, for a URL not loaded yet.
    fn fetch(&mut self, url: &str) -> Result<Json, LoadError> {
        let fail = |why: &str| LoadError(format!("failing loading {}: {why}", go_quote(url)));
        if url.starts_with("urn:") {
            return Ok(Json::Bool(true));
        }
        if let Some(path) = url.strip_prefix("file://") {
            return Err(fail(&format!(
                "fluxgate reads no file outside the chart ({path}; helm would read it from the local disk)"
            )));
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            let scheme = url.split(':').next().unwrap_or(url);
            return Err(LoadError(format!(
                "no URLLoader registered for {}",
                go_quote(&format!("{scheme}://"))
            )));
        }
        if self.index.is_none() {
            self.index = Some(self.build_index());
        }
        let index = self.index.as_deref().unwrap_or_default();
        for (id, set, path) in index {
            let file = if url == id {
                Some(path.clone())
            } else {
                let dir_id = id.rsplit_once('/').map_or("", |(d, _)| d);
                let dir_path = path.rsplit_once('/').map_or("", |(d, _)| d);
                url.strip_prefix(dir_id)
                    .and_then(|r| r.strip_prefix('/'))
                    .and_then(|rest| normalize(&format!("{dir_path}/{rest}")))
            };
            if let Some(file) = file
                && let Some(data) = self.files[*set].0.get(file.trim_start_matches('/'))
            {
                return parse(data).map_err(|e| fail(&e.0));
            }
        }
        Err(fail(
            "fluxgate fetches no schema from the network and no JSON file of the chart has this $id",
        ))
    }

    /// Every JSON file of the chart tree with a top-level absolute `$id`: (id, file set, path).
    fn build_index(&self) -> Vec<(String, usize, String)> {
        let mut out = Vec::new();
        for (i, set) in self.files.iter().enumerate() {
            for (path, data) in &set.0 {
                let is_schema = path.ends_with(".json") || path == "values.schema.json";
                if !is_schema || data.len() > MAX_DOC {
                    continue;
                }
                let Ok(Json::Object(obj)) = serde_json::from_slice::<Json>(data) else {
                    continue;
                };
                if let Some(Json::String(id)) = obj.get("$id").or_else(|| obj.get("id"))
                    && (id.starts_with("http://") || id.starts_with("https://"))
                {
                    out.push((strip_fragment(id).to_string(), i, path.clone()));
                }
            }
        }
        out
    }
}

const MAX_DEPTH: usize = 256;

#[derive(Default)]
struct Found {
    resources: Vec<(String, Loc)>,
    anchors: Vec<((String, String), Loc)>,
}

/// The `$id`s (resources) and anchors below `json`, at `ptr` in document `doc`.
fn index(
    json: &Json,
    doc: usize,
    draft: u16,
    ptr: &str,
    base: &str,
    out: &mut Found,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let obj = match json {
        Json::Object(o) => o,
        Json::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                index(v, doc, draft, &format!("{ptr}/{i}"), base, out, depth + 1);
            }
            return;
        }
        _ => return,
    };
    let loc = |base: &str| Loc {
        doc,
        ptr: ptr.to_string(),
        base: base.to_string(),
    };
    let mut base = base.to_string();
    if let Some(id) = id_of(json, draft) {
        let url = join(&base, id);
        let (res, frag) = split_fragment(&url);
        if !ptr.is_empty() {
            if draft <= 7 && res == base && !frag.is_empty() && !frag.starts_with('/') {
                // `"$id": "#name"` is an anchor in drafts 6 and 7 (and `id` in 4).
                out.anchors
                    .push(((res.to_string(), frag.to_string()), loc(&base)));
            } else {
                out.resources.push((res.to_string(), loc(res)));
            }
        }
        base = res.to_string();
    }
    for key in ["$anchor", "$dynamicAnchor"] {
        if let Some(Json::String(a)) = obj.get(key) {
            out.anchors.push(((base.clone(), a.clone()), loc(&base)));
        }
    }
    for (k, v) in obj {
        if matches!(k.as_str(), "enum" | "const" | "default" | "examples") {
            continue;
        }
        if v.is_object() || v.is_array() {
            index(
                v,
                doc,
                draft,
                &format!("{ptr}/{}", escape(k)),
                &base,
                out,
                depth + 1,
            );
        }
    }
}

fn has_ids(json: &Json, depth: usize) -> bool {
    match json {
        // Too deep to look: assume there are some.
        _ if depth > MAX_DEPTH => true,
        Json::Object(o) => {
            o.keys().any(|k| k == "$id" || k == "id") || o.values().any(|v| has_ids(v, depth + 1))
        }
        Json::Array(a) => a.iter().any(|v| has_ids(v, depth + 1)),
        _ => false,
    }
}

fn collect_files(chart: &Chart, out: &mut Vec<FileSet>, depth: usize) {
    if depth > 32 {
        return;
    }
    let mut files = chart.files.clone();
    if let Some(s) = &chart.schema {
        files.insert("values.schema.json".into(), s.clone());
    }
    out.push(FileSet(files));
    for sub in &chart.subcharts {
        collect_files(sub, out, depth + 1);
    }
}

/// Absolute URLs of every `$ref` (and `$dynamicRef`, `$recursiveRef`) in `json`.
fn collect_refs(json: &Json, base: &str, draft: u16, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match json {
        Json::Object(obj) => {
            let mut base = base.to_string();
            if let Some(id) = id_of(json, draft) {
                base = strip_fragment(&join(&base, id)).to_string();
            }
            for key in ["$ref", "$dynamicRef", "$recursiveRef"] {
                if let Some(Json::String(r)) = obj.get(key) {
                    out.push(join(&base, r));
                }
            }
            for (k, v) in obj {
                if !matches!(k.as_str(), "enum" | "const" | "default" | "examples") {
                    collect_refs(v, &base, draft, out, depth + 1);
                }
            }
        }
        Json::Array(items) => {
            for v in items {
                collect_refs(v, base, draft, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// The base URL at `target` (a pointer below `from`, whose base is `base`): each `$id` on the
/// way changes it.
fn base_along(json: &Json, from: &str, target: &str, base: &str, draft: u16) -> String {
    let mut base = base.to_string();
    let mut cur = pointer(json, from);
    let rest = target.strip_prefix(from).unwrap_or("");
    for tok in rest.split('/').skip(1) {
        let tok = unescape(tok);
        cur = match cur {
            Some(Json::Object(o)) => o.get(&tok),
            Some(Json::Array(a)) => tok.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        if let Some(v) = cur
            && let Some(id) = id_of(v, draft)
            && !id.starts_with('#')
        {
            base = strip_fragment(&join(&base, id)).to_string();
        }
    }
    base
}

fn not_found(url: &str, frag: &str) -> String {
    if frag.starts_with('/') || frag.is_empty() {
        format!("json-pointer in {} not found", go_quote(url))
    } else {
        let (res, _) = split_fragment(url);
        format!(
            "anchor in {} not found in schema {}",
            go_quote(url),
            go_quote(res)
        )
    }
}

fn parse(data: &[u8]) -> Result<Json, LoadError> {
    if data.len() > MAX_DOC {
        return Err(LoadError("schema larger than 16 MiB".into()));
    }
    serde_json::from_slice(data).map_err(|e| {
        LoadError(if e.is_eof() {
            "unexpected EOF".into()
        } else {
            e.to_string()
        })
    })
}

/// The draft a document declares with `$schema` (2020-12 when it declares none).
fn draft_of(json: &Json, url: &str) -> Result<u16, LoadError> {
    let Some(Json::String(s)) = json.get("$schema") else {
        return Ok(2020);
    };
    let (u, frag) = split_fragment(s);
    let u = u
        .strip_prefix("http://")
        .or_else(|| u.strip_prefix("https://"))
        .unwrap_or(u);
    let draft = match (u, frag) {
        ("json-schema.org/schema" | "json-schema.org/draft/2020-12/schema", "") => Some(2020),
        ("json-schema.org/draft/2019-09/schema", "") => Some(2019),
        ("json-schema.org/draft-07/schema", "") => Some(7),
        ("json-schema.org/draft-06/schema", "") => Some(6),
        ("json-schema.org/draft-04/schema", "") => Some(4),
        _ => None,
    };
    draft.ok_or_else(|| {
        LoadError(format!(
            "failing loading {}: fluxgate knows the metaschemas of drafts 4, 6, 7, 2019-09 and 2020-12 only (in {})",
            go_quote(strip_fragment(s)),
            go_quote(url)
        ))
    })
}

fn id_of(json: &Json, draft: u16) -> Option<&str> {
    let key = if draft == 4 { "id" } else { "$id" };
    json.get(key).and_then(Json::as_str)
}

pub fn split_fragment(url: &str) -> (&str, &str) {
    url.split_once('#').unwrap_or((url, ""))
}

fn strip_fragment(url: &str) -> &str {
    split_fragment(url).0
}

/// RFC 3986 reference resolution, enough for schema URLs.
pub fn join(base: &str, reference: &str) -> String {
    if reference.is_empty() {
        return strip_fragment(base).to_string();
    }
    if reference.starts_with('#') {
        return format!("{}{reference}", strip_fragment(base));
    }
    if has_scheme(reference) {
        return normalize_url(reference);
    }
    let base = strip_fragment(base);
    let Some(colon) = base.find(':') else {
        return reference.to_string();
    };
    let (scheme, rest) = (&base[..=colon], &base[colon + 1..]);
    if reference.starts_with("//") {
        return normalize_url(&format!("{scheme}{reference}"));
    }
    // authority: `//host` up to the next `/`.
    let (authority, path) = match rest.strip_prefix("//") {
        Some(r) => {
            let end = r.find('/').unwrap_or(r.len());
            (format!("//{}", &r[..end]), r[end..].to_string())
        }
        None => (String::new(), rest.to_string()),
    };
    let new_path = if reference.starts_with('/') {
        reference.to_string()
    } else {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        format!("{dir}/{reference}")
    };
    let (p, frag) = split_fragment(&new_path);
    let p = normalize(p).unwrap_or_else(|| "/".into());
    let frag = if new_path.contains('#') {
        format!("#{frag}")
    } else {
        String::new()
    };
    format!("{scheme}{authority}{p}{frag}")
}

fn has_scheme(s: &str) -> bool {
    match s.find(':') {
        Some(i) if i > 0 => s[..i]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')),
        _ => false,
    }
}

fn normalize_url(url: &str) -> String {
    url.to_string()
}

/// `a/./b/../c` -> `a/c`; a leading `/` kept; `None` when `..` climbs above the root.
fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    let lead = if path.starts_with('/') { "/" } else { "" };
    Some(format!("{lead}{}", parts.join("/")))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Go's `%q` (double quotes).
pub fn go_quote(s: &str) -> String {
    fluxgate_gotemplate::format::quote(s)
}

pub fn escape(tok: &str) -> String {
    tok.replace('~', "~0").replace('/', "~1")
}

/// [`escape`], appended to `out`.
pub fn escape_into(tok: &str, out: &mut String) {
    for c in tok.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

fn unescape(tok: &str) -> String {
    tok.replace("~1", "/").replace("~0", "~")
}

/// RFC 6901: the value at `ptr` (`""` is the whole document).
pub fn pointer<'a>(json: &'a Json, ptr: &str) -> Option<&'a Json> {
    if ptr.is_empty() {
        return Some(json);
    }
    let mut cur = json;
    for tok in ptr.strip_prefix('/')?.split('/') {
        let tok = unescape(tok);
        cur = match cur {
            Json::Object(o) => o.get(&tok)?,
            Json::Array(a) => a.get(tok.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_values::chart;

    /// The process-wide cache hands out one compilation per schema and chart tree: the same
    /// bytes again give the same compiled schema; other bytes, or (for a schema with
    /// references) a changed file of the tree, compile anew.
    #[test]
    fn compiled_schemas_are_shared_only_for_the_same_schema_and_files() {
        let meta = (
            "Chart.yaml",
            "apiVersion: v2\nname: cachetest\nversion: 0.1.0\n",
        );
        let plain: Arc<[u8]> = Arc::from(&br#"{"type": "object", "title": "cache-plain"}"#[..]);
        let a = compile_cached(&plain, &chart(&[meta]));
        let b = compile_cached(&Arc::from(&*plain), &chart(&[meta, ("other.json", "{}")]));
        assert!(
            Arc::ptr_eq(&a, &b),
            "same bytes, no references: one compilation"
        );
        let other: Arc<[u8]> = Arc::from(&br#"{"type": "object", "title": "cache-other"}"#[..]);
        assert!(!Arc::ptr_eq(&a, &compile_cached(&other, &chart(&[meta]))));

        let refs: Arc<[u8]> = Arc::from(&br#"{"$ref": "defs.json", "title": "cache-refs"}"#[..]);
        let one = chart(&[meta, ("defs.json", r#"{"type": "object"}"#)]);
        let two = chart(&[meta, ("defs.json", r#"{"type": "string"}"#)]);
        let first = compile_cached(&refs, &one);
        assert!(Arc::ptr_eq(&first, &compile_cached(&refs, &one)));
        assert!(
            !Arc::ptr_eq(&first, &compile_cached(&refs, &two)),
            "a referenced file changed: compiled again"
        );
    }

    #[test]
    fn urls_join_as_rfc3986() {
        assert_eq!(
            join("file:///values.schema.json", "#/$defs/a"),
            "file:///values.schema.json#/$defs/a"
        );
        assert_eq!(
            join(
                "https://h/x/common/values.schema.json",
                "schemas/pod.json#/options"
            ),
            "https://h/x/common/schemas/pod.json#/options"
        );
        assert_eq!(
            join("https://h/x/common/schemas/a.json", "../b.json"),
            "https://h/x/common/b.json"
        );
        assert_eq!(
            join("file:///values.schema.json", "other.json"),
            "file:///other.json"
        );
        assert_eq!(join("file:///values.schema.json", "urn:x:y"), "urn:x:y");
    }

    #[test]
    fn pointers_unescape() {
        let j: Json = serde_json::json!({"a/b": {"c~d": [1, 2]}});
        assert_eq!(pointer(&j, "/a~1b/c~0d/1"), Some(&Json::from(2)));
        assert_eq!(pointer(&j, "/nope"), None);
    }
}
