use annotate_snippets::{AnnotationKind, Element, Level, Origin, Renderer, Snippet};

use crate::{Diagnostic, Location, Severity};

/// Gives the text of a repository file, so that the renderer can show the source line.
///
/// The text is what users will see: a lookup for a repository masks the values of Secrets
/// (see [`crate::redact`]) before handing it over. The renderer itself masks what is
/// recognisably encrypted (SOPS `ENC[...]`, Ansible Vault payloads) on every line it shows,
/// whatever the lookup did.
pub trait SourceLookup {
    fn source(&self, file: &str) -> Option<std::sync::Arc<str>>;
}

impl<F: Fn(&str) -> Option<std::sync::Arc<str>>> SourceLookup for F {
    fn source(&self, file: &str) -> Option<std::sync::Arc<str>> {
        self(file)
    }
}

/// rustc-style text, without colour: see [`render_text_styled`].
pub fn render_text(out: &mut String, d: &Diagnostic, sources: &dyn SourceLookup) {
    render_text_styled(out, d, sources, false);
}

/// rustc-style text through annotate-snippets: a header line (`severity[rule]: [env] message`),
/// the primary location with its source line and a caret under the value, each related location
/// with its label, then notes, help and requirements. `styled` adds ANSI colour. A source line
/// is shown with whatever is recognisably encrypted masked; a location whose text cannot be
/// shown is printed as `file:line:col` alone, its label as a note.
pub fn render_text_styled(
    out: &mut String,
    d: &Diagnostic,
    sources: &dyn SourceLookup,
    styled: bool,
) {
    let env = d
        .environment_label()
        .map(|e| format!("[{e}] "))
        .unwrap_or_default();
    let level = level(d.severity);
    let lines: Vec<Option<String>> = std::iter::once(d.location.as_ref())
        .flatten()
        .chain(d.related.iter().map(|r| &r.location))
        .map(|loc| source_line(loc, sources))
        .collect();
    let mut shown = lines.iter();
    let mut elements: Vec<Element<'_>> = Vec::new();
    if let Some(loc) = &d.location {
        elements.push(element(loc, shown.next().and_then(Option::as_deref), None));
    }
    let mut unshown_labels = Vec::new();
    for r in &d.related {
        let line = shown.next().and_then(Option::as_deref);
        if line.is_none() {
            unshown_labels.push(format!("{}: {}", r.location, r.message));
        }
        elements.push(element(&r.location, line, Some(&r.message)));
    }
    for label in &unshown_labels {
        elements.push(Level::NOTE.message(label.as_str()).into());
    }
    for n in &d.notes {
        elements.push(Level::NOTE.message(n.as_str()).into());
    }
    if let Some(h) = &d.help {
        elements.push(Level::HELP.message(h.as_str()).into());
    }
    let requirements = d.requirements.join(", ");
    if !d.requirements.is_empty() {
        elements.push(
            Level::NOTE
                .with_name("requirements")
                .message(requirements.as_str())
                .into(),
        );
    }
    let title = format!("{env}{}", d.message);
    let report = [level
        .primary_title(title.as_str())
        .id(d.rule.as_str())
        .elements(elements)];
    let renderer = if styled {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    out.push_str(&renderer.render(&report));
    out.push('\n');
}

fn level(s: Severity) -> Level<'static> {
    match s {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Note => Level::NOTE,
    }
}

/// The source line at `loc`, encrypted values masked; `None` when it cannot be shown.
fn source_line(loc: &Location, sources: &dyn SourceLookup) -> Option<String> {
    if loc.line == 0 {
        return None;
    }
    let text = sources.source(&loc.file)?;
    let line = text.lines().nth(loc.line as usize - 1)?;
    Some(crate::redact::mask_encrypted_line(line).into_owned())
}

/// The widest caret, in characters.
const MAX_SPAN: usize = 60;

