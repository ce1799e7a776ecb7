#!/usr/bin/env python3
"""Checks of charts/leasehold and manifests/ that need no helm binary and no cluster.

    test_chart.py --root REPO [--sidecar BIN] CHECK...
        CHECK: templates shell flags schema render manifests yamllint (default: all)

templates  every template's {{ }} delimiters and define/if/with/range ... end blocks balance,
           only known functions are used (tests/deploy/gotemplate.py), and broken snippets are
           rejected (the checker can fail).
schema     values.yaml validates against values.schema.json (with jsonschema_lite and, when
           importable, the jsonschema package); bad values are rejected by both.
render     the chart renders with the defaults and with every switch flipped; each result is
           valid YAML with the invariants the issue asks for (native/classic sidecar, Downward
           API env, probes on the probe port, securityContext, least-privilege Role, ...).
manifests  manifests/*.yaml equal the chart rendered with the defaults (release "leasehold",
           namespace "default"), apart from the labels only Helm sets: same RBAC rules, same
           flags, same ports, same everything.
flags      the leasehold binary accepts the rendered flags of every variant and its
           --print-config shows the values they came from (needs --sidecar).
shell      shellcheck on the shell scripts inside the chart's and the manifests' containers.
yamllint   yamllint --strict on every plain YAML file of the chart, manifests/ and examples/,
           and on the rendered chart.
"""
import argparse
import copy
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gotemplate  # noqa: E402
import jsonschema_lite  # noqa: E402

HERE = Path(__file__).resolve().parent
HELM_ONLY_LABELS = ("app.kubernetes.io/managed-by", "helm.sh/chart")


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def by_kind(docs):
    out = {}
    for _, d in docs:
        key = (d["kind"], d["metadata"]["name"])
        check(key not in out, f"{key} rendered twice")
        out[key] = d
    return out


# --- templates -------------------------------------------------------------------------------

BROKEN = {
    "unclosed action": "a: {{ .Values.x\n",
    "stray close": "a: }}\n",
    "missing end": "{{- if .Values.x }}\na: 1\n",
    "extra end": "a: 1\n{{- end }}\n",
    "else outside a block": "{{ else }}\n",
    "define inside if": '{{ if .Values.x }}{{ define "a" }}{{ end }}{{ end }}\n',
    "unknown function": "a: {{ .Values.x | toJsonPretty }}\n",
    "nested delimiters": "a: {{ {{ .Values.x }} }}\n",
    "unsupported keyword": '{{ template "x" . }}\n',
    "variables": "{{ $x := .Values.x }}\n",
}


def check_templates(root):
    chart = root / "charts/leasehold"
    defines = gotemplate.check_chart(chart)
    for name in ("leasehold.sidecar", "leasehold.volumes", "leasehold.statusMount",
                 "leasehold.serviceAccountName", "leasehold.leaseName"):
        check(name in defines, f"public named template {name} missing")
    print(f"ok: {len(gotemplate.template_files(chart))} templates balance; "
          f"defines: {', '.join(sorted(defines))}")
    for what, src in BROKEN.items():
        try:
            gotemplate.parse(src, what)
        except gotemplate.TemplateError as e:
            print(f"ok: rejects {what}: {e}")
            continue
        raise Failure(f"the template checker accepted a broken template ({what})")


# --- schema ----------------------------------------------------------------------------------

BAD_VALUES = {
    "unknown key": {"leaseNmae": "x"},
    "sub-second lease duration": {"timings": {"leaseDuration": "1500ms"}},
    "duration without unit": {"timings": {"retryPeriod": "2"}},
    "bad pod label key": {"podLabel": "leader is me"},
    "log format": {"logFormat": "xml"},
    "port zero": {"httpPort": 0},
    "replicas as string": {"example": {"replicas": "3"}},
    "flag without dashes": {"extraArgs": ["follower-mode=poll"]},
    "lease name with capitals": {"leaseName": "My-Lease"},
    "pull policy": {"image": {"pullPolicy": "Sometimes"}},
}


def load_values(chart):
    return yaml.safe_load((chart / "values.yaml").read_text())


def jsonschema_errors(instance, schema):
    try:
        import jsonschema  # noqa: PLC0415 (optional cross-check)
    except ImportError:
        return None
    validator = jsonschema.Draft7Validator(schema)
    return sorted(e.message for e in validator.iter_errors(instance))


