"""A documented limit of the signal trigger, which is off by default (roundtrim(7), LIMITS): a
process that carries the library, with the signal trigger on, can die of the trigger signal
while it execs a program that also carries the library.

Before an exec the library removes its FIFO and status file and unblocks its signal, so that
the new program starts with the mask it would have had without roundtrim. From execve() until
the new image's constructor has installed its handler, the signal is unblocked and has its
default action: one that arrives then terminates the process, although a sender checked just
before that the process carries the library with the signal on (its status file says
"signal":42, its maps hold libroundtrim.so), as roundtrim(7) asks. A pending signal would
survive execve() blocked, and the new image's signalfd would take it.

CPython's test_subprocess (test_user: fork() rather than vfork(), so the child has a worker,
a FIFO and a status file until it execs) saw "died with unknown signal 42" under a storm that
signals every process whose status file and maps say it carries the library.
"""

import os
import signal
import sys
import time

import _repro

st = _repro.status()
if st is None or not st.get("signal"):
    _repro.ok("skipped: no library with the signal trigger on in this process")
sig = st["signal"]
directory = _repro.fifo_dir()


def carries_library(pid):
    child = _repro.status(pid, directory)
    if not child or not child.get("signal"):
        return False
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "/libroundtrim.so" in f.read()
    except OSError:
        return False


deaths = sent = 0
runs = 20
for _ in range(runs):
    pid = os.fork()
    if pid == 0:
        # Exec once our status file is there, as a program does some time after fork(); a fork
        # child gets the library's files only once it has kept allocating for a second.
        deadline = time.monotonic() + 3
        while not _repro.status(os.getpid(), directory) and time.monotonic() < deadline:
            bytearray(1 << 16)
            time.sleep(0.001)
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(0.05)"])
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if carries_library(pid):
            try:
                os.kill(pid, sig)
                sent += 1
            except ProcessLookupError:
                pass
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == sig:
        deaths += 1
if deaths:
    _repro.limit(
        f"{deaths} of {runs} children died of signal {sig} while exec'ing a program that "
        f"carries the library ({sent} signals sent, each after checking status and maps)"
    )
_repro.ok(f"{runs} children exec'd under {sent} signals, none died")
