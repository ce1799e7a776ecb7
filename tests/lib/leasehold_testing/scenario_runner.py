"""The command line every scenario file shares (run_scenarios) and how a scenario runs with
--real (real_options)."""
import os
import time

from .checks import Failure, log
from .control_plane import ControlPlane
from .env import Env
from . import machine_stalls
from .real_env import RealEnv


def real_options(needs_http=None, real_only=False, ha=False, chart_values=None,
                 allow_forbidden=False):
    """How a scenario runs with --real (function attributes read by run_scenarios):
      needs_http       why it needs the test server's HTTP-level faults: skipped with --real
      real_only        needs the real control plane: skipped without --real
      ha               runs on a control plane with two kube-apiservers (--ha)
      chart_values     extra `helm template` values for the Role (e.g. podLabel)
      allow_forbidden  403s are the point (an RBAC scenario): not a failure"""
    def mark(fn):
        fn.needs_http, fn.real_only, fn.ha = needs_http, real_only, ha
        fn.chart_values, fn.allow_forbidden = dict(chart_values or {}), allow_forbidden
        return fn
    return mark


def skip_reason(fn, real):
    if real and getattr(fn, "needs_http", None):
        return f"needs the test API server: {fn.needs_http}"
    if not real and getattr(fn, "real_only", False):
        return "needs the real kube-apiserver (--real)"
    return None


# The folder of a control plane that several runs share (tests/realkube/shared_plane.sh, the
# ctest fixture realkube_shared): set, a run uses it for its plain plane instead of starting one.
SHARED_PLANE_VARIABLE = "LEASEHOLD_REAL_PLANE"


class _Planes:
    """--real: one control plane per kind (plain, HA) for the whole run, started on first use,
    or for the plain kind the shared one in $LEASEHOLD_REAL_PLANE; each scenario gets a
    namespace of its own on it. A plane that is not ready after a scenario is replaced by one
    of the run's own (a shared one is left to its owner)."""

    def __init__(self):
        self.planes = {}
        self.shared = os.environ.get(SHARED_PLANE_VARIABLE) or None

    def get(self, ha):
        plane = self.planes.get(ha)
        if plane is not None and not all(plane.ready(c) for c in plane.apiservers()):
            log("the control plane is not ready after the last scenario: starting a new one")
            plane.down()
            plane = None
            if not ha:
                self.shared = None
        if plane is None:
            if not ha and self.shared:
                plane = ControlPlane(directory=self.shared, reuse=True)
            else:
                plane = ControlPlane(ha=ha)
            self.planes[ha] = plane
            plane.up()
        return plane

    def close(self):
        for plane in self.planes.values():
            plane.down()


_SHARED_PLANES = None


def shared_planes():
    """One _Planes for the whole process (the conformance suite's realkube store: every
    scenario of a pytest run on one control plane, as a scenario file's --real run), closed
    when the process ends."""
    global _SHARED_PLANES
    if _SHARED_PLANES is None:
        import atexit
        _SHARED_PLANES = _Planes()
        atexit.register(_SHARED_PLANES.close)
    return _SHARED_PLANES


def namespace_for(name):
    return (name.replace("_", "-")[:50] + "-" + os.urandom(2).hex()).lower()


def run_scenarios(scenarios, server_args=None, with_env=True):
    """The command line every scenario file shares:

        FILE.py --sidecar BIN (--apiserver BIN | --real) [--list] [NAME... | all]

    Each scenario gets a fresh Env (test API server with `server_args[name]`, or the function's
    `server_args` attribute), or, with with_env=False, the pair (sidecar, apiserver). With
    --real it gets a RealEnv instead: a namespace of its own on the real kube-apiserver and
    etcd (tests/realkube/start.sh, one control plane for the run, or the shared one in
    $LEASEHOLD_REAL_PLANE), the chart's Role for each
    sidecar's ServiceAccount; a 403 for any sidecar fails the scenario. Scenarios marked
    needs_http (real_options) are skipped there, real_only ones without it; --list says which.
    Every scenario runs even after a failure; the exit code says whether any failed."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--apiserver", help="the test API server (not with --real)")
    ap.add_argument("--real", action="store_true",
                    help="run on the real kube-apiserver + etcd (build/realkube/bin)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    if args.list:
        for name, fn in scenarios.items():
            notes = [f"--real: skipped ({fn.needs_http})" if getattr(fn, "needs_http", None)
                     else "", "real only" if getattr(fn, "real_only", False) else ""]
            notes = [n for n in notes if n]
            print(name + (f"\t[{'; '.join(notes)}]" if notes else ""))
        return 0
    if not args.real and not args.apiserver:
        ap.error("--apiserver is required (or --real)")
    if args.real and not with_env:
        ap.error("--real: these scenarios bring their own server")
    unknown = [n for n in args.names if n != "all" and n not in scenarios]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; --list shows them")
    names = list(scenarios) if args.names in ([], ["all"]) else args.names
    failed = []
    planes = _Planes() if args.real else None
    try:
        for name in names:
            fn = scenarios[name]
            doc = (fn.__doc__ or "").strip().splitlines()
            why = skip_reason(fn, args.real)
            if why:
                log(f"SKIP {name}: {why}")
                continue
            log(f"=== {name}: {doc[0] if doc else ''}")
            t0, began = time.monotonic(), time.time()
            try:
                if args.real:
                    _run_real(fn, name, args.sidecar, planes)
                elif with_env:
                    extra = (server_args or {}).get(name, getattr(fn, "server_args", []))
                    with Env(args.sidecar, args.apiserver, extra) as env:
                        fn(env)
                else:
                    fn((args.sidecar, args.apiserver))
                log(f"PASS {name} ({time.monotonic() - t0:.1f}s)")
            except Exception as e:  # noqa: BLE001 - report every failure, then exit non-zero
                log(f"FAIL {name}: {type(e).__name__}: {e}"
                    f"{machine_stalls.describe(began, time.time())}")
                failed.append(name)
    finally:
        if planes:
            planes.close()
    return 1 if failed else 0


def _run_real(fn, name, sidecar_bin, planes):
    plane = planes.get(getattr(fn, "ha", False))
    with RealEnv(sidecar_bin, plane=plane, namespace=namespace_for(name),
                 chart_values=getattr(fn, "chart_values", None)) as env:
        fn(env)
        check_forbidden(env, getattr(fn, "allow_forbidden", False))


def check_forbidden(env, allow_forbidden=False):
    """Every request the chart's RBAC refused a sidecar of RealEnv `env` fails the scenario
    (unless that is its point)."""
    time.sleep(0.2)  # the audit log is written as requests finish
    events = env.sidecar_events()
    denied = env.forbidden()
    starting = env.starting_forbidden()
    log(f"audit: {len(events)} requests by the sidecars' ServiceAccounts, "
        f"{len(denied)} forbidden (403)"
        + (f", {len(starting)} more from a kube-apiserver still starting (its RBAC "
           "cache not synced)" if starting else ""))
    if denied and not allow_forbidden:
        raise Failure(f"{len(denied)} request(s) refused by the chart's RBAC, first: "
                      + "; ".join(env.describe_event(e) for e in denied[:3]))
