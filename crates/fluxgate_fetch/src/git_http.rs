//! Git's smart HTTP protocol carried by the ureq client of the rest of `fetch`: gix speaks the
//! protocol (`info/refs`, then `POST git-upload-pack`), this module moves its bytes. Using
//! ureq (rustls with ring, the webpki roots, the same timeouts and redirect limit) instead of
//! gix's reqwest or curl backends keeps one HTTP stack in the binary and no async runtime.
//!
//! A POST body is written by gix before it reads the response, so the request is sent lazily:
//! the body is collected in memory (a shallow fetch posts a few wants) and the request goes out
//! when gix first reads the response's headers or body.

use std::io::{BufRead, BufReader, Cursor, Read, Write};
use std::sync::{Arc, Mutex};

use gix::error::ErrorExt;
use gix::protocol::transport::client::blocking_io::http::{
    GetResponse, Http, PostBodyDataKind, PostResponse,
};

use crate::error::display_url;

/// A pack larger than this is refused (a depth-1 fetch of a chart repository is far smaller).
pub const MAX_PACK_BYTES: u64 = 512 << 20;

/// gix's HTTP backend over a ureq agent, with an optional `Authorization` value (from a netrc)
/// that is sent but never shown.
pub struct UreqGit {
    agent: ureq::Agent,
    authorization: Option<String>,
}

impl UreqGit {
    pub fn new(agent: ureq::Agent, authorization: Option<String>) -> UreqGit {
        UreqGit {
            agent,
            authorization,
        }
    }
}

type Body = BufReader<Box<dyn Read + Send>>;

/// A request and what became of it.
enum Exchange {
    /// Collecting the POST body.
    Pending(Request),
    /// Sent: the header lines and the body, each taken once.
    Done {
        headers: Option<Vec<u8>>,
        body: Option<Body>,
    },
    Failed(std::io::ErrorKind, String),
}

struct Request {
    agent: ureq::Agent,
    post: bool,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn send(self) -> Result<(Vec<u8>, Body), (std::io::ErrorKind, String)> {
        let shown = display_url(&self.url);
        let response = if self.post {
            let mut r = self.agent.post(&self.url);
            for (k, v) in &self.headers {
                r = r.header(k, v);
            }
            r.send(&self.body[..])
        } else {
            let mut r = self.agent.get(&self.url);
            for (k, v) in &self.headers {
                r = r.header(k, v);
            }
            r.call()
        };
        let response = response.map_err(|e| {
            (
                std::io::ErrorKind::Other,
                crate::http::describe(&e, &self.url),
            )
        })?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let kind = if status == 401 || status == 403 {
                std::io::ErrorKind::PermissionDenied
            } else {
                std::io::ErrorKind::Other
            };
            return Err((kind, crate::http::status_message(status, &shown)));
        }
        let mut lines = Vec::new();
        for (name, value) in response.headers() {
            if let Ok(value) = value.to_str() {
                lines.extend_from_slice(format!("{name}: {value}\n").as_bytes());
            }
        }
        let reader = response
            .into_body()
            .into_with_config()
            .limit(MAX_PACK_BYTES)
            .reader();
        Ok((lines, BufReader::new(Box::new(reader))))
    }
}

type Shared = Arc<Mutex<Exchange>>;

fn io_error(kind: std::io::ErrorKind, message: &str) -> std::io::Error {
    std::io::Error::new(kind, message.to_string())
}

/// Sends the request if it is still pending; the error of a failed one, every time asked.
fn settle(shared: &Shared) -> std::io::Result<std::sync::MutexGuard<'_, Exchange>> {
    let mut guard = shared
        .lock()
        .map_err(|_| std::io::Error::other("git HTTP request state poisoned"))?;
    if matches!(*guard, Exchange::Pending(_)) {
        let Exchange::Pending(request) = std::mem::replace(
            &mut *guard,
            Exchange::Failed(std::io::ErrorKind::Other, String::new()),
        ) else {
            unreachable!("checked above");
        };
        *guard = match request.send() {
            Ok((headers, body)) => Exchange::Done {
                headers: Some(headers),
                body: Some(body),
            },
            Err((kind, message)) => Exchange::Failed(kind, message),
        };
    }
    if let Exchange::Failed(kind, message) = &*guard {
        return Err(io_error(*kind, message));
    }
    Ok(guard)
}

/// The response headers, read once the request was sent.
pub struct Headers {
    shared: Shared,
    lines: Option<Cursor<Vec<u8>>>,
}

