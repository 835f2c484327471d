"""cycles: garbage that only a full collection frees, and who freed it.

make(n) disables the collector and leaves n unreachable reference cycles, each with a
weakref.finalize callback; the callback that finds all n gone writes "collected N by=NAME" to
stdout, NAME being threading.current_thread().name where it runs (a Dummy thread for a thread
Python does not know). make(n, finalized) runs the caller's callback instead."""
import gc
import os
import threading
import weakref


class _Node:
    pass


def make(n, finalized=None):
    gone = []

    def by_name():
        gone.append(1)
        if len(gone) == n:
            name = threading.current_thread().name
            os.write(1, ("collected %d by=%s\n" % (n, name)).encode())

    finalized = finalized or by_name
    gc.disable()
    for _ in range(n):
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        weakref.finalize(a, finalized)
