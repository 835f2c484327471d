"""gil_hold MODE SECONDS [CLEANUP_MS]: a main thread that computes in one long C call after
another, for the throughput of a program under a round storm (scripts/bench-gil.sh, figure 14).

MODE "hold": sorted() of 200,000 floats, a call that keeps the GIL throughout (tens of ms), as an
extension that never lets it go; "release": numpy's product of two 384x384 matrices, whose BLAS
call lets the GIL go, as torch's ops do. Each call leaves 100 small reference cycles, the garbage a
training step leaves, for the collector. With CLEANUP_MS, the program cleans up itself as NVFlare
does at a round's end (gc.collect(), then glibc's malloc_trim(0)) whenever CLEANUP_MS have passed
since its last cleanup, between two calls. Prints "ready", reads a line of stdin (the driver's go),
computes for SECONDS and prints "ops N seconds S collections C on_main M": the calls made, the time
they took, the full collections run meanwhile on any thread (gc.callbacks) and those among them
that ran on the main thread."""
import ctypes
import gc
import threading
import random
import sys
import time

import numpy

MODE, SECONDS = sys.argv[1], float(sys.argv[2])
CLEANUP_S = float(sys.argv[3]) / 1000 if sys.argv[3:] else 0
full, on_main = [], []
MAIN = threading.get_ident()


def count(phase, info):
    if phase == "stop" and info["generation"] == 2:
        full.append(1)
        if threading.get_ident() == MAIN:
            on_main.append(1)


class Node:
    pass


def garbage():
    for _ in range(100):
        a, b = Node(), Node()
        a.other, b.other = b, a


rng = random.Random(1)
floats = [rng.random() for _ in range(200000)]
left = numpy.random.default_rng(1).random((384, 384))
right = left.T.copy()
if MODE == "hold":
    def step():
        sorted(floats)
elif MODE == "release":
    def step():
        left @ right
else:
    sys.exit("gil_hold: MODE is hold or release")

libc = ctypes.CDLL(None)
gc.callbacks.append(count)
print("ready", flush=True)
sys.stdin.readline()
ops = 0
start = time.monotonic()
end, cleaned = start + SECONDS, start
while time.monotonic() < end:
    step()
    garbage()
    ops += 1
    if CLEANUP_S and time.monotonic() - cleaned >= CLEANUP_S:
        gc.collect()
        libc.malloc_trim(0)
        cleaned = time.monotonic()
print("ops %d seconds %.3f collections %d on_main %d"
      % (ops, time.monotonic() - start, len(full), len(on_main)), flush=True)
