#!/usr/bin/env bash
# Regenerates k8s-v1.32-strict.json.gz and k8s-v1.37-strict.json.gz, the built-in Kubernetes
# schemas fluxgate embeds: v1.32 (the kubectl of this project's machines) is the one findings
# name; v1.37 (the newest the wheel has) keeps a field or an API version that newer clusters
# serve from being reported as unknown.
#
# Source: the PyPI wheel kubernetes-validate 1.37.0 (Apache-2.0), which ships the OpenAPI
# definitions of every Kubernetes version from v1.25 to v1.37 as JSON Schema; we take
# vX.Y.0-local-strict/_definitions.json (the strict variant: `additionalProperties: false`
# on every object, so a typo is an unknown field) and keep only what validation reads:
# descriptions, patch strategies and list types are dropped. `kinds` maps
# "group/version/Kind" (core: "v1/Kind") to the $defs key, from each definition's
# x-kubernetes-group-version-kind. Needs python3 and pip; run from anywhere.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps -d "$tmp" kubernetes-validate==1.37.0
for version in v1.32.0 v1.37.0; do
python3 - "$tmp"/kubernetes_validate-1.37.0-py3-none-any.whl "$version" "$here/k8s-${version%.0}-strict.json.gz" <<'PY'
import gzip, json, sys, zipfile

wheel, version, out = sys.argv[1:]
name = f"kubernetes_validate/kubernetes-json-schema/{version}-local-strict/_definitions.json"
defs = json.loads(zipfile.ZipFile(wheel).read(name))["$defs"]

KEEP = {"type", "properties", "additionalProperties", "items", "required", "enum", "$ref",
        "oneOf", "anyOf", "allOf", "format"}

def slim(s):
    if isinstance(s, list):
        return [slim(x) for x in s]
    if not isinstance(s, dict):
        return s
    o = {}
    for k, v in s.items():
        if k not in KEEP:
            continue
        if k == "properties":
            o[k] = {p: slim(x) for p, x in v.items()}
        elif k == "$ref":
            o[k] = v.rsplit("/", 1)[-1]
        else:
            o[k] = slim(v)
    return o

kinds = {}
for key, d in defs.items():
    for gvk in d.get("x-kubernetes-group-version-kind", []):
        gv = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
        # A definition used as a top-level object carries apiVersion and kind properties; the
        # meta types (DeleteOptions, WatchEvent) list every group and are not objects one applies.
        if "apiVersion" in d.get("properties", {}) and "kind" in d.get("properties", {}):
            kinds.setdefault(f"{gv}/{gvk['kind']}", key)
data = {
    "source": f"kubernetes-validate 1.37.0 (PyPI, Apache-2.0), {version}-local-strict/_definitions.json",
    "version": version,
    "kinds": dict(sorted(kinds.items())),
    "defs": {k: slim(v) for k, v in sorted(defs.items())},
}
raw = json.dumps(data, separators=(",", ":"), sort_keys=False).encode()
with open(out, "wb") as f:
    f.write(gzip.compress(raw, compresslevel=9, mtime=0))
print(f"{len(kinds)} kinds, {len(defs)} definitions, {len(raw)} bytes raw")
PY
done
ls -l "$here"/k8s-*-strict.json.gz
