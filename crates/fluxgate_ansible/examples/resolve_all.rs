//! Resolves every variable of every host of one repository and prints them as JSON
//! (`{host: {"vars": {...}, "errors": {...}}}`): the fluxgate side of `bench/ansible.sh`.
//!
//! Usage: `resolve_all ROOT INVENTORY PLAYBOOK [CONFIG]`.

use fluxgate_ansible::{Options, Project};
use serde_json::{Map, Value, json};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: resolve_all ROOT INVENTORY PLAYBOOK [CONFIG]");
        std::process::exit(2);
    }
    let project = Project::load(&Options {
        root: args[1].clone().into(),
        inventory: vec![args[2].clone().into()],
        playbook: Some(args[3].clone().into()),
        config: args.get(4).filter(|c| !c.is_empty()).map(Into::into),
        ..Options::default()
    });
    let mut out = Map::new();
    for host in project.hosts() {
        let all = project.host_vars(&host);
        let vars: Map<String, Value> = all
            .vars
            .iter()
            .map(|(k, r)| {
                (
                    k.clone(),
                    json!({"value": r.value.to_json(), "source": r.origin[0].via}),
                )
            })
            .collect();
        let errors: Map<String, Value> = all
            .errors
            .iter()
            .map(|(k, e)| {
                (
                    k.clone(),
                    json!({"message": e.to_string(), "source": e.chain.first().map(|o| o.via.clone())}),
                )
            })
            .collect();
        out.insert(host, json!({"vars": vars, "errors": errors}));
    }
    println!("{}", Value::Object(out));
}
