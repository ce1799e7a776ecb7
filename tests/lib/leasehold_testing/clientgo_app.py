"""An app with client-go's elector inside, for the node tests and bench/run --only node: the
bench's client-go baseline (bench/clientgo: LeaseLock, ReleaseOnCancel, /leader on
127.0.0.1:4040) in an image of its own and a Deployment of it."""
import shutil
import tempfile
from pathlib import Path

from .node_cluster import run
from .paths import ROOT

CLIENTGO_IMAGE = "leasehold-clientgo:node"


def build_clientgo_image(binary=ROOT / "build/bench/clientgo"):
    """bench/clientgo/build.sh (client-go pinned in its go.mod) into BINARY, then the image
    CLIENTGO_IMAGE: debian:bookworm-slim (scripts/make-base-images.sh), as the runtime stage of
    leasehold's Dockerfile, with it as the entrypoint, user 65532."""
    run(["bash", ROOT / "bench/clientgo/build.sh", binary], timeout=1800)
    run(["bash", ROOT / "scripts/make-base-images.sh"], timeout=1200)
    with tempfile.TemporaryDirectory() as ctx:
        shutil.copy(binary, Path(ctx) / "clientgo-elector")
        (Path(ctx) / "Dockerfile").write_text(
            "FROM debian:bookworm-slim\nCOPY clientgo-elector /usr/local/bin/clientgo-elector\n"
            "USER 65532:65532\nENTRYPOINT [\"/usr/local/bin/clientgo-elector\"]\n")
        run(["docker", "build", "-q", "-t", CLIENTGO_IMAGE, ctx], timeout=300)
    return CLIENTGO_IMAGE


def duration(seconds):
    """SECONDS as a Go duration flag's value: 2 -> "2s", 0.5 -> "500ms"."""
    return f"{round(seconds * 1000)}ms" if seconds % 1 else f"{int(seconds)}s"


def field_env(*names):
    """The downward API's env entries for NAMES (POD_NAME, POD_NAMESPACE, POD_IP)."""
    paths = {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace",
             "POD_IP": "status.podIP"}
    return [{"name": n, "valueFrom": {"fieldRef": {"fieldPath": paths[n]}}} for n in names]


def clientgo_pod(lease, d, r, p, service_account="leasehold"):
    """A pod spec whose one container, app, elects on the Lease LEASE of its namespace at
    D/R/P seconds (identity: the pod's name and 8 hex digits). SERVICE_ACCOUNT: bound to a Role
    like manifests/rbac.yaml's (get, create, update of the Lease)."""
    return {"serviceAccountName": service_account, "terminationGracePeriodSeconds": 30,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65532},
            "containers": [{
                "name": "app", "image": f"docker.io/library/{CLIENTGO_IMAGE}",
                "imagePullPolicy": "Never",
                "args": [f"--lease-name={lease}", "--lease-namespace=$(POD_NAMESPACE)",
                         f"--lease-duration={duration(d)}", f"--renew-deadline={duration(r)}",
                         f"--retry-period={duration(p)}", "--http-address=127.0.0.1:4040"],
                "env": field_env("POD_NAME", "POD_NAMESPACE")}]}


def deployment(name, namespace, pod_spec, replicas=3, **spec):
    """A Deployment NAME of POD_SPEC, selected by app=NAME; SPEC: more of its spec
    (strategy, minReadySeconds)."""
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec}, **spec}}
