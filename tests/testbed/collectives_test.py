#!/usr/bin/env python3
"""HCL collectives across the emulated multi-cluster test bed.

Runs each given nccl-tests-style perf binary with one rank per emulated node
(K clusters x N nodes) and checks rank 0's report: one row per expected size,
#wrong 0 in every row (in-place alltoall: N/A, as nccl-tests),
"Out of bounds values : 0 OK", no failure from any rank, exit 0. With -H 1 the
transports column must say tcp and never shm (every node is its own host via
HCL_HOSTID); with --ofi PROVIDER every link goes through libfabric on that
provider, and the column must say ofi. After the run each rank prints its
qdisc counters, and the test checks that both fabrics carried data: fab0
inside clusters, wan0 between them (so libfabric's endpoints follow the
fabric choice too).

  collectives_test.py [--testbed PATH] [--clusters K] [--nodes N] [--ofi PROVIDER] --bin PERF_BINARY [--bin ...]

Exit 0 pass, 1 fail, 77 skip (not root, or namespaces not usable).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import bedtest
from bedtest import Checks

PERF_ARGS = ["-b", "8", "-e", "1M", "-f", "4", "-n", "2", "-w", "1", "-c", "1", "-H", "1"]
EXPECTED_ROWS = 9  # 8, 32, ..., 512K
MIN_FABRIC_BYTES = 64 * 1024

# Runs the binary, then prints this namespace's qdisc counters on one line.
WRAPPER = '"$0" "$@"; rc=$?; echo "TCSTATS $(tc -s -j qdisc show)"; exit $rc'


def table_rows(text):
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        f = line.split()
        if len(f) >= 13 and f[0].isdigit() and f[1].isdigit():
            rows.append(f)
    return rows


def qdisc_bytes(text):
    """{ifname: bytes sent through its root qdisc} from a TCSTATS line."""
    for line in text.splitlines():
        if line.startswith("TCSTATS "):
            try:
                return {q["dev"]: q.get("bytes", 0) for q in json.loads(line[len("TCSTATS "):]) if q.get("root")}
            except ValueError:
                return {}
    return {}


def libfabric_missing():
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        return "ldconfig is not there to look for libfabric.so.1"
    return None if re.search(r"\blibfabric\.so\.1 ", out) else "libfabric.so.1 is not installed (Debian: libfabric1)"


def run_one(c, testbed, binary, clusters, nodes, ofi=None):
    name = os.path.basename(binary)
    size = clusters * nodes
    with tempfile.TemporaryDirectory(prefix="hclbed-coll-") as logdir:
        t0 = time.monotonic()
        argv = [sys.executable, testbed, "run", "--clusters", str(clusters), "--nodes", str(nodes),
                "--fast", "1gbit", "--slow", "125mbit", "--timeout", "60", "--quiet", "--logdir", logdir]
        if ofi:
            argv += ["--env", "HCL_OFI_PROVIDER=" + ofi]
        argv += ["--", "sh", "-c", WRAPPER, binary] + PERF_ARGS
        res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        dt = time.monotonic() - t0
        logs = bedtest.read_rank_logs(logdir, size)
        m = re.search(r"run (hclbed-\S+):", res.stderr)
        run = m.group(1) if m else None

    report = logs[0]
    ok = c.check(res.returncode == 0, "%s: exit code %d\n%s\n%s" % (name, res.returncode, report, res.stderr))
    rows = table_rows(report)
    ok &= c.check(len(rows) == EXPECTED_ROWS, "%s: %d rows, want %d" % (name, len(rows), EXPECTED_ROWS))
    for f in rows:
        in_place_ok = f[12] == "0" or (name == "alltoall_perf" and f[12] == "N/A")
        ok &= c.check(f[8] == "0" and in_place_ok, "%s: size %s: #wrong %s / %s" % (name, f[0], f[8], f[12]))
        transports = f[14] if len(f) > 14 else ""
        want = "ofi" if ofi else "tcp"
        if int(f[0]) > 0:
            ok &= c.check(transports.split(",") == [want],
                          "%s: size %s: transports %r, want %s alone" % (name, f[0], transports, want))
    ok &= c.check(re.search(r"^# Out of bounds values : 0 OK$", report, re.M) is not None,
                  "%s: no 'Out of bounds values : 0 OK'" % name)
    for r, text in enumerate(logs):
        ok &= c.check("Test failure" not in text and "FAILED" not in text, "%s: rank %d reports a failure:\n%s"
                      % (name, r, text))
    sent = {"fab0": 0, "wan0": 0}
    for r, text in enumerate(logs):
        counters = qdisc_bytes(text)
        ok &= c.check(set(sent) <= set(counters), "%s: rank %d printed no qdisc counters" % (name, r))
        for dev in sent:
            sent[dev] += counters.get(dev, 0)
    if clusters > 1:
        ok &= c.check(sent["wan0"] >= MIN_FABRIC_BYTES, "%s: only %d bytes crossed wan0" % (name, sent["wan0"]))
    if nodes > 1:
        ok &= c.check(sent["fab0"] >= MIN_FABRIC_BYTES, "%s: only %d bytes on fab0" % (name, sent["fab0"]))
    ok &= c.check(run is not None and bedtest.leftovers(run) == [], "%s: run %s left namespaces" % (name, run))
    if run:
        bedtest.force_remove(run)
    last = rows[-1] if rows else None
    print("%-20s %s  %d rows  %.1fs  fab0 %.2f MB  wan0 %.2f MB%s"
          % (name, "ok  " if ok else "FAIL", len(rows), dt, sent["fab0"] / 1e6, sent["wan0"] / 1e6,
             "  (%s B: %s us, busbw %s GB/s, %s %s)" % (last[0], last[5], last[7], last[13], last[14])
             if last and len(last) > 14 else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--testbed", default=bedtest.DEFAULT_TESTBED)
    ap.add_argument("--clusters", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--bin", action="append", required=True, help="a perf binary (repeatable)")
    ap.add_argument("--ofi", help="every link over libfabric on this provider (HCL_OFI_PROVIDER)")
    a = ap.parse_args()
    bedtest.require_bed(a.testbed)
    if a.ofi and libfabric_missing():
        print("skipped: " + libfabric_missing())
        return 77
    c = Checks("collectives %dx%d" % (a.clusters, a.nodes))
    for binary in a.bin:
        if not c.check(os.access(binary, os.X_OK), "%s is not an executable" % binary):
            continue
        run_one(c, a.testbed, binary, a.clusters, a.nodes, a.ofi)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
