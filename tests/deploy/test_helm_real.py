#!/usr/bin/env python3
"""The chart and manifests/ on the real kube-apiserver (tests/realkube), with real helm and kubectl.

    test_helm_real.py [--helm BIN] [--kubectl BIN] [--control-plane DIR] [--sidecar BIN]
                      [STEP...]
        STEP: manifests variants isolation podlabel shardpolicy install reject upgrade test
              uninstall
              (default: all, in order; upgrade/test/uninstall need install)

The control plane is etcd + kube-apiserver only (tests/realkube/start.sh): no controller-manager,
scheduler or kubelet. Objects are validated, defaulted and admitted for real, but a Deployment
gets no Pods and a Pod never runs. --control-plane DIR uses one already `up` in DIR (and leaves it
running); otherwise start.sh brings one up in a temporary directory and down at the end. The
namespaces have the process id in their names: without a controller-manager a deleted namespace
stays Terminating, so a reused control plane cannot get the same names back.

manifests  `kubectl apply --dry-run=server -f manifests/` is accepted (and creates nothing);
           a copy with requests above limits, or with a misspelt field, is refused by the server.
variants   every value combination test_chart.py renders (run mode too), and the subchart usage
           of the chart README, `helm template` | `kubectl apply --dry-run=server`: all accepted.
isolation  two releases in one namespace: each has the Lease the chart made (no holder, kept on
           uninstall), and `kubectl auth can-i` as each ServiceAccount: get/update/watch on its
           own Lease yes; create of any Lease, patch/delete of its own, anything on the
           other's: no; the same for a `leases` entry's ServiceAccount. helm uninstall keeps
           both Leases; a reinstall under the same name
           adopts its Lease (same uid), another release naming it is refused.
podlabel   podLabel's ValidatingAdmissionPolicy, with tokens bound to pods as the kubelet's
           are (`kubectl create token --bound-object-kind Pod`): the release's ServiceAccount
           may set the label to true/false on its own pod; another pod, a token bound to no
           pod, another label or value are refused with the policy's message; the admin is
           left alone.
shardpolicy  shard mode's ValidatingAdmissionPolicy: with a token of the shard release's
           ServiceAccount, creating/updating/deleting the group's shard and membership Leases
           is allowed; a shard index >= N, another release's Lease, an unlabelled shard are
           refused with the policy's message; the admin is left alone.
install    a copy of the chart that asks for Kubernetes >= 1.99 is refused by helm with the
           server's real version; then `helm install`: Chart.yaml's kubeVersion passes for
           real, NOTES are shown, and the server's objects are the rendered ones (the native
           sidecar's restartPolicy survives the server's validation and defaulting).
reject     values the schema allows but the server does not (sidecar requests above limits):
           `helm install` fails with the server's 422 message; the failed release uninstalls.
upgrade    `helm upgrade` to podLabel + leader Service + other timings + no status file: the
           Role gains pods get/patch, the Service appears, the Deployment's flags change,
           NOTES name the leader pod label; a second upgrade (--reuse-values) drops the Service.
test       `helm test` creates the test Pod (hook annotation, native sidecar with the chart's
           flags, ServiceAccount admission's token volume; its own ServiceAccount, Role and
           RoleBinding, hooks created before it): with nothing to run it, helm times
           out and keeps the failed Pod (delete policy before-hook-creation,hook-succeeded).
           No test writes a kubelet's part: deploy.node_chart runs helm test on a real node
           (the Pod passes, helm deletes it and its grants).
uninstall  `helm uninstall`: its pre-delete hook first, the Job `leasehold scale-down` after
           its ServiceAccount, Role and RoleBinding, and nothing of the release deleted while
           the Job runs. No kubelet runs it: the test runs the Job's own command line with this
           build's binary (--sidecar) as the Job's ServiceAccount (a TokenRequest token), so the
           server's RBAC decides: the Deployment is scaled to 0 (no pod to wait for without a
           controller-manager), and the same command on another Deployment is refused (403,
           the message naming the rule); then the test marks the Job complete as the Job
           controller would, and helm goes on: no object with the release's labels is left but
           the Lease (kept: its fencing token) and the failed test's Pod (helm never deletes
           those), the hook's objects are deleted (hook-succeeded), no release Secret is left.
           (deploy.node_chart's reinstall step runs the hook for real.)

Over 400 lines: one control plane for all the steps (each a function of 15-50 lines), because
its start is the costly part.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import test_chart  # noqa: E402  (VARIANTS, the subchart, the object checks)
from leasehold_testing import ControlPlane, Failure, check, log, wait_for  # noqa: E402
from leasehold_testing.chart_suite import real_steps_main  # noqa: E402
from leasehold_testing.helm import CHART, by_kind, documents, is_hook  # noqa: E402
from leasehold_testing.kubeconfig import write_kubeconfig  # noqa: E402
from leasehold_testing.paths import ROOT  # noqa: E402

NS = f"lh-helm-{os.getpid()}"
VARIANTS_NS = f"lh-variants-{os.getpid()}"
RELEASE = "leasehold"
INSTANCE = f"app.kubernetes.io/instance={RELEASE}"
TEST_POD = f"{RELEASE}-test-leader"
KINDS = "serviceaccounts,roles,rolebindings,deployments,services,pods,configmaps,leases"


class Cluster(ControlPlane):
    """The suites' one start.sh wrapper (leasehold_testing.ControlPlane) plus the kubectl queries the
    steps below ask."""

    def get(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)

    def exists(self, *args):
        r = self.kubectl("get", "-o", "name", *args, ok=False)
        if r.returncode != 0 and "NotFound" not in r.stderr:
            raise Failure(f"kubectl get {' '.join(args)}: {r.stderr.strip()}")
        return r.returncode == 0

    def names(self, kinds, ns, selector):
        out = self.kubectl("get", kinds, "-n", ns, "-l", selector, "-o", "name").stdout
        return sorted(out.split())


def short(name):
    """kubectl's role.rbac.authorization.k8s.io/x as role/x."""
    kind, _, obj = name.partition("/")
    return f"{kind.split('.')[0]}/{obj}"


