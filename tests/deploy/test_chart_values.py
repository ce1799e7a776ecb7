#!/usr/bin/env python3
"""The values every production chart takes, and what the chart decides for the user when it
renders, checked with the real helm (no cluster needed):

    test_chart_values.py [--helm BIN] [--sidecar BIN] CHECK...
        CHECK: pod pdb timings native monitoring artifacthub injector leases podlabel
               uninstall fastfailover (default: all; timings, uninstall and fastfailover run
               the binary when --sidecar is given)

pod         imagePullSecrets, podAnnotations, podLabels, nodeSelector, tolerations, affinity,
            topologySpreadConstraints, priorityClassName and terminationGracePeriodSeconds reach
            the example's pod spec as given, and none of them is rendered by default; podLabels
            add to the selector's labels and never replace one; the helm test pod gets the
            pulling and placement ones, not affinity or topology spread (they name the
            example's pods).
pdb         no PodDisruptionBudget by default; pdb.enabled makes one over the example's pods
            with maxUnavailable 1, or minAvailable when given; both or neither fail, naming
            them; none without the example.
timings     leaseDuration > renewDeadline > 1.2 x retryPeriod > 0, renewInterval + request
            timeout + retryPeriod <= renewDeadline (- run mode's kill grace), run mode's drain 2 s
            before terminationGracePeriodSeconds, checked when rendering: each bad case fails
            `helm template` with the values' names, each good one renders (fractional Go
            durations such as 1.5s too); with --sidecar the binary accepts exactly the
            renderings the chart accepts and refuses the flags of every case the chart refuses.
native      sidecar.native null picks a native sidecar on Kubernetes 1.29+ and a classic one
            before (--kube-version), true/false override it, and the helm test (which needs a
            native sidecar) is rendered only where the sidecar is native.
monitoring  the PodMonitor, the ServiceMonitor (and its Service) and the PrometheusRule are
            rendered only where monitoring.coreos.com/v1 is served (--api-versions) or
            monitoringCRDs is "installed".
artifacthub Chart.yaml's artifacthub.io/images names the values' image and
            artifacthub.io/changes is a list of Artifact Hub's kinds with descriptions.
injector    injector.mode: policy is refused where MutatingAdmissionPolicy is not served and
            renders its policies, bindings and parameters ConfigMap (from the values: the image
            pinned by digest, the timings, the ports) with --api-versions or skipVersionCheck;
            auto picks policy there and webhook elsewhere from 1.29, and fails before 1.29
            naming the value (so does webhook). webhook renders `leasehold inject`'s Deployment
            (2 replicas, restricted, HTTPS probes, the ConfigMap and the TLS Secret mounted),
            its PDB, Service and MutatingWebhookConfiguration (v1 reviews, sideEffects None,
            failurePolicy Ignore, the label's objectSelector, kube-system left out,
            reinvocationPolicy IfNeeded, the CA of the Secret's certificate as caBundle, which
            openssl verifies for the Service's name); certManager.enabled an Issuer, a
            Certificate and the inject-ca-from annotation instead of the Secret; url the
            configuration alone with url and caBundle. yamllint --strict and helm lint --strict
            pass in each mode. test_injector_real.py runs both modes on the server.
leases      leases: [{name, serviceAccount, namespace}] makes per entry the Lease (kept on
            uninstall), a Role on that Lease alone (no create) and a RoleBinding to the entry's
            ServiceAccount, in the entry's namespace; a bad name is refused by the schema.
podlabel    podLabel's ValidatingAdmissionPolicy and binding, only with podLabel and where the
            API is served (deploy.helm_real's podlabel step runs it with pod-bound tokens).
uninstall   helm uninstall's pre-delete hook (test_chart.check_uninstall_hook) with the
            example in sidecar, run and shard mode; none without the example or with
            uninstallHook.enabled=false; its timeout terminationGracePeriodSeconds + 30s by
            default, uninstallHook.timeout when given, and one not above the grace period
            refused naming both; names within 63 characters for the longest fullnameOverride;
            with --sidecar the binary parses the Job's arguments (`leasehold scale-down`).
fastfailover  fastFailover renders --fast-failover with POD_UID (downward API) and
            LEASEHOLD_CONTAINER naming the container that runs leasehold (the sidecar, or run
            mode's app), get/list/watch on pods in the Role and no status file; it is refused
            with the status file, shards or coordinated, naming them; the binary accepts the
            rendered flags.

Over 400 lines: one check per group of values (each 20-60 lines) over the same rendering
helpers; split into files, each would repeat the rendering and the comparison with the binary.
"""
import base64
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import test_chart  # noqa: E402  (pod_env, yamllint)
from leasehold_testing import check, chart_suite  # noqa: E402
from leasehold_testing.helm import (CHART, by_kind, deep_merge, documents,  # noqa: E402
                                    load_values)

