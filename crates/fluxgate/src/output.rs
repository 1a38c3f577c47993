//! The only place that writes to stdout: everything goes through [`emit`] so that a closed
//! pipe ends the run quietly.

use std::io::Write;

/// The output formats shared by the smaller commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Writes `text` to stdout.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    lock.write_all(text.as_bytes())?;
    lock.flush()?;
    Ok(())
}

/// Whether an error (anywhere in its chain) is a broken pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
