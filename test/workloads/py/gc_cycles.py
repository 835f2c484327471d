"""gc_cycles [--gc-enabled]: cyclic garbage that only a full collection frees.

Makes N objects that each sit in a reference cycle and are unreachable. By default the
program disables the collector (gc.disable()); with --gc-enabled it keeps it enabled but sets
the threshold to 0, so that no automatic collection runs and only an explicit full one frees
them. Prints "ready", then for each line on stdin prints "alive=K gc=E" (K: how many of the N
still exist, by weak reference; E: gc.isenabled()). EOF ends it. The main thread waits for
input in bytecode (mainloop), as a program that computes between rounds does."""
import gc
import sys
import weakref

import mainloop

N = 100


class Node:
    pass


def main():
    if "--gc-enabled" in sys.argv:
        gc.set_threshold(0)
    else:
        gc.disable()
    refs = []
    for _ in range(N):
        a, b = Node(), Node()
        a.other, b.other = b, a
        refs.append(weakref.ref(a))
    del a, b
    print("ready", flush=True)
    for _ in mainloop.lines():
        alive = sum(1 for r in refs if r() is not None)
        print("alive=%d gc=%s" % (alive, gc.isenabled()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