POD_KNOBS = {
    "imagePullSecrets": [{"name": "regcred"}],
    "podAnnotations": {"example.com/owner": "team-a"},
    "podLabels": {"team": "a", "app.kubernetes.io/name": "not-the-selector"},
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "leader",
                     "effect": "NoSchedule"}],
    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "leasehold"}}}}]}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                   "whenUnsatisfiable": "ScheduleAnyway",
                                   "labelSelector": {"matchLabels": {
                                       "app.kubernetes.io/instance": "leasehold"}}}],
    "priorityClassName": "leader-critical",
    "terminationGracePeriodSeconds": 45,
}
PLACEMENT = ("imagePullSecrets", "nodeSelector", "tolerations", "priorityClassName")
SELECTOR = {"app.kubernetes.io/name": "leasehold", "app.kubernetes.io/instance": "leasehold"}


def example_pod(objs):
    return objs[("Deployment", "leasehold")]["spec"]["template"]


def check_pod(helm, _args):
    defaults = example_pod(by_kind(helm.render()))
    for key in POD_KNOBS:
        if key != "terminationGracePeriodSeconds":
            check(key not in defaults["spec"], f"default rendering has {key}")
    check("annotations" not in defaults["metadata"], "default pods have annotations")
    check(defaults["metadata"]["labels"] == SELECTOR, f"default labels {defaults['metadata']}")
    check(defaults["spec"]["terminationGracePeriodSeconds"] == 30, "default grace period")

    objs = by_kind(helm.render(POD_KNOBS))
    pod = example_pod(objs)
    for key in POD_KNOBS:
        if key not in ("podAnnotations", "podLabels"):
            check(pod["spec"].get(key) == POD_KNOBS[key],
                  f"{key}: {pod['spec'].get(key)!r}, want {POD_KNOBS[key]!r}")
    check(pod["metadata"]["annotations"] == POD_KNOBS["podAnnotations"],
          f"podAnnotations: {pod['metadata'].get('annotations')}")
    check(pod["metadata"]["labels"] == {**SELECTOR, "team": "a"},
          f"podLabels must add to the selector's and never replace one: "
          f"{pod['metadata']['labels']}")
    test = objs[("Pod", "leasehold-test-leader")]["spec"]
    for key in POD_KNOBS:
        if key in PLACEMENT:
            check(test.get(key) == POD_KNOBS[key], f"helm test pod: {key} {test.get(key)!r}")
        elif key not in ("podAnnotations", "podLabels", "terminationGracePeriodSeconds"):
            check(key not in test, f"helm test pod: {key} must stay the example's")
    print(f"ok: pod: {', '.join(POD_KNOBS)} reach the example's pods; the test pod gets "
          f"{', '.join(PLACEMENT)}; nothing of it by default")


def check_pdb(helm, _args):
    check(not [d for _, d in helm.render() if d["kind"] == "PodDisruptionBudget"],
          "a PodDisruptionBudget by default")
    for overrides, want in (({"pdb": {"enabled": True}}, {"maxUnavailable": 1}),
                            ({"pdb": {"enabled": True, "minAvailable": "50%",
                                      "maxUnavailable": ""}}, {"minAvailable": "50%"}),
                            ({"pdb": {"enabled": True, "minAvailable": 2,
                                      "maxUnavailable": ""}}, {"minAvailable": 2})):
        pdb = by_kind(helm.render(overrides))[("PodDisruptionBudget", "leasehold")]
        got = {k: v for k, v in pdb["spec"].items() if k != "selector"}
        check(got == want, f"{overrides}: PDB spec {pdb['spec']}")
        check(pdb["spec"]["selector"] == {"matchLabels": SELECTOR}, f"PDB selector {pdb}")
        check(pdb["apiVersion"] == "policy/v1", f"PDB apiVersion {pdb['apiVersion']}")
    for overrides, says in (({"pdb": {"enabled": True, "minAvailable": 1}}, "not both"),
                            ({"pdb": {"enabled": True, "maxUnavailable": ""}},
                             "set pdb.minAvailable or pdb.maxUnavailable")):
        r = helm.template(overrides, ok=False)
        check(r.returncode != 0 and says in r.stderr, f"{overrides}: {r.stderr.strip()}")
    off = helm.render({"pdb": {"enabled": True}, "example": {"enabled": False},
                       "tests": {"enabled": False}})
    check(not [d for _, d in off if d["kind"] == "PodDisruptionBudget"],
          "a PodDisruptionBudget without the example")
    print("ok: pdb: off by default; maxUnavailable 1 or minAvailable (50%, 2) over the "
          "example's pods; both or neither refused; none without the example")


