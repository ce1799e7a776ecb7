#!/usr/bin/env python3
"""The chart's sidecar injector on the real kube-apiserver (tests/realkube), with real helm and
kubectl, in both of its modes, one after the other (one injector per cluster): policy (a
MutatingAdmissionPolicy, its parameters ConfigMap and two ValidatingAdmissionPolicies) and
webhook (`leasehold inject`, the built binary, run here on 127.0.0.1 with a certificate made
for it, the chart installed with injector.webhook.url and caBundle: the control plane has no
nodes to run the chart's Deployment; leasehold_testing.inject_webhook plays the kubelet's part
for the parameters ConfigMap). Pods are created with `kubectl create --dry-run=server`:
admission runs for real (mutation, validation, the server's defaulting) and nothing is stored.

    test_injector_real.py --sidecar BIN [--helm BIN] [--kubectl BIN] [--control-plane DIR]
                          [STEP...]
        STEP: MODE.NAME for MODE policy or webhook and NAME one of install second inject
              untouched reinvoke annotations params broken certificate incluster uninstall;
              and same (default: all, policy's then webhook's then same; every step of a
              mode but install needs its install)

install      `helm install` with injector.enabled and injector.mode (on the real server policy
             is what auto picks; webhook is asked for); the mode's cluster-scoped objects are
             there with the release's labels; the parameters ConfigMap holds the chart's values;
             a labelled pod gets the sidecar (the injector is in effect).
second       another release with injector.enabled is refused by helm, naming the first
             injector (lookup, whatever the other's mode): one per cluster.
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
             retry-period, shards, fast-failover: that sidecar equal to the chart's example with
             fastFailover and no status file, and no status volume); each bad one is refused
             with a message naming it (fast-failover with shards too); a pod without
             leasehold.io/lease is refused.
params       editing the parameters ConfigMap's image reaches the next pod at once; helm
             upgrade with another image.digest rewrites it; values.resources without
             limits.memory (and with limits.cpu) injects exactly the quantities set.
broken       with unusable parameters the labelled pod is admitted without the sidecar (it never
             leads) and kubectl prints the injector's warning saying so: policy, the ConfigMap
             deleted; webhook, its image key removed (a deleted ConfigMap leaves the kubelet's
             copy in place).
certificate  webhook: the serving certificate and key files replaced by a new pair from the same
             CA (as a Secret's update) are served to the next connection without a restart, and
             the API server's next call is answered; policy: nothing to rotate.
incluster    webhook: helm upgrade without url renders the chart's own server (the API server
             accepts the Deployment, PDB, Service and TLS Secret; the configuration calls the
             Service with the Secret's CA, whose certificate openssl verifies for the Service's
             name); a second upgrade keeps the CA and certificate (lookup); with no pod to
             serve it (no nodes) a labelled pod is admitted without the sidecar; back to url.
uninstall    `helm uninstall` removes the mode's objects and the ConfigMap; a labelled pod is
             then admitted untouched; webhook: `leasehold inject` exits 0 on SIGTERM.
same         the pods inject and annotations admitted (their specs, the ServiceAccount's token
             volume aside) and the refusals' messages are the same from both modes.

Over 400 lines: every step is written once for both modes (the mode objects above say where
they differ), on one control plane, whose start is the costly part.
"""
import base64
import copy
import json
import os
import subprocess
import sys
import time
import tempfile

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from pathlib import Path  # noqa: E402

from leasehold_testing import ControlPlane, check, log, wait_for  # noqa: E402
from leasehold_testing.chart_suite import parse_names, real_parser, run_real  # noqa: E402
from leasehold_testing.helm import CHART, by_kind, load_values  # noqa: E402
from leasehold_testing.inject_webhook import InjectWebhook  # noqa: E402

RELEASE = "injector"
PARAMS = f"{RELEASE}-injector"
INSTANCE = f"app.kubernetes.io/instance={RELEASE}"
LABEL = {"leasehold.io/inject": "true"}
DIGEST = "sha256:" + "0123456789abcdef" * 4


