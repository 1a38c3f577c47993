//! The functions that read randomness or the clock, made deterministic: `helm template`
//! prints new passwords, UUIDs, keys and timestamps on every run, which no gate can compare.
//! Here random strings come from a 64-bit generator seeded by the caller (Helm rendering
//! seeds it with the release name and namespace), so the same release renders the same
//! text; `now` is the Unix epoch. Certificates and keys (`genCA`, `genSignedCert`,
//! `genPrivateKey`, ...) are placeholders in PEM armour, not real keys: fluxgate never
//! installs what it renders.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use fluxgate_gotemplate::{Arity, Funcs, Value};

use super::{strval, to_i64};

/// SHA-1 (for `sha1sum`; not for security).
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for chunk in msg.chunks(64) {
        let mut w = [0u32; 80];
        for i in 0..16 {
            w[i] = u32::from_be_bytes([
                chunk[4 * i],
                chunk[4 * i + 1],
                chunk[4 * i + 2],
                chunk[4 * i + 3],
            ]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (i, x) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// splitmix64: a small generator with a shared counter (functions may be called from any
/// template of the render).
#[derive(Clone)]
struct Rng(Arc<AtomicU64>);

impl Rng {
    fn next(&self) -> u64 {
        // A draw differs each time: an include that draws is never kept.
        fluxgate_gotemplate::memo::unrepeatable();
        let mut z = self
            .0
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn string(&self, n: i64, alphabet: &[u8]) -> String {
        let n = usize::try_from(n).unwrap_or(0).min(1 << 20);
        (0..n)
            .map(|_| {
                alphabet[usize::try_from(self.next() % alphabet.len() as u64).unwrap_or(0)] as char
            })
            .collect()
    }
}

const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const NUM: &[u8] = b"0123456789";
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Adds the random, key and clock functions, seeded with 0 (see [`add_seeded`]).
pub fn add(f: &mut Funcs) {
    add_seeded(f, 0);
}

/// Adds the random, key and clock functions with a generator seeded by `seed`.
pub fn add_seeded(f: &mut Funcs, seed: u64) {
    let rng = Rng(Arc::new(AtomicU64::new(seed)));
    let ascii: Vec<u8> = (32u8..127).collect();
    for (name, alphabet) in [
        ("randAlphaNum", ALNUM.to_vec()),
        ("randAlpha", ALPHA.to_vec()),
        ("randNumeric", NUM.to_vec()),
        ("randAscii", ascii),
    ] {
        let r = rng.clone();
        f.insert(name, Arity::Exact(1), move |_, a| {
            Ok(Value::from(r.string(to_i64(&a[0]), &alphabet)))
        });
    }
    let r = rng.clone();
    f.insert("randInt", Arity::Exact(2), move |_, a| {
        let (lo, hi) = (to_i64(&a[0]), to_i64(&a[1]));
        let span = u64::try_from(hi.saturating_sub(lo)).unwrap_or(0).max(1);
        Ok(Value::Int(lo + i64::try_from(r.next() % span).unwrap_or(0)))
    });
    let r = rng.clone();
    f.insert("uuidv4", Arity::Exact(0), move |_, _| {
        let (x, y) = (r.next(), r.next());
        let h = format!("{x:016x}{y:016x}");
        Ok(Value::from(format!(
            "{}-{}-4{}-a{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            &h[17..20],
            &h[20..32]
        )))
    });
    let r = rng.clone();
    f.insert("randBytes", Arity::Exact(1), move |_, a| {
        let n = usize::try_from(to_i64(&a[0])).unwrap_or(0).min(1 << 20);
        let bytes: Vec<u8> = (0..n).map(|_| (r.next() & 0xff) as u8).collect();
        Ok(Value::from(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ))
    });
    for name in [
        "genPrivateKey",
        "genCA",
        "genCAWithKey",
        "genSelfSignedCert",
        "genSelfSignedCertWithKey",
        "genSignedCert",
        "genSignedCertWithKey",
    ] {
        let r = rng.clone();
        f.insert(name, Arity::AtLeast(0), move |_, a| {
            let id = format!(
                "{name}:{}:{:016x}",
                a.first().map(strval).unwrap_or_default(),
                r.next()
            );
            let pem = |kind: &str| {
                format!(
                    "-----BEGIN {kind}-----\n{}\n-----END {kind}-----\n",
                    base64::engine::general_purpose::STANDARD.encode(&id)
                )
            };
            if name == "genPrivateKey" {
                return Ok(Value::from(pem("RSA PRIVATE KEY")));
            }
            Ok(Value::map(BTreeMap::from([
                ("Cert".to_string(), Value::from(pem("CERTIFICATE"))),
                ("Key".to_string(), Value::from(pem("RSA PRIVATE KEY"))),
            ])))
        });
    }
    f.insert("derivePassword", Arity::Exact(5), |_, a| {
        Ok(Value::from(super::encoding::hex(&sha1(
            a.iter().map(strval).collect::<String>().as_bytes(),
        ))))
    });
    f.insert("buildCustomCert", Arity::Exact(2), |_, a| {
        Ok(Value::map(BTreeMap::from([
            ("Cert".to_string(), a[0].clone()),
            ("Key".to_string(), a[1].clone()),
        ])))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_known_answer() {
        assert_eq!(
            crate::sprig::encoding::hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
    }
}
