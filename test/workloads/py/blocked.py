"""blocked MODE: the main thread sits in one C call until a byte arrives on stdin.

MODE "read": os.read(0, 1), which releases the GIL (as any blocking read or sleep does);
MODE "hold": libc read(2) through ctypes.PyDLL, which keeps it. Before that the program makes
N unreachable reference cycles with the collector enabled and its threshold at 0 (only an
explicit full collection frees them) and prints "ready". When the call returns it prints
"released alive=K" (K: how many of the N still exist), then for each line on stdin prints
"alive=K", waiting in bytecode (mainloop). EOF ends it."""
import ctypes
import gc
import os
import sys
import threading  # noqa: F401  (the library's thread takes the steps only once it is imported)
import weakref

import mainloop

N = 100


class Node:
    pass


def alive(refs):
    return sum(1 for r in refs if r() is not None)


def main():
    mode = sys.argv[1]
    gc.set_threshold(0)
    refs = []
    for _ in range(N):
        a, b = Node(), Node()
        a.other, b.other = b, a
        refs.append(weakref.ref(a))
    del a, b
    libc = ctypes.PyDLL(None)
    buf = ctypes.create_string_buffer(1)
    print("ready", flush=True)
    if mode == "hold":
        libc.read(0, buf, 1)
    else:
        os.read(0, 1)
    print("released alive=%d" % alive(refs), flush=True)
    for _ in mainloop.lines():
        print("alive=%d" % alive(refs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