impl Headers {
    fn lines(&mut self) -> std::io::Result<&mut Cursor<Vec<u8>>> {
        if self.lines.is_none() {
            let mut guard = settle(&self.shared)?;
            let taken = match &mut *guard {
                Exchange::Done { headers, .. } => headers.take().unwrap_or_default(),
                _ => Vec::new(),
            };
            self.lines = Some(Cursor::new(taken));
        }
        Ok(self.lines.get_or_insert_with(Default::default))
    }
}

impl Read for Headers {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.lines()?.read(buf)
    }
}

impl BufRead for Headers {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.lines()?.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        if let Some(lines) = &mut self.lines {
            lines.consume(amt);
        }
    }
}

/// The response body, read once the request was sent.
pub struct ResponseBody {
    shared: Shared,
    body: Option<Body>,
}

impl ResponseBody {
    fn body(&mut self) -> std::io::Result<&mut Body> {
        if self.body.is_none() {
            let mut guard = settle(&self.shared)?;
            let taken = match &mut *guard {
                Exchange::Done { body, .. } => body.take(),
                _ => None,
            };
            let empty: Box<dyn Read + Send> = Box::new(std::io::empty());
            self.body = Some(taken.unwrap_or_else(|| BufReader::new(empty)));
        }
        Ok(self
            .body
            .get_or_insert_with(|| BufReader::new(Box::new(std::io::empty()))))
    }
}

impl Read for ResponseBody {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.body()?.read(buf)
    }
}

impl BufRead for ResponseBody {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.body()?.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        if let Some(body) = &mut self.body {
            body.consume(amt);
        }
    }
}

/// Where gix writes the POST body.
pub struct PostBody {
    shared: Shared,
}

impl Write for PostBody {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut guard = self
            .shared
            .lock()
            .map_err(|_| std::io::Error::other("git HTTP request state poisoned"))?;
        match &mut *guard {
            Exchange::Pending(request) => {
                if request.body.len() as u64 + buf.len() as u64 > MAX_PACK_BYTES {
                    return Err(std::io::Error::other("git request body too large"));
                }
                request.body.extend_from_slice(buf);
                Ok(buf.len())
            }
            _ => Err(std::io::Error::other(
                "git request body written after the request was sent",
            )),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl UreqGit {
    fn exchange(
        &self,
        post: bool,
        url: &str,
        headers: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Shared {
        let mut pairs: Vec<(String, String)> = headers
            .into_iter()
            .filter_map(|h| {
                let (k, v) = h.as_ref().split_once(':')?;
                Some((k.trim().to_string(), v.trim().to_string()))
            })
            // ureq sets its own User-Agent; gix's names gix, this one names fluxgate.
            .filter(|(k, _)| !k.eq_ignore_ascii_case("user-agent"))
            .collect();
        if let Some(auth) = &self.authorization
            && !pairs
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            pairs.push(("Authorization".to_string(), auth.clone()));
        }
        Arc::new(Mutex::new(Exchange::Pending(Request {
            agent: self.agent.clone(),
            post,
            url: url.to_string(),
            headers: pairs,
            body: Vec::new(),
        })))
    }
}

impl Http for UreqGit {
    type Headers = Headers;
    type ResponseBody = ResponseBody;
    type PostBody = PostBody;

    fn get(
        &mut self,
        url: &str,
        _base_url: &str,
        headers: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> gix::error::Result<GetResponse<Headers, ResponseBody>> {
        let shared = self.exchange(false, url, headers);
        // Sent now, so a server that is down fails the handshake with its own message.
        drop(settle(&shared).map_err(ErrorExt::raise)?);
        Ok(GetResponse {
            headers: Headers {
                shared: shared.clone(),
                lines: None,
            },
            body: ResponseBody { shared, body: None },
        })
    }

    fn post(
        &mut self,
        url: &str,
        _base_url: &str,
        headers: impl IntoIterator<Item = impl AsRef<str>>,
        _body: PostBodyDataKind,
    ) -> gix::error::Result<PostResponse<Headers, ResponseBody, PostBody>> {
        let shared = self.exchange(true, url, headers);
        Ok(PostResponse {
            post_body: PostBody {
                shared: shared.clone(),
            },
            headers: Headers {
                shared: shared.clone(),
                lines: None,
            },
            body: ResponseBody { shared, body: None },
        })
    }

    fn configure(&mut self, _config: &dyn std::any::Any) -> gix::error::Result<()> {
        Ok(())
    }
}
