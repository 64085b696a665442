#!/usr/bin/env python3
"""Instructions one rank executes per call of a small collective, counted by
callgrind: a figure that does not move with the machine's load, unlike time.

Runs 2 ranks of hcl_bench (or of the Open MPI peer over vader) on one size;
one of them runs under callgrind, and the tool prints the instructions inside
the API function per call, with the functions that take most of them.

  python3 tools/compare/call_cost.py --build build --coll broadcast --size 8 [--rank 0|1]
      [--peer hcl|ompi-vader] [--iters 20000] [--top 12] [--keep callgrind.out]

Needs valgrind (installed with apt-get when missing, unless --no-install).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import builder  # noqa: E402
from runners import free_port  # noqa: E402

API = {
    "hcl": {"allreduce": "hclAllReduce", "allgather": "hclAllGather", "reducescatter": "hclReduceScatter",
            "broadcast": "hclBroadcast", "reduce": "hclReduce", "alltoall": "hclAlltoAll"},
    "ompi-vader": {"allreduce": "PMPI_Allreduce", "allgather": "PMPI_Allgather",
                   "reducescatter": "PMPI_Reduce_scatter_block", "broadcast": "PMPI_Bcast", "reduce": "PMPI_Reduce",
                   "alltoall": "PMPI_Alltoall"},
}


def ensure_valgrind(install):
    if shutil.which("valgrind") and shutil.which("callgrind_annotate"):
        return True
    if install:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        subprocess.run(sudo + ["apt-get", "install", "-y", "valgrind"], check=False,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    return shutil.which("valgrind") is not None


def plugin_dir_without_debug_info(build_dir, into):
    """Valgrind 3.19 gives up on the DWARF 5 that hipcc writes into the HIP
    plugin: the plugins are loaded from stripped copies instead."""
    for plugin in Path(build_dir).glob("libhcl-*.so"):
        subprocess.run(["strip", "--strip-debug", "-o", str(Path(into) / plugin.name), str(plugin)], check=True)
    return into


# The benchmarks' function that makes one call: counting starts inside it, so
# the call arcs into the API function are recorded and setup is left out.
LOOP = {"hcl": "*runOnce*", "ompi-vader": "run_once"}


def callgrind_argv(out_file, peer):
    return ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={LOOP[peer]}",
            f"--callgrind-out-file={out_file}"]


def run_pair(args, exe, out_file, tmp):
    bench = [str(exe), "-c", args.coll, "-b", str(args.size), "-e", str(args.size), "-T", "100000",
             "-m", str(args.iters), "-n", str(args.iters)]
    if args.peer == "hcl":
        env = dict(os.environ, WORLD_SIZE="2", HCL_COMM_ID=f"127.0.0.1:{free_port()}",
                   HCL_PLUGIN_DIR=plugin_dir_without_debug_info(args.build, tmp))
        procs = []
        for rank in (0, 1):
            argv = (callgrind_argv(out_file, args.peer) if rank == args.rank else []) + bench
            procs.append(subprocess.Popen(["taskset", "-c", str(rank)] + argv, env=dict(env, RANK=str(rank)),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        try:
            errors = [p.communicate(timeout=args.timeout)[1] for p in procs]
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            return False, f"timed out after {args.timeout} s"
        return all(p.returncode == 0 for p in procs), "\n".join(e[-2000:] for e in errors)
    wrap = (f'if [ "$OMPI_COMM_WORLD_RANK" = {args.rank} ]; then exec taskset -c $OMPI_COMM_WORLD_RANK '
            f'{" ".join(callgrind_argv(out_file, args.peer))} "$0" "$@"; else exec taskset -c $OMPI_COMM_WORLD_RANK "$0" "$@"; fi')
    argv = ["mpirun.openmpi", "--allow-run-as-root", "-np", "2", "--mca", "btl", "self,vader", "sh", "-c", wrap] + bench
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=args.timeout)
    return p.returncode == 0, p.stderr[-2000:]


def annotate(out_file, *options):
    return subprocess.run(["callgrind_annotate", *options, str(out_file)], capture_output=True, text=True,
                          check=True).stdout


def _number(text):
    return int(text.replace(",", ""))


def calls_and_instructions(caller_tree, function):
    """(calls, inclusive instructions) of `function` in callgrind_annotate's
    --tree=caller --inclusive=yes output: the calls are its callers' arcs,
    the lines just above its own."""
    callers = []
    for line in caller_tree.splitlines():
        m = re.match(r"\s*[\d,]+ .*<\s.*\((\d[\d,]*)x\)", line)
        if m:
            callers.append(_number(m.group(1)))
            continue
        m = re.match(r"\s*([\d,]+) .*\*\s+\S*:" + re.escape(function) + r"\b", line)
        if m:
            return sum(callers), _number(m.group(1))
        if not line.strip():
            callers = []
    return 0, 0


def top_functions(self_costs, count):
    """[(instructions, function)] of callgrind_annotate's --inclusive=no
    output, most first."""
    rows = []
    for line in self_costs.splitlines():
        m = re.match(r"\s*([\d,]+) \([\s\d.]+%\)\s+(\S.*)", line)
        if m and "PROGRAM TOTALS" not in line:
            rows.append((_number(m.group(1)), m.group(2)))
    return rows[:count]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="HCL build directory (default: build)")
    ap.add_argument("--coll", default="broadcast", choices=sorted(API["hcl"]))
    ap.add_argument("--size", type=int, default=8, help="bytes (default 8)")
    ap.add_argument("--rank", type=int, choices=[0, 1], default=0, help="rank counted (0 is the root; default 0)")
    ap.add_argument("--peer", choices=sorted(API), default="hcl")
    ap.add_argument("--iters", type=int, default=20000, help="timed calls (default 20000)")
    ap.add_argument("--top", type=int, default=12, help="functions listed (default 12)")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--no-install", action="store_true", help="do not apt-get valgrind or the MPI peer")
    ap.add_argument("--keep", metavar="FILE", help="also keep callgrind's output there, for callgrind_annotate")
    args = ap.parse_args(argv)
    if not ensure_valgrind(not args.no_install):
        print("call_cost: valgrind is not installed", file=sys.stderr)
        return 2
    src = Path(__file__).resolve().parents[2]
    if args.peer == "hcl":
        exe, err = builder.build("hcl_bench", os.path.abspath(args.build), str(src))
    else:
        if builder.ensure_packages(["ompi"], install=not args.no_install):
            print("call_cost: Open MPI is not installed", file=sys.stderr)
            return 2
        exe, err = builder.build("mpi_ompi", os.path.abspath(args.build), str(src))
    if err:
        print(err, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="hcl-call-cost-") as tmp:
        out_file = Path(tmp) / "callgrind.out"
        ok, errors = run_pair(args, exe, out_file, tmp)
        if not ok or not out_file.exists():
            print(f"call_cost: the run failed\n{errors}", file=sys.stderr)
            return 1
        function = API[args.peer][args.coll]
        calls, inclusive = calls_and_instructions(annotate(out_file, "--tree=caller", "--inclusive=yes"), function)
        if calls == 0:
            print(f"call_cost: no call of {function} was recorded", file=sys.stderr)
            return 1
        print(f"{args.peer} {args.coll} {args.size} B, rank {args.rank}: {inclusive / calls:.0f} instructions "
              f"per call ({calls} calls of {function})")
        for ir, name in top_functions(annotate(out_file, "--inclusive=no"), args.top):
            print(f"  {ir / calls:8.1f}  {name[:150]}")
        if args.keep:
            shutil.copyfile(out_file, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
