//! Charts from a GitRepository: the chart's folder at the commit a ref names, read from the
//! object database with gix (no checkout) and packed into a chart archive the same way every
//! time, so its digest is stable and lockable.
//!
//! A `file://` repository is read where it is. A remote one (`https://`, `http://`, `git://`)
//! is fetched shallow (depth 1, only the one ref Flux would resolve) into a temporary bare
//! repository under the cache's `tmp/`, removed afterwards. `ssh://` needs the identity of the
//! source's secretRef, which fluxgate never reads: it is an error saying so.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use fluxgate_git::{Entry, GitRepo};
use gix::protocol::transport::client::blocking_io::Transport;

use crate::constraint::{Constraint, highest};
use crate::creds::Login;
use crate::error::{Error, display_url};
use crate::sources::Want;

/// What a remote fetch needs besides the URL.
pub struct Remote<'a> {
    /// The HTTP agent of the rest of fetch (TLS, timeouts, redirects).
    pub agent: &'a ureq::Agent,
    /// A netrc login for the host, sent as Basic authorization over HTTP(S).
    pub login: Option<&'a Login>,
    /// Where temporary repositories go (the cache's `tmp/`).
    pub scratch: &'a Path,
    /// How long a git:// connection or read may stall.
    pub timeout: Duration,
    /// The source's `spec.secretRef`, for the message when credentials are missing.
    pub secret_ref: Option<&'a str>,
}

/// The commit the source's ref names and the chart folder `chart_path` at it, packed.
/// `want` is a [`Want::GitRev`] (a commit id or a full ref name) or a [`Want::Semver`] range
/// over the repository's tags.
pub fn chart_at(
    url: &str,
    chart_path: &str,
    want: &Want,
    remote: &Remote<'_>,
) -> Result<(String, Vec<u8>), Error> {
    if url.starts_with("file://") {
        let repo = open(url)?;
        let rev = match want {
            Want::Semver(range) => local_semver_tag(url, range)?,
            Want::GitRev(rev) => rev.clone(),
            Want::Tag(_) | Want::Digest(_) => return Err(not_git_want(url)),
        };
        let commit = repo
            .resolve(Some(&rev))
            .map_err(|e| fail(url, e.to_string()))?
            .commit;
        let bytes = pack_chart(&repo, url, chart_path, &commit)?;
        return Ok((commit, bytes));
    }
    fetch_remote(url, chart_path, want, remote)
}

/// The chart folder `chart_path` at `commit`, packed as `<name>/…` (name: the folder's last
/// segment), members sorted, modes and times fixed. Symbolic links and paths that are not
/// plain names are refused.
fn pack_chart(repo: &GitRepo, url: &str, chart_path: &str, commit: &str) -> Result<Vec<u8>, Error> {
    let base = repo
        .resolve(Some(commit))
        .map_err(|e| fail(url, e.to_string()))?;
    let snapshot = repo
        .read_tree(&base)
        .map_err(|e| fail(url, e.to_string()))?;
    let folder = Path::new(chart_path);
    let name = chart_path.rsplit('/').next().unwrap_or(chart_path);
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut members = 0usize;
    for (path, entry) in &snapshot.files {
        let Ok(rel) = path.strip_prefix(folder) else {
            continue;
        };
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(fail(
                url,
                format!(
                    "{} in chart `{chart_path}` is not a plain path (refused: it could point outside the chart)",
                    path.display()
                ),
            ));
        }
        let bytes = match entry {
            Entry::File(bytes) => bytes,
            Entry::Link(_) => {
                return Err(fail(
                    url,
                    format!(
                        "{} in chart `{chart_path}` is a symlink (refused: it could point outside the chart)",
                        path.display()
                    ),
                ));
            }
        };
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, Path::new(name).join(rel), bytes.as_slice())
            .map_err(|e| fail(url, format!("packing {}: {e}", path.display())))?;
        members += 1;
    }
    if members == 0 {
        return Err(fail(
            url,
            format!("no chart at `{chart_path}` in commit {}", &base.commit),
        ));
    }
    let gz = tar
        .into_inner()
        .map_err(|e| fail(url, format!("packing: {e}")))?;
    let mut gz = gz;
    gz.flush().map_err(|e| fail(url, format!("packing: {e}")))?;
    gz.finish().map_err(|e| fail(url, format!("packing: {e}")))
}

fn open(url: &str) -> Result<GitRepo, Error> {
    let path = url
        .strip_prefix("file://")
        .ok_or_else(|| fail(url, "not a file:// URL".into()))?;
    GitRepo::open(Path::new(path)).map_err(|e| fail(url, e.to_string()))
}

/// The tag of a `file://` repository that a semver range picks.
fn local_semver_tag(url: &str, range: &str) -> Result<String, Error> {
    let path = url.strip_prefix("file://").unwrap_or(url);
    let repo = gix::open(path).map_err(|e| fail(url, e.to_string()))?;
    let refs = repo.references().map_err(|e| fail(url, e.to_string()))?;
    let tags: Vec<String> = refs
        .tags()
        .map_err(|e| fail(url, e.to_string()))?
        .filter_map(Result::ok)
        .map(|r| r.name().shorten().to_string())
        .collect();
    pick_tag(url, range, &tags).map(|t| format!("refs/tags/{t}"))
}