# (timings or other overrides, the words the refusal must contain); None: must render.
TIMINGS = {
    "defaults": ({}, None),
    "fractional": ({"timings": {"leaseDuration": "4s", "renewDeadline": "2.5s",
                                "retryPeriod": "1.5s"}}, None),
    "minutes": ({"timings": {"leaseDuration": "1m", "renewDeadline": "1m30s"}},
                "timings.leaseDuration (1m) must be greater than timings.renewDeadline (1m30s)"),
    "D equals R": ({"timings": {"leaseDuration": "10s"}},
                   "timings.leaseDuration (10s) must be greater than timings.renewDeadline"),
    "R at 1.2 P": ({"timings": {"renewDeadline": "2.4s"}},
                   "timings.renewDeadline (2.4s) must be greater than 1.2 x "
                   "timings.retryPeriod (2s)"),
    "R just above 1.2 P": ({"timings": {"renewDeadline": "2401ms"}}, None),
    "P zero": ({"timings": {"retryPeriod": "0s"}}, "timings.retryPeriod (0s) must be greater"),
    "renew interval of issue 40": ({"timings": {"leaseDuration": "60s", "renewDeadline": "40s",
                                                "renewInterval": "15s"}}, None),
    "renew interval at the limit": ({"timings": {"renewInterval": "3s"}}, None),
    "renew interval leaves no retry": ({"timings": {"renewInterval": "3001ms"}},
                                       "timings.renewInterval (3001ms) + the request timeout "
                                       "(5s, half of"),
    "renew interval, short deadline": ({"timings": {"leaseDuration": "3s", "renewDeadline": "2s",
                                                    "retryPeriod": "500ms",
                                                    "renewInterval": "600ms"}},
                                       "the request timeout (1s, half of"),
    "run mode, renew interval": ({"runMode": {"enabled": True},
                                  "timings": {"leaseDuration": "60s", "renewDeadline": "40s",
                                              "renewInterval": "15s"}}, None),
    "run mode, renew interval in the kill grace": (
        {"runMode": {"enabled": True}, "timings": {"leaseDuration": "60s",
                                                   "renewDeadline": "40s",
                                                   "renewInterval": "30s"}},
        "must be at most timings.renewDeadline (40s) - the run mode's kill grace (5s)"),
    "run mode, default drain": ({"runMode": {"enabled": True}}, None),
    "run mode, drain too long": ({"runMode": {"enabled": True, "drainTimeout": "29s"}},
                                 "runMode.drainTimeout (29s) must end at least 2s before "
                                 "terminationGracePeriodSeconds (30)"),
    "run mode, longer grace": ({"runMode": {"enabled": True, "drainTimeout": "50s"},
                                "terminationGracePeriodSeconds": 60}, None),
    "run mode, default drain, short grace": ({"runMode": {"enabled": True},
                                              "terminationGracePeriodSeconds": 20},
                                             "runMode.drainTimeout (25s, the default)"),
}


def leasehold_args(values):
    """The election flags as the chart would render them, for the binary (the chart refuses
    to render them)."""
    t = values["timings"]
    interval = [f"--renew-interval={t['renewInterval']}"] if t.get("renewInterval") else []
    return [f"--lease-duration={t['leaseDuration']}", f"--renew-deadline={t['renewDeadline']}",
            f"--retry-period={t['retryPeriod']}", *interval, "--lease-name=leasehold",
            "--print-config"]


def rendered_flags(stream):
    """The command line of every leasehold in a rendering with --print-config (which checks
    the flags and exits): each sidecar's args, and in run mode the app container's
    `leasehold run FLAGS -- COMMAND`."""
    for _, doc in documents(stream):
        if doc["kind"] not in ("Deployment", "Pod"):
            continue
        spec = doc["spec"].get("template", doc)["spec"]
        for c in spec.get("initContainers", []) + spec["containers"]:
            if c["name"] == "leasehold":
                yield [*c["args"], "--print-config"]
            elif c.get("command", [])[:2] == ["/leasehold/leasehold", "run"]:
                command = c["command"][1:]
                sep = command.index("--")
                yield [*command[:sep], "--print-config", *command[sep:]]


def binary_accepts(sidecar, args, tmp):
    r = subprocess.run([str(sidecar), *args], capture_output=True, text=True, timeout=10,
                       env=test_chart.pod_env(tmp))
    return r.returncode == 0, r.stderr.strip()


