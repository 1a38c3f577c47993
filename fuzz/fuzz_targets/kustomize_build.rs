//! An in-memory repository made from the input: the bytes split on NUL into a
//! kustomization.yaml, two resource files, a patch and a base kustomization, then built.
#![no_main]

use std::path::Path;

use fluxgate_kustomize::{MemFs, build};
use libfuzzer_sys::fuzz_target;

const FILES: &[&str] = &[
    "/repo/app/kustomization.yaml",
    "/repo/app/a.yaml",
    "/repo/app/b.yaml",
    "/repo/app/patch.yaml",
    "/repo/base/kustomization.yaml",
    "/repo/base/c.yaml",
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut fs = MemFs::new();
    for (path, part) in FILES.iter().zip(text.split('\0')) {
        fs.insert(path, part);
    }
    let _ = build(&fs, Path::new("/repo"), Path::new("/repo/app"));
});
