//! `plaintext-secret`: a Kubernetes Secret with values in clear text (SPEC §5.7).

use fluxgate_diagnostics::Annotate;
use std::collections::BTreeSet;

use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_yaml::{Node, Value};

use crate::support::setting_strings;
use crate::{RepoContext, Severity};

crate::declare_rule! {
    /// ## What it checks
    /// A Kubernetes `Secret` with `data` or `stringData` values in a file that is not
    /// SOPS-encrypted (no top-level `sops:` metadata). `ENC[...]` values without that
    /// metadata are reported too: Flux decrypts only documents that carry it, so it would
    /// apply the ciphertext itself (a file decrypted, edited and committed without its
    /// `sops:` block). A value is judged by its key and content, not by the kind: a document
    /// (role definitions, a policy) is a credential only when it holds a credential key with
    /// a clear value, a private key, a URL with a password or a long random token; a
    /// one-line `username`, `host`, `port`, ... is none by itself. Every YAML file of the
    /// repository is read, not only what an environment renders: a secret committed in clear
    /// is leaked whether or not anything applies it; in a file no environment renders that
    /// lies outside every folder their Flux trees reconcile (a test fixture) it is a warning.
    /// Secrets that a `secretGenerator` makes from
    /// literals are caught in the rendered environments. Values that are references
    /// (`${VAR}` filled by post-build substitution, `{{ ... }}` templates, SOPS `ENC[...]`,
    /// 1Password `op://`, vals `ref+`, argocd-vault-plugin `<path:`) are not clear text, and
    /// a Secret that mixes such references with clear values in a file no environment
    /// applies is a template that a generator fills and encrypts, not a committed secret. The chart cache and Helm chart folders are skipped, and so are the
    /// paths (prefixes) listed in `rules.plaintext-secret.settings.ignore`. Values are never
    /// printed.
    ///
    /// ## Why it matters
    /// Git keeps everything forever: a token pushed once is in every clone and fork, and
    /// rotating it is the only fix. Flux decrypts SOPS files at apply time, so there is no
    /// reason to commit a Secret in clear.
    ///
    /// ## Example
    /// ```yaml
    /// apiVersion: v1
    /// kind: Secret
    /// metadata: {name: webhook, namespace: flux-system}
    /// stringData:
    ///   address: https://hooks.example.com/T000/B000/XXXX
    /// ```
    ///
    /// ## How to fix
    /// Encrypt the file with SOPS (`sops --encrypt --in-place --encrypted-regex
    /// '^(data|stringData)$' secret.yaml`, with the keys of `.sops.yaml`), and give the Flux
    /// Kustomization `decryption: {provider: sops}`. Then rotate the value that was exposed.
    pub static PLAINTEXT_SECRET = {
        name: "plaintext-secret",
        severity: Error,
        scope: Repository,
        check: check,
        settings: ["ignore"],
    }
}

