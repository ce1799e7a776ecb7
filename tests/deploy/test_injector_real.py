#!/usr/bin/env python3
"""The chart's sidecar injector (injector.enabled: a MutatingAdmissionPolicy, its parameters
ConfigMap and two ValidatingAdmissionPolicies) on the real kube-apiserver (tests/realkube), with
real helm and kubectl. Pods are created with `kubectl create --dry-run=server`: admission runs
for real (mutation, validation, the server's defaulting) and nothing is stored.

    test_injector_real.py [--helm BIN] [--kubectl BIN] [--control-plane DIR] [STEP...]
        STEP: install second inject untouched reinvoke annotations params broken uninstall
              (default: all, in order; every step but install needs install)

install      `helm install` with injector.enabled on the real server (its .Capabilities list
             MutatingAdmissionPolicy, so no override is needed); the policies and bindings are
             there, cluster-scoped, with the release's labels.
second       another release with injector.enabled is refused by helm, naming the first
             injector (lookup): one per cluster.
inject       a user's own pod (its own app container and volume, no init containers) labelled
             leasehold.io/inject: "true" with leasehold.io/lease: NAME gets exactly one
             leasehold container, first among its init containers, equal to the chart's example
             sidecar for the same Lease once both went through the same server; the status
             file's emptyDir; a read-only mount of it in every app container; nothing else of the
             pod changed. The same for a pod that has init containers, volumes and mounts.
untouched    a pod without the label; a labelled pod in kube-system; a labelled pod that has a
             leasehold container already: each admitted without a sidecar or volume added.
reinvoke     another mutating policy that changes labelled pods makes the chain run the
             injector again (reinvocationPolicy IfNeeded): still exactly one sidecar.
annotations  the per-pod overrides reach the flags (leasehold.io/lease-duration, renew-deadline,
             retry-period, shards); each bad one is refused with a message naming it; a pod
             without leasehold.io/lease is refused.
params       editing the parameters ConfigMap's image reaches the next pod at once; helm
             upgrade with another image.digest rewrites it.
broken       with the ConfigMap gone the labelled pod is admitted without the sidecar (it never
             leads) and kubectl prints the injector's warning saying so.
uninstall    `helm uninstall` removes the policies, bindings and ConfigMap; a labelled pod is
             then admitted untouched.
"""
import copy
import json
import os
import sys

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from leasehold_testing import ControlPlane, check, log, wait_for  # noqa: E402
from leasehold_testing.chart_suite import real_steps_main  # noqa: E402
from leasehold_testing.helm import CHART, by_kind, load_values  # noqa: E402

NS = f"lh-inject-{os.getpid()}"
RELEASE = "injector"
POLICY = f"leasehold-inject.{NS}.{RELEASE}"
PARAMS = f"{RELEASE}-injector"
INSTANCE = f"app.kubernetes.io/instance={RELEASE}"
VALUES = {"injector": {"enabled": True}, "example": {"enabled": False},
          "tests": {"enabled": False}}
LABEL = {"leasehold.io/inject": "true"}
DIGEST = "sha256:" + "0123456789abcdef" * 4


