"""The library's descriptors take the lowest free numbers when it loads.

POSIX gives open() the lowest free number, and programs count on it: a program started with
0, 1 and 2 open gets 3 from its first open(), and one started with descriptor 0 closed finds
0 closed. Under the library the signalfd, the eventfd and the FIFO take those numbers first,
so a child started with 0 closed finds it open (an eventfd or signalfd: reads fail with
EAGAIN, writes with EINVAL) and a program's descriptors are not the numbers it expects.

CPython's test_posix (TestPosixSpawn*.test_close_file: POSIX_SPAWN_CLOSE 0, the child checks
fstat(0)) and test_subprocess (test_pass_fds, test_pass_fds_redirected, test_close_fds: the
child lists its open descriptors) fail on this.
"""

import os
import subprocess
import sys

import _repro

CHILD = r"""
import os, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import _repro
# The FIFO is opened by the library's thread: give it the time to exist.
deadline = time.monotonic() + 2
while _repro.library() and not _repro.fifo_of(os.getpid()) and time.monotonic() < deadline:
    time.sleep(0.01)
taken = []
for fd in range(0, 16):
    try:
        taken.append(f"{fd}={os.readlink(f'/proc/self/fd/{fd}')}")
    except OSError:
        pass
first = os.open(os.devnull, os.O_RDONLY)
print(first, " ".join(taken))
"""

here = os.path.dirname(os.path.abspath(__file__))
# Only 0, 1 and 2 are inherited (close_fds): the first open() must return 3.
out = subprocess.run(
    [sys.executable, "-c", CHILD, here], stdout=subprocess.PIPE, close_fds=True, text=True
).stdout.split(" ", 1)
first, taken = int(out[0]), out[1].strip()
# Descriptor 0 closed at exec, as test_posix's test_close_file does.
read_fd, write_fd = os.pipe()
pid = os.posix_spawn(
    sys.executable,
    [sys.executable, "-c", CHILD, here],
    os.environ,
    file_actions=[(os.POSIX_SPAWN_CLOSE, 0), (os.POSIX_SPAWN_DUP2, write_fd, 1)],
)
os.close(write_fd)
with os.fdopen(read_fd) as f:
    closed_out = f.read().split(" ", 1)
os.waitpid(pid, 0)
closed_first = int(closed_out[0])

problems = []
if first != 3:
    problems.append(f"first open() returned {first}, not 3 (open: {taken})")
if closed_first != 0:
    problems.append(
        f"started with descriptor 0 closed, the first open() returned {closed_first} "
        f"(open: {closed_out[1].strip()})"
    )
if problems:
    _repro.bug("; ".join(problems))
_repro.ok("first open() returned 3, and 0 when 0 was closed")
