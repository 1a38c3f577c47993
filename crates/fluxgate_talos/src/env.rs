//! talhelper's environment: the variables of `talenv.yaml` (and `talenv.sops.yaml`, whose
//! values are encrypted and stay unknown) and `${VAR}` substitution as talhelper does it.
//!
//! talhelper reads its env files as dotenv (godotenv, which takes `KEY: value` and
//! `KEY=value` lines alike), decrypting SOPS files first, then runs a8m/envsubst over the
//! talconfig text with comments stripped and in restricted mode: a variable that is unset or
//! empty, with no default, fails `talhelper genconfig`. fluxgate never decrypts: a variable
//! defined only in an encrypted file has a value that is unknown offline, and everything
//! built from it is unknown (never judged, never printed).

use fluxgate_diagnostics::Location;
use fluxgate_yaml::{Schema, Value, parse_stream};
use indexmap::IndexMap;

/// One variable of the environment.
#[derive(Clone, Debug)]
pub struct Var {
    /// `None` when the value is encrypted (a SOPS file): unknown offline.
    pub value: Option<String>,
    pub loc: Location,
}

/// The variables talhelper substitutes, from the env files next to talconfig.yaml.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub vars: IndexMap<String, Var>,
    /// The env files read (relative paths), encrypted ones included.
    pub files: Vec<String>,
}

/// Whether a YAML or dotenv text is SOPS-encrypted: a top-level `sops:` key, or `ENC[`
/// values. A file need not be named `.sops.` to be encrypted.
pub fn is_encrypted(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("sops:") || l.starts_with("sops_") || l.contains("ENC[AES256_GCM"))
}

impl Env {
    /// Adds the variables of one env file (`file` is its repository-relative path).
    pub fn add_file(&mut self, file: &str, text: &str) {
        let encrypted = file.contains(".sops.") || is_encrypted(text);
        self.files.push(file.to_string());
        let stream = parse_stream(file, text, Schema::Kube);
        let map = stream.docs.first().and_then(|d| d.as_map());
        if let Some(map) = map {
            for (k, v) in map {
                if k == "sops" {
                    continue;
                }
                let value = (!encrypted)
                    .then(|| v.scalar_text())
                    .flatten()
                    .filter(|_| !matches!(v.value, Value::Map(_) | Value::Seq(_)));
                self.vars.insert(
                    k.clone(),
                    Var {
                        value,
                        loc: v.loc.clone(),
                    },
                );
            }
            return;
        }
        // dotenv `KEY=value` lines.
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            let l = l.strip_prefix("export ").unwrap_or(l);
            if l.starts_with('#') {
                continue;
            }
            let Some((k, v)) = l.split_once('=') else {
                continue;
            };
            let k = k.trim();
            if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
            let col = line.find('=').map_or(1, |c| c as u32 + 2);
            self.vars.insert(
                k.to_string(),
                Var {
                    value: (!encrypted && !v.contains("ENC[")).then_some(v),
                    loc: Location::new(file, i as u32 + 1, col),
                },
            );
        }
    }
}

/// The result of substituting one scalar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Substituted {
    /// The text with every known variable replaced; unknown references are kept as written
    /// (`${CLUSTER_ENDPOINT_IP}`), never their encrypted value.
    pub text: String,
    /// False when a referenced variable's value is unknown (encrypted, or undefined here).
    pub known: bool,
    /// Variables referenced, in order.
    pub vars: Vec<String>,
    /// Variables that are neither defined in the env files nor given a default: talhelper
    /// fails on them unless the caller's environment sets them.
    pub undefined: Vec<String>,
    /// Variables defined empty with no default: talhelper's restricted mode fails on them.
    pub empty: Vec<String>,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Substitutes `${VAR}`, `$VAR` and the default forms (`${VAR:-x}`, `${VAR-x}`, `${VAR:=x}`,
/// `${VAR=x}`, `${VAR:+x}`, `${VAR+x}`) in `text`, as a8m/envsubst does in talhelper's
/// restricted mode. `$$` is a literal `$`.
pub fn substitute(text: &str, env: &Env) -> Substituted {
    let mut out = Substituted {
        text: String::with_capacity(text.len()),
        known: true,
        vars: Vec::new(),
        undefined: Vec::new(),
        empty: Vec::new(),
    };
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '$' {
            out.text.push(c);
            i += 1;
            continue;
        }
        match chars.get(i + 1) {
            Some('$') => {
                out.text.push('$');
                i += 2;
            }
            Some('{') => {
                let Some(end) = chars[i + 2..].iter().position(|c| *c == '}') else {
                    out.text.extend(&chars[i..]);
                    break;
                };
                let inner: String = chars[i + 2..i + 2 + end].iter().collect();
                let written: String = chars[i..i + 3 + end].iter().collect();
                expand(&inner, &written, env, &mut out);
                i += 3 + end;
            }
            Some(c) if is_name_start(*c) => {
                let len = chars[i + 1..]
                    .iter()
                    .take_while(|c| is_name_char(**c))
                    .count();
                let name: String = chars[i + 1..=i + len].iter().collect();
                let written = format!("${name}");
                expand(&name, &written, env, &mut out);
                i += 1 + len;
            }
            _ => {
                out.text.push('$');
                i += 1;
            }
        }
    }
    out
}