def out_of(r):
    return (r.stdout + r.stderr).strip()


def applied(cp, docs, ns):
    """kubectl apply --dry-run=server of these objects; returns the server's lines."""
    stream = yaml.safe_dump_all(docs, sort_keys=False)
    r = cp.kubectl("apply", "--dry-run=server", "-n", ns, "-f", "-", input=stream, ok=False)
    check(r.returncode == 0, f"the server refused: {out_of(r)}")
    lines = r.stdout.split("\n")
    check(sum("(server dry run)" in ln for ln in lines) == len(docs),
          f"expected {len(docs)} server dry-run results: {r.stdout}")
    return [ln for ln in lines if ln]


# --- steps ------------------------------------------------------------------------------------


def step_manifests(cp, helm, state):
    r = cp.kubectl("apply", "--dry-run=server", "-f", ROOT / "manifests", ok=False)
    check(r.returncode == 0, f"kubectl apply --dry-run=server -f manifests/: {out_of(r)}")
    lines = r.stdout.strip().splitlines()
    docs = [d for path in sorted((ROOT / "manifests").glob("*.yaml"))
            for d in yaml.safe_load_all(path.read_text()) if d]
    check(len(lines) == len(docs) and all("created (server dry run)" in ln for ln in lines),
          f"expected {len(docs)} objects created (server dry run): {r.stdout}")
    for ln in lines:
        log(f"ok: {ln}")
    for path in sorted((ROOT / "manifests").glob("*.yaml")):
        check(not cp.exists("-f", path), f"a server dry run created {path.name}'s objects")
    log("ok: the dry run created nothing")
    dep_text = (ROOT / "manifests/deployment.yaml").read_text()
    for what, old, new, want in (
            ("sidecar requests above its limits", "\n              memory: 16Mi",
             "\n              memory: 64Mi",  # the first one: the sidecar's requests
             "initContainers[0].resources.requests: Invalid value: \"64Mi\": must be less than"),
            ("a misspelt field", "\n          restartPolicy: Always",
             "\n          restartPolcy: Always",
             'unknown field "spec.template.spec.initContainers[0].restartPolcy"')):
        check(old in dep_text, f"manifests/deployment.yaml: no {old!r} to mutate")
        r = cp.kubectl("apply", "--dry-run=server", "-f", "-",
                       input=dep_text.replace(old, new, 1), ok=False)
        check(r.returncode != 0 and want in r.stderr,
              f"the server must refuse {what}: rc {r.returncode}: {out_of(r)}")
        log(f"ok: refused, {what}: {r.stderr.strip().splitlines()[0][:200]}")


