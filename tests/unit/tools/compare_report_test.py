#!/usr/bin/env python3
"""ctest: the parsing and reporting parts of tools/compare (no peer is run)."""
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "tools" / "compare"))

import compare  # noqa: E402
import report  # noqa: E402
import runners  # noqa: E402

SAMPLE = """noise from a launcher
row allreduce 8 2 1000 2.5 0.0032 0.0032 0
row allreduce 1048576 262144 512 500 2.097 2.097 0
row allgather 1048576 131072 512 100 10.48 5.24 3
"""


class CompareTest(unittest.TestCase):
    def test_parse_rows(self):
        rows = runners.parse_rows(SAMPLE)
        self.assertEqual(sorted(rows), ["allgather", "allreduce"])
        self.assertEqual(rows["allreduce"][1048576].time_us, 500.0)
        self.assertAlmostEqual(rows["allreduce"][8].busbw, 0.0032)
        self.assertEqual(rows["allgather"][1048576].wrong, 3)

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


if __name__ == "__main__":
    unittest.main()
