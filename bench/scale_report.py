"""The scale section's goals (ratios from the same run), its markdown tables and the output check
of --quick."""
from pathlib import Path

from settings import GOALS, SCALED

LABEL = {"watch": "leasehold", "poll": "leasehold poll", "client-go": "client-go"}


def find(scale, mode, leases, n):
    return next((p for p in scale.get("points", []) if p["mode"] == mode and
                 p["leases"] == leases and p["replicas_per_lease"] == n), None)


def biggest(scale):
    pts = scale["settings"]["points"]
    return max(pts, key=lambda p: p[0] * p[1])


def baseline_of(scale):
    return next((m for m in scale["settings"]["modes"] if m != "watch"), None)


def takeover(scale, mode, where, kind):
    if where == "alone":
        return scale.get("takeover_quiet", {}).get(mode, {}).get(kind)
    p = next((x for x in scale.get("points", []) if x["mode"] == mode and
              "takeover_loaded" in x), None)
    return p["takeover_loaded"].get(kind) if p else None


def follower_reads(scale, mode):
    """etcd reads per minute each follower causes: the slope of kube-apiserver's etcd reads for
    Leases (etcd_requests_total{resource="leases"}: get, list, getCurrentResourceVersion) over
    the replica series on one Lease (largest minus smallest point, per follower added)."""
    ns = sorted(n for leases, n in scale["settings"]["points"] if leases == 1)
    if len(ns) < 2:
        return None
    lo, hi = find(scale, mode, 1, ns[0]), find(scale, mode, 1, ns[-1])
    key = "lease_etcd_reads_per_min"
    if not lo or not hi or lo["apiserver"].get(key) is None or hi["apiserver"].get(key) is None:
        return None
    return (hi["apiserver"][key] - lo["apiserver"][key]) / (ns[-1] - ns[0])


def scale_goals(scale):
    """{name: (value, met, text)}; value None when the run lacks what it needs."""
    B = baseline_of(scale)
    L, n = biggest(scale)
    out = {}
    w, b = find(scale, "watch", L, n), find(scale, B, L, n)
    idle = scale.get("idle", {}).get("apiserver", {}).get("cpu_s_per_min", 0)
    if w and b:
        r = w["apiserver"]["cpu_s_per_min"] / b["apiserver"]["cpu_s_per_min"]
        above = (w["apiserver"]["cpu_s_per_min"] - idle) / \
            max(1e-9, b["apiserver"]["cpu_s_per_min"] - idle)
        out["scale_apiserver_cpu"] = (
            r, r <= GOALS["scale_apiserver_cpu_ratio"],
            f"kube-apiserver CPU at {L * n} sidecars, leasehold/client-go: {r:.3f} "
            f"({w['apiserver']['cpu_s_per_min']:.2f} / {b['apiserver']['cpu_s_per_min']:.2f} "
            f"CPU s/min; above the idle {idle:.2f}: {above:.3f})")
    else:
        out["scale_apiserver_cpu"] = (None, False, "missing")
    fw, fb = follower_reads(scale, "watch"), follower_reads(scale, B)
    gets = sum(p["follower_get_list_in_window"] for p in scale.get("points", [])
               if p["mode"] == "watch")
    if fw is not None:
        ok = fw <= GOALS["scale_follower_etcd_reads"] and gets == 0
        out["scale_follower_etcd_reads"] = (
            fw, ok, f"etcd reads of Leases/min per follower (slope over the replica series): leasehold "
            f"{fw:.3f}, client-go {fb:.2f}" + (f" (ratio {fw / fb:.4f})" if fb else "")
            + f"; GET/LIST by leasehold followers in every window: {gets}")
    else:
        out["scale_follower_etcd_reads"] = (None, False, "needs two replica counts on 1 Lease")
    for kind, name in (("kill", "failover"), ("term", "handover")):
        a, lo = takeover(scale, "watch", "alone", kind), takeover(scale, "watch", "loaded", kind)
        if a and lo:
            d = lo["t"]["p50"] - a["t"]["p50"]
            ba, bl = takeover(scale, B, "alone", kind), takeover(scale, B, "loaded", kind)
            bd = (bl["t"]["p50"] - ba["t"]["p50"]) if ba and bl else None
            out[f"scale_{name}_delta"] = (
                d, d <= GOALS["scale_takeover_delta_s"],
                f"{name} p50 at {L * n + 3} vs 3 sidecars: leasehold {lo['t']['p50'] * 1000:.1f} "
                f"vs {a['t']['p50'] * 1000:.1f} ms ({d * 1000:+.1f} ms)"
                + (f"; client-go {bl['t']['p50'] * 1000:.1f} vs {ba['t']['p50'] * 1000:.1f} ms "
                   f"({bd * 1000:+.1f} ms)" if bd is not None else ""))
        else:
            out[f"scale_{name}_delta"] = (None, False, "missing")
    ratios = [p["per_lease_ratio_to_60_over_P"] for p in scale.get("points", [])
              if p["mode"] == "watch"]
    bratios = [p["per_lease_ratio_to_60_over_P"] for p in scale.get("points", [])
               if p["mode"] == B]
    if ratios:
        lo_r, hi_r = min(ratios), max(ratios)
        tol = GOALS["scale_per_lease_tolerance"]
        out["scale_per_lease"] = (
            hi_r, 1 - tol <= lo_r and hi_r <= 1 + tol,
            f"Lease requests/min per Lease / (60/P = 30): leasehold {lo_r:.3f} .. {hi_r:.3f} "
            f"over every point; client-go {min(bratios):.2f} .. {max(bratios):.2f}"
            if bratios else "")
    else:
        out["scale_per_lease"] = (None, False, "missing")
    return out


