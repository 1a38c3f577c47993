//! Unpacking a chart archive without trusting it. An archive is checked whole before anything
//! is written: a member that is absolute, climbs out with `..`, is a symlink, a hard link or a
//! device, or an archive past the member count or the unpacked size, is refused, and then
//! nothing at all is written. What passes is unpacked into a fresh folder beside the target
//! and renamed into place.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::error::Error;

/// Bounds on one archive.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Unpacked bytes, all members together.
    pub max_total: u64,
    pub max_members: usize,
}

impl Default for Limits {
    /// Far above any real chart (the largest public charts unpack to a few MiB and a few
    /// hundred files).
    fn default() -> Self {
        Limits {
            max_total: 256 * 1024 * 1024,
            max_members: 20_000,
        }
    }
}

/// One member that passed the checks: its relative path and whether it is a folder.
struct Member {
    path: PathBuf,
    dir: bool,
}

/// Checks every member of the gzipped tar `bytes`; `what` names the archive in errors.
pub fn check_tgz(bytes: &[u8], what: &str, limits: Limits) -> Result<(), Error> {
    walk(bytes, what, limits, &mut |_, _| Ok(()))
}

/// Unpacks the gzipped tar `bytes` into `dest` (which must not exist yet; its parent is
/// created). Refused archives write nothing.
pub fn extract_tgz(bytes: &[u8], dest: &Path, what: &str, limits: Limits) -> Result<(), Error> {
    check_tgz(bytes, what, limits)?;
    let parent = dest.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let staging = parent.join(format!(
        ".{}.{}.partial",
        dest.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir(&staging).map_err(|e| Error::io(&staging, e))?;
    let written = walk(bytes, what, limits, &mut |member, data| {
        let target = staging.join(&member.path);
        if member.dir {
            return std::fs::create_dir_all(&target).map_err(|e| Error::io(&target, e));
        }
        if let Some(p) = target.parent() {
            std::fs::create_dir_all(p).map_err(|e| Error::io(p, e))?;
        }
        std::fs::write(&target, data).map_err(|e| Error::io(&target, e))
    });
    let done =
        written.and_then(|()| std::fs::rename(&staging, dest).map_err(|e| Error::io(dest, e)));
    if done.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    done
}

/// What [`walk`] does with each member that passed the checks.
type Visit<'a> = dyn FnMut(&Member, &[u8]) -> Result<(), Error> + 'a;

fn walk(bytes: &[u8], what: &str, limits: Limits, visit: &mut Visit<'_>) -> Result<(), Error> {
    let refuse = |message: String| Error::UnsafeArchive {
        what: what.to_string(),
        message,
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let entries = archive
        .entries()
        .map_err(|e| refuse(format!("not a gzipped tar: {e}")))?;
    let mut total: u64 = 0;
    let mut count = 0usize;
    let mut data = Vec::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| refuse(format!("unreadable member: {e}")))?;
        count += 1;
        if count > limits.max_members {
            return Err(refuse(format!("more than {} members", limits.max_members)));
        }
        let raw = entry
            .path()
            .map_err(|e| refuse(format!("unreadable member name: {e}")))?
            .into_owned();
        let shown = raw.display().to_string();
        let kind = entry.header().entry_type();
        let dir = match kind {
            tar::EntryType::Regular | tar::EntryType::Continuous => false,
            tar::EntryType::Directory => true,
            // Metadata the tar reader has already applied to the member that follows.
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => continue,
            tar::EntryType::Symlink | tar::EntryType::Link => {
                return Err(refuse(format!(
                    "`{shown}` is a {} (a link could point outside the cache)",
                    if kind == tar::EntryType::Symlink {
                        "symlink"
                    } else {
                        "hard link"
                    }
                )));
            }
            other => {
                return Err(refuse(format!(
                    "`{shown}` is not a file or a folder ({other:?})"
                )));
            }
        };
        let mut path = PathBuf::new();
        for c in raw.components() {
            match c {
                Component::Normal(part) => path.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(refuse(format!("`{shown}` climbs out with `..`")));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refuse(format!("`{shown}` is an absolute path")));
                }
            }
        }
        if path.as_os_str().is_empty() {
            continue;
        }
        let room = limits.max_total.saturating_sub(total);
        data.clear();
        entry
            .by_ref()
            .take(room.saturating_add(1))
            .read_to_end(&mut data)
            .map_err(|e| refuse(format!("`{shown}` is unreadable: {e}")))?;
        total = total.saturating_add(data.len() as u64);
        if total > limits.max_total {
            return Err(refuse(format!(
                "it unpacks to more than {} bytes",
                limits.max_total
            )));
        }
        visit(&Member { path, dir }, &data)?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A gzipped tar of `(path, kind, text)` members; kind `f` file, `d` folder, `l` symlink to
    /// text, `h` hard link to text. Paths are written raw, so `../x` and `/x` can be built.
    pub(crate) fn tgz(members: &[(&str, char, &str)]) -> Vec<u8> {
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
            let body: &[u8] = match kind {
                'd' => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_size(0);
                    &[]
                }
                'l' | 'h' => {
                    h.set_entry_type(if *kind == 'l' {
                        tar::EntryType::Symlink
                    } else {
                        tar::EntryType::Link
                    });
                    h.set_link_name(text).expect("link name");
                    h.set_size(0);
                    &[]
                }
                _ => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(text.len() as u64);
                    text.as_bytes()
                }
            };
            h.set_cksum();
            tar.append(&h, body).expect("appended");
        }
        tar.into_inner().expect("tar").finish().expect("gzip")
    }

    #[test]
    fn a_chart_unpacks() {
        let dir = crate::cache::tests::tempdir("extract");
        let bytes = tgz(&[
            ("demo/", 'd', ""),
            ("demo/Chart.yaml", 'f', "name: demo\nversion: 1.0.0\n"),
            ("demo/templates/cm.yaml", 'f', "kind: ConfigMap\n"),
        ]);
        let dest = dir.join("unpacked").join("x");
        extract_tgz(&bytes, &dest, "demo", Limits::default()).expect("unpacked");
        assert_eq!(
            std::fs::read_to_string(dest.join("demo/templates/cm.yaml")).expect("file"),
            "kind: ConfigMap\n"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn hostile_archives_write_nothing() {
        type Case<'a> = (&'a [(&'a str, char, &'a str)], &'a str);
        let cases: &[Case] = &[
            (
                &[("demo/ok", 'f', "x"), ("../escape", 'f', "x")],
                "climbs out",
            ),
            (&[("demo/../../escape", 'f', "x")], "climbs out"),
            (&[("/etc/escape", 'f', "x")], "absolute path"),
            (&[("demo/link", 'l', "/etc/passwd")], "symlink"),
            (&[("demo/hard", 'h', "/etc/passwd")], "hard link"),
        ];
        for (members, why) in cases {
            let dir = crate::cache::tests::tempdir("hostile");
            let dest = dir.join("cache").join("unpacked").join("x");
            let err = extract_tgz(&tgz(members), &dest, "evil", Limits::default())
                .expect_err("refused")
                .to_string();
            assert!(err.contains(why), "{err}");
            assert!(!dir.join("escape").exists());
            assert!(!dest.exists());
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn limits_hold() {
        let many: Vec<(String, char, &str)> =
            (0..5).map(|i| (format!("demo/f{i}"), 'f', "x")).collect();
        let many: Vec<(&str, char, &str)> =
            many.iter().map(|(p, k, t)| (p.as_str(), *k, *t)).collect();
        let few = Limits {
            max_total: 1024,
            max_members: 3,
        };
        assert!(
            check_tgz(&tgz(&many), "m", few)
                .expect_err("too many")
                .to_string()
                .contains("more than 3 members")
        );
        let big = "y".repeat(2000);
        assert!(
            check_tgz(&tgz(&[("demo/big", 'f', &big)]), "b", few)
                .expect_err("too big")
                .to_string()
                .contains("more than 1024 bytes")
        );
        assert!(check_tgz(b"not gzip", "g", few).is_err());
    }
}
