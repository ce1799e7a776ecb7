"""NodeRelease: this checkout published to a local OCI registry, as the node tests install
leasehold: the way users get it (README "Install"), never by importing the image into the node.

    with NodeRelease(tmp, build_dir, tools, helm_bin) as rel:   # registry up, release started
        with ControlPlane(node=True) as cp:                     # the cluster comes up meanwhile
            published = rel.published()                         # waits for release.sh
            cluster = NodeCluster(cp, ns, helm)
            pods = cluster.install_released_chart(name, rel.registry, published.chart_version)
            rel.check_pulled(cluster, pods)
            # or, for a pod spec of one's own: rel.trusted_by(cluster); rel.image_ref()

release.sh runs through ReleaseRun (a clone of the tree as it is, this build's binaries,
linux/amd64 only: the node is amd64) in a thread beside whatever the test does next; its local
Docker images are removed when it is done.
"""
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .checks import check, log
from .oci_registry import OciRegistry
from .release_run import ReleaseRun


def add_arguments(ap):
    """The arguments a node test needs to release this checkout (CMake passes them)."""
    ap.add_argument("--build-dir", required=True, type=Path,
                    help="the directory holding this checkout's CMake build `release` "
                         "(scripts/release.sh --build-dir)")
    ap.add_argument("--tools", required=True, type=Path,
                    help="crane, syft, cosign (tests/release/tools/build.sh)")


def product_images(cluster):
    """The refs in the node's containerd naming a leasehold image (not leasehold.test/pause)."""
    return [r for r in cluster.runtime_images() if re.search(r"(^|/)leasehold[:@]", r)]


class NodeRelease:
    def __init__(self, tmp, build_dir, tools, helm_bin):
        self.run = ReleaseRun(Path(tmp), build_dir, tools, helm_bin)
        self.registry = OciRegistry()
        self._pool = None
        self._future = None

    def __enter__(self):
        self.registry.start()
        self.run.registry = self.registry
        self._pool = ThreadPoolExecutor(1)
        self._future = self._pool.submit(self._release)
        return self

    def __exit__(self, *exc):
        self._pool.shutdown(wait=True)
        self.registry.stop()

    def _release(self):
        try:
            carried = self.run.clone_tree()
            published = self.run.publish("amd64")
        finally:
            self.run.remove_local_images()
        log(f"release: scripts/release.sh {published.version} --arch amd64 to "
            f"{self.registry.host} in {published.took:.0f}s" +
            (" (the work tree's changes committed in a clone)" if carried else "") +
            f": image index {published.index_digest}, chart {published.chart_version}")
        return published

    def published(self):
        """release.sh's Published, once it is done (its Failure if it failed)."""
        return self._future.result()

    def image_ref(self):
        """REGISTRY/leasehold:VERSION@DIGEST: what the released chart's pods name."""
        p = self.published()
        return f"{self.registry.host}/leasehold:{p.version}@{p.index_digest}"

    def trusted_by(self, cluster):
        """The node's containerd trusts the registry's CA (its hosts.toml in the node's registry
        config_path, tests/realkube/node.sh); install_released_chart does this itself."""
        self.registry.write_containerd_hosts(cluster.cp.env["NODE_REGISTRY_CONFIG"])

    def check_pulled(self, cluster, pods, container="leasehold"):
        """Each pod's CONTAINER (an init container: the native sidecar) runs image_ref() with
        pullPolicy IfNotPresent, which the node's containerd pulled from the registry (the
        kubelet's imageID has the index digest)."""
        digest, want = self.published().index_digest, self.image_ref()
        status = None
        for pod in pods:
            name = pod["metadata"]["name"]
            spec = next(c for c in pod["spec"]["initContainers"] if c["name"] == container)
            check(spec["image"] == want and spec["imagePullPolicy"] == "IfNotPresent",
                  f"{name}'s {container} image {spec['image']} ({spec['imagePullPolicy']}), "
                  f"want {want} (IfNotPresent)")
            status = next(c for c in pod["status"]["initContainerStatuses"]
                          if c["name"] == container)
            check(status["imageID"].endswith("@" + digest),
                  f"{name}'s {container} runs {status['imageID']}, not the index {digest}")
        refs = [r for r in cluster.runtime_images()
                if r.startswith(f"{self.registry.host}/leasehold")]
        check(f"{self.registry.host}/leasehold@{digest}" in refs,
              f"the node's containerd holds no {self.registry.host}/leasehold@{digest}: {refs}")
        log(f"install: every {container} runs {want} (IfNotPresent), imageID "
            f"{status and status['imageID']}; containerd pulled it: {', '.join(refs)}")
