//! Never print a secret (issue 8 §2): what fluxgate knows about the secret values of a run,
//! and the masking of them in every output.
//!
//! Two layers. Where the structure is known, values are masked by place: a Secret's `data` and
//! `stringData` in rendered objects and in the source lines of snippets, the files and literals
//! a `secretGenerator` reads, a scalar that post-build substitution took from a Secret, a
//! HelmRelease value that came from a `valuesFrom` Secret. Under that, every text printed goes
//! through a [`Redactor`] that knows the values themselves, so that a message that interpolates
//! one (`dials <host>`, `parity ... has <value>`) is masked too.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use base64::Engine;
use fluxgate_diagnostics::redact::{MASK, Redactor, mask_from_column};
use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_kustomize::Fs;
use fluxgate_model::Environment;
use fluxgate_yaml::{Node, Schema, Value, parse_stream};

use fluxgate_flux::helm::leaf;

/// The secret values of a run and the places that hold them.
#[derive(Debug, Default)]
pub struct Secrets {
    redactor: Redactor,
    /// Locations of `data`/`stringData` values of rendered Secrets: a scalar of another object
    /// located here was substituted from a Secret.
    places: BTreeSet<Location>,
}

impl Secrets {
    /// What the rendered environments hold in Secrets: their `data` (encoded and decoded) and
    /// `stringData` values, and the HelmRelease values that `valuesFrom` took from a Secret.
    pub fn from_environments(envs: &[Environment]) -> Secrets {
        Secrets::from_each(envs)
    }

    /// [`Secrets::from_environments`] over environments of more than one render (the base
    /// and the head of `diff`).
    pub fn from_each<'a>(envs: impl IntoIterator<Item = &'a Environment>) -> Secrets {
        let envs: Vec<&Environment> = envs.into_iter().collect();
        let mut collect = Collector::default();
        for env in &envs {
            collect.objects(env.objects());
            for rel in env.releases.values() {
                for (path, chain) in &rel.values.origins {
                    if chain.iter().any(|o| is_secret_origin(&o.via))
                        && let Some(n) = leaf(&rel.values.tree, path)
                    {
                        collect.leaves(n);
                    }
                }
            }
        }
        for env in &envs {
            if let Some(b) = &env.bootstrap {
                for v in b.project.secret_values(&b.hosts) {
                    collect.derived(&v);
                }
            }
        }
        // Taint: a scalar that substitution derived from a Secret's value (`${PW:3}`,
        // `${PW^^}`, `pre-${PW}`) is located at that value; its whole text is secret too,
        // wherever a message quotes it.
        collect.settle();
        for env in &envs {
            for obj in env.objects() {
                collect.tainted(obj);
            }
            for rel in env.releases.values() {
                collect.tainted(&rel.values.tree);
            }
        }
        collect.finish()
    }

    /// The Ansible variables of `project` that are secrets on `hosts` (by name, by a vault
    /// file), with their common derived forms.
    pub fn from_ansible(project: &fluxgate_ansible::Project, hosts: &[String]) -> Secrets {
        let mut collect = Collector::default();
        for v in project.secret_values(hosts) {
            collect.derived(&v);
        }
        collect.finish()
    }

    /// What the Secrets among `objects` hold.
    pub fn from_objects<'a>(objects: impl Iterator<Item = &'a Node>) -> Secrets {
        let mut collect = Collector::default();
        collect.objects(objects);
        collect.finish()
    }

    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    pub fn redact_diagnostics(&self, diags: &mut [Diagnostic]) {
        for d in diags {
            self.redactor.redact_diagnostic(d);
        }
    }

    /// Whether a value located at `loc` came from a Secret's `data` or `stringData`.
    pub fn is_secret_place(&self, loc: &Location) -> bool {
        self.places.contains(loc)
    }

    /// Masks an object for printing: every `data`/`stringData` value of a Secret (keys kept),
    /// every scalar substituted from a Secret, and every known secret value inside a string.
    pub fn mask_object(&self, obj: &mut Node) {
        self.mask_node(obj);
        if is_secret(obj) {
            mask_secret_values(obj);
        }
    }

    fn mask_node(&self, n: &mut Node) {
        match &mut n.value {
            Value::Map(m) => m.values_mut().for_each(|v| self.mask_node(v)),
            Value::Seq(s) => s.iter_mut().for_each(|v| self.mask_node(v)),
            Value::String(s) => {
                if self.places.contains(&n.loc) {
                    *s = MASK.to_string();
                } else if let Cow::Owned(r) = self.redactor.redact(s) {
                    *s = r;
                }
            }
            _ if self.places.contains(&n.loc) => n.value = Value::String(MASK.to_string()),
            _ => {}
        }
    }

    /// The text of a repository file as a snippet may show it: the values of Secrets, of
    /// `secretGenerator` literals and of the files a `secretGenerator` reads masked, then every
    /// known secret value and everything encrypted. Lines and their count are kept.
    /// Generator kustomizations are read through `fs`, the repository's filesystem.
    pub fn mask_source(&self, fs: &dyn Fs, root: &Path, file: &str, text: &str) -> String {
        let masked = mask_source_structure(fs, root, file, text);
        self.redactor.redact(&masked).into_owned()
    }
}

