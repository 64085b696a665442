#!/usr/bin/env python3
"""Emulated multi-cluster test bed for HCL, built from Linux network namespaces.

K clusters of N nodes; every node is a network namespace that runs one rank.
Each node has two interfaces:

  fab0  10.10.<k>.<n+1>/24  the fast fabric of its cluster (one bridge per
                            cluster), shaped to --fast in both directions;
  wan0  10.20.<k>.<n+1>/16  the slow Ethernet shared by all clusters (one
                            bridge), shaped to --slow in both directions.

The bridges live in a switch namespace of their own, so the host's network
(root namespace) is never touched. Everything a run creates carries the run's
name prefix "hclbed-<pid>-<random>-", and everything is removed again when the
run ends, fails, times out or gets SIGINT/SIGTERM/SIGHUP. `cleanup` removes
what a killed run left behind.

  testbed.py check
  testbed.py run --clusters 2 --nodes 2 --fast 1gbit --slow 125mbit -- CMD {rank} ...
  testbed.py run --dry-run --clusters 3 --nodes 2 -- true
  testbed.py cleanup [--all]

Python 3 standard library only; needs root, `ip` and `tc` (iproute2).
See docs/testbed.md.
"""

import argparse
import ctypes
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

PREFIX = "hclbed"
NAME_RE = re.compile(r"^%s-(\d+)-([0-9a-f]+)-(\S+)$" % PREFIX)
FAB_IF = "fab0"
WAN_IF = "wan0"
FAB_NET = "10.10"  # 10.10.<cluster>.<node+1>/24
WAN_NET = "10.20"  # 10.20.<cluster>.<node+1>/16
LAUNCHER_PREFIXES = ("OMPI_COMM_WORLD_", "PMIX_", "PMI_")
LAUNCHER_VARS = ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")
EXIT_TIMEOUT = 124
EXIT_SETUP = 125


def log(msg):
    sys.stderr.write("testbed: %s\n" % msg)
    sys.stderr.flush()


class SetupError(Exception):
    pass


class Interrupted(Exception):
    def __init__(self, signum):
        super().__init__("signal %d" % signum)
        self.signum = signum


# ---------------------------------------------------------------------------
# Rates

_RATE_UNITS = {
    "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kibit": 1024, "mibit": 1024 ** 2, "gibit": 1024 ** 3, "tibit": 1024 ** 4,
    "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
    "kibps": 8 * 1024, "mibps": 8 * 1024 ** 2, "gibps": 8 * 1024 ** 3,
}


