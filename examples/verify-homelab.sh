#!/usr/bin/env bash
# Verify examples/homelab with the real tools, offline:
#   - kubectl kustomize (kustomize v5) renders clusters/dev, clusters/prod and platform;
#   - ansible-core resolves the inventory variables and renders the role templates per host
#     (role defaults at role-default precedence), and syntax-checks the site playbook;
#   - the facts fluxgate's gate checks (SPEC section 5) hold on those real renders: each
#     environment's Cilium dials its VIP on both the Flux and the Ansible side, the [parity]
#     values agree, the VIP is a tls-san, the rollout bound holds, the bootstrap order is
#     k3s -> kube-vip -> cilium -> flux, every substitution variable is defined, Secrets are
#     SOPS-encrypted, read-only probes run under --check, every role default is used.
#
# Usage: examples/verify-homelab.sh VENV_BIN_DIR
#   VENV_BIN_DIR: the bin directory of a virtualenv with ansible-core installed, e.g.
#     python3 -m venv /tmp/venv-ansible && /tmp/venv-ansible/bin/pip install ansible-core
#     examples/verify-homelab.sh /tmp/venv-ansible/bin
# Exits non-zero on the first failure. Writes nothing inside the repository.
set -euo pipefail

BIN=${1:?usage: $0 VENV_BIN_DIR (a virtualenv bin directory with ansible-core installed)}
BIN=$(cd "$BIN" && pwd)
for tool in "$BIN/ansible" "$BIN/ansible-playbook" "$BIN/python"; do
  [[ -x $tool ]] || { echo "FAIL: $tool not found (install ansible-core into that venv)" >&2; exit 2; }
done
command -v kubectl >/dev/null || { echo "FAIL: kubectl not on PATH" >&2; exit 2; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$HERE/homelab
ANS=$REPO/infra/ansible
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

export ANSIBLE_CONFIG=$ANS/ansible.cfg
export ANSIBLE_HOME=$WORK/ansible-home
export ANSIBLE_LOCAL_TEMP=$WORK/ansible-tmp
export ANSIBLE_PYTHON_INTERPRETER=$BIN/python
export ANSIBLE_NOCOLOR=1
export ANSIBLE_DEPRECATION_WARNINGS=0

step() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "1. kustomize renders (kubectl $(kubectl version --client 2>/dev/null | sed -n 's/^Kustomize Version: //p'))"
for dir in clusters/dev clusters/prod platform; do
  out=$WORK/kustomize-${dir//\//-}.yaml
  printf '$ kubectl kustomize %s\n' "examples/homelab/$dir"
  kubectl kustomize "$REPO/$dir" >"$out"
  echo "   ok: $(grep -c '^kind:' "$out") objects"
done

step "2. ansible-core resolves the variables (ansible $("$BIN/ansible" --version | head -1 | sed 's/.*\[core \(.*\)\]/\1/'))"
cd "$ANS"
for host in k3s-dev-1 k3s-prod-1; do
  for var in k3s_api_host k3s_apiserver_endpoint kube_vip_address; do
    run "$BIN/ansible" "$host" -i inventory/hosts.yml -c local -m debug -a "var=$var"
  done
done
# Every host at once, machine-readable, for the checks below.
"$BIN/ansible" k3s_cluster -i inventory/hosts.yml -c local -m debug \
  -a 'msg={{ {"k3s_node_ip": k3s_node_ip, "k3s_api_host": k3s_api_host, "k3s_api_port": k3s_api_port,
             "k3s_apiserver_endpoint": k3s_apiserver_endpoint, "kube_vip_address": kube_vip_address,
             "k3s_primary_group": k3s_primary_group, "k3s_servers_group": k3s_servers_group,
             "cluster_env": cluster_env, "cluster_kubeconfig_name": cluster_kubeconfig_name,
             "group_names": group_names} | to_json }}' >"$WORK/hostvars.txt"
echo "   ok: resolved $(grep -c SUCCESS "$WORK/hostvars.txt") hosts"

