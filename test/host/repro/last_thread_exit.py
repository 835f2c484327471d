"""A process whose last thread ends with pthread_exit() never exits under the library, and
SIGTERM cannot end it.

When the last thread of a process calls pthread_exit(), or returns from its start routine,
the process exits with status 0. The library's worker thread keeps the process alive instead:
its main thread is a zombie, the worker waits forever, and since the worker blocks every
signal, SIGTERM and SIGINT stay pending (ShdPnd in /proc/PID/status); only SIGKILL ends it,
and then the FIFO and status file stay behind.

CPython's test_threading (test_main_thread_after_fork_from_nonmain_thread) forks from a
thread: in the child, that thread is the only one, and it ends with pthread_exit() when its
function returns. Without rounds the parent's waitpid() hangs; with rounds, the library's
Python thread asks for the GIL in that child after the last Python thread state is gone and
CPython aborts it ("Fatal Python error: init_threadstate: thread state already initialized").
Both cases are checked here, the first with a C-level pthread_exit through ctypes.
"""

import os
import signal
import select
import subprocess
import sys
import threading
import time

import _repro


def wait_exit(pid, timeout):
    """The child's wait status once it exits, or None after timeout seconds."""
    fd = os.pidfd_open(pid)
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    if not readable:
        return None
    return os.waitpid(pid, 0)[1]


def pending_signals(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("ShdPnd:"):
                    return line.split()[1]
    except OSError:
        pass
    return "?"


problems = []

# 1. The main thread calls pthread_exit(); nothing else runs in the process.
child = subprocess.Popen(
    [sys.executable, "-c", "import ctypes; ctypes.CDLL(None).pthread_exit(None)"]
)
if wait_exit(child.pid, 5) is None:
    child.send_signal(signal.SIGTERM)
    if wait_exit(child.pid, 1) is None:
        problems.append(
            f"after pthread_exit() of its only thread, pid {child.pid} did not exit in 5 s, "
            f"nor on SIGTERM (ShdPnd {pending_signals(child.pid)})"
        )
    child.kill()
    child.wait()
else:
    child.returncode = 0  # reaped above

# 2. As test_threading: fork from a thread; in the child that thread returns. Rounds are sent
# to the child's FIFO meanwhile when the library is there.
directory = _repro.fifo_dir()
forked = []
exit_status = []


def fork_and_wait():
    pid = os.fork()
    if pid == 0:
        time.sleep(0.2)  # long enough for a few rounds to reach this child
        return  # the thread ends: in the child it is the last one
    forked.append(pid)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if directory:
            _repro.send_line(directory, pid, "round")
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            exit_status.append(status)
            return
        time.sleep(0.005)


t = threading.Thread(target=fork_and_wait)
t.start()
t.join()
if forked:
    pid = forked[0]
    if not exit_status:
        problems.append(
            f"a child forked from a thread did not exit in 5 s after that thread returned "
            f"(ShdPnd {pending_signals(pid)})"
        )
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    elif exit_status[0] != 0:
        problems.append(
            f"a child forked from a thread ended with wait status {exit_status[0]:#x} "
            f"(signal {os.WTERMSIG(exit_status[0]) if os.WIFSIGNALED(exit_status[0]) else '-'})"
        )
if problems:
    _repro.bug("; ".join(problems))
_repro.ok("both processes exited with status 0 when their last thread ended")
