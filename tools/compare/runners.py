"""Runs one sweep of one peer and returns its rows. Every launch has a time
limit; a launch that fails or runs out of time yields the rows it printed
before, plus an error text, never a hang."""

import collections
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import placement

COLL_PERF_BINARY = {
    "allreduce": "all_reduce_perf",
    "allgather": "all_gather_perf",
    "reducescatter": "reduce_scatter_perf",
    "broadcast": "broadcast_perf",
    "reduce": "reduce_perf",
    "alltoall": "alltoall_perf",
}


@dataclass
class Row:
    time_us: float  # rank 0's median call
    busbw: float
    wrong: int
    loop_us: float = None  # the synchronised loop's wall time per call (sweep.h)


@dataclass
class Sweep:
    """rows[coll][size] for one peer in one run; error is None on success;
    missing[coll]: why the peer has no such collective."""
    rows: dict = field(default_factory=dict)
    error: str = None
    missing: dict = field(default_factory=dict)
    placement: str = None  # which ranks shared a CPU (placement.Sampler.summary), where sampled


@dataclass
class Plan:
    ranks: int
    colls: list
    min_bytes: int
    max_bytes: int
    budget: int
    min_iters: int
    max_iters: int
    timeout: float
    time_budget: float = 1.0
    cpus: list = None  # rank r runs on CPU cpus[r] (taskset); None: where the kernel puts it

    def peer_args(self):
        return ["-c", ",".join(self.colls), "-b", str(self.min_bytes), "-e", str(self.max_bytes),
                "-B", str(self.budget), "-T", str(self.time_budget), "-m", str(self.min_iters),
                "-n", str(self.max_iters)]

    def sizes(self):
        s = self.min_bytes
        while s <= self.max_bytes:
            yield s
            s *= 2

    def sampler(self, program):
        """A placement.Sampler for a launch of `program`'s ranks where they
        outnumber the CPUs and the kernel places them; None elsewhere."""
        if self.cpus or self.ranks <= placement.cpus_available():
            return None
        return placement.Sampler(program, self.ranks)

    def iters(self, size):
        """The planned count of sweep.h's sweep_iters (before the time budget)."""
        return max(self.min_iters, min(self.max_iters, self.budget // max(size, 1)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


SESSION = Path(__file__).resolve().parent / "session.py"


def launch(commands, timeout, grace=5.0, sampler=None):
    """Starts every (argv, env) in one new session (session.py says why) and
    waits for all of them. When one fails, the others get `grace` seconds;
    past `timeout` all are killed. Returns (stdout of the first, error text
    or None, with the tails of the commands' stderr). A placement.Sampler
    given samples the session's ranks while they run."""
    with tempfile.TemporaryDirectory(prefix="hcl-compare-launch-") as tmp:
        spec = [{"argv": [str(x) for x in argv], "env": env, "out": f"{tmp}/out{i}", "err": f"{tmp}/err{i}"}
                for i, (argv, env) in enumerate(commands)]
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        proc = subprocess.Popen([sys.executable, str(SESSION), str(spec_path), str(grace)],
                                stdin=subprocess.DEVNULL, start_new_session=True)
        if sampler:
            sampler.session = proc.pid
        deadline = time.monotonic() + timeout
        error = None
        while proc.poll() is None:
            if time.monotonic() > deadline:
                error = f"timed out after {timeout:.0f} s"
                _kill(proc)
                break
            if sampler:
                sampler.sample()
            time.sleep(0.05)
        proc.wait()
        if error is None and proc.returncode != 0:
            error = f"exit code {proc.returncode}"
        texts = []
        for cmd in spec:
            out = Path(cmd["out"])
            err = Path(cmd["err"])
            texts.append((out.read_text(errors="replace") if out.exists() else "",
                          err.read_text(errors="replace") if err.exists() else ""))
    if error:
        tail = "\n".join(e.strip()[-400:] for _, e in texts if e.strip())
        error = f"{error}: {tail}" if tail else error
    return texts[0][0], error


def parse_rows(stdout):
    rows = {}
    for line in stdout.splitlines():
        f = line.split()
        if len(f) in (9, 10) and f[0] == "row":
            loop = float(f[9]) if len(f) == 10 else None
            rows.setdefault(f[1], {})[int(f[2])] = Row(float(f[5]), float(f[7]), int(f[8]), loop)
    return rows


def parse_missing(stdout):
    """{coll: why} from a peer's "missing <coll> <why>" lines."""
    return {f[1]: " ".join(f[2:]) for f in map(str.split, stdout.splitlines()) if len(f) >= 2 and f[0] == "missing"}


def _sweep(stdout, error, sampler=None):
    return Sweep(parse_rows(stdout), error, parse_missing(stdout), sampler.summary() if sampler else None)


def _launch_sweep(commands, plan, program):
    sampler = plan.sampler(program)
    return _sweep(*launch(commands, plan.timeout, sampler=sampler), sampler)


def pinned(plan, rank, argv):
    """argv run on the CPU that --cpus gives `rank`, when it gives one."""
    if not plan.cpus:
        return argv
    return ["taskset", "-c", str(plan.cpus[rank % len(plan.cpus)])] + argv


def mpi_pinned(plan, argv):
    """argv for every rank of an MPI launch, each on its own --cpus entry:
    the rank comes from the launcher's environment (Open MPI, MPICH)."""
    if not plan.cpus:
        return argv
    table = ",".join(str(c) for c in plan.cpus)
    script = (f'c=$(echo {table} | cut -d, -f$(( ${{OMPI_COMM_WORLD_RANK:-$PMI_RANK}} % {len(plan.cpus)} + 1 ))); '
              'exec taskset -c "$c" "$0" "$@"')
    return ["sh", "-c", script] + argv


def run_mpi(exe, flavour, plan):
    """flavour: 'ompi-vader', 'ompi-tcp' or 'mpich'."""
    env = dict(os.environ)
    if flavour == "mpich":
        argv = ["mpirun.mpich", "-np", str(plan.ranks)]
    else:
        btl = ["--mca", "btl", "self,vader"] if flavour == "ompi-vader" else \
            ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"]
        argv = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(plan.ranks)] + btl
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return _launch_sweep([(argv + mpi_pinned(plan, [str(exe)] + plan.peer_args()), env)], plan, exe)


def _rank_envs(plan, extra):
    for r in range(plan.ranks):
        env = dict(os.environ)
        env.update(extra)
        env.update(RANK=str(r), WORLD_SIZE=str(plan.ranks), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(plan.ranks))
        yield env


def run_gloo(exe, plan):
    with tempfile.TemporaryDirectory(prefix="hcl-compare-gloo-") as store:
        cmds = [(pinned(plan, r, [str(exe)] + plan.peer_args()), env)
                for r, env in enumerate(_rank_envs(plan, {"GLOO_STORE_DIR": store}))]
        return _launch_sweep(cmds, plan, exe)


# HCL over its own TCP, over libfabric's tcp;ofi_rxm or shm provider, over
# the test NCCL net plugin of the build (loopback TCP), or over verbs on the
# fake verbs library ({build} is the build folder).
HCL_VARIANT_ENV = {
    "hcl": {},
    "hcl-tcp": {"HCL_SHM_DISABLE": "1"},
    "hcl-ofi-tcp": {"HCL_SHM_DISABLE": "1", "HCL_OFI_PROVIDER": "tcp;ofi_rxm"},
    "hcl-ofi-shm": {"HCL_SHM_DISABLE": "1", "HCL_OFI_PROVIDER": "shm"},
    "hcl-net-plugin": {"HCL_SHM_DISABLE": "1",
                       "HCL_NET_PLUGIN": "{build}/tests/net_plugin/libnccl-net-hcltest.so"},
    # HCL's verbs transport on the tests' fake verbs library (Unix sockets):
    # what its setup and data path cost here, not an RDMA figure.
    "hcl-ib-fake": {"HCL_SHM_DISABLE": "1",
                    "HCL_IBVERBS_LIBRARY": "{build}/tests/ib/libhcl-fake-verbs.so"},
}


def hcl_env(variant, build):
    return {k: v.replace("{build}", str(Path(build).resolve())) for k, v in HCL_VARIANT_ENV[variant].items()}


def run_hcl_bench(exe, variant, alloc, plan, build):
    extra = dict(hcl_env(variant, build), HCL_COMM_ID=f"127.0.0.1:{free_port()}")
    cmds = [(pinned(plan, r, [str(exe)] + plan.peer_args() + ["-A", alloc]), env)
            for r, env in enumerate(_rank_envs(plan, extra))]
    return _launch_sweep(cmds, plan, exe)


def read_nccl_json(path):
    """{size: Row} from an nccl-tests -J file (out-of-place column)."""
    doc = json.loads(Path(path).read_text())
    rows = {}
    for r in doc.get("results", []):
        half = r.get("out_of_place") or r.get("in_place") or {}
        t = half.get("time", half.get("cpu_time"))
        if t is None:
            continue
        wrong = half.get("nwrong")
        # nccl-tests' time is already the loop's wall time per call.
        rows[int(r["size"])] = Row(float(t), float(half.get("bus_bw", 0.0)), int(float(wrong or 0)), float(t))
    return rows


def run_hcl_perf(perf_dir, variant, plan, build):
    """Runs <build>/perf/*_perf with RANK/WORLD_SIZE/HCL_COMM_ID. nccl-tests
    has one iteration count per launch, so sizes with the same count (from
    the shared schedule) share a launch; times are nccl-tests' means."""
    sweep = Sweep()
    seen = collections.Counter()  # the groupings of every launch, where sampled
    groups = []
    for size in plan.sizes():
        n = plan.iters(size)
        if groups and groups[-1][2] == n:
            groups[-1][1] = size
        else:
            groups.append([size, size, n])
    for coll in plan.colls:
        exe = Path(perf_dir) / COLL_PERF_BINARY[coll]
        if not exe.exists():
            sweep.error = f"{exe} not built"
            continue
        for lo, hi, n in groups:
            with tempfile.TemporaryDirectory(prefix="hcl-compare-perf-") as tmp:
                out = Path(tmp) / "out.json"
                extra = dict(hcl_env(variant, build), HCL_COMM_ID=f"127.0.0.1:{free_port()}")
                args = ["-b", str(lo), "-e", str(hi), "-f", "2", "-n", str(n), "-w", str(max(1, n // 10)),
                        "-d", "float", "-o", "sum", "-c", "1"]
                cmds = []
                for r, env in enumerate(_rank_envs(plan, extra)):
                    cmds.append((pinned(plan, r, [str(exe)] + args + (["-J", str(out)] if r == 0 else [])), env))
                sampler = plan.sampler(exe)
                _, error = launch(cmds, plan.timeout, sampler=sampler)
                if sampler:
                    seen.update(sampler.counts)
                try:
                    sweep.rows.setdefault(coll, {}).update(read_nccl_json(out))
                except (OSError, ValueError, KeyError) as e:
                    error = error or f"no JSON from {exe.name}: {e}"
                if error:
                    sweep.error = error
    sweep.placement = placement.summarize(seen)
    return sweep


def run_bound(exe, plan):
    if "allreduce" not in plan.colls:
        return Sweep()
    args = [str(exe)] + plan.peer_args()[2:]
    return _sweep(*launch([(args, dict(os.environ))], plan.timeout))


def run_line_round_trip(build, timeout=60):
    """Cache-line round trip between CPUs 0 and 1 in ns, from the build's
    hcl_line_handoff_bench, or None where it is missing or fails. Stores
    into lines the other CPU holds (the window all-reduce, vader's FIFOs)
    slow down several times over when it jumps."""
    exe = Path(build) / "tools" / "hcl_line_handoff_bench"
    if not exe.exists():
        return None
    try:
        r = subprocess.run([str(exe), "0", "1"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    m = re.search(r"cache-line round trip: ([0-9.]+) ns", r.stdout)
    return float(m.group(1)) if m else None


def run_iperf3(seconds=3, timeout=60, attempts=3):
    """Loopback single-stream TCP throughput in GB/s, or (None, error)."""
    for _ in range(attempts):
        gbps, error = _iperf3_once(seconds, timeout)
        if gbps is not None:
            break
    return gbps, error


def _iperf3_once(seconds, timeout):
    port = free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # The server may not listen yet: retry the client while it cannot connect.
        for _ in range(50):
            r = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds), "-J"],
                               capture_output=True, text=True, timeout=timeout)
            if r.returncode == 0 or "connect" not in r.stdout + r.stderr or server.poll() is not None:
                break
            time.sleep(0.2)
        doc = json.loads(r.stdout)
        if "error" in doc:
            return None, doc["error"]
        return doc["end"]["sum_received"]["bits_per_second"] / 8e9, None
    except (subprocess.TimeoutExpired, ValueError, KeyError) as e:
        return None, f"iperf3: {e}"
    finally:
        _kill(server)
        server.wait()