class PolicyMode:
    """injector.mode policy: the admission policies, nothing to run."""
    name = "policy"
    kinds = ("mutatingadmissionpolicy", "mutatingadmissionpolicybinding",
             "validatingadmissionpolicy", "validatingadmissionpolicybinding")

    def __init__(self):
        self.up = False  # installed
        self.ns = f"lh-inject-{self.name}-{os.getpid()}"
        self.object = f"leasehold-inject.{self.ns}.{RELEASE}"

    def values(self):
        return {"injector": {"enabled": True, "mode": self.name}, "example": {"enabled": False},
                "tests": {"enabled": False}}

    def installed(self, cp):
        """After helm install: what the cluster does not do for this mode."""

    def params_edited(self, cp):
        """After the ConfigMap changed: the policy reads it at once."""

    def break_params(self, cp):
        cp.kubectl("delete", "configmap", PARAMS, "-n", self.ns)
        return [PARAMS]  # what the warning names

    def rotate_certificate(self):
        return None  # the policy has no certificate

    def in_cluster(self, cp, helm):
        return None  # the policy has no server

    def stop(self):
        return "nothing to stop"

    def close(self):
        pass


class WebhookMode(PolicyMode):
    """injector.mode webhook with `leasehold inject` here, on 127.0.0.1."""
    name = "webhook"
    kinds = ("mutatingwebhookconfiguration",)

    def __init__(self, sidecar):
        super().__init__()
        self.sidecar = sidecar
        self.webhook = None

    def values(self):
        if self.webhook is None:
            self.webhook = InjectWebhook(self.sidecar)
        values = super().values()
        values["injector"]["webhook"] = {"url": self.webhook.url,
                                         "caBundle": self.webhook.ca_bundle}
        return values

    def installed(self, cp):
        self.params_edited(cp)
        self.webhook.start()

    def params_edited(self, cp):
        data = json.loads(cp.kubectl("get", "configmap", PARAMS, "-n", self.ns, "-o", "json")
                          .stdout)["data"]
        self.webhook.sync_params(data)

    def break_params(self, cp):
        cp.kubectl("patch", "configmap", PARAMS, "-n", self.ns, "--type=json",
                   "-p", json.dumps([{"op": "remove", "path": "/data/image"}]))
        self.params_edited(cp)
        return ["key image is missing", str(self.webhook.params_dir)]

    def rotate_certificate(self):
        before = self.webhook.served_serial()
        serial = self.webhook.rotate()
        wait_for("the new certificate served", lambda: self.webhook.served_serial() == serial,
                 10, interval=0.2)
        return f"serial {before} -> {serial} without a restart"

    def in_cluster(self, cp, helm):
        """The chart's own server instead of url: helm upgrade renders the CA, the Secret, the
        Deployment, its PDB and Service (the server accepts them all); a second upgrade keeps
        the CA (lookup); back to url."""
        tls, server = f"{RELEASE}-injector-tls", f"{RELEASE}-injector"
        own = self.values()
        own["injector"]["webhook"] = {"url": "", "caBundle": ""}

        def rendered():
            secret = cp.get("secret", tls, "-n", self.ns)["data"]
            config = cp.get("mutatingwebhookconfiguration", self.object)["webhooks"][0]
            return secret, config["clientConfig"]
        helm.run("upgrade", RELEASE, CHART, "-n", self.ns, *helm.value_args(own))
        secret, client = rendered()
        check(client.get("service", {}).get("name") == server
              and client["caBundle"] == secret["ca.crt"],
              f"the webhook configuration does not call the Service with the Secret's CA: {client}")
        with tempfile.TemporaryDirectory() as tmp:
            for key in ("ca.crt", "tls.crt"):
                (Path(tmp) / key).write_bytes(base64.b64decode(secret[key]))
            r = subprocess.run(["openssl", "verify", "-CAfile", Path(tmp) / "ca.crt",
                                "-verify_hostname", f"{server}.{self.ns}.svc",
                                Path(tmp) / "tls.crt"], capture_output=True, text=True)
            check(r.returncode == 0, f"the chart's serving certificate: {r.stdout}{r.stderr}")
        deploy = cp.get("deployment", server, "-n", self.ns)
        cp.get("poddisruptionbudget", server, "-n", self.ns)
        cp.get("service", server, "-n", self.ns)
        helm.run("upgrade", RELEASE, CHART, "-n", self.ns, *helm.value_args(own))
        again, client_again = rendered()
        check(again == secret and client_again["caBundle"] == client["caBundle"],
              "a second helm upgrade changed the CA or the certificate (lookup must keep them)")
        # No pod serves it here (no nodes): failurePolicy Ignore admits without the sidecar.
        admitted, err = admit(cp, user_pod(), self.ns)
        check(admitted and not sidecars(admitted["spec"]),
              f"with no webhook server up: {err or 'a sidecar'}")
        helm.run("upgrade", RELEASE, CHART, "-n", self.ns, *helm.value_args(self.values()))
        wait_for("the sidecar again from the webhook here", lambda: injected_image(cp, self),
                 30, 0.5)
        return (f"Deployment of {deploy['spec']['replicas']}, PDB, Service, Secret {tls} whose "
                f"certificate openssl verifies for {server}.{self.ns}.svc; the CA kept by a "
                "second upgrade; with no server up, a labelled pod admitted without the sidecar")

    def stop(self):
        rc = self.webhook.stop()
        check(rc == 0 and "stopped" in self.webhook.log(),
              f"leasehold inject after SIGTERM: exit {rc}, log {self.webhook.log()[-500:]}")
        lines = self.webhook.log().splitlines()
        reviews = sum("admission review" in ln for ln in lines)
        return f"leasehold inject exited 0 on SIGTERM after {reviews} admission reviews"

    def close(self):
        if self.webhook is not None:
            self.webhook.close()


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


