#!/usr/bin/env python3
"""ctest: tools/plot/plot.py turns an nccl-tests JSON fixture into a PNG.
Exit 77 (skipped) when matplotlib is not installed."""
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLOT = HERE.parents[2] / "tools" / "plot" / "plot.py"
FIXTURE = HERE / "fixtures" / "all_reduce_small.json"

with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "plot.png"
    r = subprocess.run([sys.executable, str(PLOT), str(out), str(FIXTURE), str(FIXTURE), "--labels", "a,b"],
                       capture_output=True, text=True)
    if r.returncode == 77:
        print("SKIP: matplotlib is not installed:", r.stderr.strip())
        sys.exit(77)
    assert r.returncode == 0, f"plot.py exited {r.returncode}: {r.stderr}"
    assert out.exists(), "no PNG written"
    data = out.read_bytes()
    assert len(data) > 1000, f"PNG is only {len(data)} bytes"
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    bad = subprocess.run([sys.executable, str(PLOT), str(out), str(FIXTURE), "--labels", "a,b"],
                         capture_output=True, text=True)
    assert bad.returncode not in (0, 77), "a label count that does not match the inputs must fail"
print("plot.py wrote a PNG from the fixture")