/// Whether an origin's `via` names a `valuesFrom` Secret.
fn is_secret_origin(via: &str) -> bool {
    via.starts_with("valuesFrom Secret/")
}

/// A core Secret (`v1`, or no apiVersion as in a kustomize patch).
pub fn is_secret(obj: &Node) -> bool {
    obj.str_at(&["kind"]) == Some("Secret") && obj.str_at(&["apiVersion"]).is_none_or(|a| a == "v1")
}

/// Every `data`/`stringData` value of a Secret replaced by the mask; `data` gets the mask's
/// base64, so that the object stays a valid Secret.
fn mask_secret_values(obj: &mut Node) {
    for (field, mask) in [("data", MASK_BASE64), ("stringData", MASK)] {
        if let Some(map) = obj.get_mut(field).and_then(Node::as_map_mut) {
            for v in map.values_mut() {
                if !v.is_null() {
                    v.value = Value::String(mask.to_string());
                }
            }
        }
    }
}

/// What `value` looks like inside base64, standard and URL-safe: encoded alone, and encoded
/// as part of a longer text (`user:value` of a basic-auth header), where its characters
/// start at one of three alignments and the characters shared with its neighbours differ
/// (those are dropped). Only forms of at least 8 characters: shorter pieces of base64 would
/// mask ordinary words.
fn base64_forms(value: &str) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    const MIN_FORM: usize = 8;
    let mut out = Vec::new();
    if value.chars().count() < fluxgate_diagnostics::redact::MIN_SECRET_LEN {
        return out;
    }
    for lead in 0..3usize {
        let mut bytes = vec![0u8; lead];
        bytes.extend_from_slice(value.as_bytes());
        for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&bytes);
            // Characters holding a bit of the leading filler, and a last one that the next
            // byte of a longer text would change.
            let skip = (lead * 8).div_ceil(6);
            let end = if bytes.len() * 8 % 6 == 0 {
                encoded.len()
            } else {
                encoded.len() - 1
            };
            let whole = lead == 0;
            if whole {
                out.push(encoded.clone());
            }
            if let Some(core) = encoded.get(skip..end)
                && core.len() >= MIN_FORM
            {
                out.push(core.to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `base64(MASK)`.
const MASK_BASE64: &str = "KioqKioqKio=";

#[derive(Default)]
struct Collector {
    redactor: Redactor,
    places: BTreeSet<Location>,
    /// Locations of the other scalars of Secrets (a generated Secret's name may share its
    /// values' location: the generator entry).
    not_places: BTreeSet<Location>,
}

impl Collector {
    fn objects<'a>(&mut self, objects: impl Iterator<Item = &'a Node>) {
        for obj in objects.filter(|o| is_secret(o)) {
            if let Some(map) = obj.as_map() {
                for (k, v) in map {
                    if k != "data" && k != "stringData" {
                        self.elsewhere(v);
                    }
                }
            }
            for field in ["data", "stringData"] {
                let Some(map) = obj.get(field).and_then(Node::as_map) else {
                    continue;
                };
                for v in map.values() {
                    let Some(text) = v.scalar_text() else {
                        continue;
                    };
                    self.places.insert(v.loc.clone());
                    self.value(&text);
                    if field == "data" {
                        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                        if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(compact)
                        {
                            self.value(&String::from_utf8_lossy(&bytes));
                        }
                    }
                }
            }
        }
    }

    fn elsewhere(&mut self, n: &Node) {
        self.not_places.insert(n.loc.clone());
        match &n.value {
            Value::Map(m) => m.values().for_each(|v| self.elsewhere(v)),
            Value::Seq(s) => s.iter().for_each(|v| self.elsewhere(v)),
            _ => {}
        }
    }

    fn leaves(&mut self, n: &Node) {
        match &n.value {
            Value::Map(m) => m.values().for_each(|v| self.leaves(v)),
            Value::Seq(s) => s.iter().for_each(|v| self.leaves(v)),
            _ => {
                if let Some(t) = n.scalar_text() {
                    self.value(&t);
                }
            }
        }
    }

    /// A secret value and its base64 encodings (issue 26 §1: a Secret's `data`, a basic-auth
    /// header or a `| b64encode` shows it so).
    fn value(&mut self, v: &str) {
        self.redactor.add(v);
        for form in base64_forms(v) {
            self.redactor.add(&form);
        }
    }

    /// A secret value and the forms a template's filters commonly give it (`| upper`,
    /// `| lower`, `| b64encode`; a filter chain beyond that is evaluated by the Ansible
    /// project, which lists its results as values of their own).
    fn derived(&mut self, v: &str) {
        self.value(v);
        self.redactor.add(&v.to_uppercase());
        self.redactor.add(&v.to_lowercase());
    }

    /// Drops from the places those that also hold a Secret's other scalars.
    fn settle(&mut self) {
        let not_places = std::mem::take(&mut self.not_places);
        self.places.retain(|l| !not_places.contains(l));
    }

    /// Adds every scalar of `n` located at a Secret's value (a value derived from it) to the
    /// redactor.
    fn tainted(&mut self, n: &Node) {
        match &n.value {
            Value::Map(m) => m.values().for_each(|v| self.tainted(v)),
            Value::Seq(s) => s.iter().for_each(|v| self.tainted(v)),
            _ => {
                if self.places.contains(&n.loc)
                    && let Some(t) = n.scalar_text()
                {
                    self.value(&t);
                }
            }
        }
    }

    fn finish(self) -> Secrets {
        let Collector {
            redactor,
            mut places,
            not_places,
        } = self;
        places.retain(|l| !not_places.contains(l));
        Secrets {
            redactor: redactor.finish(),
            places,
        }
    }
}

/// The structural part of [`Secrets::mask_source`].
fn mask_source_structure(fs: &dyn Fs, root: &Path, file: &str, text: &str) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    if let Some(kind) = generator_input(fs, root, file) {
        for l in &mut lines {
            *l = match kind {
                Input::Env => mask_keeping_key(l),
                Input::File => mask_whole(l),
            };
        }
        return lines.join("\n");
    }
    let yaml = Path::new(file)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| {
            ["yaml", "yml", "json"]
                .iter()
                .any(|y| e.eq_ignore_ascii_case(y))
        });
    if !yaml || !(text.contains("Secret") || text.contains("secretGenerator")) {
        return text.to_string();
    }
    let original = lines.clone();
    let stream = parse_stream(file, text, Schema::Kube);
    let mut values: Vec<&Node> = Vec::new();
    let mut literals: Vec<&Node> = Vec::new();
    for doc in &stream.docs {
        secret_values(doc, &mut values);
        for entry in doc
            .get("secretGenerator")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            literals.extend(
                entry
                    .get("literals")
                    .and_then(Node::as_seq)
                    .unwrap_or_default(),
            );
        }
    }
    for v in values {
        mask_value_lines(&mut lines, &original, &v.loc);
    }
    // What the parsed tree does not hold: the earlier value of a duplicate key (a "first
    // defined here" snippet shows its line) and everything of a Secret that does not parse
    // (an unterminated quote): every line under `data:`/`stringData:` of a document that
    // says `kind: Secret` is masked by its text.
    mask_secret_blocks(&mut lines, &original);
    for lit in literals {
        let i = lit.loc.line as usize;
        if let Some(line) = lines.get_mut(i.wrapping_sub(1)) {
            let from = lit.loc.column as usize;
            let eq = line
                .chars()
                .skip(from.saturating_sub(1))
                .position(|c| c == '=');
            if let Some(eq) = eq {
                *line = mask_from_column(line, from + eq + 1);
            }
        }
    }
    lines.join("\n")
}

