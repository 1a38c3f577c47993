//! What the fetch tests share: chart archives and index.yaml files built in memory, temporary
//! folders, git repositories made with the git command. The loopback HTTP server is fluxgate_testkit's.

#![allow(dead_code)] // Each test binary uses its own part of this module.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A chart archive: `<name>/Chart.yaml` and `<name>/values.yaml`.
pub fn chart(name: &str, version: &str, values: &str) -> Vec<u8> {
    let chart_yaml = format!("apiVersion: v2\nname: {name}\nversion: {version}\n");
    tgz(&[
        (&format!("{name}/Chart.yaml"), 'f', &chart_yaml),
        (&format!("{name}/values.yaml"), 'f', values),
    ])
}

/// A gzipped tar of `(path, kind, text)`; kind `f` file, `l` symlink to text. Paths are
/// written raw (`../x` included).
pub fn tgz(members: &[(&str, char, &str)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (path, kind, text) in members {
        let mut h = tar::Header::new_old();
        {
            let name = &mut h.as_old_mut().name;
            let n = path.len().min(name.len());
            name[..n].copy_from_slice(&path.as_bytes()[..n]);
        }
        h.set_mode(0o644);
        let body: &[u8] = if *kind == 'l' {
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_link_name(text).expect("link");
            h.set_size(0);
            &[]
        } else {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(text.len() as u64);
            text.as_bytes()
        };
        h.set_cksum();
        tar.append(&h, body).expect("append");
    }
    tar.into_inner().expect("tar").finish().expect("gzip")
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    fluxgate_fetch::Digest::of(bytes).hex().to_string()
}

/// An index.yaml as `helm repo index` writes it, for `(name, version, file, digest)`.
pub fn index_yaml(entries: &[(&str, &str, &str, &str)]) -> String {
    let mut out = String::from("apiVersion: v1\nentries:\n");
    let mut names: Vec<&str> = entries.iter().map(|e| e.0).collect();
    names.dedup();
    for name in names {
        out.push_str(&format!("  {name}:\n"));
        for (n, version, file, digest) in entries {
            if *n != name {
                continue;
            }
            out.push_str(&format!(
                "  - apiVersion: v2\n    created: \"2026-01-01T00:00:00Z\"\n    digest: {digest}\n    name: {n}\n    urls:\n    - {file}\n    version: {version}\n"
            ));
        }
    }
    out.push_str("generated: \"2026-01-01T00:00:00Z\"\n");
    out
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A fresh folder under the system temp dir, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "fluxgate-fetch-it-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every file under `dir`, relative, sorted.
pub fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// `git` in `dir` with a fixed identity and default branch; `None` (reported as missing for
/// `test`, which fails under CI) when git cannot run.
pub fn git(test: &str, dir: &std::path::Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output();
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => panic!("git {args:?}: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            fluxgate_testkit::missing(test, &format!("the git command: {e}"));
            None
        }
    }
}

/// Writes `text` to `path` below `dir`, making its folders.
pub fn write(dir: &std::path::Path, path: &str, text: &str) {
    let p = dir.join(path);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}
