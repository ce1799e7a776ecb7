#!/usr/bin/env python3
"""Migration by rolling update from client-go's elector to leasehold, on a single-node cluster
with a real kubelet (tests/realkube/start.sh up DIR --node), the way docs/migration.md tells
users to do it:

    test_node_migration.py --build-dir DIR --tools DIR [--helm BIN]

Before: a Deployment of 3 pods whose app runs client-go's elector inside (bench/clientgo's
program: LeaseLock, ReleaseOnCancel, /leader on 127.0.0.1:4040; image leasehold-clientgo:node,
debian:bookworm-slim with it). After: the same Deployment, updated with `kubectl apply` to
manifests/deployment.yaml's pod (an app that asks the sidecar, leasehold as a native sidecar,
its image released by scripts/release.sh to a local registry and pulled from there by the
node's containerd: leasehold_testing.node_release) with docs/migration.md's --leader-elect-*
flags on the same Lease, under manifests/rbac.yaml.
The rolling update (maxSurge 1, maxUnavailable 0) is paused once its first leasehold pod
exists, and two takeovers across the two kinds happen on expiry, not on release, which is where
the timings decide safety:
  client-go leads  every client-go pod is cut from the API server (iptables in its network
                   namespace): the client-go leader stops leading once its renewals have failed
                   for R (from P after its last one) and its release attempt (ReleaseOnCancel)
                   has timed out; the leasehold pod takes over once the Lease could expire (no
                   sooner than D - P after the cut);
  leasehold leads  the leasehold pod is cut: it stops claiming R after its last renewal; a
                   client-go pod takes over on its own clock, which may have started up to a
                   second before that renewal (client-go compares records at whole-second
                   renewTime);
then the rollout resumes to its end, where every handover is a release (SIGTERM: ReleaseOnCancel
on one side, leasehold's release on the other).

Throughout, the samplers of the other node tests run in every pod's network namespace
(leasehold_testing.pod_watch: no two claims overlap, tokens only go up, a fenced writer per
pod). A client-go answer carries no validUntil: its claim reaches the send of each request it
answered leader=true. Tokens go up by exactly 1 per holder change across both kinds (both
write leaseTransitions + 1 on a new holder). The timings, D=5s R=2s P=500ms, keep
docs/migration.md's rule for a mixed rollout, D > P + R + T (T, client-go's request timeout, is
1 s here) with 1.5 s to spare and D >= R + 1 s; P under a second is the case where client-go's
whole-second comparison matters.
Needs root, docker, docker-registry, the release tools (tests/release/tools/build.sh), Go
(bench/clientgo/build.sh) and the node's binaries (tests/realkube/build.sh --node)."""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml
from leasehold_testing.checks import Failure, check, log, wait_for
from leasehold_testing.clientgo_app import (CLIENTGO_IMAGE, build_clientgo_image, clientgo_pod,
                                            deployment, duration)
from leasehold_testing.control_plane import ControlPlane
from leasehold_testing.helm import Helm
from leasehold_testing.node_cluster import SIDECAR, NodeCluster
from leasehold_testing.node_release import NodeRelease, add_arguments
from leasehold_testing.oci_registry import OciRegistryError
from leasehold_testing.paths import ROOT
from leasehold_testing.pod_watch import PodWatch

NAMESPACE = "node-migration"
DEPLOYMENT = "my-controller"
LEASE = "leasehold"  # manifests/rbac.yaml's resourceNames
REPLICAS = 3
# Seconds. docs/migration.md: a mixed rollout needs D > P + R + T (T: client-go's request
# timeout, max(1 s, R/2) = 1 s here) and D >= R + 1 s.
D, R, P = 5, 2, 0.5
SLACK = 5.0  # as test_node_chart.py: a loaded 2-core machine's part of a bound
# Long enough for the test to pause the rollout after the first new pod appears and before the
# Deployment controller takes an old pod away.
MIN_READY_SECONDS = 10


def before_pod():
    """The app with client-go's elector inside, as docs/migration.md's "Before"."""
    return clientgo_pod(LEASE, D, R, P)


def rollout_deployment(pod_spec):
    """The Deployment both versions share: a rolling update slow enough to pause."""
    return deployment(DEPLOYMENT, NAMESPACE, pod_spec, REPLICAS,
                      minReadySeconds=MIN_READY_SECONDS,
                      strategy={"type": "RollingUpdate",
                                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})