def check_schema(root):
    chart = root / "charts/leasehold"
    schema = json.loads((chart / "values.schema.json").read_text())
    values = load_values(chart)
    errors = jsonschema_lite.validate(values, schema)
    check(not errors, f"values.yaml does not validate: {errors}")
    other = jsonschema_errors(values, schema)
    check(not other, f"values.yaml does not validate with jsonschema: {other}")
    print("ok: values.yaml validates against values.schema.json"
          + ("" if other is None else " (also with the jsonschema package)"))
    as_dependency = dict(values, **{"global": {"imageRegistry": "x"}})
    check(not jsonschema_lite.validate(as_dependency, schema),
          "as a dependency Helm adds `global` to the values: the schema must allow it")
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    check(meta["apiVersion"] == "v2", "Chart.yaml apiVersion must be v2")
    check(values["image"]["tag"] == str(meta["appVersion"]),
          f"values image.tag {values['image']['tag']} != Chart appVersion {meta['appVersion']}")
    for what, override in BAD_VALUES.items():
        bad = gotemplate.deep_merge(values, override)
        errors = jsonschema_lite.validate(bad, schema)
        check(errors, f"the schema accepted bad values ({what}): {override}")
        other = jsonschema_errors(bad, schema)
        check(other is None or other, f"jsonschema accepted bad values ({what})")
        print(f"ok: rejects {what}: {errors[0]}")


# --- render ----------------------------------------------------------------------------------

VARIANTS = {
    "defaults": {},
    "pod label + leader Service": {"podLabel": "leasehold.io/leader",
                                   "leaderService": {"enabled": True}},
    "classic sidecar": {"sidecar": {"native": False}},
    "RBAC only (own workload)": {"example": {"enabled": False}, "tests": {"enabled": False}},
    "no status file": {"statusFile": {"enabled": False}},
    "own names and flags": {"fullnameOverride": "web", "leaseName": "web-writer",
                            "serviceAccount": {"name": "web-sa"}, "httpPort": 4141,
                            "probePort": 9191, "extraArgs": ["--follower-mode=poll"],
                            "timings": {"leaseDuration": "30s", "renewDeadline": "20s",
                                        "retryPeriod": "4s"}},
}


def flag(args, name):
    vals = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    check(len(vals) <= 1, f"--{name} given twice: {args}")
    return vals[0] if vals else None


def check_sidecar(c, values, native, pod_spec):
    where = f"sidecar in {'initContainers' if native else 'containers'}"
    if native:
        check(c.get("restartPolicy") == "Always", f"{where}: native needs restartPolicy Always")
    else:
        check("restartPolicy" not in c, f"{where}: classic sidecar has no restartPolicy")
    args = c["args"]
    check(all(a.startswith("--") and "=" in a for a in args if a not in values["extraArgs"]),
          f"{where}: flags as --name=value: {args}")
    lease = values["leaseName"] or values["fullnameOverride"] or "leasehold"
    check(flag(args, "lease-name") == lease, f"{where}: --lease-name {args}")
    t = values["timings"]
    check((flag(args, "lease-duration"), flag(args, "renew-deadline"),
           flag(args, "retry-period")) == (t["leaseDuration"], t["renewDeadline"],
                                           t["retryPeriod"]), f"{where}: timings {args}")
    check(flag(args, "http-address") == f"127.0.0.1:{values['httpPort']}",
          f"{where}: /leader must listen on 127.0.0.1 only: {args}")
    probe = flag(args, "probe-address")
    check(probe == f"0.0.0.0:{values['probePort']}", f"{where}: probe address {probe}")
    check((flag(args, "pod-label") or "") == values["podLabel"], f"{where}: --pod-label {args}")
    for extra in values["extraArgs"]:
        check(extra in args, f"{where}: extra arg {extra} missing")
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
    check(env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace",
                  "POD_IP": "status.podIP"}, f"{where}: Downward API env {env}")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(ports == {"lh-probes": values["probePort"]}, f"{where}: ports {ports}")
    for probe_kind, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"),
                             ("readinessProbe", "/readyz")):
        get = c[probe_kind]["httpGet"]
        check(get["path"] == path and get["port"] in ("lh-probes", values["probePort"]),
              f"{where}: {probe_kind} {get}")
    sc = c["securityContext"]
    check(sc["runAsNonRoot"] is True and sc["readOnlyRootFilesystem"] is True
          and sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
          and sc["seccompProfile"]["type"] == "RuntimeDefault"
          and isinstance(sc["runAsUser"], int) and sc["runAsUser"] > 0,
          f"{where}: securityContext {sc}")
    check(c["resources"] == values["resources"], f"{where}: resources {c['resources']}")
    status = flag(args, "status-file")
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    if values["statusFile"]["enabled"]:
        mount = c["volumeMounts"][0]
        check(status == mount["mountPath"] + "/status.json", f"{where}: status file {status}")
        check("emptyDir" in volumes.get(mount["name"], {}), f"{where}: emptyDir for {mount}")
    else:
        check(status is None and "volumeMounts" not in c and not volumes,
              f"{where}: no status file expected")