def parse_rate(text):
    """A tc rate ("1gbit", "125mbit", "10mbps" = bytes/s) in bit/s."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    if not m:
        raise ValueError("bad rate %r" % text)
    unit = m.group(2).lower() or "bit"
    if unit not in _RATE_UNITS:
        raise ValueError("bad rate unit in %r (use bit, kbit, mbit, gbit, ... or bps, kbps, ...)" % text)
    bits = int(float(m.group(1)) * _RATE_UNITS[unit])
    if bits < 8000:
        raise ValueError("rate %r is below 8kbit" % text)
    return bits


def format_rate(bits):
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bits >= scale and bits % int(scale) == 0:
            return "%d%s" % (bits // int(scale), unit)
    return "%dbit" % bits


def tbf_args(bits):
    """tbf parameters for one direction of a link of `bits` bit/s."""
    bytes_per_s = bits // 8
    # 2 ms worth of tokens, at least 64 KiB so that a GSO super-packet fits.
    burst = max(64 * 1024, bytes_per_s * 2 // 1000)
    return ["rate", "%dbit" % bits, "burst", str(burst), "latency", "50ms"]


# ---------------------------------------------------------------------------
# The plan: names and addresses, computed before anything is created.

class Node:
    def __init__(self, run, cluster, index, nodes_per_cluster):
        self.cluster = cluster
        self.index = index
        self.rank = cluster * nodes_per_cluster + index
        self.host_id = "c%dn%d" % (cluster, index)
        self.netns = "%s-%s" % (run, self.host_id)
        self.fab_ip = "%s.%d.%d" % (FAB_NET, cluster, index + 1)
        self.wan_ip = "%s.%d.%d" % (WAN_NET, cluster, index + 1)
        # Switch-side ends of the node's veth pairs (in the switch namespace).
        self.fab_port = "f-" + self.host_id
        self.wan_port = "w-" + self.host_id


class Plan:
    def __init__(self, clusters, nodes, fast_bits, slow_bits, port, run_id=None):
        if not 1 <= clusters <= 255:
            raise ValueError("--clusters must be 1..255")
        if not 1 <= nodes <= 254:
            raise ValueError("--nodes must be 1..254")
        if not 1 <= port <= 65535:
            raise ValueError("--port must be 1..65535")
        self.clusters = clusters
        self.nodes_per_cluster = nodes
        self.fast_bits = fast_bits
        self.slow_bits = slow_bits
        self.port = port
        self.run = run_id or "%s-%d-%s" % (PREFIX, os.getpid(), secrets.token_hex(3))
        self.switch_ns = self.run + "-sw"
        self.nodes = [Node(self.run, k, n, nodes) for k in range(clusters) for n in range(nodes)]
        self.comm_id = "%s:%d" % (self.nodes[0].wan_ip, port)

    @property
    def size(self):
        return len(self.nodes)

    def fab_bridge(self, cluster):
        return "br-c%d" % cluster

    wan_bridge = "br-wan"

    def commands(self):
        """The ip/tc commands that build the bed, in order."""
        sw = self.switch_ns
        cmds = [["ip", "netns", "add", sw], ["ip", "-n", sw, "link", "set", "lo", "up"]]
        bridges = [self.fab_bridge(k) for k in range(self.clusters)] + [self.wan_bridge]
        for br in bridges:
            cmds.append(["ip", "-n", sw, "link", "add", br, "type", "bridge", "stp_state", "0"])
            cmds.append(["ip", "-n", sw, "link", "set", br, "addrgenmode", "none", "up"])
        for node in self.nodes:
            ns = node.netns
            cmds.append(["ip", "netns", "add", ns])
            cmds.append(["ip", "-n", ns, "link", "set", "lo", "up"])
            # fab0 first, so that it is the node's first interface.
            links = ((FAB_IF, node.fab_port, self.fab_bridge(node.cluster), node.fab_ip + "/24", self.fast_bits),
                     (WAN_IF, node.wan_port, self.wan_bridge, node.wan_ip + "/16", self.slow_bits))
            for ifname, port, bridge, cidr, bits in links:
                cmds.append(["ip", "-n", sw, "link", "add", port, "type", "veth",
                             "peer", "name", ifname, "netns", ns])
                cmds.append(["ip", "-n", sw, "link", "set", port, "addrgenmode", "none",
                             "master", bridge, "up"])
                cmds.append(["ip", "-n", ns, "link", "set", ifname, "addrgenmode", "none"])
                cmds.append(["ip", "-n", ns, "addr", "add", cidr, "dev", ifname])
                cmds.append(["ip", "-n", ns, "link", "set", ifname, "up"])
                # Node -> switch on the node's end, switch -> node on the port.
                cmds.append(["tc", "-n", ns, "qdisc", "replace", "dev", ifname, "root", "tbf"] + tbf_args(bits))
                cmds.append(["tc", "-n", sw, "qdisc", "replace", "dev", port, "root", "tbf"] + tbf_args(bits))
        return cmds

    def environment(self, node, extra):
        # The caller's environment, less what would make a rank believe that
        # another launcher (mpirun, srun) started it.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(LAUNCHER_PREFIXES) and k not in LAUNCHER_VARS}
        env.update({
            "RANK": str(node.rank),
            "WORLD_SIZE": str(self.size),
            "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1",
            "HCL_COMM_ID": self.comm_id,
            "HCL_HOSTID": node.host_id,
            "HCL_FABRIC": "%s=cluster%d,%s=wan" % (FAB_IF, node.cluster, WAN_IF),
            # veths claim 10 Gbit/s in sysfs; tell HCL the shaped rates (Mbit/s).
            "HCL_NIC_SPEED": "%s=%d,%s=%d" % (FAB_IF, max(1, round(self.fast_bits / 1e6)),
                                              WAN_IF, max(1, round(self.slow_bits / 1e6))),
            "TESTBED_RUN": self.run,
            "TESTBED_CLUSTERS": str(self.clusters),
            "TESTBED_NODES": str(self.nodes_per_cluster),
            "TESTBED_CLUSTER": str(node.cluster),
            "TESTBED_NODE": str(node.index),
            "TESTBED_FAB_IP": node.fab_ip,
            "TESTBED_WAN_IP": node.wan_ip,
            "TESTBED_FAST": format_rate(self.fast_bits),
            "TESTBED_SLOW": format_rate(self.slow_bits),
        })
        env.update(extra)
        return env

    def argv(self, node, command):
        subst = {"{rank}": str(node.rank), "{size}": str(self.size), "{host}": node.host_id,
                 "{cluster}": str(node.cluster), "{node}": str(node.index)}
        out = []
        for arg in command:
            for key, value in subst.items():
                arg = arg.replace(key, value)
            out.append(arg)
        return out

    def describe(self):
        lines = ["run %s: %d cluster(s) x %d node(s) = %d ranks; fast %s, slow %s; HCL_COMM_ID=%s"
                 % (self.run, self.clusters, self.nodes_per_cluster, self.size,
                    format_rate(self.fast_bits), format_rate(self.slow_bits), self.comm_id)]
        for n in self.nodes:
            lines.append("  rank %-3d %-7s netns %s  %s %s/24  %s %s/16"
                         % (n.rank, n.host_id, n.netns, FAB_IF, n.fab_ip, WAN_IF, n.wan_ip))
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Namespaces: listing, killing what runs inside, deleting.

def run_quiet(argv, check=True):
    res = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if check and res.returncode != 0:
        raise SetupError("%s: %s" % (" ".join(argv), (res.stderr or res.stdout).strip()))
    return res


def list_netns():
    res = run_quiet(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def netns_pids(ns):
    res = run_quiet(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in res.stdout.split() if p.isdigit()]


def kill_netns_processes(ns):
    for _ in range(20):
        pids = [p for p in netns_pids(ns) if p != os.getpid()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def delete_netns(names):
    """Kills every process in the namespaces and deletes them; veths, bridges
    and qdiscs inside go with them. Returns the names that could not be removed."""
    for ns in names:
        kill_netns_processes(ns)
    failed = []
    for ns in names:
        res = run_quiet(["ip", "netns", "del", ns], check=False)
        if res.returncode != 0 and ns in list_netns():
            failed.append("%s (%s)" % (ns, res.stderr.strip()))
    return failed


def run_is_alive(pid):
    """Whether the testbed process that owns run names with this pid still runs."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read().replace(b"\0", b" ")
    except OSError:
        return False
    return b"testbed" in cmdline


