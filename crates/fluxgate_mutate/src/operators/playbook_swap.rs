//! `playbook-swap`: two adjacent `import_playbook` entries of a site playbook exchanged, the
//! reordering that made a cold bootstrap impossible (the CNI pointed at a VIP that a later
//! play brings up). `bootstrap-order` should notice when the order is load-bearing.

use std::collections::BTreeSet;

use super::{Ctx, Found, Operator, single};
use crate::outline::Outline;

pub const OPERATOR: Operator = Operator {
    name: "playbook-swap",
    summary: "two adjacent import_playbook entries swapped",
    generate,
};

fn generate(ctx: &Ctx<'_>, out: &mut Found) {
    let mut files: BTreeSet<String> = BTreeSet::new();
    for env in ctx.envs {
        if let Some(boot) = &env.bootstrap {
            files.extend(boot.project.playbook_files().iter().map(|f| ctx.rel(f)));
        }
    }
    for rel in files {
        let Some(text) = ctx.text(&rel) else {
            continue;
        };
        let o = Outline::new(&text);
        // Top-level items of the playbook list, in order: (line, the imported file or None).
        let items: Vec<(u32, Option<String>, bool)> = o
            .lines
            .iter()
            .filter(|l| !l.inert && l.dash == Some(0))
            .map(|l| {
                let import = matches!(
                    l.key.as_deref(),
                    Some("import_playbook" | "ansible.builtin.import_playbook")
                )
                .then(|| l.value.clone());
                let one_line = o.block(l.no).1 == l.no;
                (l.no, import, one_line)
            })
            .collect();
        for pair in items.windows(2) {
            let ((a, Some(pa), one_a), (b, Some(pb), one_b)) = (&pair[0], &pair[1]) else {
                continue;
            };
            if !(*one_a && *one_b) {
                out.skip(
                    OPERATOR.name,
                    &rel,
                    *a,
                    format!("{pa} / {pb}: an entry spans several lines (`when:`, `vars:`)"),
                );
                continue;
            }
            out.push(single(
                OPERATOR.name,
                &rel,
                *a,
                format!("{pa} and {pb} swapped: {pb} now runs first"),
                o.swapped(*a, *b),
            ));
        }
    }
}
