#!/usr/bin/env python3
"""The chart's Prometheus Operator objects and dashboard on the real kube-apiserver, with the real
monitoring.coreos.com CRDs (tests/realkube), real helm and kubectl.

    test_monitoring_real.py [--helm BIN] [--kubectl BIN] [--crds DIR] [--control-plane DIR]
                            [STEP...]
        STEP: no-crds crds schema install uninstall (default: all, in order; schema, install
              and uninstall need crds, uninstall needs install)

The CRDs are the prometheus-operator release pinned in tests/realkube/promcrds/go.mod, copied by
tests/realkube/build.sh into build/realkube/crds/monitoring.coreos.com (--crds DIR: another
copy). No Prometheus Operator runs: the server stores and validates the objects (the CRDs'
OpenAPI schemas), nothing scrapes them (test_monitoring.py's `prometheus` check scrapes real
sidecars with the same relabeling and rules).

no-crds    before the CRDs: `helm install` with the monitors and alerts on and
           monitoringCRDs=installed fails, naming the missing kinds; nothing is left. With the
           default (auto) the install succeeds without the operator's objects (the dashboard
           ConfigMap is there) and its notes say SKIPPED.
crds       `kubectl apply --server-side` of the PodMonitor, ServiceMonitor and PrometheusRule
           CRDs; each becomes Established and `kubectl api-resources` lists the kinds.
schema     the rendered objects pass `kubectl apply --dry-run=server`; copies with a value the
           CRD schema forbids (a relabeling action, a `for` that is no duration, a
           ServiceMonitor without endpoints) are refused with the server's 422 message, so the
           schema is what accepted the chart's objects.
install    `helm install` with metrics.podMonitor, metrics.serviceMonitor, alerts and dashboard
           enabled: `kubectl get podmonitor,servicemonitor,prometheusrule,configmap,service`
           finds each object, with the rendered spec (the server's schema defaulting and
           pruning kept every field: an unknown field would have been dropped), the dashboard
           ConfigMap labelled grafana_dashboard with the dashboard JSON; the release's objects
           are exactly the rendered ones.
uninstall  `helm uninstall` removes them all but the Lease (kept: its fencing token).
"""
import json
import os
import sys
from pathlib import Path

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import test_monitoring  # noqa: E402  (ALL_ON, DASHBOARD)
from leasehold_testing import ControlPlane, check, log  # noqa: E402
from leasehold_testing.chart_suite import parse_names, real_parser, run_real  # noqa: E402
from leasehold_testing.helm import CHART, by_kind, is_hook  # noqa: E402
from leasehold_testing.paths import ROOT  # noqa: E402

NS = f"lh-mon-{os.getpid()}"
NO_CRDS_NS = f"lh-mon-nocrd-{os.getpid()}"
RELEASE = "leasehold"
INSTANCE = f"app.kubernetes.io/instance={RELEASE}"
CRDS = ("podmonitors", "servicemonitors", "prometheusrules")
MONITORING_KINDS = ("PodMonitor", "ServiceMonitor", "PrometheusRule")
CORE_KINDS = "serviceaccounts,roles,rolebindings,deployments,services,configmaps,leases"
KINDS = (CORE_KINDS + ",podmonitors.monitoring.coreos.com,servicemonitors.monitoring.coreos.com,"
         "prometheusrules.monitoring.coreos.com")
DEFAULT_CRDS = ROOT / "build/realkube/crds/monitoring.coreos.com"


def out_of(r):
    return (r.stdout + r.stderr).strip()


def names(cp, ns, selector=INSTANCE, kinds=KINDS):
    out = cp.kubectl("get", kinds, "-n", ns, "-l", selector, "-o", "name").stdout
    return sorted(out.split())


def short(kind, name):
    """kubectl -o name spelling of (kind, name): podmonitor.monitoring.coreos.com/x."""
    group = ".monitoring.coreos.com" if kind in MONITORING_KINDS else ""
    group = group or {"Role": ".rbac.authorization.k8s.io",
                      "RoleBinding": ".rbac.authorization.k8s.io",
                      "Deployment": ".apps", "Lease": ".coordination.k8s.io"}.get(kind, "")
    return f"{kind.lower()}{group}/{name}"


