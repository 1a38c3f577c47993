//! The built-in parity group (SPEC §5.5): where the bootstrap installs a chart that a Flux
//! HelmRelease of the same chart later adopts, the chart version and the keys whose change on
//! adoption breaks the datapath or its control-plane path must agree. It applies only when
//! fluxgate.yaml configures no parity group.

use fluxgate_diagnostics::Annotate;
use fluxgate_diagnostics::{Diagnostic, Location};
use fluxgate_model::{Environment, Release};
use fluxgate_yaml::Node;

use super::parity::show;
use crate::RuleContext;
use fluxgate_model::endpoints::{Render, bootstrap_renders, helmchart_values, topology};

/// The charts the built-in group knows, with the dotted keys compared. Cilium's
/// `k8sServiceHost` is `ha-endpoint`'s to report (the endpoint the CNI dials), so it is not
/// listed twice.
pub(crate) const ADOPTED_KEYS: &[(&str, &[&str])] = &[
    (
        "cilium",
        &[
            "k8sServicePort",
            "kubeProxyReplacement",
            "routingMode",
            "tunnelProtocol",
            "tunnel",
            "ipam.mode",
            "cluster.name",
            "cluster.id",
            "bpf.masquerade",
            "enableIPv4Masquerade",
            "autoDirectNodeRoutes",
            "ipv4NativeRoutingCIDR",
            "devices",
        ],
    ),
    (
        "tigera-operator",
        &[
            "installation.kubernetesProvider",
            "installation.cni.type",
            "installation.calicoNetwork.bgp",
            "installation.calicoNetwork.ipPools",
        ],
    ),
    (
        "kube-vip",
        &[
            "config.address",
            "env.vip_interface",
            "env.cp_enable",
            "env.svc_enable",
        ],
    ),
    ("coredns", &["service.clusterIP", "servers"]),
];

/// What the bootstrap installs of one chart: its values and, when known, its version.
struct Installed {
    chart: String,
    version: Option<Node>,
    values: Node,
    what: String,
}

pub(crate) fn check(ctx: &RuleContext<'_>, out: &mut Vec<Diagnostic>) {
    let env = ctx.env;
    if (env.bootstrap.is_none() && env.helmfiles.is_empty()) || env.releases.is_empty() {
        return;
    }
    let mut all = Vec::new();
    if env.bootstrap.is_some() {
        let topo = topology(env, &[]);
        let renders = bootstrap_renders(env, &topo);
        all.extend(installed_charts(&renders));
    }
    all.extend(helmfile_charts(env));
    for installed in all {
        let Some(keys) = ADOPTED_KEYS
            .iter()
            .find(|(c, _)| *c == installed.chart)
            .map(|(_, k)| *k)
        else {
            continue;
        };
        for release in adopting(env, &installed.chart) {
            compare(ctx, &installed, release, keys, out);
        }
    }
}

/// Charts the bootstrap's renders install: k3s `HelmChart` objects (from a template task or
/// the auto-deploy folder). Each chart once, from the first render that installs it.
fn installed_charts(renders: &[Render]) -> Vec<Installed> {
    let mut out: Vec<Installed> = Vec::new();
    for r in renders {
        for doc in &r.docs {
            let Some((chart, values)) = helmchart_values(doc) else {
                continue;
            };
            let chart = chart.rsplit('/').next().unwrap_or(&chart).to_string();
            if out.iter().any(|i| i.chart == chart) {
                continue;
            }
            let name = doc.str_at(&["metadata", "name"]).unwrap_or(&chart);
            out.push(Installed {
                what: format!("the bootstrap's HelmChart {name} ({})", r.rendered.path),
                version: doc.path(&["spec", "version"]).cloned(),
                chart,
                values,
            });
        }
    }
    out
}

/// Charts the environment's helmfiles install: each installed release of a state that is not
/// only templated for its CRDs, whose values were all evaluated.
fn helmfile_charts(env: &Environment) -> Vec<Installed> {
    let mut out = Vec::new();
    for hf in &env.helmfiles {
        for state in hf.states.iter().filter(|s| !s.crds_only()) {
            for r in &state.releases {
                if !r.installed || !r.unevaluated.is_empty() {
                    continue;
                }
                out.push(Installed {
                    chart: r.chart_name().to_string(),
                    version: r
                        .version
                        .as_ref()
                        .map(|v| Node::string(v.clone(), r.version_loc.clone())),
                    values: r.values.clone(),
                    what: format!("the helmfile release {} ({})", r.id(), state.file),
                });
            }
        }
    }
    out
}

/// The Flux releases of the environment that install `chart`.
fn adopting<'e>(env: &'e Environment, chart: &str) -> Vec<&'e Release> {
    env.releases
        .values()
        .filter(|r| r.values.chart.as_ref().is_some_and(|c| c.name == chart))
        .collect()
}

fn compare(
    ctx: &RuleContext<'_>,
    installed: &Installed,
    release: &Release,
    keys: &[&str],
    out: &mut Vec<Diagnostic>,
) {
    let chart = release.values.chart.as_ref();
    let flux_version = chart.and_then(|c| c.version.as_deref());
    if let (Some(boot), Some(flux)) = (installed.version.as_ref(), flux_version) {
        let boot_text = boot.scalar_text().unwrap_or_default();
        if boot_text.trim_start_matches('v') != flux.trim_start_matches('v') {
            let at = chart.map_or_else(|| release.object.loc.clone(), |c| c.location.clone());
            out.push(mismatch(
                ctx,
                installed,
                release,
                "the chart version",
                &boot_text,
                flux,
                boot.loc.clone(),
                at,
            ));
        }
    }
    for key in keys {
        let path: Vec<&str> = key.split('.').collect();
        let (Some(boot), Some(flux)) = (
            installed.values.path(&path),
            release.values.tree.path(&path),
        ) else {
            // Unset on one side: without the chart's defaults the two are not comparable.
            continue;
        };
        if boot.value == flux.value {
            continue;
        }
        let flux_at = release
            .values
            .origins
            .get(*key)
            .and_then(|o| o.first())
            .map_or_else(|| flux.loc.clone(), |o| o.location.clone());
        out.push(mismatch(
            ctx,
            installed,
            release,
            &format!("`{key}`"),
            &show(boot),
            &show(flux),
            boot.loc.clone(),
            flux_at,
        ));
    }
}

#[allow(clippy::too_many_arguments)] // One finding's parts; a struct would only rename them.
fn mismatch(
    ctx: &RuleContext<'_>,
    installed: &Installed,
    release: &Release,
    what: &str,
    boot: &str,
    flux: &str,
    boot_at: Location,
    flux_at: Location,
) -> Diagnostic {
    ctx.finding(format!(
        "{} installs {} with {what} {boot}, but HelmRelease {} that adopts it has {flux}: \
         adoption changes it on a running cluster (built-in parity group `{}`)",
        installed.what, installed.chart, release.id, installed.chart
    ))
    .at(boot_at)
    .related(flux_at, format!("Flux sets {flux} here"))
    .help("keep the bootstrap's copy in step with the Flux release (or configure `parity:` groups in fluxgate.yaml to choose the keys)")
}