step "3. ansible-core renders the role templates per host (role defaults applied as the roles apply them)"
# import_role exposes the role's defaults to the play at their own precedence; tagging it
# `never` keeps its tasks from running. Each template is then rendered for each host.
mkdir -p "$WORK/render"
cat >"$WORK/render.yml" <<EOF
- name: k3s server config on every server
  hosts: k3s_cluster
  gather_facts: false
  tasks:
    - {ansible.builtin.import_role: {name: k3s_server}, tags: [never]}
    - ansible.builtin.copy:
        content: "{{ lookup('ansible.builtin.template', '$ANS/roles/k3s_server/templates/config.yaml.j2') }}"
        dest: "$WORK/render/{{ inventory_hostname }}.k3s-config.yaml"
        mode: "0600"
- name: kube-vip manifest on each founder
  hosts: k3s_founders
  gather_facts: false
  tasks:
    - {ansible.builtin.import_role: {name: kube_vip}, tags: [never]}
    - ansible.builtin.copy:
        content: "{{ lookup('ansible.builtin.template', '$ANS/roles/kube_vip/templates/kube-vip.yaml.j2') }}"
        dest: "$WORK/render/{{ inventory_hostname }}.kube-vip.yaml"
        mode: "0600"
- name: Cilium bootstrap values on each founder
  hosts: k3s_founders
  gather_facts: false
  tasks:
    - {ansible.builtin.import_role: {name: cilium}, tags: [never]}
    - ansible.builtin.copy:
        content: "{{ lookup('ansible.builtin.template', '$ANS/roles/cilium/templates/cilium-values.yaml.j2') }}"
        dest: "$WORK/render/{{ inventory_hostname }}.cilium-values.yaml"
        mode: "0600"
EOF
printf '$ ansible-playbook render.yml -c local   (k3s_server/config.yaml.j2, kube_vip/kube-vip.yaml.j2, cilium/cilium-values.yaml.j2)\n'
"$BIN/ansible-playbook" -i inventory/hosts.yml -c local "$WORK/render.yml" >"$WORK/render.log" 2>&1 \
  || { cat "$WORK/render.log"; echo "FAIL: template rendering" >&2; exit 1; }
echo "   ok: $(ls "$WORK/render" | wc -l) renders"
for host in k3s-dev-1 k3s-prod-1; do
  echo "   --- $host: cilium-values.yaml.j2 (endpoint lines)"
  grep -E '^k8sService(Host|Port):' "$WORK/render/$host.cilium-values.yaml" | sed 's/^/     /'
done

step "4. ansible-playbook --syntax-check and the bootstrap order"
run "$BIN/ansible-playbook" -i inventory/hosts.yml --syntax-check playbooks/site.yml
"$BIN/ansible-playbook" -i inventory/hosts.yml --list-tasks playbooks/site.yml >"$WORK/list-tasks.txt"
grep -E '^  play #' "$WORK/list-tasks.txt" | sed 's/^/   /'

step "5. the gate's facts on the real renders"
cd "$HERE"
"$BIN/python" - "$REPO" "$WORK" <<'PY'
import copy, json, os, re, sys
import yaml

repo, work = sys.argv[1], sys.argv[2]
failures = []

def check(ok, msg):
    print(("   ok: " if ok else "   FAIL: ") + msg)
    if not ok:
        failures.append(msg)

def load(path):
    with open(os.path.join(repo, path)) as f:
        return yaml.safe_load(f)

def docs(text):
    return [d for d in yaml.safe_load_all(text) if d]

def same(a, b):  # values compare with their types (6443 != "6443", true != 1)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)

def merge(base, over):  # Helm: maps merge deeply, lists replace, null deletes
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out

def get(tree, path):
    for part in path.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree

