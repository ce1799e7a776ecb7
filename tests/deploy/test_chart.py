#!/usr/bin/env python3
"""Checks of charts/leasehold and manifests/ with the real helm binary (no cluster needed).

    test_chart.py [--helm BIN] [--sidecar BIN] CHECK...
        CHECK: lint subchart shell flags schema render manifests yamllint runmode (default:
               all; flags only with --sidecar)

helm is --helm, else $LEASEHOLD_HELM, else build/realkube/bin/helm (tests/realkube/build.sh).
Every rendering is `helm template leasehold charts/leasehold --namespace default
--kube-version <the real server's version>` with the variant's values in a -f file.

lint       `helm lint --strict` passes with the defaults and every variant; broken copies of the
           chart (parse error, unknown function, invalid YAML, a removed API, missing end) and a
           Kubernetes older than Chart.yaml's kubeVersion fail it (the check can fail).
subchart   the chart as a dependency of a parent chart, used exactly as charts/leasehold/README.md
           shows: the public named templates render the sidecar, volumes and mount into the
           parent's Deployment; helm's `global` values pass the schema; lint --strict passes.
schema     values.schema.json is valid draft 7 and values.yaml passes it (python3-jsonschema);
           Chart.yaml is apiVersion v2, its appVersion the image tag, its license annotation
           (artifacthub.io/license) the repository's (Apache-2.0);
           each kind of bad value is rejected by python3-jsonschema AND by helm itself
           (`helm template` and `helm lint` fail with the schema error naming the key; with
           --skip-schema-validation the same values render, so it was the schema); a digest in
           image.tag is among them.
render     every variant renders to the objects the docs promise (the image as
           repository:tag, @image.digest when pinned; app.kubernetes.io/version the tag and a
           valid label value; native/classic sidecar,
           Downward API env, probes on the probe port, securityContext, least-privilege Role,
           helm test pod, leader Service only with podLabel, helm uninstall's pre-delete
           hook (`leasehold scale-down` as a ServiceAccount that may patch the Deployment's
           scale and list/watch pods) only with the example, ...).
manifests  manifests/*.yaml equal the default rendering (release "leasehold", namespace
           "default"), apart from the labels only Helm sets.
flags      the leasehold binary accepts the rendered flags of every variant and its
           --print-config shows the values they came from (needs --sidecar).
shell      shellcheck on the shell scripts inside the chart's and the manifests' containers.
yamllint   yamllint --strict on every plain YAML file of the chart, manifests/ and examples/,
           and on every variant's `helm template --output-dir` files.
runmode    runMode.enabled renders the example Deployment under `leasehold run`: an init
           container runs `/usr/local/bin/leasehold copy-self /leasehold/leasehold` (the image
           has no shell and no cp) to copy the binary into an emptyDir, the app
           container's command is `/leasehold/leasehold run <flags> -- <command>`, no sidecar,
           Downward API env and probes on the app container, the same Role; lint --strict and
           yamllint pass; the binary accepts the command and its copy-self, run as the init
           container's command, copies it (with --sidecar); bad run-mode values
           (restart: sometimes, ...) are refused by the schema.

Why ~1000 lines in one file: nine checks of one chart that share its variants (VARIANTS, which
test_helm_real.py imports too), the rendering and the object helpers (the helm test's pod and
grants among them); each check is a function of 20-80 lines, one ctest entry each. The values
added later (placement, PDB, injector, leases) have a file of their own, test_chart_values.py. Running helm itself is leasehold_testing.helm.
"""
import copy
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from leasehold_testing import Failure, check  # noqa: E402
from leasehold_testing import chart_suite  # noqa: E402
from leasehold_testing.helm import (CHART, by_kind, deep_merge, is_hook,  # noqa: E402
                                    load_values, server_kube_version)
from leasehold_testing.paths import LICENSE_SPDX, ROOT  # noqa: E402

HERE = Path(__file__).resolve().parent
HELM_ONLY_LABELS = ("app.kubernetes.io/managed-by", "helm.sh/chart")
SCHEMA_ERROR = "values don't meet the specifications of the schema"


def chart_meta():
    return yaml.safe_load((CHART / "Chart.yaml").read_text())


def first_line(text, pattern):
    """The first line of helm's output that contains pattern (for the log)."""
    return next((ln.strip() for ln in text.splitlines() if pattern in ln), text.strip()[:200])


def copy_chart(dst):
    shutil.copytree(CHART, dst)
    return dst


# --- lint ------------------------------------------------------------------------------------

# Mutations of a copy of the chart that `helm lint --strict` must reject: (file, text appended
# or the whole new file, a fragment of helm's message).
BROKEN = {
    "unclosed action": ("templates/role.yaml", "a: {{ .Values.x\n", "unclosed action"),
    "unknown function": ("templates/role.yaml", "{{ .Values.podLabel | toJsonPretty }}\n",
                         'function "toJsonPretty" not defined'),
    "missing end": ("templates/extra.yaml", "{{- if .Values.podLabel }}\na: 1\n",
                    "unexpected EOF"),
    "invalid YAML": ("templates/extra.yaml", "apiVersion: v1\nkind: ConfigMap\n  b: 2\n",
                     "unable to parse YAML"),
    "API removed in 1.25": ("templates/extra.yaml",
                            "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\n"
                            "metadata:\n  name: x\nspec:\n  minAvailable: 1\n",
                            "policy/v1beta1 PodDisruptionBudget"),
}