def step_no_crds(cp, helm, args, state):
    check(not cp.kubectl("get", "crd", "-o", "name", ok=False).stdout.count("monitoring.coreos"),
          "the monitoring.coreos.com CRDs are already installed: no-crds needs a fresh "
          "control plane")
    cp.kubectl("create", "namespace", NO_CRDS_NS)
    # monitoringCRDs: installed renders them anyway: the server refuses the unknown kinds.
    r = helm.run("install", RELEASE, CHART, "-n", NO_CRDS_NS,
                 *helm.value_args({**test_monitoring.ALL_ON, "monitoringCRDs": "installed"}),
                 ok=False)
    out = out_of(r)
    check(r.returncode != 0 and 'no matches for kind "PodMonitor"' in out
          and "ensure CRDs are installed first" in out,
          f"helm install without the CRDs must fail naming PodMonitor: {out}")
    first = next(ln for ln in out.splitlines() if "no matches" in ln)
    log(f"ok: without the CRDs, monitoringCRDs=installed: helm install fails: {first[:240]}")
    left = names(cp, NO_CRDS_NS, kinds=CORE_KINDS)
    check(not left, f"the refused install left {left}")
    check(not helm.run("list", "-n", NO_CRDS_NS, "-a", "-q").stdout.strip(),
          "the refused install left a release")
    log("ok: nothing left behind")
    # The default (auto): the cluster does not serve monitoring.coreos.com/v1, so the chart
    # installs without the operator's objects and its notes say so.
    r = helm.run("install", RELEASE, CHART, "-n", NO_CRDS_NS,
                 *helm.value_args({**test_monitoring.ALL_ON, "example": {"enabled": False},
                                   "tests": {"enabled": False}}))
    out = out_of(r)
    check("SKIPPED: the PodMonitor, ServiceMonitor and PrometheusRule" in out,
          f"helm install's notes must say the monitoring objects were skipped: {out}")
    left = names(cp, NO_CRDS_NS, kinds=CORE_KINDS)
    check(f"configmap/{RELEASE}-dashboard" in left and f"service/{RELEASE}-metrics" not in left,
          f"monitoringCRDs auto without the CRDs installed {left}")
    log(f"ok: without the CRDs, monitoringCRDs=auto: installed without them ({', '.join(left)});"
        " the notes say SKIPPED")
    helm.run("uninstall", RELEASE, "-n", NO_CRDS_NS, "--wait")


def step_crds(cp, helm, args, state):
    files = [args.crds / f"monitoring.coreos.com_{c}.yaml" for c in CRDS]
    for f in files:
        check(f.is_file(), f"{f}: missing; tests/realkube/build.sh copies the CRDs there")
    version = yaml.safe_load(files[0].read_text())["metadata"]["annotations"][
        "operator.prometheus.io/version"]
    argv = ["apply", "--server-side", "--force-conflicts"]
    for f in files:
        argv += ["-f", f]
    r = cp.kubectl(*argv)
    log(f"ok: prometheus-operator {version} CRDs applied: {' '.join(r.stdout.split())}")
    cp.kubectl("wait", "--for=condition=Established", "--timeout=60s",
               *[f"crd/{c}.monitoring.coreos.com" for c in CRDS])
    kinds = cp.kubectl("api-resources", "--api-group=monitoring.coreos.com", "-o", "name").stdout
    for c in CRDS:
        check(f"{c}.monitoring.coreos.com" in kinds.split(), f"api-resources: {kinds}")
    log(f"ok: Established, served: {', '.join(kinds.split())}")
    state["crds"] = True


def rendered(helm, namespace):
    return test_monitoring.render(helm, test_monitoring.ALL_ON, namespace=namespace)


# (what, kind, mutation of the rendered object, a fragment of the server's message)
REFUSED = (
    ("a relabeling action the CRD does not know", "PodMonitor",
     lambda o: o["spec"]["podMetricsEndpoints"][0]["relabelings"][0].update(action="Rename"),
     'Unsupported value: "Rename"'),
    ("a `for` that is no duration", "PrometheusRule",
     lambda o: o["spec"]["groups"][0]["rules"][0].update({"for": "2 minutes"}),
     "spec.groups[0].rules[0].for: Invalid value"),
    ("a ServiceMonitor without endpoints", "ServiceMonitor",
     lambda o: o["spec"].pop("endpoints"),
     "spec.endpoints: Required value"),
)


def step_schema(cp, helm, args, state):
    check(state.get("crds"), "needs crds")
    cp.kubectl("create", "namespace", NS)
    objs = rendered(helm, NS)
    docs = [o for (k, _), o in objs.items() if k in MONITORING_KINDS]
    r = cp.kubectl("apply", "--dry-run=server", "-n", NS, "-f", "-",
                   input=yaml.safe_dump_all(docs, sort_keys=False), ok=False)
    check(r.returncode == 0 and r.stdout.count("(server dry run)") == len(docs),
          f"the server must accept the rendered objects: {out_of(r)}")
    accepted = [ln.split(" ")[0] for ln in r.stdout.splitlines() if ln]
    log(f"ok: server dry run accepts {', '.join(accepted)}")
    for what, kind, mutate, want in REFUSED:
        obj = json.loads(json.dumps(next(o for o in docs if o["kind"] == kind)))
        mutate(obj)
        r = cp.kubectl("apply", "--dry-run=server", "-n", NS, "-f", "-",
                       input=yaml.safe_dump(obj, sort_keys=False), ok=False)
        check(r.returncode != 0 and want in r.stderr,
              f"the CRD schema must refuse {what} ({want!r}): rc {r.returncode}: {out_of(r)}")
        log(f"ok: refused, {what}: {r.stderr.strip().splitlines()[0][:220]}")


