"""setns_busy LIB: switches to its own mount namespace (setns(2) with CLONE_NEWNS, which the kernel
refuses while another task shares the caller's filesystem context, as the library's thread does)
while the library's thread runs a round's steps and another thread of the program keeps the GIL,
running bytecode, as root.

A second thread unshares its filesystem context (so that only the library's thread shares the main
thread's) and waits. Makes, with slowsteps, an unreachable reference cycle (collector enabled,
threshold 0: only an explicit full collection frees it) whose finalizer writes "in-steps", sleeps
SLOW_S seconds (letting the GIL go) and writes "fin-done". Waits for the library's thread
(PY_AWAIT_TASKS=4: its own two, the worker and the library's; librarythread), prints "ready", then
waits for a line of stdin (a read, one C call). Then sets the second thread spinning in bytecode
and calls LIB's foreign_work_then_setns (libforeign_thread.so, through ctypes.CDLL: the GIL let go;
20 ms of work before the call, in which the spinning thread takes the GIL), and prints "setns=R"
(R: 0, or the errno's name). EOF ends it, with status 0."""
import ctypes
import errno
import os
import sys
import threading

import librarythread
import slowsteps

CLONE_FS = 0x00000200
SLOW_S = 1.0
libc = ctypes.CDLL(None, use_errno=True)
lib = ctypes.CDLL(sys.argv[1], use_errno=True)
go = threading.Event()
stop = threading.Event()
alone = threading.Event()


def spin():
    if libc.unshare(CLONE_FS) == 0:
        alone.set()
    go.wait()
    while not stop.is_set():
        pass


def main():
    slowsteps.make(SLOW_S)
    fd = os.open("/proc/self/ns/mnt", os.O_RDONLY)
    spinner = threading.Thread(target=spin)
    spinner.start()
    if not alone.wait(10):
        print("unshare(CLONE_FS) failed", flush=True)
        return
    librarythread.await_it()
    print("ready", flush=True)
    sys.stdin.buffer.readline()
    go.set()
    rc = lib.foreign_work_then_setns(fd, 20000)
    print("setns=" + ("0" if rc == 0 else errno.errorcode.get(ctypes.get_errno(), "?")),
          flush=True)
    stop.set()
    spinner.join()
    sys.stdin.buffer.readline()


main()
