//! Chart templates parsed once per process. A chart's templates are the same text for every
//! release that installs it (app-template: hundreds in one repository; Cilium: once per
//! environment), and parsing them is a third of a render. The memo is keyed by the template's
//! name and its whole text, so a changed file (a mutant, another version) is parsed anew; it
//! holds only what parsed, and stops growing at [`MAX_TEXT`] bytes of template text.
//!
//! Every set these trees join has Helm's function table, whose names never change, so a text
//! parses the same way into each.

use foldhash::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use fluxgate_gotemplate::{Error, Parsed, Templates};

/// Upper bound on the template text the memo keeps.
const MAX_TEXT: usize = 64 << 20;

#[derive(Default)]
struct Memo {
    /// Template name -> the texts parsed under it.
    by_name: HashMap<String, Vec<(Arc<str>, Parsed)>>,
    bytes: usize,
}

static MEMO: LazyLock<Mutex<Memo>> = LazyLock::new(Mutex::default);

/// `text` parsed as the template `name` against `set`'s functions, from the memo when it was
/// parsed before.
/// A text the memo holds is known by its address first (every detached copy of a loaded chart
/// shares its texts), then compared whole.
pub(crate) fn parse(set: &Templates, name: &str, text: &Arc<str>) -> Result<Parsed, Error> {
    // A poisoned memo still holds only finished parses.
    let memo = || MEMO.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = memo().by_name.get(name).and_then(|texts| {
        texts
            .iter()
            .find(|(t, _)| Arc::ptr_eq(t, text))
            .or_else(|| texts.iter().find(|(t, _)| t == text))
    }) {
        return Ok(found.1.clone());
    }
    let parsed = set.parse_shared(name, text)?;
    let mut m = memo();
    if m.bytes + text.len() <= MAX_TEXT {
        m.bytes += text.len();
        m.by_name
            .entry(name.to_string())
            .or_default()
            .push((Arc::clone(text), parsed.clone()));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> Templates {
        Templates::new(fluxgate_gotemplate::Funcs::new())
    }

    #[test]
    fn parsed_trees_cross_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Parsed>();
    }

    #[test]
    fn a_changed_text_is_parsed_anew() {
        let a = parse(&set(), "memo-test/a.tpl", &Arc::from("one {{ 1 }}")).unwrap();
        let b = parse(&set(), "memo-test/a.tpl", &Arc::from("two {{ 2 }}")).unwrap();
        let mut s = set();
        s.add(&a);
        assert_eq!(
            s.execute("memo-test/a.tpl", &fluxgate_gotemplate::Value::Nil)
                .unwrap(),
            "one 1"
        );
        s.add(&b);
        assert_eq!(
            s.execute("memo-test/a.tpl", &fluxgate_gotemplate::Value::Nil)
                .unwrap(),
            "two 2"
        );
        // The first text again comes from the memo, and executes as before.
        let again = parse(&set(), "memo-test/a.tpl", &Arc::from("one {{ 1 }}")).unwrap();
        s.add(&again);
        assert_eq!(
            s.execute("memo-test/a.tpl", &fluxgate_gotemplate::Value::Nil)
                .unwrap(),
            "one 1"
        );
    }

    #[test]
    fn parse_errors_are_not_kept() {
        assert!(parse(&set(), "memo-test/bad.tpl", &Arc::from("{{ if }}")).is_err());
        assert!(parse(&set(), "memo-test/bad.tpl", &Arc::from("{{ if }}")).is_err());
    }
}
