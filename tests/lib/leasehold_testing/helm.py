"""Real helm for the tests: finds the binary, runs it in a private HELM_*_HOME, renders the chart.

One copy, used by tests/deploy (test_chart.py: lint/template, test_helm_real.py:
install/upgrade/test/uninstall on the real kube-apiserver, test_rbac.py: the chart's Role with
podLabel, test_image.py: the pod spec) and by RealEnv (the chart's Role in each namespace).

The binary is --helm, else $LEASEHOLD_HELM, else build/realkube/bin/helm (tests/realkube/build.sh
builds it from the pinned helm.sh/helm/v3 module).
"""
import copy
import os
import re
import subprocess
import tempfile
from pathlib import Path

import yaml

from .checks import check
from .paths import ROOT

CHART = ROOT / "charts/leasehold"
DEFAULT_HELM = ROOT / "build/realkube/bin/helm"
RELEASE = "leasehold"
NAMESPACE = "default"


class HelmError(Exception):
    """helm exited non-zero; the message has the command line and what helm said."""

    def __init__(self, argv, proc):
        self.returncode = proc.returncode
        self.output = (proc.stdout + proc.stderr).strip()
        super().__init__(f"`helm {' '.join(argv)}` exited {proc.returncode}:\n{self.output}")


class HelmMissing(Exception):
    pass


def server_kube_version():
    """The Kubernetes version the real control plane runs: tests/realkube/go.mod's pin.

    helm template/lint get it as --kube-version: without one they assume Kubernetes 1.20 unless
    the binary was linked with helm's Makefile ldflags, and the chart asks for >= 1.25."""
    text = (ROOT / "tests/realkube/go.mod").read_text()
    m = re.search(r"^\s*k8s\.io/kubernetes v(\d+\.\d+\.\d+)\s*$", text, re.M)
    if not m:
        raise HelmMissing("tests/realkube/go.mod pins no k8s.io/kubernetes version")
    return m.group(1)


def load_values():
    """The chart's defaults: its values.yaml as helm reads it."""
    return yaml.safe_load((CHART / "values.yaml").read_text())


def chart_value(key):
    """One default by its dotted key ("timings.leaseDuration")."""
    value = load_values()
    for part in key.split("."):
        value = value[part]
    return value


def deep_merge(base, override):
    """Helm's value merge for plain maps: override wins, maps merge key by key."""
    out = copy.deepcopy(base)
    for k, v in override.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def documents(text, default_source="-"):
    """[(source template, object)] of a multi-document manifest stream (helm's `# Source:`)."""
    out = []
    for part in re.split(r"^---\s*$", text, flags=re.M):
        m = re.search(r"^# Source: (\S+)", part, re.M)
        doc = yaml.safe_load(part)
        if doc is not None:
            out.append((m.group(1) if m else default_source, doc))
    return out


def is_hook(obj):
    """Whether a rendered object is a helm hook (helm test's pod and its grants): helm install
    leaves those to their hook."""
    return "helm.sh/hook" in (obj["metadata"].get("annotations") or {})


def by_kind(docs):
    """{(kind, name): object} of documents() (a Failure if one is there twice)."""
    out = {}
    for _, d in docs:
        key = (d["kind"], d["metadata"]["name"])
        check(key not in out, f"{key} rendered twice")
        out[key] = d
    return out


class Helm:
    def __init__(self, path=None, kubeconfig=None):
        path = Path(path or os.environ.get("LEASEHOLD_HELM") or DEFAULT_HELM)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise HelmMissing(f"{path}: no helm binary there; build it with "
                              f"tests/realkube/build.sh (or pass --helm / set LEASEHOLD_HELM)")
        self.path = path
        self.kube_version = server_kube_version()
        # Helm's own state (repositories, registry logins, plugins, cache) in a private place:
        # a test must neither read nor write the user's ~/.config/helm.
        self._home = tempfile.TemporaryDirectory(prefix="leasehold-helm-")
        home = Path(self._home.name)
        self.tmp = home / "tmp"
        self.tmp.mkdir()
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(home),
                    "HELM_CACHE_HOME": str(home / "cache"),
                    "HELM_CONFIG_HOME": str(home / "config"),
                    "HELM_DATA_HOME": str(home / "data")}
        if kubeconfig:
            self.env["KUBECONFIG"] = str(kubeconfig)
        self._n = 0

    def run(self, *argv, ok=True, timeout=180):
        argv = [str(a) for a in argv]
        proc = subprocess.run([str(self.path), *argv], capture_output=True, text=True,
                              env=self.env, timeout=timeout)
        if ok and proc.returncode != 0:
            raise HelmError(argv, proc)
        return proc

    def values_file(self, overrides):
        self._n += 1
        path = self.tmp / f"values-{self._n}.yaml"
        path.write_text(yaml.safe_dump(overrides or {}, sort_keys=False))
        return path

    def value_args(self, overrides):
        return ["-f", self.values_file(overrides)] if overrides else []

    def template(self, overrides=None, *, chart=CHART, release=RELEASE, namespace=NAMESPACE,
                 extra=(), ok=True):
        """The manifest stream of `helm template` (tests included) for these values."""
        proc = self.run("template", release, chart, "--namespace", namespace,
                        "--kube-version", self.kube_version, *self.value_args(overrides),
                        *extra, ok=ok)
        return proc if not ok else proc.stdout

    def lint(self, overrides=None, *, chart=CHART, namespace=NAMESPACE, extra=(), ok=True):
        return self.run("lint", "--strict", chart, "--namespace", namespace,
                        "--kube-version", self.kube_version, *self.value_args(overrides),
                        *extra, ok=ok)

    def render(self, overrides=None, **kw):
        """[(source, object)] of `helm template`."""
        return documents(self.template(overrides, **kw))
