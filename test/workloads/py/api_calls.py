"""api_calls: the roundtrim module (scripts/python/roundtrim.py) driven from stdin, one command a
line, one answer a line.

round, trim, loaded: the call's result. pinned MIB: frees MIB MiB of 64 KiB blocks malloc'd
below one more that pins them in the heap, calls round() and answers its result, then the
RSS (KiB, /proc/self/statm) before the call and right after it returned, and how many times a
thread of the program that counts every 0.5 ms counted during the call (with a switch interval
of 10 s, that thread runs during the call only where the call lets the GIL go). round-nogil: the library's roundtrim_python_round called
through ctypes.CDLL, which releases the GIL around it (the module itself uses PyDLL): its
result. subinterpreter: creates a subinterpreter (after which CPython's PyGILState_Check says 1
in every thread) and answers "created". status: the dict as compact JSON, or None. maps: whether
libroundtrim is mapped into this process. fork: os.fork(); the child takes over stdin and stdout
and answers "child PID", and the parent, once the child has gone, "child exited CODE". exit: a
fork child leaves through os._exit(0). EOF ends the program. Stdin is read through mainloop, so
that the main thread keeps coming back to bytecode, as a training loop does."""
import ctypes
import json
import os
import sys
import threading
import time

import mainloop
import roundtrim


def answer(value):
    print(value, flush=True)


def rss_kib():
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def pinned(mib):
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size = 64 * 1024
    blocks = [libc.malloc(size) for _ in range(mib * 16)]
    for block in blocks:
        ctypes.memset(block, 1, size)
    # The last block, above the others at the heap's top, keeps glibc from shrinking the heap.
    pin = blocks.pop()
    for block in blocks:
        libc.free(block)
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.wait(0.0005):
            ticks[0] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    counter = threading.Thread(target=count)
    counter.start()
    while ticks[0] < 2:
        time.sleep(0.001)
    before = rss_kib()
    start = ticks[0]
    acted = roundtrim.round()
    during = ticks[0] - start
    after = rss_kib()
    stop.set()
    counter.join()
    sys.setswitchinterval(interval)
    libc.free(pin)
    return f"{acted} {before} {after} {during}"


def main():
    child = False
    answer("ready")
    for line in mainloop.lines():
        if line == "round":
            answer(roundtrim.round())
        elif line == "trim":
            answer(roundtrim.trim())
        elif line == "round-nogil":
            answer(ctypes.CDLL(None).roundtrim_python_round())
        elif line == "subinterpreter":
            try:
                import _interpreters as interpreters
            except ImportError:
                import _xxsubinterpreters as interpreters
            interpreters.create()
            answer("created")
        elif line.startswith("pinned "):
            answer(pinned(int(line.split()[1])))
        elif line == "loaded":
            answer(roundtrim.loaded())
        elif line == "status":
            status = roundtrim.status()
            answer("None" if status is None else json.dumps(status, separators=(",", ":")))
        elif line == "maps":
            with open("/proc/self/maps", encoding="utf-8") as maps:
                answer("libroundtrim" in maps.read())
        elif line == "fork":
            pid = os.fork()
            if pid == 0:
                child = True
                answer(f"child {os.getpid()}")
            else:
                _, status = os.waitpid(pid, 0)
                answer(f"child exited {os.waitstatus_to_exitcode(status)}")
        elif line == "exit" and child:
            os._exit(0)
        else:
            answer(f"unknown command {line!r}")


main()