def check_lint(helm, _args):
    out = helm.lint().stdout
    check("0 chart(s) failed" in out, f"helm lint --strict: {out}")
    print(f"ok: helm lint --strict (Kubernetes {helm.kube_version}): {out.strip().splitlines()[-1]}")
    for what, overrides in VARIANTS.items():
        helm.lint(overrides)
        print(f"ok: helm lint --strict with {what}: {json.dumps(overrides)}")
    bad = helm.lint({"leaderService": {"enabled": True}}, ok=False)
    check(bad.returncode != 0 and "needs podLabel" in bad.stdout + bad.stderr,
          f"lint must fail on leaderService without podLabel: {bad.stdout}{bad.stderr}")
    print("ok: lint fails on leaderService without podLabel: "
          + first_line(bad.stdout + bad.stderr, "needs podLabel"))
    old = helm.run("template", "x", CHART, "--kube-version", "1.24.9", ok=False)
    text = old.stdout + old.stderr
    check(old.returncode != 0 and "incompatible with Kubernetes v1.24.9" in text,
          f"Kubernetes 1.24 must be refused by Chart.yaml's kubeVersion: {text}")
    print(f"ok: kubeVersion {chart_meta()['kubeVersion']} refuses 1.24: "
          + first_line(text, "incompatible"))
    with tempfile.TemporaryDirectory() as tmp:
        for what, (rel, text, want) in BROKEN.items():
            chart = copy_chart(Path(tmp) / what.replace(" ", "-") / "leasehold")
            path = chart / rel
            path.write_text((path.read_text() if path.exists() else "") + text)
            r = helm.lint(chart=chart, ok=False)
            out = r.stdout + r.stderr
            check(r.returncode != 0, f"helm lint --strict accepted a broken chart ({what}):\n{out}")
            check(want in out, f"lint of {what}: expected {want!r} in:\n{out}")
            print(f"ok: lint rejects {what}: {first_line(out, want)}")


# --- subchart --------------------------------------------------------------------------------

PARENT_CHART = """apiVersion: v2
name: my-app
version: 1.0.0
kubeVersion: ">=1.29.0-0"
dependencies:
  - name: leasehold
    version: 0.1.0
    repository: file://../leasehold
"""
PARENT_VALUES = {"leasehold": {"example": {"enabled": False}, "tests": {"enabled": False},
                               "leaseName": "my-app"}}
# The pod template part is the one in charts/leasehold/README.md, line for line.
PARENT_DEPLOYMENT = """{{- $lh := dict "Values" .Values.leasehold "Release" .Release "Chart" .Chart "Capabilities" .Capabilities }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  replicas: 2
  selector:
    matchLabels:
      app: my-app
  template:
    metadata:
      labels:
        app: my-app
    spec:
      serviceAccountName: {{ include "leasehold.serviceAccountName" $lh }}
      initContainers:                       # containers: when `include "leasehold.native" $lh` is ""
        {{- include "leasehold.sidecar" $lh | nindent 8 }}
      containers:
        - name: app
          image: my-app:1.0
          env:
            - name: LEADER_URL
              value: http://127.0.0.1:{{ .Values.leasehold.httpPort }}/leader
          volumeMounts:
            {{- include "leasehold.statusMount" $lh | nindent 12 }}
      volumes:
        {{- include "leasehold.volumes" $lh | nindent 8 }}
"""


def make_parent_chart(tmp):
    """A chart that uses leasehold as a dependency as its README says; returns its path."""
    parent = Path(tmp) / "my-app"
    (parent / "templates").mkdir(parents=True)
    (parent / "Chart.yaml").write_text(PARENT_CHART)
    (parent / "values.yaml").write_text(yaml.safe_dump(PARENT_VALUES, sort_keys=False))
    (parent / "templates/deployment.yaml").write_text(PARENT_DEPLOYMENT)
    copy_chart(parent / "charts/leasehold")
    return parent


def check_parent_rendering(docs, release):
    objs = by_kind(docs)
    kinds = sorted(f"{k}/{n}" for k, n in objs)
    check(kinds == [f"Deployment/{release}-app", "Lease/my-app", f"Role/{release}",
                    f"RoleBinding/{release}", f"ServiceAccount/{release}"],
          f"parent chart objects: {kinds}")
    spec = objs[("Deployment", f"{release}-app")]["spec"]["template"]["spec"]
    check(spec["serviceAccountName"] == release, f"serviceAccountName {spec}")
    (side,) = spec["initContainers"]
    check(side["name"] == "leasehold" and side["restartPolicy"] == "Always", f"sidecar {side}")
    check("--lease-name=my-app" in side["args"], f"sidecar args {side['args']}")
    check(spec["containers"][0]["volumeMounts"] == [
        {"name": "leasehold-status", "mountPath": "/var/run/leasehold", "readOnly": True}],
        f"statusMount {spec['containers'][0]}")
    check([v["name"] for v in spec["volumes"]] == ["leasehold-status"], f"volumes {spec}")
    rules = objs[("Role", release)]["rules"]
    check(rules[0]["resourceNames"] == ["my-app"], f"Role limited to the parent's lease: {rules}")


def check_subchart(helm, _args):
    with tempfile.TemporaryDirectory() as tmp:
        parent = make_parent_chart(tmp)
        docs = helm.render(chart=parent, release="shop")
        check_parent_rendering(docs, "shop")
        print("ok: as a dependency (global values added by helm pass the schema): "
              + ", ".join(sorted(f"{d['kind']}/{d['metadata']['name']}" for _, d in docs)))
        helm.lint(chart=parent)
        print("ok: helm lint --strict of the parent chart")
        r = helm.template({"leasehold": {"httpPort": 0}}, chart=parent, release="shop", ok=False)
        out = r.stdout + r.stderr
        check(r.returncode != 0 and SCHEMA_ERROR in out and "httpPort" in out,
              f"the subchart's schema must apply to the parent's leasehold values:\n{out}")
        print(f"ok: parent's leasehold.httpPort=0 rejected by the subchart schema: "
              f"{first_line(out, 'httpPort')}")


