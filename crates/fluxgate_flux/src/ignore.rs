//! What source-controller leaves out of a Git artifact: `.sourceignore` files and the
//! GitRepository's `spec.ignore`, in gitignore syntax as Flux's matcher reads it.
//!
//! The facts this follows (fluxcd/pkg `sourceignore`, source-controller's archive filter):
//! - `.sourceignore` files are read in every folder (not inside `.git`), each pattern scoped to
//!   its folder; then `spec.ignore`, scoped to the root. Lines starting with `#` and blank
//!   lines are skipped; trailing spaces are trimmed unless escaped (`\ `).
//! - With no pattern at all, the default excludes apply: the VCS files (`.git/`,
//!   `.gitignore`, `.gitmodules`, `.gitattributes`), images and archives (`*.jpg`, `*.jpeg`,
//!   `*.gif`, `*.png`, `*.wmv`, `*.flv`, `*.tar.gz`, `*.zip`), CI files (`.github/`,
//!   `.circleci/`, `.travis.yml`, `.gitlab-ci.yml`, `appveyor.yml`, `.drone.yml`,
//!   `cloudbuild.yaml`, `codeship-services.yml`, `codeship-steps.yml`) and
//!   `**/.goreleaser.yml`, `**/.sops.yaml`, `**/.flux.yaml`. With any pattern, only the VCS
//!   excludes stay, followed by the patterns: `spec.ignore` or a `.sourceignore` replaces the
//!   rest of the defaults.
//! - Each path is matched on its own against the patterns from the last to the first; the
//!   first that matches decides (`!` includes). A pattern without `/` matches any component
//!   of the path (a match on a parent folder excludes everything below it); one with `/` is
//!   matched from its scope's root, `**` spanning folders; a trailing `/` matches folders only.
//!   Components match with Go's `path.Match` (a malformed pattern matches nothing).
//!
//! [`IgnoreFs`] serves the repository as the artifact holds it: ignored files do not exist.

use std::io;
use std::path::{Path, PathBuf};

use fluxgate_kustomize::Fs;

use crate::pathmatch::Glob;

/// The name of the per-folder ignore file.
pub const IGNORE_FILE: &str = ".sourceignore";

const EXCLUDE_VCS: &[&str] = &[".git/", ".gitignore", ".gitmodules", ".gitattributes"];
const EXCLUDE_DEFAULT: &[&str] = &[
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.png",
    "*.wmv",
    "*.flv",
    "*.tar.gz",
    "*.zip",
    ".github/",
    ".circleci/",
    ".travis.yml",
    ".gitlab-ci.yml",
    "appveyor.yml",
    ".drone.yml",
    "cloudbuild.yaml",
    "codeship-services.yml",
    "codeship-steps.yml",
    "**/.goreleaser.yml",
    "**/.sops.yaml",
    "**/.flux.yaml",
];

/// One pattern with the folder (components from the root) it applies in.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pattern {
    scope: Vec<String>,
    parts: Vec<String>,
    /// `parts` compiled (`Err` for a malformed one, which matches nothing).
    globs: Vec<Result<Glob, ()>>,
    include: bool,
    dir_only: bool,
    anchored: bool,
}

impl Pattern {
    fn parse(line: &str, scope: &[String]) -> Pattern {
        let mut p = line;
        let include = p.starts_with('!');
        if include {
            p = &p[1..];
        }
        if !p.ends_with("\\ ") {
            p = p.trim_end_matches(' ');
        }
        let dir_only = p.ends_with('/');
        if dir_only {
            p = &p[..p.len() - 1];
        }
        let parts: Vec<String> = p.split('/').map(str::to_string).collect();
        Pattern {
            scope: scope.to_vec(),
            globs: parts.iter().map(|part| Glob::new(part)).collect(),
            parts,
            include,
            dir_only,
            anchored: p.contains('/'),
        }
    }

