//! The HTTP client of `fetch`: bounded redirects, bounded bodies, timeouts, and statuses
//! turned into errors that name the source. Authorization headers are sent but never appear
//! in an error, and they are not forwarded when a redirect leaves the host.

use std::io::Read as _;
use std::time::Duration;

use crate::error::{Error, display_url};

/// At most this many redirects per request (Helm follows 10; a repository needs one or two).
pub const MAX_REDIRECTS: u32 = 5;

/// A response whose body was read whole (up to the limit the caller set).
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    pub www_authenticate: Option<String>,
    pub content_type: Option<String>,
    pub link: Option<String>,
}

/// A blocking client shared by the fetch threads.
#[derive(Clone)]
pub struct Http {
    agent: ureq::Agent,
}

impl Http {
    /// A client whose connection and read stalls end after `timeout`.
    #[must_use]
    pub fn new(timeout: Duration) -> Http {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(MAX_REDIRECTS)
            .max_redirects_will_error(true)
            // A registry that redirects within itself still sees its token; a redirect to
            // another host (a CDN's signed URL) never gets it.
            .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
            .timeout_connect(Some(timeout))
            .timeout_per_read(Some(timeout))
            .timeout_global(Some(timeout.saturating_mul(20)))
            .user_agent(concat!("fluxgate/", env!("CARGO_PKG_VERSION")))
            .build();
        Http {
            agent: config.new_agent(),
        }
    }

    /// The agent, for the git transport that shares its configuration.
    pub(crate) fn agent(&self) -> &ureq::Agent {
        &self.agent
    }

    /// GETs `url` with the given headers and reads at most `limit` bytes of body; `source`
    /// names the source in errors. Any status is returned: the caller decides.
    pub fn get(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        limit: u64,
        source: &str,
    ) -> Result<Response, Error> {
        let fail = |message: String| Error::Http {
            source_url: display_url(source),
            message,
        };
        let mut request = self.agent.get(url);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let mut response = request.call().map_err(|e| fail(describe(&e, url)))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let www_authenticate = header("www-authenticate");
        let content_type = header("content-type");
        let link = header("link");
        let expected = response.body().content_length();
        let mut body = Vec::new();
        response
            .body_mut()
            .with_config()
            .limit(limit.saturating_add(1))
            .reader()
            .take(limit.saturating_add(1))
            .read_to_end(&mut body)
            .map_err(|e| fail(format!("{}: the download broke off: {e}", display_url(url))))?;
        if body.len() as u64 > limit {
            return Err(fail(format!(
                "{}: the response is larger than {limit} bytes",
                display_url(url)
            )));
        }
        if let Some(n) = expected.filter(|n| *n != body.len() as u64) {
            return Err(fail(format!(
                "{}: truncated download: {} of {n} bytes",
                display_url(url),
                body.len()
            )));
        }
        Ok(Response {
            status,
            body,
            www_authenticate,
            content_type,
            link,
        })
    }
}

/// A transport error in words, with the URL (credentials removed).
pub(crate) fn describe(e: &ureq::Error, url: &str) -> String {
    let url = display_url(url);
    match e {
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
            format!("{url}: cannot connect (the server is down or unreachable)")
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!("{url}: cannot connect (connection refused: the server is down)")
        }
        // Before any response: name resolution or the connection failed.
        ureq::Error::Io(io) => format!("{url}: cannot connect ({io})"),
        ureq::Error::Timeout(t) => format!("{url}: timed out ({t})"),
        ureq::Error::TooManyRedirects => {
            format!("{url}: more than {MAX_REDIRECTS} redirects")
        }
        ureq::Error::RedirectFailed => format!("{url}: a redirect could not be followed"),
        other => format!("{url}: {other}"),
    }
}

/// The message of an unexpected status.
#[must_use]
pub fn status_message(status: u16, url: &str) -> String {
    let url = display_url(url);
    match status {
        404 => format!("{url}: not found (HTTP 404)"),
        401 | 403 => format!("{url}: access denied (HTTP {status})"),
        s if s >= 500 => format!("{url}: the server failed (HTTP {s})"),
        s => format!("{url}: unexpected HTTP {s}"),
    }
}
