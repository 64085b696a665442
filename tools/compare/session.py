#!/usr/bin/env python3
"""Runs every command of a launch as children of this one process, so that
they share its session: with autogroup scheduling (the kernel's default on
desktop and many server kernels) each session is scheduled as one group, and
sched_yield only passes the CPU to tasks of the same group. Ranks in
sessions of their own cannot yield to each other, which made HCL's ranks
look slower than MPI's (whose launcher starts every rank in one session) on
hosts with more ranks than CPUs.

usage: session.py SPEC.json GRACE_SECONDS
SPEC: a list of {"argv", "env", "out", "err"}. When a command fails, the
others get GRACE seconds and are then killed. Exits with the first failing
command's code (128 + signal for a signal), else 0."""
import json
import subprocess
import sys
import time


def exit_code(returncode):
    return returncode if returncode >= 0 else 128 - returncode


def main(argv):
    spec = json.loads(open(argv[1]).read())
    grace = float(argv[2])
    procs = []
    for cmd in spec:
        with open(cmd["out"], "w") as out, open(cmd["err"], "w") as err:
            procs.append(subprocess.Popen(cmd["argv"], env=cmd["env"], stdout=out, stderr=err,
                                          stdin=subprocess.DEVNULL))
    first_failure = 0
    kill_at = None
    while any(p.poll() is None for p in procs):
        for p in procs:
            code = p.poll()
            if code not in (None, 0) and not first_failure:
                first_failure = exit_code(code)
                kill_at = time.monotonic() + grace
        if kill_at is not None and time.monotonic() > kill_at:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.02)
    for p in procs:
        code = p.wait()
        if code != 0 and not first_failure:
            first_failure = exit_code(code)
    return first_failure


if __name__ == "__main__":
    sys.exit(main(sys.argv))
