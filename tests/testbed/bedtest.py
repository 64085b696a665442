"""Helpers shared by the test-bed tests: skipping, running the bed, checks,
and a last-resort removal of a run's namespaces so that a failing test never
leaves anything behind."""

import json
import os
import signal
import subprocess
import sys
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "probe.py")
DEFAULT_TESTBED = os.path.join(HERE, "..", "..", "tools", "testbed", "testbed.py")


def require_bed(testbed):
    """Exits with SKIP (77) and the reason when the bed cannot run here."""
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, veth, tc)")
        sys.exit(SKIP)
    res = subprocess.run([sys.executable, testbed, "check"], capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        print(res.stdout + res.stderr)
        print("SKIP: `testbed.py check` says namespaces/veth/tc are not usable here")
        sys.exit(SKIP)


def netns_list():
    res = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def root_links():
    res = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    return {line.split(":")[1].strip().split("@")[0] for line in res.stdout.splitlines()}


def leftovers(run):
    return [ns for ns in netns_list() if ns.startswith(run + "-")]


def force_remove(run):
    """Removes whatever a run left (used only when the bed failed to)."""
    names = leftovers(run)
    for ns in names:
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    time.sleep(0.2)
    for ns in names:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    return names


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def probes(text, kind=None):
    """The PROBE json objects in `text` (rank output, with or without the [r] prefix)."""
    out = []
    for line in text.splitlines():
        at = line.find("PROBE {")
        if at >= 0:
            obj = json.loads(line[at + len("PROBE "):])
            if kind is None or obj.get("probe") == kind:
                out.append(obj)
    return out


class Checks:
    def __init__(self, name):
        self.name = name
        self.failures = 0
        self.t0 = time.monotonic()

    def check(self, cond, what):
        if not cond:
            self.failures += 1
            print("FAIL: %s" % what)
        return cond

    def done(self):
        dt = time.monotonic() - self.t0
        if self.failures:
            print("%s: %d check(s) failed (%.1fs)" % (self.name, self.failures, dt))
            return 1
        print("%s: all checks passed (%.1fs)" % (self.name, dt))
        return 0


def read_rank_logs(logdir, size):
    """Each rank's log from a run's --logdir ("" for a rank that wrote none)."""
    logs = []
    for r in range(size):
        try:
            with open(os.path.join(logdir, "rank%d.log" % r)) as f:
                logs.append(f.read())
        except OSError:
            logs.append("")
    return logs
