use std::path::{Path, PathBuf};

use fluxgate_kustomize::Fs;
use rayon::prelude::*;

/// Every `.yaml`/`.yml` file below `dir`, sorted, skipping hidden directories (`.git`,
/// `.github`), `node_modules` and `target`. Symlinks are not followed.
#[must_use]
#[allow(clippy::case_sensitive_file_extension_comparisons)] // Flux reads `.yaml`/`.yml` case-sensitively
pub fn yaml_files(fs: &dyn Fs, dir: &Path) -> Vec<PathBuf> {
    files_where(fs, dir, |name| {
        name.ends_with(".yaml") || name.ends_with(".yml")
    })
}

/// Every file below `dir` whose name `keep` accepts, sorted, with the same folders skipped as
/// [`yaml_files`], read through `fs` (its confinement and overlay included). Folders are
/// listed in parallel (one task per folder): the walk is a serial chain of system calls
/// otherwise.
pub(crate) fn files_where(
    fs: &dyn Fs,
    dir: &Path,
    keep: impl Fn(&str) -> bool + Sync,
) -> Vec<PathBuf> {
    let mut out = files_below(fs, dir, &keep);
    // Each path is `dir` joined with names: `Path`'s order without parsing them.
    out.sort_unstable_by(|a, b| fluxgate_kustomize::normal_order(a, b));
    out
}

/// The files of `dir` that `keep` accepts, then those of its folders, walked in parallel.
fn files_below(fs: &dyn Fs, dir: &Path, keep: &(dyn Fn(&str) -> bool + Sync)) -> Vec<PathBuf> {
    let Ok(entries) = fs.list_dir_kinds(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut folders = Vec::new();
    for (path, is_dir) in entries {
        let Some(name) = path.file_name() else {
            continue;
        };
        let name = name.to_string_lossy();
        if fs.is_symlink(&path) {
            continue;
        }
        if is_dir {
            if !name.starts_with('.') && name != "node_modules" && name != "target" {
                folders.push(path);
            }
        } else if keep(&name) && fs.is_file(&path) {
            out.push(path);
        }
    }
    let below: Vec<Vec<PathBuf>> = folders
        .par_iter()
        .map(|d| files_below(fs, d, keep))
        .collect();
    out.extend(below.into_iter().flatten());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_hidden_and_build_folders() {
        let dir = std::env::temp_dir().join(format!("fg-walk-{}", std::process::id()));
        for sub in ["a", ".git", "node_modules", "target"] {
            std::fs::create_dir_all(dir.join(sub)).expect("temp dir");
            std::fs::write(dir.join(sub).join("x.yaml"), "a: 1").expect("write");
        }
        std::fs::write(dir.join("a/ansible.cfg"), "").expect("write");
        std::fs::write(dir.join("a/X.YAML"), "").expect("write");
        let fs = fluxgate_kustomize::RealFs::new(&dir);
        let found = yaml_files(&fs, &dir);
        assert_eq!(found, vec![dir.join("a/x.yaml")]);
        assert_eq!(
            files_where(&fs, &dir, |n| n == "ansible.cfg"),
            vec![dir.join("a/ansible.cfg")]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A symlink is not walked: not to a file or a folder outside the repository (a link to
    /// `/etc` or to `~/.kube`), nor to a file inside it (it would be indexed twice; a link is
    /// read when something names it).
    #[cfg(unix)]
    #[test]
    fn does_not_follow_symlinks() {
        let base = std::env::temp_dir().join(format!("fg-walk-link-{}", std::process::id()));
        let (root, outside) = (base.join("repo"), base.join("outside"));
        std::fs::create_dir_all(root.join("apps")).expect("temp dir");
        std::fs::create_dir_all(&outside).expect("temp dir");
        std::fs::write(root.join("apps/cm.yaml"), "a: 1").expect("write");
        std::fs::write(outside.join("secret.yaml"), "token: x").expect("write");
        let link = |to: &Path, at: &str| std::os::unix::fs::symlink(to, root.join(at));
        link(&outside, "linked-dir").expect("link");
        link(&outside.join("secret.yaml"), "apps/linked.yaml").expect("link");
        link(&root.join("apps/cm.yaml"), "apps/alias.yaml").expect("link");
        let fs = fluxgate_kustomize::RealFs::new(&root);
        let found = yaml_files(&fs, &root);
        let _ = std::fs::remove_dir_all(&base);
        assert_eq!(found, vec![root.join("apps/cm.yaml")]);
    }
}
