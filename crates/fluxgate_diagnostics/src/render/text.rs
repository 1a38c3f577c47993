use std::fmt::Write as _;

use crate::{Diagnostic, Location};

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

/// rustc-style text: a header line, the location, the source line with a caret, related
/// locations, notes and help.
pub fn render_text(out: &mut String, d: &Diagnostic, sources: &dyn SourceLookup) {
    let env = d
        .environment_label()
        .map(|e| format!(" [{e}]"))
        .unwrap_or_default();
    let _ = writeln!(out, "{}[{}]{}: {}", d.severity, d.rule, env, d.message);
    if let Some(loc) = &d.location {
        snippet(out, loc, None, sources);
    }
    for r in &d.related {
        snippet(out, &r.location, Some(&r.message), sources);
    }
    for n in &d.notes {
        let _ = writeln!(out, "   = note: {n}");
    }
    if let Some(h) = &d.help {
        let _ = writeln!(out, "   = help: {h}");
    }
    if !d.requirements.is_empty() {
        let _ = writeln!(out, "   = requirements: {}", d.requirements.join(", "));
    }
}

fn snippet(out: &mut String, loc: &Location, label: Option<&str>, sources: &dyn SourceLookup) {
    let arrow = if label.is_some() { ":::" } else { "-->" };
    let _ = writeln!(out, "  {arrow} {loc}");
    if loc.line == 0 {
        if let Some(label) = label {
            let _ = writeln!(out, "   = {label}");
        }
        return;
    }
    let Some(text) = sources.source(&loc.file) else {
        if let Some(label) = label {
            let _ = writeln!(out, "   = {label}");
        }
        return;
    };
    let Some(line) = text.lines().nth(loc.line as usize - 1) else {
        return;
    };
    let line = crate::redact::mask_encrypted_line(line);
    let (line, caret_at) = cut_long_line(&line, (loc.column.max(1) - 1) as usize);
    let num = loc.line.to_string();
    let pad = " ".repeat(num.len());
    let prefix: String = line
        .chars()
        .take(caret_at)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let width = line
        .chars()
        .skip(caret_at)
        .take_while(|c| !c.is_whitespace())
        .count()
        .max(1);
    let _ = writeln!(out, " {pad} |");
    let _ = writeln!(out, " {num} | {line}");
    let _ = writeln!(
        out,
        " {pad} | {prefix}{}{}",
        "^".repeat(width),
        label.map(|l| format!(" {l}")).unwrap_or_default()
    );
}

/// The widest source line shown, in characters: a minified JSON dashboard or a long
/// annotation is cut around the span, with `…` where text was left out.
const MAX_LINE: usize = 120;

/// `line` cut to [`MAX_LINE`] characters around the character column `caret`, and the caret's
/// column in what is returned.
fn cut_long_line(line: &str, caret: usize) -> (String, usize) {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= MAX_LINE {
        return (line.to_string(), caret);
    }
    let caret = caret.min(chars.len());
    // Some context before the span, the rest after it.
    let start = caret.saturating_sub(MAX_LINE / 4);
    let end = (start + MAX_LINE).min(chars.len());
    let start = end.saturating_sub(MAX_LINE).min(start);
    let mut out = String::new();
    let mut at = caret - start;
    if start > 0 {
        out.push('…');
        at += 1;
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    (out, at)
}

#[cfg(test)]
mod tests {
    use super::*;
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
            .find(|l| l.starts_with(" 1 | "))
            .expect("the source line");
        let caret = out
            .lines()
            .find(|l| l.contains('^'))
            .expect("the caret line");
        assert!(shown.chars().count() <= 130, "{shown}");
        assert!(shown.contains("…") && shown.ends_with('…'), "{shown}");
        let col = |l: &str, pat: char| l.chars().position(|c| c == pat);
        assert_eq!(col(shown, 'T'), col(caret, '^'), "{shown}\n{caret}");
        // Short lines are shown whole.
        assert_eq!(cut_long_line("abc", 1), ("abc".to_string(), 1));
    }

    #[test]
    fn shows_source_line_with_caret() {
        let d = Diagnostic::new("render", Severity::Error, "bad").at(Location::new("f.yaml", 2, 5));
        let src = |_: &str| Some(Arc::<str>::from("a: 1\nb:  oops\n"));
        let mut out = String::new();
        render_text(&mut out, &d, &src);
        assert!(out.contains(" 2 | b:  oops"), "{out}");
        assert!(out.contains("   |     ^^^^"), "{out}");
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
        assert!(out.contains(" 1 | token: ENC[********]"), "{out}");
        assert!(!out.contains("c2VjcmV0"), "{out}");
    }
}
