"""mp_children METHOD: multiprocessing with the fork, forkserver or spawn start method.
The parent prints "parent" and waits for a line on stdin (so that a round can run in it first),
then starts 2 children. Each makes cyclic garbage, sends its pid through a queue and works
(allocates a MiB every 10 ms) until an Event is set: a fork child gets the library's worker only
once it keeps running and allocating. The parent prints "child PID" for each, then "ready",
waits for a line, sets the Event, joins them and prints "done CODE1 CODE2". Every main thread
waits in bytecode (mainloop, short Event waits), so that rounds find it."""
import multiprocessing as mp
import os
import sys

import mainloop


class Node:
    pass


def child(queue, go):
    for _ in range(1000):
        n = Node()
        n.self = n
    queue.put(os.getpid())
    for _ in range(6000):
        if go.wait(0.01):
            break
        bytearray(1 << 20)
    for _ in range(1000):
        n = Node()
        n.self = n


def main():
    ctx = mp.get_context(sys.argv[1])
    lines = mainloop.lines()
    print("parent", flush=True)
    next(lines)
    queue, go = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=child, args=(queue, go)) for _ in range(2)]
    for p in procs:
        p.start()
    for _ in procs:
        print("child %d" % queue.get(timeout=60), flush=True)
    print("ready", flush=True)
    next(lines)
    go.set()
    for p in procs:
        p.join(60)
    print("done %s" % " ".join(str(p.exitcode) for p in procs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