# --- schema ----------------------------------------------------------------------------------

# (override, the key helm and jsonschema must name)
BAD_VALUES = {
    "unknown key": ({"leaseNmae": "x"}, "leaseNmae"),
    "sub-second lease duration": ({"timings": {"leaseDuration": "1500ms"}}, "leaseDuration"),
    "duration without unit": ({"timings": {"retryPeriod": "2"}}, "retryPeriod"),
    "bad pod label key": ({"podLabel": "leader is me"}, "podLabel"),
    "log format": ({"logFormat": "xml"}, "logFormat"),
    "port zero": ({"httpPort": 0}, "httpPort"),
    "replicas as string": ({"example": {"replicas": "3"}}, "replicas"),
    "flag without dashes": ({"extraArgs": ["follower-mode=poll"]}, "extraArgs"),
    "lease name with capitals": ({"leaseName": "My-Lease"}, "leaseName"),
    "pull policy": ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
    # values.yaml once told users to pin with tag "X@sha256:..."; the tag went into the
    # app.kubernetes.io/version label, whose value may hold neither "@" nor ":", and the API
    # server refused the install. image.digest is the way now; the schema refuses the old one.
    "digest in the tag": ({"image": {"tag": "0.5.0@sha256:" + "a" * 64}}, "tag"),
    "digest without algorithm": ({"image": {"digest": "a" * 64}}, "digest"),
    "hook timeout without unit": ({"uninstallHook": {"timeout": "90"}}, "timeout"),
}


def jsonschema_errors(instance, schema):
    validator = jsonschema.Draft7Validator(schema)
    return sorted((f"/{'/'.join(map(str, e.absolute_path))}: {e.message}"
                   for e in validator.iter_errors(instance)))


def check_schema(helm, _args):
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    values = load_values()
    errors = jsonschema_errors(values, schema)
    check(not errors, f"values.yaml does not validate: {errors}")
    print("ok: values.schema.json is valid draft 7 and values.yaml passes it (python3-jsonschema)")
    meta = chart_meta()
    check(meta["apiVersion"] == "v2", "Chart.yaml apiVersion must be v2")
    check(values["image"]["tag"] == str(meta["appVersion"]),
          f"values image.tag {values['image']['tag']} != Chart appVersion {meta['appVersion']}")
    license_annotation = meta.get("annotations", {}).get("artifacthub.io/license")
    check(license_annotation == LICENSE_SPDX,
          f"Chart.yaml annotation artifacthub.io/license {license_annotation!r} != {LICENSE_SPDX}")
    for what, (override, key) in BAD_VALUES.items():
        errors = jsonschema_errors(deep_merge(values, override), schema)
        check(errors and any(key in e for e in errors),
              f"python3-jsonschema accepted bad values ({what}) or did not name {key}: {errors}")
        for action in (helm.template, helm.lint):
            r = action(override, ok=False)
            out = r.stdout + r.stderr
            check(r.returncode != 0 and SCHEMA_ERROR in out,
                  f"helm {action.__name__} accepted bad values ({what}): {override}\n{out}")
            check(key in out, f"helm {action.__name__}: the schema error does not name {key}:\n{out}")
        print(f"ok: rejects {what}: jsonschema {errors[0]!r}; helm {first_line(out, key)!r}")
    skipped = helm.template(BAD_VALUES["port zero"][0], extra=["--skip-schema-validation"])
    check("--http-address=127.0.0.1:0" in skipped, "--skip-schema-validation rendering")
    print("ok: with --skip-schema-validation httpPort=0 renders: the schema is what refused it")


# --- render ----------------------------------------------------------------------------------

VARIANTS = {
    "defaults": {},
    "pod label + leader Service": {"podLabel": "leasehold.io/leader",
                                   "leaderService": {"enabled": True}},
    "classic sidecar": {"sidecar": {"native": False}},
    "RBAC only (own workload)": {"example": {"enabled": False}, "tests": {"enabled": False}},
    "no status file": {"statusFile": {"enabled": False}},
    "coordinated": {"coordinated": True},
    "shards": {"shards": 16},
    "pinned by digest": {"image": {"digest": "sha256:" + "0123456789abcdef" * 4}},
    "fast failover": {"fastFailover": True, "statusFile": {"enabled": False}},
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


def expected_image(values):
    """The image reference the chart must render: repository:tag, @digest when pinned."""
    image = values["image"]
    ref = f"{image['repository']}:{image['tag']}"
    return f"{ref}@{image['digest']}" if image.get("digest") else ref


LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def check_sidecar(c, values, native, pod_spec):
    where = f"sidecar in {'initContainers' if native else 'containers'}"
    check(c["image"] == expected_image(values), f"{where}: image {c['image']}, "
          f"want {expected_image(values)}")
    if native:
        check(c.get("restartPolicy") == "Always", f"{where}: native needs restartPolicy Always")
    else:
        check("restartPolicy" not in c, f"{where}: classic sidecar has no restartPolicy")
    args = c["args"]
    check(all(a.startswith("--") and "=" in a for a in args
              if a not in values["extraArgs"] and a != "--fast-failover"),
          f"{where}: flags as --name=value: {args}")
    check(("--fast-failover" in args) == bool(values.get("fastFailover")),
          f"{where}: --fast-failover only with fastFailover: {args}")
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
    check(("--coordinated=true" in args) == bool(values.get("coordinated")),
          f"{where}: --coordinated only with coordinated: true: {args}")
    check(flag(args, "shards") == (str(values["shards"]) if values.get("shards") else None),
          f"{where}: --shards only with shards: {args}")
    for extra in values["extraArgs"]:
        check(extra in args, f"{where}: extra arg {extra} missing")
    check_env(c, values, "leasehold", where)
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


def check_env(c, values, container, where):
    """The Downward API env, and with fastFailover the pod's UID and the container's own name
    (LEASEHOLD_CONTAINER, which a follower checks in this spec)."""
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] if "valueFrom" in e
           else {"value": e["value"]} for e in c["env"]}
    want = {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace",
            "POD_IP": "status.podIP"}
    if values.get("fastFailover"):
        want.update(POD_UID="metadata.uid", LEASEHOLD_CONTAINER={"value": container})
    check(env == want, f"{where}: env {env}, want {want}")