/// Masks, in each `---` document whose text has a `kind: Secret` line, every line more
/// indented than a `data:` or `stringData:` key (keys kept), and the value of a flow or
/// inline `data: {...}`.
fn mask_secret_blocks(lines: &mut [String], original: &[String]) {
    let mut start = 0;
    while start < original.len() {
        let end = original[start + 1..]
            .iter()
            .position(|l| l.starts_with("---"))
            .map_or(original.len(), |p| start + 1 + p);
        let secret = original[start..end].iter().any(|l| {
            let t = l.trim_start().trim_start_matches("- ");
            t.strip_prefix("kind:")
                .is_some_and(|k| k.trim().trim_matches(['"', '\'']) == "Secret")
        });
        if secret {
            let mut block: Option<usize> = None;
            for i in start..end {
                let l = &original[i];
                if l.trim().is_empty() {
                    continue;
                }
                if let Some(ind) = block {
                    if indent(l) > ind {
                        // A block scalar's header (`key: |`) holds no value.
                        let header = l.split_once(": ").is_some_and(|(_, v)| {
                            let v = v.trim();
                            v.starts_with('|') || v.starts_with('>')
                        });
                        if !header {
                            lines[i] = mask_keeping_key(l);
                        }
                        continue;
                    }
                    block = None;
                }
                let body = l.trim_start().trim_start_matches("- ");
                for key in ["data:", "stringData:"] {
                    if let Some(rest) = body.strip_prefix(key) {
                        let rest = rest.trim();
                        if rest.is_empty() || rest.starts_with('#') {
                            block = Some(indent(l));
                        } else if !rest.starts_with('|') && !rest.starts_with('>') {
                            lines[i] = mask_keeping_key(l);
                        } else {
                            block = Some(indent(l));
                        }
                    }
                }
            }
        }
        start = end;
    }
}

