//! The inputs `fetch` takes from servers and files, mutated at random from real-shaped seeds:
//! no panic, whatever the bytes (the `fetch_inputs` fuzz target explores further).

use fluxgate_fetch::constraint::{Constraint, parse_version};
use fluxgate_fetch::extract::{Limits, check_tgz};
use fluxgate_fetch::index::Index;
use fluxgate_fetch::{Digest, Lock};

/// xorshift64*: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }
}

fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..=rng.below(8) {
        let at = rng.below(out.len() + 1);
        match rng.below(4) {
            0 if at < out.len() => out[at] = (rng.next() & 0xff) as u8,
            1 if at < out.len() => {
                out.remove(at);
            }
            2 => out.insert(at, b"-.x*^~<>=| ,:[]{}&*!\n"[rng.below(21)]),
            _ => out.truncate(at),
        }
    }
    out
}

#[test]
fn mutated_inputs_never_panic() {
    let gz = {
        let g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(g);
        let mut h = tar::Header::new_gnu();
        h.set_size(5);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, "demo/Chart.yaml", &b"name:"[..])
            .expect("append");
        tar.into_inner().expect("tar").finish().expect("gzip")
    };
    let seeds: [&[u8]; 4] = [
        b"lock 1\nhttps://c.example demo 1.2.3 sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n",
        b">=1.2.0-rc.1 <2 || ~3.4.x, ^0.0.3 || 1.2 - 1.4.5",
        b"apiVersion: v1\nentries:\n  demo:\n  - version: 1.0.0\n    urls: [demo-1.0.0.tgz]\n    digest: abc\n",
        &gz,
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..4000 {
        let seed = seeds[round % seeds.len()];
        let data = mutate(seed, &mut rng);
        let _ = check_tgz(&data, "m", Limits::default());
        let text = String::from_utf8_lossy(&data);
        let _ = Lock::parse(&text, "fluxgate.lock");
        let _ = Digest::parse(&text);
        if round % 4 == 2 {
            let _ = Index::parse(&text, "https://m.example");
        }
        if let Ok(c) = Constraint::parse(&text) {
            for v in ["0.0.0", "1.2.3", "1.2.3-rc.1", "18446744073709551615.0.0"] {
                let _ = c.matches(&parse_version(v).expect("version"));
            }
        }
    }
}
