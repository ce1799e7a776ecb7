#!/usr/bin/env python3
"""The RBAC of manifests/ (and of the chart) against the test API server, enforced for real.

    test_rbac.py --sidecar BIN --apiserver BIN [SCENARIO...]

The ServiceAccount, Role and RoleBinding of manifests/rbac.yaml are loaded into the test API
server (--rbac), and its Lease is made by the admin (kubectl create), as `kubectl apply` makes
it: the Role grants no create on leases. Three sidecars run with exactly the flags of manifests/deployment.yaml (the
addresses, status-file path and timings scaled for a test) and authenticate as that
ServiceAccount, system:serviceaccount:default:leasehold, which is NOT an admin: every request
is decided by the Role.

manifests          election, a graceful handover (SIGTERM: release) and a crash takeover
                   (SIGKILL) with the manifests' Role: not a single 403 (each sidecar's
                   leasehold_api_requests_total{code="403"} and its log), and the Lease and
                   the server's counters show the rules were exercised (get, update, watch;
                   the manifests' empty Lease taken over, no create).
pod_label          the chart rendered by helm (leasehold_testing.helm: $LEASEHOLD_HELM, else
                   build/realkube/bin/helm) with podLabel set (it adds get/patch on pods) and
                   the sidecars run with --pod-label: no 403, and the leader's pod gets the label.
missing_rule       the same Role with one rule or verb removed (watch; events) must produce a
                   403 for exactly that: the check can fail. Without the Lease the create is
                   refused (the Role has none), nobody leads, and the log says the Lease does
                   not exist and may not be created.
"""
import copy
import json
import re
import signal
import sys
import time

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from leasehold_testing import (D, P, TIMINGS, Env, Sidecar, check, log,  # noqa: E402
                               run_scenarios, the_leader, wait_for)
from leasehold_testing.helm import Helm  # noqa: E402
from leasehold_testing.paths import ROOT  # noqa: E402

SA = "leasehold"
NAMESPACE = "default"
LEASE = "leasehold"
POD_LABEL = "leasehold.io/leader"


def manifest_objects():
    docs = []
    for path in sorted((ROOT / "manifests").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def rbac_docs(docs):
    return [d for d in docs if d["kind"] in ("ServiceAccount", "Role", "RoleBinding")]


def make_lease(env, docs):
    """The docs' Lease, made by the admin (as `kubectl apply -f manifests/rbac.yaml` makes it)."""
    (lease,) = [d for d in docs if d["kind"] == "Lease"]
    path = env.dir / "lease.yaml"
    path.write_text(yaml.safe_dump(lease, sort_keys=False))
    env.kubectl("create", "--validate=false", "-f", str(path))  # the test server has no OpenAPI


def sidecar_args(docs):
    dep = next(d for d in docs if d["kind"] == "Deployment")
    spec = dep["spec"]["template"]["spec"]
    c = next(c for c in spec.get("initContainers", []) + spec["containers"]
             if c["name"] == "leasehold")
    return c["args"]


class RbacEnv(Env):
    """An Env whose sidecars are the non-admin ServiceAccount bound by the given RBAC docs."""

    def __init__(self, sidecar_bin, apiserver_bin, docs, pods=()):
        super().__init__(sidecar_bin, apiserver_bin)
        self.restricted = {SA}
        path = self.dir / "rbac.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        self.server_args = ["--rbac", str(path)] + [f"--pod={NAMESPACE}/{p}=127.0.0.1"
                                                    for p in pods]


class ManifestSidecar(Sidecar):
    """A sidecar with the Deployment's flags; only addresses, paths and timings adapted."""

    def __init__(self, env, name, args):
        super().__init__(env, name, user=SA, lease=LEASE)
        scaled = dict(a[2:].split("=", 1) for a in TIMINGS_EQ)
        out = []
        for a in args:
            key, _, value = a[2:].partition("=")
            if key in scaled:
                value = scaled[key]
            elif key == "http-address":
                value = f"127.0.0.1:{self.port}"
            elif key == "probe-address":
                value = f"127.0.0.1:{self.probe_port}"
            elif key == "status-file":
                value = str(env.dir / f"{name}.status.json")
            out.append(f"--{key}={value}")
        self.args = [env.sidecar_bin, *out, "--identity", name,
                     "--kubeconfig", str(self.kubeconfig)]
        # What the Downward API gives the container (manifests: POD_NAME/NAMESPACE/IP).
        self.env_vars.update(POD_NAME=name, POD_NAMESPACE=NAMESPACE, POD_IP="127.0.0.1")


