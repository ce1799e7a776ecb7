"""The scale section's pictures, drawn from a results document alone (bench/run after a run;
`bench/report.py --plot RESULTS.json` again from the committed data): Lease requests/min and
kube-apiserver CPU against replica count and against Lease count, leasehold beside client-go,
and the failover and handover distributions (CDF), alone and at the largest point.
Debian's python3-matplotlib (scripts/install-deps.sh), drawn off-screen (Agg)."""
from pathlib import Path

from scale_report import LABEL, biggest, takeover

COLOR = {"watch": "tab:blue", "poll": "tab:green", "client-go": "tab:red"}


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def growth(plt, scale, series, xlabel, title, path, idle_cpu):
    """Two panels (requests/min, kube-apiserver CPU) over `series`: [(x, leases, n)]."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode in scale["settings"]["modes"]:
        pts = []
        for x, leases, n in series:
            p = next((q for q in scale["points"] if q["mode"] == mode and q["leases"] == leases
                      and q["replicas_per_lease"] == n), None)
            if p:
                pts.append((x, p))
        if not pts:
            continue
        xs = [x for x, _ in pts]
        kw = dict(color=COLOR.get(mode), marker="o", label=LABEL.get(mode, mode))
        left.plot(xs, [p["lease_requests_per_min_total"] for _, p in pts], **kw)
        right.plot(xs, [p["apiserver"]["cpu_s_per_min"] for _, p in pts], **kw)
    xs = [x for x, _, _ in series]
    leases_of = {x: leases for x, leases, _ in series}
    left.plot(xs, [30.0 * leases_of[x] for x in xs], color="grey", linestyle="--",
              label="60/P per Lease (P = 2 s)")
    right.axhline(idle_cpu, color="grey", linestyle=":", label="idle (no sidecars)")
    for ax, ylabel in ((left, "Lease API requests per minute (all replicas)"),
                       (right, "kube-apiserver CPU seconds per minute")):
        ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs])
        ax.minorticks_off()
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    left.set_yscale("log")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def cdfs(plt, scale, path):
    from matplotlib.ticker import FuncFormatter
    L, n = biggest(scale)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, kind, what in ((axes[0], "kill", "crash failover (kill -9): signal to new leader"),
                           (axes[1], "term", "handover (SIGTERM): signal to new leader")):
        for mode in scale["settings"]["modes"]:
            for where, style in (("alone", "-"), ("loaded", "--")):
                t = takeover(scale, mode, where, kind)
                if not t:
                    continue
                v = sorted(r["t"] * 1000 for r in t["runs"])
                ys = [(i + 1) / len(v) for i in range(len(v))]
                label = f"{LABEL.get(mode, mode)}, " + ("3 sidecars alone" if where == "alone"
                                                        else f"beside {L * n} sidecars")
                ax.step(v, ys, where="post", linestyle=style, color=COLOR.get(mode),
                        marker=".", label=label)
        ax.set_xscale("log")
        plain = FuncFormatter(lambda v, _pos: f"{v:g}")
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(plain)
        ax.tick_params(axis="x", which="minor", labelsize=7)
        ax.set_xlabel("milliseconds (log)")
        ax.set_ylabel("fraction of repetitions")
        ax.set_title(what, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Takeovers of one Lease, 3 replicas at D=2s R=1.5s P=0.3s "
                 f"({scale['settings']['reps']} repetitions each)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def picture_paths(json_path):
    p = Path(json_path)
    return [p.with_name(f"{p.stem}-{what}.png") for what in ("replicas", "leases", "takeover")]


def plot_scale(doc, json_path):
    """Writes <stem>-replicas.png, -leases.png and -takeover.png next to the results file;
    returns their paths."""
    plt = pyplot()
    scale = doc["results"]["scale"]
    sc = scale["settings"]
    meta = doc.get("meta", {})
    where = (f"{meta.get('date', '')}, commit {meta.get('git_commit', '')[:12]}, "
             f"{sc['window_s']} s windows, 15s/10s/2s")
    idle = scale.get("idle", {}).get("apiserver", {}).get("cpu_s_per_min", 0.0)
    replicas, leases, takeovers = picture_paths(json_path)
    growth(plt, scale, [(n, 1, n) for a, n in sc["points"] if a == 1],
           "replicas on one Lease (log)", f"Growth with replicas on one Lease ({where})",
           replicas, idle)
    per = sc["per_lease"]
    growth(plt, scale, [(a, a, per) for a, n in sc["points"] if n == per],
           f"Leases x {per} replicas (log)", f"Growth with Leases, {per} replicas each ({where})",
           leases, idle)
    cdfs(plt, scale, takeovers)
    return [replicas, leases, takeovers]
