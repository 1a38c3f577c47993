//! The only place that writes: everything goes through [`emit`] (stdout) and [`warn`]
//! (stderr) so that a closed pipe ends the run quietly, and so that no secret value is
//! printed: once a command has read a repository it calls [`mask_with`], and from then on
//! every byte passes through that redactor, whatever the command forgot to mask itself.

use std::io::Write;
use std::sync::OnceLock;

use fluxgate_diagnostics::redact::Redactor;

/// The output formats shared by the smaller commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

static REDACTOR: OnceLock<Redactor> = OnceLock::new();

/// Masks every later output with `redactor` (its secret values, and whatever is encrypted).
/// The first call wins: a run reads one repository.
pub fn mask_with(redactor: Redactor) {
    let _ = REDACTOR.set(redactor);
}

fn masked(text: &str) -> std::borrow::Cow<'_, str> {
    match REDACTOR.get() {
        Some(r) => r.redact(text),
        None => std::borrow::Cow::Borrowed(text),
    }
}

/// Writes `text` to stdout.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    lock.write_all(masked(text).as_bytes())?;
    lock.flush()?;
    Ok(())
}

/// Writes one line to stderr.
pub fn warn(line: &str) {
    eprintln!("{}", masked(line));
}

/// Whether an error (anywhere in its chain) is a broken pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
