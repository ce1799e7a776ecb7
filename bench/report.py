"""bench/run's report: which goals a run met, and the markdown table next to the baseline.

    bench/report.py --plot RESULTS.json   redraws a scale run's PNGs (and its .md) from the
                                          saved JSON alone (bench/plots.py)

Like bench/run (whose scale section runs it so, passing its environment on), it finds
leasehold_testing (settings imports it) in tests/lib through PYTHONPATH: by hand,
`PYTHONPATH=tests/lib python3 bench/report.py --plot ...` from the repository.
"""
import sys
from pathlib import Path

from scale_report import scale_goals, scale_markdown
from settings import BASELINE_LABEL, GOALS
from etcd import etcd_markdown
from zookeeper import zookeeper_markdown
from node import node_markdown
from renew import renew_goals, renew_markdown
from shards import shards_goals, shards_markdown


# ----------------------------------------------------------------------------------------------
# Report


def fmt_ms(x, signed=False):
    if x is None:
        return "n/a"
    digits = 0 if abs(x) >= 0.1 else 1
    return f"{x * 1000:+.{digits}f} ms" if signed else f"{x * 1000:.{digits}f} ms"


def verdict(ok):
    return "met" if ok else "**MISSED**"


def goals_and_table(results, baseline="poll", baseline_label=None):
    """Returns (goals dict, markdown text). The baseline column is `baseline`'s measurement in
    the same run; the design's client-go estimates are shown only next to the poll stand-in."""
    goals = {}
    B = baseline
    rows = []  # measure, ours, client-go behaviour / nginx, ratio, client-go (design), goal, ok
    md = []
    if "failover" in results:
        w, p = results["failover"]["watch"], results["failover"][B]
        for q in ("p50", "p99"):
            ok = w["t_minus_D"][q] <= GOALS["failover_p99_minus_D_s"] if q == "p99" else None
            rows.append((f"crash failover (kill -9), {q} - D [scaled: D=2s P=0.3s]",
                         fmt_ms(w["t_minus_D"][q], True), fmt_ms(p["t_minus_D"][q], True),
                         f"{w['t'][q] / p['t'][q]:.2f} (of t)",
                         {"p50": "D + 1.9 s", "p99": "D + 4.5 s (worst)"}[q],
                         "p99 <= D + 100 ms" if ok is not None
                         else "", verdict(ok) if ok is not None else ""))
        goals["failover"] = w["t_minus_D"]["p99"] <= GOALS["failover_p99_minus_D_s"]
        def late(e):
            a = e["after_expiry"]
            early = e.get("before_expiry", 0)
            return (f"{fmt_ms(a['p50'], True)} / {fmt_ms(a['min'], True)} / "
                    f"{fmt_ms(a['max'], True)}" + (f" ({early} of {a['n']} before expiry)"
                                                   if early else ""))
        rows.append(("  takeover after the lease could expire (last renewTime + D), p50 / min / "
                     "max", late(w), late(p), "", "", "", ""))
    if "handover" in results:
        w, p = results["handover"]["watch"], results["handover"][B]
        for q in ("p50", "p99"):
            ok = w["t"][q] <= GOALS["handover_p99_s"] if q == "p99" else None
            rows.append((f"graceful handover (SIGTERM), {q} [baseline scales with P]",
                         fmt_ms(w["t"][q]), fmt_ms(p["t"][q]), f"{w['t'][q] / p['t'][q]:.3f}",
                         {"p50": "1.1 s", "p99": "1.7 s (worst)"}[q],
                         "p99 <= 100 ms" if ok is not None else "",
                         verdict(ok) if ok is not None else ""))
        goals["handover"] = w["t"]["p99"] <= GOALS["handover_p99_s"]
    if "request" in results:
        w = results["request"]["watch"]
        for q in ("p50", "p99"):
            ok = w["t"][q] <= GOALS["request_p99_s"] if q == "p99" else None
            rows.append((f"handover on request (preferred-holder written), {q}",
                         fmt_ms(w["t"][q]), "n/a (expires: up to D)", "", "",
                         "p99 <= 20 ms" if ok is not None else "",
                         verdict(ok) if ok is not None else ""))
        goals["request"] = w["t"]["p99"] <= GOALS["request_p99_s"]
    if "load" in results:
        L = results["load"]
        for n in (3, 10):
            w, p = L[f"watch-{n}"], L[f"{B}-{n}"]
            ok = w["total_per_min"] <= GOALS["api_per_min_3"] if n == 3 else None
            rows.append((f"Lease API requests/min, {n} replicas, total [15s/10s/2s]",
                         f"{w['total_per_min']:.1f}", f"{p['total_per_min']:.1f}",
                         f"{w['total_per_min'] / p['total_per_min']:.2f}",
                         "99" if n == 3 else "",
                         "<= 35" if ok is not None else "", verdict(ok) if ok is not None else ""))
        goals["api_load_3"] = L["watch-3"]["total_per_min"] <= GOALS["api_per_min_3"]
    if "footprint" in results:
        F = results["footprint"]
        for role in ("leader", "follower"):
            w, p = F[f"watch-{role}"], F[f"{B}-{role}"]
            ok_rss = w["VmRSS_kB"] <= GOALS["rss_kb"]
            ok_thr = w["threads"] <= GOALS["threads"]
            ok_cpu = w["cpu_percent_schedstat"] < GOALS["cpu_percent"]
            goals[f"rss_{role}"], goals[f"threads_{role}"] = ok_rss, ok_thr
            goals[f"cpu_{role}"] = ok_cpu
            rows.append((f"{role} VmRSS / VmHWM", f"{w['VmRSS_kB'] / 1024:.1f} / "
                         f"{w['VmHWM_kB'] / 1024:.1f} MB", f"{p['VmRSS_kB'] / 1024:.1f} / "
                         f"{p['VmHWM_kB'] / 1024:.1f} MB", "", "26 MB", "<= 8 MB",
                         verdict(ok_rss)))
            rows.append((f"{role} threads / open fds", f"{w['threads']} / {w['fds']}",
                         f"{p['threads']} / {p['fds']}", "", "8 threads", "<= 2 threads",
                         verdict(ok_thr)))
            rows.append((f"{role} idle CPU, % of a core over {w['cpu_window_s']:.0f} s "
                         "(schedstat; stat ticks)",
                         f"{w['cpu_percent_schedstat']:.4f}% ({w['cpu_percent_stat']:.3f}%)",
                         f"{p['cpu_percent_schedstat']:.4f}% ({p['cpu_percent_stat']:.3f}%)", "",
                         "0.2%" if role == "leader" else "", "< 0.1%", verdict(ok_cpu)))
    if "http" in results:
        H = results["http"]
        for c in (1, 64):
            lw, nw = H["leasehold"][f"wrk_c{c}"], H["nginx"][f"wrk_c{c}"]
            ok = H[f"ratio_c{c}"] >= GOALS["http_ratio"]
            goals[f"http_ratio_c{c}"] = ok
            rows.append((f"/leader wrk -c{c}: req/s (p50 / p99 latency)",
                         f"{lw.get('rps', 0):.0f} ({lw['latency_us'].get('50%', 0):.0f} / "
                         f"{lw['latency_us'].get('99%', 0):.0f} us)",
                         f"nginx {nw['rps']:.0f} ({nw['latency_us'].get('50%', 0):.0f} / "
                         f"{nw['latency_us'].get('99%', 0):.0f} us)",
                         f"{H[f'ratio_c{c}']:.2f} (leasehold/nginx)", "", ">= 0.5", verdict(ok)))
        lp, np_ = H["leasehold"]["paced_1000"], H["nginx"]["paced_1000"]
        ok = lp["p99_us"] < GOALS["paced_p99_us"] and lp["errors"] == 0
        goals["paced_p99"] = ok
        fifo = " (server+client SCHED_FIFO)" if lp.get("sched_fifo") else ""
        rows.append((f"/leader at a paced 1,000 req/s{fifo}: p50 / p99 / p99.9 / max",
                     f"{lp['p50_us']:.0f} / {lp['p99_us']:.0f} / {lp['p999_us']:.0f} / "
                     f"{lp['max_us']:.0f} us",
                     f"nginx {np_['p50_us']:.0f} / {np_['p99_us']:.0f} / {np_['p999_us']:.0f} / "
                     f"{np_['max_us']:.0f} us", f"{lp['p99_us'] / np_['p99_us']:.2f} (p99)", "",
                     "p99 < 1 ms", verdict(ok)))
    if "startup" in results:
        S = results["startup"]
        SB = results.get("startup_baseline")
        for key, what in (("first_answer", "first /leader answer"),
                          ("leadership", "leader of an uncontested Lease")):
            rows.append((f"startup: exec -> {what}, p50 / max",
                         f"{fmt_ms(S[key]['p50'])} / {fmt_ms(S[key]['max'])}",
                         f"{fmt_ms(SB[key]['p50'])} / {fmt_ms(SB[key]['max'])}" if SB else "",
                         f"{S[key]['p50'] / SB[key]['p50']:.2f} (p50)" if SB else "",
                         "", "", ""))
    if "scale" in results:
        goals.update({k: ok for k, (_v, ok, _t) in scale_goals(results["scale"]).items()})
    if "shards" in results:
        goals.update({k: ok for k, (_v, ok, _t) in shards_goals(results["shards"]).items()})
    if "renew" in results:
        goals.update({k: ok for k, (_v, ok, _t) in renew_goals(results["renew"]).items()})
    if "etcd" in results:
        L = results["etcd"]["leasehold"]
        goals["etcd_failover"] = (L["failover_after_expiry_s"]["p99"]
                                  <= GOALS["etcd_failover_after_expiry_p99_s"])
        goals["etcd_handover"] = L["handover_s"]["p99"] <= GOALS["etcd_handover_p99_s"]
    if not rows:
        return goals, ""
    design = baseline == "poll"
    label = baseline_label or BASELINE_LABEL.get(baseline, baseline)
    md.append(f"| measure | ours (leasehold, watch) | {label} / nginx | ratio | "
              + ("client-go (design §6 estimate) | " if design else "") + "goal | |")
    md.append("|---|---|---|---|" + ("---|" if design else "") + "---|---|")
    for r in rows:
        if not design:
            r = r[:4] + r[5:]
        md.append("| " + " | ".join(r) + " |")
    if "load" in results:
        md.append("")
        md.append("Lease API requests per minute per replica and verb (15s/10s/2s; followers: mean "
                  "per follower):")
        md.append("")
        md.append("| replicas | who | leader | each follower | total/min |")
        md.append("|---|---|---|---|---|")
        for key, g in results["load"].items():
            fv = lambda d: ", ".join(f"{v} {c:.1f}" for v, c in sorted(d.items())) or "0"  # noqa
            who = "client-go" if g["mode"] == "client-go" else f"leasehold {g['mode']}"
            md.append(f"| {g['replicas']} | {who} | {fv(g['leader_per_min'])} | "
                      f"{fv(g['follower_mean_per_min'])} | {g['total_per_min']:.1f} |")
    return goals, "\n".join(md)