def check_rendered(docs, values, chart_meta):
    objs = by_kind(docs)
    name = values["fullnameOverride"] or "leasehold"
    lease = values["leaseName"] or name
    sa = values["serviceAccount"]["name"] or name
    check(("ServiceAccount", sa) in objs, "ServiceAccount missing")
    role = objs[("Role", name)]
    rules = role["rules"]
    want = [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "resourceNames": [lease], "verbs": ["get", "update", "watch", "list"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
         "verbs": ["create", "patch"]},
    ]
    if values["podLabel"]:
        want.append({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "patch"]})
    check(rules == want, f"Role rules are not least privilege as documented:\n{rules}")
    rb = objs[("RoleBinding", name)]
    check(rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                            "name": name}, f"roleRef {rb['roleRef']}")
    check(rb["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": "default"}],
          f"subjects {rb['subjects']}")
    for (kind, _), obj in objs.items():
        labels = obj["metadata"].get("labels", {})
        for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance",
                    "app.kubernetes.io/version", "app.kubernetes.io/managed-by",
                    "helm.sh/chart"):
            check(key in labels, f"{kind}: label {key} missing")
        check(labels["helm.sh/chart"] == f"leasehold-{chart_meta['version']}", "chart label")
        check(obj["metadata"].get("namespace") == "default", f"{kind}: namespace")
    pods = []
    if values["example"]["enabled"]:
        dep = objs[("Deployment", name)]
        sel = dep["spec"]["selector"]["matchLabels"]
        tmpl = dep["spec"]["template"]
        check(all(tmpl["metadata"]["labels"].get(k) == v for k, v in sel.items()),
              "selector does not match the pod labels")
        pods.append(("Deployment", tmpl["spec"], values["sidecar"]["native"]))
    test = [o for (k, _), o in objs.items() if k == "Pod"]
    if values["tests"]["enabled"] and values["sidecar"]["native"]:
        check(len(test) == 1, "helm test pod missing")
        pod = test[0]
        check(pod["metadata"]["annotations"]["helm.sh/hook"] == "test", "helm test hook")
        check(pod["spec"]["restartPolicy"] == "Never", "test pod restartPolicy")
        script = pod["spec"]["containers"][0]["command"][-1]
        check(f"http://127.0.0.1:{values['httpPort']}/leader" in script and "curl" in script,
              "the helm test must curl /leader")
        pods.append(("test Pod", pod["spec"], True))
    else:
        check(not test, "no helm test pod expected")
    for what, spec, native in pods:
        check(spec["serviceAccountName"] == sa, f"{what}: serviceAccountName")
        psc = spec["securityContext"]
        check(psc["runAsNonRoot"] is True and psc["seccompProfile"]["type"] == "RuntimeDefault",
              f"{what}: pod securityContext")
        inits = spec.get("initContainers", [])
        sidecars = [c for c in (inits if native else spec["containers"])
                    if c["name"] == "leasehold"]
        check(len(sidecars) == 1, f"{what}: exactly one leasehold container expected "
                                  f"in {'initContainers' if native else 'containers'}")
        if not native:
            check(not inits, f"{what}: classic sidecar must not be an init container")
        check_sidecar(sidecars[0], values, native, spec)
    svc = objs.get(("Service", f"{name}-leader"))
    if values["leaderService"]["enabled"]:
        check(svc and svc["spec"]["selector"].get(values["podLabel"]) == "true",
              "leader Service must select <podLabel>=true")
    else:
        check(svc is None, "no leader Service expected")


def render(root, overrides):
    return gotemplate.render_chart(root / "charts/leasehold", overrides)


