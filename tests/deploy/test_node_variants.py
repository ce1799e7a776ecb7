#!/usr/bin/env python3
"""The other ways users deploy leasehold, on a single-node cluster with a real kubelet
(tests/realkube/start.sh up DIR --node), each in its own namespace and judged from inside the
pods as an app sees them:

    test_node_variants.py --build-dir DIR --tools DIR [--helm BIN] [STEP...]
        STEP: manifests runmode shards inject inject_webhook (default: all)

manifests  `kubectl apply` of manifests/, as README says for another namespace (`sed` of
           `namespace: default`) with the image set to the released one, REGISTRY/leasehold:
           VERSION@DIGEST: every pod Ready, exactly one leader that every pod, its status file
           and the Lease agree on;
runmode    helm install oci://REGISTRY/charts/leasehold with runMode.enabled=true (`leasehold
           run` as the app container's PID 1, the binary copied in by an init container from
           the released image, runMode.image debian:bookworm-slim): every pod Ready, the
           command runs in exactly one pod, the one the Lease names; after `kubectl delete pod`
           of that pod, it runs in exactly one other pod;
shards     the same chart with shards=4: every pod Ready, every shard owned by exactly one pod
           (each pod's /shards from inside it), the pods' counts differ by at most one.
inject     the chart from the registry with injector.enabled and leases: [shop] (its own release
           and namespace, as README says), then a Deployment
           of the user's own (3 replicas, its own app container reading /leader, labelled
           leasehold.io/inject with leasehold.io/lease: shop) in a namespace that enforces Pod
           Security "restricted", and an unlabelled one: each shop pod has exactly one
           sidecar, first among its init containers, pulled by digest; the unlabelled pod none;
           one leader that every shop pod and the Lease agree on; after the leader pod's delete
           another leads with a higher token.
inject_webhook  the same with injector.mode=webhook: `leasehold inject` from the released image
           as the chart's Deployment of two (rollout complete), its Service called by the API
           server with the chart's CA, then every check of inject.
Leasehold's image and chart come from scripts/release.sh of this checkout to a local registry
(leasehold_testing.node_release, as deploy.node_chart), which the node's containerd pulls from;
only the app's and run mode's images are imported. Needs root, docker, docker-registry, the
release tools (tests/release/tools/build.sh) and the node's binaries (tests/realkube/build.sh
--node)."""
import json
import sys
import tempfile
import time
from pathlib import Path

from leasehold_testing import chart_suite, node_release
from leasehold_testing.checks import Failure, check, log, run_steps, wait_for
from leasehold_testing.control_plane import ControlPlane
from leasehold_testing.helm import Helm, HelmError, chart_value
from leasehold_testing.node_cluster import NodeCluster, run
from leasehold_testing.node_release import NodeRelease
from leasehold_testing.oci_registry import OciRegistryError
from leasehold_testing.paths import ROOT, product_version

RUN_IMAGE = chart_value("runMode.image")
STEPS = ("manifests", "runmode", "shards", "inject", "inject_webhook")


def manifests(cp, helm, rel):
    ns = "node-manifests"
    cluster = NodeCluster(cp, ns, helm)
    rel.trusted_by(cluster)
    cp.kubectl("create", "namespace", ns)
    text = "\n---\n".join((ROOT / f"manifests/{f}").read_text()
                          for f in ("rbac.yaml", "deployment.yaml"))
    # README's way to another namespace; the image as a user replaces it.
    text = text.replace("namespace: default", f"namespace: {ns}")
    image = f'image: "registry.example.com/leasehold:{product_version()}"'
    check(f"{image}\n          imagePullPolicy: IfNotPresent" in text,
          "manifests/deployment.yaml no longer names the image (IfNotPresent) this test replaces")
    text = text.replace(image, f'image: "{rel.image_ref()}"')
    cp.kubectl("apply", "-f", "-", input=text)
    cluster.kubectl("rollout", "status", "deployment/leasehold", "--timeout=180s", timeout=200)
    replicas = json.loads(cluster.kubectl("get", "deployment", "leasehold", "-o", "json"))[
        "spec"]["replicas"]
    pods = wait_for(f"{replicas} Ready pods", lambda: cluster.all_ready(replicas), 60,
                    interval=0.5)
    rel.check_pulled(cluster, pods)
    leader, answer = wait_for("one leader that every pod and the Lease agree on",
                              lambda: cluster.one_leader("leasehold"), 60, interval=0.5)
    log(f"manifests: kubectl apply in {ns}: {len(pods)} pods Ready; "
        f"{leader['metadata']['name']} leads (token {answer['fencingToken']}) as every pod's "
        f"/leader, status file and the Lease say")
    cp.kubectl("delete", "namespace", ns, "--wait=false")