def check_timings(helm, args):
    base = load_values()
    with tempfile.TemporaryDirectory() as tmp:
        for what, (overrides, says) in TIMINGS.items():
            r = helm.template(overrides, ok=False)
            if says is None:
                check(r.returncode == 0, f"{what}: refused: {r.stderr.strip()}")
                if args.sidecar:
                    for argv in rendered_flags(r.stdout):
                        ok, err = binary_accepts(args.sidecar, argv, tmp)
                        check(ok, f"{what}: the chart renders flags the binary refuses: {err}")
            else:
                check(r.returncode != 0 and says in r.stderr,
                      f"{what}: want a refusal saying {says!r}: {r.stderr.strip()[:300]}")
                if args.sidecar and "runMode" not in overrides:
                    ok, _ = binary_accepts(args.sidecar,
                                           leasehold_args(deep_merge(base, overrides)), tmp)
                    check(not ok, f"{what}: the chart refuses timings the binary accepts")
            print(f"ok: timings {what}: " + ("renders" if says is None else
                                             f"refused: {says}")
                  + (" (the binary agrees)" if args.sidecar else ""))


def containers(spec):
    return ([c["name"] for c in spec.get("initContainers", [])],
            [c["name"] for c in spec["containers"]])


def check_native(helm, _args):
    for version, native, want in (("1.28.0", None, False), ("1.29.0", None, True),
                                  ("1.37.2", None, True), ("1.28.0", True, True),
                                  ("1.37.2", False, False)):
        overrides = {"sidecar": {"native": native}} if native is not None else {}
        objs = by_kind(helm.render(overrides, extra=["--kube-version", version]))
        inits, apps = containers(example_pod(objs)["spec"])
        got = "leasehold" in inits
        check(got == want and ("leasehold" in apps) != want,
              f"Kubernetes {version}, sidecar.native {native}: init {inits}, containers {apps}")
        check((("Pod", "leasehold-test-leader") in objs) == want,
              f"Kubernetes {version}: the helm test pod only with a native sidecar")
        print(f"ok: native: Kubernetes {version}, sidecar.native {native}: "
              f"{'native' if want else 'classic'} sidecar")


MONITORING = {"metrics": {"podMonitor": {"enabled": True}, "serviceMonitor": {"enabled": True}},
              "alerts": {"enabled": True}}
MONITORING_OBJECTS = {("PodMonitor", "leasehold"), ("ServiceMonitor", "leasehold"),
                      ("PrometheusRule", "leasehold"), ("Service", "leasehold-metrics")}


def check_monitoring(helm, _args):
    for what, overrides, extra, want in (
            ("no CRDs", MONITORING, [], False),
            ("--api-versions monitoring.coreos.com/v1", MONITORING,
             ["--api-versions", "monitoring.coreos.com/v1"], True),
            ("monitoringCRDs: installed", {**MONITORING, "monitoringCRDs": "installed"}, [],
             True)):
        objs = set(by_kind(helm.render(overrides, extra=extra)))
        got = MONITORING_OBJECTS & objs
        check(got == (MONITORING_OBJECTS if want else set()),
              f"{what}: rendered {sorted(got)}")
        print(f"ok: monitoring, {what}: {'all four' if want else 'none'} of the monitoring "
              "objects")


INJECTOR = {"injector": {"enabled": True}, "example": {"enabled": False},
            "tests": {"enabled": False}}