def after_pod(sidecar_image):
    """manifests/deployment.yaml's pod (leasehold as a native sidecar, an app that asks it) with
    SIDECAR_IMAGE (IfNotPresent, as the manifests have it) and docs/migration.md's "After"
    flags in place of --lease-name and the timings: the election's flags move from the app to
    the sidecar as they are."""
    doc = yaml.safe_load((ROOT / "manifests/deployment.yaml").read_text())
    spec = doc["spec"]["template"]["spec"]
    sidecar = next(c for c in spec["initContainers"] if c["name"] == SIDECAR)
    check(sidecar["imagePullPolicy"] == "IfNotPresent",
          f"manifests/deployment.yaml's sidecar pullPolicy is {sidecar['imagePullPolicy']}")
    sidecar["image"] = sidecar_image
    moved = ("--lease-name=", "--lease-duration=", "--renew-deadline=", "--retry-period=")
    kept = [a for a in sidecar["args"] if not a.startswith(moved)]
    check(len(kept) == len(sidecar["args"]) - len(moved),
          f"manifests/deployment.yaml's sidecar args changed: {sidecar['args']}")
    sidecar["args"] = [
        "--leader-elect", f"--leader-elect-resource-name={LEASE}",
        f"--leader-elect-resource-namespace={NAMESPACE}",
        f"--leader-elect-lease-duration={duration(D)}",
        f"--leader-elect-renew-deadline={duration(R)}",
        f"--leader-elect-retry-period={duration(P)}", *kept]
    spec["containers"][0]["imagePullPolicy"] = "Never"
    return spec


def has_sidecar(pod):
    return any(c["name"] == SIDECAR for c in pod["spec"].get("initContainers", []))


class Migration:
    def __init__(self, cluster, watch):
        self.cluster, self.watch = cluster, watch

    def kind(self, name):
        """"leasehold" for a sampled pod with leasehold's sidecar, else "client-go"."""
        return "leasehold" if has_sidecar(self.watch.pods[name]) else "client-go"

    def leader(self, kind=None):
        """(PodSidecar, answer) of the pod the Lease names while it says leader=true (of KIND
        only, when given); else None."""
        lease = json.loads(self.cluster.kubectl("get", "lease", LEASE, "-o", "json", ok=False)
                           or "{}")
        found = self.watch.leader(lease.get("spec", {}).get("holderIdentity"))
        return found if found and (kind is None or self.kind(found[0].name) == kind) else None

    def pods_of(self, kind):
        want = kind == "leasehold"
        return [p for p in self.cluster.pods() if has_sidecar(p) == want]

    def sampled(self, pods):
        return all(p["metadata"]["name"] in self.watch.sidecars for p in pods)

    def takeover(self, what, cut, leader_kind, new_kind, earliest, bound):
        """Cuts the pods CUT from the API server while the leader is of LEADER_KIND; waits for
        a leader of NEW_KIND, no sooner than EARLIEST and within BOUND seconds of the cut;
        heals; returns (seconds from the cut, the old term's end to the new one's start)."""
        old, answer = wait_for(f"a {leader_kind} leader", lambda: self.leader(leader_kind),
                               60, interval=0.2)
        t0 = time.time()
        with self.cluster.cut_from_api_server([self.watch.sidecars[n] for n in cut]):
            took, first = wait_for(
                f"a {new_kind} pod to lead after {what}",
                lambda: self.watch.first_true(t0, answer["fencingToken"], but=old.identity),
                bound, interval=0.1)
            check(self.kind(next(s.name for s in self.watch.sidecars.values()
                                 if s.identity == first["identity"])) == new_kind,
                  f"{first['identity']} led after {what}; expected a {new_kind} pod")
            check(took >= earliest, f"a new term {took:.2f}s after {what}: before the Lease "
                                    f"(D = {D}s, last renewed at most P = {P}s before) could "
                                    "expire")
            wait_for(f"{old.name} to stop saying leader=true while cut",
                     lambda: self.says_false(old, time.time() - 0.3), R + P + SLACK,
                     interval=0.1)
        wait_for(f"the cut pods to follow {first['identity']} again",
                 lambda: self.leader() and all(self.follows(n, first["identity"]) for n in cut),
                 D + R + SLACK * 4, interval=0.2)
        terms = self.watch.observer.terms()
        ended = max(t[1] for t in terms if t[3] == answer["fencingToken"])
        began = min(t[0] for t in terms if t[3] == first["fencingToken"])
        log(f"{what}: {old.name} ({leader_kind}, token {answer['fencingToken']}) -> "
            f"{first['identity']} ({new_kind}, token {first['fencingToken']}) {took:.2f}s after "
            f"the cut; {began - ended:.2f}s between the old claim's end and the new term")
        return took, began - ended

    def says_false(self, sidecar, since):
        answer = self.watch.last_answer(sidecar, since)
        return answer is not None and not answer.get("leader")

    def follows(self, name, holder):
        answer = self.watch.last_answer(self.watch.sidecars[name])
        return answer is not None and answer.get("holder") == holder


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    ap.add_argument("--helm", type=Path,
                    help="the helm binary release.sh runs (default: build/realkube/bin/helm)")
    args = ap.parse_args()
    build_clientgo_image()
    with tempfile.TemporaryDirectory() as tmp, \
            NodeRelease(Path(tmp) / "release", args.build_dir, args.tools,
                        Helm(args.helm).path) as rel:
        t_up = time.monotonic()
        with ControlPlane(node=True) as cp:
            log(f"single-node cluster up in {time.monotonic() - t_up:.1f}s")
            return migrate(cp, tmp, rel)


