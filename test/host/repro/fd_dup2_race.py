"""The library opens files at arbitrary moments and takes the lowest free descriptor; a
program that closes a descriptor and dup2()s onto it then loses it to the library's close().

Every round, the library's thread opens /proc/self/statm (twice) and PID.status.tmp (and once
/proc/self/task/TID/comm, to name its Python thread), writes and closes them. Between a
program's close(0) and its dup2(saved, 0), that open() gets 0; the program's dup2 replaces
the library's file, the library writes its status JSON (or its thread's name) into the
program's file, and its close(0) then closes the program's restored descriptor; a dup2 that
comes while the library's open() is under way fails with EBUSY. Daemons, shells and
subprocess do close-then-dup2 on 0, 1 and 2 all the time. (Descriptor 0 here, so that this
program's own messages on 1 and 2 get out; with 2, they are lost.)

CPython's test_subprocess (test_close_fds_0_1_2 and the other check_close_std_fds tests)
lose the regrtest worker's stdout or stderr this way: the worker dies (EBADF) and regrtest
reports test_subprocess as crashed. test_os's FileTests.test_closerange, which needs two
consecutive free descriptors, skips when the library's transient file sits between them.
"""

import errno
import os
import time

import _repro


def restore():
    """dup2(saved, 0); counts the EBUSY that the kernel returns while another thread is
    in the middle of opening descriptor 0."""
    global busy
    while True:
        try:
            os.dup2(saved, 0)
            return
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise
            busy += 1


stormed = _repro.storm(interval=0.001)
saved = os.open(os.devnull, os.O_RDWR)
taken = lost = loops = busy = 0
deadline = time.monotonic() + 4
while time.monotonic() < deadline and not lost:
    loops += 1
    try:
        os.fstat(0)
    except OSError:
        lost += 1  # closed since our last dup2, and not by us
        restore()
        break
    os.close(0)
    time.sleep(0.0001)  # the program's work between close and dup2
    try:
        os.fstat(0)
        taken += 1  # someone else holds 0 now: the library
    except OSError:
        pass
    restore()
    time.sleep(0.0001)
problems = []
if lost:
    problems.append(f"descriptor 0 was closed behind the program's back after dup2 ({loops} loops)")
if busy:
    problems.append(f"dup2 onto descriptor 0 failed with EBUSY {busy} times")
if taken:
    problems.append(f"descriptor 0 was taken while the program had it closed, {taken} times")
if problems:
    _repro.bug("; ".join(problems) + f" (library actions: {_repro.actions()})")
if stormed and _repro.actions() == 0:
    _repro.bug("inconclusive: the library never acted")
_repro.ok(f"{loops} close/dup2 loops on descriptor 0, nothing taken or lost")