def verdict(ok):
    return "met" if ok else "**MISSED**"


def ms(x):
    return "n/a" if x is None else f"{x * 1000:.1f}"


def scale_markdown(scale):
    sc = scale["settings"]
    B = baseline_of(scale)
    L, n = biggest(scale)
    md = [f"## Scale: {', '.join(f'{a}x{b}' for a, b in sc['points'])} (Leases x replicas), "
          f"{sc['window_s']} s window per point and implementation, 15s/10s/2s", ""]
    g = scale_goals(scale)
    rows = [("kube-apiserver CPU at the largest point, leasehold/client-go", "scale_apiserver_cpu",
             lambda v: f"{v:.3f}", f"<= {GOALS['scale_apiserver_cpu_ratio']}"),
            ("etcd reads/min caused by each follower", "scale_follower_etcd_reads",
             lambda v: f"{v:.3f}", f"0 (<= {GOALS['scale_follower_etcd_reads']}, no GET/LIST)"),
            ("crash failover p50, largest point minus alone", "scale_failover_delta",
             lambda v: f"{v * 1000:+.1f} ms", "<= +10 ms"),
            ("SIGTERM handover p50, largest point minus alone", "scale_handover_delta",
             lambda v: f"{v * 1000:+.1f} ms", "<= +10 ms"),
            ("Lease requests/min per Lease / (60/P), worst point", "scale_per_lease",
             lambda v: f"{v:.3f}", f"1 +- {GOALS['scale_per_lease_tolerance']}")]
    md += ["| goal | value | target | | from the same run |", "|---|---|---|---|---|"]
    for what, key, fmt, target in rows:
        v, ok, text = g[key]
        md.append(f"| {what} | {fmt(v) if v is not None else 'n/a'} | {target} | "
                  f"{verdict(ok)} | {text} |")
    idle = scale.get("idle")
    if idle:
        md += ["", f"Idle control plane (no sidecars, {idle['minutes'] * 60:.0f} s): "
               f"kube-apiserver {idle['apiserver']['cpu_s_per_min']:.2f} CPU s/min, "
               f"{idle['apiserver']['rss_kB'] / 1024:.0f} MB; etcd "
               f"{idle['etcd']['cpu_s_per_min']:.2f} CPU s/min, reads "
               f"{idle['etcd']['reads_per_min']:.1f}/min, writes (Txn) "
               f"{idle['etcd']['txns_per_min']:.1f}/min (reads for Leases: "
               f"{idle['apiserver']['lease_etcd_reads_per_min']:.1f}/min). etcd reads are its Range calls (a GET "
               "the watch cache does not answer); writes its Txn calls (a create or update)."]
    md += ["", "| Leases x replicas | who | all Leases led after | Lease requests/min (by verb) | "
           "per Lease | kube-apiserver CPU s/min, RSS | etcd CPU s/min, RSS | etcd reads / writes "
           "per min (reads for Leases) | sidecars: RSS total (each), CPU s/min |",
           "|---|---|---|---|---|---|---|---|---|"]
    for p in scale["points"]:
        verbs = ", ".join(f"{v} {c:.0f}" for v, c in p["lease_requests_per_min"].items())
        e, a, s = p["etcd"], p["apiserver"], p["sidecars"]
        md.append(
            f"| {p['leases']} x {p['replicas_per_lease']} | {LABEL.get(p['mode'], p['mode'])} | "
            f"{p['startup_all_led_s']:.2f} s | {p['lease_requests_per_min_total']:.0f} ({verbs}) | "
            f"{p['per_lease_per_min']:.1f} | {a['cpu_s_per_min']:.2f}, {a['rss_kB'] / 1024:.0f} MB"
            f" | {e['cpu_s_per_min']:.2f}, {e['rss_kB'] / 1024:.0f} MB | "
            f"{e['reads_per_min']:.0f} / {e['txns_per_min']:.0f} "
            f"({a['lease_etcd_reads_per_min']:.1f}) | "
            f"{s['rss_kB'] / 1024:.0f} MB ({s['rss_kB_each_mean'] / 1024:.1f}), "
            f"{s['cpu_s_per_min']:.2f} |")
    changed = [f"{p['mode']} {p['leases']}x{p['replicas_per_lease']}" for p in scale["points"]
               if p.get("leader_changed_leases")]
    if changed:
        md += ["", f"The leader changed inside the window in: {', '.join(changed)}."]
    md += ["", f"Takeovers of one more Lease (3 replicas, D={SCALED['D']:g}s R={SCALED['R']:g}s "
           f"P={SCALED['P']:g}s), {sc['reps']} repetitions: alone, and beside the running "
           f"{L} x {n} point of the same implementation (time from the signal to the new leader's "
           "/leader true; ms p50 / p90 / max):", "",
           "| takeover | who | alone | beside the largest point | p50 difference |",
           "|---|---|---|---|---|"]
    for kind, what in (("kill", "crash failover (kill -9)"), ("term", "handover (SIGTERM)")):
        for mode in sc["modes"]:
            a, lo = takeover(scale, mode, "alone", kind), takeover(scale, mode, "loaded", kind)
            if not a or not lo:
                continue
            f = lambda t: f"{ms(t['p50'])} / {ms(t['p90'])} / {ms(t['max'])}"  # noqa: E731
            md.append(f"| {what} | {LABEL.get(mode, mode)} | {f(a['t'])} | {f(lo['t'])} | "
                      f"{(lo['t']['p50'] - a['t']['p50']) * 1000:+.1f} ms |")
    md.append("")
    if B is None:
        md.append("(no baseline in this run)")
    return "\n".join(md)


