//! `sops-metadata-removed`: a SOPS-encrypted Secret with its `sops:` block deleted, the shape
//! of a file someone decrypted, edited and committed without encrypting again. The file no
//! longer says it is encrypted; `plaintext-secret` should notice.

use super::{Ctx, Found, Operator, single};
use crate::outline::Outline;

pub const OPERATOR: Operator = Operator {
    name: "sops-metadata-removed",
    summary: "a Secret's SOPS metadata removed",
    generate,
};

fn generate(ctx: &Ctx<'_>, out: &mut Found) {
    for f in ctx.index.files() {
        if !f.text.contains("sops") || !f.is_sops() {
            continue;
        }
        if !f
            .docs()
            .iter()
            .any(|d| d.str_at(&["kind"]) == Some("Secret"))
        {
            continue;
        }
        let o = Outline::new(&f.text);
        let mut any = false;
        for l in o.lines.iter().filter(|l| {
            !l.inert && l.dash.is_none() && l.indent == 0 && l.key.as_deref() == Some("sops")
        }) {
            let (from, to) = o.block(l.no);
            any = true;
            out.push(single(
                OPERATOR.name,
                &f.path,
                l.no,
                format!("the `sops:` block (lines {from}-{to}) removed: the Secret no longer says it is encrypted"),
                o.without(from, to),
            ));
        }
        if !any {
            out.skip(
                OPERATOR.name,
                &f.path,
                1,
                "SOPS-encrypted without a top-level `sops:` key (a dotenv or INI file)",
            );
        }
    }
}