TIMINGS_EQ = [f"{TIMINGS[i]}={TIMINGS[i + 1]}" for i in range(0, len(TIMINGS), 2)]


def forbidden(sidecars, cached):
    """{sidecar: [metric lines with code 403]} plus log lines that mention 403/forbidden."""
    found = {}
    for s in sidecars:
        text = s.metrics() if s.alive() else cached.get(s.name, "")
        cached[s.name] = text or cached.get(s.name, "")
        lines = [ln for ln in cached[s.name].splitlines()
                 if ln.startswith("leasehold_api_requests_total") and 'code="403"' in ln
                 and not ln.endswith(" 0")]
        lines += [ln for ln in s.logs().splitlines()
                  if re.search(r"\b403\b|[Ff]orbidden", ln)]
        if lines:
            found[s.name] = lines
    return found


def start(env, docs, n=3, extra=()):
    args = sidecar_args(docs) + list(extra)
    sidecars = [ManifestSidecar(env, f"replica-{i}", args) for i in range(n)]
    env.sidecars = sidecars
    for s in sidecars:
        s.start()
    return sidecars


def scrape_all(sidecars, cached):
    for s in sidecars:
        if s.alive():
            cached[s.name] = s.metrics() or cached.get(s.name, "")


def run_election(env, sidecars, cached):
    leader = the_leader(sidecars, timeout=D + P + 3)
    log(f"leader {leader.name} (token {leader.status()['fencingToken']})")
    time.sleep(1.0)  # followers watch, the leader renews
    scrape_all(sidecars, cached)
    leader.signal(signal.SIGTERM)  # graceful: release (update)
    check(leader.wait() == 0, "SIGTERM exits 0")
    rest = [s for s in sidecars if s is not leader]
    second = the_leader(rest, timeout=P + 3)
    log(f"after SIGTERM: {second.name} (token {second.status()['fencingToken']})")
    time.sleep(0.5)
    scrape_all(sidecars, cached)
    second.signal(signal.SIGKILL)  # crash: the last one takes over after D
    second.wait()
    third = the_leader([s for s in rest if s is not second], timeout=D + P + 3)
    log(f"after SIGKILL: {third.name} (token {third.status()['fencingToken']})")
    time.sleep(0.5)
    scrape_all(sidecars, cached)
    return third


def manifests(env_args):
    docs = manifest_objects()
    with RbacEnv(*env_args, rbac_docs(docs)) as env:
        # Count every request of the ServiceAccount, from the first: resetting after start()
        # raced with the followers' first LIST/WATCH (a run without "watch:leases" failed).
        env.control("POST", "/counters/reset")
        make_lease(env, docs)
        sidecars = start(env, docs)
        cached = {}
        last = run_election(env, sidecars, cached)
        bad = forbidden(sidecars, cached)
        check(not bad, f"403 with the manifests' Role: {json.dumps(bad, indent=1)}")
        counters = env.control("GET", "/counters?by=resource")
        mine = counters.get(f"system:serviceaccount:{NAMESPACE}:{SA}", {})
        log(f"requests by the ServiceAccount: {json.dumps(mine, sort_keys=True)}")
        for need in ("get:leases", "update:leases", "watch:leases"):
            check(mine.get(need, 0) > 0, f"the run did not exercise {need}: {mine}")
        lease = env.lease(LEASE)
        check(lease["spec"]["holderIdentity"] == last.name, f"holder: {lease['spec']}")
        check(lease["spec"].get("leaseTransitions", 0) >= 2, f"terms: {lease['spec']}")
        check(mine.get("create:leases", 0) == 0, f"the Lease was there: no create: {mine}")
        log(f"no 403 in {sum(1 for _ in sidecars)} sidecars' metrics and logs "
            f"(the empty Lease taken, renewed, released, taken over; token "
            f"{lease['spec']['leaseTransitions']})")