def step_variants(cp, helm, state):
    cp.kubectl("create", "namespace", VARIANTS_NS)
    variants = {**test_chart.VARIANTS, **test_chart.RUN_MODE_VARIANTS}
    renderings = [(what, helm.render(o, namespace=VARIANTS_NS)) for what, o in variants.items()]
    with tempfile.TemporaryDirectory() as tmp:
        parent = test_chart.make_parent_chart(tmp)
        renderings.append(("subchart (chart README)",
                           helm.render(chart=parent, release="shop", namespace=VARIANTS_NS)))
    for what, rendered in renderings:
        docs = [d for _, d in rendered]
        # The ServiceAccount admission plugin refuses a Pod whose ServiceAccount does not exist,
        # and a dry run stores nothing: create the ServiceAccounts first (as an install would).
        for d in docs:
            if d["kind"] == "ServiceAccount":
                cp.kubectl("apply", "-n", VARIANTS_NS, "-f", "-", input=yaml.safe_dump(d))
        lines = applied(cp, docs, VARIANTS_NS)
        kinds = ", ".join(ln.split(" ")[0] for ln in lines)
        log(f"ok: server dry run accepts {what}: {kinds}")


def step_install(cp, helm, state):
    cp.kubectl("create", "namespace", NS)
    with tempfile.TemporaryDirectory() as tmp:
        chart = test_chart.copy_chart(Path(tmp) / "leasehold")
        meta = chart / "Chart.yaml"
        meta.write_text(meta.read_text().replace('kubeVersion: ">=1.25.0-0"',
                                                 'kubeVersion: ">=1.99.0-0"'))
        r = helm.run("install", "future", chart, "-n", NS, ok=False)
        want = f"incompatible with Kubernetes v{helm.kube_version}"
        check(r.returncode != 0 and want in out_of(r),
              f"a chart asking for Kubernetes >= 1.99 must be refused ({want}): {out_of(r)}")
        log(f"ok: helm checks kubeVersion against the server: {test_chart.first_line(out_of(r), want)}")
    check(not helm.run("list", "-n", NS, "-q").stdout.strip(), "the refused install left a release")

    r = helm.run("install", RELEASE, CHART, "-n", NS)
    check("STATUS: deployed" in r.stdout, f"helm install: {r.stdout}")
    check(f"kubectl -n {NS} get lease {RELEASE}" in r.stdout
          and "helm uninstall first scales the Deployment to 0" in r.stdout, f"NOTES: {r.stdout}")
    log(f"ok: helm install on Kubernetes v{helm.kube_version} (chart kubeVersion "
        f"{test_chart.chart_meta()['kubeVersion']}): "
        f"{test_chart.first_line(r.stdout, 'STATUS')}; NOTES show `get lease {RELEASE}`")
    rendered = by_kind(helm.render(namespace=NS))
    names = cp.names(KINDS, NS, INSTANCE)
    want = sorted(f"{k.lower()}/{n}" for (k, n), d in rendered.items() if not is_hook(d))
    check(sorted(map(short, names)) == want, f"objects of the release: {names}, rendered {want}")
    role = cp.get("role", RELEASE, "-n", NS)
    check(role["rules"] == rendered[("Role", RELEASE)]["rules"], f"Role rules {role['rules']}")
    dep = cp.get("deployment", RELEASE, "-n", NS)
    side = test_chart.sidecar_of(dep)
    want_side = test_chart.sidecar_of(rendered[("Deployment", RELEASE)])
    check(side["args"] == want_side["args"], f"sidecar args {side['args']}")
    check(side.get("restartPolicy") == "Always",
          f"the server dropped the native sidecar's restartPolicy: {side}")
    check(dep["metadata"]["labels"].get("app.kubernetes.io/managed-by") == "Helm"
          and dep["metadata"]["annotations"].get("meta.helm.sh/release-name") == RELEASE,
          f"helm's ownership metadata: {dep['metadata']}")
    log(f"ok: on the server: {', '.join(names)}; Role rules and sidecar flags as rendered, "
        f"native sidecar kept (restartPolicy: Always); no Pods: no controller-manager")
    state["installed"] = True


def step_reject(cp, helm, state):
    r = helm.run("install", "bad", CHART, "-n", NS, "--set", "fullnameOverride=bad",
                 "--set", "resources.requests.memory=64Mi", "--set", "tests.enabled=false",
                 ok=False)
    want = "must be less than or equal to memory limit"
    check(r.returncode != 0 and want in out_of(r), f"helm install must fail with the server's "
                                                   f"validation error: {out_of(r)}")
    log(f"ok: server refuses requests > limits: {test_chart.first_line(out_of(r), want)[:220]}")
    status = helm.run("status", "bad", "-n", NS, ok=False).stdout
    check("STATUS: failed" in status, f"the release should be recorded as failed: {status}")
    # --no-hooks: no kubelet would run its uninstall hook's Job (step uninstall plays it).
    helm.run("uninstall", "bad", "-n", NS, "--no-hooks")
    left = cp.names(KINDS, NS, "app.kubernetes.io/instance=bad")
    # The Lease stays (helm.sh/resource-policy: keep), as after every uninstall.
    check([short(n) for n in left] == ["lease/bad"], f"the failed release's objects: {left}")
    log("ok: the failed release is recorded as failed and uninstalls cleanly (its Lease kept)")


