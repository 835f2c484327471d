"""embedded: the Python phase of test/workloads/pyembed.c, an embedder that goes on after
Py_FinalizeEx.

Makes an unreachable reference cycle after gc.disable() whose finalizer writes "in-steps" and
then waits in a read of the pipe PYEMBED_FD (the GIL let go) until the embedder writes to it
after Py_FinalizeEx: longer than the program's exit waits for the library's steps (10 s), so that
CPython ends the library's thread where it asks for the GIL back (in a later run the byte is
there already, and the finalizer goes on at once). Waits for the library's thread
(PY_AWAIT_TASKS, librarythread), prints "ready" and returns at the first line of stdin; with
PYEMBED_ATEXITS set, first prints "atexits=N", N the callbacks in threading's exit calls (the
library's exit wait is one of them once its thread has taken steps in this interpreter)."""
import gc
import os
import sys
import threading

import librarythread


class Gate:
    def __del__(self, read=os.read, write=os.write, fd=int(os.environ["PYEMBED_FD"])):
        write(1, b"in-steps\n")
        read(fd, 1)


def main():
    gc.disable()
    gate = Gate()
    gate.self = gate
    del gate
    librarythread.await_it()
    print("ready", flush=True)
    sys.stdin.buffer.readline()
    if os.environ.get("PYEMBED_ATEXITS"):
        print("atexits=%d" % len(threading._threading_atexits), flush=True)


main()
