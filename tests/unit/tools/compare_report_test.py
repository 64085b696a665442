#!/usr/bin/env python3
"""ctest: the parsing and reporting parts of tools/compare (no peer is run)."""
import collections
import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "tools" / "compare"))

import call_cost  # noqa: E402
import compare  # noqa: E402
import placement  # noqa: E402
import report  # noqa: E402
import runners  # noqa: E402

SAMPLE = """noise from a launcher
row allreduce 8 2 1000 2.5 0.0032 0.0032 0
row allreduce 1048576 262144 512 500 2.097 2.097 0
row allgather 1048576 131072 512 100 10.48 5.24 3
row broadcast 8 2 1000 0.05 0.16 0.16 0 0.21
"""


class CompareTest(unittest.TestCase):
    def test_parse_rows(self):
        rows = runners.parse_rows(SAMPLE)
        self.assertEqual(sorted(rows), ["allgather", "allreduce", "broadcast"])
        self.assertEqual(rows["allreduce"][1048576].time_us, 500.0)
        self.assertAlmostEqual(rows["allreduce"][8].busbw, 0.0032)
        self.assertEqual(rows["allgather"][1048576].wrong, 3)
        # The loop's time per call is the tenth field; rows without it have none.
        self.assertEqual((rows["broadcast"][8].time_us, rows["broadcast"][8].loop_us), (0.05, 0.21))
        self.assertIsNone(rows["allreduce"][8].loop_us)

    def test_loop_time_table(self):
        row = lambda t, loop: runners.Row(t, 1.0, 0, loop)
        per_peer = {"hcl": {8: report.Median([row(0.2, 0.25), row(0.3, 0.21), row(0.1, 0.3)])},
                    "ompi-vader": {8: report.Median([row(0.05, 0.9)])}}
        text = report.collective_tables("broadcast", ["hcl", "ompi-vader"], per_peer, [8], None, 4096)
        lines = text.splitlines()
        title = next(i for i, l in enumerate(lines) if l.startswith("### broadcast: loop time"))
        header = next(l for l in lines[title:] if l.startswith("| size"))
        cells = next(l for l in lines[title:] if l.startswith("| ") and "8 |" in l)
        got = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in cells.split("|")]))
        self.assertEqual((got["hcl"], got["ompi-vader"]), ("0.25", "0.90"))
        # Runs whose rows have no loop time get no such table.
        plain = {"hcl": {8: report.Median([runners.Row(0.2, 1.0, 0)])}}
        self.assertNotIn("loop time", report.collective_tables("broadcast", ["hcl"], plain, [8], None, 4096))

    def test_medians_over_runs(self):
        runs = [runners.Sweep({"allreduce": {8: runners.Row(t, bw, 0)}}) for t, bw in [(1, 3.0), (9, 1.0), (2, 2.0)]]
        runs.append(runners.Sweep(error="exit code 1"))
        m = report.medians(runs, "allreduce")[8]
        self.assertEqual((m.time_us, m.busbw, len(m.runs)), (2, 2.0, 3))

    def test_table_ratios_and_failures(self):
        med = lambda bw: report.Median([runners.Row(1.0, bw, 0)])
        per_peer = {"hcl": {1024: med(4.0)}, "ompi-vader": {1024: med(2.0)}, "gloo": {}}
        text = report.collective_tables("allreduce", ["hcl", "ompi-vader", "gloo"], per_peer, [1024], None, 4096)
        header = next(l for l in text.splitlines() if l.startswith("| size"))
        row = next(l for l in text.splitlines() if l.startswith("|   1K") or l.startswith("| 1K"))
        cells = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in row.split("|")]))
        self.assertEqual(cells["hcl/ompi-vader"], "2.00")
        self.assertEqual(cells["gloo"], "fail")
        self.assertEqual(cells["hcl/gloo"], "-")
        self.assertIn("time (µs)", text)

    def test_bounds_are_columns_and_ratios_of_allreduce_only(self):
        med = lambda bw: report.Median([runners.Row(1.0, bw, 0)])
        per_peer = {"hcl": {1024: med(6.0)}, "bound": {1024: med(12.0)}, "copy-bound": {1024: med(4.0)}}
        text = report.collective_tables("allreduce", ["hcl"], per_peer, [1024], None, 0)
        header = next(l for l in text.splitlines() if l.startswith("| size"))
        row = next(l for l in text.splitlines() if "1K" in l)
        cells = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in row.split("|")]))
        self.assertEqual(cells["copy-bound"], "4.000")
        self.assertEqual(cells["hcl/bound"], "0.50")
        self.assertEqual(cells["hcl/copy-bound"], "1.50")
        other = report.collective_tables("allgather", ["hcl"], {"hcl": {1024: med(6.0)}}, [1024], None, 0)
        self.assertNotIn("bound", other)

    def test_schedule_matches_sweep_h(self):
        plan = runners.Plan(2, ["allreduce"], 8, 256 << 20, 512 << 20, 5, 1000, 10)
        self.assertEqual(plan.iters(8), 1000)
        self.assertEqual(plan.iters(1 << 20), 512)
        self.assertEqual(plan.iters(256 << 20), 5)
        self.assertEqual(len(list(plan.sizes())), 26)

    def test_reads_nccl_json(self):
        rows = runners.read_nccl_json(HERE / "fixtures" / "all_reduce_small.json")
        self.assertIn(8, rows)
        self.assertTrue(all(r.wrong == 0 and r.time_us > 0 for r in rows.values()))

    def test_arguments(self):
        a = compare.parse_args(["--sizes", "8:256M", "--peers", "hcl,gloo", "--colls", "allreduce,allgather"])
        self.assertEqual((a.min_bytes, a.max_bytes), (8, 256 << 20))
        self.assertEqual(a.peers, ["hcl", "gloo"])
        with self.assertRaises(SystemExit):
            compare.parse_args(["--peers", "nccl"])
        self.assertEqual(compare.parse_args(["--cpus", "0,1,0,1"]).cpus, [0, 1, 0, 1])
        self.assertIsNone(compare.parse_args([]).cpus)
        for bad in ["", "0,x", "-1"]:
            with self.assertRaises(SystemExit):
                compare.parse_args(["--cpus", bad])

    def test_pinning(self):
        plan = runners.Plan(4, ["allreduce"], 8, 8, 1, 1, 1, 10, cpus=[1, 0])
        self.assertEqual(runners.pinned(plan, 3, ["prog", "-x"]), ["taskset", "-c", "0", "prog", "-x"])
        self.assertEqual(runners.pinned(runners.Plan(2, [], 8, 8, 1, 1, 1, 10), 0, ["prog"]), ["prog"])
        # An MPI launch pins each rank by the rank its launcher gives it:
        # rank 1 (Open MPI's variable) and rank 3 (MPICH's) both get CPU 0.
        argv = runners.mpi_pinned(plan, ["grep", "Cpus_allowed_list", "/proc/self/status"])
        for env in ({"OMPI_COMM_WORLD_RANK": "1"}, {"PMI_RANK": "3"}):
            out = subprocess.run(argv, env=dict(os.environ, **env), capture_output=True, text=True, check=True)
            self.assertEqual(out.stdout.split()[-1], "0")


    def test_launch_shares_one_session(self):
        with tempfile.TemporaryDirectory() as tmp:
            # Field 6 of /proc/self/stat is the session id.
            cmd = lambda i: (["sh", "-c", f"cut -d' ' -f6 /proc/self/stat > {tmp}/{i}; echo out{i}"], dict(os.environ))
            out, error = runners.launch([cmd(0), cmd(1)], timeout=30)
            self.assertIsNone(error)
            self.assertEqual(out.strip(), "out0")
            sids = {Path(tmp, str(i)).read_text().strip() for i in range(2)}
            self.assertEqual(len(sids), 1)
            self.assertNotEqual(sids.pop(), str(os.getsid(0)))

    def test_placement_parsing(self):
        self.assertEqual(placement.grouping({0: 1, 1: 0, 2: 1, 3: 0}), "0+2|1+3")
        self.assertEqual(placement.grouping({0: 5, 1: 5, 2: 5, 3: 2}), "0+1+2|3")
        self.assertEqual(placement.grouping({0: 0, 1: 1}), "0|1")
        self.assertEqual(placement.rank_of(b"PATH=/bin\0OMPI_COMM_WORLD_RANK=3\0"), 3)
        self.assertEqual(placement.rank_of(b"PMI_RANK=2\0X=y"), 2)
        self.assertIsNone(placement.rank_of(b"RANKS=1\0RANK=\0"))
        # The command may hold spaces and parentheses; the CPU is field 39.
        stat = "42 (a (b) c) R " + " ".join(str(i) for i in range(4, 39)) + " 7 0 0"
        self.assertEqual(placement.cpu_of(stat), 7)
        sampler = placement.Sampler("prog", 2)
        self.assertIsNone(sampler.summary())
        sampler.counts.update({"0+1": 3, "0|1": 1})
        self.assertEqual(sampler.summary(), "0+1 75%, 0|1 25%")
        self.assertEqual(placement.summarize(collections.Counter({"a": 1, "b": 1, "c": 1, "d": 1}), most=2),
                         "a 25%, b 25%")
        # Only launches the kernel places, with more ranks than CPUs, are sampled.
        plan = lambda ranks, cpus=None: runners.Plan(ranks, [], 8, 8, 1, 1, 1, 10, cpus=cpus)
        self.assertIsNotNone(plan(placement.cpus_available() + 1).sampler("/x/prog"))
        self.assertIsNone(plan(placement.cpus_available() + 1, [0]).sampler("/x/prog"))
        self.assertIsNone(plan(placement.cpus_available()).sampler("/x/prog"))

    def test_launch_samples_its_ranks(self):
        busy = "import time\nend = time.monotonic() + 1.0\nwhile time.monotonic() < end: pass"
        # Ranks 1 and 0 by the MPI launchers' variable, which wins over a RANK inherited from outside.
        cmds = [([sys.executable, "-c", busy], dict(os.environ, RANK="7", OMPI_COMM_WORLD_RANK=str(1 - r)))
                for r in range(2)]
        sampler = placement.Sampler(sys.executable, 2)
        _, error = runners.launch(cmds, timeout=30, sampler=sampler)
        self.assertIsNone(error)
        self.assertEqual(set(sampler.pids), {0, 1})
        self.assertGreater(sum(sampler.counts.values()), 0)
        # A program the launch does not run is never found.
        other = placement.Sampler("/bin/sleep", 2)
        _, error = runners.launch(cmds, timeout=30, sampler=other)
        self.assertIsNone(error)
        self.assertEqual(other.pids, {})
        self.assertIsNone(other.summary())
        self.assertEqual(placement.executable(sys.executable + " (deleted)"), os.path.realpath(sys.executable))

    def test_launch_failure_and_timeout(self):
        env = dict(os.environ)
        start = time.monotonic()
        _, error = runners.launch([(["sh", "-c", "echo why >&2; exit 3"], env), (["sleep", "60"], env)],
                                  timeout=60, grace=0.2)
        self.assertTrue(error.startswith("exit code 3"), error)
        self.assertIn("why", error)
        _, error = runners.launch([(["sleep", "60"], env)], timeout=0.5)
        self.assertTrue(error.startswith("timed out"), error)
        self.assertLess(time.monotonic() - start, 30)


