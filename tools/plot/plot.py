#!/usr/bin/env python3
"""Plots nccl-tests JSON outputs (-J) as one PNG: bus bandwidth and time per
call against message size, one line per run.

  python3 tools/plot/plot.py out.png run1.json [run2.json ...] [--labels a,b] [--title T]

It also reads the --json output of tools/compare/compare.py: one line per peer
there, for the collective chosen with --coll (default: the first one).
Exit status 77 means matplotlib is missing (apt-get install python3-matplotlib)."""

import argparse
import json
import os
import sys
from pathlib import Path

SKIP = 77


def import_pyplot():
    """matplotlib.pyplot with the Agg backend. Debian's python3-matplotlib
    lives in the system interpreter; when another python3 runs this script
    without matplotlib, run it again with the system one."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system) \
                and not os.environ.get("HCL_PLOT_REEXEC"):
            os.environ["HCL_PLOT_REEXEC"] = "1"
            os.execv(system, [system] + sys.argv)
        print("plot.py: matplotlib is not installed (apt-get install python3-matplotlib)", file=sys.stderr)
        sys.exit(SKIP)


def size_label(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:g}{unit}"
    return f"{n:g}"


def _half(result, in_place):
    order = ("in_place", "out_of_place") if in_place else ("out_of_place", "in_place")
    for key in order:
        half = result.get(key)
        if isinstance(half, dict):
            return half
    return None


def series_from_nccl(doc, in_place):
    """[(size, busbw GB/s, time us)] from an nccl-tests JSON document."""
    points = []
    for r in doc.get("results", []):
        half = _half(r, in_place)
        if not half:
            continue
        t = half.get("time", half.get("cpu_time"))
        bw = half.get("bus_bw")
        if isinstance(t, (int, float)) and isinstance(bw, (int, float)):
            points.append((int(r["size"]), float(bw), float(t)))
    return sorted(points)


def load_series(path, label, coll, in_place):
    """[(label, points, collective name or None)] for one file."""
    doc = json.loads(Path(path).read_text())
    if doc.get("format", "").startswith("hcl-compare/"):
        out = []
        for peer, colls in doc.get("results", {}).items():
            name = coll or next(iter(colls))
            rows = colls.get(name, [])
            pts = sorted((r["size"], r["busbw"], r["time_us"]) for r in rows
                         if r.get("busbw") is not None and r.get("time_us") is not None)
            if pts:
                out.append((f"{label}: {peer}" if label else peer, pts, name))
        return out
    names = {r.get("experiment_name") for r in doc.get("results", []) if r.get("experiment_name")}
    return [(label or Path(path).stem, series_from_nccl(doc, in_place), names.pop() if len(names) == 1 else None)]


def plot(plt, out, series, title):
    from matplotlib.ticker import FixedLocator, NullLocator
    fig, (ax_bw, ax_t) = plt.subplots(1, 2, figsize=(13, 5))
    sizes = sorted({p[0] for _, pts, _ in series for p in pts})
    for label, pts, _ in series:
        xs = [p[0] for p in pts]
        ax_bw.plot(xs, [p[1] for p in pts], marker="o", markersize=3, label=label)
        ax_t.plot(xs, [p[2] for p in pts], marker="o", markersize=3, label=label)
    # Readable x ticks: at most about 12 labelled sizes, from the smallest.
    ticks = sizes[::max(1, (len(sizes) + 11) // 12)]
    for ax in (ax_bw, ax_t):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(ticks, [size_label(s) for s in ticks], rotation=45)
        ax.set_xlabel("message size (bytes)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize="small")
    ax_bw.set_ylabel("bus bandwidth (GB/s)")
    ax_bw.set_title("Bus bandwidth")
    ax_bw.set_ylim(bottom=0)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("time per call (µs)")
    ax_t.set_title("Time")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="PNG file to write")
    ap.add_argument("inputs", nargs="+", help="nccl-tests -J files, or compare.py --json files")
    ap.add_argument("--labels", help="comma-separated labels, one per input (default: file names)")
    ap.add_argument("--title", help="figure title")
    ap.add_argument("--coll", help="collective to plot from compare.py JSON (default: the first)")
    ap.add_argument("--in-place", action="store_true", help="plot the in-place column (default: out-of-place)")
    a = ap.parse_args(argv)
    plt = import_pyplot()
    labels = a.labels.split(",") if a.labels else []
    if labels and len(labels) != len(a.inputs):
        ap.error(f"--labels has {len(labels)} names for {len(a.inputs)} inputs")
    series = []
    for i, path in enumerate(a.inputs):
        try:
            series += load_series(path, labels[i] if labels else None, a.coll, a.in_place)
        except (OSError, ValueError, KeyError) as e:
            print(f"plot.py: cannot read {path}: {e}", file=sys.stderr)
            return 1
    series = [s for s in series if s[1]]
    if not series:
        print("plot.py: no results to plot", file=sys.stderr)
        return 1
    colls = {s[2] for s in series if s[2]}
    title = a.title or (f"{colls.pop()}" if len(colls) == 1 else "collective performance")
    plot(plt, a.out, series, title)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