def check_render(root, yamllint_out=None):
    chart = root / "charts/leasehold"
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    schema = json.loads((chart / "values.schema.json").read_text())
    base = load_values(chart)
    for what, overrides in VARIANTS.items():
        values = gotemplate.deep_merge(base, overrides)
        check(not jsonschema_lite.validate(values, schema), f"{what}: values invalid")
        rendered = render(root, overrides)
        docs = gotemplate.documents(rendered)
        check_rendered(docs, values, meta)
        notes = rendered["templates/NOTES.txt"]
        lease = values["leaseName"] or values["fullnameOverride"] or "leasehold"
        check(f"get lease {lease}" in notes, f"{what}: NOTES.txt shows kubectl get lease")
        if values["podLabel"]:
            check(f"get pods -l {values['podLabel']}=true" in notes, "NOTES: leader pod")
        if yamllint_out is not None:
            slug = re.sub(r"[^a-z]+", "-", what.lower()).strip("-")
            for rel, text in rendered.items():
                if rel.endswith(".yaml") and text.strip():
                    out = yamllint_out / slug / rel
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_text(text.strip("\n") + "\n")
        kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for _, d in docs)
        print(f"ok: render {what}: {', '.join(kinds)}")
    try:
        render(root, {"leaderService": {"enabled": True}})
    except gotemplate.TemplateFail as e:
        print(f"ok: leaderService without podLabel fails: {e}")
    else:
        raise Failure("leaderService.enabled without podLabel must fail")


# --- manifests -------------------------------------------------------------------------------


def normalise(obj):
    obj = copy.deepcopy(obj)
    labels = obj["metadata"].get("labels", {})
    for key in HELM_ONLY_LABELS:
        labels.pop(key, None)
    return obj


