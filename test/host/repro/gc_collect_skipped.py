"""The program's own gc.collect() collects nothing while the library's collection runs, and
the program sees the collector enabled although it disabled it.

The library runs a full collection from a thread of its own on every action round. CPython
runs one collection at a time: a gc.collect() that comes while another is under way (here,
while the library's collection runs finalizers, which let other threads take the GIL) returns
0 at once, and the cycle the program just dropped survives it. While it collects, the library
also turns the collector on when the program turned it off (gc.disable()), and a thread of
the program can see gc.isenabled() return True.

CPython's test_asyncio (test_tasks ... test_log_destroyed_pending_task) drops a task in a
cycle, calls gc.collect() and checks that the task is gone: it fails under a round storm.
"""

import gc
import threading
import time
import weakref

import _repro


class Slow:
    def __del__(self):
        time.sleep(0.0002)  # a finalizer that lets other threads run, as many do


class Node:
    pass


def make_garbage(stop):
    while not stop.is_set():
        for _ in range(5):
            s = Slow()
            s.cycle = s
        time.sleep(0.002)


def watch_enabled(stop, seen):
    while not stop.is_set():
        if gc.isenabled():
            seen.append(True)
        time.sleep(0.0002)


gc.disable()
stormed = _repro.storm()
stop = threading.Event()
seen_enabled = []
threads = [
    threading.Thread(target=make_garbage, args=(stop,)),
    threading.Thread(target=watch_enabled, args=(stop, seen_enabled)),
]
for t in threads:
    t.start()
survived = tries = 0
deadline = time.monotonic() + 4
while time.monotonic() < deadline and not (survived and seen_enabled):
    n = Node()
    n.cycle = n
    ref = weakref.ref(n)
    del n
    gc.collect()
    tries += 1
    if ref() is not None:
        survived += 1
stop.set()
for t in threads:
    t.join()
gc.enable()
gc.collect()
problems = []
if survived:
    problems.append(f"a cycle survived the program's gc.collect() in {survived} of {tries} tries")
if seen_enabled:
    problems.append(f"gc.isenabled() was True {len(seen_enabled)} times after gc.disable()")
if problems:
    _repro.bug("; ".join(problems) + f" (library actions: {_repro.actions()})")
if stormed and _repro.actions() == 0:
    _repro.bug("inconclusive: the library never acted")
_repro.ok(f"{tries} gc.collect() calls all collected; gc stayed disabled")