/// One location: its source line with a caret under the value that starts at the column (to
/// the next whitespace), or the bare `file:line:col` when there is no line to show.
fn element<'a>(loc: &'a Location, line: Option<&'a str>, label: Option<&'a str>) -> Element<'a> {
    let Some(line) = line else {
        let origin = Origin::path(&*loc.file);
        return if loc.line == 0 {
            origin.into()
        } else {
            origin
                .line(loc.line as usize)
                .char_column(loc.column.max(1) as usize)
                .into()
        };
    };
    let start = line
        .char_indices()
        .nth((loc.column.max(1) - 1) as usize)
        .map_or(line.len(), |(i, _)| i);
    // The value runs to the next whitespace, but no further than MAX_SPAN characters: in a
    // minified JSON dashboard that would be the rest of the line.
    let rest = &line[start..];
    let end = start
        + rest
            .char_indices()
            .take(MAX_SPAN)
            .find(|(_, c)| c.is_whitespace())
            .or_else(|| rest.char_indices().nth(MAX_SPAN))
            .map_or(rest.len(), |(n, _)| n);
    // An empty span (the column at the end of the line) still gets one caret.
    let end = if end == start {
        line[start..]
            .chars()
            .next()
            .map_or(start, |c| start + c.len_utf8())
    } else {
        end
    };
    let kind = if label.is_some() {
        AnnotationKind::Context
    } else {
        AnnotationKind::Primary
    };
    Snippet::source(line)
        .line_start(loc.line as usize)
        .path(&*loc.file)
        .annotation(kind.span(start..end).label(label))
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Annotate;
    use crate::Severity;
    use std::sync::Arc;

    #[test]
    fn long_lines_are_cut_around_the_span_with_the_caret_aligned() {
        let long = format!("{}TARGET{}", "a".repeat(300), "b".repeat(300));
        let d =
            Diagnostic::new("render", Severity::Error, "bad").at(Location::new("f.json", 1, 301));
        let text = format!("{long}\n");
        let src = move |_: &str| Some(Arc::<str>::from(text.as_str()));
        let mut out = String::new();
        render_text(&mut out, &d, &src);
        let shown = out
            .lines()
            .find(|l| l.starts_with("1 | "))
            .expect("the source line");
        let caret = out
            .lines()
            .find(|l| l.contains('^'))
            .expect("the caret line");
        assert!(shown.chars().count() <= 150, "{shown}");
        assert!(shown.contains("...") && shown.ends_with("..."), "{shown}");
        let col = |l: &str, pat: char| l.chars().position(|c| c == pat);
        assert_eq!(col(shown, 'T'), col(caret, '^'), "{shown}\n{caret}");
        // The location names the real column, not the one in the cut line.
        assert!(out.contains("--> f.json:1:301"), "{out}");
    }

    #[test]
    fn shows_source_line_with_caret() {
        let d = Diagnostic::new("render", Severity::Error, "bad").at(Location::new("f.yaml", 2, 5));
        let src = |_: &str| Some(Arc::<str>::from("a: 1\nb:  oops\n"));
        let mut out = String::new();
        render_text(&mut out, &d, &src);
        assert!(out.contains("2 | b:  oops"), "{out}");
        assert!(out.contains("  |     ^^^^"), "{out}");
    }

    #[test]
    fn encrypted_values_are_masked_whatever_the_lookup_gives() {
        let d = Diagnostic::new("render", Severity::Error, "bad").at(Location::new("f.yaml", 1, 8));
        let src = |_: &str| {
            Some(Arc::<str>::from(
                "token: ENC[AES256_GCM,data:c2VjcmV0,type:str]\n",
            ))
        };
        let mut out = String::new();
        render_text(&mut out, &d, &src);
        assert!(out.contains("1 | token: ENC[********]"), "{out}");
        assert!(!out.contains("c2VjcmV0"), "{out}");
    }

    #[test]
    fn a_location_without_its_text_is_named_and_its_label_kept() {
        let d = Diagnostic::new("render", Severity::Error, "bad")
            .at(Location::new("a.yaml", 2, 3))
            .related(Location::new("gone.yaml", 7, 1), "consumed here")
            .in_env("prod");
        let src = |f: &str| (f == "a.yaml").then(|| Arc::<str>::from("x: 1\ny: 2\n"));
        let mut out = String::new();
        render_text(&mut out, &d, &src);
        assert!(out.starts_with("error[render]: [prod] bad\n"), "{out}");
        assert!(out.contains("--> a.yaml:2:3"), "{out}");
        assert!(out.contains("::: gone.yaml:7:1"), "{out}");
        assert!(
            out.contains("= note: gone.yaml:7:1: consumed here"),
            "{out}"
        );
    }
}
