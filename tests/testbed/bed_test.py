#!/usr/bin/env python3
"""Tests of the emulated multi-cluster test bed itself (tools/testbed/testbed.py).

  bed_test.py [--testbed PATH] topology K N   K clusters x N nodes: addresses,
                                              shaping, environment, who reaches
                                              whom, teardown after the run
  bed_test.py [--testbed PATH] teardown       SIGTERM/SIGINT mid-run, --timeout,
                                              exit codes, a killed bed + cleanup
  bed_test.py [--testbed PATH] plan           --dry-run and argument errors
                                              (no root needed)

Exit 0 pass, 1 fail, 77 skip (not root, or namespaces not usable).
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import bedtest
from bedtest import Checks


def expect_addr(entry, family):
    return [(a["local"], a["prefixlen"]) for a in entry.get("addr_info", []) if a["family"] == family]


def topology(testbed, clusters, nodes):
    c = Checks("topology %dx%d" % (clusters, nodes))
    size = clusters * nodes
    # 3 clusters also exercise --ratio (slow = fast / 4).
    rates = ["--fast", "800mbit", "--slow", "100mbit"] if clusters == 2 else ["--fast", "600mbit", "--ratio", "4"]
    fast_bytes, slow_bytes = (100_000_000, 12_500_000) if clusters == 2 else (75_000_000, 18_750_000)
    links_before = bedtest.root_links()
    netns_before = set(bedtest.netns_list())
    with tempfile.TemporaryDirectory(prefix="hclbed-test-") as logdir:
        argv = [sys.executable, testbed, "run", "--clusters", str(clusters), "--nodes", str(nodes)] + rates + [
            "--timeout", "45", "--logdir", logdir, "--env", "PROBE_EXTRA=42", "--",
            sys.executable, bedtest.PROBE, "net", "{rank}", "{host}"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=90)
        found = bedtest.probes(res.stdout, "net")
        runs = {p["env"].get("TESTBED_RUN") for p in found}
        run = next(iter(runs)) if len(runs) == 1 else None
        try:
            if not c.check(res.returncode == 0, "bed exit code %d, want 0\n%s\n%s" % (res.returncode, res.stdout, res.stderr)):
                return c.done()
            c.check(len(found) == size, "%d probe reports, want %d" % (len(found), size))
            c.check(run is not None, "one run name, got %s" % runs)
            width = len(str(size - 1))
            logs = {}
            for r in range(size):
                c.check(re.search(r"^\[%*d\] PROBE " % (width, r), res.stdout, re.M) is not None,
                        "rank %d output is printed with the [%d] prefix" % (r, r))
                path = os.path.join(logdir, "rank%d.log" % r)
                if c.check(os.path.exists(path), "log %s exists" % path):
                    with open(path) as f:
                        got = bedtest.probes(f.read(), "net")
                    c.check(len(got) == 1 and got[0]["rank"] == r, "rank%d.log holds rank %d's report" % (r, r))
                    logs[r] = got[0] if got else None
            by_rank = {p["rank"]: p for p in found}
            c.check(sorted(by_rank) == list(range(size)), "ranks %s, want 0..%d" % (sorted(by_rank), size - 1))
            c.check(len({p["netns"] for p in found}) == size, "every rank has its own network namespace")
            c.check(os.readlink("/proc/self/ns/net") not in {p["netns"] for p in found},
                    "no rank runs in the host's namespace")
            hostids = set()
            for r, p in sorted(by_rank.items()):
                k, n = divmod(r, nodes)
                host = "c%dn%d" % (k, n)
                fab_ip, wan_ip = "10.10.%d.%d" % (k, n + 1), "10.20.%d.%d" % (k, n + 1)
                env = p["env"]
                want_env = {"RANK": str(r), "WORLD_SIZE": str(size), "LOCAL_RANK": "0", "HCL_HOSTID": host,
                            "HCL_FABRIC": "fab0=cluster%d,wan0=wan" % k, "HCL_COMM_ID": "10.20.0.1:29500",
                            "HCL_NIC_SPEED": "fab0=%d,wan0=%d" % (fast_bytes * 8 // 10 ** 6, slow_bytes * 8 // 10 ** 6),
                            "PROBE_EXTRA": "42", "TESTBED_CLUSTER": str(k), "TESTBED_NODE": str(n),
                            "TESTBED_FAB_IP": fab_ip, "TESTBED_WAN_IP": wan_ip}
                for key, val in want_env.items():
                    c.check(env.get(key) == val, "rank %d: %s=%r, want %r" % (r, key, env.get(key), val))
                hostids.add(env.get("HCL_HOSTID"))
                c.check(p["argv"] == [str(r), host], "rank %d: {rank} {host} became %s" % (r, p["argv"]))

                ifs = {e["ifname"]: e for e in p["addr"] or []}
                c.check(set(ifs) == {"lo", "fab0", "wan0"}, "rank %d: interfaces %s, want lo fab0 wan0" % (r, sorted(ifs)))
                lo = ifs.get("lo", {})
                c.check("UP" in lo.get("flags", []) and ("127.0.0.1", 8) in expect_addr(lo, "inet"),
                        "rank %d: loopback up with 127.0.0.1" % r)
                for name, ip, plen in (("fab0", fab_ip, 24), ("wan0", wan_ip, 16)):
                    e = ifs.get(name, {})
                    c.check("UP" in e.get("flags", []), "rank %d: %s up" % (r, name))
                    c.check(expect_addr(e, "inet") == [(ip, plen)],
                            "rank %d: %s has %s, want %s/%d" % (r, name, expect_addr(e, "inet"), ip, plen))
                    c.check(expect_addr(e, "inet6") == [], "rank %d: %s has no IPv6 address" % (r, name))
                qd = {q.get("dev"): q for q in p["qdisc"] or [] if q.get("root")}
                for name, rate in (("fab0", fast_bytes), ("wan0", slow_bytes)):
                    q = qd.get(name, {})
                    c.check(q.get("kind") == "tbf" and q.get("options", {}).get("rate") == rate,
                            "rank %d: %s root qdisc %s, want tbf at %d B/s" % (r, name, q, rate))

                reach = p["reach"]
                for k2 in range(clusters):
                    for n2 in range(nodes):
                        peer = k2 * nodes + n2
                        if peer == r:
                            continue
                        got = reach.get(str(peer), {})
                        wan = got.get("wan", {})
                        c.check(wan.get("verdict") == "ok" and wan.get("local") == wan_ip,
                                "rank %d -> rank %d over wan0: %s" % (r, peer, wan))
                        fab = got.get("fab", {})
                        if k2 == k:
                            c.check(fab.get("verdict") == "ok" and fab.get("local") == fab_ip,
                                    "rank %d -> cluster peer %d over fab0: %s" % (r, peer, fab))
                        else:
                            c.check(fab.get("verdict") == "unreachable",
                                    "rank %d -> rank %d in another cluster over fab0 must fail: %s" % (r, peer, fab))
                            c.check(p["l2_forced_route"].get(str(peer)) == "unreachable",
                                    "rank %d -> rank %d's fab0 with a forced route must fail at layer 2: %s"
                                    % (r, peer, p["l2_forced_route"].get(str(peer))))
                c.check(p["inbound_missing"] == [], "rank %d never heard from %s" % (r, p["inbound_missing"]))
            c.check(len(hostids) == size, "HCL_HOSTID unique per node: %s" % sorted(hostids))

            # Everything is gone.
            c.check(run is not None and bedtest.leftovers(run) == [], "namespaces of %s remain: %s"
                    % (run, run and bedtest.leftovers(run)))
            new_ns = {ns for ns in set(bedtest.netns_list()) - netns_before if run and ns.startswith(run)}
            c.check(not new_ns, "new namespaces after the run: %s" % sorted(new_ns))
            ours = re.compile(r"^(fab0|wan0|[fw]-c\d+n\d+|br-c\d+|br-wan)$")
            new_links = {l for l in bedtest.root_links() - links_before if ours.match(l)}
            c.check(not new_links, "test-bed interfaces in the host namespace: %s" % sorted(new_links))
            c.check("torn down " + str(run) in res.stderr, "the bed reports its teardown")
        finally:
            if run:
                left = bedtest.force_remove(run)
                c.check(not left, "had to remove leftovers %s" % left)
    return c.done()


class Bed:
    """A bed run in the background whose output is collected line by line."""

    def __init__(self, testbed, extra, command):
        extra = extra + ["--logdir", tempfile.mkdtemp(prefix="bed-", dir=LOGS)]
        self.lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen([sys.executable, testbed, "run"] + extra + ["--"] + command,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True).start()

    def _read(self, stream, into):
        for line in stream:
            with self.cond:
                into.append(line)
                self.cond.notify_all()

    def wait_probes(self, count, timeout=30):
        with self.cond:
            self.cond.wait_for(lambda: len(bedtest.probes("".join(self.lines), "sleep")) >= count, timeout=timeout)
            return bedtest.probes("".join(self.lines), "sleep")

    def stderr(self):
        with self.cond:
            return "".join(self.err)


def wait_dead(pids, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end and any(bedtest.pid_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if bedtest.pid_alive(p)]


LOGS = None  # a temporary directory for the logs of the teardown runs


def teardown(testbed):
    global LOGS
    with tempfile.TemporaryDirectory(prefix="hclbed-test-") as LOGS:
        return teardown_cases(testbed)


def teardown_cases(testbed):
    c = Checks("teardown")
    sleep_cmd = [sys.executable, bedtest.PROBE, "sleep", "120"]
    runs = set()
    try:
        # A signal in the middle of a run.
        for sig in (signal.SIGTERM, signal.SIGINT):
            bed = Bed(testbed, ["--clusters", "2", "--nodes", "2"], sleep_cmd)
            ready = bed.wait_probes(4)
            runs |= {p["run"] for p in ready}
            if not c.check(len(ready) == 4, "%s: %d of 4 ranks came up\n%s" % (sig.name, len(ready), bed.stderr())):
                bed.proc.kill()
                bed.proc.wait()
                continue
            t0 = time.monotonic()
            bed.proc.send_signal(sig)
            try:
                rc = bed.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                bed.proc.kill()
                rc = bed.proc.wait()
            c.check(rc == 128 + sig, "%s: bed exit code %d, want %d" % (sig.name, rc, 128 + sig))
            c.check(time.monotonic() - t0 < 15, "%s: teardown took %.1fs" % (sig.name, time.monotonic() - t0))
            pids = [p["pid"] for p in ready] + [p["child"] for p in ready]
            c.check(wait_dead(pids, 5) == [], "%s: processes of the run still alive: %s" % (sig.name, wait_dead(pids, 0)))
            for run in {p["run"] for p in ready}:
                c.check(bedtest.leftovers(run) == [], "%s: namespaces left: %s" % (sig.name, bedtest.leftovers(run)))

        # --timeout
        bed = Bed(testbed, ["--clusters", "2", "--nodes", "1", "--timeout", "3"], sleep_cmd)
        ready = bed.wait_probes(2)
        runs |= {p["run"] for p in ready}
        try:
            rc = bed.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            bed.proc.kill()
            rc = bed.proc.wait()
        c.check(rc == 124, "timeout: bed exit code %d, want 124\n%s" % (rc, bed.stderr()))
        c.check("timeout" in bed.stderr(), "timeout: the bed says so")
        pids = [p["pid"] for p in ready] + [p["child"] for p in ready]
        c.check(len(ready) == 2 and wait_dead(pids, 5) == [], "timeout: processes still alive")
        for run in {p["run"] for p in ready}:
            c.check(bedtest.leftovers(run) == [], "timeout: namespaces left: %s" % bedtest.leftovers(run))

        # Exit code: the first rank to fail decides; the others are stopped
        # after --grace.
        script = 'case "$RANK" in 2) exit 7;; 3) sleep 2; exit 9;; *) exec sleep 60;; esac'
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, testbed, "run", "--clusters", "2", "--nodes", "2", "--grace", "4",
                              "--logdir", tempfile.mkdtemp(dir=LOGS), "--", "sh", "-c", script], capture_output=True, text=True, timeout=60)
        m = re.search(r"run (hclbed-\S+):", res.stderr)
        if m:
            runs.add(m.group(1))
        c.check(res.returncode == 7, "exit code %d, want 7 (rank 2's)\n%s" % (res.returncode, res.stderr))
        c.check(time.monotonic() - t0 < 20, "ranks still running were stopped after --grace")
        c.check(m is not None and bedtest.leftovers(m.group(1)) == [], "exit code run left namespaces")
        res = subprocess.run([sys.executable, testbed, "run", "--clusters", "1", "--nodes", "3",
                              "--logdir", tempfile.mkdtemp(dir=LOGS), "--",
                              "sh", "-c", "exit 0"], capture_output=True, text=True, timeout=60)
        c.check(res.returncode == 0, "all ranks exit 0: bed exit code %d" % res.returncode)

        # A bed killed with SIGKILL leaves its namespaces; its ranks die with
        # it; `cleanup` removes the rest, detached processes included.
        bed = Bed(testbed, ["--clusters", "2", "--nodes", "1"], sleep_cmd)
        ready = bed.wait_probes(2)
        crashed = {p["run"] for p in ready}
        runs |= crashed
        bed.proc.kill()
        bed.proc.wait()
        c.check(len(ready) == 2, "crash: ranks came up")
        c.check(wait_dead([p["pid"] for p in ready], 5) == [], "crash: ranks die with the bed")
        for run in crashed:
            c.check(len(bedtest.leftovers(run)) == 3, "crash: 3 namespaces remain before cleanup: %s"
                    % bedtest.leftovers(run))
        res = subprocess.run([sys.executable, testbed, "cleanup"], capture_output=True, text=True, timeout=60)
        c.check(res.returncode == 0, "cleanup exit code %d\n%s" % (res.returncode, res.stderr))
        for run in crashed:
            c.check(bedtest.leftovers(run) == [], "cleanup left %s" % bedtest.leftovers(run))
        c.check(wait_dead([p["child"] for p in ready], 5) == [], "cleanup: detached processes are gone")
    finally:
        for run in runs:
            left = bedtest.force_remove(run)
            c.check(not left, "had to remove leftovers %s" % left)
    return c.done()


def plan(testbed):
    c = Checks("plan")
    res = subprocess.run([sys.executable, testbed, "run", "--dry-run", "--clusters", "3", "--nodes", "2",
                          "--fast", "2gbit", "--env", "A=b", "--", "prog", "{rank}", "--host={host}"],
                         capture_output=True, text=True, timeout=30)
    out = res.stdout
    c.check(res.returncode == 0, "dry run exit code %d: %s" % (res.returncode, res.stderr))
    c.check(len(re.findall(r"^ip netns add ", out, re.M)) == 7, "7 namespaces (6 nodes + switch)")
    c.check(len(re.findall(r" type veth peer name fab0 ", out)) == 6, "6 fab0 veths")
    c.check(len(re.findall(r" type veth peer name wan0 ", out)) == 6, "6 wan0 veths")
    c.check(len(re.findall(r" type bridge", out)) == 4, "3 cluster bridges + 1 wan bridge")
    c.check(len(re.findall(r"tbf rate 2000000000bit", out)) == 12, "fab0 shaped to 2gbit both ways")
    c.check(len(re.findall(r"tbf rate 250000000bit", out)) == 12, "wan0 shaped to fast/8 both ways")
    c.check(re.search(r"addr add 10\.10\.2\.2/24 dev fab0", out) is not None, "c2n1 fab0 address")
    c.check(re.search(r"addr add 10\.20\.2\.2/16 dev wan0", out) is not None, "c2n1 wan0 address")
    c.check(re.search(r"RANK=5 WORLD_SIZE=6 HCL_HOSTID=c2n1 HCL_FABRIC=fab0=cluster2,wan0=wan "
                      r"HCL_NIC_SPEED=fab0=2000,wan0=250 HCL_COMM_ID=10\.20\.0\.1:29500 A=b prog 5 --host=c2n1$", out, re.M) is not None,
              "rank 5's environment and command")
    names = re.findall(r"^ip netns add (\S+)$", out, re.M)
    prefixes = {re.sub(r"-(sw|c\d+n\d+)$", "", n) for n in names}
    c.check(len(prefixes) == 1 and re.fullmatch(r"hclbed-\d+-[0-9a-f]+", prefixes.pop()),
            "namespace names share one run prefix: %s" % names)
    for bad in (["--clusters", "0"], ["--fast", "fast"], ["--env", "NOEQUALS"]):
        r = subprocess.run([sys.executable, testbed, "run", "--dry-run"] + bad + ["--", "true"],
                           capture_output=True, text=True, timeout=30)
        c.check(r.returncode == 2, "%s: exit code %d, want 2" % (bad, r.returncode))
    r = subprocess.run([sys.executable, testbed, "run", "--dry-run"], capture_output=True, text=True, timeout=30)
    c.check(r.returncode == 2, "no command: exit code %d, want 2" % r.returncode)
    return c.done()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--testbed", default=bedtest.DEFAULT_TESTBED)
    ap.add_argument("case", choices=["topology", "teardown", "plan"])
    ap.add_argument("shape", nargs="*", type=int)
    a = ap.parse_args()
    if a.case == "plan":
        return plan(a.testbed)
    bedtest.require_bed(a.testbed)
    if a.case == "topology":
        clusters, nodes = (a.shape + [2, 2])[:2] if a.shape else (2, 2)
        return topology(a.testbed, clusters, nodes)
    return teardown(a.testbed)


if __name__ == "__main__":
    sys.exit(main())
