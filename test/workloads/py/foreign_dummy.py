"""foreign_dummy LIB: a program whose C library (LIB, libforeign_thread.so) runs a Python
callback in a thread of its own, which makes threading register a Dummy thread for it (as
CPython never removes it, it stays listed after the thread ends), right after the main thread
unshared its filesystem context: the library's next Python thread then reuses that thread's
pthread_t, and so its ident.

Waits for the library's thread (PY_AWAIT_TASKS, librarythread), calls the library (which waits
for the process to be back at PY_AWAIT_TASKS - 1 tasks), waits for the library's new thread,
makes an unreachable reference cycle whose finalizer writes "finalized same=B" to stdout (B:
whether the thread it runs on has the callback's thread's ident, as the case needs; glibc's
stack cache decides), prints "ready", then waits for a line of stdin (a read, one C call). Then
prints "active=NAMES next=NAME" (threading.enumerate()'s names, and the name threading gives its
next unnamed thread). EOF ends it, with status 0."""
import ctypes
import gc
import os
import sys
import threading
import weakref

import librarythread


class Node:
    pass


FOREIGN = []


def finalized():
    os.write(1, f"finalized same={threading.get_ident() in FOREIGN}\n".encode())


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.foreign_after_unshare.restype = ctypes.c_ulong
    callback_type = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)

    @callback_type
    def foreign(_):
        threading.current_thread()
        return None

    tasks = int(os.environ["PY_AWAIT_TASKS"])
    FOREIGN.append(lib.foreign_after_unshare(foreign, tasks - 1))
    librarythread.await_it()
    gc.set_threshold(0)
    a, b = Node(), Node()
    a.other, b.other = b, a
    weakref.finalize(a, finalized)
    del a, b
    print("ready", flush=True)
    sys.stdin.buffer.readline()
    names = ",".join(t.name for t in threading.enumerate())
    print(f"active={names} next={threading.Thread().name}", flush=True)
    sys.stdin.buffer.readline()


if __name__ == "__main__":
    main()