UPGRADE = {"podLabel": "leasehold.io/leader", "leaderService": {"enabled": True},
           "timings": {"leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "4s"},
           "statusFile": {"enabled": False}}


def step_upgrade(cp, helm, state):
    check(state.get("installed"), "needs install")
    r = helm.run("upgrade", RELEASE, CHART, "-n", NS, *helm.value_args(UPGRADE))
    check("REVISION: 2" in r.stdout, f"helm upgrade: {r.stdout}")
    notes = helm.run("get", "notes", RELEASE, "-n", NS).stdout
    check("get pods -l leasehold.io/leader=true" in notes, f"NOTES after upgrade: {notes}")
    role = cp.get("role", RELEASE, "-n", NS)
    check({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "patch"]} in role["rules"],
          f"Role after upgrade: {role['rules']}")
    svc = cp.get("service", f"{RELEASE}-leader", "-n", NS)
    check(svc["spec"]["selector"].get("leasehold.io/leader") == "true", f"Service {svc['spec']}")
    dep = cp.get("deployment", RELEASE, "-n", NS)
    args = test_chart.sidecar_of(dep)["args"]
    for a in ("--pod-label=leasehold.io/leader", "--lease-duration=30s", "--renew-deadline=20s",
              "--retry-period=4s"):
        check(a in args, f"{a} missing after upgrade: {args}")
    check(not any(a.startswith("--status-file") for a in args)
          and "volumes" not in dep["spec"]["template"]["spec"], f"status file left: {dep}")
    check(dep["metadata"]["generation"] == 2, f"generation {dep['metadata']['generation']}")
    log(f"ok: helm upgrade (revision 2): Role + pods get/patch, Service {RELEASE}-leader "
        f"selects leasehold.io/leader=true, flags {' '.join(args[1:4])} --pod-label, no status "
        f"file; NOTES name the leader pod label")
    r = helm.run("upgrade", RELEASE, CHART, "-n", NS, "--reuse-values",
                 "--set", "leaderService.enabled=false")
    check("REVISION: 3" in r.stdout, f"second upgrade: {r.stdout}")
    check(not cp.exists("service", f"{RELEASE}-leader", "-n", NS),
          "the Service must be deleted when leaderService is switched off")
    check("--pod-label=leasehold.io/leader" in
          test_chart.sidecar_of(cp.get("deployment", RELEASE, "-n", NS))["args"],
          "--reuse-values kept podLabel")
    log("ok: helm upgrade --reuse-values --set leaderService.enabled=false (revision 3): "
        "Service deleted, podLabel kept")


def helm_test_async(helm, timeout):
    argv = [str(helm.path), "test", RELEASE, "-n", NS, "--timeout", timeout]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=helm.env)


