//! Dotted paths into a values tree as [`super::Origins`] writes them (`a.b`, `list[0].c`, `\.`
//! inside keys): how the readers of effective values find the leaf an origin belongs to.

use fluxgate_yaml::Node;

/// One step of a dotted values path: a key, or a list index.
enum Step {
    Key(String),
    Index(usize),
}

/// The steps of a dotted path as the origins map writes it (`a.b`, `list[0].c`, `\.` inside
/// keys); `None` when an index is not a number.
fn steps(path: &str) -> Option<Vec<Step>> {
    let mut key = String::new();
    let mut chars = path.chars().peekable();
    let mut segments: Vec<String> = Vec::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'.') => {
                key.push('.');
                chars.next();
            }
            '.' => segments.push(std::mem::take(&mut key)),
            c => key.push(c),
        }
    }
    segments.push(key);
    let mut out = Vec::new();
    for seg in segments {
        let (name, indexes) = match seg.find('[') {
            Some(i) => (&seg[..i], &seg[i..]),
            None => (seg.as_str(), ""),
        };
        if !name.is_empty() {
            out.push(Step::Key(name.to_string()));
        }
        for idx in indexes.split(']').filter(|s| !s.is_empty()) {
            out.push(Step::Index(idx.trim_start_matches('[').parse().ok()?));
        }
    }
    Some(out)
}

/// The node at a dotted path as the origins map writes it.
#[must_use]
pub fn leaf<'a>(tree: &'a Node, path: &str) -> Option<&'a Node> {
    let mut node = tree;
    for step in steps(path)? {
        node = match step {
            Step::Key(k) => node.get(&k)?,
            Step::Index(i) => node.as_seq()?.get(i)?,
        };
    }
    Some(node)
}

pub fn leaf_mut<'a>(tree: &'a mut Node, path: &str) -> Option<&'a mut Node> {
    let mut node = tree;
    for step in steps(path)? {
        node = match step {
            Step::Key(k) => node.get_mut(&k)?,
            Step::Index(i) => node.as_seq_mut()?.get_mut(i)?,
        };
    }
    Some(node)
}
