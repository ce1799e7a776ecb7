"""The deploy tests' one image build (deploy.image, the node tests, bench/node.py): the base
images from Debian's packages (scripts/make-base-images.sh) when missing, then the runtime
image with an already built binary (scripts/build-image.sh) or the whole Dockerfile."""
import subprocess
import tempfile
import time

from .checks import Failure, log
from .paths import ROOT

MAKE_BASE = ROOT / "scripts/make-base-images.sh"
BUILD_IMAGE = ROOT / "scripts/build-image.sh"


def build_image(name, binary=None):
    """Tags NAME in the local Docker engine: the runtime stages with BINARY, or, without one,
    the whole Dockerfile (its build stage compiles the binary)."""
    t0 = time.monotonic()
    r = subprocess.run(["bash", str(MAKE_BASE)], capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise Failure(f"{MAKE_BASE} exited {r.returncode}: "
                      f"{(r.stdout + r.stderr).strip()[-3000:]}")
    log(f"base images: {r.stdout.strip().splitlines()[-1]} ({time.monotonic() - t0:.0f}s)")
    t0 = time.monotonic()
    created = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    if binary is not None:
        argv = ["bash", BUILD_IMAGE, "--binary", binary, "--tag", name, "--created", created]
    else:
        argv = ["docker", "build", "-t", name, "--build-arg", f"CREATED={created}", ROOT]
    with tempfile.NamedTemporaryFile("w+", prefix="leasehold-docker-build-", suffix=".log") as f:
        p = subprocess.run(["nice", "-n", "10", *map(str, argv)], stdout=f,
                           stderr=subprocess.STDOUT, timeout=2400)
        if p.returncode != 0:
            f.seek(0)
            tail = "\n".join(f.read().splitlines()[-40:])
            raise Failure(f"{' '.join(map(str, argv[:2]))} exited {p.returncode}:\n{tail}")
    what = f"scripts/build-image.sh --binary {binary}" if binary else "the Dockerfile"
    log(f"image {name} ({what}): {time.monotonic() - t0:.0f}s")