def user_pod(name="shop", annotations=None, labels=LABEL, **spec):
    """A pod of a user's own: an app of its own that reads /leader, a volume of its own."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": dict(labels or {}),
                        "annotations": ({"leasehold.io/lease": "shop"} if annotations is None
                                        else annotations)},
           "spec": {"containers": [{"name": "web", "image": "shop/web:1.2",
                                    "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]},
                                   {"name": "worker", "image": "shop/worker:1.2"}],
                    "volumes": [{"name": "cache", "emptyDir": {}}]}}
    pod["spec"].update(spec)
    return pod


def admit(cp, pod, ns=NS):
    """`kubectl create --dry-run=server` of POD: (the admitted pod or None, kubectl's stderr)."""
    r = cp.kubectl("create", "--dry-run=server", "-n", ns, "-o", "json", "-f", "-",
                   input=json.dumps(pod), ok=False)
    return (json.loads(r.stdout) if r.returncode == 0 else None), r.stderr.strip()


def without_token(spec):
    """SPEC without the ServiceAccount admission's token volume and mounts (their names are
    random)."""
    spec = copy.deepcopy(spec)
    token = [v["name"] for v in spec.get("volumes", []) if v["name"].startswith("kube-api-access-")]
    spec["volumes"] = [v for v in spec.get("volumes", []) if v["name"] not in token]
    for c in spec.get("initContainers", []) + spec["containers"]:
        c["volumeMounts"] = [m for m in c.get("volumeMounts", []) if m["name"] not in token]
        if not c["volumeMounts"]:
            del c["volumeMounts"]
    if not spec["volumes"]:
        del spec["volumes"]
    return spec


def sidecars(spec):
    return [c for c in spec.get("initContainers", []) + spec["containers"]
            if c["name"] == "leasehold"]


def example_sidecar(cp, helm, lease, overrides=None):
    """The chart's example sidecar for LEASE, admitted by the same server as a plain Pod (no
    label: the injector leaves it alone), so that both went through the same defaulting."""
    docs = by_kind(helm.render({"leaseName": lease, **(overrides or {})}, namespace=NS))
    template = docs[("Deployment", "leasehold")]["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "example", "labels": template["metadata"]["labels"]},
           "spec": {**template["spec"], "serviceAccountName": "default"}}
    admitted, err = admit(cp, pod)
    check(admitted, f"the example pod was refused: {err}")
    return without_token(admitted["spec"])["initContainers"][0]


def step_install(cp, helm, state):
    cp.kubectl("create", "namespace", NS)
    cp.kubectl("create", "serviceaccount", "default", "-n", NS)
    r = helm.run("install", RELEASE, CHART, "-n", NS, *helm.value_args(VALUES))
    check("STATUS: deployed" in r.stdout, f"helm install: {r.stdout}")
    for kind in ("mutatingadmissionpolicy", "mutatingadmissionpolicybinding",
                 "validatingadmissionpolicy", "validatingadmissionpolicybinding"):
        names = cp.kubectl("get", kind, "-l", INSTANCE, "-o", "name").stdout.split()
        check(f"{kind}.admissionregistration.k8s.io/{POLICY}" in names,
              f"no {kind} {POLICY}: {names}")
    data = cp.get("configmap", PARAMS, "-n", NS)["data"]
    image = load_values()["image"]
    check(data["image"] == f"{image['repository']}:{image['tag']}"
          and (data["leaseDuration"], data["probePort"]) == ("15s", "9102"),
          f"the parameters are not the chart's values: {data}")
    state["installed"] = True
    log(f"ok: helm install with injector.enabled on the real server: {POLICY} (mutating and "
        f"validating, with bindings), ConfigMap {NS}/{PARAMS}: {json.dumps(data)}")


def step_second(cp, helm, state):
    check(state.get("installed"), "needs install")
    other = f"{NS}-second"
    cp.kubectl("create", "namespace", other)
    r = helm.run("install", RELEASE, CHART, "-n", other, *helm.value_args(VALUES), ok=False)
    out = r.stdout + r.stderr
    check(r.returncode != 0 and f"has a leasehold injector already, {POLICY}" in out,
          f"a second injector must be refused naming the first: {out}")
    log(f"ok: a second release with the injector is refused: "
        f"{next(ln for ln in out.splitlines() if 'injector already' in ln)[-150:]}")


def check_injected(before, after, what):
    """AFTER is BEFORE plus exactly the sidecar (first init container), the status volume and
    a read-only mount of it in every app container."""
    spec = without_token(after["spec"])
    (side,) = sidecars(spec)
    check(spec["initContainers"][0] is side or spec["initContainers"][0] == side,
          f"{what}: the sidecar is not the first init container: {spec['initContainers']}")
    check(side.get("restartPolicy") == "Always", f"{what}: not a native sidecar: {side}")
    others = [c["name"] for c in spec["initContainers"][1:]]
    check(others == [c["name"] for c in before["spec"].get("initContainers", [])],
          f"{what}: init containers {others}")
    vols = {v["name"]: v for v in spec["volumes"]}
    check(vols.get("leasehold-status", {}).get("emptyDir") == {"medium": "Memory",
                                                                "sizeLimit": "1Mi"},
          f"{what}: status volume {vols}")
    check(set(vols) == {v["name"] for v in before["spec"].get("volumes", [])}
          | {"leasehold-status"}, f"{what}: volumes {sorted(vols)}")
    for c, orig in zip(spec["containers"], before["spec"]["containers"]):
        mounts = c.get("volumeMounts", [])
        check(mounts == orig.get("volumeMounts", []) + [
            {"name": "leasehold-status", "mountPath": "/var/run/leasehold", "readOnly": True}],
            f"{what}: {c['name']}'s mounts {mounts}")
    return side


def step_inject(cp, helm, state):
    check(state.get("installed"), "needs install")
    want = example_sidecar(cp, helm, "shop")
    for what, pod in (("a pod without init containers", user_pod()),
                      ("a pod with an init container", user_pod(
                          initContainers=[{"name": "migrate", "image": "shop/migrate:1.2"}]))):
        admitted, err = admit(cp, pod)
        check(admitted, f"{what}: refused: {err}")
        side = check_injected(pod, admitted, what)
        check(side == want, f"{what}: the injected sidecar differs from the chart's example:\n"
              f"injected {json.dumps(side, sort_keys=True)}\nexample  "
              f"{json.dumps(want, sort_keys=True)}")
        log(f"ok: {what}: one sidecar, first, equal to the chart's example for Lease shop "
            f"({' '.join(side['args'][:4])} ...); status volume; read-only mount in "
            f"{', '.join(c['name'] for c in admitted['spec']['containers'])}")


def step_untouched(cp, helm, state):
    check(state.get("installed"), "needs install")
    cases = (("no label", user_pod(labels={}), NS),
             ("labelled, in kube-system", user_pod(), "kube-system"),
             ("labelled, a leasehold container already there",
              user_pod(initContainers=[{"name": "leasehold", "image": "mine:1",
                                        "restartPolicy": "Always"}]), NS))
    for what, pod, ns in cases:
        if ns == "kube-system":
            cp.kubectl("create", "serviceaccount", "default", "-n", ns, ok=False)
        admitted, err = admit(cp, pod, ns)
        check(admitted, f"{what}: refused: {err}")
        spec = without_token(admitted["spec"])
        inits = [c["name"] for c in spec.get("initContainers", [])]
        want = [c["name"] for c in pod["spec"].get("initContainers", [])]
        check(inits == want and "leasehold-status" not in {v["name"] for v in spec["volumes"]},
              f"{what}: mutated: init containers {inits}, volumes {spec['volumes']}")
        log(f"ok: {what}: admitted untouched (init containers {inits or 'none'})")


def step_reinvoke(cp, helm, state):
    check(state.get("installed"), "needs install")
    other = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
             "metadata": {"name": f"{NS}-other"},
             "spec": {"matchConstraints": {"resourceRules": [{
                 "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                 "resources": ["pods"]}], "objectSelector": {"matchLabels": LABEL}},
                 "failurePolicy": "Fail", "reinvocationPolicy": "IfNeeded",
                 "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": (
                     '[JSONPatch{op: "add", path: "/metadata/labels/touched", '
                     'value: "yes"}]')}}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": f"{NS}-other"},
               "spec": {"policyName": f"{NS}-other"}}
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([other, binding]))
    try:
        def admitted_touched():
            got, _ = admit(cp, user_pod())
            return got if got and got["metadata"]["labels"].get("touched") == "yes" else None
        got = wait_for("the other policy to apply", admitted_touched, 30, interval=0.5)
        check(len(sidecars(got["spec"])) == 1,
              f"after reinvocation: {[c['name'] for c in got['spec']['initContainers']]}")
        log("ok: with another mutating policy on the same pods (the chain reinvoked): "
            "exactly one sidecar")
    finally:
        cp.kubectl("delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy",
                   f"{NS}-other", ok=False)


# (annotations, the flags they must give, or the words of the refusal)
ANNOTATIONS = (
    ({"leasehold.io/lease-duration": "30s", "leasehold.io/renew-deadline": "20s",
      "leasehold.io/retry-period": "4s"},
     ["--lease-duration=30s", "--renew-deadline=20s", "--retry-period=4s"]),
    ({"leasehold.io/retry-period": "1.5s"}, ["--retry-period=1.5s", "--lease-duration=15s"]),
    ({"leasehold.io/shards": "4"}, ["--shards=4"]),
    ({"leasehold.io/lease-duration": "1500ms"},
     'leasehold.io/lease-duration: "1500ms" is not a duration in whole seconds'),
    ({"leasehold.io/retry-period": "2"}, 'leasehold.io/retry-period: "2" is not a duration'),
    ({"leasehold.io/renew-deadline": "16s"},
     "lease duration 15s must be greater than renew deadline 16s"),
    ({"leasehold.io/retry-period": "9s"},
     "renew deadline 10s must be greater than 1.2 x retry period 9s"),
    ({"leasehold.io/shards": "0"}, 'leasehold.io/shards: "0" is not a whole number from 1 to'),
    ({"leasehold.io/lease": "Shop_DB"}, 'leasehold.io/lease: "Shop_DB" is not a valid Lease'),
)


def step_annotations(cp, helm, state):
    check(state.get("installed"), "needs install")
    for notes, want in ANNOTATIONS:
        admitted, err = admit(cp, user_pod(annotations={"leasehold.io/lease": "shop", **notes}))
        if isinstance(want, list):
            check(admitted, f"{notes}: refused: {err}")
            (side,) = sidecars(admitted["spec"])
            check(all(f in side["args"] for f in want), f"{notes}: flags {side['args']}")
            log(f"ok: {notes}: {' '.join(want)}")
        else:
            check(admitted is None and want in err, f"{notes}: want a refusal saying {want!r}, "
                  f"got {err or 'admitted'}")
            log(f"ok: {notes} refused: {err.splitlines()[-1][-160:]}")
    admitted, err = admit(cp, user_pod(annotations={}))
    check(admitted is None and "the annotation leasehold.io/lease" in err,
          f"a labelled pod without leasehold.io/lease: {err or 'admitted'}")
    log("ok: a labelled pod without leasehold.io/lease refused, naming it")


def injected_image(cp):
    admitted, err = admit(cp, user_pod())
    check(admitted, f"refused: {err}")
    return sidecars(admitted["spec"])[0]["image"]


def step_params(cp, helm, state):
    check(state.get("installed"), "needs install")
    before = injected_image(cp)
    cp.kubectl("patch", "configmap", PARAMS, "-n", NS, "--type=merge",
               "-p", json.dumps({"data": {"image": "registry.example.com/leasehold:edited"}}))
    wait_for("the edited image in the next pod",
             lambda: injected_image(cp) == "registry.example.com/leasehold:edited", 30, 0.5)
    helm.run("upgrade", RELEASE, CHART, "-n", NS,
             *helm.value_args({**VALUES, "image": {"digest": DIGEST}}))
    wait_for("helm upgrade's image.digest in the next pod",
             lambda: injected_image(cp).endswith("@" + DIGEST), 30, 0.5)
    log(f"ok: {before} -> the ConfigMap's edit -> helm upgrade's {injected_image(cp)}: each "
        "reached the next pod")


def step_broken(cp, helm, state):
    check(state.get("installed"), "needs install")
    cp.kubectl("delete", "configmap", PARAMS, "-n", NS)

    def warned():
        admitted, err = admit(cp, user_pod())
        return (admitted, err) if admitted and not sidecars(admitted["spec"]) else None
    admitted, err = wait_for("a labelled pod admitted without the sidecar", warned, 30, 0.5)
    check("no leasehold sidecar was injected: this pod will never lead" in err
          and PARAMS in err, f"kubectl's warning: {err}")
    log(f"ok: without its ConfigMap the pod is admitted without the sidecar, and kubectl warns: "
        f"{err.splitlines()[0][:200]}")
    helm.run("upgrade", RELEASE, CHART, "-n", NS, "--reuse-values")


def step_uninstall(cp, helm, state):
    check(state.get("installed"), "needs install")
    helm.run("uninstall", RELEASE, "-n", NS, "--wait")
    for kind in ("mutatingadmissionpolicy", "mutatingadmissionpolicybinding",
                 "validatingadmissionpolicy", "validatingadmissionpolicybinding"):
        left = cp.kubectl("get", kind, "-l", INSTANCE, "-o", "name").stdout.split()
        check(not left, f"helm uninstall left {left}")

    def untouched():
        admitted, _ = admit(cp, user_pod())
        return admitted and not sidecars(admitted["spec"])
    wait_for("a labelled pod admitted untouched after the uninstall", untouched, 30, 0.5)
    log("ok: helm uninstall removed the policies, bindings and ConfigMap; labelled pods are "
        "admitted untouched")


class Cluster(ControlPlane):
    def get(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)


STEPS = {"install": step_install, "second": step_second, "inject": step_inject, "untouched": step_untouched,
         "reinvoke": step_reinvoke, "annotations": step_annotations, "params": step_params,
         "broken": step_broken, "uninstall": step_uninstall}


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(real_steps_main(STEPS, cluster=Cluster))
