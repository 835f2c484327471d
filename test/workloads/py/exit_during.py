"""exit_during HOW: exits while the library's thread runs the Python steps.

Makes N unreachable reference cycles after gc.disable(), each with a weakref.finalize callback,
prints "ready" and waits for a line of stdin in one C call (a read by the main thread), so that
a round's steps go to the library's thread. The first callback that runs prints "in-steps" and
then, by HOW: "sleep" sleeps 20 ms (giving up the GIL in the middle of the collection), "spin"
keeps the GIL for 20 ms, "none" goes on at once. At EOF on stdin the main thread exits with
status 3 through interpreter finalisation, whatever the library's thread is doing then."""
import gc
import os
import sys
import time
import weakref

N = 2000
first = []


class Node:
    pass


def finalized(how):
    if first:
        return
    first.append(1)
    os.write(1, b"in-steps\n")
    if how == "sleep":
        time.sleep(0.02)
    elif how == "spin":
        end = time.monotonic() + 0.02
        while time.monotonic() < end:
            pass


def main():
    how = sys.argv[1]
    gc.disable()
    for _ in range(N):
        a, b = Node(), Node()
        a.other, b.other = b, a
        a.payload = [0] * 64
        weakref.finalize(a, finalized, how)
    del a, b
    print("ready", flush=True)
    sys.stdin.buffer.read()
    return 3


if __name__ == "__main__":
    sys.exit(main())