def test_pod(cp):
    r = cp.kubectl("get", "pod", TEST_POD, "-n", NS, "-o", "json", ok=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def step_test(cp, helm, state):
    check(state.get("installed"), "needs install")
    hooks = {d["metadata"]["name"]: d for _, d in
             documents(helm.run("get", "hooks", RELEASE, "-n", NS).stdout)}
    check(TEST_POD in hooks, f"the release has no test hook: {sorted(hooks)}")
    rendered = hooks[TEST_POD]
    # 1. Nothing runs the Pod: helm creates it, waits, times out and keeps it.
    t0 = time.monotonic()
    proc = helm_test_async(helm, "15s")
    try:
        pod = wait_for("helm test to create the test Pod", lambda: test_pod(cp), 30, 0.2)
        # helm deletes these hooks (hook-succeeded) once the test ends, passed or not.
        hook_kinds = [kind for kind in ("serviceaccount", "role", "rolebinding")
                      if cp.kubectl("get", kind, TEST_POD, "-n", NS, ok=False).returncode == 0]
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check(proc.returncode != 0 and "Phase:          Failed" in out
          and "timed out waiting for the condition" in out,
          f"without a kubelet helm test must time out waiting for the Pod: {out}")
    log(f"ok: helm test created pod/{TEST_POD} and timed out after {time.monotonic() - t0:.0f} s "
        f"(Phase: Failed, {test_chart.first_line(out, 'timed out')!r})")
    meta, spec = pod["metadata"], pod["spec"]
    check(meta["annotations"].get("helm.sh/hook") == "test", f"hook annotation {meta}")
    check(pod["status"].get("phase") == "Pending", f"phase {pod['status']}")
    side = test_chart.sidecar_of(pod)
    check(side.get("restartPolicy") == "Always"
          and side["args"] == test_chart.sidecar_of(rendered)["args"],
          f"test Pod's sidecar: {side}")
    check(spec["serviceAccountName"] == TEST_POD, f"serviceAccountName {spec}: the test's own "
          "ServiceAccount, which may only read the Lease")
    check(sorted(hook_kinds) == ["role", "rolebinding", "serviceaccount"],
          f"while the test Pod existed, its ServiceAccount, Role and RoleBinding (hooks before "
          f"it) must have: {hook_kinds}")
    injected = [v["name"] for v in spec.get("volumes", []) if "projected" in v
                and v["name"].startswith("kube-api-access-")]
    check(injected and all(any(m["name"] == injected[0] for m in c.get("volumeMounts", []))
                           for c in spec["initContainers"] + spec["containers"]),
          f"the ServiceAccount admission plugin must add the token volume: {spec}")
    script = spec["containers"][0]["command"][-1]
    check("curl" in script and "/leader" in script, f"test script {script}")
    log(f"ok: the test Pod as admitted: hook=test, Pending, native sidecar with the release's "
        f"flags, {injected[0]} (projected token) added by the ServiceAccount admission plugin")
    check(test_pod(cp) is not None, "a failed test Pod is kept for its logs")
    log("ok: the failed test Pod is kept (delete policy before-hook-creation,hook-succeeded)")

    # A test Pod that runs and passes (hook-succeeded deleting it and its grants) needs a
    # kubelet: deploy.node_chart's helmtest step runs it on a real node.


def step_isolation(cp, helm, state):
    ns = f"lh-iso-{os.getpid()}"
    cp.kubectl("create", "namespace", ns)
    quiet = {"example": {"enabled": False}, "tests": {"enabled": False}}
    for release in ("shop", "billing"):
        helm.run("install", release, CHART, "-n", ns, *helm.value_args(quiet))
        lease = cp.get("lease", release, "-n", ns)
        check(lease["metadata"]["annotations"].get("helm.sh/resource-policy") == "keep"
              and not lease["spec"].get("holderIdentity"),
              f"the chart's Lease {release}: {lease['metadata']}, {lease['spec']}")
    want = {("update", "own"): True, ("get", "own"): True, ("watch", "own"): True,
            ("create", "any"): False, ("patch", "own"): False, ("delete", "own"): False,
            ("update", "other"): False, ("patch", "other"): False, ("get", "other"): False,
            ("delete", "other"): False}
    for sa, other in (("shop", "billing"), ("billing", "shop")):
        got = {}
        for verb, whose in want:
            resource = {"own": f"leases/{sa}", "other": f"leases/{other}",
                        "any": "leases"}[whose]
            got[(verb, whose)] = cp.can_i(ns, sa, verb, resource)
        check(got == want, f"{sa}'s grants on the Leases: {got}, want {want}")
    # The injected workloads' grants: leases: [...] in a third release.
    grants = {**quiet, "leases": [{"name": "cart", "serviceAccount": "cart"}]}
    helm.run("install", "grants", CHART, "-n", ns, *helm.value_args(grants))
    got = [cp.can_i(ns, "cart", verb, resource) for verb, resource in (
        ("update", "leases/cart"), ("update", "leases/shop"), ("create", "leases"))]
    check(got == [True, False, False] and cp.get("lease", "cart", "-n", ns),
          f"the leases entry's ServiceAccount on its Lease, another, any new one: {got}")
    log(f"ok: two releases in {ns}, each with the Lease the chart made (kept on uninstall, no "
        "holder): each ServiceAccount may get/update/watch its own Lease and nothing else: "
        "no create of any Lease, no patch or delete of its own, nothing on the other's; a "
        "leases entry's ServiceAccount the same on its Lease")
    for release in ("shop", "billing"):
        helm.run("uninstall", release, "-n", ns)
        check(cp.get("lease", release, "-n", ns)["metadata"]["name"] == release,
              f"helm uninstall deleted the Lease {release} (helm.sh/resource-policy: keep)")
    log("ok: helm uninstall keeps each Lease (its fencing token never goes back)")
    before = cp.get("lease", "shop", "-n", ns)["metadata"]["uid"]
    helm.run("install", "shop", CHART, "-n", ns, *helm.value_args(quiet))
    check(cp.get("lease", "shop", "-n", ns)["metadata"]["uid"] == before,
          "a reinstall under the same name must adopt the kept Lease, not replace it")
    r = helm.run("install", "other", CHART, "-n", ns, "--set", "leaseName=billing",
                 *helm.value_args(quiet), ok=False)
    check(r.returncode != 0 and "invalid ownership metadata" in out_of(r),
          f"another release naming a kept Lease must be refused: {out_of(r)}")
    log("ok: a reinstall under the same name adopts the kept Lease (same uid); another release "
        "naming it is refused by helm (lease.create=false is for a Lease made elsewhere)")


def patch_label(cp, ns, pod, token, key, value):
    """(status, message) of the sidecar's own request: a merge patch of one label with TOKEN."""
    code, body = cp.api("PATCH", f"/api/v1/namespaces/{ns}/pods/{pod}",
                        {"metadata": {"labels": {key: value}}}, ok=None, token=token,
                        content_type="application/merge-patch+json")
    return code, (body or {}).get("message", "") if isinstance(body, dict) else str(body)


def step_podlabel(cp, helm, state):
    ns = f"lh-label-{os.getpid()}"
    label = "leasehold.io/leader"
    cp.kubectl("create", "namespace", ns)
    helm.run("install", "web", CHART, "-n", ns, "--set", f"podLabel={label}",
             *helm.value_args({"example": {"enabled": False}, "tests": {"enabled": False}}))
    policy = f"leasehold-pod-label.{ns}.web"
    check(cp.kubectl("get", "validatingadmissionpolicy", policy, ok=False).returncode == 0,
          f"no ValidatingAdmissionPolicy {policy} with podLabel")
    for pod in ("web-0", "web-1"):
        cp.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod},
            "spec": {"serviceAccountName": "web",
                     "containers": [{"name": "app", "image": "busybox"}]}}))

    def token(*bound):
        return cp.kubectl("create", "token", "web", "-n", ns, *bound).stdout.strip()
    own = token("--bound-object-kind", "Pod", "--bound-object-name", "web-0")
    unbound = token()
    # The policy is in effect once the server's informer has it: the first refusal says so.
    wait_for("the pod-label policy in effect",
             lambda: patch_label(cp, ns, "web-1", own, label, "true")[0] != 200, 30, 0.5)
    cases = (("its own pod, the label, true", "web-0", own, label, "true", True, ""),
             ("its own pod, the label, false", "web-0", own, label, "false", True, ""),
             ("another pod", "web-1", own, label, "true", False, "may label only its own pod"),
             ("a token bound to no pod", "web-0", unbound, label, "true", False,
              "a token bound to no pod"),
             ("another label", "web-0", own, "team", "a", False, "may change only the label"),
             ("another value", "web-0", own, label, "maybe", False,
              "may change only the label"))
    for what, pod, tok, key, value, allowed, says in cases:
        code, message = patch_label(cp, ns, pod, tok, key, value)
        if allowed:
            check(code == 200, f"{what}: {code} {message}")
        else:
            check(code in (403, 422) and says in message, f"{what}: {code} {message}")
        log(f"ok: podLabel policy, {what}: {code}" + (f" ({says})" if says else ""))
    code, message = patch_label(cp, ns, "web-1", None, "team", "a")  # the admin
    check(code == 200, f"the policy must leave other users alone: {code} {message}")
    helm.run("uninstall", "web", "-n", ns)
    log("ok: the admin's patch of another label is untouched by the policy")


