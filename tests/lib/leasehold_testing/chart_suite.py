"""The command line the chart suites of tests/deploy share:

    FILE.py [--helm BIN] [the suite's options] [NAME...]

test_chart.py and test_monitoring.py run checks with helm alone (run_offline);
test_helm_real.py and test_monitoring_real.py run steps on the real kube-apiserver
(real_parser's --kubectl and --control-plane, run_real). A name the suite does not have is a
usage error; a check or step that fails (Failure, HelmError; on the real server also a
timeout) fails alone and the others still run (run_steps).
"""
import argparse
import json
import subprocess
from pathlib import Path

from .checks import Failure, log, run_steps
from .control_plane import ControlPlane
from .helm import Helm, HelmError, HelmMissing


def parser():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", type=Path, help="the helm binary (default: build/realkube/bin/helm)")
    return ap


def real_parser():
    ap = parser()
    ap.add_argument("--kubectl", default="kubectl")
    ap.add_argument("--control-plane", type=Path, metavar="DIR",
                    help="use the control plane `tests/realkube/start.sh up DIR` started")
    return ap


def parse_names(ap, names, word):
    """Adds the NAME... words to `ap` (`word`: "check" or "step"; they land in args.checks or
    args.steps, empty for the suite's default) and parses the command line."""
    ap.add_argument(word + "s", nargs="*", metavar=word.upper(), help=" ".join(names))
    args = ap.parse_args()
    unknown = [n for n in getattr(args, word + "s") if n not in names]
    if unknown:
        ap.error(f"unknown {word} {' '.join(unknown)} (choose from {' '.join(names)})")
    return args


def run_offline(args, names, run_one):
    """The named checks, `run_one(helm, name)`, with Helm(args.helm); the exit status."""
    try:
        helm = Helm(args.helm)
    except HelmMissing as e:
        print(f"FAIL: {e}")
        return 1
    return run_steps(names, lambda name: run_one(helm, name), (Failure, HelmError))


def run_real(args, names, setup, cluster=ControlPlane):
    """The named steps on the control plane args.control_plane names (left running), else on
    one start.sh brings up for the run, with helm on its kubeconfig. `setup(cp, helm, server)`
    (server: the kube-apiserver's gitVersion) returns `run_one(name)`. The exit status: 1 also
    when the control plane, helm or setup fails."""
    try:
        with cluster(directory=args.control_plane, reuse=args.control_plane is not None,
                     kubectl=args.kubectl) as cp:
            helm = Helm(args.helm, kubeconfig=cp.env["KUBECONFIG"])
            server = json.loads(cp.kubectl("get", "--raw", "/version").stdout)["gitVersion"]
            run_one = setup(cp, helm, server)
            log(f"kube-apiserver {server} at {cp.env['APISERVER_URL']}; "
                f"{helm.run('version', '--short').stdout.strip()}")
            return run_steps(names, run_one, (Failure, HelmError, subprocess.TimeoutExpired))
    except (Failure, HelmMissing) as e:
        log(f"FAIL: {e}")
        return 1


def real_steps_main(steps, cluster=ControlPlane, check_server=None, add_arguments=None):
    """The whole main() of a suite of STEPS on the real control plane: parses STEP names (and
    real_parser()'s options, and those ADD_ARGUMENTS(parser) adds), runs each
    `steps[name](cp, helm, state)` in order with one state dict (state["args"]: the parsed
    arguments), and returns the exit status. CHECK_SERVER(helm, server) may refuse the server
    first (a Failure)."""
    ap = real_parser()
    if add_arguments:
        add_arguments(ap)
    args = parse_names(ap, steps, "step")

    def setup(cp, helm, server):
        if check_server:
            check_server(helm, server)
        state = {"args": args}
        return lambda name: steps[name](cp, helm, state)
    return run_real(args, args.steps or list(steps), setup, cluster=cluster)
