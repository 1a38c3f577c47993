//! The mutation operators of SPEC §9, one file each, in one explicit list ([`OPERATORS`]).
//! An operator reads the baseline (the rendered environments, the repository index, what
//! each environment read) and proposes mutants: text edits of committed files, applied later
//! through an overlay. A mutant it cannot make is [`Skipped`] with the reason.

mod base_default_changed;
mod chart_override_removed;
mod endpoint_node_ip;
mod overlay_key_removed;
mod parity_value;
mod playbook_swap;
mod sops_metadata_removed;
mod substitution_var_removed;
mod vip_san_removed;

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use fluxgate_fs::Fs;
use fluxgate_model::config::Config;
use fluxgate_model::{Environment, RepoIndex};

use crate::outline::Outline;
use crate::{Edit, Mutant, Skipped};

/// What an operator reads.
pub struct Ctx<'a> {
    pub root: &'a Path,
    pub config: &'a Config,
    pub envs: &'a [Environment],
    pub index: &'a RepoIndex,
    /// Per environment (same order as `envs`): the files its renderers read, relative paths.
    pub reach: &'a [BTreeSet<String>],
    pub fs: &'a dyn Fs,
}

impl Ctx<'_> {
    /// The committed text of a file (relative path).
    pub fn text(&self, rel: &str) -> Option<String> {
        self.fs.read(&self.root.join(rel)).ok()
    }

    /// Whether some environment's renderers read the file.
    pub fn reached(&self, rel: &str) -> bool {
        self.reach.iter().any(|r| r.contains(rel))
    }

    /// Every file an environment read or the index holds, sorted.
    pub fn known_files(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.reach.iter().flatten().cloned().collect();
        out.extend(self.index.files().iter().map(|f| f.path.clone()));
        out
    }

    /// `path` relative to the root, `/`-separated, if it is inside it.
    pub fn rel(&self, path: &str) -> String {
        let p = Path::new(path);
        p.strip_prefix(self.root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

/// What the operators proposed.
#[derive(Default)]
pub struct Found {
    pub mutants: Vec<Mutant>,
    pub skipped: Vec<Skipped>,
    seen: HashSet<Vec<(String, String)>>,
    skipped_at: HashSet<(String, u32, &'static str)>,
}

impl Found {
    /// Adds a mutant unless one with the same edits was proposed already.
    pub fn push(&mut self, m: Mutant) {
        let key: Vec<(String, String)> = m
            .edits
            .iter()
            .map(|e| (e.file.clone(), e.text.clone()))
            .collect();
        if self.seen.insert(key) {
            self.mutants.push(m);
        }
    }

    pub fn skip(
        &mut self,
        operator: &'static str,
        file: &str,
        line: u32,
        reason: impl Into<String>,
    ) {
        if self.skipped_at.insert((file.to_string(), line, operator)) {
            self.skipped.push(Skipped {
                operator,
                file: file.to_string(),
                line,
                reason: reason.into(),
            });
        }
    }
}

/// One operator: its name (as the reports show it) and its generator.
pub struct Operator {
    pub name: &'static str,
    /// What defect it plants, one line.
    pub summary: &'static str,
    pub generate: fn(&Ctx<'_>, &mut Found),
}

/// Every operator, in the order of SPEC §9.
pub static OPERATORS: &[Operator] = &[
    parity_value::OPERATOR,
    endpoint_node_ip::OPERATOR,
    overlay_key_removed::OPERATOR,
    base_default_changed::OPERATOR,
    substitution_var_removed::OPERATOR,
    playbook_swap::OPERATOR,
    chart_override_removed::OPERATOR,
    vip_san_removed::OPERATOR,
    sops_metadata_removed::OPERATOR,
];

/// Every mutant of every operator.
#[must_use]
pub fn generate(ctx: &Ctx<'_>) -> Found {
    let mut found = Found::default();
    for op in OPERATORS {
        (op.generate)(ctx, &mut found);
    }
    found
}

/// A mutant that edits one file.
pub(crate) fn single(
    operator: &'static str,
    file: &str,
    line: u32,
    what: String,
    text: String,
) -> Mutant {
    Mutant {
        operator,
        file: file.to_string(),
        line,
        what,
        edits: vec![Edit {
            file: file.to_string(),
            text,
        }],
    }
}

/// The text with the key on line `no` removed, and its parents with it when it was their
/// only child (an empty parent would read as null, which is another change).
pub(crate) fn remove_key(o: &Outline, no: u32) -> String {
    let (mut from, mut to) = o.block(no);
    let mut current = no;
    while let Some(line) = o.line(current) {
        if line.path.len() <= 1 {
            break;
        }
        let parent_path = &line.path[..line.path.len() - 1];
        let Some(parent) = o.lines.iter().rev().find(|l| {
            l.no < current && !l.inert && l.doc == line.doc && l.path.as_slice() == parent_path
        }) else {
            break;
        };
        // An item `- key: v` is its own parent line: the item goes when its one key goes.
        let (pa, pb) = o.block(parent.no);
        let children = o
            .lines
            .iter()
            .filter(|l| {
                l.no > parent.no && l.no <= pb && !l.inert && l.path.len() == parent_path.len() + 1
            })
            .count();
        let own_line_child = parent.no == current;
        if own_line_child || children > 1 || (parent.no != current && !parent.value.is_empty()) {
            break;
        }
        from = pa;
        to = to.max(pb);
        current = parent.no;
    }
    o.without(from, to)
}

/// The line's key and value for a report: `key: value`, the value hidden where it may be a
/// secret (a Secret's data, a key named like a credential).
pub(crate) fn shown(o: &Outline, no: u32) -> String {
    let Some(l) = o.line(no) else {
        return String::new();
    };
    if secretish(o, no) {
        return format!("{}: (value hidden)", l.key.as_deref().unwrap_or_default());
    }
    o.raw(no).trim().trim_start_matches("- ").to_string()
}

/// Whether the value on line `no` may be a secret: it is in a `kind: Secret` document, or its
/// key is named like a credential. Reports then never show it.
pub(crate) fn secretish(o: &Outline, no: u32) -> bool {
    let Some(l) = o.line(no) else {
        return true;
    };
    let kind = o
        .lines
        .iter()
        .find(|x| x.doc == l.doc && x.path.len() == 1 && x.key.as_deref() == Some("kind"))
        .map(|x| x.value.trim_matches(['"', '\'']));
    let key = l.key.as_deref().unwrap_or_default().to_ascii_lowercase();
    kind == Some("Secret")
        || [
            "password", "passwd", "token", "secret", "apikey", "api_key", "private",
        ]
        .iter()
        .any(|w| key.contains(w))
}
