"""fork_workers MIB [WORKERS [BURSTS]] (4 workers, 0 bursts by default): a parent that holds MIB
MiB of small Python objects (dicts that hold a list, strings, ints) forks WORKERS workers, as a
DataLoader with fork workers does; each worker allocates in bursts (8 MiB in 2 KiB buffers, an
eighth kept) with pauses of 0.6 s. Every collection of every process is counted through
gc.callbacks.

BURSTS > 0 (the bench): each worker makes that many bursts and waits; the parent reads the PSS of
itself and its workers every 0.2 s meanwhile, last once all have made theirs, ends them and prints
"peak_pss_kib=P parent_collections=C worker_collections=W".

BURSTS = 0 (the tests): the collector is disabled (every collection counted is then someone's
gc.collect()); the parent prints "ready" and reads lines: "go" forks the workers and prints
"child PID" for each, then "forked"; "?" prints "parent=N bursts=B", its collections so far and
the fewest bursts a worker has made (a count in memory they share); "stop" ends the workers and
prints "workers PID=N ..." with each worker's collections, once all have exited. Its main thread
waits in bytecode (mainloop), so that rounds find it."""
import gc
import mmap
import os
import select
import sys
import time

import mainloop

collections = [0]
# Each worker's bursts, in a page that parent and workers share.
bursts = mmap.mmap(-1, mmap.PAGESIZE)


def counted(phase, info):
    if phase == "start":
        collections[0] += 1


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGESIZE") // 1024


def build_heap(mib):
    """Small objects until RSS has grown by mib MiB: dicts that hold a list, so that the collector
    keeps tracking both (it stops tracking a dict or tuple of atoms such as ints and strings)."""
    heap, start, i = [], rss_kib(), 0
    while rss_kib() - start < mib * 1024:
        heap.extend({"i": i + k, "s": str(i + k), "l": [i + k, k]} for k in range(20000))
        i += 20000
    return heap


def work(index, stop_fd, count):
    """A worker's bursts until stop_fd is readable, or count of them when count > 0."""
    kept, made = [], 0
    while not select.select([stop_fd], [], [], 0)[0] and (not count or made < count):
        made += 1
        burst = [bytearray(2048) for _ in range(4096)]
        kept.extend(burst[::8])
        del burst
        bursts[index] = min(bursts[index] + 1, 255)
        select.select([stop_fd], [], [], 0.6)
    # A counted run holds what it kept until the parent has read it.
    if count:
        select.select([stop_fd], [], [])


def fork_workers(count, stop_fds, result_fd, burst_count):
    """stop_fds: the pipe whose write end the parent closes to stop them."""
    pids = []
    stop_fd = stop_fds[0]
    for index in range(count):
        pid = os.fork()
        if pid == 0:
            os.close(stop_fds[1])
            collections[0] = 0
            work(index, stop_fd, burst_count)
            os.write(result_fd, f"{os.getpid()}={collections[0]}\n".encode())
            os._exit(0)
        pids.append(pid)
    return pids


def results(result_fd, count):
    text = b""
    while text.count(b"\n") < count:
        chunk = os.read(result_fd, 4096)
        if not chunk:
            break
        text += chunk
    return text.decode().split()


def bench(heap, count, burst_count):
    stop = os.pipe()
    result_r, result_w = os.pipe()
    pids = fork_workers(count, stop, result_w, burst_count)
    os.close(result_w)
    peak, ended, last = 0, time.monotonic() + 10 * burst_count + 30, False
    while not last and time.monotonic() < ended:
        # The last reading comes once every worker has made its bursts and holds what it kept.
        last = min(bursts[:count]) >= min(burst_count, 255)
        peak = max(peak, sum(pss_kib(p) for p in [os.getpid()] + pids))
        time.sleep(0.2)
    os.close(stop[1])
    for pid in pids:
        os.waitpid(pid, 0)
    worker = sum(int(r.split("=")[1]) for r in results(result_r, count))
    print(f"peak_pss_kib={peak} parent_collections={collections[0]} "
          f"worker_collections={worker} heap_objects={len(heap)}", flush=True)


def interactive(heap, count):
    gc.disable()
    collections[0] = 0
    stop = os.pipe()
    result_r, result_w = os.pipe()
    pids = []
    print("ready", flush=True)
    for line in mainloop.lines():
        if line == "go":
            pids = fork_workers(count, stop, result_w, 0)
            for pid in pids:
                print(f"child {pid}", flush=True)
            print("forked", flush=True)
        elif line == "?":
            fewest = min(bursts[:len(pids)]) if pids else 0
            print(f"parent={collections[0]} bursts={fewest}", flush=True)
        elif line == "stop":
            os.close(stop[1])
            got = results(result_r, len(pids))
            for pid in pids:
                os.waitpid(pid, 0)
            print("workers " + " ".join(sorted(got)), flush=True)
    del heap


def main():
    args = [int(a) for a in sys.argv[1:]] + [4, 0][len(sys.argv) - 2:]
    mib, count, burst_count = args[:3]
    gc.callbacks.append(counted)
    heap = build_heap(mib)
    if burst_count:
        bench(heap, count, burst_count)
    else:
        interactive(heap, count)


main()