INJECTOR_OBJECTS = {"ConfigMap", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
                    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
WEBHOOK_OBJECTS = {"ConfigMap", "Secret", "Deployment", "PodDisruptionBudget", "Service",
                   "MutatingWebhookConfiguration"}
MAP_API = ["--api-versions", "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"]


def injector(mode, **webhook):
    return {**INJECTOR, "injector": {"enabled": True, "mode": mode, "webhook": webhook}}


def yamllint_ok(what, stream):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "injector.yaml"
        path.write_text(stream)
        rc, out = test_chart.yamllint([path])
        check(rc == 0, f"{what}: yamllint --strict on the rendered injector:\n{out}")


def check_injector(helm, _args):
    for what, overrides, extra, words in (
            ("mode policy without the API", injector("policy"), [],
             "injector.enabled needs MutatingAdmissionPolicy"),
            ("mode auto on 1.28", INJECTOR, ["--kube-version", "1.28.0"],
             "injector.mode auto: this cluster (v1.28.0) serves neither"),
            ("mode webhook on 1.28", injector("webhook"), ["--kube-version", "1.28.0"],
             "injector.mode webhook needs Kubernetes 1.29+ (native sidecars)")):
        r = helm.template(overrides, extra=extra, ok=False)
        check(r.returncode != 0 and words in r.stderr, f"{what}: must be refused: {r.stderr}")
        print(f"ok: injector, {what}: refused ({words} ...)")
    pinned = {**INJECTOR, "image": {"digest": "sha256:" + "ab" * 32}}
    for what, overrides, extra in (("--api-versions", pinned, MAP_API),
                                   ("skipVersionCheck", {**pinned, "injector": {
                                       "enabled": True, "skipVersionCheck": True}}, [])):
        stream = helm.template(overrides, extra=extra)
        objs = by_kind(documents(stream))
        check({k for k, _ in objs} >= INJECTOR_OBJECTS
              and "MutatingWebhookConfiguration" not in {k for k, _ in objs},
              f"{what}: rendered {sorted(objs)}")
        data = objs[("ConfigMap", "leasehold-injector")]["data"]
        want = load_values()
        check(data["image"] == (f"{want['image']['repository']}:{want['image']['tag']}@sha256:"
                                + "ab" * 32)
              and data["leaseDuration"] == want["timings"]["leaseDuration"]
              and data["probePort"] == str(want["probePort"]),
              f"{what}: parameters {data}")
        yamllint_ok(what, stream)
        print(f"ok: injector, mode auto with {what}: the policies, {len(objs)} objects, the "
              "parameters from the values (the image pinned by digest); yamllint --strict")
    check_webhook(helm, _args.sidecar)
    for overrides in ({**INJECTOR, "injector": {"enabled": True, "skipVersionCheck": True}},
                      INJECTOR, injector("webhook", certManager={"enabled": True})):
        out = helm.lint(overrides).stdout
        check("0 chart(s) failed" in out, f"helm lint --strict with {overrides}: {out}")
    print("ok: injector: helm lint --strict (policy, webhook, webhook with cert-manager)")


def check_webhook(helm, sidecar):
    """Mode auto where MutatingAdmissionPolicy is not served: the webhook, its Deployment, PDB,
    Service, TLS Secret and configuration; with cert-manager; served elsewhere (url). With
    SIDECAR, the binary takes the Deployment's arguments."""
    stream = helm.template(INJECTOR, extra=["--kube-version", "1.33.0"])
    objs = by_kind(documents(stream))
    kinds = {k for k, _ in objs}
    check(kinds >= WEBHOOK_OBJECTS and not kinds & INJECTOR_OBJECTS - {"ConfigMap"},
          f"webhook: rendered {sorted(objs)}")
    name = "leasehold-inject.default.leasehold"
    config = objs[("MutatingWebhookConfiguration", name)]
    (hook,) = config["webhooks"]
    check(hook["admissionReviewVersions"] == ["v1"] and hook["sideEffects"] == "None"
          and hook["failurePolicy"] == "Ignore" and hook["reinvocationPolicy"] == "IfNeeded"
          and hook["timeoutSeconds"] == 5
          and hook["objectSelector"] == {"matchLabels": {"leasehold.io/inject": "true"}}
          and hook["namespaceSelector"]["matchExpressions"] == [{
              "key": "kubernetes.io/metadata.name", "operator": "NotIn",
              "values": ["kube-system"]}]
          and hook["rules"][0]["operations"] == ["CREATE"]
          and hook["rules"][0]["resources"] == ["pods"]
          and hook["clientConfig"]["service"] == {"name": "leasehold-injector",
                                                  "namespace": "default", "path": "/mutate",
                                                  "port": 443}, f"webhook: {hook}")
    secret = objs[("Secret", "leasehold-injector-tls")]
    check(hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"],
          "webhook: the caBundle is not the Secret's CA")
    with tempfile.TemporaryDirectory() as tmp:
        for key in ("ca.crt", "tls.crt"):
            (Path(tmp) / key).write_bytes(base64.b64decode(secret["data"][key]))
        r = subprocess.run(["openssl", "verify", "-CAfile", Path(tmp) / "ca.crt",
                            "-verify_hostname", "leasehold-injector.default.svc",
                            Path(tmp) / "tls.crt"], capture_output=True, text=True)
        check(r.returncode == 0, f"webhook: the serving certificate: {r.stdout}{r.stderr}")
    deploy = objs[("Deployment", "leasehold-injector")]
    pod = deploy["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    check(deploy["spec"]["replicas"] == 2 and c["args"][0] == "inject"
          and "--params-dir=/etc/leasehold/params" in c["args"]
          and c["readinessProbe"]["httpGet"] == {"scheme": "HTTPS", "path": "/healthz",
                                                 "port": "webhook"}
          and c["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
          and c["securityContext"]["readOnlyRootFilesystem"]
          and c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
          and pod["securityContext"]["runAsNonRoot"]
          and pod["automountServiceAccountToken"] is False
          and {v["name"]: v for v in pod["volumes"]} == {
              "params": {"name": "params", "configMap": {"name": "leasehold-injector"}},
              "tls": {"name": "tls", "secret": {"secretName": "leasehold-injector-tls"}}},
          f"webhook: the Deployment's pod {pod}")
    if sidecar:
        # Every flag parsed; what stops it here is the certificate the pod would mount.
        r = subprocess.run([str(sidecar), *c["args"]], capture_output=True, text=True, timeout=10)
        check(r.returncode == 2 and r.stderr.splitlines()[-1] == (
            "leasehold inject: no serving certificate (--tls-cert-file, --tls-key-file): cannot "
            "read /etc/leasehold/tls/tls.crt"), f"webhook: leasehold {c['args']}: {r.stderr}")
        print(f"ok: injector, webhook: leasehold takes the Deployment's arguments "
              f"({' '.join(c['args'][:2])} ...; here it stops for want of the mounted certificate)")
    selector = deploy["spec"]["selector"]["matchLabels"]
    check(objs[("Service", "leasehold-injector")]["spec"]["selector"] == selector
          and objs[("PodDisruptionBudget", "leasehold-injector")]["spec"] == {
              "minAvailable": 1, "selector": {"matchLabels": selector}},
          "webhook: the Service and the PDB select the Deployment's pods")
    yamllint_ok("webhook", stream)
    print("ok: injector, mode auto without the API on 1.33: the webhook (Deployment of 2, "
          "PDB, Service, TLS Secret whose certificate openssl verifies for "
          "leasehold-injector.default.svc, the configuration with its CA); yamllint --strict")

    objs = by_kind(helm.render(injector("webhook", certManager={"enabled": True})))
    kinds = {k for k, _ in objs}
    check(kinds >= WEBHOOK_OBJECTS - {"Secret"} | {"Issuer", "Certificate"}
          and "Secret" not in kinds, f"cert-manager: rendered {sorted(objs)}")
    config = objs[("MutatingWebhookConfiguration", name)]
    cert = objs[("Certificate", "leasehold-injector")]["spec"]
    check(config["metadata"]["annotations"] == {
              "cert-manager.io/inject-ca-from": "default/leasehold-injector"}
          and "caBundle" not in config["webhooks"][0]["clientConfig"]
          and cert["secretName"] == "leasehold-injector-tls"
          and "leasehold-injector.default.svc" in cert["dnsNames"],
          f"cert-manager: {config['metadata']}, {cert}")
    print("ok: injector, webhook with certManager.enabled: Issuer, Certificate for the "
          "Service's names into the Secret the pods mount, inject-ca-from; no Secret rendered")

    url, bundle = "https://webhook.example.com:8443/mutate", base64.b64encode(b"CA").decode()
    objs = by_kind(helm.render(injector("webhook", url=url, caBundle=bundle)))
    kinds = {k for k, _ in objs}
    check("MutatingWebhookConfiguration" in kinds
          and not kinds & {"Secret", "Deployment", "Service", "PodDisruptionBudget"},
          f"url: rendered {sorted(objs)}")
    client = objs[("MutatingWebhookConfiguration", name)]["webhooks"][0]["clientConfig"]
    check(client == {"url": url, "caBundle": bundle}, f"url: {client}")
    r = helm.template(injector("webhook", url="http://plain.example.com/mutate"), ok=False)
    check(r.returncode != 0 and "/injector/webhook/url" in r.stderr,
          f"url: http:// must be refused by the schema: {r.stderr}")
    print("ok: injector, webhook with url: the configuration alone (url, caBundle); http:// "
          "refused by the schema")


LEASES = [{"name": "shop", "serviceAccount": "shop-sa", "namespace": "shop"},
          {"name": "billing", "serviceAccount": "billing"}]


def check_leases(helm, _args):
    check(not [d for _, d in helm.render() if d["kind"] == "Lease"
               and d["metadata"]["name"] != "leasehold"], "per-app Leases by default")
    objs = by_kind(helm.render({"leases": LEASES, "example": {"enabled": False},
                                "tests": {"enabled": False}}))
    for entry in LEASES:
        ns = entry.get("namespace", "default")
        name = f"leasehold-{entry['name']}"
        lease = objs[("Lease", entry["name"])]
        check(lease["metadata"]["namespace"] == ns and lease["spec"] == {}
              and lease["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"},
              f"{entry}: Lease {lease}")
        role = objs[("Role", name)]
        check(role["metadata"]["namespace"] == ns and role["rules"] == [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "resourceNames": [entry["name"]], "verbs": ["get", "update", "watch", "list"]},
            {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
             "verbs": ["create", "patch"]}], f"{entry}: Role {role}")
        binding = objs[("RoleBinding", name)]
        check(binding["roleRef"]["name"] == name and binding["subjects"] == [
            {"kind": "ServiceAccount", "name": entry["serviceAccount"], "namespace": ns}],
            f"{entry}: RoleBinding {binding}")
    for bad in ("Shop", "a" * 244):  # not a DNS name; leasehold-<name> over 253 characters
        r = helm.template({"leases": [{"name": bad, "serviceAccount": "x"}]}, ok=False)
        check(r.returncode != 0 and "name" in r.stderr,
              f"a bad Lease name {bad[:20]}: {r.stderr.strip()}")
    long = "a" * 243
    objs = by_kind(helm.render({"leases": [{"name": long, "serviceAccount": "x"}]}))
    check(("Role", f"leasehold-{long}") in objs, "the longest name keeps its whole Role name")
    print(f"ok: leases: per entry a kept Lease and a Role (that Lease alone, no create) bound to "
          f"its ServiceAccount, in its namespace: {', '.join(e['name'] for e in LEASES)}")


VAP_API = ["--api-versions", "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"]


def check_podlabel(helm, _args):
    label = {"podLabel": "leasehold.io/leader"}
    policies = [d for _, d in helm.render(label) if d["kind"].startswith("ValidatingAdmission")]
    check(not policies, f"the pod-label policy without the API: {policies}")
    check(not [d for _, d in helm.render(extra=VAP_API) if "ValidatingAdmission" in d["kind"]],
          "a pod-label policy without podLabel")
    objs = by_kind(helm.render(label, extra=VAP_API))
    name = "leasehold-pod-label.default.leasehold"
    policy = objs[("ValidatingAdmissionPolicy", name)]
    check(objs[("ValidatingAdmissionPolicyBinding", name)]["spec"] == {
        "policyName": name, "validationActions": ["Deny"]}, "binding")
    spec = policy["spec"]
    check(spec["failurePolicy"] == "Fail"
          and "system:serviceaccount:default:leasehold" in spec["matchConditions"][0]["expression"]
          and spec["matchConstraints"]["resourceRules"][0]["operations"] == ["UPDATE"],
          f"policy {spec}")
    print("ok: podlabel: the ValidatingAdmissionPolicy (the release's ServiceAccount, pod "
          "UPDATEs, Fail) only with podLabel and where the API is served")


FAST = {"fastFailover": True, "statusFile": {"enabled": False}}


def check_fastfailover(helm, args):
    """fastFailover: --fast-failover, POD_UID from the downward API and LEASEHOLD_CONTAINER set
    to the name of the container that runs leasehold (the sidecar's, run mode's app), pods
    readable by the Role; refused with the status file, shards and coordinated."""
    for _, doc in helm.render():
        check("--fast-failover" not in str(doc), "fast failover is rendered by default")
    for what, overrides, container in (("sidecar", FAST, "leasehold"),
                                       ("run mode", deep_merge(FAST, {"runMode": {
                                           "enabled": True}}), "app")):
        objs = by_kind(helm.render(overrides))
        spec = objs[("Deployment", "leasehold")]["spec"]["template"]["spec"]
        (c,) = [c for c in spec.get("initContainers", []) + spec["containers"]
                if c["name"] == container]
        argv = c.get("args", []) + c.get("command", [])
        env = {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}
        check("--fast-failover" in argv, f"{what}: {argv}")
        check(env.get("POD_UID") == {"fieldRef": {"fieldPath": "metadata.uid"}}
              and env.get("LEASEHOLD_CONTAINER") == container, f"{what}: env {env}")
        check(not [v for v in spec.get("volumes", []) if v["name"] == "leasehold-status"],
              f"{what}: the status file's volume is rendered")
        rules = objs[("Role", "leasehold")]["rules"]
        check({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
              in rules, f"{what}: Role {rules}")
        if args.sidecar:
            with tempfile.TemporaryDirectory() as tmp:
                for argv in rendered_flags(helm.template(overrides)):
                    ok, err = binary_accepts(args.sidecar, argv, tmp)
                    check(ok, f"{what}: the binary refuses the rendered flags: {err}")
        print(f"ok: fastfailover {what}: --fast-failover, POD_UID, LEASEHOLD_CONTAINER="
              f"{container}, get/list/watch on pods" + (" (the binary accepts the flags)"
                                                        if args.sidecar else ""))
    for what, overrides, says in (
            ("status file", {"fastFailover": True}, "fastFailover needs statusFile.enabled=false"),
            ("shards", deep_merge(FAST, {"shards": 2}),
             "fastFailover and shards cannot be used together"),
            ("coordinated", deep_merge(FAST, {"coordinated": True}),
             "fastFailover and coordinated cannot be used together")):
        r = helm.template(overrides, ok=False)
        check(r.returncode != 0 and says in r.stderr,
              f"{what}: want a refusal saying {says!r}: {r.stderr.strip()[:300]}")
        print(f"ok: fastfailover: refused with {what}: {says}")


# (what, overrides, the --timeout the hook renders; None: no hook)
UNINSTALL_CASES = (
    ("defaults", {}, "60s"),
    ("run mode", {"runMode": {"enabled": True}}, "60s"),
    ("shard mode", {"shards": 4}, "60s"),
    ("longer grace", {"terminationGracePeriodSeconds": 45}, "75s"),
    ("own timeout", {"uninstallHook": {"timeout": "2m30s"}}, "2m30s"),
    ("longest name", {"fullnameOverride": "a" * 63}, "60s"),
    ("no example", {"example": {"enabled": False}, "tests": {"enabled": False}}, None),
    ("hook off", {"uninstallHook": {"enabled": False}}, None),
)


def check_uninstall(helm, args):
    base = load_values()
    with tempfile.TemporaryDirectory() as tmp:
        for what, overrides, timeout in UNINSTALL_CASES:
            values = deep_merge(base, overrides)
            objs = by_kind(helm.render(overrides))
            job = test_chart.check_uninstall_hook(objs, values,
                                                  values["fullnameOverride"] or "leasehold")
            check((job is None) == (timeout is None), f"{what}: hook {job}")
            if job is None:
                print(f"ok: uninstall {what}: no pre-delete hook")
                continue
            name, (c,) = job["metadata"]["name"], job["spec"]["template"]["spec"]["containers"]
            check(len(name) <= 63 and f"--timeout={timeout}" in c["args"],
                  f"{what}: Job {name} args {c['args']}")
            parsed = ""
            if args.sidecar:
                # The arguments parse (a usage error would say "usage:"); the kubeconfig that
                # does not exist ends it before any request.
                r = subprocess.run([str(args.sidecar), *c["args"],
                                    f"--kubeconfig={tmp}/missing"], capture_output=True,
                                   text=True, timeout=10, env=test_chart.pod_env(tmp))
                check(r.returncode == 2 and "missing" in r.stderr and "usage" not in r.stderr,
                      f"{what}: leasehold {' '.join(c['args'])}: {r.returncode} {r.stderr}")
                parsed = "; the binary parses its arguments"
            print(f"ok: uninstall {what}: pre-delete Job {name}: {' '.join(c['args'])}, "
                  f"activeDeadlineSeconds {job['spec']['activeDeadlineSeconds']}{parsed}")
    r = helm.template({"uninstallHook": {"timeout": "30s"}}, ok=False)
    says = "uninstallHook.timeout (30s) must be longer than terminationGracePeriodSeconds (30)"
    check(r.returncode != 0 and says in r.stderr, f"a hook timeout within the grace period: "
                                                   f"{r.stderr.strip()[:300]}")
    print(f"ok: uninstall: refused: {says}")


ARTIFACTHUB_KINDS = {"added", "changed", "deprecated", "removed", "fixed", "security"}


def check_artifacthub(_helm, _args):
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    notes = meta["annotations"]
    images = yaml.safe_load(notes["artifacthub.io/images"])
    image = load_values()["image"]
    check(images == [{"name": "leasehold",
                      "image": f"{image['repository']}:{image['tag']}"}],
          f"artifacthub.io/images {images}")
    changes = yaml.safe_load(notes["artifacthub.io/changes"])
    check(changes and all(set(c) == {"kind", "description"} and c["kind"] in ARTIFACTHUB_KINDS
                          and c["description"] for c in changes),
          f"artifacthub.io/changes {changes}")
    print(f"ok: artifacthub: images {images[0]['image']}; {len(changes)} changes")


CHECKS = {"pod": check_pod, "pdb": check_pdb, "timings": check_timings, "native": check_native,
          "monitoring": check_monitoring, "artifacthub": check_artifacthub,
          "injector": check_injector, "leases": check_leases, "podlabel": check_podlabel,
          "uninstall": check_uninstall, "fastfailover": check_fastfailover}


def main():
    ap = chart_suite.parser()
    ap.add_argument("--sidecar", type=Path, help="the leasehold binary (for `timings`)")
    args = chart_suite.parse_names(ap, CHECKS, "check")
    return chart_suite.run_offline(args, args.checks or list(CHECKS),
                                   lambda helm, name: CHECKS[name](helm, args))


if __name__ == "__main__":
    sys.exit(main())