def pod_label(env_args):
    docs = [d for _, d in Helm().render({"podLabel": POD_LABEL})]
    rules = next(d for d in docs if d["kind"] == "Role")["rules"]
    check(any("pods" in r["resources"] for r in rules), "the chart must grant pods with podLabel")
    dep = next(d for d in docs if d["kind"] == "Deployment")
    check(f"--pod-label={POD_LABEL}" in sidecar_args([dep]), "the chart passes --pod-label")
    pods = [f"replica-{i}" for i in range(3)]
    with RbacEnv(*env_args, rbac_docs(docs), pods=pods) as env:
        make_lease(env, docs)
        sidecars = start(env, [dep])
        cached = {}
        leader = the_leader(sidecars, timeout=D + P + 3)

        def labelled():
            out = env.kubectl("get", "pods", "-n", NAMESPACE, "-l", f"{POD_LABEL}=true",
                              "-o", "jsonpath={.items[*].metadata.name}")
            return out.split() == [leader.name]
        wait_for(f"{POD_LABEL}=true on exactly the leader's pod", labelled, 5, interval=0.2)
        time.sleep(0.5)
        scrape_all(sidecars, cached)
        bad = forbidden(sidecars, cached)
        check(not bad, f"403 with the chart's podLabel Role: {json.dumps(bad, indent=1)}")
        counters = env.control("GET", "/counters?by=resource").get(
            f"system:serviceaccount:{NAMESPACE}:{SA}", {})
        check(counters.get("patch:pods", 0) > 0, f"no pod patch seen: {counters}")
        log(f"pod label on {leader.name}, no 403; requests: {json.dumps(counters, sort_keys=True)}")


def without(docs, what):
    docs = copy.deepcopy(docs)
    role = next(d for d in docs if d["kind"] == "Role")
    if what == "watch":
        for r in role["rules"]:
            if "resourceNames" in r:
                r["verbs"] = [v for v in r["verbs"] if v != "watch"]
    elif what == "events":
        role["rules"] = [r for r in role["rules"] if "events" not in r["resources"]]
    return docs


def missing_rule(env_args):
    docs = manifest_objects()
    # "the Lease": the manifests' Role as it is, but no Lease made: the create is refused.
    for what, verb in (("the Lease", "create"), ("watch", "watch"), ("events", "create")):
        with RbacEnv(*env_args, rbac_docs(without(docs, what))) as env:
            env.control("POST", "/counters/reset")  # before start(): count every request
            if what != "the Lease":
                make_lease(env, docs)
            sidecars = start(env, docs, n=2)
            cached = {}
            if what == "the Lease":
                time.sleep(1.5)  # nobody can create the Lease: nobody leads
                check(not any(s.leader() for s in sidecars), "nobody can lead without it")
                hints = [ln for s in sidecars for ln in s.logs().splitlines()
                         if "the Lease does not exist and this ServiceAccount may not create it"
                         in ln]
                check(hints, "the log must say the Lease is missing and may not be created: "
                             f"{sidecars[0].logs()[-1500:]}")
                # ... and so must /leader and the status file, where the app looks.
                for s in sidecars:
                    said = [s.status().get("problem", ""), json.loads(
                        (env.dir / f"{s.name}.status.json").read_text()).get("problem", "")]
                    check(all("403" in p and "may not create it" in p for p in said),
                          f"{s.name}: /leader and the status file must name the refusal: {said}")
            else:
                leader = the_leader(sidecars, timeout=D + P + 3)
                time.sleep(1.0)
                if what == "events":
                    leader.signal(signal.SIGTERM)  # "stopped leading" too
                    leader.wait()
                    time.sleep(0.5)
            scrape_all(sidecars, cached)
            counters = env.control("GET", "/counters?by=resource").get(
                f"system:serviceaccount:{NAMESPACE}:{SA}", {})
            if what == "events" and not any(k.endswith(":events") for k in counters):
                log("missing events rule: this sidecar build records no Events; not checked")
                continue
            bad = forbidden(sidecars, cached)
            check(bad, f"removing the {what} rule must produce a 403: none seen "
                       f"(requests {counters})")
            lines = [ln for v in bad.values() for ln in v]
            if verb:  # metrics say verb="create"; the log says verb":"create"
                marks = (f'verb":"{verb}"', f'verb="{verb}"', f"cannot {verb}")
                check(any(m in ln for ln in lines for m in marks),
                      f"expected a 403 on {verb}: {lines}")
            log(f"without {what}: 403 as expected: {lines[0][:160]}")


SCENARIOS = {"manifests": manifests, "pod_label": pod_label, "missing_rule": missing_rule}


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS, with_env=False))
