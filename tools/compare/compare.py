#!/usr/bin/env python3
"""Runs the same collective sweep through HCL, Open MPI (vader and tcp BTLs),
MPICH and Gloo on this machine, interleaving the peers run after run, and
prints per size each peer's median busbw and HCL's ratio to it.

  python3 tools/compare/compare.py --build build --ranks 2 --sizes 8:256M --runs 5 \\
      --colls allreduce,allgather,reducescatter [--peers hcl,hcl-tcp,ompi-vader,ompi-tcp,mpich,gloo]

See docs/comparison.md for the peers, the method and how to read the ratios."""

import argparse
import json
import shlex
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import builder  # noqa: E402
import report  # noqa: E402
import runners  # noqa: E402

ALL_PEERS = ["hcl", "hcl-tcp", "hcl-ofi-tcp", "hcl-ofi-shm", "hcl-net-plugin", "hcl-ib-fake", "ompi-vader", "ompi-tcp", "mpich", "gloo"]
# HCL over libfabric is asked for by name: it is HCL on another transport, not a peer.
DEFAULT_PEERS = [p for p in ALL_PEERS if not p.startswith(("hcl-ofi", "hcl-net-plugin", "hcl-ib-fake"))]
ALL_COLLS = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"]
PEER_PROGRAM = {"ompi-vader": "mpi_ompi", "ompi-tcp": "mpi_ompi", "mpich": "mpi_mpich", "gloo": "gloo_bench"}
PEER_PACKAGES = {"ompi-vader": "ompi", "ompi-tcp": "ompi", "mpich": "mpich", "gloo": "gloo"}
SRC_DIR = Path(__file__).resolve().parents[2]


def parse_size(text):
    text = text.strip()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(float(text[:-1] if mult > 1 else text) * mult)


def parse_cpus(text):
    parts = text.split(",")
    if not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"--cpus {text!r}: expected a comma list of CPU numbers")
    return [int(p) for p in parts]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="HCL build directory (libhcl.so, perf/); default: build")
    ap.add_argument("--ranks", type=int, default=2, help="ranks per peer (default 2)")
    ap.add_argument("--sizes", default="8:256M", help="MIN:MAX bytes, doubling, K/M/G suffixes (default 8:256M)")
    ap.add_argument("--runs", type=int, default=5, help="interleaved runs; figures are their medians (default 5)")
    ap.add_argument("--colls", default="allreduce", help=f"comma list of {','.join(ALL_COLLS)} (default allreduce)")
    ap.add_argument("--peers", default=",".join(DEFAULT_PEERS),
                    help=f"comma list of {','.join(ALL_PEERS)} (default all but hcl-ofi-*, hcl-net-plugin and hcl-ib-fake)")
    ap.add_argument("--hcl-alloc", choices=["malloc", "memalloc"], default="malloc",
                    help="HCL buffers from malloc (default) or hclMemAlloc; memalloc uses hcl_bench")
    ap.add_argument("--hcl-runner", choices=["auto", "perf", "bench"], default="auto",
                    help="HCL through <build>/perf/*_perf (perf), the bundled hcl_bench (bench), "
                         "or perf when present (auto, default)")
    ap.add_argument("--no-bound", action="store_true", help="skip the bounds (two-thread memory bandwidth, two-process copy)")
    ap.add_argument("--no-iperf", action="store_true", help="skip the iperf3 loopback line")
    ap.add_argument("--budget", default="512M", help="bytes moved per size and run; iterations = budget/size "
                                                     "clamped to [--min-iters, --max-iters] (default 512M)")
    ap.add_argument("--time-budget", type=float, default=1.0,
                    help="seconds of timed calls per size at most (default 1), but at least --min-iters calls; "
                         "the count comes from the slowest rank's warm-up")
    ap.add_argument("--min-iters", type=int, default=3)
    ap.add_argument("--max-iters", type=int, default=20000)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per process launch (default 300)")
    ap.add_argument("--cpus", type=parse_cpus, default=None,
                    help="comma list: rank r of every peer runs on CPU cpus[r] (taskset), e.g. 0,1,0,1; "
                         "by default the kernel places the ranks, and with more ranks than CPUs the "
                         "placement it picks moves small-message times by up to 1.6x")
    ap.add_argument("--latency-max", default="4K", help="largest size in the time table (default 4K)")
    ap.add_argument("--markdown", help="also write the report to this markdown file")
    ap.add_argument("--json", help="also write medians and every run to this JSON file (tools/plot reads it)")
    ap.add_argument("--no-install", action="store_true", help="do not apt-get missing packages")
    a = ap.parse_args(argv)
    a.peers = [p for p in a.peers.split(",") if p]
    a.colls = [c for c in a.colls.split(",") if c]
    bad = [p for p in a.peers if p not in ALL_PEERS] + [c for c in a.colls if c not in ALL_COLLS]
    if bad:
        ap.error(f"unknown peer or collective: {', '.join(bad)}")
    lo, _, hi = a.sizes.partition(":")
    a.min_bytes, a.max_bytes = parse_size(lo), parse_size(hi or lo)
    if a.ranks < 1 or a.runs < 1 or a.min_bytes < 1 or a.max_bytes < a.min_bytes:
        ap.error("need --ranks >= 1, --runs >= 1 and 1 <= MIN <= MAX")
    return a