KEY = re.compile(r"^(\s*)([A-Za-z_][\w.-]*):(?:\s|$)")
def tagged_paths(text, root=""):
    """Dotted paths marked '# [parity]' on their line or the comment lines right above."""
    stack, pending, out = [], [], set()
    for line in text.splitlines():
        s = line.strip()
        if not s:
            pending = []
            continue
        if s.startswith("#"):
            pending.append(s)
            continue
        m = KEY.match(line)
        if not m:
            pending = []
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        inline = "#" in line and "[parity]" in line.split("#", 1)[1]
        if inline or any("[parity]" in c for c in pending):
            if path.startswith(root):
                out.add(path[len(root):])
        stack.append((indent, key))
        pending = []
    return out

VAR = re.compile(r"\$\{([^}]*)\}")
def substitute(text, variables, where):
    def repl(m):
        name = m.group(1)
        if not re.fullmatch(r"[_A-Za-z][_A-Za-z0-9]*", name):
            check(False, f"{where}: substitution form ${{{name}}} not used in this example")
            return m.group(0)
        if name not in variables:
            check(False, f"{where}: ${{{name}}} is not defined by cluster-vars")
            return m.group(0)
        return variables[name]
    return VAR.sub(repl, text)

cfg = load("fluxgate.yaml")
chart_defaults = load("charts/cilium-1.16.5/values.yaml")
inventory_hosts = {}
for host, result in re.findall(r"(?ms)^(\S+) \| SUCCESS => (\{.*?^\})", open(os.path.join(work, "hostvars.txt")).read()):
    inventory_hosts[host] = json.loads(json.loads(result)["msg"])
platform_text = open(os.path.join(work, "kustomize-platform.yaml")).read()
hr_source = open(os.path.join(repo, "platform/cilium/helmrelease.yaml")).read()
mirror_text = open(os.path.join(repo, "platform/cilium/values.yaml")).read()
tpl_source = open(os.path.join(repo, "infra/ansible/roles/cilium/templates/cilium-values.yaml.j2")).read()
site = load("infra/ansible/playbooks/site.yml")