fn check(ctx: &RepoContext<'_>, out: &mut Vec<Diagnostic>) {
    let mut skip: Vec<String> = setting_strings(ctx.settings, "ignore");
    if let Some(charts) = &ctx.config.charts {
        skip.push(charts.trim_end_matches('/').to_string());
    }
    let rendered: BTreeSet<&str> = ctx
        .envs
        .iter()
        .flat_map(|e| e.objects().map(|o| o.loc.file.as_ref()))
        .collect();
    let skipped = |file: &str| {
        skip.iter()
            .any(|s| file == *s || file.starts_with(&format!("{s}/")))
    };
    // The folders the environments' Flux trees reconcile: a file outside all of them that
    // nothing renders is a test fixture or a leftover (a warning: if its value is real, it
    // is in git history all the same).
    let flux_dirs: Vec<&str> = ctx
        .envs
        .iter()
        .flat_map(|e| {
            e.config
                .flux
                .as_deref()
                .into_iter()
                .chain(e.tree.kustomizations.iter().map(|k| k.path.as_str()))
        })
        .collect();
    let outside_flux = |file: &str| {
        !flux_dirs.is_empty()
            && !rendered.contains(file)
            && !flux_dirs
                .iter()
                .any(|d| d.is_empty() || file.starts_with(&format!("{d}/")))
    };
    let mut scanned: BTreeSet<&str> = BTreeSet::new();
    for f in ctx.repo.files() {
        let file = f.path.as_str();
        if skipped(file) || ctx.repo.in_helm_chart(file) {
            continue;
        }
        if !f.text.contains("Secret") {
            continue;
        }
        scanned.insert(file);
        for doc in f.docs() {
            // A Secret with references beside its clear values, in a file no environment
            // applies, is a template a generator fills and encrypts (cluster-template's
            // `tmpl/`), not a committed secret.
            if !rendered.contains(file) && has_reference(doc) {
                continue;
            }
            // A `kind: List` (or `SecretList`) carries its Secrets in `items`.
            let items = doc.get("items").and_then(Node::as_seq).unwrap_or_default();
            for obj in std::iter::once(doc).chain(items) {
                if let Some(d) = finding(ctx, obj) {
                    out.push(if outside_flux(file) { unrendered(d) } else { d });
                }
            }
        }
    }
    // Secrets generated from literals (secretGenerator) are located in the kustomization
    // file, which the scan above does not see as a Secret.
    for env in ctx.envs {
        for obj in env.objects() {
            // Scanned above, or left alone by `ignore` (then in the render too).
            if scanned.contains(obj.loc.file.as_ref()) || skipped(obj.loc.file.as_ref()) {
                continue;
            }
            if let Some(d) = finding(ctx, obj) {
                out.push(d.in_env(env.name()));
            }
        }
    }
}

/// A finding in a file that no environment renders and that lies outside every folder their
/// Flux trees reconcile: a warning that says so.
fn unrendered(d: Diagnostic) -> Diagnostic {
    let mut d = d;
    d.severity = Severity::Warning;
    d.note(
        "no environment renders this file and it lies outside every folder their Flux \
         Kustomizations reconcile (a test fixture or a leftover?): nothing applies it, but a \
         real value is in git history all the same",
    )
}

/// A finding when `doc` is a Secret with clear-text values, or with SOPS ciphertext but not
/// the metadata Flux needs to decrypt it.
fn finding(ctx: &RepoContext<'_>, doc: &Node) -> Option<Diagnostic> {
    if doc.str_at(&["kind"]) != Some("Secret")
        || doc.str_at(&["apiVersion"]).is_some_and(|a| a != "v1")
    {
        return None;
    }
    if fluxgate_model::sops::carries_sops_metadata(doc) {
        return sops_plaintext(ctx, doc);
    }
    let mut clear: Vec<(String, Location)> = Vec::new();
    for field in ["data", "stringData"] {
        let Some(map) = doc.get(field).and_then(Node::as_map) else {
            continue;
        };
        for (k, v) in map {
            if is_clear_text(v, field == "data") && holds_credential(k, v, field == "data") {
                clear.push((format!("{field}.{k}"), v.loc.clone()));
            }
        }
    }
    let name = format!(
        "{}/{}",
        doc.str_at(&["metadata", "namespace"])
            .unwrap_or("(namespace unset)"),
        doc.str_at(&["metadata", "name"]).unwrap_or("(unnamed)")
    );
    if clear.is_empty() {
        return orphaned_ciphertext(ctx, doc, &name);
    }
    let (_, first) = clear[0].clone();
    let keys: Vec<&str> = clear.iter().map(|(k, _)| k.as_str()).collect();
    let n = clear.len();
    Some(
        Diagnostic::new(
            ctx.rule.name,
            Severity::Error,
            format!(
                "Secret {name} has {n} value{} in clear text ({}) in a file that is not \
                 SOPS-encrypted",
                plural(n),
                keys.join(", ")
            ),
        )
        .at(first)
        .help("encrypt the file with SOPS (Flux decrypts it with `decryption: {provider: sops}`) and rotate the exposed value"),
    )
}

