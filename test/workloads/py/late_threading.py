"""late_threading: a program whose main thread waits on a lock (one C call) for good while the
program has not imported threading yet, as a launcher's main thread that waits for its workers
may, and one of its own threads (started with _thread) imports threading later.

Makes an unreachable reference cycle (collector enabled, threshold 0: only an explicit full
collection frees it) with a weakref.finalize callback that writes "finalized on=WHERE" to stdout
(WHERE: "main" on the main thread, else "other"). Waits for the library's thread where
PY_AWAIT_TASKS says so (librarythread), forgets threading as lazy_threading does, starts its
thread, prints "ready", and the main thread waits on the lock. The thread reads stdin: at the
first line it imports threading and prints "imported"; at EOF it lets the main thread go, which
ends with status 0 and no finalisation."""
import _thread
import os
import sys
import weakref

import librarythread

sys.modules.pop("threading", None)
MAIN = _thread.get_ident()


class Node:
    pass


def finalized():
    where = "main" if _thread.get_ident() == MAIN else "other"
    os.write(1, ("finalized on=%s\n" % where).encode())


def serve(lock):
    sys.stdin.buffer.readline()
    import threading  # noqa: F401

    print("imported", flush=True)
    sys.stdin.buffer.read()
    lock.release()


def main():
    import gc

    gc.set_threshold(0)
    a, b = Node(), Node()
    a.other, b.other = b, a
    weakref.finalize(a, finalized)
    del a, b
    librarythread.await_it()
    lock = _thread.allocate_lock()
    lock.acquire()
    _thread.start_new_thread(serve, (lock,))
    print("ready", flush=True)
    lock.acquire()
    os._exit(0)


if __name__ == "__main__":
    main()