fn expand(inner: &str, written: &str, env: &Env, out: &mut Substituted) {
    let name_len = inner.chars().take_while(|c| is_name_char(*c)).count();
    let (name, op) = inner.split_at(name_len);
    if name.is_empty() || !name.starts_with(is_name_start) {
        out.text.push_str(written);
        out.known = false;
        return;
    }
    out.vars.push(name.to_string());
    let var = env.vars.get(name);
    let value = var.map(|v| v.value.as_deref());
    let (colon, rest) = match op.strip_prefix(':') {
        Some(r) => (true, r),
        None => (false, op),
    };
    // Set (and, for the `:` forms, non-empty): the value decides; unknown stays unknown.
    let set = match value {
        None => Some(false),
        Some(Some(v)) => Some(!(colon && v.is_empty())),
        Some(None) => None,
    };
    let default = |out: &mut Substituted, word: &str| {
        let inner = substitute(word, env);
        out.known &= inner.known;
        out.vars.extend(inner.vars);
        out.undefined.extend(inner.undefined);
        out.empty.extend(inner.empty);
        out.text.push_str(&inner.text);
    };
    match rest.chars().next() {
        None if op.is_empty() => match value {
            Some(Some("")) => {
                out.empty.push(name.to_string());
                out.known = false;
                out.text.push_str(written);
            }
            Some(Some(v)) => out.text.push_str(v),
            Some(None) => {
                out.known = false;
                out.text.push_str(written);
            }
            None => {
                out.undefined.push(name.to_string());
                out.known = false;
                out.text.push_str(written);
            }
        },
        Some('-' | '=') => match set {
            Some(true) => out.text.push_str(value.flatten().unwrap_or_default()),
            Some(false) => default(out, &rest[1..]),
            None => {
                out.known = false;
                out.text.push_str(written);
            }
        },
        Some('+') => match set {
            Some(true) => default(out, &rest[1..]),
            Some(false) => {}
            None => {
                out.known = false;
                out.text.push_str(written);
            }
        },
        // Substrings, case changes, `?` messages: not evaluated, the value is unknown.
        _ => {
            out.known = false;
            out.text.push_str(written);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        let mut e = Env::default();
        e.add_file(
            "talos/talenv.yaml",
            "VIP: 10.0.0.9\nEMPTY: \"\"\nDOMAIN: example.com\n",
        );
        e.add_file(
            "talos/talenv.sops.yaml",
            "SECRET_IP: ENC[AES256_GCM,data:abc=,type:str]\nsops:\n  version: 3.8.1\n",
        );
        e
    }

    #[test]
    fn known_values_replace_their_reference() {
        let s = substitute("https://${VIP}:6443", &env());
        assert_eq!(s.text, "https://10.0.0.9:6443");
        assert!(s.known);
        assert_eq!(s.vars, vec!["VIP"]);
        assert_eq!(substitute("k8s.$DOMAIN", &env()).text, "k8s.example.com");
        assert_eq!(substitute("a$$b", &env()).text, "a$b");
        assert_eq!(substitute("cost: 5$", &env()).text, "cost: 5$");
    }

    #[test]
    fn encrypted_values_stay_unknown_and_unprinted() {
        let e = env();
        assert_eq!(e.vars["SECRET_IP"].value, None);
        let s = substitute("${SECRET_IP}", &e);
        assert!(!s.known);
        assert_eq!(s.text, "${SECRET_IP}");
        assert!(!s.text.contains("ENC["));
        assert!(s.undefined.is_empty());
    }

    #[test]
    fn restricted_mode_fails_on_unset_and_empty() {
        let s = substitute("${NOPE}", &env());
        assert_eq!(s.undefined, vec!["NOPE"]);
        assert!(!s.known);
        let s = substitute("${EMPTY}", &env());
        assert_eq!(s.empty, vec!["EMPTY"]);
        // Defaults satisfy restricted mode.
        let s = substitute("${NOPE:-10.0.0.1}", &env());
        assert_eq!(s.text, "10.0.0.1");
        assert!(s.known && s.undefined.is_empty());
        assert_eq!(substitute("${EMPTY:-x}", &env()).text, "x");
        assert_eq!(substitute("${EMPTY-x}", &env()).text, "");
        assert_eq!(substitute("${VIP:+set}", &env()).text, "set");
        assert_eq!(substitute("${NOPE+set}", &env()).text, "");
        // A default of an encrypted variable is unknown.
        assert!(!substitute("${SECRET_IP:-1.1.1.1}", &env()).known);
    }

    #[test]
    fn dotenv_files_and_content_detection() {
        let mut e = Env::default();
        e.add_file("talos/talenv.env", "export A=1\n# c\nB=\"two\"\n");
        assert_eq!(e.vars["A"].value.as_deref(), Some("1"));
        assert_eq!(e.vars["B"].value.as_deref(), Some("two"));
        assert_eq!(e.vars["B"].loc.line, 3);
        // Encrypted content under a plain name (ahinko's talenv.yaml) is opaque.
        e.add_file(
            "talos/talenv.yaml",
            "IP: ENC[AES256_GCM,data:x,type:str]\nsops:\n  mac: y\n",
        );
        assert_eq!(e.vars["IP"].value, None);
    }
}
