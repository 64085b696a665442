#!/usr/bin/env python3
"""Heterogeneous links on the emulated test bed: the right NIC per pair and
the hierarchical allreduce where the links call for it.

On K x N (default 2 x 2, --fast 1gbit --slow 125mbit) runs all_reduce_perf
at 16 MiB with HCL_DEBUG=INFO HCL_DEBUG_SUBSYS=NET and checks from every
rank's log:

  - each rank reports a link to every other rank ("rank A -> rank B via ...");
  - a pair inside one cluster uses fabric 'cluster<k>' over fab0 on both ends,
    a pair across clusters fabric 'wan' over wan0;
  - rank 0's -H column says "hier" for the 16 MiB allreduce.

Then the same with HCL_ALGO=ring, whose row must say "ring".

  hetero_test.py [--testbed PATH] [--clusters K] [--nodes N] --bin build/perf/all_reduce_perf

Exit 0 pass, 1 fail, 77 skip (not root, or namespaces not usable).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import bedtest
from bedtest import Checks

SIZE = 16 << 20
PERF_ARGS = ["-b", str(SIZE), "-e", str(SIZE), "-n", "1", "-w", "0", "-c", "1", "-H", "1"]
# "... [0] HCL INFO INIT|NET rank 0 -> rank 2 via tcp 10.20.1.1:40083 via wan0: different hosts
#  ('c0n0', 'c1n0'), fabric 'wan' (ethernet, 125 Mbit/s): rank 0 wan0 -> rank 2 wan0"
LINK_RE = re.compile(r"HCL INFO \S*NET\S* rank (\d+) -> rank (\d+) via (\S+) .*?fabric '([^']*)'"
                     r".*: rank (\d+) (\S+) -> rank (\d+) (\S+)\s*$")


def run_bed(testbed, clusters, nodes, binary, env):
    size = clusters * nodes
    with tempfile.TemporaryDirectory(prefix="hclbed-hetero-") as logdir:
        argv = [sys.executable, testbed, "run", "--clusters", str(clusters), "--nodes", str(nodes),
                "--fast", "1gbit", "--slow", "125mbit", "--timeout", "60", "--quiet", "--logdir", logdir]
        for kv in env:
            argv += ["-e", kv]
        argv += ["--", binary] + PERF_ARGS
        res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        logs = bedtest.read_rank_logs(logdir, size)
    m = re.search(r"run (hclbed-\S+):", res.stderr)
    return res, logs, (m.group(1) if m else None)


def algorithm_at(report, size):
    for line in report.splitlines():
        f = line.split()
        if len(f) >= 15 and f[0] == str(size) and f[1].isdigit():
            return f[13]
    return None


def cleanup(c, run, what):
    c.check(run is not None and bedtest.leftovers(run) == [], "%s: run %s left namespaces" % (what, run))
    if run:
        bedtest.force_remove(run)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--testbed", default=bedtest.DEFAULT_TESTBED)
    ap.add_argument("--clusters", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--bin", required=True, help="all_reduce_perf")
    a = ap.parse_args()
    bedtest.require_bed(a.testbed)
    c = Checks("hetero %dx%d" % (a.clusters, a.nodes))
    if not c.check(os.access(a.bin, os.X_OK), "%s is not an executable" % a.bin):
        return c.done()
    size = a.clusters * a.nodes

    t0 = time.monotonic()
    res, logs, run = run_bed(a.testbed, a.clusters, a.nodes, a.bin, ["HCL_DEBUG=INFO", "HCL_DEBUG_SUBSYS=NET"])
    cleanup(c, run, "chosen")
    c.check(res.returncode == 0, "exit code %d\n%s\n%s" % (res.returncode, logs[0][-4000:], res.stderr[-2000:]))
    pairs = 0
    for r, text in enumerate(logs):
        seen = set()
        for line in text.splitlines():
            m = LINK_RE.search(line)
            if not m:
                continue
            src, dst = int(m.group(1)), int(m.group(2))
            transport, fabric = m.group(3), m.group(4)
            if not c.check(src == r, "rank %d logs a link of rank %d: %s" % (r, src, line)):
                continue
            seen.add(dst)
            same = src // a.nodes == dst // a.nodes
            want_fabric = "cluster%d" % (src // a.nodes) if same else "wan"
            want_if = "fab0" if same else "wan0"
            ends = {int(m.group(5)): m.group(6), int(m.group(7)): m.group(8)}
            c.check(transport == "tcp", "rank %d -> %d: transport %s, want tcp" % (src, dst, transport))
            c.check(fabric == want_fabric, "rank %d -> %d: fabric '%s', want '%s'\n%s"
                    % (src, dst, fabric, want_fabric, line))
            c.check(ends.get(src) == want_if and ends.get(dst) == want_if,
                    "rank %d -> %d: interfaces %s, want %s on both ends\n%s" % (src, dst, ends, want_if, line))
            pairs += 1
        c.check(seen == set(range(size)) - {r}, "rank %d reports links to %s, want every other rank:\n%s"
                % (r, sorted(seen), text[-3000:]))
    chosen = algorithm_at(logs[0], SIZE)
    c.check(chosen == "hier", "16 MiB allreduce ran %r, want 'hier'\n%s" % (chosen, logs[0][-3000:]))

    res, logs, run = run_bed(a.testbed, a.clusters, a.nodes, a.bin, ["HCL_ALGO=ring"])
    cleanup(c, run, "ring")
    c.check(res.returncode == 0, "HCL_ALGO=ring: exit code %d\n%s\n%s"
            % (res.returncode, logs[0][-4000:], res.stderr[-2000:]))
    forced = algorithm_at(logs[0], SIZE)
    c.check(forced == "ring", "HCL_ALGO=ring: 16 MiB allreduce ran %r, want 'ring'" % forced)
    print("links checked: %d (each rank to every other); 16 MiB allreduce: %s, with HCL_ALGO=ring: %s; %.1fs"
          % (pairs, chosen, forced, time.monotonic() - t0))
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
