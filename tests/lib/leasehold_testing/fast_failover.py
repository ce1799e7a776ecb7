"""--fast-failover on the real kube-apiserver without a kubelet (the integration scenarios
tests/integration/failover_scenarios.py, bench/renew.py): the chart values that grant the
pod watch, Pod objects that no node runs whose container `leasehold` names itself in
LEASEHOLD_CONTAINER as the chart's does, and the environment a sidecar process gets as if it
ran in that container."""

CONTAINER = "leasehold"
# The chart's Role with get/list/watch on pods; fastFailover refuses a status file.
CHART = {"fastFailover": True, "statusFile": {"enabled": False}}


def create_pods(env, names, shared=False):
    """Pod objects in env's namespace (a RealEnv), never scheduled; {name: uid}. shared:
    shareProcessNamespace (no exit is proof there)."""
    uids = {}
    for n in names:
        pod = env.create({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": n, "namespace": env.namespace},
                          "spec": {"automountServiceAccountToken": False,
                                   "shareProcessNamespace": shared,
                                   "containers": [{"name": CONTAINER,
                                                   "image": "registry.example.com/leasehold:1",
                                                   "env": [{"name": "LEASEHOLD_CONTAINER",
                                                            "value": CONTAINER}]}]}})
        uids[n] = pod["metadata"]["uid"]
    return uids


def pod_env(env, pod, uid):
    """The environment of a sidecar in the container `leasehold` of POD (UID uid)."""
    return {"POD_NAME": pod, "POD_UID": uid, "LEASEHOLD_CONTAINER": CONTAINER,
            "POD_NAMESPACE": env.namespace}
