"""Installs the peers' Debian packages when missing and builds the peer programs
into <build>/compare-peers/, rebuilding one when its sources or its command change."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

PEERS_SRC = Path(__file__).resolve().parent / "peers"

# Debian packages each peer needs, and a file or command that shows they are there.
PACKAGES = {
    "ompi": (["openmpi-bin", "libopenmpi-dev"], ["mpicc.openmpi", "mpirun.openmpi"]),
    "mpich": (["mpich", "libmpich-dev"], ["mpicc.mpich", "mpirun.mpich"]),
    "gloo": (["libgloo-dev"], ["/usr/include/gloo/allreduce.h"]),
    "iperf3": (["iperf3"], ["iperf3"]),
}


def _present(what):
    return Path(what).exists() if what.startswith("/") else shutil.which(what) is not None


def ensure_packages(groups, install=True):
    """Installs (apt-get, with sudo when not root) the packages of the groups
    whose files are missing. Returns the groups still missing afterwards."""
    missing = [g for g in groups if not all(_present(w) for w in PACKAGES[g][1])]
    if not missing:
        return []
    pkgs = sorted({p for g in missing for p in PACKAGES[g][0]})
    if install and shutil.which("apt-get"):
        sudo = [] if os.geteuid() == 0 else (["sudo"] if shutil.which("sudo") else None)
        if sudo is not None:
            print(f"# installing {' '.join(pkgs)}", file=sys.stderr)
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            ok = subprocess.run(sudo + ["apt-get", "install", "-y", "--no-install-recommends"] + pkgs,
                                env=env).returncode == 0
            if not ok:
                subprocess.run(sudo + ["apt-get", "update"], env=env)
                subprocess.run(sudo + ["apt-get", "install", "-y", "--no-install-recommends"] + pkgs, env=env)
    return [g for g in missing if not all(_present(w) for w in PACKAGES[g][1])]


def _cxx():
    return os.environ.get("CXX", "c++")


def recipes(build_dir, src_dir):
    """name -> (sources, command without the output, needed package group)."""
    build_dir = Path(build_dir).resolve()
    p = PEERS_SRC
    cxx = [_cxx(), "-std=c++20", "-O3", "-Wall", "-Wextra"]
    return {
        "mpi_ompi": ([p / "mpi_bench.c", p / "sweep.h"], ["mpicc.openmpi", "-O3", str(p / "mpi_bench.c")], "ompi"),
        "mpi_mpich": ([p / "mpi_bench.c", p / "sweep.h"], ["mpicc.mpich", "-O3", str(p / "mpi_bench.c")], "mpich"),
        "gloo_bench": ([p / "gloo_bench.cc", p / "sweep.h"],
                       cxx + [str(p / "gloo_bench.cc"), "-lgloo", "-pthread"], "gloo"),
        "hcl_bench": ([p / "hcl_bench.cc", p / "sweep.h", p / "nccl_json.h", Path(src_dir) / "include" / "hcl.h"],
                      cxx + ["-I", str(Path(src_dir) / "include"), str(p / "hcl_bench.cc"),
                             "-L", str(build_dir), "-lhcl", f"-Wl,-rpath,{build_dir}"], None),
        # -march=native: the bound should be the fastest reduce this machine can do.
        "bound_bench": ([p / "bound_bench.cc", p / "sweep.h"],
                        cxx + ["-march=native", str(p / "bound_bench.cc"), "-pthread"], None),
        "copy_bound_bench": ([p / "copy_bound_bench.cc", p / "sweep.h"], cxx + [str(p / "copy_bound_bench.cc")], None),
    }


def build(name, build_dir, src_dir):
    """Builds one peer program if needed. Returns (path, error text or None)."""
    sources, cmd, _ = recipes(build_dir, src_dir)[name]
    out_dir = Path(build_dir) / "compare-peers"
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / name
    stamp = out_dir / f"{name}.stamp"
    digest = hashlib.sha256(" ".join(cmd).encode())
    for s in sources:
        digest.update(Path(s).read_bytes())
    want = digest.hexdigest()
    if exe.exists() and stamp.exists() and stamp.read_text() == want:
        return exe, None
    full = cmd + ["-o", str(exe)]
    print(f"# building {name}", file=sys.stderr)
    r = subprocess.run(full, capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"{' '.join(full)}\n{r.stderr[-3000:]}"
    stamp.write_text(want)
    return exe, None
