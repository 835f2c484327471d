"""lazy_threading: a program that has not imported threading when a round comes, while its main
thread sits in a C call; the finalizer of its garbage imports logging, which imports threading.

Makes an unreachable reference cycle (collector enabled, threshold 0: only an explicit full
collection frees it) with a weakref.finalize callback that imports logging and writes
"finalized" to stdout. Waits for the library's thread where PY_AWAIT_TASKS says so
(librarythread), prints "ready", then waits for a line of stdin (a read, one C call). Then prints
"main=B", B whether its main thread is threading's main thread (as it is without the library:
the module's first importer becomes its main thread). EOF ends it, with status 0.

A site's .pth file may have imported threading already (zipfile imports it): it is forgotten
first, as if it never had been, and the next import runs the module afresh."""
import os
import sys
import weakref

import librarythread

sys.modules.pop("threading", None)


class Node:
    pass


def finalized():
    import logging

    logging.getLogger("lazy_threading").debug("finalized")
    os.write(1, b"finalized\n")


def main():
    import gc

    gc.set_threshold(0)
    a, b = Node(), Node()
    a.other, b.other = b, a
    weakref.finalize(a, finalized)
    del a, b
    librarythread.await_it()
    print("ready", flush=True)
    sys.stdin.buffer.readline()
    import threading

    print(f"main={threading.current_thread() is threading.main_thread()}", flush=True)
    sys.stdin.buffer.readline()


if __name__ == "__main__":
    main()