def runners(cluster):
    """The pods in which the run-mode command runs: a process whose command line is the
    chart's runMode.command (leasehold's own names it after `--`, so argv[0] tells them
    apart), seen from inside the pod's app container."""
    command = " ".join(chart_value("runMode.command"))
    names = []
    for pod in cluster.pods():
        name = pod["metadata"]["name"]
        out = cluster.kubectl("exec", name, "-c", "app", "--", "sh", "-c",
                              "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <$f; echo; done",
                              ok=False)
        if out is None:
            return None  # a pod that cannot answer yet
        if any(line.strip() == command for line in out.splitlines()):
            names.append(name)
    return names


def holder_pod(cluster, lease):
    holder = json.loads(cluster.kubectl("get", "lease", lease, "-o", "json"))["spec"].get(
        "holderIdentity") or ""
    return holder.rsplit("_", 1)[0]


def runmode(cp, helm, rel):
    ns, release = "node-runmode", "run"
    cluster = NodeCluster(cp, ns, helm)
    pods = cluster.install_released_chart(release, rel.registry, rel.published().chart_version,
                                          "--set", "runMode.enabled=true")
    rel.check_pulled(cluster, pods, container="leasehold-copy")

    def one_runner(but=None):
        names = runners(cluster)
        if names is None or len(names) != 1 or names[0] == but:
            return None
        return names[0] if holder_pod(cluster, release) == names[0] else None
    first = wait_for("the command running in exactly one pod, the Lease's holder", one_runner,
                     60, interval=0.5)
    t0 = time.monotonic()
    cluster.kubectl("delete", "pod", first, "--wait=false")
    second = wait_for("the command running in exactly one other pod after the delete",
                      lambda: one_runner(but=first), 60, interval=0.5)
    log(f"runmode: helm install: {len(pods)} pods Ready; the command ran in {first} only, "
        f"the Lease's holder; after its delete in {second} only "
        f"({time.monotonic() - t0:.1f}s later)")
    cluster.helm("uninstall", release, "--wait", "--timeout", "120s")


def shards(cp, helm, rel):
    ns, release, n = "node-shards", "sharded", 4
    cluster = NodeCluster(cp, ns, helm)
    pods = cluster.install_released_chart(release, rel.registry, rel.published().chart_version,
                                          "--set", f"shards={n}")
    rel.check_pulled(cluster, pods)

    def balanced():
        owned = {}
        for pod in cluster.pods():
            out = cluster.kubectl("exec", pod["metadata"]["name"], "-c", "app", "--", "wget",
                                  "-qO-", "http://127.0.0.1:4040/shards", ok=False)
            if not out:
                return None
            owned[pod["metadata"]["name"]] = sorted(o["shard"] for o in json.loads(out)["owned"])
        every = sorted(s for v in owned.values() for s in v)
        counts = [len(v) for v in owned.values()]
        return every == list(range(n)) and max(counts) - min(counts) <= 1 and owned
    owned = wait_for(f"each of the {n} shards owned by exactly one pod, balanced", balanced, 60,
                     interval=0.5)
    log(f"shards: helm install shards={n}: {len(pods)} pods Ready; owned "
        f"{', '.join(f'{k}: {v}' for k, v in owned.items())}")
    cluster.helm("uninstall", release, "--wait", "--timeout", "120s")


# The user's own workload for `inject`: not the chart's example (its own names, its own app
# that reads /leader), in a namespace that enforces Pod Security "restricted".
SHOP_APP = ["/bin/sh", "-c", "trap 'exit 0' TERM; while true; do wget -qO- "
            "http://127.0.0.1:4040/leader || echo 'no sidecar'; echo; sleep 5 & wait $!; done"]
RESTRICTED = {"allowPrivilegeEscalation": False, "runAsNonRoot": True, "runAsUser": 65532,
              "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


def shop_deployment(name, replicas, inject):
    meta = {"labels": {"app": name}}
    if inject:
        meta["labels"]["leasehold.io/inject"] = "true"
        meta["annotations"] = {"leasehold.io/lease": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": meta, "spec": {
                         "serviceAccountName": name, "terminationGracePeriodSeconds": 10,
                         "containers": [{"name": "web", "image": chart_value("example.app.image"),
                                         "command": SHOP_APP, "securityContext": RESTRICTED}]}}}}


def sidecar_names(pod):
    spec = pod["spec"]
    return [c["name"] for c in spec.get("initContainers", []) + spec["containers"]
            if c["name"] == "leasehold"]


