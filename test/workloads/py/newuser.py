"""newuser [setns]: a program of one thread that enters a new user namespace (unshare(2), which the
kernel allows only to a process of one thread) while the library's thread runs a round's steps, as
root; with "setns", it switches to its own mount namespace instead (setns(2) with CLONE_NEWNS,
which the kernel refuses while another task shares the caller's filesystem context, as the
library's thread does).

Makes, with slowsteps, an unreachable reference cycle (collector enabled, threshold 0: only an
explicit full collection frees it) whose finalizer writes "in-steps" to stdout, sleeps SLOW_S
seconds (letting the GIL go) and writes "fin-done". Waits for the library's thread where
PY_AWAIT_TASKS says so (librarythread), prints "ready", then waits for a line of stdin (a read, one
C call). Then calls unshare(CLONE_NEWUSER), or setns(open("/proc/self/ns/mnt"), CLONE_NEWNS),
through ctypes.CDLL, which lets the GIL go, or with first argument "pydll" through ctypes.PyDLL,
which holds it (as CPython holds it around pthread_create and fork), and prints "unshare=R" or
"setns=R" (R: 0, or the errno's name). EOF ends it, with status 0 and no finalisation."""
import ctypes
import errno
import os
import sys

import librarythread
import slowsteps

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
SLOW_S = 1.0
libc = (ctypes.PyDLL if sys.argv[1:2] == ["pydll"] else ctypes.CDLL)(None, use_errno=True)


def main():
    slowsteps.make(SLOW_S)
    fd = os.open("/proc/self/ns/mnt", os.O_RDONLY)
    librarythread.await_it()
    print("ready", flush=True)
    sys.stdin.buffer.readline()
    if sys.argv[2:] == ["setns"]:
        name, rc = "setns", libc.setns(fd, CLONE_NEWNS)
    else:
        name, rc = "unshare", libc.unshare(CLONE_NEWUSER)
    print(name + "=" + ("0" if rc == 0 else errno.errorcode.get(ctypes.get_errno(), "?")),
          flush=True)
    sys.stdin.buffer.readline()
    os._exit(0)


if __name__ == "__main__":
    main()