    /// `Some(true)` excludes, `Some(false)` includes, `None` says nothing.
    fn decide(&self, path: &[&str], is_dir: bool) -> Option<bool> {
        if path.len() <= self.scope.len() || self.scope.iter().zip(path).any(|(a, b)| a != b) {
            return None;
        }
        let path = &path[self.scope.len()..];
        let hit = if self.anchored {
            self.anchored_match(path, is_dir)
        } else {
            self.name_match(path, is_dir)
        };
        hit.then_some(!self.include)
    }

    fn name_match(&self, path: &[&str], is_dir: bool) -> bool {
        for (i, name) in path.iter().enumerate() {
            if !self.globs[0].as_ref().is_ok_and(|g| g.matches(name)) {
                continue;
            }
            // The last component is the path itself: a folder-only pattern needs a folder.
            return !(self.dir_only && !is_dir && i == path.len() - 1);
        }
        false
    }

    fn anchored_match(&self, mut path: &[&str], is_dir: bool) -> bool {
        let mut matched = false;
        let mut traverse = false;
        for (i, part) in self.parts.iter().enumerate() {
            if part.is_empty() {
                traverse = false;
                continue;
            }
            if part == "**" {
                if i == self.parts.len() - 1 {
                    break;
                }
                traverse = true;
                continue;
            }
            if part.contains("**") || path.is_empty() {
                return false;
            }
            if traverse {
                traverse = false;
                while let Some((first, rest)) = path.split_first() {
                    path = rest;
                    match self.globs[i].as_ref().map(|g| g.matches(first)) {
                        Err(()) => return false,
                        Ok(true) => {
                            matched = true;
                            break;
                        }
                        Ok(false) if path.is_empty() => matched = false,
                        Ok(false) => {}
                    }
                }
            } else {
                if !self.globs[i].as_ref().is_ok_and(|g| g.matches(path[0])) {
                    return false;
                }
                matched = true;
                path = &path[1..];
            }
        }
        matched && !(self.dir_only && !is_dir && path.is_empty())
    }
}

/// The ignore rules of one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceIgnore {
    patterns: Vec<Pattern>,
}

impl SourceIgnore {
    /// The rules for the repository at `root`: its `.sourceignore` files, then `spec_ignore`
    /// (the GitRepository's `spec.ignore`, when it has one).
    #[must_use]
    pub fn load(fs: &dyn Fs, root: &Path, spec_ignore: Option<&str>) -> SourceIgnore {
        let mut user = Vec::new();
        collect_files(fs, root, &mut Vec::new(), &mut user);
        if let Some(text) = spec_ignore {
            user.extend(read_patterns(text, &[]));
        }
        SourceIgnore::from_patterns(user)
    }

    /// No rules at all: the files as committed.
    #[must_use]
    pub fn nothing() -> SourceIgnore {
        SourceIgnore {
            patterns: Vec::new(),
        }
    }

    /// Rules from pattern text alone (scoped to the root), defaults applied as Flux applies
    /// them.
    #[must_use]
    pub fn from_text(text: &str) -> SourceIgnore {
        SourceIgnore::from_patterns(read_patterns(text, &[]))
    }

    fn from_patterns(user: Vec<Pattern>) -> SourceIgnore {
        let mut patterns: Vec<Pattern> =
            EXCLUDE_VCS.iter().map(|p| Pattern::parse(p, &[])).collect();
        if user.is_empty() {
            patterns.extend(EXCLUDE_DEFAULT.iter().map(|p| Pattern::parse(p, &[])));
        } else {
            patterns.extend(user);
        }
        SourceIgnore { patterns }
    }

    /// Whether `rel` (a path relative to the source's root, `/`-separated) is left out.
    #[must_use]
    pub fn is_ignored(&self, rel: &str, is_dir: bool) -> bool {
        let parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
        if parts.is_empty() {
            return false;
        }
        self.patterns
            .iter()
            .rev()
            .find_map(|p| p.decide(&parts, is_dir))
            .unwrap_or(false)
    }
}