def admit(cp, pod, ns):
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


def example_sidecar(cp, helm, ns, lease, overrides=None):
    """The chart's example sidecar for LEASE, admitted by the same server as a plain Pod (no
    label: the injector leaves it alone), so that both went through the same defaulting."""
    docs = by_kind(helm.render({"leaseName": lease, **(overrides or {})}, namespace=ns))
    template = docs[("Deployment", "leasehold")]["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "example", "labels": template["metadata"]["labels"]},
           "spec": {**template["spec"], "serviceAccountName": "default"}}
    admitted, err = admit(cp, pod, ns)
    check(admitted, f"the example pod was refused: {err}")
    return without_token(admitted["spec"])["initContainers"][0]


def names_of(cp, kind):
    return cp.kubectl("get", kind, "-l", INSTANCE, "-A", "-o", "name").stdout.split()


def step_install(cp, helm, m, state):
    cp.kubectl("create", "namespace", m.ns)
    cp.kubectl("create", "serviceaccount", "default", "-n", m.ns)
    r = helm.run("install", RELEASE, CHART, "-n", m.ns, *helm.value_args(m.values()))
    check("STATUS: deployed" in r.stdout, f"helm install: {r.stdout}")
    for kind in m.kinds:
        names = names_of(cp, kind)
        check(f"{kind}.admissionregistration.k8s.io/{m.object}" in names,
              f"no {kind} {m.object}: {names}")
    data = cp.get("configmap", PARAMS, "-n", m.ns)["data"]
    image = load_values()["image"]
    check(data["image"] == f"{image['repository']}:{image['tag']}"
          and (data["leaseDuration"], data["probePort"]) == ("15s", "9102"),
          f"the parameters are not the chart's values: {data}")
    m.installed(cp)
    m.up = True
    # The API server takes in a new admission object a moment after helm returns.
    wait_for("the injector in effect (a dry run gets the sidecar)",
             lambda: sidecars((admit(cp, user_pod(), m.ns)[0] or {"spec": {"containers": []}})
                              ["spec"]), 30, interval=0.2)
    log(f"ok: helm install with injector.mode {m.name} on the real server: {m.object} "
        f"({', '.join(m.kinds)}), ConfigMap {m.ns}/{PARAMS}: {json.dumps(data)}; in effect")