def migrate(cp, tmp, rel):
    cluster = NodeCluster(cp, NAMESPACE)
    rel.trusted_by(cluster)
    after = after_pod(rel.image_ref())
    cluster.import_images(CLIENTGO_IMAGE, after["containers"][0]["image"])
    cp.kubectl("create", "namespace", NAMESPACE)
    cp.kubectl("apply", "-f", "-", input=(ROOT / "manifests/rbac.yaml").read_text().replace(
        "namespace: default", f"namespace: {NAMESPACE}"))
    cluster.kubectl("apply", "-f", "-", input=json.dumps(rollout_deployment(before_pod())))
    cluster.kubectl("rollout", "status", f"deployment/{DEPLOYMENT}", "--timeout=180s",
                    timeout=200)
    with PodWatch(cluster, Path(tmp) / "fence.db") as watch:
        m = Migration(cluster, watch)
        old, answer = wait_for("a client-go leader that every pod follows",
                               lambda: m.leader("client-go"), 60, interval=0.2)
        log(f"before: {REPLICAS} pods with client-go's elector in the app; {old.name} "
            f"leads (token {answer['fencingToken']})")

        cluster.kubectl("apply", "-f", "-", input=json.dumps(rollout_deployment(after)))
        new = wait_for("the rolling update's first leasehold pod",
                       lambda: m.pods_of("leasehold"), 60, interval=0.1)
        cluster.kubectl("rollout", "pause", f"deployment/{DEPLOYMENT}")

        def mixed():
            pods = cluster.pods()
            return (cluster.all_ready(REPLICAS + 1) and m.sampled(pods)
                    and [m.kind(p["metadata"]["name"]) for p in pods])
        kinds = wait_for(f"{REPLICAS} client-go pods and 1 leasehold pod Ready, paused",
                         mixed, 120, interval=0.5)
        check(sorted(kinds) == ["client-go"] * REPLICAS + ["leasehold"],
              f"the paused rollout holds {kinds}")
        lh = new[0]["metadata"]["name"]
        cg = [p["metadata"]["name"] for p in m.pods_of("client-go")]
        log(f"mixed: rollout paused with {', '.join(cg)} (client-go) and {lh} (leasehold)")

        # client-go's leader: its renewals fail for R from P after its last one, then
        # its release attempt times out (T); the Lease expires D after that last renewal
        # for the leasehold follower.
        m.takeover("every client-go pod lost the API server", cg, "client-go",
                   "leasehold", D - P, D + P + SLACK)
        # leasehold's leader: stops claiming R after its last renewal; client-go followers
        # judge expiry on records compared at whole-second renewTime (up to 1 s early) and
        # try every P to 2.2 P (client-go's jitter).
        m.takeover("the leasehold pod lost the API server", [lh], "leasehold",
                   "client-go", D - P - 1, D + 2.2 * P + SLACK)

        t_roll = time.time()
        cluster.kubectl("rollout", "resume", f"deployment/{DEPLOYMENT}")
        cluster.kubectl("rollout", "status", f"deployment/{DEPLOYMENT}", "--timeout=300s",
                        timeout=320)

        def migrated():
            pods = cluster.pods()
            return (len(pods) == REPLICAS and all(has_sidecar(p) for p in pods)
                    and cluster.all_ready(REPLICAS))
        wait_for(f"{REPLICAS} leasehold pods Ready, no client-go pod left", migrated, 120,
                 interval=0.5)
        leader, final = wait_for("one leader that every pod, its status file and the "
                                 "Lease agree on", lambda: cluster.one_leader(LEASE), 60,
                                 interval=0.5)
        began, leaderless = watch.leadership(t_roll, time.time())
        log(f"rollout: resumed to the end in {time.time() - t_roll:.1f}s: {len(began)} new "
            f"terms (tokens {[t[3] for t in began]}), {leaderless:.2f}s with no leader; "
            f"{leader['metadata']['name']} leads (token {final['fencingToken']})")
        check(leaderless < D - P, f"{leaderless:.1f}s without a leader in the rollout's "
                                  "releases: a handover waited for an expiry")
    terms, accepted, rejected = watch.check()
    tokens = [t[3] for t in terms]
    check(all(b == a + 1 for a, b in zip(tokens, tokens[1:])),
          f"the tokens did not go up by 1 per holder change: {tokens}")
    check(tokens[-1] == final["fencingToken"],
          f"the last term's token {tokens[-1]}, the Lease's {final['fencingToken']}")
    kinds = ", ".join(f"{m.kind(t[2].rsplit('#', 1)[0])} {t[3]}" for t in terms)
    log(f"the samplers: {len(terms)} terms ({kinds}), no two claims overlap, tokens +1 per "
        f"holder change; the fenced store accepted {accepted} writes and rejected "
        f"{rejected}, never a lower token")
    log("PASS")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Failure, OciRegistryError) as e:  # the release's or the registry's
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
