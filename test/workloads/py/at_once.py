"""at_once [deep|deeper]: a program whose main thread sits in one C call as soon as it starts, as
one that starts its worker threads and waits in join() for good. Run with python3 -S (no site
import): the interpreter is up only microseconds before the call.

Makes N unreachable reference cycles after gc.disable() (cycles.make), each with a weakref.finalize
callback; the callback that finds all N gone writes "collected N on=WHERE" to stdout (WHERE: "main"
on the main thread, else "another"). With "deep", each callback first takes the repr of a list
nested DEPTH deep (list_repr recurses in C, some hundred bytes of stack a level), so that the
collection goes deep into the C stack of the thread that runs it. With "deeper", the first takes
json.dumps of a list nested 150,000 deep (the C encoder recurses; a repr would copy quadratically)
under a raised recursion limit, as a program does that raised RLIMIT_STACK (`ulimit -s`) for deep
structures: some ten MiB of C stack, more than a thread gets under the usual 8 MiB limit. It imports
threading, as such a program does (the library's thread takes the steps only once the program has).
Prints "ready" and reads one byte of stdin; then exits 0 without finalisation."""
import _thread
import json
import os
import sys
import threading  # noqa: F401

import cycles

N = 100
HOW = sys.argv[1] if sys.argv[1:] else ""
DEPTH = {"deep": 900, "deeper": 150000}.get(HOW, 0)
MAIN = _thread.get_ident()
NESTED = []
if HOW == "deeper":
    sys.setrecursionlimit(DEPTH + 1000)
for _ in range(DEPTH):
    NESTED = [NESTED]
gone = []


def finalized():
    if HOW == "deeper":
        if not gone:
            json.dumps(NESTED)
    else:
        repr(NESTED)
    gone.append(1)
    if len(gone) == N:
        where = "main" if _thread.get_ident() == MAIN else "another"
        os.write(1, ("collected %d on=%s\n" % (N, where)).encode())


cycles.make(N, finalized)
os.write(1, b"ready\n")
os.read(0, 1)
os._exit(0)
