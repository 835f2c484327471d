"""round_at_exit: the program's first round reaches the library's thread after its exit began,
while an atexit callback waits in a C call (a last upload), threading's shutdown already run.

Makes an unreachable reference cycle after gc.disable() whose finalizer writes "collected on
main" or "collected on other" (the thread it ran on). Waits for the library's thread
(librarythread), prints "ready" and returns at the first line of stdin; its atexit callback
prints "at-exit", waits for a second line (a read, one C call) and returns. Exit status 0."""
import atexit
import gc
import os
import sys
import threading
import weakref

import librarythread


class Node:
    pass


def finalized():
    where = "main" if threading.get_ident() == threading.main_thread().ident else "other"
    os.write(1, ("collected on %s\n" % where).encode())


def last_upload():
    os.write(1, b"at-exit\n")
    sys.stdin.buffer.readline()


def main():
    gc.disable()
    a, b = Node(), Node()
    a.other, b.other = b, a
    weakref.finalize(a, finalized)
    del a, b
    atexit.register(last_upload)
    librarythread.await_it()
    print("ready", flush=True)
    sys.stdin.buffer.readline()


main()