def step_install(cp, helm, args, state):
    check(state.get("crds"), "needs crds")
    if not cp.exists_namespace(NS):
        cp.kubectl("create", "namespace", NS)
    r = helm.run("install", RELEASE, CHART, "-n", NS, *helm.value_args(test_monitoring.ALL_ON))
    check("STATUS: deployed" in r.stdout, f"helm install: {r.stdout}")
    state["installed"] = True
    for line in (f"get podmonitor,servicemonitor,prometheusrule -l {INSTANCE}",
                 f"get configmap {RELEASE}-dashboard"):
        check(line in r.stdout, f"NOTES must show `{line}`: {r.stdout}")
    objs = rendered(helm, NS)
    want = sorted(short(k, n) for (k, n), o in objs.items() if not is_hook(o))
    got = names(cp, NS)
    check(got == want, f"objects of the release: {got}, rendered {want}")
    log(f"ok: helm install with the monitors, alerts and dashboard on: {', '.join(got)}")
    r = cp.kubectl("get", "podmonitor,servicemonitor,prometheusrule,configmap", "-n", NS,
                   "-l", INSTANCE)
    log("ok: kubectl get podmonitor,servicemonitor,prometheusrule,configmap:\n" + r.stdout.rstrip())
    for kind, plural in (("PodMonitor", "podmonitor"), ("ServiceMonitor", "servicemonitor"),
                         ("PrometheusRule", "prometheusrule")):
        obj = json.loads(cp.kubectl("get", plural, RELEASE, "-n", NS, "-o", "json").stdout)
        check(obj["spec"] == objs[(kind, RELEASE)]["spec"],
              f"{kind} on the server differs from the rendering (pruned or defaulted):\n"
              f"{json.dumps(obj['spec'])}\nrendered:\n{json.dumps(objs[(kind, RELEASE)]['spec'])}")
    log("ok: PodMonitor, ServiceMonitor and PrometheusRule on the server are the rendered specs "
        "(nothing pruned by the CRD schemas)")
    svc = json.loads(cp.kubectl("get", "service", f"{RELEASE}-metrics", "-n", NS,
                                "-o", "json").stdout)
    check(svc["spec"]["clusterIP"] == "None" and svc["spec"]["ports"][0]["name"] == "metrics",
          f"metrics Service {svc['spec']}")
    cm = json.loads(cp.kubectl("get", "configmap", f"{RELEASE}-dashboard", "-n", NS,
                               "-o", "json").stdout)
    check(cm["metadata"]["labels"].get("grafana_dashboard") == "1",
          f"dashboard ConfigMap labels {cm['metadata']['labels']}")
    check(json.loads(cm["data"]["leasehold.json"])
          == json.loads(test_monitoring.DASHBOARD.read_text()), "dashboard JSON on the server")
    found = cp.kubectl("get", "configmap", "-A", "-l", "grafana_dashboard=1", "-o", "name").stdout
    check(f"configmap/{RELEASE}-dashboard" in found.split(), f"grafana_dashboard=1: {found}")
    log(f"ok: headless Service {RELEASE}-metrics; ConfigMap {RELEASE}-dashboard found by "
        f"grafana_dashboard=1 (what Grafana's sidecar asks), its JSON the chart's dashboard")


def step_uninstall(cp, helm, args, state):
    check(state.get("installed"), "needs install")
    before = names(cp, NS)
    # --no-hooks: no kubelet would run the pre-delete hook's Job (deploy.helm_real plays it).
    helm.run("uninstall", RELEASE, "-n", NS, "--no-hooks")
    left = names(cp, NS)
    # The Lease stays (helm.sh/resource-policy: keep: its fencing token must never go back).
    check(left == [f"lease.coordination.k8s.io/{RELEASE}"], f"left after helm uninstall: {left}")
    log(f"ok: helm uninstall removed {len(before) - 1} objects, the monitoring ones included "
        "(the Lease kept)")


STEPS = {"no-crds": step_no_crds, "crds": step_crds, "schema": step_schema,
         "install": step_install, "uninstall": step_uninstall}


class Cluster(ControlPlane):
    def exists_namespace(self, ns):
        return self.kubectl("get", "namespace", ns, ok=False).returncode == 0


def main():
    ap = real_parser()
    ap.add_argument("--crds", type=Path, default=DEFAULT_CRDS,
                    help="the monitoring.coreos.com CRD files (tests/realkube/build.sh)")
    args = parse_names(ap, STEPS, "step")

    def setup(cp, helm, server):
        state = {}
        return lambda name: STEPS[name](cp, helm, args, state)
    return run_real(args, args.steps or list(STEPS), setup, cluster=Cluster)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