fn read_patterns(text: &str, scope: &[String]) -> Vec<Pattern> {
    text.lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| Pattern::parse(l, scope))
        .collect()
}

fn collect_files(fs: &dyn Fs, dir: &Path, scope: &mut Vec<String>, out: &mut Vec<Pattern>) {
    let Ok(entries) = fs.list_dir_kinds(dir) else {
        return;
    };
    let file = dir.join(IGNORE_FILE);
    if entries
        .iter()
        .any(|(e, _)| e.file_name().is_some_and(|n| n == IGNORE_FILE))
        && fs.is_file(&file)
        && let Ok(text) = fs.read(&file)
    {
        out.extend(read_patterns(&text, scope));
    }
    for (entry, is_dir) in entries {
        let Some(name) = entry.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if name != ".git" && is_dir {
            scope.push(name);
            collect_files(fs, &entry, scope, out);
            scope.pop();
        }
    }
}

/// A file system that shows the repository as the source artifact holds it.
pub struct IgnoreFs<'a> {
    inner: &'a dyn Fs,
    root: PathBuf,
    rules: SourceIgnore,
}

impl<'a> IgnoreFs<'a> {
    #[must_use]
    pub fn new(inner: &'a dyn Fs, root: &Path, rules: SourceIgnore) -> IgnoreFs<'a> {
        IgnoreFs {
            inner,
            root: fluxgate_kustomize::normalize(root),
            rules,
        }
    }

    #[must_use]
    pub fn rules(&self) -> &SourceIgnore {
        &self.rules
    }

    fn hidden(&self, path: &Path, is_dir: bool) -> bool {
        let p = fluxgate_kustomize::normalize(path);
        p.strip_prefix(&self.root).is_ok_and(|rel| {
            self.rules
                .is_ignored(&rel.to_string_lossy().replace('\\', "/"), is_dir)
        })
    }
}

impl Fs for IgnoreFs<'_> {
    fn read(&self, path: &Path) -> io::Result<String> {
        if self.hidden(path, false) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "left out of the source artifact (.sourceignore / spec.ignore)",
            ));
        }
        self.inner.read(path)
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        if self.hidden(path, false) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "left out of the source artifact (.sourceignore / spec.ignore)",
            ));
        }
        self.inner.read_bytes(path)
    }

    fn read_shared(&self, path: &Path) -> io::Result<std::sync::Arc<[u8]>> {
        if self.hidden(path, false) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "left out of the source artifact (.sourceignore / spec.ignore)",
            ));
        }
        self.inner.read_shared(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path) && !self.hidden(path, true)
    }

    fn is_file(&self, path: &Path) -> bool {
        self.inner.is_file(path) && !self.hidden(path, false)
    }

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        let mut entries = self.inner.list_dir_kinds(path)?;
        entries.retain(|(p, dir)| !self.hidden(p, *dir));
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_kustomize::MemFs;

    #[test]
    fn binary_reads_pass_through_and_respect_the_rules() {
        let mut inner = MemFs::new();
        inner.insert_bytes("/r/app/logo.bin", vec![0xff_u8, 0x00, 0x7f]);
        inner.insert_bytes("/r/app/skip.bin", vec![1_u8]);
        let fs = IgnoreFs::new(
            &inner,
            Path::new("/r"),
            SourceIgnore::from_text("skip.bin\n"),
        );
        assert_eq!(
            fs.read_bytes(Path::new("/r/app/logo.bin")).ok(),
            Some(vec![0xff, 0x00, 0x7f])
        );
        assert!(fs.read_bytes(Path::new("/r/app/skip.bin")).is_err());
    }

    #[test]
    fn defaults_apply_without_patterns() {
        let r = SourceIgnore::from_text("");
        assert!(r.is_ignored(".git/config", false));
        assert!(r.is_ignored(".github/workflows/ci.yaml", false));
        assert!(r.is_ignored("docs/logo.png", false));
        assert!(r.is_ignored("clusters/prod/.sops.yaml", false));
        assert!(r.is_ignored("a/b/cloudbuild.yaml", false));
        assert!(!r.is_ignored("clusters/prod/app.yaml", false));
        // Hidden files are not excluded as such.
        assert!(!r.is_ignored(".taskfiles/x.yaml", false));
    }

    #[test]
    fn any_pattern_replaces_the_defaults_but_not_vcs() {
        let r = SourceIgnore::from_text("# comment\n\n/docs/\n");
        assert!(r.is_ignored(".git/HEAD", false));
        assert!(r.is_ignored(".gitignore", false));
        assert!(!r.is_ignored(".github/workflows/ci.yaml", false));
        assert!(!r.is_ignored("logo.png", false));
        assert!(r.is_ignored("docs/a.yaml", false));
        assert!(!r.is_ignored("x/docs/a.yaml", false));
    }

    #[test]
    fn gitignore_forms() {
        let r = SourceIgnore::from_text(
            "/*\n!/kubernetes\n*.md\nbuild/\n**/secret-*.yaml\nkubernetes/**/test\nlogs/**\n",
        );
        assert!(r.is_ignored("README.yaml", false));
        assert!(r.is_ignored("scripts", true));
        assert!(!r.is_ignored("kubernetes/apps/a.yaml", false));
        assert!(r.is_ignored("kubernetes/apps/README.md", false));
        // A folder-only pattern: a file of that name stays, what is below the folder goes.
        assert!(!r.is_ignored("kubernetes/build", false));
        assert!(r.is_ignored("kubernetes/build/x.yaml", false));
        assert!(r.is_ignored("kubernetes/a/b/secret-x.yaml", false));
        assert!(r.is_ignored("kubernetes/a/b/test", true));
        assert!(r.is_ignored("kubernetes/test/x.yaml", false));
        // A pattern with `/` is anchored at its scope's root.
        assert!(r.is_ignored("logs/x", false));
        assert!(!r.is_ignored("kubernetes/logs/x", false));
        // Flux's matcher, unlike git, takes a trailing `**` to match the folder itself too.
        assert!(r.is_ignored("logs", true));
    }

    #[test]
    fn sourceignore_files_are_scoped_to_their_folder_and_spec_comes_last() {
        let mut fs = MemFs::new();
        fs.insert("/r/.sourceignore", "*.txt\n");
        fs.insert("/r/apps/.sourceignore", "draft.yaml\n/local/\n");
        fs.insert("/r/apps/draft.yaml", "a: 1");
        fs.insert("/r/apps/app.yaml", "a: 1");
        fs.insert("/r/apps/local/x.yaml", "a: 1");
        fs.insert("/r/draft.yaml", "a: 1");
        fs.insert("/r/local/x.yaml", "a: 1");
        fs.insert("/r/notes.txt", "a");
        let r = SourceIgnore::load(&fs, Path::new("/r"), Some("!notes.txt\n"));
        assert!(r.is_ignored("apps/draft.yaml", false));
        assert!(!r.is_ignored("draft.yaml", false));
        assert!(r.is_ignored("apps/local/x.yaml", false));
        assert!(!r.is_ignored("local/x.yaml", false));
        // `spec.ignore` comes last, so its `!notes.txt` wins everywhere.
        assert!(!r.is_ignored("apps/notes.txt", false));
        assert!(!r.is_ignored("notes.txt", false));
        assert!(r.is_ignored("apps/other.txt", false));

        let ifs = IgnoreFs::new(&fs, Path::new("/r"), r);
        let listed = ifs.list_dir(Path::new("/r/apps")).expect("listed");
        assert_eq!(
            listed,
            [
                PathBuf::from("/r/apps/.sourceignore"),
                PathBuf::from("/r/apps/app.yaml")
            ]
        );
        assert!(ifs.read(Path::new("/r/apps/draft.yaml")).is_err());
        assert!(!ifs.is_dir(Path::new("/r/apps/local")));
        assert!(ifs.is_file(Path::new("/r/notes.txt")));
    }
}