def inject(cp, helm, rel, mode="policy"):
    ns, n = f"node-inject-{mode}", 3
    published = rel.published()
    cluster = NodeCluster(cp, ns, helm)
    cp.kubectl("create", "namespace", ns)
    cp.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
    for name in ("shop", "plain"):
        cluster.kubectl("create", "serviceaccount", name)
    # The injector, once for the cluster, in a namespace of its own, with the grants of the
    # Lease "shop" for the ServiceAccount "shop" (README "Add leader election to your
    # Deployment", word for word; injector.mode=webhook as its webhook example).
    injector = NodeCluster(cp, "leasehold", helm)
    injector.install_released_chart(
        "leasehold", rel.registry, published.chart_version, "--set", "injector.enabled=true",
        "--set", f"injector.mode={mode}",
        "--set", "example.enabled=false", "--set", "tests.enabled=false", "--set-json",
        "leases=" + json.dumps([{"name": "shop", "serviceAccount": "shop", "namespace": ns}]),
        pods=False)
    if mode == "webhook":
        # `leasehold inject` from the released image, two replicas behind the Service the API
        # server calls (its ClusterIP, through kube-proxy's rules), with the chart's CA.
        injector.kubectl("rollout", "status", "deployment/leasehold-injector", "--timeout=180s",
                         timeout=200)
    # An admission policy takes effect once the API server has loaded it, a moment after helm
    # returns: pods created before that are admitted without the sidecar (README says to wait
    # for a dry run to show it, as here).
    probe = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "probe", "labels": {"leasehold.io/inject": "true"},
                          "annotations": {"leasehold.io/lease": "shop"}},
             "spec": {"serviceAccountName": "shop", "containers": [{
                 "name": "web", "image": chart_value("example.app.image"),
                 "securityContext": RESTRICTED}]}}

    def injecting():
        out = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                              input=json.dumps(probe), ok=False)
        return out and sidecar_names(json.loads(out)) == ["leasehold"]
    t0 = time.monotonic()
    wait_for("the injector in effect (a dry run gets the sidecar)", injecting, 60, interval=0.5)
    log(f"inject ({mode}): the injector in effect {time.monotonic() - t0:.1f}s after it was "
        "installed")
    cluster.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "List",
         "items": [shop_deployment("shop", n, True), shop_deployment("plain", 1, False)]}))
    for name in ("shop", "plain"):
        cluster.kubectl("rollout", "status", f"deployment/{name}", "--timeout=180s", timeout=200)
    shop = wait_for(f"{n} Ready shop pods",
                    lambda: (lambda p: len(p) == n and all(cluster.ready(x) for x in p) and p)(
                        cluster.pods("app=shop")), 60, interval=0.5)
    for pod in shop:
        check(sidecar_names(pod) == ["leasehold"]
              and pod["spec"]["initContainers"][0]["name"] == "leasehold",
              f"{pod['metadata']['name']}: want exactly one sidecar, first: {sidecar_names(pod)}")
    rel.check_pulled(cluster, shop)
    (plain,) = cluster.pods("app=plain")
    check(not sidecar_names(plain), f"the unlabelled pod got {sidecar_names(plain)}")
    leader, answer = wait_for("one shop leader that every shop pod and the Lease agree on",
                              lambda: cluster.one_leader("shop", selector="app=shop",
                                                         container="web"), 60, interval=0.5)
    first = leader["metadata"]["name"]
    t0 = time.monotonic()
    cluster.kubectl("delete", "pod", first, "--wait=false")
    leader, after = wait_for("another shop leader after the leader pod's delete",
                             lambda: cluster.one_leader("shop", but=first, selector="app=shop",
                                                        container="web"), 60, interval=0.5)
    check(after["fencingToken"] > answer["fencingToken"],
          f"token {answer['fencingToken']} -> {after['fencingToken']}: a new term's is higher")
    log(f"inject ({mode}): {n} pods of a Deployment of the user's own (Pod Security "
        f"restricted) got one sidecar each from the injector; the unlabelled one none; {first} led (token "
        f"{answer['fencingToken']}); after its delete {leader['metadata']['name']} leads "
        f"({time.monotonic() - t0:.1f}s later, token {after['fencingToken']})")
    cluster.kubectl("delete", "deployment", "shop", "plain", "--wait=true", timeout=120)
    injector.helm("uninstall", "leasehold", "--wait", "--timeout", "120s")


def inject_webhook(cp, helm, rel):
    inject(cp, helm, rel, mode="webhook")


def main():
    ap = chart_suite.parser()
    node_release.add_arguments(ap)
    args = chart_suite.parse_names(ap, STEPS, "step")
    steps = args.steps or list(STEPS)
    run(["bash", ROOT / "scripts/make-base-images.sh"], timeout=1200)  # RUN_IMAGE
    with tempfile.TemporaryDirectory(prefix="leasehold-node-variants-") as tmp, \
            NodeRelease(Path(tmp), args.build_dir, args.tools, Helm(args.helm).path) as rel, \
            ControlPlane(node=True) as cp:
        helm = Helm(args.helm, cp.admin_kubeconfig)
        NodeCluster(cp, "default", helm).import_images(chart_value("example.app.image"),
                                                       RUN_IMAGE)
        return run_steps(steps, lambda name: globals()[name](cp, helm, rel), (Failure, HelmError))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Failure, OciRegistryError) as e:  # the release's or the registry's
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