/// The tag the highest version `range` admits, as source-controller picks it (a `v` prefix
/// is allowed; tags that are not versions are ignored).
fn pick_tag(url: &str, range: &str, tags: &[String]) -> Result<String, Error> {
    let constraint = Constraint::parse(range)?;
    highest(&constraint, tags.iter().map(String::as_str))
        .map(str::to_string)
        .ok_or_else(|| {
            let mut shown: Vec<&str> = tags.iter().map(String::as_str).take(10).collect();
            if tags.len() > 10 {
                shown.push("…");
            }
            fail(
                url,
                format!(
                    "no tag matches semver `{range}`{}",
                    if shown.is_empty() {
                        " (the repository has no tags)".to_string()
                    } else {
                        format!("; the repository has: {}", shown.join(", "))
                    }
                ),
            )
        })
}

fn not_git_want(url: &str) -> Error {
    Error::Unsupported {
        source_url: display_url(url),
        message: "a tag or digest is asked of a GitRepository".into(),
    }
}

/// A temporary bare repository, removed when dropped.
struct Scratch(PathBuf);

static SCRATCH: AtomicUsize = AtomicUsize::new(0);

impl Scratch {
    fn new(root: &Path, url: &str) -> Result<Scratch, Error> {
        let dir = root.join(format!(
            "git-{}-{}",
            std::process::id(),
            SCRATCH.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let scratch = Scratch(dir);
        gix::init_bare(&scratch.0).map_err(|e| fail(url, format!("a scratch repository: {e}")))?;
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where the fetched ref lands in the scratch repository.
const LOCAL_REF: &str = "refs/fluxgate/want";

fn fetch_remote(
    url: &str,
    chart_path: &str,
    want: &Want,
    remote: &Remote<'_>,
) -> Result<(String, Vec<u8>), Error> {
    let mut parsed = gix::url::parse(gix::bstr::BStr::new(url))
        .map_err(|e| fail(url, format!("not a git URL: {e}")))?;
    // A user:password in the URL becomes our Authorization header (a netrc login wins) and
    // leaves the URL gix sees, so no message of gix's can show it.
    let from_url = match (parsed.user(), parsed.password()) {
        (Some(user), Some(password)) => Some(Login {
            user: user.to_string(),
            password: password.to_string(),
        }),
        _ => None,
    };
    parsed.set_user(None);
    parsed.set_password(None);
    let login = remote.login.or(from_url.as_ref());
    match parsed.scheme {
        gix::url::Scheme::Http | gix::url::Scheme::Https | gix::url::Scheme::Git => {}
        gix::url::Scheme::Ssh => {
            return Err(Error::NeedsCredentials {
                source_url: display_url(url),
                message: format!(
                    "an ssh:// GitRepository authenticates with the SSH identity of its secretRef{}, \
                     which fluxgate does not read; fetch the chart over https:// with a netrc \
                     login, or put it into the `charts:` folder",
                    remote
                        .secret_ref
                        .map(|s| format!(" `{s}`"))
                        .unwrap_or_default()
                ),
            });
        }
        other => {
            return Err(Error::Unsupported {
                source_url: display_url(url),
                message: format!(
                    "git over {} is not supported (https://, http://, git:// and file:// are)",
                    other.as_str()
                ),
            });
        }
    }
    let scratch = Scratch::new(remote.scratch, url)?;
    let repo = gix::open_opts(&scratch.0, gix::open::Options::isolated())
        .map_err(|e| fail(url, format!("a scratch repository: {e}")))?;
    let (spec, label) = match want {
        Want::GitRev(rev) if is_commit(rev) => (rev.clone(), format!("commit {rev}")),
        Want::GitRev(rev) => (format!("+{rev}:{LOCAL_REF}"), format!("ref `{rev}`")),
        Want::Semver(range) => {
            let tags: Vec<String> = exchange(
                &repo,
                &parsed,
                "refs/tags/*:refs/tags/*",
                false,
                remote,
                login,
                url,
            )?
            .into_iter()
            .filter_map(|n| n.strip_prefix("refs/tags/").map(str::to_string))
            .collect();
            let tag = pick_tag(url, range, &tags)?;
            (
                format!("+refs/tags/{tag}:{LOCAL_REF}"),
                format!("tag `{tag}`"),
            )
        }
        Want::Tag(_) | Want::Digest(_) => return Err(not_git_want(url)),
    };
    exchange(&repo, &parsed, &spec, true, remote, login, url).map_err(|e| match e {
        Error::Git {
            source_url,
            message,
        } => Error::Git {
            source_url,
            message: format!("{label}: {message}"),
        },
        other => other,
    })?;
    let commit = match want {
        Want::GitRev(rev) if is_commit(rev) => rev.clone(),
        _ => {
            let mut reference = repo
                .find_reference(LOCAL_REF)
                .map_err(|e| fail(url, format!("{label} was not fetched: {e}")))?;
            let id = reference
                .peel_to_commit()
                .map_err(|e| fail(url, format!("{label} does not name a commit: {e}")))?
                .id;
            id.to_string()
        }
    };
    let bytes = pack_chart(&GitRepo::from_gix(repo), url, chart_path, &commit)?;
    Ok((commit, bytes))
}

/// One conversation with the remote over the transport its URL names: list the refs `spec`
/// matches (`receive` false), or fetch them at depth 1. The names of the matching remote refs.
fn exchange(
    repo: &gix::Repository,
    url: &gix::Url,
    spec: &str,
    receive: bool,
    remote: &Remote<'_>,
    login: Option<&Login>,
    source: &str,
) -> Result<Vec<String>, Error> {
    let git_remote = repo
        .remote_at(url.clone())
        .and_then(|r| r.with_refspecs([spec], gix::remote::Direction::Fetch))
        .map_err(|e| fail(source, format!("refspec `{spec}`: {}", chain(&e))))?
        .with_fetch_tags(gix::remote::fetch::Tags::None);
    if url.scheme == gix::url::Scheme::Git {
        {
            let host = url.host().unwrap_or("localhost").to_string();
            let port = url.port;
            let addr =
                std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port.unwrap_or(9418)))
                    .ok()
                    .and_then(|mut a| a.next())
                    .ok_or_else(|| fail(source, format!("cannot resolve {host}")))?;
            let stream =
                std::net::TcpStream::connect_timeout(&addr, remote.timeout).map_err(|e| {
                    fail(
                        source,
                        format!("cannot connect ({e}: the server is down or unreachable)"),
                    )
                })?;
            let _ = stream.set_read_timeout(Some(remote.timeout));
            let _ = stream.set_write_timeout(Some(remote.timeout));
            let reader = stream
                .try_clone()
                .map_err(|e| fail(source, format!("cannot connect ({e})")))?;
            let transport = gix::protocol::transport::client::git::blocking_io::Connection::new(
                reader,
                stream,
                gix::protocol::transport::Protocol::V2,
                url.path.clone(),
                Some((host, port)),
                gix::protocol::transport::client::git::ConnectMode::Daemon,
                false,
            );
            talk(&git_remote, transport, receive, source)
        }
    } else {
        {
            let http = crate::git_http::UreqGit::new(remote.agent.clone(), login.map(Login::basic));
            let transport =
                gix::protocol::transport::client::blocking_io::http::Transport::new_http(
                    http,
                    url.clone(),
                    gix::protocol::transport::Protocol::V2,
                    false,
                );
            talk(&git_remote, transport, receive, source).map_err(|e| match e {
                Error::Git { message, .. }
                    if message.contains("HTTP 401") || message.contains("HTTP 403") =>
                {
                    if login.is_none() {
                        Error::NeedsCredentials {
                            source_url: display_url(source),
                            message: format!(
                                "the server refused anonymous access{}",
                                remote
                                    .secret_ref
                                    .map(|s| format!("; the source's secretRef is `{s}`"))
                                    .unwrap_or_default()
                            ),
                        }
                    } else {
                        fail(
                            source,
                            "the server refused the login (netrc, or the URL's user:password)"
                                .into(),
                        )
                    }
                }
                other => other,
            })
        }
    }
}

fn talk<T: Transport>(
    git_remote: &gix::Remote<'_>,
    transport: T,
    receive: bool,
    source: &str,
) -> Result<Vec<String>, Error> {
    let err = |e: &dyn std::error::Error| fail(source, chain(e));
    let prepare = git_remote
        .to_connection_with_transport(transport)
        .prepare_fetch(
            gix::progress::Discard,
            gix::remote::ref_map::Options::default(),
        )
        .map_err(|e| err(&e))?;
    let names: Vec<String> = prepare
        .ref_map()
        .mappings
        .iter()
        .map(|m| match &m.remote {
            gix::protocol::fetch::refmap::Source::Ref(r) => r.unpack().0.to_string(),
            gix::protocol::fetch::refmap::Source::ObjectId(id) => id.to_string(),
        })
        .collect();
    if !receive {
        return Ok(names);
    }
    if names.is_empty() {
        return Err(fail(source, "the remote has no such ref".into()));
    }
    let depth = std::num::NonZeroU32::MIN;
    prepare
        .with_shallow(gix::remote::fetch::Shallow::DepthAtRemote(depth))
        .receive(gix::progress::Discard, &AtomicBool::new(false))
        .map_err(|e| err(&e))?;
    Ok(names)
}

/// An error and its causes, one after another (gix's top message alone is often generic).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let next = c.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = c.source();
    }
    text
}

fn fail(url: &str, message: String) -> Error {
    Error::Git {
        source_url: display_url(url),
        message,
    }
}

/// Whether `rev` is a full commit id (then the lock must pin exactly it).
#[must_use]
pub fn is_commit(rev: &str) -> bool {
    rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit())
}
