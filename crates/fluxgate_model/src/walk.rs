use std::path::{Path, PathBuf};

/// Every `.yaml`/`.yml` file below `dir`, sorted, skipping hidden directories (`.git`,
/// `.github`), `node_modules` and `target`. Symlinks are not followed.
#[must_use]
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if !name.starts_with('.') && name != "node_modules" && name != "target" {
                    stack.push(path);
                }
            } else if ft.is_file() && (name.ends_with(".yaml") || name.ends_with(".yml")) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