# callgrind_annotate output in the two forms call_cost.py reads (trimmed).
CALLER_TREE = """--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
   484,176 ( 1.47%)  < core/group.cc:hcl::inGroup() (44,026x) [libhcl.so.0.1.0]
   726,187 ( 2.20%)  *  ./elf/../sysdeps/x86_64/tls_get_addr.S:__tls_get_addr [ld-linux-x86-64.so.2]

 1,000,000 ( 3.00%)  < core/api/api_collectives.cc:hclBroadcast (22,000x) [libhcl.so.0.1.0]
 1,000,000 ( 3.00%)  *  core/api/api_collectives.cc:hclBroadcastHelper [libhcl.so.0.1.0]

20,000,000 (60.00%)  < ???:(anonymous namespace)::runOnce(int, float const*, float*) (20,000x) [hcl_bench]
 2,000,000 ( 6.00%)  < ???:main (2,000x) [hcl_bench]
22,000,000 (66.00%)  *  core/api/api_collectives.cc:hclBroadcast [libhcl.so.0.1.0]

"""

SELF_COSTS = """--------------------------------------------------------------------------------
33,000,000 (100.0%)  PROGRAM TOTALS
--------------------------------------------------------------------------------
Ir                  file:function
--------------------------------------------------------------------------------
3,000,000 (10.58%)  core/executor.cc:hcl::ScheduleRun::advance(bool*, bool*) [libhcl.so.0.1.0]
  900,000 ( 2.73%)  ???:0x0000000000004d50 [mca_btl_vader.so]
"""


class CallCostTest(unittest.TestCase):
    def test_calls_are_the_callers_arcs_of_that_function_alone(self):
        self.assertEqual(call_cost.calls_and_instructions(CALLER_TREE, "hclBroadcast"), (22000, 22000000))
        self.assertEqual(call_cost.calls_and_instructions(CALLER_TREE, "hclBroadcastHelper"), (22000, 1000000))
        self.assertEqual(call_cost.calls_and_instructions(CALLER_TREE, "hclReduce"), (0, 0))

    def test_top_functions_skip_the_totals(self):
        self.assertEqual(call_cost.top_functions(SELF_COSTS, 5),
                         [(3000000, "core/executor.cc:hcl::ScheduleRun::advance(bool*, bool*) [libhcl.so.0.1.0]"),
                          (900000, "???:0x0000000000004d50 [mca_btl_vader.so]")])
        self.assertEqual(len(call_cost.top_functions(SELF_COSTS, 1)), 1)


if __name__ == "__main__":
    unittest.main()