def native_sidecar(values, kube_version=None):
    """Whether the chart renders a native sidecar: sidecar.native, or when null (the default)
    whether KUBE_VERSION ("v1.37.2"; default the real server's, which these renderings use)
    is 1.29 or later."""
    native = values["sidecar"]["native"]
    if native is not None:
        return native
    major, minor = re.match(r"v?(\d+)\.(\d+)", kube_version or server_kube_version()).groups()
    return (int(major), int(minor)) >= (1, 29)


def check_rendered(docs, values, chart_meta):
    objs = by_kind(docs)
    name = values["fullnameOverride"] or "leasehold"
    lease = values["leaseName"] or name
    sa = values["serviceAccount"]["name"] or name
    check(("ServiceAccount", sa) in objs, "ServiceAccount missing")
    role = objs[("Role", name)]
    rules = role["rules"]
    # No create on leases (Kubernetes cannot limit it by name): the chart makes the Lease.
    want = [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "resourceNames": [lease], "verbs": ["get", "update", "watch", "list"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
         "verbs": ["create", "patch"]},
    ]
    if values.get("shards"):
        # Shard mode: all of it on leases (membership Lease names are not known), no Events.
        want = [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                 "verbs": ["create", "get", "update", "delete", "list", "watch"]}]
    if values["podLabel"]:
        want.append({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "patch"]})
    if values.get("fastFailover"):
        want.append({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]})
    if values.get("coordinated"):
        want.append({"apiGroups": ["coordination.k8s.io"], "resources": ["leasecandidates"],
                     "verbs": ["create", "get", "update", "delete", "list", "watch"]})
    check(rules == want, f"Role rules are not least privilege as documented:\n{rules}")
    made = objs.get(("Lease", lease))
    if values.get("shards") or values.get("coordinated") or not values["lease"]["create"]:
        check(made is None, f"no Lease object expected (shards, coordinated or lease.create "
                            f"false): {made}")
    else:
        check(made is not None and made["spec"] == {}
              and made["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"},
              f"the Lease {lease}, kept on uninstall, with no spec field: {made}")
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
        version = labels["app.kubernetes.io/version"]
        check(version == values["image"]["tag"] and LABEL_VALUE.match(version)
              and len(version) <= 63, f"{kind}: app.kubernetes.io/version {version!r} is not "
              "the tag, or not a valid label value")
        check(obj["metadata"].get("namespace") == "default", f"{kind}: namespace")
    pods = []
    if values["example"]["enabled"]:
        dep = objs[("Deployment", name)]
        sel = dep["spec"]["selector"]["matchLabels"]
        tmpl = dep["spec"]["template"]
        check(all(tmpl["metadata"]["labels"].get(k) == v for k, v in sel.items()),
              "selector does not match the pod labels")
        pods.append(("Deployment", tmpl["spec"], native_sidecar(values)))
    test = [o for (k, _), o in objs.items() if k == "Pod"]
    if values["tests"]["enabled"] and native_sidecar(values):
        check(len(test) == 1, "helm test pod missing")
        pod = test[0]
        check(pod["metadata"]["annotations"]["helm.sh/hook"] == "test", "helm test hook")
        check(pod["spec"]["restartPolicy"] == "Never", "test pod restartPolicy")
        script = pod["spec"]["containers"][0]["command"][-1]
        check(f"http://127.0.0.1:{values['httpPort']}/leader" in script and "curl" in script,
              "the helm test must curl /leader")
        check_test_pod(objs, pod, values, lease, name)
        pods.append(("test Pod", pod["spec"], True))
    else:
        check(not test, "no helm test pod expected")
    for what, spec, native in pods:
        check(spec["serviceAccountName"] == (sa if what == "Deployment" else
                                             f"{name}-test-leader"),
              f"{what}: serviceAccountName {spec['serviceAccountName']}")
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
        check_sidecar(sidecars[0], values if what == "Deployment" else test_follower(values),
                      native, spec)
    check_uninstall_hook(objs, values, name)
    svc = objs.get(("Service", f"{name}-leader"))
    if values["leaderService"]["enabled"]:
        check(svc and svc["spec"]["selector"].get(values["podLabel"]) == "true",
              "leader Service must select <podLabel>=true")
    else:
        check(svc is None, "no leader Service expected")


HOOK_ANNOTATIONS = {"helm.sh/hook": "pre-delete",
                    "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"}


