//! The content-addressed store: every artifact is a file named by the sha256 of its bytes.
//!
//! ```text
//! <cache>/sha256/<64 hex>          an artifact (a chart .tgz), written once, never changed
//! <cache>/unpacked/<64 hex>/       a chart unpacked by [`crate::extract`] (on demand)
//! <cache>/tmp/                     downloads in progress (renamed into sha256/ when whole)
//! ```
//!
//! Nothing is ever written outside the cache folder: names come from digests, not from the
//! server, and a download lands in `tmp/` and is renamed only after its digest was computed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};

use crate::error::Error;

/// A `sha256:<64 lowercase hex>` digest, the form OCI and the lock use.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

impl Digest {
    /// The digest of `bytes`.
    #[must_use]
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(hex(&Sha256::digest(bytes)))
    }

    /// Parses `sha256:<hex>` (or bare hex, as Helm's index.yaml writes it); `None` for anything
    /// else, so that a digest from a server can never name a path.
    #[must_use]
    pub fn parse(text: &str) -> Option<Digest> {
        let hex = text.trim().strip_prefix("sha256:").unwrap_or(text.trim());
        let ok = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit());
        ok.then(|| Digest(hex.to_ascii_lowercase()))
    }

    /// The 64 hex digits.
    #[must_use]
    pub fn hex(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sha256:{}", self.0)
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The cache folder: `flag` (`--cache DIR`), else `FLUXGATE_CACHE`, else the platform's cache
/// folder (`$XDG_CACHE_HOME/fluxgate`, `~/.cache/fluxgate`; `~/Library/Caches/fluxgate` on
/// macOS; `%LOCALAPPDATA%\fluxgate\cache` on Windows).
pub fn cache_dir(flag: Option<&Path>) -> Result<PathBuf, Error> {
    cache_dir_from(flag, &|name| std::env::var_os(name))
}

fn cache_dir_from(
    flag: Option<&Path>,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<PathBuf, Error> {
    if let Some(dir) = flag {
        return Ok(dir.to_path_buf());
    }
    let set = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set("FLUXGATE_CACHE") {
        return Ok(dir);
    }
    if cfg!(windows) {
        return set("LOCALAPPDATA")
            .map(|d| d.join("fluxgate").join("cache"))
            .ok_or(Error::NoCacheDir);
    }
    if cfg!(target_os = "macos") {
        return set("HOME")
            .map(|d| d.join("Library").join("Caches").join("fluxgate"))
            .ok_or(Error::NoCacheDir);
    }
    if let Some(xdg) = set("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
        return Ok(xdg.join("fluxgate"));
    }
    set("HOME")
        .map(|d| d.join(".cache").join("fluxgate"))
        .ok_or(Error::NoCacheDir)
}

/// The store at one folder.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

/// Distinguishes the temporary files of concurrent downloads in one process.
static NEXT_TMP: AtomicU64 = AtomicU64::new(0);

impl Cache {
    /// The cache at `dir`. Nothing is created until something is stored.
    #[must_use]
    pub fn open(dir: &Path) -> Cache {
        Cache {
            dir: dir.to_path_buf(),
        }
    }

    /// The cache folder.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the artifact `digest` is (or would be) stored.
    #[must_use]
    pub fn path(&self, digest: &Digest) -> PathBuf {
        self.dir.join("sha256").join(digest.hex())
    }

    /// Whether the store holds `digest` (by name: [`Cache::read_verified`] checks the bytes).
    #[must_use]
    pub fn contains(&self, digest: &Digest) -> bool {
        self.path(digest).is_file()
    }

    /// Stores `bytes` under their digest (atomically: a reader never sees half a file) and
    /// returns the digest.
    pub fn store(&self, bytes: &[u8]) -> Result<Digest, Error> {
        let digest = Digest::of(bytes);
        let dest = self.path(&digest);
        if dest.is_file() && self.read_verified(&digest).is_ok() {
            return Ok(digest);
        }
        let tmp_dir = self.dir.join("tmp");
        let sha_dir = self.dir.join("sha256");
        for d in [&tmp_dir, &sha_dir] {
            std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
        }
        let tmp = tmp_dir.join(format!(
            "{}.{}.{}",
            digest.hex(),
            std::process::id(),
            NEXT_TMP.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io(&tmp, e));
        }
        std::fs::rename(&tmp, &dest).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::io(&dest, e)
        })?;
        Ok(digest)
    }

    /// The folder the archive `digest` unpacks to (`<cache>/unpacked/<hex>/`), unpacked on
    /// first use by [`crate::extract::extract_tgz`] after the archive was verified: a renderer
    /// that wants files gets them without ever trusting the archive's member names.
    /// `Ok(None)` when the store does not hold `digest`.
    pub fn unpacked(&self, digest: &Digest) -> Result<Option<PathBuf>, Error> {
        let dest = self.dir.join("unpacked").join(digest.hex());
        if dest.is_dir() {
            return Ok(Some(dest));
        }
        let Some(bytes) = self.read_verified(digest)? else {
            return Ok(None);
        };
        match crate::extract::extract_tgz(
            &bytes,
            &dest,
            &digest.to_string(),
            crate::extract::Limits::default(),
        ) {
            Ok(()) => Ok(Some(dest)),
            // Another process unpacked it first.
            Err(_) if dest.is_dir() => Ok(Some(dest)),
            Err(e) => Err(e),
        }
    }

    /// The bytes of `digest`, after checking that they hash to it (a tampered or truncated
    /// cache file is an error, never used). `Ok(None)` when the store does not hold it.
    pub fn read_verified(&self, digest: &Digest) -> Result<Option<Vec<u8>>, Error> {
        let path = self.path(digest);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        let actual = Digest::of(&bytes);
        if &actual == digest {
            Ok(Some(bytes))
        } else {
            Err(Error::DigestMismatch {
                source_url: format!("cache file {}", path.display()),
                chart: "artifact".to_string(),
                version: String::new(),
                expected: digest.to_string(),
                actual: actual.to_string(),
            })
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn digests_parse_only_their_own_form() {
        let d = Digest::of(b"hello");
        assert_eq!(
            d.to_string(),
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(Digest::parse(&d.to_string()), Some(d.clone()));
        assert_eq!(Digest::parse(&d.hex().to_uppercase()), Some(d));
        assert_eq!(Digest::parse("sha256:../../etc/passwd"), None);
        assert_eq!(Digest::parse("sha512:abcd"), None);
    }

    #[test]
    fn cache_dir_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let flag = Path::new("/flag");
        let full = env(&[
            ("FLUXGATE_CACHE", "/env"),
            ("HOME", "/home/u"),
            ("XDG_CACHE_HOME", "/xdg"),
        ]);
        assert_eq!(cache_dir_from(Some(flag), &full).ok(), Some(flag.into()));
        assert_eq!(cache_dir_from(None, &full).ok(), Some("/env".into()));
        if cfg!(target_os = "linux") {
            let xdg = env(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg")]);
            assert_eq!(
                cache_dir_from(None, &xdg).ok(),
                Some("/xdg/fluxgate".into())
            );
            let home = env(&[("FLUXGATE_CACHE", ""), ("HOME", "/home/u")]);
            assert_eq!(
                cache_dir_from(None, &home).ok(),
                Some("/home/u/.cache/fluxgate".into())
            );
            assert!(matches!(
                cache_dir_from(None, &env(&[])),
                Err(Error::NoCacheDir)
            ));
        }
    }

    #[test]
    fn store_and_tamper() {
        let dir = tempdir("store");
        let cache = Cache::open(&dir);
        let d = cache.store(b"chart bytes").expect("stored");
        assert_eq!(
            cache.read_verified(&d).expect("read").as_deref(),
            Some(&b"chart bytes"[..])
        );
        std::fs::write(cache.path(&d), b"tampered").expect("tamper");
        assert!(matches!(
            cache.read_verified(&d),
            Err(Error::DigestMismatch { .. })
        ));
        // Storing again repairs the entry.
        cache.store(b"chart bytes").expect("stored again");
        assert!(cache.read_verified(&d).is_ok());
        let absent = Digest::of(b"nothing");
        assert!(matches!(cache.read_verified(&absent), Ok(None)));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn archives_unpack_once_on_demand() {
        let dir = tempdir("unpacked");
        let cache = Cache::open(&dir);
        let archive = crate::extract::tests::tgz(&[("demo/Chart.yaml", 'f', "name: demo\n")]);
        let d = cache.store(&archive).expect("stored");
        let folder = cache.unpacked(&d).expect("unpacked").expect("held");
        assert!(folder.join("demo/Chart.yaml").is_file());
        assert_eq!(cache.unpacked(&d).expect("again"), Some(folder));
        assert_eq!(
            cache.unpacked(&Digest::of(b"absent")).expect("absent"),
            None
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    pub(crate) fn tempdir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "fluxgate-fetch-{name}-{}-{}",
            std::process::id(),
            NEXT_TMP.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }
}