def render(doc):
    """The markdown report of a results document (what bench/run writes next to the JSON)."""
    meta, results = doc["meta"], doc["results"]
    baseline = meta.get("baseline", "poll")
    label = BASELINE_LABEL[baseline].format(version=meta.get("clientgo", {}).get("client_go"))
    if set(results) == {"etcd"}:  # its own baseline, in its own table
        label = "etcd's concurrency.Election (bench/etcdgo)"
    if set(results) == {"zookeeper"}:
        label = "kazoo's Election recipe (bench/kazoo_candidate.py)"
    table = goals_and_table(results, baseline, label)[1]
    info = meta.get("server_info", {})
    where = (info["kind"] if "kind" in info else
             f"real kube-apiserver {info.get('kube_apiserver')} + {info.get('etcd')} "
             "(tests/realkube; counts from its audit log)" if meta.get("server") == "real"
             else "the test API server (counts from its per-client counters)")
    header = (f"# leasehold bench, {meta['date']} ({meta['profile']})\n\n"
              f"commit {meta['git_commit'][:12]}"
              f"{' (dirty tree)' if meta['git_dirty'] else ''}; {meta['machine']['nproc']} CPUs; "
              f"load average {' '.join(meta['machine']['loadavg_start'] or [])} at start, "
              f"{' '.join(meta['machine']['loadavg_end'] or [])} at end; nice {meta['nice']}; "
              f"{meta['seconds']} s.\n"
              f"Server: {where}. Baseline: {label}, same server, same run.\n"
              + ("" if set(results) in ({"node"}, {"etcd"}, {"renew"}, {"zookeeper"}) else
                 "Scaled figures (D=2s R=1.5s P=0.3s): failover and handover; the rest at "
                 "15s/10s/2s.\n") + "\n")
    text = header + table + "\n"
    if "scale" in results:
        text += "\n" + scale_markdown(results["scale"]) + "\n"
    if "shards" in results:
        text += "\n" + shards_markdown(results["shards"]) + "\n"
    if "renew" in results:
        text += "\n" + renew_markdown(results["renew"]) + "\n"
    if "node" in results:
        text += "\n" + node_markdown(results["node"]) + "\n"
    if "etcd" in results:
        text += "\n" + etcd_markdown(results["etcd"]) + "\n"
    if "zookeeper" in results:
        text += "\n" + zookeeper_markdown(results["zookeeper"]) + "\n"
    early = results.get("failover", {}).get("client-go", {}).get("before_expiry")
    if early:
        text += (f"\nclient-go took over before the lease could expire in {early} of "
                 f"{results['failover']['client-go']['after_expiry']['n']} crash failovers: its "
                 "followers compare the Lease record at 1 s resolution (LeaseLock.Get marshals "
                 "the record with metav1.Time, RFC 3339 seconds), so with P < 1 s a renewal in "
                 "the same second is no change and D counts from an older observation, up to "
                 "1 s early. At P >= 1 s (the default is 2 s) every renewal changes the second.\n")
    forbidden = meta.get("forbidden") or []
    if forbidden:
        text += (f"\n**{len(forbidden)} request(s) refused (403)**: "
                 + "; ".join(forbidden[:5]) + "\n")
    return text


def main():
    import argparse
    import json
    ap = argparse.ArgumentParser(description="bench/run's report of a saved results file")
    ap.add_argument("--plot", metavar="JSON", required=True,
                    help="a results file with a scale section: redraw its PNGs and its .md")
    args = ap.parse_args()
    doc = json.loads(Path(args.plot).read_text())
    if "scale" not in doc.get("results", {}):
        ap.error(f"{args.plot}: no scale section to plot (bench/run --only scale writes one)")
    from plots import plot_scale
    for p in plot_scale(doc, args.plot):
        print(f"wrote {p}")
    Path(args.plot).with_suffix(".md").write_text(render(doc))
    print(f"wrote {Path(args.plot).with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
