//! A static HTTP server on loopback for tests that fetch: it serves files and misbehaves on
//! demand (404 or any status, a truncated body, redirects, a stall past the client's
//! timeout). It answers until dropped, or for a minute at most, so no test leaves it behind.
//!
//! ```no_run
//! use fluxgate_testkit::server::{Route, Server};
//! let server = Server::start();
//! server.route("/index.yaml", Route::File(b"entries: {}\n".to_vec()));
//! let url = format!("{}/index.yaml", server.url());
//! # let _ = url;
//! ```

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the server answers one path.
#[derive(Clone)]
pub enum Route {
    File(Vec<u8>),
    /// Declares the full length, sends only the first `usize` bytes, then closes.
    Truncated(Vec<u8>, usize),
    Redirect(u16, String),
    /// Waits this long before answering (past the client's timeout).
    Stall(Duration, Vec<u8>),
    Status(u16),
    /// 200 with the body only for a request whose `Authorization` header is `expect`; else
    /// 401 with `WWW-Authenticate: <challenge>`.
    Auth {
        expect: String,
        challenge: String,
        body: Vec<u8>,
    },
}

/// A server that answers until dropped (or for at most a minute: tests never leave it behind).
pub struct Server {
    pub port: u16,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    stop: Arc<AtomicBool>,
    pub hits: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    #[must_use]
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let hits = Arc::new(AtomicUsize::new(0));
        let (r, s, h) = (routes.clone(), stop.clone(), hits.clone());
        let thread = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !s.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        h.fetch_add(1, Ordering::Relaxed);
                        let routes = r.clone();
                        std::thread::spawn(move || serve(stream, &routes));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server {
            port,
            routes,
            stop,
            hits,
            thread: Some(thread),
        }
    }

    #[must_use]
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn route(&self, path: &str, route: Route) {
        self.routes
            .lock()
            .expect("routes")
            .insert(path.to_string(), route);
    }

    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.halt();
    }
}

fn serve(stream: TcpStream, routes: &Mutex<HashMap<String, Route>>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut stream = stream;
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut authorization = None;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("authorization")
                {
                    authorization = Some(value.trim().to_string());
                }
            }
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .split('?')
        .next()
        .unwrap_or("/")
        .to_string();
    let route = routes.lock().ok().and_then(|r| r.get(&path).cloned());
    let head = |status: u16, extra: &str, len: usize| {
        format!("HTTP/1.1 {status} X\r\nContent-Length: {len}\r\nConnection: close\r\n{extra}\r\n")
    };
    let _ = match route {
        Some(Route::File(body)) => stream
            .write_all(head(200, "", body.len()).as_bytes())
            .and_then(|()| stream.write_all(&body)),
        Some(Route::Truncated(body, sent)) => stream
            .write_all(head(200, "", body.len()).as_bytes())
            .and_then(|()| stream.write_all(&body[..sent.min(body.len())])),
        Some(Route::Redirect(status, to)) => {
            stream.write_all(head(status, &format!("Location: {to}\r\n"), 0).as_bytes())
        }
        Some(Route::Stall(wait, body)) => {
            std::thread::sleep(wait);
            stream
                .write_all(head(200, "", body.len()).as_bytes())
                .and_then(|()| stream.write_all(&body))
        }
        Some(Route::Status(s)) => stream.write_all(head(s, "", 0).as_bytes()),
        Some(Route::Auth {
            expect,
            challenge,
            body,
        }) => {
            if authorization.as_deref() == Some(expect.as_str()) {
                stream
                    .write_all(head(200, "", body.len()).as_bytes())
                    .and_then(|()| stream.write_all(&body))
            } else {
                let extra = format!("WWW-Authenticate: {challenge}\r\n");
                stream.write_all(head(401, &extra, 0).as_bytes())
            }
        }
        None => stream.write_all(head(404, "", 0).as_bytes()),
    };
    let _ = stream.flush();
}
