"""A fork() child that closes its descriptors before exec races the worker the library starts
in it: the worker's files fail with EBADF, it says so on the child's stderr, and files stay
behind.

In a fork() child the library starts a worker thread that creates the child's FIFO and status
file, while the child itself, before exec, closes every descriptor it does not pass on
(subprocess with close_fds=True, the default; daemons; shells). The worker's directory
descriptor is closed (or its number reused) under it: "roundtrim: FIFO trigger off: cannot
open DIR/PID.fifo: Bad file descriptor" (or "cannot create ...", or "...: not our FIFO")
appears on the child's stderr, which the program reads as the child's own output, and a
FIFO made before the failure stays behind until another process's FIFO creation sweeps it.
subprocess uses fork() rather than vfork() with preexec_fn, user, group, extra_groups or
process_group (CPython's test_subprocess test_user, test_preexec*, ...).
"""

import os
import subprocess
import sys

import _repro

directory = _repro.fifo_dir()
runs = 200
noisy = []
for _ in range(runs):
    p = subprocess.run(
        [sys.executable, "-c", "pass"],
        preexec_fn=lambda: None,  # forces fork() instead of vfork()
        close_fds=True,
        stderr=subprocess.PIPE,
        text=True,
    )
    noisy += [line for line in p.stderr.splitlines() if line.startswith("roundtrim:")]
left = []
if directory:
    for name in os.listdir(directory):
        pid = name.split(".")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            left.append(name)
problems = []
if noisy:
    problems.append(f"{len(noisy)} of {runs} children wrote on stderr: {noisy[0]!r}")
if left:
    problems.append(f"files of exited children left in {directory}: {sorted(left)[:6]}")
if problems:
    _repro.bug("; ".join(problems))
_repro.ok(f"{runs} fork()ed children: nothing on their stderr, no files left")
