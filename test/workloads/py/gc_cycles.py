"""gc_cycles: cyclic garbage in a program that disabled the collector.

Makes N objects that each sit in a reference cycle and are unreachable, with gc disabled, so
that only a full collection frees them. Prints "ready", then for each line on stdin prints
"alive=K gc=E" (K: how many of the N still exist, by weak reference; E: gc.isenabled()).
EOF ends it. Imports nothing but what it names."""
import gc
import sys
import weakref

N = 100


class Node:
    pass


def main():
    gc.disable()
    refs = []
    for _ in range(N):
        a, b = Node(), Node()
        a.other, b.other = b, a
        refs.append(weakref.ref(a))
    del a, b
    print("ready", flush=True)
    for _ in sys.stdin:
        alive = sum(1 for r in refs if r() is not None)
        print("alive=%d gc=%s" % (alive, gc.isenabled()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