def check_uninstall_hook(objs, values, name):
    """With the example (and uninstallHook.enabled), helm uninstall's pre-delete hook: a Job of
    the leasehold image that runs `leasehold scale-down` on the example Deployment, as a
    ServiceAccount of its own whose Role may patch that Deployment's scale alone and list/watch
    pods; the three made before the Job (weight -10 < 0), all deleted once it succeeded; its
    pod not selected by the example's selector (it would wait for itself). Returns the Job."""
    hook = f"{name[:52].rstrip('-')}-scale-down"
    made = sorted(n for (k, n), o in objs.items()
                  if o["metadata"].get("annotations", {}).get("helm.sh/hook") == "pre-delete")
    if not (values["example"]["enabled"] and values["uninstallHook"]["enabled"]):
        check(not made, f"no pre-delete hook expected: {made}")
        return None
    check(made == [hook] * 4, f"pre-delete hooks {made}, want the four {hook}")
    for kind, weight in (("ServiceAccount", "-10"), ("Role", "-10"), ("RoleBinding", "-10"),
                         ("Job", "0")):
        notes = objs[(kind, hook)]["metadata"]["annotations"]
        check(notes == {**HOOK_ANNOTATIONS, "helm.sh/hook-weight": weight},
              f"uninstall hook: {kind} {hook} annotations {notes}")
    check(objs[("Role", hook)]["rules"] == [
        {"apiGroups": ["apps"], "resources": ["deployments/scale"], "resourceNames": [name],
         "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}],
        f"uninstall hook: the Role is not least privilege: {objs[('Role', hook)]['rules']}")
    binding = objs[("RoleBinding", hook)]
    check(binding["roleRef"]["name"] == hook and binding["subjects"] == [
        {"kind": "ServiceAccount", "name": hook, "namespace": "default"}],
        f"uninstall hook: binding {binding}")
    job = objs[("Job", hook)]
    spec = job["spec"]["template"]["spec"]
    grace = values["terminationGracePeriodSeconds"]
    timeout = values["uninstallHook"]["timeout"] or f"{grace + 30}s"
    (c,) = spec["containers"]
    check(c["image"] == expected_image(values) and c["args"] == [
        "scale-down", f"--deployment={name}", "--namespace=default", f"--timeout={timeout}"]
        and "command" not in c, f"uninstall hook: container {c}")
    check(spec["serviceAccountName"] == hook and spec["restartPolicy"] == "Never"
          and job["spec"]["backoffLimit"] == 0
          and job["spec"]["activeDeadlineSeconds"] > grace,
          f"uninstall hook: Job {job['spec']}")
    check(c["securityContext"]["readOnlyRootFilesystem"] is True
          and spec["securityContext"]["runAsNonRoot"] is True, "uninstall hook: securityContext")
    selector = objs[("Deployment", name)]["spec"]["selector"]["matchLabels"]
    labels = job["spec"]["template"]["metadata"]["labels"]
    check(any(labels.get(k) != v for k, v in selector.items()),
          f"uninstall hook: its pod matches the example's selector {selector}: {labels}")
    return job


def test_lease(values, lease):
    """The Lease the helm test's sidecar follows: shard 0's in shard mode."""
    return f"{lease}-0" if values.get("shards") else lease


def test_follower(values):
    """The values the helm test's sidecar renders with: a plain follower of test_lease()."""
    lease = values["leaseName"] or values["fullnameOverride"] or "leasehold"
    return deep_merge(values, {"leaseName": test_lease(values, lease), "podLabel": "",
                               "coordinated": False, "shards": 0})


def check_test_pod(objs, pod, values, lease, name):
    """The helm test's pod runs as a ServiceAccount of its own whose Role may only read its
    Lease (so it can never take it), and carries no label that the example's selectors (the
    monitors', the leader Service's, the PDB's) match."""
    test_name = f"{name}-test-leader"
    for kind in ("ServiceAccount", "Role", "RoleBinding"):
        obj = objs.get((kind, test_name))
        check(obj is not None, f"helm test: {kind} {test_name} missing")
        check(obj["metadata"]["annotations"].get("helm.sh/hook") == "test",
              f"helm test: {kind} {test_name} is not a test hook")
    rules = objs[("Role", test_name)]["rules"]
    check(rules == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                     "resourceNames": [test_lease(values, lease)],
                     "verbs": ["get", "watch", "list"]}],
          f"helm test: its Role must only read the Lease: {rules}")
    binding = objs[("RoleBinding", test_name)]
    check(binding["subjects"] == [{"kind": "ServiceAccount", "name": test_name,
                                   "namespace": "default"}]
          and binding["roleRef"]["name"] == test_name, f"helm test: binding {binding}")
    labels = pod["metadata"]["labels"]
    selector = {"app.kubernetes.io/name": "leasehold", "app.kubernetes.io/instance": "leasehold"}
    check(any(labels.get(k) != v for k, v in selector.items()),
          f"helm test: the pod's labels match the example's selector: {labels}")
    for kind in ("PodMonitor", "Service", "PodDisruptionBudget"):
        for (k, n), obj in objs.items():
            if k != kind:
                continue
            sel = (obj["spec"].get("selector", {}).get("matchLabels")
                   or obj["spec"].get("selector") or {})
            check(any(labels.get(a) != b for a, b in sel.items()),
                  f"helm test: {kind} {n} selects the test pod ({sel})")


def check_render(helm, _args):
    meta = chart_meta()
    base = load_values()
    for what, overrides in VARIANTS.items():
        values = deep_merge(base, overrides)
        docs = helm.render(overrides)
        check_rendered(docs, values, meta)
        kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for _, d in docs)
        print(f"ok: render {what}: {', '.join(kinds)}")
    r = helm.template({"leaderService": {"enabled": True}}, ok=False)
    out = r.stdout + r.stderr
    check(r.returncode != 0 and "leaderService.enabled needs podLabel" in out,
          f"leaderService.enabled without podLabel must fail: {out}")
    print(f"ok: leaderService without podLabel fails: {first_line(out, 'needs podLabel')}")


# --- manifests -------------------------------------------------------------------------------