summary = {}
for env, spec in cfg["environments"].items():
    print(f"   --- environment {env}")
    vip = str(spec["vip"])
    group = spec["ansible"]["group"]
    hosts = {h: v for h, v in inventory_hosts.items() if group in v["group_names"]}
    order = [h for h in sorted(hosts)]  # k3s-<env>-1 first, as in the inventory
    founder = order[0]
    node_ips = [hosts[h]["k3s_node_ip"] for h in order]
    fv = hosts[founder]
    check(len(hosts) == 3, f"{env}: 3 nodes in group {group}: {order}")

    # Flux tree: entry dir -> flux-system (self-reconciling) -> platform (post-build).
    objs = docs(open(os.path.join(work, f"kustomize-clusters-{env}.yaml")).read())
    by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    root = by.get(("Kustomization", "flux-system"))
    check(root is not None and root["spec"]["path"] == f"./clusters/{env}", f"{env}: flux-system reconciles ./clusters/{env}")
    plat = by.get(("Kustomization", "platform"))
    check(plat is not None and plat["spec"]["path"] == "./platform"
          and {"name": "flux-system"} in plat["spec"].get("dependsOn", [])
          and {"kind": "ConfigMap", "name": "cluster-vars"} in plat["spec"]["postBuild"]["substituteFrom"],
          f"{env}: platform renders ./platform after flux-system, substituting from cluster-vars")
    cv = by[("ConfigMap", "cluster-vars")]["data"]

    # ha-endpoint / contract cni-dials-vip on the Flux side.
    check(cv["K3S_API_HOST"] == vip, f"{env}: cluster-vars K3S_API_HOST={cv['K3S_API_HOST']} is the VIP {vip}")
    check(cv["K3S_API_HOST"] not in node_ips, f"{env}: K3S_API_HOST is none of the node IPs {node_ips}")

    # Ansible side.
    check(fv["kube_vip_address"] == vip, f"{env}: Ansible kube_vip_address={fv['kube_vip_address']} is the VIP")
    check(all(v["k3s_apiserver_endpoint"] == vip for v in hosts.values()), f"{env}: k3s_apiserver_endpoint is the VIP on every host")
    check(all(v["k3s_api_host"] == fv["k3s_node_ip"] for v in hosts.values()),
          f"{env}: k3s_api_host is the founder {founder} ({fv['k3s_node_ip']}) on every host (cold-boot join)")

    # Post-build substitution of the platform layer with this environment's variables.
    rendered = []
    for i, doc in enumerate(platform_text.split("\n---\n")):
        rendered += docs(substitute(doc, cv, f"{env}: platform document {i}"))
    hr = next(o for o in rendered if o["kind"] == "HelmRelease" and o["metadata"]["name"] == "cilium")
    effective = merge(chart_defaults, hr["spec"]["values"])
    check(effective["k8sServiceHost"] == vip and effective["k8sServicePort"] == 6443,
          f"{env}: HelmRelease kube-system/cilium dials {effective['k8sServiceHost']}:{effective['k8sServicePort']}")
    ready = max(1, (len(hosts) - 1) // 2)
    mu = get(effective, "updateStrategy.rollingUpdate.maxUnavailable")
    check(isinstance(mu, int) and mu <= ready, f"{env}: cilium maxUnavailable={mu} <= {ready} of {len(hosts)} nodes (chart default 2)")
    check(hr["spec"]["chart"]["spec"]["version"] == "1.16.5", f"{env}: chart cilium 1.16.5 is in the chart cache")

    # The Ansible render of the founder, and the mirror file read with the same variables.
    tpl_text = open(os.path.join(work, "render", f"{founder}.cilium-values.yaml")).read()
    bootstrap = merge(chart_defaults, yaml.safe_load(tpl_text))
    mirror = merge(chart_defaults, yaml.safe_load(substitute(mirror_text, cv, f"{env}: platform/cilium/values.yaml")))
    check(bootstrap["k8sServiceHost"] == effective["k8sServiceHost"],
          f"{env}: bootstrap and Flux dial the same endpoint ({bootstrap['k8sServiceHost']})")

    # parity group `cilium`, keys: tagged.
    tags = tagged_paths(hr_source, "spec.values.") | tagged_paths(tpl_text) | tagged_paths(mirror_text)
    tags = {t for t in tags if not any(t.startswith(o + ".") for o in tags)}
    bad = [t for t in sorted(tags) if not (same(get(effective, t), get(bootstrap, t)) and same(get(effective, t), get(mirror, t)))]
    for t in bad:
        print(f"     {t}: helmrelease={get(effective, t)!r} template={get(bootstrap, t)!r} file={get(mirror, t)!r}")
    check(not bad and len(tags) >= 8, f"{env}: parity cilium: {len(tags)} tagged keys agree: {', '.join(sorted(tags))}")

    # tls-san, and the k3s config per host.
    for h in order:
        conf = yaml.safe_load(open(os.path.join(work, "render", f"{h}.k3s-config.yaml")))
        sans = conf.get("tls-san", [])
        check(vip in sans and fv["k3s_node_ip"] in sans and conf.get("disable-kube-proxy") is True,
              f"{env}: {h} tls-san {sans} carries the VIP; kube-proxy disabled")
        if h == founder:
            check(conf.get("cluster-init") is True and "server" not in conf, f"{env}: {h} is the founder (cluster-init)")
        else:
            check(conf.get("server") == f"https://{fv['k3s_node_ip']}:6443", f"{env}: {h} joins the founder {conf.get('server')}")

    # kube-vip announces this environment's VIP, reaches the API on loopback, rolls 1 at a time.
    kv = [o for o in docs(open(os.path.join(work, "render", f"{founder}.kube-vip.yaml")).read()) if o["kind"] == "DaemonSet"][0]
    env_vars = {e["name"]: e["value"] for e in kv["spec"]["template"]["spec"]["containers"][0]["env"]}
    check(env_vars["address"] == vip and env_vars["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
          and kv["spec"]["template"]["spec"]["hostNetwork"] is True
          and kv["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] <= ready,
          f"{env}: kube-vip DaemonSet announces {env_vars['address']}, API via 127.0.0.1, hostNetwork")

    # Contracts (fluxgate.yaml), evaluated on the same data.
    check(effective["k8sServiceHost"] == fv["kube_vip_address"] and effective["k8sServiceHost"] not in node_ips,
          f"{env}: contract cni-dials-vip")
    check(fv["k3s_apiserver_endpoint"] == fv["kube_vip_address"] and fv["k3s_api_host"] != fv["kube_vip_address"]
          and fv["k3s_api_host"] == node_ips[0], f"{env}: contract api-endpoints-split")

    # Secrets are SOPS-encrypted.
    secrets = [o for o in rendered if o["kind"] == "Secret"]
    check(secrets and all("sops" in o and all(str(v).startswith("ENC[") for v in (o.get("stringData") or o.get("data") or {}).values())
                          for o in secrets), f"{env}: {len(secrets)} Secret(s), all SOPS-encrypted")
    summary[env] = {"vip": vip, "founder": founder, "k3s_api_host": fv["k3s_api_host"],
                    "k3s_apiserver_endpoint": fv["k3s_apiserver_endpoint"], "K3S_API_HOST": cv["K3S_API_HOST"],
                    "cilium k8sServiceHost (flux/ansible)": f"{effective['k8sServiceHost']} / {bootstrap['k8sServiceHost']}"}

print("   --- repository-wide")
imports = [p["import_playbook"] for p in site]
want = ["node-baseline.yml", "k3s.yml", "kube-vip.yml", "cilium.yml", "verify.yml", "flux.yml"]
check(imports == want, f"site.yml order: {' -> '.join(imports)}")

roles_dir = os.path.join(repo, "infra/ansible/roles")
playbook_text = "".join(open(os.path.join(repo, "infra/ansible/playbooks", f)).read() for f in want)
for role in sorted(os.listdir(roles_dir)):
    check(re.search(rf"-\s+{role}\s*$", playbook_text, re.M) is not None, f"role {role} is used by a playbook")
    body = ""
    for sub in ("tasks", "templates", "handlers"):
        d = os.path.join(roles_dir, role, sub)
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            body += open(os.path.join(d, f)).read()
    defaults_path = os.path.join(roles_dir, role, "defaults/main.yml")
    defaults = yaml.safe_load(open(defaults_path)) or {}
    defaults_code = re.sub(r"(?m)^\s*#.*$", "", open(defaults_path).read())
    unused = [k for k in defaults
              if not re.search(rf"\b{k}\b", body) and len(re.findall(rf"\b{k}\b", defaults_code)) < 2]
    check(not unused, f"role {role}: every default is used ({', '.join(defaults)})" + (f"; unused: {unused}" if unused else ""))
    tasks = yaml.safe_load(open(os.path.join(roles_dir, role, "tasks/main.yml"))) or []
    flat = []
    for t in tasks:
        flat += [t] + t.get("block", []) + t.get("always", [])
    probes = [t["name"] for t in flat if t.get("changed_when") is False and "register" in t and t.get("check_mode") is not False]
    check(not probes, f"role {role}: read-only probes run under --check" + (f"; missing check_mode: false: {probes}" if probes else ""))

plain = []
for d, _, files in os.walk(repo):
    for f in files:
        if f.endswith((".yaml", ".yml")) and "charts" not in d and "templates" not in d:
            for o in docs(open(os.path.join(d, f)).read()) if "kind: Secret" in open(os.path.join(d, f)).read() else []:
                if isinstance(o, dict) and o.get("kind") == "Secret" and "sops" not in o:
                    plain.append(os.path.relpath(os.path.join(d, f), repo))
check(not plain, "no Secret outside SOPS" + (f": {plain}" if plain else ""))

print("\n   key values per environment:")
for env, vals in summary.items():
    for k, v in vals.items():
        print(f"     {env:5} {k:38} {v}")
if failures:
    print(f"\n{len(failures)} check(s) failed")
    sys.exit(1)
PY

step "verify-homelab: PASS"
