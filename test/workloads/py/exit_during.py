"""exit_during HOW: exits while the library's thread runs the Python steps.

Makes N unreachable reference cycles after gc.disable(), each with a weakref.finalize callback,
prints "ready" and waits for a line of stdin in one C call (a read by the main thread), so that
a round's steps go to the library's thread. The first callback that runs prints "in-steps" and
then, by HOW: "sleep" sleeps 20 ms (giving up the GIL in the middle of the collection), "spin"
keeps the GIL for 20 ms, "none" goes on at once, "slow" sleeps 200 ms (CPython ends the library's
thread when it asks for the GIL back after finalisation began) and makes finalisation last 1 s
(sys.stdout becomes an object whose flush() sleeps once the interpreter finalises); "cxx" does as
"slow" with the 200 ms inside a C++ op whose RAII guard lets the GIL go (GIL_GUARD: the path of
test/workloads/dso/gil_guard.cpp's object), as PyTorch's ops do; "lock" holds a lock of the
program's for 200 ms, as a logging handler around a write, and an object torn down at exit takes
it 400 ms into finalisation (it writes "teardown took the lock" to stderr); "interrupt" waits,
the GIL let go between looks, until the program's exit has begun (threading._shutdown, whose
first step is the library's wait for these steps), writes "exiting", sleeps 3 s and writes
"fin-done" (the test sends SIGINT meanwhile); "interrupt-cxx" does as "interrupt" with 300 ms
inside the C++ op instead of the 3 s, and finalisation lasting 1 s as with "cxx". At EOF on stdin
the main thread exits with status 3 through interpreter finalisation, whatever the library's thread is doing then.
Before "ready" it waits for the library's thread where PY_AWAIT_TASKS says so (librarythread)."""
import ctypes
import gc
import os
import sys
import threading
import time
import types
import weakref

import librarythread

N = 2000
first = []
guard = []
LOCK = threading.Lock()


class Node:
    pass


class LockAtTeardown:
    def __del__(self, lock=LOCK, sleep=time.sleep, write=os.write):
        sleep(0.4)
        with lock:
            write(2, b"teardown took the lock\n")


class SlowFlush:
    def write(self, text):
        return len(text)

    def flush(self, sleep=time.sleep, finalizing=sys.is_finalizing):
        if finalizing():
            sleep(0.5)


def finalized(how):
    if first:
        return
    first.append(1)
    os.write(1, b"in-steps\n")
    if how == "sleep":
        time.sleep(0.02)
    elif how == "slow":
        time.sleep(0.2)
    elif how == "cxx":
        guard[0].gil_guard_work(200)
    elif how == "lock":
        with LOCK:
            time.sleep(0.2)
    elif how in ("interrupt", "interrupt-cxx"):
        while not threading._SHUTTING_DOWN:
            time.sleep(0.001)
        os.write(1, b"exiting\n")
        if how == "interrupt":
            time.sleep(3)
        else:
            guard[0].gil_guard_work(300)
        os.write(1, b"fin-done\n")
    elif how == "spin":
        end = time.monotonic() + 0.02
        while time.monotonic() < end:
            pass


def main():
    how = sys.argv[1]
    if how in ("cxx", "interrupt-cxx"):
        guard.append(ctypes.PyDLL(os.environ["GIL_GUARD"]))
    gc.disable()
    for _ in range(N):
        a, b = Node(), Node()
        a.other, b.other = b, a
        a.payload = [0] * 64
        weakref.finalize(a, finalized, how)
    del a, b
    librarythread.await_it()
    print("ready", flush=True)
    sys.stdin.buffer.read()
    if how in ("slow", "cxx", "interrupt-cxx"):
        sys.stdout = SlowFlush()
    if how == "lock":
        teardown = types.ModuleType("exit_during_teardown")
        teardown.keep = LockAtTeardown()
        sys.modules[teardown.__name__] = teardown
    return 3


if __name__ == "__main__":
    sys.exit(main())