def normalise(obj):
    obj = copy.deepcopy(obj)
    labels = obj["metadata"].get("labels", {})
    for key in HELM_ONLY_LABELS:
        labels.pop(key, None)
    # helm.sh/resource-policy: keep (the Lease) means something to helm alone.
    notes = obj["metadata"].get("annotations", {})
    notes.pop("helm.sh/resource-policy", None)
    if "annotations" in obj["metadata"] and not notes:
        del obj["metadata"]["annotations"]
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


def sidecar_of(obj):
    """The leasehold container of a Deployment or a Pod."""
    spec = obj["spec"].get("template", obj)["spec"]
    return next(c for c in spec.get("initContainers", []) + spec["containers"]
                if c["name"] == "leasehold")


def check_manifests(helm, _args):
    # The helm test's objects (hooks: its pod, ServiceAccount, Role, RoleBinding) exist only in
    # the chart.
    chart = {k: normalise(v) for k, v in by_kind(helm.render()).items() if not is_hook(v)}
    plain = {k: normalise(v) for k, v in by_kind(manifest_docs(ROOT)).items()}
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


def plain_yaml_files():
    files = [CHART / "Chart.yaml", CHART / "values.yaml", HERE / "yamllint.yaml"]
    for d in ("manifests", "examples"):
        files += sorted((ROOT / d).rglob("*.yaml")) + sorted((ROOT / d).rglob("*.yml"))
    return files


def slug(what):
    return re.sub(r"[^a-z]+", "-", what.lower()).strip("-")


