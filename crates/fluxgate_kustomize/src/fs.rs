//! The engine's view of the filesystem: [`fluxgate_fs`]'s, plus the parse of a file as
//! Kubernetes YAML, derived once per file and shown name when the filesystem has a memo
//! ([`CachedFs`]).

use std::io;
use std::path::Path;
use std::sync::Arc;

pub use fluxgate_fs::{
    CachedFs, Fs, MemFs, Memo, Overlay, RealFs, RecordingFs, SourceCache, normal_order, normalize,
};

use fluxgate_diagnostics::Diagnostic;
use fluxgate_yaml::{Node, Schema, Stream, parse_stream};

/// A file read and parsed ([`parse`]).
#[derive(Debug)]
pub struct Parsed {
    pub text: String,
    pub stream: Stream,
}

impl Parsed {
    /// The documents and the parse diagnostics: taken when nothing else holds them, cloned
    /// when a cache does.
    #[must_use]
    pub fn into_parts(self: Arc<Parsed>) -> (String, Vec<Node>, Vec<Diagnostic>) {
        match Arc::try_unwrap(self) {
            Ok(p) => (p.text, p.stream.docs, p.stream.diagnostics),
            Err(shared) => (
                shared.text.clone(),
                shared.stream.docs.clone(),
                shared.stream.diagnostics.clone(),
            ),
        }
    }
}

/// `path` read and parsed as Kubernetes YAML, its locations in `file` (the name shown to
/// users): through the filesystem's [`Memo`] when it has one, so a file read again (a base
/// many overlays use) is parsed once.
pub fn parse(fs: &dyn Fs, path: &Path, file: &str) -> io::Result<Arc<Parsed>> {
    let make = || {
        let text = fs.read(path)?;
        let stream = parse_stream(file, &text, Schema::Kube);
        Ok(Arc::new(Parsed { text, stream }))
    };
    match fs.memo() {
        Some(memo) => memo.get_or(path, file, make),
        None => make(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn cachedfs_parses_a_file_read_again_once() {
        let mut mem = MemFs::new();
        mem.insert("/r/a.yaml", "a: 1\n---\nb: [2]\n");
        let fs = CachedFs::new(RecordingFs::new(mem));
        let first = parse(&fs, Path::new("/r/a.yaml"), "a.yaml").unwrap();
        let (text, docs, diags) = first.into_parts();
        assert_eq!(
            (text.as_str(), docs.len(), diags.len()),
            ("a: 1\n---\nb: [2]\n", 2, 0)
        );
        for _ in 0..3 {
            let again = parse(&fs, Path::new("/r/a.yaml"), "a.yaml").unwrap();
            assert_eq!(again.into_parts().1, docs);
        }
        // The first read is not kept, the second is, the later ones are served from memory.
        assert_eq!(fs.inner().reads(), 2);
        // Another shown name is another parse (its locations differ).
        let other = parse(&fs, Path::new("/r/a.yaml"), "x/a.yaml").unwrap();
        assert_eq!(other.stream.docs[0].loc.file.as_ref(), "x/a.yaml");
        assert!(parse(&fs, Path::new("/r/missing.yaml"), "missing.yaml").is_err());
        assert!(fs.is_file(Path::new("/r/a.yaml")) && !fs.is_dir(Path::new("/r/a.yaml")));
        assert!(fs.is_dir(Path::new("/r")) && !fs.is_file(Path::new("/r")));
    }
}