def hcl_runner(a, build):
    perf = build / "perf"
    have_perf = all((perf / runners.COLL_PERF_BINARY[c]).exists() for c in a.colls)
    if a.hcl_runner == "perf" or (a.hcl_runner == "auto" and have_perf and a.hcl_alloc == "malloc"):
        return "perf", perf
    return "bench", None


def prepare(a, build):
    """Installs and builds what the chosen peers need. Returns
    ({program: path}, {peer: reason it cannot run})."""
    groups = sorted({PEER_PACKAGES[p] for p in a.peers if p in PEER_PACKAGES} |
                    (set() if a.no_iperf else {"iperf3"}))
    missing = builder.ensure_packages(groups, install=not a.no_install)
    programs, unusable = {}, {}
    wanted = {PEER_PROGRAM[p] for p in a.peers if p in PEER_PROGRAM}
    if any(p.startswith("hcl") for p in a.peers) and hcl_runner(a, build)[0] == "bench":
        wanted.add("hcl_bench")
    if not a.no_bound and "allreduce" in a.colls and a.ranks == 2:  # the bounds model 2 ranks
        wanted.update({"bound_bench", "copy_bound_bench"})
    recipes = builder.recipes(build, SRC_DIR)
    for name in sorted(wanted):
        group = recipes[name][2]
        if group in missing:
            unusable[name] = f"packages for {group} missing"
            continue
        if name == "hcl_bench" and not any(build.glob("libhcl.so*")):
            unusable[name] = f"no libhcl.so in {build}: build HCL first"
            continue
        exe, err = builder.build(name, build, SRC_DIR)
        if exe:
            programs[name] = exe
        else:
            unusable[name] = f"build failed: {err}"
    if "iperf3" in missing:
        a.no_iperf = True
    return programs, unusable


def run_peer(peer, a, plan, programs, unusable, build):
    if peer.startswith("hcl"):
        kind, perf = hcl_runner(a, build)
        if kind == "perf":
            return runners.run_hcl_perf(perf, peer, plan, build)
        if "hcl_bench" not in programs:
            return runners.Sweep(error=unusable.get("hcl_bench", "hcl_bench unavailable"))
        return runners.run_hcl_bench(programs["hcl_bench"], peer, a.hcl_alloc, plan, build)
    program = PEER_PROGRAM[peer]
    if program not in programs:
        return runners.Sweep(error=unusable.get(program, f"{program} unavailable"))
    if peer == "gloo":
        return runners.run_gloo(programs[program], plan)
    return runners.run_mpi(programs[program], peer, plan)