def diff(a, b, path=""):
    """First difference between two JSON-like values, as text."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'chart' if k in a else 'manifests'}"
            d = diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items in the chart, {len(b)} in manifests"
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: chart {a!r} != manifests {b!r}"


def manifest_docs(root):
    docs = []
    for path in sorted((root / "manifests").glob("*.yaml")):
        for d in yaml.safe_load_all(path.read_text()):
            if d is not None:
                docs.append((path.name, d))
    return docs


def sidecar_of(deployment):
    spec = deployment["spec"]["template"]["spec"]
    return next(c for c in spec.get("initContainers", []) + spec["containers"]
                if c["name"] == "leasehold")


def check_manifests(root):
    chart = {k: normalise(v) for k, v in by_kind(gotemplate.documents(render(root, {}))).items()
             if k[0] != "Pod"}  # the helm test pod exists only in the chart
    plain = {k: normalise(v) for k, v in by_kind(manifest_docs(root)).items()}
    check(set(chart) == set(plain), f"objects differ: chart {sorted(chart)} vs manifests "
                                    f"{sorted(plain)}")
    # The three things that must never drift, with readable messages, then everything.
    role = ("Role", "leasehold")
    check(chart[role]["rules"] == plain[role]["rules"],
          f"RBAC rules differ:\nchart: {chart[role]['rules']}\nmanifests: {plain[role]['rules']}")
    dep = ("Deployment", "leasehold")
    a, b = sidecar_of(chart[dep]), sidecar_of(plain[dep])
    check(a["args"] == b["args"], f"flags differ:\nchart: {a['args']}\nmanifests: {b['args']}")
    check(a["ports"] == b["ports"], f"ports differ: {a['ports']} vs {b['ports']}")
    for key in chart:
        d = diff(chart[key], plain[key])
        check(d is None, f"{key[0]}/{key[1]} differs: {d}")
    print(f"ok: manifests/ equal the chart's defaults: {', '.join(f'{k}/{n}' for k, n in plain)}")
    print(f"ok: RBAC rules: {json.dumps(plain[role]['rules'])}")
    print(f"ok: flags: {' '.join(b['args'])}")


# --- yamllint --------------------------------------------------------------------------------


def yamllint(paths):
    r = subprocess.run(["yamllint", "--strict", "-f", "parsable", "-c",
                        str(HERE / "yamllint.yaml"), *map(str, paths)],
                       capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def plain_yaml_files(root):
    files = [root / "charts/leasehold/Chart.yaml", root / "charts/leasehold/values.yaml",
             HERE / "yamllint.yaml"]
    for d in ("manifests", "examples"):
        files += sorted((root / d).rglob("*.yaml")) + sorted((root / d).rglob("*.yml"))
    return files


def check_yamllint(root):
    try:
        subprocess.run(["yamllint", "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise Failure("yamllint is not installed (scripts/install-deps.sh installs it)")
    files = plain_yaml_files(root)
    rc, out = yamllint(files)
    check(rc == 0, f"yamllint:\n{out}")
    print(f"ok: yamllint --strict: {len(files)} plain YAML files")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        check_render(root, yamllint_out=tmp / "rendered")
        rendered = sorted((tmp / "rendered").rglob("*.yaml"))
        rc, out = yamllint(rendered)
        check(rc == 0, f"yamllint on the rendered chart:\n{out}")
        print(f"ok: yamllint --strict: {len(rendered)} rendered files")
        broken = tmp / "broken.yaml"
        broken.write_text("a: 1\n  b: 2\n")
        rc, out = yamllint([broken])
        check(rc != 0, "yamllint accepted a broken file")
        print(f"ok: yamllint rejects a broken file: {out.splitlines()[0]}")


# --- shell ------------------------------------------------------------------------------------


def shell_scripts(docs):
    """(where, script) of every container command of the form [sh, -c, SCRIPT]."""
    out = []
    for src, d in docs:
        spec = d.get("spec", {})
        spec = spec.get("template", {}).get("spec", spec)
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            cmd = c.get("command") or []
            if len(cmd) == 3 and cmd[0] in ("/bin/sh", "sh") and cmd[1] == "-c":
                out.append((f"{src} {d['kind']}/{d['metadata']['name']} {c['name']}", cmd[2]))
    return out


def check_shell(root):
    scripts = shell_scripts(gotemplate.documents(render(root, {})))
    scripts += shell_scripts(manifest_docs(root))
    check(scripts, "no container scripts found")
    for where, script in scripts:
        r = subprocess.run(["shellcheck", "-s", "sh", "-"], input=script, capture_output=True,
                           text=True)
        check(r.returncode == 0, f"shellcheck {where}:\n{r.stdout}{r.stderr}")
    r = subprocess.run(["shellcheck", "-s", "sh", "-"], input="echo $1 `ls`\n",
                       capture_output=True, text=True)
    check(r.returncode != 0, "shellcheck accepted a bad script")
    print(f"ok: shellcheck: {len(scripts)} container scripts "
          f"({', '.join(w for w, _ in scripts)})")


# --- flags -------------------------------------------------------------------------------------

DUMMY_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def check_flags(root, sidecar):
    """The binary itself accepts the flags of every rendered variant (--print-config)."""
    check(sidecar, "flags: needs --sidecar BIN")
    base = load_values(root / "charts/leasehold")
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        kubeconfig.write_text(DUMMY_KUBECONFIG)
        env = {"PATH": "/usr/bin:/bin", "KUBECONFIG": str(kubeconfig), "POD_NAME": "web-0",
               "POD_NAMESPACE": "default", "POD_IP": "10.0.0.1", "HOME": tmp}
        for what, overrides in VARIANTS.items():
            values = gotemplate.deep_merge(base, overrides)
            docs = gotemplate.documents(render(root, overrides))
            deps = [d for _, d in docs if d["kind"] == "Deployment"]
            if not deps:
                continue
            args = sidecar_of(deps[0])["args"]
            r = subprocess.run([str(sidecar), *args, "--print-config"], capture_output=True,
                               text=True, timeout=10, env=env)
            check(r.returncode == 0, f"{what}: leasehold rejects the chart's flags {args}: "
                                     f"{r.stderr.strip()}")
            cfg = yaml.safe_load(r.stdout)
            t = values["timings"]
            want = {"leaseName": values["leaseName"] or values["fullnameOverride"] or "leasehold",
                    "leaseDuration": t["leaseDuration"], "renewDeadline": t["renewDeadline"],
                    "retryPeriod": t["retryPeriod"],
                    "httpAddress": f"127.0.0.1:{values['httpPort']}",
                    "probeAddress": f"0.0.0.0:{values['probePort']}",
                    "statusFile": ("/var/run/leasehold/status.json"
                                   if values["statusFile"]["enabled"] else None),
                    "podLabel": values["podLabel"] or None,
                    "logFormat": values["logFormat"], "logLevel": values["logLevel"]}
            got = {k: cfg.get(k) or None for k in want}  # unset prints "" or ~
            check(got == want, f"{what}: effective configuration {got} != {want}")
            print(f"ok: leasehold accepts the flags of {what!r}")


CHECKS = {"templates": check_templates, "shell": check_shell, "flags": check_flags,
          "schema": check_schema, "render": check_render,
          "manifests": check_manifests, "yamllint": check_yamllint}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=HERE.parent.parent)
    ap.add_argument("--sidecar", type=Path, help="the leasehold binary (for `flags`)")
    ap.add_argument("checks", nargs="*", default=list(CHECKS))
    args = ap.parse_args()
    failed = []
    names = args.checks or [c for c in CHECKS if c != "flags" or args.sidecar]
    for name in names:
        print(f"=== {name}")
        try:
            if name == "flags":
                check_flags(args.root.resolve(), args.sidecar)
            else:
                CHECKS[name](args.root.resolve())
        except (Failure, gotemplate.TemplateError, jsonschema_lite.SchemaError) as e:
            print(f"FAIL {name}: {e}")
            failed.append(name)
    print("FAILED: " + " ".join(failed) if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