def lease_request(cp, ns, token, method, name, labels=None):
    """(status, message) of a Lease request made with TOKEN: POST (create) or PUT/DELETE NAME."""
    path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    body = None
    if method != "DELETE":
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "labels": labels or {}}, "spec": {}}
    if method == "PUT":
        body["metadata"]["resourceVersion"] = cp.get("lease", name, "-n", ns)["metadata"][
            "resourceVersion"]
    code, answer = cp.api(method, path if method == "POST" else f"{path}/{name}", body,
                          ok=None, token=token)
    return code, answer.get("message", "") if isinstance(answer, dict) else str(answer)


def step_shardpolicy(cp, helm, state):
    ns = f"lh-shards-{os.getpid()}"
    cp.kubectl("create", "namespace", ns)
    quiet = {"example": {"enabled": False}, "tests": {"enabled": False}}
    helm.run("install", "work", CHART, "-n", ns, "--set", "shards=3", *helm.value_args(quiet))
    helm.run("install", "shop", CHART, "-n", ns, *helm.value_args(quiet))
    policy = f"leasehold-shard-leases.{ns}.work"
    check(cp.kubectl("get", "validatingadmissionpolicy", policy, ok=False).returncode == 0,
          f"no ValidatingAdmissionPolicy {policy} with shards")
    token = cp.kubectl("create", "token", "work", "-n", ns).stdout.strip()
    group = {"leasehold.io/shard-group": "work"}
    # The policy is in effect once the server's informer has it: the first refusal says so.
    wait_for("the shard policy in effect",
             lambda: "only the Leases of the shard" in lease_request(
                 cp, ns, token, "POST", f"stray-{time.monotonic_ns()}", group)[1], 30, 0.5)
    cases = (("shard 0, labelled", "POST", "work-0", group, True, ""),
             ("shard 2, labelled", "POST", "work-2", group, True, ""),
             ("a membership Lease", "POST", "work-member-0123456789abcdef", group, True, ""),
             ("shard 3 of 3", "POST", "work-3", group, False, "only the Leases of the shard"),
             ("shard 01", "POST", "work-01", group, False, "only the Leases of the shard"),
             ("another release's name", "POST", "shopping", group, False, "not shopping"),
             ("a shard without the group label", "POST", "work-1", {}, False,
              "must label the Leases it creates"),
             ("an update of its shard", "PUT", "work-0", group, True, ""),
             ("an update of another release's Lease", "PUT", "shop", {}, False, "not shop"),
             ("a delete of another release's Lease", "DELETE", "shop", None, False, "not shop"),
             ("a delete of its membership Lease", "DELETE", "work-member-0123456789abcdef",
              None, True, ""))
    for what, method, name, labels, allowed, says in cases:
        code, message = lease_request(cp, ns, token, method, name, labels)
        if allowed:
            check(code in (200, 201), f"{what}: {code} {message}")
        else:
            check(code in (403, 422) and says in message, f"{what}: {code} {message}")
        log(f"ok: shard policy, {what}: {code}" + (f" ({says})" if says else ""))
    check(cp.get("lease", "shop", "-n", ns)["metadata"]["name"] == "shop", "shop's Lease gone")
    code, message = lease_request(cp, ns, None, "POST", "anything")  # the admin
    check(code == 201, f"the policy must leave other users alone: {code} {message}")
    for release in ("work", "shop"):
        helm.run("uninstall", release, "-n", ns)
    log("ok: the shard group's ServiceAccount may create, update and delete only its group's "
        "Leases; the admin is left alone")
