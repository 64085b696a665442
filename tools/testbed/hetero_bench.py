#!/usr/bin/env python3
"""Heterogeneous-link benchmark on the emulated multi-cluster test bed.

Runs nccl-tests-style perf binaries across K clusters x N nodes (see
docs/testbed.md), once with the flat ring forced (HCL_ALGO=ring) and once with
HCL's own per-size choice, and compares the two. For each case it writes a
markdown table:

  size | ring busbw | chosen algorithm | chosen busbw | chosen/ring |
  model busbw | measured/model

where "model busbw" is the cost model's estimate for the chosen algorithm
(hcl_model_us in the perf binary's JSON) turned into a bus bandwidth with the
nccl-tests factor (allreduce 2(n-1)/n, allgather and reducescatter (n-1)/n).
It also plots ring against chosen busbw for the 2-cluster allreduce with
tools/plot/plot.py.

Cases (default): 2 x 2 all_reduce, all_gather, reduce_scatter at 4..64 MiB;
3 x 2 all_reduce at 4..32 MiB. --fast 1gbit --slow 125mbit.

  sudo python3 tools/testbed/hetero_bench.py --build build [--out DIR]
      [--png docs/img/hetero_allreduce.png] [--markdown FILE] [--quick]
  python3 tools/testbed/hetero_bench.py --build build --out DIR --report-only

Needs root (the bed builds network namespaces). Python 3 standard library;
the plot needs matplotlib (skipped with a note when it is missing).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "testbed.py")
PLOT = os.path.join(HERE, "..", "plot", "plot.py")

# (name, binary, clusters, nodes, min bytes, max bytes)
CASES = [
    ("allreduce_2x2", "all_reduce_perf", 2, 2, "4M", "64M"),
    ("allgather_2x2", "all_gather_perf", 2, 2, "4M", "64M"),
    ("reducescatter_2x2", "reduce_scatter_perf", 2, 2, "4M", "64M"),
    ("allreduce_3x2", "all_reduce_perf", 3, 2, "4M", "32M"),
]
QUICK_CASES = [
    ("allreduce_2x2", "all_reduce_perf", 2, 2, "4M", "16M"),
    ("allreduce_3x2", "all_reduce_perf", 3, 2, "4M", "8M"),
]


def busbw_factor(binary, n):
    if binary.startswith("all_reduce"):
        return 2.0 * (n - 1) / n
    if binary.startswith(("all_gather", "reduce_scatter")):
        return (n - 1) / n
    return 1.0


def perf_args(lo, hi, json_path):
    return ["-b", lo, "-e", hi, "-f", "2", "-n", "2", "-w", "1", "-H", "1", "-J", json_path]


def run_case(a, binary, clusters, nodes, lo, hi, json_path, algo):
    """Runs one perf binary on the bed; returns (exit code, seconds, rank 0's log)."""
    env = ["-e", "HCL_ALGO=ring"] if algo == "ring" else []
    with tempfile.TemporaryDirectory(prefix="hclbed-hetero-") as logdir:
        argv = [sys.executable, TESTBED, "run", "--clusters", str(clusters), "--nodes", str(nodes),
                "--fast", a.fast, "--slow", a.slow, "--timeout", str(a.timeout), "--quiet",
                "--logdir", logdir] + env + ["--", os.path.join(a.build, "perf", binary)] \
            + perf_args(lo, hi, json_path)
        # Only rank 0 writes the JSON file; the others get their own path.
        argv[-1] = json_path.replace(".json", "{rank}.json")
        t0 = time.monotonic()
        res = subprocess.run(argv, capture_output=True, text=True)
        dt = time.monotonic() - t0
        try:
            with open(os.path.join(logdir, "rank0.log")) as f:
                log0 = f.read()
        except OSError:
            log0 = ""
    if res.returncode != 0:
        sys.stderr.write(res.stderr[-3000:] + log0[-3000:])
    return res.returncode, dt, log0


def load_rows(path):
    """{size: (busbw GB/s, time us, algorithm, model us)} from a -J file (out-of-place)."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for r in doc.get("results", []):
        half = r.get("out_of_place") or {}
        t = half.get("time", half.get("cpu_time"))
        out[int(r["size"])] = (float(half.get("bus_bw", 0)), float(t), r.get("hcl_algorithm", "?"),
                               r.get("hcl_model_us"))
    return out


def mib(n):
    return "%d MiB" % (n >> 20) if n >= 1 << 20 else "%d KiB" % (n >> 10)


def table(binary, n, ring, chosen):
    factor = busbw_factor(binary, n)
    # Bandwidths in MB/s (GB/s x 1000): at 125 Mbit/s GB/s shows too few digits.
    lines = ["| size | ring busbw (MB/s) | chosen algorithm | chosen busbw (MB/s) | chosen / ring "
             "| model busbw (MB/s) | measured / model |",
             "|---:|---:|:---|---:|---:|---:|---:|"]
    summary = []
    for size in sorted(set(ring) & set(chosen)):
        rbw = ring[size][0]
        cbw, _, algo, model_us = chosen[size]
        ratio = cbw / rbw if rbw > 0 else float("nan")
        if isinstance(model_us, (int, float)) and model_us > 0:
            mbw = size / (model_us * 1e-6) / 1e9 * factor
            mcol, mratio = "%.1f" % (mbw * 1e3), "%.2f" % (cbw / mbw)
            mr = cbw / mbw
        else:
            mcol, mratio, mr = "n/a", "n/a", None
        lines.append("| %s | %.1f | %s | %.1f | %.2f | %s | %s |"
                     % (mib(size), rbw * 1e3, algo, cbw * 1e3, ratio, mcol, mratio))
        summary.append((size, ratio, mr))
    return "\n".join(lines), summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="build directory with perf/<binary>")
    ap.add_argument("--out", help="directory for the JSON files and the table (default: a new temporary one)")
    ap.add_argument("--png", default="docs/img/hetero_allreduce.png", help="plot of the 2 x 2 allreduce")
    ap.add_argument("--markdown", help="also write the tables to this file")
    ap.add_argument("--fast", default="1gbit")
    ap.add_argument("--slow", default="125mbit")
    ap.add_argument("--timeout", type=int, default=240, help="per bed run, seconds")
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run of about a minute)")
    ap.add_argument("--cases", help="comma-separated subset of the case names")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: rebuild the tables and the plot from the JSON files in --out")
    a = ap.parse_args()
    if a.report_only and not a.out:
        ap.error("--report-only needs --out")
    if os.geteuid() != 0 and not a.report_only:
        print("hetero_bench.py: needs root (network namespaces)", file=sys.stderr)
        return 77
    out = a.out or tempfile.mkdtemp(prefix="hetero-bench-")
    os.makedirs(out, exist_ok=True)
    cases = QUICK_CASES if a.quick else CASES
    if a.cases:
        wanted = set(a.cases.split(","))
        cases = [c for c in cases if c[0] in wanted]
    t_all = time.monotonic()
    md = ["Test bed: --fast %s --slow %s; perf args -b LO -e HI -f 2 -n 2 -w 1 -H 1 -J; "
          "busbw of the out-of-place column." % (a.fast, a.slow), ""]
    failures = 0
    worst = []
    for name, binary, k, nnodes, lo, hi in cases:
        results = {}
        for algo in ("ring", "chosen"):
            if a.report_only:
                path = os.path.join(out, "%s_%s.json" % (name, algo))
                if os.path.exists(path):
                    results[algo] = load_rows(path)
                continue
            path = os.path.join(out, "%s_%s.json" % (name, algo))
            for p in (path, path + ".0"):
                if os.path.exists(p):
                    os.unlink(p)
            rc, dt, log0 = run_case(a, binary, k, nnodes, lo, hi, path.replace(".json", "_r.json"), algo)
            # rank 0 wrote <name>_<algo>_r0.json
            produced = path.replace(".json", "_r0.json")
            print("%-18s %-6s exit %d  %.1fs" % (name, algo, rc, dt), flush=True)
            if rc != 0 or not os.path.exists(produced):
                failures += 1
                break
            os.replace(produced, path)
            for r in range(1, k * nnodes):
                extra = path.replace(".json", "_r%d.json" % r)
                if os.path.exists(extra):
                    os.unlink(extra)
            results[algo] = load_rows(path)
        if len(results) != 2:
            md += ["### %s: failed" % name, ""]
            continue
        text, summary = table(binary, k * nnodes, results["ring"], results["chosen"])
        md += ["### %s (%s, %d clusters x %d nodes, %s..%s)" % (name, binary, k, nnodes, lo, hi), "", text, ""]
        worst.append((name, min(s[1] for s in summary),
                      min((s[2] for s in summary if s[2] is not None), default=None)))
    if not a.report_only:
        md.append("Total bench time: %.0f s." % (time.monotonic() - t_all))
    report = "\n".join(md) + "\n"
    print(report)
    with open(os.path.join(out, "hetero_bench.md"), "w") as f:
        f.write(report)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(report)
    for name, r, m in worst:
        print("%-18s min chosen/ring %.2f (target 1.8)  min measured/model %s (target 0.85)"
              % (name, r, "%.2f" % m if m is not None else "n/a"))
    ring_json = os.path.join(out, "allreduce_2x2_ring.json")
    chosen_json = os.path.join(out, "allreduce_2x2_chosen.json")
    if a.png and os.path.exists(ring_json) and os.path.exists(chosen_json):
        os.makedirs(os.path.dirname(a.png) or ".", exist_ok=True)
        res = subprocess.run([sys.executable, PLOT, a.png, ring_json, chosen_json,
                              "--labels", "HCL_ALGO=ring,HCL choice",
                              "--title", "all_reduce, 2 clusters x 2 nodes, %s fabric / %s between clusters"
                              % (a.fast, a.slow)])
        if res.returncode == 77:
            print("matplotlib missing: no plot")
        elif res.returncode != 0:
            failures += 1
    print("results in %s" % out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
