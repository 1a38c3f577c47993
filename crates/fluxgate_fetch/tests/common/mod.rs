//! What the fetch tests share: a tiny static HTTP server on loopback that can also misbehave
//! (404, a truncated body, redirects, a stall, a 401), and chart archives built in memory.

#![allow(dead_code)] // Each test binary uses its own part of this module.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
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
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
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
        None => stream.write_all(head(404, "", 0).as_bytes()),
    };
    let _ = stream.flush();
}

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