def check_yamllint(helm, _args):
    try:
        subprocess.run(["yamllint", "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise Failure("yamllint is not installed (scripts/install-deps.sh installs it)")
    files = plain_yaml_files()
    rc, out = yamllint(files)
    check(rc == 0, f"yamllint:\n{out}")
    print(f"ok: yamllint --strict: {len(files)} plain YAML files")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for what, overrides in VARIANTS.items():
            helm.template(overrides, extra=["--output-dir", tmp / "rendered" / slug(what)])
        rendered = sorted((tmp / "rendered").rglob("*.yaml"))
        check(len(rendered) >= 4 * len(VARIANTS), f"helm --output-dir wrote only {rendered}")
        rc, out = yamllint(rendered)
        check(rc == 0, f"yamllint on the rendered chart:\n{out}")
        print(f"ok: yamllint --strict: {len(rendered)} files of `helm template --output-dir` "
              f"({len(VARIANTS)} variants)")
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


def check_shell(helm, _args):
    scripts = []
    for what, overrides in VARIANTS.items():
        found = shell_scripts(helm.render(overrides))
        scripts += [(f"[{what}] {w}", s) for w, s in found]
    scripts += shell_scripts(manifest_docs(ROOT))
    check(scripts, "no container scripts found")
    for where, script in scripts:
        r = subprocess.run(["shellcheck", "-s", "sh", "-"], input=script, capture_output=True,
                           text=True)
        check(r.returncode == 0, f"shellcheck {where}:\n{r.stdout}{r.stderr}")
    r = subprocess.run(["shellcheck", "-s", "sh", "-"], input="echo $1 `ls`\n",
                       capture_output=True, text=True)
    check(r.returncode != 0, "shellcheck accepted a bad script")
    print(f"ok: shellcheck: {len(scripts)} container scripts "
          f"({len({s for _, s in scripts})} distinct) of {len(VARIANTS)} variants and manifests/")


# --- flags -------------------------------------------------------------------------------------

DUMMY_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def pod_env(tmp):
    """The environment the binary sees in the chart's pod (Downward API POD_*), with a
    kubeconfig that names an unreachable server: enough for --print-config, which checks the
    flags and exits."""
    kubeconfig = Path(tmp) / "kubeconfig"
    kubeconfig.write_text(DUMMY_KUBECONFIG)
    return {"PATH": "/usr/bin:/bin", "KUBECONFIG": str(kubeconfig), "POD_NAME": "web-0",
            "POD_NAMESPACE": "default", "POD_IP": "10.0.0.1", "HOME": str(tmp)}


def check_flags(helm, args):
    """The binary itself accepts the flags of every rendered variant (--print-config)."""
    sidecar = args.sidecar
    check(sidecar, "flags: needs --sidecar BIN")
    base = load_values()
    with tempfile.TemporaryDirectory() as tmp:
        env = pod_env(tmp)
        for what, overrides in VARIANTS.items():
            variant = deep_merge(base, overrides)
            docs = helm.render(overrides)
            pods = [(d["kind"], sidecar_of(d)) for _, d in docs
                    if d["kind"] in ("Deployment", "Pod")]
            for kind, c in pods:
                # The helm test pod's sidecar is a plain follower (test_follower).
                values = variant if kind == "Deployment" else test_follower(variant)
                r = subprocess.run([str(sidecar), *c["args"], "--print-config"],
                                   capture_output=True, text=True, timeout=10, env=env)
                check(r.returncode == 0, f"{what}: leasehold rejects the chart's flags "
                                         f"{c['args']}: {r.stderr.strip()}")
                cfg = yaml.safe_load(r.stdout)
                t = values["timings"]
                want = {"leaseName": (values["leaseName"] or values["fullnameOverride"]
                                      or "leasehold"),
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
            if pods:
                print(f"ok: leasehold accepts the flags of {what!r} ({len(pods)} pod specs)")


# --- runmode ---------------------------------------------------------------------------------

# The example Deployment under `leasehold run` (runMode.enabled): what each variant must render.
RUN_MODE_VARIANTS = {
    "run mode": {"runMode": {"enabled": True}},
    "run mode with run flags": {
        "fullnameOverride": "cron", "podLabel": "leasehold.io/leader",
        "statusFile": {"enabled": False},
        "runMode": {"enabled": True, "command": ["/usr/bin/my-job", "--once"],
                    "args": ["--verbose"], "killGrace": "3s", "drainTimeout": "20s",
                    "restart": "on-failure", "exitOnLoss": True}},
    "run mode, fast failover": {"fastFailover": True, "statusFile": {"enabled": False},
                                "runMode": {"enabled": True}},
}
# (override, the key helm and jsonschema must name)
RUN_MODE_BAD_VALUES = {
    "restart: sometimes": ({"runMode": {"restart": "sometimes"}}, "restart"),
    "kill grace without unit": ({"runMode": {"killGrace": "3"}}, "killGrace"),
    "drain timeout as number": ({"runMode": {"drainTimeout": 25}}, "drainTimeout"),
    "empty command": ({"runMode": {"enabled": True, "command": []}}, "command"),
    "exitOnLoss as string": ({"runMode": {"exitOnLoss": "yes"}}, "exitOnLoss"),
    "unknown run mode key": ({"runMode": {"graceKill": "3s"}}, "graceKill"),
}
BIN_DIR = "/leasehold"
IMAGE_BINARY = "/usr/local/bin/leasehold"  # the Dockerfile's path of the binary


def run_mode_command(values):
    """The app container's command that the values promise."""
    rm, t = values["runMode"], values["timings"]
    lease = values["leaseName"] or values["fullnameOverride"] or "leasehold"
    cmd = [f"{BIN_DIR}/leasehold", "run", f"--lease-name={lease}",
           f"--lease-duration={t['leaseDuration']}", f"--renew-deadline={t['renewDeadline']}",
           f"--retry-period={t['retryPeriod']}", f"--http-address=127.0.0.1:{values['httpPort']}",
           f"--probe-address=0.0.0.0:{values['probePort']}"]
    if values["statusFile"]["enabled"]:
        cmd.append("--status-file=/var/run/leasehold/status.json")
    if values["podLabel"]:
        cmd.append(f"--pod-label={values['podLabel']}")
    if values.get("fastFailover"):
        cmd.append("--fast-failover")
    cmd += [f"--log-format={values['logFormat']}", f"--log-level={values['logLevel']}",
            *values["extraArgs"]]
    cmd += [f"--kill-grace={rm['killGrace']}"] if rm["killGrace"] else []
    cmd += [f"--drain-timeout={rm['drainTimeout']}"] if rm["drainTimeout"] else []
    cmd += [f"--restart={rm['restart']}"] + (["--exit-on-loss"] if rm["exitOnLoss"] else [])
    return cmd + ["--", *rm["command"]]


def check_run_mode_pod(spec, values):
    name = values["fullnameOverride"] or "leasehold"
    every = spec.get("initContainers", []) + spec["containers"]
    check(not [c for c in every if c["name"] == "leasehold"],
          f"run mode: no sidecar container expected: {[c['name'] for c in every]}")
    (copy_c,) = spec["initContainers"]
    (app,) = spec["containers"]
    image = expected_image(values)
    check(copy_c["image"] == image and "restartPolicy" not in copy_c,
          f"run mode: the copy init container runs once from the leasehold image: {copy_c}")
    # The image has no shell and no cp (FROM scratch): the binary copies itself.
    check(copy_c["command"] == [IMAGE_BINARY, "copy-self", f"{BIN_DIR}/leasehold"],
          f"run mode: copy command {copy_c['command']}")
    check(f"COPY --from=build /out/leasehold /rootfs{IMAGE_BINARY}"
          in (ROOT / "Dockerfile").read_text(), "the Dockerfile no longer installs the binary "
                                               f"at {IMAGE_BINARY}")
    volumes = {v["name"]: v for v in spec["volumes"]}
    (copy_mount,) = copy_c["volumeMounts"]
    check(copy_mount == {"name": "leasehold-bin", "mountPath": BIN_DIR}
          and "emptyDir" in volumes.get("leasehold-bin", {}),
          f"run mode: the binary goes into an emptyDir: {copy_mount} {volumes}")
    mounts = {m["name"]: m for m in app["volumeMounts"]}
    check(mounts["leasehold-bin"] == {"name": "leasehold-bin", "mountPath": BIN_DIR,
                                      "readOnly": True}, f"run mode: app mounts {mounts}")
    check(app["image"] == values["runMode"]["image"], f"run mode: app image {app['image']}")
    want = run_mode_command(values)
    check(app["command"] == want, f"run mode: command\n{app['command']}\n!= {want}")
    check(app.get("args", []) == values["runMode"]["args"], f"run mode: args {app.get('args')}")
    check_env(app, values, "app", "run mode")
    ports = {p["name"]: p["containerPort"] for p in app["ports"]}
    check(ports == {"lh-probes": values["probePort"]}, f"run mode: ports {ports}")
    for probe_kind, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"),
                             ("readinessProbe", "/readyz")):
        get = app[probe_kind]["httpGet"]
        check(get == {"path": path, "port": "lh-probes"}, f"run mode: {probe_kind} {get}")
    for c in (copy_c, app):
        sc = c["securityContext"]
        check(sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
              and sc["capabilities"]["drop"] == ["ALL"], f"run mode: {c['name']} {sc}")
    if values["statusFile"]["enabled"]:
        check(mounts["leasehold-status"]["mountPath"] == "/var/run/leasehold"
              and not mounts["leasehold-status"].get("readOnly")
              and "emptyDir" in volumes["leasehold-status"], f"run mode: status file {mounts}")
    else:
        check(set(mounts) == {"leasehold-bin"} and set(volumes) == {"leasehold-bin"},
              f"run mode: no status file expected: {mounts} {volumes}")
    check(spec["serviceAccountName"] == (values["serviceAccount"]["name"] or name),
          "run mode: serviceAccountName")


def check_runmode(helm, args):
    base, meta = load_values(), chart_meta()
    check(base["runMode"]["enabled"] is False, "run mode must be off by default")
    schema = json.loads((CHART / "values.schema.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for what, overrides in RUN_MODE_VARIANTS.items():
            values = deep_merge(base, overrides)
            docs = helm.render(overrides)
            objs = by_kind(docs)
            name = values["fullnameOverride"] or "leasehold"
            check_run_mode_pod(objs[("Deployment", name)]["spec"]["template"]["spec"], values)
            # The Role is the sidecar mode's: render the same values with run mode off.
            plain = by_kind(helm.render(deep_merge(overrides, {"runMode": {"enabled": False}})))
            check(objs[("Role", name)]["rules"] == plain[("Role", name)]["rules"],
                  f"{what}: the Role differs from sidecar mode's")
            # The rest as without the example (but its uninstall hook, checked with it).
            check_rendered([d for d in docs if d[1]["kind"] != "Deployment" and d[1]["metadata"]
                            .get("annotations", {}).get("helm.sh/hook") != "pre-delete"],
                           deep_merge(values, {"example": {"enabled": False}}), meta)
            check_uninstall_hook(objs, values, name)
            helm.lint(overrides)
            helm.template(overrides, extra=["--output-dir", tmp / slug(what)])
            rc, out = yamllint(sorted((tmp / slug(what)).rglob("*.yaml")))
            check(rc == 0, f"{what}: yamllint on the rendered chart:\n{out}")
            cmd = values["runMode"]["command"]
            if cmd[:2] == ["/bin/sh", "-c"]:
                r = subprocess.run(["shellcheck", "-s", "sh", "-"], input=cmd[2],
                                   capture_output=True, text=True)
                check(r.returncode == 0, f"{what}: shellcheck:\n{r.stdout}{r.stderr}")
            if args.sidecar:
                app = objs[("Deployment", name)]["spec"]["template"]["spec"]["containers"][0]
                check_run_flags(args.sidecar, app["command"], values, tmp)
                copy_c = objs[("Deployment", name)]["spec"]["template"]["spec"][
                    "initContainers"][0]
                check_copy_command(args.sidecar, copy_c["command"], tmp / slug(what))
            print(f"ok: render {what}: copy init container, emptyDir, "
                  f"{' '.join(c for c in run_mode_command(values) if c.startswith('--'))}, "
                  f"no sidecar, same Role; lint --strict, yamllint"
                  + (", leasehold accepts the command and copy-self copies it"
                     if args.sidecar else ""))
    for what, (override, key) in RUN_MODE_BAD_VALUES.items():
        errors = jsonschema_errors(deep_merge(base, override), schema)
        check(errors and any(key in e for e in errors),
              f"python3-jsonschema accepted bad values ({what}) or did not name {key}: {errors}")
        r = helm.template(override, ok=False)
        out = r.stdout + r.stderr
        check(r.returncode != 0 and SCHEMA_ERROR in out and key in out,
              f"helm template accepted bad values ({what}): {override}\n{out}")
        print(f"ok: rejects {what}: {first_line(out, key)!r}")


def check_run_flags(binary, command, values, tmp):
    """The binary accepts the rendered `run` command: --print-config before `--`."""
    env = pod_env(tmp)
    sep = command.index("--")
    argv = [str(binary), *command[1:sep], "--print-config", *command[sep:]]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=10, env=env)
    check(r.returncode == 0, f"leasehold rejects the run-mode command {argv}: {r.stderr.strip()}")
    cfg = yaml.safe_load(r.stdout)
    rm = values["runMode"]
    got = (cfg["restart"], cfg["exitOnLoss"], cfg["killGrace"], cfg["drainTimeout"])
    check(got[:2] == (rm["restart"], rm["exitOnLoss"])
          and (not rm["killGrace"] or got[2] == rm["killGrace"])
          and (not rm["drainTimeout"] or got[3] == rm["drainTimeout"]),
          f"run-mode configuration {got} does not match {rm}")


def check_copy_command(binary, command, tmp):
    """The init container's command, run with this build's binary in place of the image's
    (BIN_DIR made a directory of TMP): DEST holds the same bytes, mode 0755."""
    check(command[0] == IMAGE_BINARY and command[2].startswith(BIN_DIR + "/"),
          f"run mode: copy command {command}")
    dest = Path(tmp) / "bin" / command[2][len(BIN_DIR) + 1:]
    dest.parent.mkdir(parents=True, exist_ok=True)
    argv = [str(binary), *command[1:2], str(dest)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=10, env={})
    check(r.returncode == 0, f"`{' '.join(argv)}` exited {r.returncode}: {r.stderr.strip()}")
    check(dest.read_bytes() == Path(binary).read_bytes() and dest.stat().st_mode & 0o7777 == 0o755,
          f"{dest} is not the binary with mode 0755")


CHECKS = {"lint": check_lint, "subchart": check_subchart, "shell": check_shell,
          "flags": check_flags, "schema": check_schema, "render": check_render,
          "manifests": check_manifests, "yamllint": check_yamllint, "runmode": check_runmode}


def main():
    ap = chart_suite.parser()
    ap.add_argument("--sidecar", type=Path, help="the leasehold binary (for `flags`)")
    args = chart_suite.parse_names(ap, CHECKS, "check")
    names = args.checks or [c for c in CHECKS if c != "flags" or args.sidecar]
    return chart_suite.run_offline(args, names, lambda helm, name: CHECKS[name](helm, args))


if __name__ == "__main__":
    sys.exit(main())
