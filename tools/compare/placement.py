"""Which ranks shared a CPU while a launch ran. Where more ranks than CPUs
run unpinned, the kernel settles on one grouping of ranks per CPU and
mostly keeps it for the whole launch. Small-message times depend on that
grouping as much as on the library (4 ranks on 2 CPUs, 8 B all-reduce: about
3 us where ranks 0 and 2 share a CPU, about 4.5 us where 0 and 3 do, for Open
MPI and HCL alike; performance.md). Each launch's report therefore says which
groupings it saw."""

import collections
import os
import time
from pathlib import Path

# Where each launcher puts a process's rank; the launchers' own first, since
# an MPI rank may inherit a RANK from the environment compare.py ran in.
RANK_VARIABLES = (b"OMPI_COMM_WORLD_RANK", b"PMI_RANK", b"RANK")


def cpus_available():
    return len(os.sched_getaffinity(0))


def grouping(cpu_of_rank):
    """The ranks per CPU as text, groups in the order of their lowest rank:
    {0: 1, 1: 0, 2: 1, 3: 0} -> "0+2|1+3"."""
    groups = collections.defaultdict(list)
    for rank in sorted(cpu_of_rank):
        groups[cpu_of_rank[rank]].append(rank)
    return "|".join("+".join(str(r) for r in g) for g in sorted(groups.values()))


def rank_of(environ_bytes):
    """The rank a process's environment (/proc/PID/environ) names, or None."""
    values = dict(entry.split(b"=", 1) for entry in environ_bytes.split(b"\0") if b"=" in entry)
    for name in RANK_VARIABLES:
        if name in values and values[name].isdigit():
            return int(values[name])
    return None


def stat_fields(stat_text):
    """/proc/PID/stat's fields from the third (state) on: the command before
    them may hold spaces and parentheses."""
    return stat_text[stat_text.rfind(")") + 2:].split()


def cpu_of(stat_text):
    """The CPU a process last ran on, from /proc/PID/stat (field 39)."""
    return int(stat_fields(stat_text)[36])


def summarize(counts, most=3):
    """"0+2|1+3 91%, 0+1+2|3 6%" from samples counted by grouping, or None
    where there are none."""
    total = sum(counts.values())
    if not total:
        return None
    return ", ".join(f"{g} {100 * n // total}%" for g, n in counts.most_common(most))


def executable(path):
    """A program's file as /proc/PID/exe names it: the real path, without the
    " (deleted)" the kernel adds once the file was replaced (a rebuild)."""
    path = str(path)
    return os.path.realpath(path[:-len(" (deleted)")] if path.endswith(" (deleted)") else path)


class Sampler:
    """Finds the ranks of one launch (processes of session `session`, which
    the launch sets, running `program`) and records their grouping each time
    sample() is called."""

    RESCAN_SECONDS = 0.5

    def __init__(self, program, ranks):
        self.session, self.program, self.ranks = None, executable(program), ranks
        self.pids = {}
        self.counts = collections.Counter()
        self.next_scan = 0.0

    def _scan(self):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in self.pids.values():
                continue
            try:
                stat = (entry / "stat").read_text()
                if int(stat_fields(stat)[3]) != self.session:  # field 6
                    continue
                if executable(os.readlink(entry / "exe")) != self.program:
                    continue
                rank = rank_of((entry / "environ").read_bytes())
            except (OSError, ValueError, IndexError):
                continue
            if rank is not None and 0 <= rank < self.ranks:
                self.pids[rank] = int(entry.name)

    def sample(self):
        if len(self.pids) < self.ranks:
            now = time.monotonic()
            if now < self.next_scan:
                return
            self.next_scan = now + self.RESCAN_SECONDS
            self._scan()
            if len(self.pids) < self.ranks:
                return
        cpus = {}
        for rank, pid in self.pids.items():
            try:
                cpus[rank] = cpu_of(Path(f"/proc/{pid}/stat").read_text())
            except (OSError, ValueError, IndexError):
                return  # a rank has exited: the launch is ending
        self.counts[grouping(cpus)] += 1

    def summary(self):
        return summarize(self.counts)
