#!/usr/bin/env bash
# Resolving every variable of every host: fluxgate (release build of fluxgate_ansible's
# `resolve_all` example, one process per repository) against ansible-core (one ansible-playbook run per repository that templates the
# same variables with a debug loop). Prints both times and the ratio.
#
# Needs FLUXGATE_ANSIBLE_VENV (default: .venv-oracle) and FLUXGATE_CORPUS for the corpus repos.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${FLUXGATE_ANSIBLE_VENV:-$here/.venv-oracle}"
corpus="${FLUXGATE_CORPUS:-}"
[ -x "$venv/bin/ansible-playbook" ] || { echo "skipping: no ansible-core in $venv"; exit 0; }
cargo build --release -q -p fluxgate_ansible --example resolve_all --manifest-path "$here/Cargo.toml"
fg="$here/target/release/examples/resolve_all"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

repos=("homelab|$here/examples/homelab|infra/ansible/inventory/hosts.yml|infra/ansible/playbooks/site.yml|infra/ansible/ansible.cfg")
if [ -n "$corpus" ]; then
  repos+=("techno-tim|$corpus/gitops/techno-tim__k3s-ansible|inventory/sample/hosts.ini|site.yml|")
  repos+=("k3s-io|$corpus/gitops/k3s-io__k3s-ansible|inventory-sample.yml|playbooks/site.yml|ansible.cfg")
fi

now() { date +%s.%N; }
total_fg=0; total_ans=0
for spec in "${repos[@]}"; do
  IFS='|' read -r name dir inv pb cfg <<<"$spec"
  copy="$work/$name"; cp -r "$dir" "$copy"; rm -rf "$copy/.git"
  t0=$(now)
  "$fg" "$copy" "$inv" "$pb" "$cfg" >"$work/$name.json"
  t1=$(now)
  hosts=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' "$work/$name.json")
  # The same variables, asked of ansible-core in one run.
  python3 - "$copy" "$pb" "$work" "$name" $hosts <<'PY'
import json, os, shutil, sys
copy, pb, work, name, hosts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
names, roles = [], []
all_hosts = json.load(open(f"{work}/{name}.json"))
for h in hosts:
    d = all_hosts[h]
    for k, v in list(d["vars"].items()) + list(d["errors"].items()):
        if k not in names:
            names.append(k)
        src = v.get("source") or ""
        if src.startswith("role defaults (") or src.startswith("role vars ("):
            r = src.split("(", 1)[1].rstrip(")")
            if r not in roles:
                roles.append(r)
role_dirs = []
for r in roles:
    for base in ["roles", os.path.join(os.path.dirname(pb), "roles")]:
        p = os.path.join(copy, base, r)
        if os.path.isdir(p):
            shutil.rmtree(os.path.join(p, "tasks"), ignore_errors=True)
            shutil.rmtree(os.path.join(p, "handlers"), ignore_errors=True)
            role_dirs.append(os.path.abspath(p)); break
play = [{"hosts": "all", "gather_facts": False, "roles": [{"role": d} for d in role_dirs],
         "tasks": [{"ansible.builtin.debug": {"msg": "{{ lookup('ansible.builtin.vars', item) }}"},
                    "loop": names, "ignore_errors": True, "tags": ["fgdump"]}]}]
json.dump(play, open(os.path.join(copy, os.path.dirname(pb), "__bench.yml"), "w"))
PY
  envcfg="$copy/${cfg:-.none.cfg}"
  t2=$(now)
  ANSIBLE_CONFIG="$envcfg" ANSIBLE_HOME="$work/home" ANSIBLE_LOCAL_TEMP="$work/tmp" \
    "$venv/bin/ansible-playbook" -i "$copy/$inv" "$copy/$(dirname "$pb")/__bench.yml" \
    --tags fgdump --skip-tags always -e ansible_connection=local >/dev/null 2>&1 || true
  t3=$(now)
  fgt=$(echo "$t1 - $t0" | bc -l); ant=$(echo "$t3 - $t2" | bc -l)
  printf '%-12s hosts=%-2s fluxgate %.3fs  ansible-core %.3fs  ratio %.0fx\n' "$name" "$(echo $hosts | wc -w)" "$fgt" "$ant" "$(echo "$ant / $fgt" | bc -l)"
  total_fg=$(echo "$total_fg + $fgt" | bc -l); total_ans=$(echo "$total_ans + $ant" | bc -l)
done
printf 'TOTAL        fluxgate %.3fs  ansible-core %.3fs  ratio %.0fx\n' "$total_fg" "$total_ans" "$(echo "$total_ans / $total_fg" | bc -l)"
