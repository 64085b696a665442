#!/usr/bin/env python3
"""Runs as one rank inside the test bed (tools/testbed/testbed.py run -- probe.py ...)
and reports what that rank sees as one line "PROBE <json>".

  probe.py net ARGS...   interfaces, qdiscs, environment, and TCP reachability:
                         every rank listens on its fab0 and wan0 addresses and
                         connects to every other rank's; stays until every
                         peer that should reach it has connected.
  probe.py sleep         prints its pid and that of a detached child that
                         ignores SIGTERM, then sleeps (for teardown tests).

Reachability verdicts: "ok" (connected), "refused" (a host answered: the
address is reachable, nothing listens yet), "unreachable" (no route, no ARP
answer, or no answer in time).
"""

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

PORT = 7000


def emit(kind, payload):
    payload["probe"] = kind
    sys.stdout.write("PROBE " + json.dumps(payload, sort_keys=True) + "\n")
    sys.stdout.flush()


def addresses(cluster, node):
    return "10.10.%d.%d" % (cluster, node + 1), "10.20.%d.%d" % (cluster, node + 1)


def try_connect(ip, timeout):
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect((ip, PORT))
        local = s.getsockname()[0]
        s.sendall(os.environ["RANK"].encode() + b"\n")
        s.close()
        return "ok", local
    except ConnectionRefusedError:
        return "refused", None
    except socket.timeout:
        return "unreachable", None
    except OSError as e:
        if e.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EHOSTDOWN):
            return "unreachable", None
        return "error:%s" % errno.errorcode.get(e.errno, e.errno), None
    finally:
        s.close()


def connect_until_ok(ip, deadline):
    while True:
        verdict, local = try_connect(ip, 1.0)
        if verdict == "ok" or time.monotonic() > deadline or verdict not in ("refused", "unreachable"):
            return verdict, local
        time.sleep(0.05)


def json_cmd(argv):
    res = subprocess.run(argv, capture_output=True, text=True)
    return json.loads(res.stdout) if res.returncode == 0 and res.stdout.strip() else None


def net(args):
    rank = int(os.environ["RANK"])
    clusters = int(os.environ["TESTBED_CLUSTERS"])
    nodes = int(os.environ["TESTBED_NODES"])
    me_k, me_n = int(os.environ["TESTBED_CLUSTER"]), int(os.environ["TESTBED_NODE"])
    fab_ip, wan_ip = addresses(me_k, me_n)
    peers = [(k, n) for k in range(clusters) for n in range(nodes) if (k, n) != (me_k, me_n)]

    # Expected inbound connections: from cluster peers on fab0, from everyone on wan0.
    expected = {("fab", k * nodes + n) for k, n in peers if k == me_k} | {("wan", k * nodes + n) for k, n in peers}
    seen = set()
    seen_lock = threading.Condition()

    def serve(ip, label):
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((ip, PORT))
        srv.listen(64)
        while True:
            c, _ = srv.accept()
            c.settimeout(5)
            try:
                data = c.recv(64).strip()
                if data.isdigit():
                    with seen_lock:
                        seen.add((label, int(data)))
                        seen_lock.notify_all()
            except OSError:
                pass
            c.close()

    for ip, label in ((fab_ip, "fab"), (wan_ip, "wan")):
        threading.Thread(target=serve, args=(ip, label), daemon=True).start()

    facts = {
        "rank": rank,
        "argv": args,
        "env": {k: v for k, v in os.environ.items()
                if k.startswith(("HCL_", "TESTBED_", "PROBE_")) or k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")},
        "netns": os.readlink("/proc/self/ns/net"),
        "pid": os.getpid(),
        "addr": json_cmd(["ip", "-j", "addr", "show"]),
        "qdisc": json_cmd(["tc", "-j", "qdisc", "show"]),
        "routes": json_cmd(["ip", "-j", "route", "show"]),
    }

    reach = {}
    deadline = time.monotonic() + 15
    lock = threading.Lock()

    def probe_peer(k, n):
        p_fab, p_wan = addresses(k, n)
        peer = str(k * nodes + n)
        results = {}
        results["wan"] = connect_until_ok(p_wan, deadline)
        if k == me_k:
            results["fab"] = connect_until_ok(p_fab, deadline)
        else:
            # No route to another cluster's fabric: must fail at once.
            results["fab"] = try_connect(p_fab, 2.0)
        with lock:
            reach[peer] = {key: {"verdict": v, "local": loc} for key, (v, loc) in results.items()}

    threads = [threading.Thread(target=probe_peer, args=p) for p in peers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    facts["reach"] = reach

    # Layer 2: even with a route that sends every fabric address out of fab0,
    # other clusters' fabric addresses must stay unreachable (separate bridges).
    other = [(k, n) for k, n in peers if k != me_k]
    l2 = {}
    if other:
        subprocess.run(["ip", "route", "add", "10.10.0.0/16", "dev", "fab0"], check=True)
        results = {}

        def forced(k, n):
            results[str(k * nodes + n)] = try_connect(addresses(k, n)[0], 4.0)[0]

        ts = [threading.Thread(target=forced, args=p) for p in other]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        # An ARP answer alone proves a layer-2 path, even when the TCP
        # handshake fails because the peer has no route back.
        neigh = {e.get("dst"): e for e in json_cmd(["ip", "-j", "neigh", "show", "dev", "fab0"]) or []}
        for k, n in other:
            entry = neigh.get(addresses(k, n)[0], {})
            if entry.get("lladdr"):
                results[str(k * nodes + n)] = "arp-answered"
        l2 = results
        subprocess.run(["ip", "route", "del", "10.10.0.0/16", "dev", "fab0"], check=True)
    facts["l2_forced_route"] = l2

    with seen_lock:
        seen_lock.wait_for(lambda: expected <= seen, timeout=max(1.0, deadline + 5 - time.monotonic()))
        facts["inbound_missing"] = sorted("%s:%d" % x for x in expected - seen)
    emit("net", facts)
    return 0


def sleep(args):
    child = os.fork()
    if child == 0:
        # A detached grandchild of the bed that ignores SIGTERM: only the
        # bed's sweep of the namespace can remove it.
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        while True:
            time.sleep(1)
    emit("sleep", {"rank": int(os.environ["RANK"]), "pid": os.getpid(), "child": child,
                   "run": os.environ["TESTBED_RUN"]})
    time.sleep(float(args[0]) if args else 120)
    return 0


if __name__ == "__main__":
    mode, rest = sys.argv[1], sys.argv[2:]
    sys.exit({"net": net, "sleep": sleep}[mode](rest))
