"""Turns the runs into medians and prints them as markdown tables: busbw per
size for each peer, HCL's ratio to its peers, and small-message times."""

import os
import platform
import statistics
import subprocess
from datetime import datetime

HCL_VARIANTS = ("hcl", "hcl-tcp", "hcl-ofi-tcp", "hcl-ofi-shm", "hcl-net-plugin", "hcl-ib-fake")
# What each HCL variant is compared with: shared memory against everything
# (and the bound), TCP against the TCP peers (and iperf3).
RATIO_TARGETS = {
    "hcl": ("ompi-vader", "mpich", "gloo", "bound", "copy-bound"),
    "hcl-tcp": ("ompi-tcp", "gloo", "iperf3"),
    # libfabric's providers against HCL's own transports for the same link.
    "hcl-ofi-tcp": ("hcl-tcp", "ompi-tcp"),
    "hcl-ofi-shm": ("hcl", "ompi-vader"),
    "hcl-net-plugin": ("hcl-tcp", "ompi-tcp"),
    "hcl-ib-fake": ("hcl-tcp", "ompi-tcp"),
}


def human_size(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


class Median:
    """The median over runs of one (peer, collective, size)."""

    def __init__(self, rows):
        self.runs = rows
        self.busbw = statistics.median(r.busbw for r in rows) if rows else None
        self.time_us = statistics.median(r.time_us for r in rows) if rows else None
        loops = [r.loop_us for r in rows if r.loop_us is not None]
        self.loop_us = statistics.median(loops) if rows and len(loops) == len(rows) else None
        self.wrong = max((r.wrong for r in rows), default=0)


def medians(sweeps, coll, planned=None):
    """{size: Median} from one peer's runs. With planned (the sweep's sizes,
    ascending), a row counts for the first planned size that holds it: with
    3 ranks, allgather's 1K row moves 1020 bytes."""
    rows = {}
    for sw in sweeps:
        for s, row in sw.rows.get(coll, {}).items():
            key = next((p for p in planned if p >= s), s) if planned else s
            rows.setdefault(key, []).append(row)
    return {s: Median(rows[s]) for s in sorted(rows)}


def machine_info():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    versions = []
    for pkg in ("openmpi-bin", "mpich", "libgloo-dev", "iperf3"):
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout:
            versions.append(f"{pkg} {r.stdout}")
    return {
        "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "packages": ", ".join(versions),
    }


def _table(header, rows):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def _cell(m, attr, fmt):
    if m is None or getattr(m, attr) is None:
        return "fail"
    if m.wrong:
        return "wrong"
    return fmt.format(getattr(m, attr))


def _ratio(a, b):
    if a is None or b is None or a.busbw is None or b.busbw is None or a.wrong or b.wrong or b.busbw <= 0:
        return "-"
    return f"{a.busbw / b.busbw:.2f}"


class IperfLine:
    """iperf3's loopback throughput shown as a constant busbw."""

    def __init__(self, gbps):
        self.busbw = gbps
        self.time_us = None
        self.wrong = 0


def collective_tables(coll, peers, per_peer, sizes, iperf_gbps, latency_max, missing=()):
    """per_peer: {peer: {size: Median}} for this collective (bound included);
    missing: peers without this collective, shown as n/a."""
    cell = lambda p, s, attr, fmt: "n/a" if p in missing else _cell(per_peer[p].get(s), attr, fmt)
    columns = [p for p in peers if p in per_peer]
    if coll == "allreduce":
        columns += [b for b in ("bound", "copy-bound") if b in per_peer]
    ratios = []
    for v in HCL_VARIANTS:
        if v not in per_peer:
            continue
        for t in RATIO_TARGETS[v]:
            if t in per_peer or (t == "iperf3" and iperf_gbps is not None):
                ratios.append((v, t))
    header = ["size"] + columns + [f"{v}/{t}" for v, t in ratios]
    rows = []
    for s in sizes:
        cells = [human_size(s)] + [cell(p, s, "busbw", "{:.3f}") for p in columns]
        for v, t in ratios:
            other = IperfLine(iperf_gbps) if t == "iperf3" else per_peer[t].get(s)
            cells.append(_ratio(per_peer[v].get(s), other))
        rows.append(cells)
    out = [f"### {coll}: busbw (GB/s), and HCL's ratio to each peer", "", _table(header, rows)]
    small = [s for s in sizes if s <= latency_max]
    if small:
        lat_rows = [[human_size(s)] + [cell(p, s, "time_us", "{:.2f}") for p in columns]
                    for s in small]
        out += ["", f"### {coll}: time (µs) per call, sizes up to {human_size(latency_max)}", "",
                _table(["size"] + columns, lat_rows)]
        has_loop = lambda p: p not in missing and any(
            m.loop_us is not None for s, m in per_peer[p].items() if s in small)
        loop_columns = [p for p in columns if has_loop(p)]
        if loop_columns:
            loop_rows = [[human_size(s)] + [cell(p, s, "loop_us", "{:.2f}") for p in loop_columns]
                         for s in small]
            out += ["", f"### {coll}: loop time (µs) per call, sizes up to {human_size(latency_max)}", "",
                    "Wall time of all timed calls, from a synchronisation of every rank before the first to one "
                    "after the last, over their number: what the ranks sustain together. The table above has "
                    "rank 0's median call, which is shorter where a root returns before its peers are done.", "",
                    _table(["size"] + loop_columns, loop_rows)]
    return "\n".join(out)
