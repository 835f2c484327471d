"""between [--gc-disabled] [--announce api|fifo]: rounds whose end is followed by a long blocking
wait, as an FL client waits for its next model.

The main thread always waits for the next line of stdin in threading.Event().wait(), one C call
(a lock acquisition) that a reader thread ends. "round" makes N unreachable reference cycles
(only a full collection frees them: the collector is disabled with --gc-disabled, else its
threshold is 0), ends the round (with --announce api, the default, through roundtrim.round();
with fifo, the test writes the FIFO once it reads "waiting") and prints "waiting"; any other line
prints "alive=K gc=E" (K: how many of the last round's N still exist; E: gc.isenabled()). EOF
ends it."""
import argparse
import gc
import sys
import threading
import weakref

import roundtrim

N = 100


class Node:
    pass


def make_cycles():
    refs = []
    for _ in range(N):
        a, b = Node(), Node()
        a.other, b.other = b, a
        refs.append(weakref.ref(a))
    return refs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gc-disabled", action="store_true")
    parser.add_argument("--announce", choices=("api", "fifo"), default="api")
    args = parser.parse_args()
    if args.gc_disabled:
        gc.disable()
    else:
        gc.set_threshold(0)
    lines = []
    arrived = threading.Event()

    def reader():
        for line in sys.stdin:
            lines.append(line.rstrip("\n"))
            arrived.set()
        lines.append(None)
        arrived.set()

    threading.Thread(target=reader, daemon=True).start()
    print("ready", flush=True)
    refs = []
    while True:
        # The wait between rounds.
        while not lines:
            arrived.wait()
            arrived.clear()
        line = lines.pop(0)
        if line is None:
            return 0
        if line == "round":
            refs = make_cycles()
            if args.announce == "api":
                roundtrim.round()
            print("waiting", flush=True)
        else:
            alive = sum(1 for r in refs if r() is not None)
            print("alive=%d gc=%s" % (alive, gc.isenabled()), flush=True)


if __name__ == "__main__":
    sys.exit(main())