def step_second(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    other = f"{m.ns}-second"
    cp.kubectl("create", "namespace", other)
    r = helm.run("install", RELEASE, CHART, "-n", other, *helm.value_args(m.values()), ok=False)
    out = r.stdout + r.stderr
    check(r.returncode != 0 and f"has a leasehold injector already, {m.object}" in out,
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


INJECTED = (("a pod without init containers", user_pod()),
            ("a pod with an init container", user_pod(
                initContainers=[{"name": "migrate", "image": "shop/migrate:1.2"}])),
            ("a pod without volumes or mounts", user_pod(
                volumes=[], containers=[{"name": "web", "image": "shop/web:1.2"}])))


def step_inject(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    want = example_sidecar(cp, helm, m.ns, "shop")
    for what, pod in INJECTED:
        admitted, err = admit(cp, pod, m.ns)
        check(admitted, f"{what}: refused: {err}")
        side = check_injected(pod, admitted, what)
        check(side == want, f"{what}: the injected sidecar differs from the chart's example:\n"
              f"injected {json.dumps(side, sort_keys=True)}\nexample  "
              f"{json.dumps(want, sort_keys=True)}")
        state.setdefault("admitted", {}).setdefault(m.name, {})[what] = \
            without_token(admitted["spec"])
        log(f"ok: {what}: one sidecar, first, equal to the chart's example for Lease shop "
            f"({' '.join(side['args'][:4])} ...); status volume; read-only mount in "
            f"{', '.join(c['name'] for c in admitted['spec']['containers'])}")


def step_untouched(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    cases = (("no label", user_pod(labels={}), m.ns),
             ("labelled, in kube-system", user_pod(), "kube-system"),
             ("labelled, a leasehold container already there",
              user_pod(initContainers=[{"name": "leasehold", "image": "mine:1",
                                        "restartPolicy": "Always"}]), m.ns))
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


def step_reinvoke(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    other = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
             "metadata": {"name": f"{m.ns}-other"},
             "spec": {"matchConstraints": {"resourceRules": [{
                 "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                 "resources": ["pods"]}], "objectSelector": {"matchLabels": LABEL}},
                 "failurePolicy": "Fail", "reinvocationPolicy": "IfNeeded",
                 "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": (
                     '[JSONPatch{op: "add", path: "/metadata/labels/touched", '
                     'value: "yes"}]')}}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": f"{m.ns}-other"},
               "spec": {"policyName": f"{m.ns}-other"}}
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([other, binding]))
    try:
        def admitted_touched():
            got, _ = admit(cp, user_pod(), m.ns)
            return got if got and got["metadata"]["labels"].get("touched") == "yes" else None
        got = wait_for("the other policy to apply", admitted_touched, 30, interval=0.5)
        check(len(sidecars(got["spec"])) == 1,
              f"after reinvocation: {[c['name'] for c in got['spec']['initContainers']]}")
        log("ok: with another mutating policy on the same pods (the chain reinvoked): "
            "exactly one sidecar")
    finally:
        cp.kubectl("delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy",
                   f"{m.ns}-other", ok=False)


# (annotations, the flags they must give, or the words of the refusal)
ANNOTATIONS = (
    ({"leasehold.io/lease-duration": "30s", "leasehold.io/renew-deadline": "20s",
      "leasehold.io/retry-period": "4s"},
     ["--lease-duration=30s", "--renew-deadline=20s", "--retry-period=4s"]),
    ({"leasehold.io/retry-period": "1.5s"}, ["--retry-period=1.5s", "--lease-duration=15s"]),
    ({"leasehold.io/shards": "4"}, ["--shards=4"]),
    ({"leasehold.io/fast-failover": "true"}, ["--fast-failover"]),
    ({"leasehold.io/lease-duration": "1500ms"},
     'leasehold.io/lease-duration: "1500ms" is not a duration in whole seconds'),
    ({"leasehold.io/renew-deadline": "ten"}, 'leasehold.io/renew-deadline: "ten" is not a'),
    ({"leasehold.io/retry-period": "2"}, 'leasehold.io/retry-period: "2" is not a duration'),
    ({"leasehold.io/retry-period": "0s"}, "retry period 0s (leasehold.io/retry-period or the"),
    ({"leasehold.io/renew-deadline": "16s"},
     "lease duration 15s must be greater than renew deadline 16s"),
    ({"leasehold.io/retry-period": "9s"},
     "renew deadline 10s must be greater than 1.2 x retry period 9s"),
    ({"leasehold.io/shards": "0"}, 'leasehold.io/shards: "0" is not a whole number from 1 to'),
    ({"leasehold.io/lease": "Shop_DB"}, 'leasehold.io/lease: "Shop_DB" is not a valid Lease'),
    ({"leasehold.io/fast-failover": "yes"},
     'leasehold.io/fast-failover: "yes" is not "true" or "false"'),
    ({"leasehold.io/fast-failover": "true", "leasehold.io/shards": "2"},
     "leasehold.io/fast-failover cannot be used with leasehold.io/shards"),
    ({"leasehold.io/lease": None}, "the annotation leasehold.io/lease (the name of the Lease"),
)
# The chart's values that give its example sidecar what an annotation gives an injected one.
EXAMPLE_OF = {"leasehold.io/fast-failover": {"fastFailover": True,
                                             "statusFile": {"enabled": False}}}


def refusal(err):
    """The injector's own words in kubectl's error: after the policy's "denied request: " or
    the webhook's "denied the request: "."""
    for marker in ("denied request: ", "denied the request: "):
        if marker in err:
            return err.split(marker, 1)[1].strip()
    return err


def step_annotations(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    seen = state.setdefault("annotations", {}).setdefault(m.name, {})
    for notes, want in ANNOTATIONS:
        given = {k: v for k, v in {"leasehold.io/lease": "shop", **notes}.items() if v is not None}
        admitted, err = admit(cp, user_pod(annotations=given), m.ns)
        if isinstance(want, list):
            check(admitted, f"{notes}: refused: {err}")
            (side,) = sidecars(admitted["spec"])
            check(all(f in side["args"] for f in want), f"{notes}: flags {side['args']}")
            for key, values in EXAMPLE_OF.items():
                if key not in notes:
                    continue
                example = example_sidecar(cp, helm, m.ns, "shop", values)
                (clean,) = sidecars(without_token(admitted["spec"]))
                check(clean == example, f"{notes}: the injected sidecar differs from the chart's "
                      f"with {values}:\n{json.dumps(clean, sort_keys=True)}\n"
                      f"{json.dumps(example, sort_keys=True)}")
                check(not admitted["spec"].get("volumes")
                      or all(v["name"] != "leasehold-status" for v in admitted["spec"]["volumes"]),
                      f"{notes}: a status file's volume {admitted['spec'].get('volumes')}")
            seen[json.dumps(notes)] = without_token(admitted["spec"])
            log(f"ok: {notes}: {' '.join(want)}")
        else:
            check(admitted is None and want in err, f"{notes}: want a refusal saying {want!r}, "
                  f"got {err or 'admitted'}")
            seen[json.dumps(notes)] = refusal(err)
            log(f"ok: {notes} refused: {refusal(err)[-160:]}")


def injected_image(cp, m):
    admitted, err = admit(cp, user_pod(), m.ns)
    check(admitted, f"refused: {err}")
    found = sidecars(admitted["spec"])
    return found[0]["image"] if found else None


def step_params(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    before = injected_image(cp, m)
    cp.kubectl("patch", "configmap", PARAMS, "-n", m.ns, "--type=merge",
               "-p", json.dumps({"data": {"image": "registry.example.com/leasehold:edited"}}))
    m.params_edited(cp)
    wait_for("the edited image in the next pod",
             lambda: injected_image(cp, m) == "registry.example.com/leasehold:edited", 30, 0.5)
    helm.run("upgrade", RELEASE, CHART, "-n", m.ns,
             *helm.value_args({**m.values(), "image": {"digest": DIGEST}}))
    m.params_edited(cp)
    wait_for("helm upgrade's image.digest in the next pod",
             lambda: (injected_image(cp, m) or "").endswith("@" + DIGEST), 30, 0.5)
    log(f"ok: {before} -> the ConfigMap's edit -> helm upgrade's {injected_image(cp, m)}: each "
        "reached the next pod")
    # values.resources without a memory limit and with a CPU limit: only what is set is injected.
    helm.run("upgrade", RELEASE, CHART, "-n", m.ns, *helm.value_args(
        {**m.values(), "image": {"digest": DIGEST},
         "resources": {"limits": {"cpu": "50m", "memory": None}}}))  # null deletes the default
    m.params_edited(cp)

    def resources():
        admitted, err = admit(cp, user_pod(), m.ns)
        check(admitted, f"refused: {err}")
        found = sidecars(admitted["spec"])
        return found[0].get("resources") if found else None
    want = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "50m"}}
    last = {}

    def injected_as_wanted():
        last["resources"] = resources()
        return last["resources"] == want
    deadline = time.monotonic() + 30
    while not injected_as_wanted() and time.monotonic() < deadline:
        time.sleep(0.5)
    check(last["resources"] == want, f"the next sidecar's resources: {last['resources']}, "
                                     f"want {want}")
    log(f"ok: resources without limits.memory: the next sidecar's resources are {want}")


def step_broken(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    words = m.break_params(cp)

    def warned():
        admitted, err = admit(cp, user_pod(), m.ns)
        return (admitted, err) if admitted and not sidecars(admitted["spec"]) else None
    admitted, err = wait_for("a labelled pod admitted without the sidecar", warned, 30, 0.5)
    check("no leasehold sidecar was injected: this pod will never lead" in err
          and all(w in err for w in words), f"kubectl's warning (want {words}): {err}")
    log(f"ok: with unusable parameters the pod is admitted without the sidecar, and kubectl "
        f"warns: {err.splitlines()[0][:240]}")
    helm.run("upgrade", RELEASE, CHART, "-n", m.ns, "--reuse-values")
    m.params_edited(cp)
    wait_for("the sidecar again once the parameters are back",
             lambda: injected_image(cp, m), 30, 0.5)


def step_certificate(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    rotated = m.rotate_certificate()
    if rotated is None:
        log(f"ok: {m.name}: no serving certificate to rotate")
        return
    check(injected_image(cp, m), "after the rotation a labelled pod got no sidecar")
    log(f"ok: the serving certificate rotated in place ({rotated}); the API server's next call "
        "is answered (a labelled pod gets the sidecar)")


def step_incluster(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    done = m.in_cluster(cp, helm)
    log(f"ok: {m.name}: " + (done or "no server of its own"))


def step_uninstall(cp, helm, m, state):
    check(m.up, f"needs {m.name}.install")
    helm.run("uninstall", RELEASE, "-n", m.ns, "--wait")
    for kind in m.kinds + ("configmap", "secret", "deployment", "service",
                           "poddisruptionbudget"):
        left = names_of(cp, kind)
        check(not left, f"helm uninstall left {left}")

    def untouched():
        admitted, _ = admit(cp, user_pod(), m.ns)
        return admitted and not sidecars(admitted["spec"])
    wait_for("a labelled pod admitted untouched after the uninstall", untouched, 30, 0.5)
    m.up = False
    log(f"ok: helm uninstall removed {', '.join(m.kinds)} and the namespaced objects; labelled "
        f"pods are admitted untouched; {m.stop()}")


def step_same(cp, helm, state):
    for what in ("admitted", "annotations"):
        got = state.get(what, {})
        check(set(got) == {"policy", "webhook"},
              f"same needs policy.{what[:6]} and webhook.{what[:6]}: have {sorted(got)}")
        policy, webhook = got["policy"], got["webhook"]
        check(set(policy) == set(webhook), f"{what}: {sorted(policy)} != {sorted(webhook)}")
        for case in policy:
            check(policy[case] == webhook[case],
                  f"{what}, {case}: the two modes differ:\npolicy  "
                  f"{json.dumps(policy[case], sort_keys=True)}\nwebhook "
                  f"{json.dumps(webhook[case], sort_keys=True)}")
        log(f"ok: {what}: {len(policy)} cases, the same from the policy and the webhook")


class Cluster(ControlPlane):
    def get(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)


STEPS = {"install": step_install, "second": step_second, "inject": step_inject,
         "untouched": step_untouched, "reinvoke": step_reinvoke,
         "annotations": step_annotations, "params": step_params, "broken": step_broken,
         "certificate": step_certificate, "incluster": step_incluster,
         "uninstall": step_uninstall}


def main():
    ap = real_parser()
    ap.add_argument("--sidecar", type=Path, required=True,
                    help="the leasehold binary (the webhook mode runs `leasehold inject`)")
    names = [f"{mode}.{step}" for mode in ("policy", "webhook") for step in STEPS] + ["same"]
    args = parse_names(ap, names, "step")
    modes = {"policy": PolicyMode(), "webhook": WebhookMode(args.sidecar)}
    state = {}

    def setup(cp, helm, server):
        def run_one(name):
            if name == "same":
                return step_same(cp, helm, state)
            mode, step = name.split(".")
            return STEPS[step](cp, helm, modes[mode], state)
        return run_one
    try:
        return run_real(args, args.steps or names, setup, cluster=Cluster)
    finally:
        for m in modes.values():
            m.close()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