/// `ENC[...]` values in a Secret without SOPS metadata: the shape of a file that was
/// decrypted, edited and committed with its `sops:` block lost. Flux decrypts only what
/// carries the metadata, so it applies the ciphertext itself (a `stringData` value becomes
/// the literal `ENC[...]` text; a `data` value is not base64 and the apply fails).
fn orphaned_ciphertext(ctx: &RepoContext<'_>, doc: &Node, name: &str) -> Option<Diagnostic> {
    let values = fluxgate_model::sops::sops_ciphertext_values(doc);
    let (_, first) = values.first()?;
    let keys: Vec<&str> = values.iter().map(|(k, _)| k.as_str()).collect();
    let n = values.len();
    Some(
        Diagnostic::new(
            ctx.rule.name,
            Severity::Error,
            format!(
                "Secret {name} has {n} SOPS-encrypted value{} ({}) but no `sops:` metadata: \
                 Flux cannot decrypt it and would apply the ciphertext as the value",
                plural(n),
                keys.join(", ")
            ),
        )
        .at(first.loc.clone())
        .help("restore the file's encrypted version with its `sops:` block (`git show HEAD:<file>`), then edit it with `sops <file>` so SOPS re-encrypts it with its metadata"),
    )
}

/// A SOPS-encrypted Secret with a value that is not `ENC[...]` (a key added in clear after
/// encryption): the value is committed in clear, and SOPS refuses the file (its MAC no longer
/// matches), so Flux's decryption fails too. Empty values, keys SOPS leaves in clear by its
/// metadata (`unencrypted_suffix`, default `_unencrypted`; `unencrypted_regex`;
/// an `encrypted_regex` that does not select the key or its field) are not reported.
fn sops_plaintext(ctx: &RepoContext<'_>, doc: &Node) -> Option<Diagnostic> {
    let sops = doc.get("sops");
    let meta = |k: &str| sops.and_then(|s| s.str_at(&[k])).map(str::to_string);
    let suffix = meta("unencrypted_suffix").unwrap_or_else(|| "_unencrypted".to_string());
    let regex = |k: &str| meta(k).and_then(|r| regex::Regex::new(&r).ok());
    let (encrypted, unencrypted) = (regex("encrypted_regex"), regex("unencrypted_regex"));
    if (meta("encrypted_regex").is_some() && encrypted.is_none())
        || (meta("unencrypted_regex").is_some() && unencrypted.is_none())
        || meta("encrypted_suffix").is_some()
    {
        // Rules fluxgate cannot read: not judged.
        return None;
    }
    let mut clear: Vec<(String, Location)> = Vec::new();
    for field in ["data", "stringData"] {
        let Some(map) = doc.get(field).and_then(Node::as_map) else {
            continue;
        };
        for (k, v) in map {
            let text = match &v.value {
                Value::String(s) => s.trim(),
                Value::Null | Value::Map(_) | Value::Seq(_) => continue,
                Value::Bool(_) | Value::Int(_) | Value::Float(_) => "scalar",
            };
            // A `data` value is read decoded (a SOPS dotenv a secretGenerator reads).
            let decoded = (field == "data")
                .then(|| fluxgate_model::sops::decode_base64(text).ok())
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).trim().to_string());
            let text = decoded.as_deref().unwrap_or(text);
            // SOPS's own metadata, as a dotenv file holds it (`sops_mac=...`).
            if k.starts_with("sops_") {
                continue;
            }
            let selected = encrypted
                .as_ref()
                .is_none_or(|r| r.is_match(field) || r.is_match(k));
            if text.is_empty()
                || text.starts_with("ENC[")
                || k.ends_with(suffix.as_str())
                || !selected
                || unencrypted.as_ref().is_some_and(|r| r.is_match(k))
            {
                continue;
            }
            clear.push((format!("{field}.{k}"), v.loc.clone()));
        }
    }
    let (_, first) = clear.first()?.clone();
    let keys: Vec<&str> = clear.iter().map(|(k, _)| k.as_str()).collect();
    let n = clear.len();
    Some(
        Diagnostic::new(
            ctx.rule.name,
            Severity::Error,
            format!(
                "Secret {} has {n} value{} in clear text ({}) in a SOPS-encrypted file: the \
                 value is committed in clear, and SOPS (so Flux's decryption) refuses the file \
                 because its MAC no longer matches",
                secret_name(doc),
                plural(n),
                keys.join(", ")
            ),
        )
        .at(first)
        .help("add the value with `sops <file>` so that SOPS encrypts it and updates the MAC, and rotate the exposed value"),
    )
}