/// The `data`/`stringData` values of every Secret in `doc` (a `List`'s items too).
fn secret_values<'a>(doc: &'a Node, out: &mut Vec<&'a Node>) {
    if is_secret(doc) {
        for field in ["data", "stringData"] {
            if let Some(map) = doc.get(field).and_then(Node::as_map) {
                out.extend(map.values().filter(|v| !v.is_null()));
            }
        }
    }
    for item in doc.get("items").and_then(Node::as_seq).unwrap_or_default() {
        secret_values(item, out);
    }
}

/// Masks the value that starts at `loc` and the lines it continues on (a block scalar, a
/// folded plain scalar): every following line more indented than its key.
fn mask_value_lines(lines: &mut [String], original: &[String], loc: &Location) {
    let first = loc.line as usize;
    if first == 0 || first > lines.len() {
        return;
    }
    let start = &original[first - 1];
    let own_line = start
        .chars()
        .take(loc.column.saturating_sub(1) as usize)
        .all(char::is_whitespace);
    let threshold = if own_line {
        indent(start)
    } else {
        indent(start) + 1
    };
    lines[first - 1] = if own_line {
        mask_keeping_key(start)
    } else {
        mask_from_column(start, loc.column as usize)
    };
    for i in first..lines.len() {
        let l = &original[i];
        if l.trim().is_empty() {
            continue;
        }
        if indent(l) < threshold || l.starts_with("---") {
            break;
        }
        lines[i] = mask_keeping_key(l);
    }
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// A line of a secret's content with its key kept, as far as it looks like one (`key: `,
/// `KEY=`, a list dash); the rest masked. Indentation and blank lines are kept.
fn mask_keeping_key(line: &str) -> String {
    let body = line.trim_start();
    if body.trim().is_empty() {
        return line.to_string();
    }
    let lead = &line[..line.len() - body.len()];
    let (dash, rest) = match body.strip_prefix("- ") {
        Some(r) => ("- ", r),
        None => ("", body),
    };
    let key_end = rest.find(|c: char| c == ':' || c == '=' || c.is_whitespace());
    if let Some(end) = key_end
        && end > 0
    {
        let sep = &rest[end..];
        let kept = if let Some(after) = sep.strip_prefix(": ") {
            Some(rest.len() - after.len())
        } else if sep.starts_with('=') {
            Some(end + 1)
        } else {
            None
        };
        if let Some(k) = kept {
            let value = &rest[k..];
            let shown = if value.trim().is_empty() { value } else { MASK };
            return format!("{lead}{dash}{}{shown}", &rest[..k]);
        }
    }
    format!("{lead}{dash}{MASK}")
}

fn mask_whole(line: &str) -> String {
    if line.trim().is_empty() {
        return line.to_string();
    }
    format!("{}{MASK}", &line[..indent(line)])
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Input {
    /// `envs:`: `KEY=value` lines.
    Env,
    /// `files:`: the whole file is one value.
    File,
}

/// Whether `file` (relative to `root`) is read by a `secretGenerator` of a kustomization in
/// its folder or above. Kustomize's load restrictor keeps a generator's files at or below its
/// kustomization, so the folders above are every place one can be.
fn generator_input(fs: &dyn Fs, root: &Path, file: &str) -> Option<Input> {
    let target = normalize(&root.join(file));
    let mut dir = target.parent();
    while let Some(d) = dir {
        if !d.starts_with(root) {
            break;
        }
        for name in ["kustomization.yaml", "kustomization.yml", "Kustomization"] {
            let Ok(text) = fs.read(&d.join(name)) else {
                continue;
            };
            if !text.contains("secretGenerator") {
                continue;
            }
            for doc in parse_stream(name, &text, Schema::Kube).docs {
                for entry in doc
                    .get("secretGenerator")
                    .and_then(Node::as_seq)
                    .unwrap_or_default()
                {
                    if let Some(kind) = reads(entry, d, &target) {
                        return Some(kind);
                    }
                }
            }
        }
        dir = d.parent();
    }
    None
}

/// Whether the generator `entry` of the kustomization in `dir` reads `target`.
fn reads(entry: &Node, dir: &Path, target: &Path) -> Option<Input> {
    let names = |key: &str| -> Vec<String> {
        match entry.get(key).map(|n| &n.value) {
            Some(Value::Seq(s)) => s.iter().filter_map(Node::scalar_text).collect(),
            Some(_) => entry
                .get(key)
                .and_then(Node::scalar_text)
                .into_iter()
                .collect(),
            None => Vec::new(),
        }
    };
    let hits = |p: &str| normalize(&dir.join(p)) == target;
    if names("envs").iter().chain(&names("env")).any(|p| hits(p)) {
        return Some(Input::Env);
    }
    // `files:` entries are `path` or `key=path`.
    names("files")
        .iter()
        .any(|f| hits(f.rsplit_once('=').map_or(f.as_str(), |(_, p)| p)))
        .then_some(Input::File)
}

fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod base64_tests {
    use super::base64_forms;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn a_value_is_found_inside_the_base64_of_a_longer_text() {
        let forms = base64_forms("hunter2-but-longer");
        for text in [
            "hunter2-but-longer",
            "u:hunter2-but-longer",
            "us:hunter2-but-longer@h",
            "use:hunter2-but-longer\n",
        ] {
            let encoded = STANDARD.encode(text);
            assert!(
                forms.iter().any(|f| encoded.contains(f.as_str())),
                "{text} -> {encoded}: {forms:?}"
            );
        }
        assert!(base64_forms("abc").is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_kustomize::{MemFs, RealFs};

    fn structure(text: &str) -> String {
        mask_source_structure(&MemFs::new(), Path::new("/nonexistent"), "s.yaml", text)
    }

    #[test]
    fn secret_values_are_masked_in_place_keys_kept() {
        let text = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: aHVudGVyMg==\nstringData:\n  token: \"hunter2\" # c\n  config.ini: |\n    [db]\n    secret = hunter3\n\n    other: x\n  next: plain\ntype: Opaque\n";
        let masked = structure(text);
        assert_eq!(
            masked,
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: ********\nstringData:\n  token: ********\n  config.ini: |\n    ********\n    ********\n\n    other: ********\n  next: ********\ntype: Opaque\n"
        );
        assert_eq!(masked.lines().count(), text.lines().count());
    }

    /// Issue 26 §1: what the parsed tree does not hold is masked by its text: the first
    /// value of a duplicate key ("first defined here") and a Secret that does not parse.
    #[test]
    fn duplicate_keys_and_unparseable_secrets_are_masked() {
        let dup = "apiVersion: v1\nkind: Secret\nstringData:\n  password: first-value\n  password: second-value\n";
        let masked = structure(dup);
        assert!(
            !masked.contains("first-value") && !masked.contains("second-value"),
            "{masked}"
        );
        let broken = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: b\nstringData:\n  password: \"unterminated\n  other: x\n";
        let masked = structure(broken);
        assert!(!masked.contains("unterminated"), "{masked}");
        assert!(masked.contains("  name: b"), "{masked}");
    }

    #[test]
    fn other_kinds_and_generator_literals() {
        let cm = "kind: ConfigMap\ndata:\n  password: visible\n";
        assert_eq!(structure(cm), cm);
        let k = "secretGenerator:\n  - name: x\n    literals:\n      - ADMIN=hunter2\n      - \"B=c=d\"\n";
        assert_eq!(
            structure(k),
            "secretGenerator:\n  - name: x\n    literals:\n      - ADMIN=********\n      - \"B=********\n"
        );
    }

    #[test]
    fn lines_of_generator_inputs() {
        assert_eq!(mask_keeping_key("API_KEY=abc"), "API_KEY=********");
        assert_eq!(mask_keeping_key("  host: a b c"), "  host: ********");
        assert_eq!(mask_keeping_key("  - item"), "  - ********");
        assert_eq!(mask_keeping_key("  free text"), "  ********");
        assert_eq!(mask_whole("user=app"), "********");
    }

    #[test]
    fn generator_files_are_found_from_their_kustomization() {
        let tmp = std::env::temp_dir().join(format!("fluxgate-secrets-{}", std::process::id()));
        std::fs::create_dir_all(tmp.join("app/files")).expect("temp dir");
        std::fs::write(
            tmp.join("app/kustomization.yaml"),
            "secretGenerator:\n  - name: s\n    envs: [files/a.env]\n    files: [key=files/b.txt]\n",
        )
        .expect("write");
        assert_eq!(
            generator_input(&RealFs::new(&tmp), &tmp, "app/files/a.env"),
            Some(Input::Env)
        );
        assert_eq!(
            generator_input(&RealFs::new(&tmp), &tmp, "app/files/b.txt"),
            Some(Input::File)
        );
        assert_eq!(
            generator_input(&RealFs::new(&tmp), &tmp, "app/files/c.txt"),
            None
        );
        let _ = std::fs::remove_dir_all(&tmp);
    }

    #[test]
    fn rendered_objects_are_masked_by_place_and_value() {
        let objects = parse_stream(
            "s.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  pw: aHVudGVyMi1sb25n\nstringData:\n  host: secret-host.example\n---\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  url: https://secret-host.example/x\n  plain: hello\n",
            Schema::Kube,
        )
        .docs;
        let secrets = Secrets::from_objects(objects.iter());
        let mut masked = objects.clone();
        for o in &mut masked {
            secrets.mask_object(o);
        }
        assert_eq!(masked[0].str_at(&["data", "pw"]), Some(MASK_BASE64));
        assert_eq!(masked[0].str_at(&["stringData", "host"]), Some(MASK));
        assert_eq!(masked[0].str_at(&["metadata", "name"]), Some("s"));
        assert_eq!(
            masked[1].str_at(&["data", "url"]),
            Some("https://********/x")
        );
        assert_eq!(masked[1].str_at(&["data", "plain"]), Some("hello"));
        assert_eq!(secrets.redactor().redact("hunter2-long"), MASK);
    }
}