# ----------------------------------------------------------------------------------------------
# The output check of --quick (ctest bench.scale_quick): every field, so that it can fail


POINT_FIELDS = ("startup_all_led_s", "lease_requests_per_min_total", "per_lease_per_min",
                "per_lease_ratio_to_60_over_P", "apiserver.cpu_s_per_min", "apiserver.rss_kB",
                "apiserver.lease_etcd_reads_per_min", "etcd.cpu_s_per_min", "etcd.rss_kB",
                "etcd.reads_per_min", "etcd.puts_per_min", "etcd.txns_per_min",
                "etcd.mvcc_ranges_per_min", "sidecars.cpu_s_per_min", "sidecars.rss_kB",
                "follower_get_list_in_window")


def field(d, path):
    for part in path.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def missing_fields(scale, pictures=()):
    """What a scale result lacks: every point of every mode with numbers in every field, the
    takeovers alone and under load with every repetition, the goals computable, the PNGs."""
    bad = []
    sc = scale.get("settings", {})
    modes = sc.get("modes", [])
    for leases, n in sc.get("points", []):
        for mode in modes:
            p = next((x for x in scale.get("points", []) if x["mode"] == mode and
                      x["leases"] == leases and x["replicas_per_lease"] == n), None)
            if p is None:
                bad.append(f"point {mode} {leases}x{n} missing")
                continue
            for f in POINT_FIELDS:
                if not isinstance(field(p, f), (int, float)):
                    bad.append(f"point {mode} {leases}x{n}: {f} = {field(p, f)!r}")
            if not p.get("lease_requests_per_min"):
                bad.append(f"point {mode} {leases}x{n}: no Lease requests counted")
    for mode in modes:
        quiet = scale.get("takeover_quiet", {}).get(mode, {})
        loaded = next((x.get("takeover_loaded") for x in scale.get("points", [])
                       if x["mode"] == mode and "takeover_loaded" in x), None) or {}
        for where, t in (("alone", quiet), ("loaded", loaded)):
            for kind in ("kill", "term"):
                runs = t.get(kind, {}).get("runs", [])
                if len(runs) != sc.get("reps"):
                    bad.append(f"takeover {kind} {mode} {where}: {len(runs)} of "
                               f"{sc.get('reps')} repetitions")
    for name, (value, _ok, _text) in scale_goals(scale).items():
        if value is None:
            bad.append(f"goal {name}: not computable")
    for p in pictures:
        if not Path(p).is_file() or Path(p).stat().st_size < 1000:
            bad.append(f"picture {p} missing or empty")
    return bad