fn secret_name(doc: &Node) -> String {
    format!(
        "{}/{}",
        doc.str_at(&["metadata", "namespace"])
            .unwrap_or("(namespace unset)"),
        doc.str_at(&["metadata", "name"]).unwrap_or("(unnamed)")
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Whether the clear value of key `key` holds a credential, judged by the key and the value,
/// not by the kind (a Secret may hold role definitions or a policy document):
/// - a document (several lines, or JSON) holds one when one of its keys names a credential
///   ([`credential_name`]) with a value that is not a reference, or it holds a private key,
///   a URL with a password, or a long random token;
/// - a one-line value holds one unless its key names something that is not one (`username`,
///   `host`, `port`, ...) and the value is no private key, URL with a password or random
///   token.
fn holds_credential(key: &str, v: &Node, base64: bool) -> bool {
    let text = match &v.value {
        Value::String(s) => s.clone(),
        _ => return !not_credential_name(key),
    };
    let text = if base64 {
        fluxgate_model::sops::decode_base64(&text)
            .map_or(text, |b| String::from_utf8_lossy(&b).into_owned())
    } else {
        text
    };
    let t = text.trim();
    if has_credential_shape(t) {
        return true;
    }
    let document = t.contains('\n') || t.starts_with('{') || t.starts_with('[');
    if !document {
        return !not_credential_name(key);
    }
    if credential_name(key) && !is_structured_name(key) {
        return true;
    }
    t.lines().any(|line| {
        let line = line.trim().trim_start_matches("- ");
        let Some((k, val)) = line.split_once(':').or_else(|| line.split_once('=')) else {
            return false;
        };
        let k = k.trim().trim_matches(['"', '\'']);
        let val = val.trim().trim_end_matches(',').trim_matches(['"', '\'']);
        credential_name(k) && !val.is_empty() && !is_reference(val) && !val.starts_with(['{', '['])
    })
}

/// A key that names a credential: a password, secret, token, private key, ...
fn credential_name(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "pass",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "private",
        "credential",
        "auth",
        "cookie",
        "session",
        "salt",
        "pwd",
        "pin",
        "dsn",
        "license",
        "webhook",
        "jwt",
        "otp",
        "signing",
        "encryption",
    ]
    .iter()
    .any(|w| k.contains(w))
        || k.ends_with("key")
}

/// A file name a Secret holds a document under (`policy.json`, `roles.yaml`): its name says
/// nothing about credentials, its content does.
fn is_structured_name(key: &str) -> bool {
    [
        ".json", ".yaml", ".yml", ".conf", ".toml", ".ini", ".hcl", ".xml",
    ]
    .iter()
    .any(|e| key.to_ascii_lowercase().ends_with(e))
        && !key.to_ascii_lowercase().contains("key")
}

/// A key whose one-line value is no credential by itself.
fn not_credential_name(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let k = k.rsplit(['.', '/']).next().unwrap_or(&k);
    matches!(
        k,
        "username"
            | "user"
            | "login"
            | "host"
            | "hostname"
            | "port"
            | "database"
            | "db"
            | "dbname"
            | "namespace"
            | "region"
            | "email"
            | "domain"
            | "bucket"
            | "endpoint"
            | "server"
            | "type"
            | "mode"
            | "enabled"
            | "name"
            // A certificate is public; its private key is what a Secret keeps secret.
            | "crt"
            | "cert"
            | "certificate"
            | "ca"
            | "pem"
            | "chain"
    ) && !credential_name(k)
}

/// A value that is a credential whatever its key: a private key, a URL with a password, a
/// long random token (24 or more characters of letters and digits with no space, mixing
/// letters and digits).
fn has_credential_shape(t: &str) -> bool {
    if t.contains("PRIVATE KEY-----") {
        return true;
    }
    if let Some((_, rest)) = t.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && userinfo
                .split_once(':')
                .is_some_and(|(_, p)| !p.is_empty() && !is_reference(p))
        {
            return true;
        }
    }
    t.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '=' | ':'))
        .any(|w| {
            w.len() >= 24
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '/'))
                && w.chars().any(|c| c.is_ascii_digit())
                && w.chars().any(|c| c.is_ascii_alphabetic())
        })
}

