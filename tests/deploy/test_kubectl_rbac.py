#!/usr/bin/env python3
"""`kubectl leasehold rbac LEASE --serviceaccount SA -n NS [--fast-failover]` prints the same
objects as an entry of the chart's `leases` value (with fastFailover: the pods rule too) (kind, name, namespace, rules, roleRef, subjects, the Lease's
spec; labels and helm's keep annotation aside), parses as YAML, and refuses bad names with
exit status 2 and a message naming the name.

    test_kubectl_rbac.py --plugin BIN [--helm BIN]

The chart's entry is what deploy.helm_real installs on the real kube-apiserver and asks
`kubectl auth can-i` about; equal objects grant the same.
"""
import argparse
import subprocess
import sys

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from leasehold_testing import Failure, check, log  # noqa: E402
from leasehold_testing.helm import Helm, HelmError, HelmMissing, by_kind, documents  # noqa: E402

ENTRY = {"name": "shop", "serviceAccount": "shop-sa", "namespace": "team-a"}


def essence(obj):
    """What the grant is: everything but labels and annotations."""
    out = {k: v for k, v in obj.items() if k != "metadata"}
    out["metadata"] = {k: obj["metadata"][k] for k in ("name", "namespace")}
    return out


def plugin(binary, *args):
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plugin", required=True, help="kubectl-leasehold")
    ap.add_argument("--helm", help="the helm binary (default: build/realkube/bin/helm)")
    args = ap.parse_args()
    try:
        helm = Helm(args.helm)
        for extra, entry in (([], ENTRY), (["--fast-failover"], {**ENTRY, "fastFailover": True})):
            r = plugin(args.plugin, "rbac", ENTRY["name"], "--serviceaccount",
                       ENTRY["serviceAccount"], "-n", ENTRY["namespace"], *extra)
            check(r.returncode == 0, f"kubectl leasehold rbac: {r.returncode} {r.stderr}")
            printed = by_kind(documents(r.stdout))
            chart = {k: v for k, v in by_kind(helm.render({
                "leases": [entry], "example": {"enabled": False},
                "tests": {"enabled": False}})).items()
                if v["metadata"]["namespace"] == ENTRY["namespace"]}
            check(sorted(printed) == sorted(chart),
                  f"objects: the plugin's {sorted(printed)}, the chart's {sorted(chart)}")
            for key in printed:
                check(essence(printed[key]) == essence(chart[key]),
                      f"{key}: the plugin's\n{yaml.safe_dump(essence(printed[key]))}the "
                      f"chart's\n{yaml.safe_dump(essence(chart[key]))}")
            pods = [r for r in printed[("Role", "leasehold-shop")]["rules"]
                    if r["resources"] == ["pods"]]
            check(bool(pods) == bool(extra), f"{extra}: pods rules {pods}")
            log(f"ok: kubectl leasehold rbac {' '.join(extra)} prints the chart's leases entry"
                f"{' with fastFailover' if extra else ''}: "
                f"{', '.join(f'{k}/{n}' for k, n in sorted(printed))}")
        for argv, says in ((["rbac", "Shop", "--serviceaccount", "x"], 'the Lease name "Shop"'),
                           (["rbac", "shop", "--serviceaccount", "x", "-n", "Team_A"],
                            'the namespace "Team_A"'),
                           (["rbac", "shop"], "rbac needs --serviceaccount"),
                           (["rbac", "--serviceaccount", "x"], "rbac needs a Lease NAME")):
            r = plugin(args.plugin, *argv)
            check(r.returncode == 2 and says in r.stderr and not r.stdout,
                  f"{argv}: exit {r.returncode}, {r.stderr!r}, {r.stdout[:80]!r}")
            log(f"ok: {' '.join(argv)}: refused: {r.stderr.strip()}")
        log("PASS")
        return 0
    except (Failure, HelmError, HelmMissing) as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