HOOK = f"{RELEASE}-scale-down"


def scale_down(cp, binary, job, kubeconfig, *more):
    """The hook Job's command line (its args, then MORE) run here as its ServiceAccount."""
    argv = [str(binary), *job["spec"]["template"]["spec"]["containers"][0]["args"], *more,
            f"--kubeconfig={kubeconfig}"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def complete_job(cp, name):
    """What the Job controller writes when the Job's pod succeeded (the status validation of
    Kubernetes 1.31+: start and completion times, SuccessCriteriaMet before Complete)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions = [{"type": t, "status": "True", "lastProbeTime": now,
                   "lastTransitionTime": now, "reason": "CompletionsReached",
                   "message": "Reached expected number of succeeded pods"}
                  for t in ("SuccessCriteriaMet", "Complete")]
    status = {"startTime": now, "completionTime": now, "succeeded": 1, "active": 0,
              "ready": 0, "terminating": 0, "conditions": conditions,
              "uncountedTerminatedPods": {}}
    cp.kubectl("patch", "job", name, "-n", NS, "--subresource=status", "--type=merge",
               "-p", json.dumps({"status": status}))


def step_uninstall(cp, helm, state):
    check(state.get("installed"), "needs install")
    binary = state["args"].sidecar
    check(binary, "uninstall: needs --sidecar BIN (the hook Job's command)")
    before = cp.names(KINDS, NS, INSTANCE)
    hooks = {d["metadata"]["name"]: d for _, d in
             documents(helm.run("get", "hooks", RELEASE, "-n", NS).stdout)
             if d["metadata"]["annotations"].get("helm.sh/hook") == "pre-delete"}
    check(list(hooks) == [HOOK], f"the release's pre-delete hooks: {sorted(hooks)}")
    argv = [str(helm.path), "uninstall", RELEASE, "-n", NS, "--timeout", "90s"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=helm.env)
    try:
        job = wait_for("helm uninstall to create the hook's Job",
                       lambda: cp.exists("job", HOOK, "-n", NS) and cp.get("job", HOOK, "-n", NS),
                       30, 0.2)
        made = [k for k in ("serviceaccount", "role", "rolebinding")
                if cp.exists(k, HOOK, "-n", NS)]
        check(made == ["serviceaccount", "role", "rolebinding"],
              f"the hook's grants must exist before its Job: {made}")
        gone = set(before) - set(cp.names(KINDS, NS, INSTANCE))
        check(not gone, f"helm deleted {sorted(gone)} before its pre-delete hook succeeded")
        with tempfile.TemporaryDirectory() as tmp:
            token = cp.kubectl("create", "token", HOOK, "-n", NS).stdout.strip()
            kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", cp.url, cp.ca, HOOK,
                                          token=token, namespace=NS)
            t0 = time.monotonic()
            r = scale_down(cp, binary, job, kubeconfig)
            took = time.monotonic() - t0
            # No controller-manager: the status counted no pod, and none is to wait for.
            check(r.returncode == 0 and "scaled to 0 replicas (its status had 0)" in r.stdout
                  and f"no pod of deployment {NS}/{RELEASE} left" in r.stdout,
                  f"the hook's command as its ServiceAccount: {r.returncode}\n{out_of(r)}")
            replicas = cp.get("deployment", RELEASE, "-n", NS)["spec"]["replicas"]
            check(replicas == 0, f"the Deployment after the hook's command: {replicas} replicas")
            log(f"ok: helm uninstall made {', '.join(made)}, then job/{HOOK}; its command as "
                f"its ServiceAccount scaled deployment/{RELEASE} to 0 in {took:.2f}s: "
                f"{r.stdout.strip().splitlines()[-1]}")
            r = scale_down(cp, binary, job, kubeconfig, "--deployment=other")
            want = ('patch deployments/scale "other" in namespace "' + NS + '" failed (403): '
                    "this ServiceAccount may not patch deployments/scale \"other\" (RBAC): its "
                    'Role needs the rule {apiGroups: ["apps"], resources: [deployments/scale], '
                    "resourceNames: [other], verbs: [patch]}")
            check(r.returncode == 1 and want in r.stderr,
                  f"the hook's ServiceAccount on another Deployment: {r.returncode}\n{out_of(r)}")
            log(f"ok: the same on another Deployment is refused: {r.stderr.strip()}")
        complete_job(cp, HOOK)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check(proc.returncode == 0 and f'release "{RELEASE}" uninstalled' in out,
          f"helm uninstall after its hook: {out}")
    gone = wait_for("the hook's objects deleted (hook-succeeded)", lambda: not [
        k for k in ("job", "serviceaccount", "role", "rolebinding")
        if cp.exists(k, HOOK, "-n", NS)], 30, 0.2)
    check(gone, "hook objects left")
    left = cp.names(KINDS, NS, INSTANCE)
    # Left: the Lease (helm.sh/resource-policy: keep: its token must never go back), and the
    # failed test's Pod, which helm never deletes (kept for its logs; chart README).
    kept = sorted(short(n) for n in left)
    check(kept in (["lease/leasehold"], ["lease/leasehold", f"pod/{TEST_POD}"]),
          f"left after helm uninstall: {left}")
    if f"pod/{TEST_POD}" in kept:
        cp.kubectl("delete", "pod", TEST_POD, "-n", NS)
    secrets = cp.names("secrets", NS, "owner=helm")
    check(not secrets, f"helm release Secrets left: {secrets}")
    check(not helm.run("list", "-n", NS, "-a", "-q").stdout.strip(), "helm list after uninstall")
    log(f"ok: helm uninstall removed {', '.join(before)} after its hook; nothing with "
        f"{INSTANCE}, no hook object, no release Secrets left")


STEPS = {"manifests": step_manifests, "variants": step_variants, "isolation": step_isolation,
         "podlabel": step_podlabel, "shardpolicy": step_shardpolicy,
         "install": step_install,
         "reject": step_reject, "upgrade": step_upgrade, "test": step_test,
         "uninstall": step_uninstall}


def same_version(helm, server):
    check(server == f"v{helm.kube_version}",
          f"server {server}, tests/realkube/go.mod pins v{helm.kube_version}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(real_steps_main(
        STEPS, cluster=Cluster, check_server=same_version,
        add_arguments=lambda ap: ap.add_argument(
            "--sidecar", type=Path, help="the leasehold binary: step uninstall runs its hook's "
                                         "command (default: build/release/sidecar/leasehold)",
            default=ROOT / "build/release/sidecar/leasehold")))
