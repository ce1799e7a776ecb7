#!/usr/bin/env python3
"""Memory held over time: groups of 3 sidecars (one group per binary, each on its own Lease) at
the chart's timings 15s/10s/2s on one test API server, VmRSS/VmHWM/RssAnon/RssFile of every
process from /proc every `--every` seconds for `--seconds`. Binaries side by side in one run see
the same server and the same machine load, so a before/after comparison is fair.

    PYTHONPATH=tests/lib python3 bench/held_rss.py [--seconds 600] [--every 10] \
        [--apiserver BIN] [--out FILE.json] LABEL=BINARY [LABEL=BINARY ...]

Prints, per group, the peak (the larger of VmHWM and every VmRSS sampled: the kernel does not
update the high-water mark when MADV_DONTNEED unmaps pages, so VmHWM alone can miss a peak that
runtime/ResidentCode dropped) and the highest VmRSS of any replica in the windows 20 s-350 s
and 350 s-end (the watch's first rotation comes at 300-600 s), and writes every sample to
--out.
"""
import argparse
import json
import sys
import time
from pathlib import Path

from leasehold_testing.paths import ROOT
from leasehold_testing.proc import footprint
from leasehold_testing.sidecar import the_leader
from servers import TestServer, make_sidecar  # bench's own modules (this script's directory)
from settings import DEFAULT_ARGS


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--apiserver",
                    default=str(ROOT / "build/release/tests/apiserver/leasehold-test-apiserver"))
    ap.add_argument("--out")
    ap.add_argument("binaries", nargs="+", metavar="LABEL=BINARY")
    a = ap.parse_args()
    groups = dict(b.split("=", 1) for b in a.binaries)
    first = next(iter(groups.values()))
    samples = []
    with TestServer(first, a.apiserver) as server:
        env = server.env_for("held")
        members = {}
        for label, binary in groups.items():
            members[label] = [make_sidecar(server, env, f"{label}-{i}", f"held-{label}",
                                           DEFAULT_ARGS, "watch") for i in range(a.replicas)]
            for s in members[label]:
                s.args[0] = binary
        t0 = time.monotonic()
        for group in members.values():
            for s in group:
                s.start()
        leaders = {label: the_leader(g, timeout=30).name for label, g in members.items()}
        while True:
            t = time.monotonic() - t0
            row = {"t": round(t, 1)}
            for group in members.values():
                for s in group:
                    row[s.name] = footprint(s.proc.pid)
            samples.append(row)
            if t >= a.seconds:
                break
            time.sleep(max(0.0, a.every - (time.monotonic() - t0 - t)))
        dead = [s.name for g in members.values() for s in g if not s.alive()]
        changed = [label for label, g in members.items()
                   if the_leader(g, timeout=30).name != leaders[label]]
    summary = {}
    for label, group in members.items():
        names = [s.name for s in group]

        def most(key, lo, hi):
            vals = [r[n][key] for r in samples if lo <= r["t"] < hi for n in names if r[n]]
            return max(vals) if vals else None
        summary[label] = {
            "binary": groups[label], "size": Path(groups[label]).stat().st_size,
            "peak_VmHWM_kB": most("VmHWM_kB", 0, 1e9),
            "peak_kB": max(most("VmHWM_kB", 0, 1e9), most("VmRSS_kB", 0, 1e9)),
            "VmRSS_max_20_350_kB": most("VmRSS_kB", 20, 350),
            "VmRSS_max_350_end_kB": most("VmRSS_kB", 350, 1e9),
            "VmRSS_min_350_end_kB": min(r[n]["VmRSS_kB"] for r in samples if r["t"] >= 350
                                        for n in names if r[n]) if a.seconds >= 350 else None,
            "RssFile_max_350_end_kB": most("RssFile_kB", 350, 1e9),
            "RssAnon_max_350_end_kB": most("RssAnon_kB", 350, 1e9),
            "RssFile_max_20_350_kB": most("RssFile_kB", 20, 350),
            "RssAnon_max_20_350_kB": most("RssAnon_kB", 20, 350),
        }
    result = {"seconds": a.seconds, "every": a.every, "replicas": a.replicas,
              "timings": DEFAULT_ARGS, "dead": dead, "leader_changed": changed,
              "summary": summary, "samples": samples}
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
    return 1 if dead or changed else 0


if __name__ == "__main__":
    sys.exit(main())