/// Whether any `data`/`stringData` value of the Secret is a reference.
fn has_reference(doc: &Node) -> bool {
    ["data", "stringData"].iter().any(|f| {
        doc.get(f)
            .and_then(Node::as_map)
            .is_some_and(|m| m.values().any(|v| v.as_str().is_some_and(is_reference)))
    })
}

/// A value that is a secret in clear: not empty, not a reference filled in elsewhere. A
/// `data` value is read decoded (a secretGenerator's file whose secrets are `${VAR}`s that
/// post-build substitution fills is a template, not a secret).
fn is_clear_text(v: &Node, base64: bool) -> bool {
    let text = match &v.value {
        Value::String(s) => s.as_str(),
        Value::Null | Value::Map(_) | Value::Seq(_) => return false,
        Value::Bool(_) | Value::Int(_) | Value::Float(_) => return true,
    };
    let decoded = base64
        .then(|| fluxgate_model::sops::decode_base64(text).ok())
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let t = decoded.as_deref().unwrap_or(text).trim();
    !(t.is_empty() || is_reference(t))
}

/// A value that names where the secret lives instead of holding it: post-build variables,
/// templates, SOPS ciphertext, 1Password (`op://`), vals (`ref+...://`), argocd-vault-plugin
/// (`<path:...>`).
fn is_reference(t: &str) -> bool {
    t.contains("${")
        || t.contains("{{")
        || t.starts_with("ENC[")
        || t.starts_with("op://")
        || t.starts_with("ref+")
        || t.starts_with("<path:")
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxgate_diagnostics::Location;
    use fluxgate_yaml::{Schema, parse_stream};

    fn node(text: &str) -> Node {
        parse_stream("s.yaml", text, Schema::Kube).docs.remove(0)
    }

    #[test]
    fn references_are_not_clear_text() {
        let l = Location::file("x");
        let clear = |s: &str| is_clear_text(&Node::string(s, l.clone()), false);
        assert!(clear("hunter2"));
        for reference in [
            "${PASSWORD}",
            "{{ vault_token }}",
            "ENC[AES256_GCM,data:x]",
            "op://vault/item/field",
            "",
        ] {
            assert!(!clear(reference), "{reference}");
        }
        // `data` is read decoded: a generated config whose secret is a `${VAR}`.
        let data = |s: &str| is_clear_text(&Node::string(s, l.clone()), true);
        assert!(!data("Y2xpZW50U2VjcmV0OiAke09JRENfQ0xJRU5UX1NFQ1JFVH0K"));
        assert!(data("aHVudGVyMg=="));
    }

    #[test]
    fn sops_metadata_exempts_the_document() {
        let doc =
            node("kind: Secret\napiVersion: v1\nstringData:\n  a: ENC[x]\nsops:\n  version: 3\n");
        assert!(doc.get("sops").is_some());
    }
}