def main(argv):
    a = parse_args(argv)
    build = Path(a.build).resolve()
    programs, unusable = prepare(a, build)
    plan = runners.Plan(a.ranks, a.colls, a.min_bytes, a.max_bytes, parse_size(a.budget), a.min_iters,
                        a.max_iters, a.timeout, a.time_budget, a.cpus)
    order = list(a.peers)
    bounds = {"bound": "bound_bench", "copy-bound": "copy_bound_bench"}
    order += [name for name, program in bounds.items() if program in programs]
    sweeps = {p: [] for p in order}
    errors = {}
    iperf = []
    round_trips = []
    for run in range(1, a.runs + 1):
        round_trips.append(runners.run_line_round_trip(build))
        for peer in order:
            print(f"# run {run}/{a.runs}: {peer}", file=sys.stderr, flush=True)
            sw = runners.run_bound(programs[bounds[peer]], plan) if peer in bounds else \
                run_peer(peer, a, plan, programs, unusable, build)
            sweeps[peer].append(sw)
            if sw.error:
                errors.setdefault(peer, []).append(f"run {run}: {sw.error}")
                print(f"#   {peer} failed: {sw.error.splitlines()[0][:200]}", file=sys.stderr)
        if not a.no_iperf:
            gbps, err = runners.run_iperf3()
            if gbps is not None:
                iperf.append(gbps)
            else:
                errors.setdefault("iperf3", []).append(f"run {run}: {err}")
    iperf_gbps = statistics.median(iperf) if iperf else None

    info = report.machine_info()
    command = "python3 tools/compare/compare.py " + " ".join(shlex.quote(x) for x in argv)
    kind, _ = hcl_runner(a, build)
    lines = [f"## HCL vs peers: {a.ranks} ranks, float sum, root 0, median of {a.runs} interleaved runs", "",
             f"- date: {info['date']}; machine: {info['cpu']}, {info['cores']} cores, Linux {info['kernel']}, "
             f"load average at the end {info['load']}",
             f"- peers: {info['packages']}",
             f"- HCL through {'perf/*_perf (nccl-tests mean times)' if kind == 'perf' else 'hcl_bench'}, "
             f"buffers from {a.hcl_alloc}",
             f"- command: `{command}`", ""]
    all_sizes = list(plan.sizes())
    for coll in a.colls:
        per_peer = {p: report.medians(sweeps[p], coll, all_sizes) for p in order}
        if coll != "allreduce":
            for name in bounds:
                per_peer.pop(name, None)
        missing = {p: sw.missing[coll] for p in order for sw in sweeps[p] if coll in sw.missing}
        lines += [report.collective_tables(coll, a.peers, per_peer, all_sizes, iperf_gbps,
                                           parse_size(a.latency_max), missing), ""]
        if missing:
            lines += [f"- {p} has no {coll} ({why}): n/a" for p, why in missing.items()] + [""]
    if "bound" in order:
        lines.append("- bound: two threads of one process computing c = a + b, each on its half, no copies; "
                     "as busbw of a 2-rank allreduce (size / time)")
    if "copy-bound" in order:
        lines.append("- copy-bound: two processes that only move what a 2-rank allreduce on malloc buffers must move "
                     "between them (each reads the peer's input half with process_vm_readv and writes that half "
                     "into the peer's output with process_vm_writev), no reduction; as busbw (size / time)")
    measured = [x for x in round_trips if x is not None]
    if measured:
        lines.append("- cache-line round trip between CPUs 0 and 1 before each run (hcl_line_handoff_bench): "
                     + ", ".join(f"{x:.0f}" for x in measured) + " ns; where it jumps several times over, stores "
                     "into lines the other CPU holds slow down as much (performance.md)")
    if iperf_gbps is not None:
        lines.append(f"- iperf3 loopback, one stream: {iperf_gbps:.2f} GB/s "
                     f"(median of {len(iperf)}: {', '.join(f'{x:.2f}' for x in iperf)})")
    placements = placements_of(order, sweeps)
    if placements:
        lines.append("- ranks per CPU as the kernel placed them, share of samples, run by run (performance.md: "
                     "the grouping moves small-message times for every library):")
        lines += [f"  - {p}: " + "; ".join(x or "not sampled" for x in runs) for p, runs in placements.items()]
    for peer, errs in errors.items():
        for e in errs:
            lines.append(f"- {peer} failed, {e.splitlines()[0][:300]}")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        Path(a.markdown).write_text(text)
    if a.json:
        write_json(a.json, a, info, command, order, sweeps, iperf, round_trips, errors)
    return 0


def placements_of(order, sweeps):
    """{peer: each run's grouping of ranks per CPU} for peers with any sampled."""
    return {p: [sw.placement for sw in sweeps[p]] for p in order if any(sw.placement for sw in sweeps[p])}


def write_json(path, a, info, command, order, sweeps, iperf, round_trips, errors):
    results = {}
    for peer in order:
        for coll in a.colls:
            meds = report.medians(sweeps[peer], coll)
            if not meds:
                continue
            results.setdefault(peer, {})[coll] = [
                {"size": s, "busbw": m.busbw, "time_us": m.time_us, "loop_us": m.loop_us, "wrong": m.wrong,
                 "runs_busbw": [r.busbw for r in m.runs], "runs_time_us": [r.time_us for r in m.runs],
                 "runs_loop_us": [r.loop_us for r in m.runs]}
                for s, m in meds.items()]
    missing = {p: m for p in order for sw in sweeps[p] for m in [sw.missing] if m}
    doc = {"format": "hcl-compare/1", "machine": info, "command": command, "ranks": a.ranks, "runs": a.runs,
           "iperf3_gbps": iperf, "line_round_trip_ns": round_trips, "results": results, "errors": errors, "missing": missing,
           "placements": placements_of(order, sweeps)}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
