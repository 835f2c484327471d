"""at_once [deep]: a program whose main thread sits in one C call as soon as it starts, as one
that starts its worker threads and waits in join() for good. Run with python3 -S (no site
import): the interpreter is up only microseconds before the call.

Makes N unreachable reference cycles after gc.disable(), each with a weakref.finalize callback;
the callback that finds all N gone writes "collected N on=WHERE" to stdout (WHERE: "main" on
the main thread, else "another"). With "deep", each callback first takes the repr of a list
nested DEPTH deep (list_repr recurses in C, some hundred bytes of stack a level), so that the
collection goes deep into the C stack of the thread that runs it. It imports threading, as such a program does (the library's
thread takes the steps only once the program has). Prints "ready" and reads one byte of stdin;
then exits 0 without finalisation."""
import _thread
import gc
import os
import sys
import threading  # noqa: F401
import weakref

N = 100
DEPTH = 900  # under the default recursion limit of 1000
MAIN = _thread.get_ident()
NESTED = []
if sys.argv[1:] == ["deep"]:
    for _ in range(DEPTH):
        NESTED = [NESTED]
gone = []


class Node:
    pass


def finalized():
    repr(NESTED)
    gone.append(1)
    if len(gone) == N:
        where = "main" if _thread.get_ident() == MAIN else "another"
        os.write(1, ("collected %d on=%s\n" % (N, where)).encode())


gc.disable()
for _ in range(N):
    a, b = Node(), Node()
    a.other, b.other = b, a
    weakref.finalize(a, finalized)
del a, b
os.write(1, b"ready\n")
os.read(0, 1)
os._exit(0)