# ---------------------------------------------------------------------------
# Running the ranks.

_libc = None


def _load_libc():
    global _libc
    try:
        _libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        _libc = None


def _die_with_parent():
    # Runs in the child between fork and exec: if the test bed is killed
    # (even with SIGKILL) the rank gets SIGKILL too.
    if _libc is not None:
        _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Rank:
    def __init__(self, node, proc, log_file):
        self.node = node
        self.proc = proc
        self.log_file = log_file
        self.reader = None
        self.code = None  # exit code, 128+signal when killed


def exit_code(returncode):
    return 128 - returncode if returncode < 0 else returncode


class Runner:
    def __init__(self, plan, command, extra_env, logdir, quiet, timeout, grace):
        self.plan = plan
        self.command = command
        self.extra_env = extra_env
        self.logdir = logdir
        self.quiet = quiet
        self.timeout = timeout
        self.grace = grace
        self.ranks = []
        self.out_lock = threading.Lock()
        width = len(str(plan.size - 1))
        self.tag = lambda r: ("[%*d] " % (width, r)).encode()

    def start(self):
        _load_libc()
        for node in self.plan.nodes:
            path = os.path.join(self.logdir, "rank%d.log" % node.rank)
            logf = open(path, "wb")
            argv = ["ip", "netns", "exec", node.netns] + self.plan.argv(node, self.command)
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env=self.plan.environment(node, self.extra_env),
                                    start_new_session=True, preexec_fn=_die_with_parent)
            self.ranks.append(Rank(node, proc, logf))
        # Readers start after every fork (preexec_fn and threads do not mix).
        for rank in self.ranks:
            rank.reader = threading.Thread(target=self._pump, args=(rank,), daemon=True)
            rank.reader.start()

    def _pump(self, rank):
        tag = self.tag(rank.node.rank)
        for line in iter(rank.proc.stdout.readline, b""):
            try:
                rank.log_file.write(line)
                rank.log_file.flush()
            except (OSError, ValueError):
                pass
            if not self.quiet:
                if not line.endswith(b"\n"):
                    line += b"\n"
                with self.out_lock:
                    try:
                        sys.stdout.buffer.write(tag + line)
                        sys.stdout.buffer.flush()
                    except (OSError, ValueError):
                        pass

    def wait(self):
        """Waits for all ranks; returns the test bed's exit code."""
        deadline = time.monotonic() + self.timeout if self.timeout else None
        first_failure = None
        kill_at = None
        while True:
            running = 0
            for rank in self.ranks:
                if rank.code is None:
                    rc = rank.proc.poll()
                    if rc is None:
                        running += 1
                        continue
                    rank.code = exit_code(rc)
                    if rank.code != 0 and first_failure is None:
                        first_failure = rank
                        if self.grace is not None:
                            kill_at = time.monotonic() + self.grace
            if running == 0:
                break
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                log("timeout after %gs: stopping %d running rank(s)" % (self.timeout, running))
                self.stop()
                return EXIT_TIMEOUT
            if kill_at is not None and now >= kill_at:
                log("rank %d exited with %d; stopping the %d rank(s) still running after %gs"
                    % (first_failure.node.rank, first_failure.code, running, self.grace))
                self.stop()
                break
            time.sleep(0.05)
        for rank in self.ranks:
            if rank.code is None:
                rank.code = exit_code(rank.proc.wait())
        if first_failure is not None:
            log("rank %d (%s) exited with %d first"
                % (first_failure.node.rank, first_failure.node.host_id, first_failure.code))
            return first_failure.code
        return 0

    def stop(self):
        """SIGTERM to every rank's process group, SIGKILL after 2 s."""
        live = [r for r in self.ranks if r.proc.poll() is None]
        for sig, wait_s in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            for r in live:
                try:
                    os.killpg(r.proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            end = time.monotonic() + wait_s
            while time.monotonic() < end and any(r.proc.poll() is None for r in live):
                time.sleep(0.02)
            live = [r for r in live if r.proc.poll() is None]
            if not live:
                break

    def finish(self):
        for rank in self.ranks:
            if rank.reader is not None:
                rank.reader.join(timeout=2)
            try:
                rank.log_file.close()
            except OSError:
                pass


# ---------------------------------------------------------------------------
# Signals: SIGINT/SIGTERM/SIGHUP abort the run; during teardown they are noted
# and ignored so that teardown always completes.

_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_pending = []


def _raise_on_signal(signum, frame):
    raise Interrupted(signum)


def _note_signal(signum, frame):
    _pending.append(signum)


def trap_signals(handler):
    for s in _signals:
        signal.signal(s, handler)


# ---------------------------------------------------------------------------
# Subcommands

def cmd_run(args):
    try:
        fast = parse_rate(args.fast)
        slow = parse_rate(args.slow) if args.slow else max(8000, int(fast / args.ratio))
        plan = Plan(args.clusters, args.nodes, fast, slow, args.port)
    except ValueError as e:
        log(str(e))
        return 2
    command = args.command
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        log("no command given (testbed.py run [options] -- CMD ...)")
        return 2
    extra_env = {}
    for item in args.env:
        if "=" not in item:
            log("--env wants NAME=VALUE, got %r" % item)
            return 2
        name, value = item.split("=", 1)
        extra_env[name] = value

    if args.dry_run:
        print(plan.describe())
        for c in plan.commands():
            print(" ".join(shlex.quote(a) for a in c))
        for node in plan.nodes:
            env = plan.environment(node, extra_env)
            shown = " ".join("%s=%s" % (k, shlex.quote(env[k])) for k in
                             ["RANK", "WORLD_SIZE", "HCL_HOSTID", "HCL_FABRIC", "HCL_NIC_SPEED", "HCL_COMM_ID"]
                             + sorted(extra_env))
            print("ip netns exec %s env %s %s" % (node.netns, shown,
                                                  " ".join(shlex.quote(a) for a in plan.argv(node, command))))
        return 0

    if os.geteuid() != 0:
        log("needs root (network namespaces); see `testbed.py check`")
        return EXIT_SETUP
    leftovers = sorted({m.group(1) for m in map(NAME_RE.match, list_netns())
                        if m and not run_is_alive(int(m.group(1)))})
    if leftovers:
        log("namespaces of %d dead run(s) are left over; `testbed.py cleanup` removes them" % len(leftovers))

    logdir = args.logdir or tempfile.mkdtemp(prefix=plan.run + "-logs-")
    os.makedirs(logdir, exist_ok=True)

    trap_signals(_raise_on_signal)
    runner = None
    code = 0
    try:
        t0 = time.monotonic()
        for c in plan.commands():
            run_quiet(c)
        log("built in %.1fs: %s" % (time.monotonic() - t0, plan.describe()))
        runner = Runner(plan, command, extra_env, logdir, args.quiet, args.timeout, args.grace)
        runner.start()
        code = runner.wait()
    except (SetupError, OSError) as e:
        log("setup failed: %s" % e)
        code = EXIT_SETUP
    except (Interrupted, KeyboardInterrupt) as e:
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        log("got signal %d: stopping" % signum)
        code = 128 + signum
    finally:
        trap_signals(_note_signal)
        if runner is not None:
            runner.stop()
        # Also kills what the ranks left running (daemons, detached children).
        failed = delete_netns([ns for ns in list_netns() if ns.startswith(plan.run + "-")])
        if runner is not None:
            runner.finish()
        if failed:
            log("could not remove: %s" % ", ".join(failed))
            code = code or EXIT_SETUP
        else:
            log("torn down %s" % plan.run)
        log("logs in %s" % logdir)
        trap_signals(signal.SIG_DFL)
    return code


def cmd_cleanup(args):
    if os.geteuid() != 0:
        log("needs root")
        return 1
    runs = {}
    for ns in list_netns():
        m = NAME_RE.match(ns)
        if m:
            runs.setdefault(int(m.group(1)), []).append(ns)
    doomed = []
    for pid, names in sorted(runs.items()):
        if run_is_alive(pid) and not args.all:
            log("leaving %d namespace(s) of live run (pid %d) alone; --all removes them too" % (len(names), pid))
            continue
        doomed.extend(names)
    failed = delete_netns(sorted(doomed))
    log("removed %d namespace(s)" % (len(doomed) - len(failed)))
    if failed:
        log("could not remove: %s" % ", ".join(failed))
        return 1
    return 0


def cmd_check(args):
    """Builds a two-namespace bed with a bridge, veths and tbf, and sends a few
    bytes through it."""
    def report(ok, what):
        print("%s %s" % ("ok  " if ok else "FAIL", what))
        return ok

    if not report(os.geteuid() == 0, "running as root"):
        print("testbed NOT usable")
        return 1
    for tool in ("ip", "tc"):
        try:
            res = run_quiet([tool, "-V"], check=False)
            found = res.returncode == 0
        except OSError:
            found = False
        if not report(found, "%s (iproute2) found" % tool):
            print("testbed NOT usable")
            return 1
    run = "%s-%d-%s" % (PREFIX, os.getpid(), secrets.token_hex(3))
    sw, a, b = run + "-sw", run + "-a", run + "-b"
    steps = [
        ("create network namespaces", [["ip", "netns", "add", ns] for ns in (sw, a, b)]),
        ("create a bridge", [["ip", "-n", sw, "link", "add", "br0", "type", "bridge"],
                             ["ip", "-n", sw, "link", "set", "br0", "up"]]),
        ("create veth pairs across namespaces",
         [c for ns, ip in ((a, "10.99.0.1/24"), (b, "10.99.0.2/24")) for c in (
             ["ip", "-n", sw, "link", "add", "p-" + ns[-1], "type", "veth", "peer", "name", "fab0", "netns", ns],
             ["ip", "-n", sw, "link", "set", "p-" + ns[-1], "master", "br0", "up"],
             ["ip", "-n", ns, "addr", "add", ip, "dev", "fab0"],
             ["ip", "-n", ns, "link", "set", "fab0", "up"],
             ["ip", "-n", ns, "link", "set", "lo", "up"])]),
        ("shape with tc tbf", [["tc", "-n", a, "qdisc", "add", "dev", "fab0", "root", "tbf"] + tbf_args(10 ** 8)]),
        ("shape with tc htb", [["tc", "-n", b, "qdisc", "add", "dev", "fab0", "root", "handle", "1:", "htb",
                                "default", "1"],
                               ["tc", "-n", b, "class", "add", "dev", "fab0", "parent", "1:", "classid", "1:1",
                                "htb", "rate", "100mbit"]]),
    ]
    ok = True
    trap_signals(_note_signal)
    try:
        for what, cmds in steps:
            try:
                for c in cmds:
                    run_quiet(c)
                report(True, what)
            except (SetupError, OSError) as e:
                ok = report(False, "%s: %s" % (what, e))
                break
        if ok:
            server = ("import socket,sys;s=socket.socket();s.bind(('10.99.0.2',5000));s.listen();"
                      "print('up',flush=True);c,_=s.accept();c.sendall(c.recv(16))")
            client = ("import socket,time\nfor i in range(50):\n try:\n  c=socket.create_connection(('10.99.0.2',5000),1)"
                      ";break\n except OSError: time.sleep(0.1)\nc.sendall(b'hello');assert c.recv(16)==b'hello'")
            try:
                srv = subprocess.Popen(["ip", "netns", "exec", b, sys.executable, "-c", server],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                res = subprocess.run(["ip", "netns", "exec", a, sys.executable, "-c", client],
                                     capture_output=True, text=True, timeout=15)
                srv.wait(timeout=5)
                ok = report(res.returncode == 0 and srv.returncode == 0,
                            "run processes in namespaces (ip netns exec) and talk across the bridge"
                            + ("" if res.returncode == 0 else ": " + res.stderr.strip()[-300:]))
            except (OSError, subprocess.TimeoutExpired) as e:
                ok = report(False, "run processes in namespaces: %s" % e)
    finally:
        failed = delete_netns([ns for ns in list_netns() if ns.startswith(run + "-")])
        ok = report(not failed, "tear down" + (": " + ", ".join(failed) if failed else "")) and ok
        trap_signals(signal.SIG_DFL)
    print("testbed usable" if ok else "testbed NOT usable")
    return 0 if ok else 1


def main(argv=None):
    p = argparse.ArgumentParser(prog="testbed.py", description="Emulated multi-cluster test bed (network namespaces).")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="build a bed, run CMD once per rank inside it, tear it down",
                       description="Builds K clusters x N nodes (one namespace and one rank per node), runs "
                                   "CMD in every node, tears everything down. {rank} {size} {host} {cluster} "
                                   "{node} in CMD are replaced per rank. Exit code: the first non-zero rank "
                                   "exit code, 124 on --timeout, 125 when the bed cannot be built, 128+N on signal N.")
    r.add_argument("--clusters", "-k", type=int, default=2, help="number of clusters (default 2)")
    r.add_argument("--nodes", "-n", type=int, default=2, help="nodes (ranks) per cluster (default 2)")
    r.add_argument("--fast", default="1gbit", help="rate of each node's fabric link, each direction (default 1gbit)")
    r.add_argument("--slow", default=None, help="rate of each node's wan link, each direction (default fast/ratio)")
    r.add_argument("--ratio", type=float, default=8.0, help="fast/slow when --slow is not given (default 8)")
    r.add_argument("--port", type=int, default=29500, help="bootstrap port on rank 0's wan address (default 29500)")
    r.add_argument("--env", "-e", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment for every rank (repeatable; wins over the bed's own)")
    r.add_argument("--timeout", type=float, default=None, help="kill everything after this many seconds (exit 124)")
    r.add_argument("--grace", type=float, default=5.0,
                   help="after a rank fails, seconds the others get before they are killed (default 5)")
    r.add_argument("--logdir", default=None, help="per-rank logs rank<R>.log go here (default: a new temp dir)")
    r.add_argument("--quiet", "-q", action="store_true", help="only write the logs, do not print rank output")
    r.add_argument("--dry-run", action="store_true", help="print the plan, commands and environment; build nothing")
    r.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    r.set_defaults(func=cmd_run)

    c = sub.add_parser("cleanup", help="remove namespaces (and so veths, bridges, qdiscs) left by dead runs")
    c.add_argument("--all", action="store_true", help="also those of runs that are still alive")
    c.set_defaults(func=cmd_cleanup)

    k = sub.add_parser("check", help="exit 0 if namespaces, veths, bridges and tc work here, else 1")
    k.set_defaults(func=cmd_check)

    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
