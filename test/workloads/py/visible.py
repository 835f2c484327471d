"""visible DUMP_PATH: what a program can see of other threads, before and after rounds.

Makes N unreachable reference cycles whose objects have a finalizer that records the name of
the thread it runs on (threading.current_thread(), which makes a Dummy thread for a thread
Python does not know), with the collector enabled and its threshold at 0 so that only a full
collection runs them. Prints "ready", then for each line on stdin prints
"dump=D frames=F enumerate=E dummies=M finalized=K by=NAMES": D the thread headers in a
faulthandler dump of all threads (written to DUMP_PATH), F len(sys._current_frames()), E
len(threading.enumerate()), M the Dummy threads in it, K the finalizers run so far and NAMES
the threads they ran on ("-": none). The main thread waits for input in bytecode (mainloop).
EOF ends it."""
import faulthandler
import gc
import sys
import threading

import mainloop

N = 50
ran_on = []


class Finalized:
    def __del__(self):
        ran_on.append(threading.current_thread().name)


def look(dump_path):
    with open(dump_path, "w+") as f:
        faulthandler.dump_traceback(file=f, all_threads=True)
        f.seek(0)
        dump = sum(1 for line in f if "hread 0x" in line)
    threads = threading.enumerate()
    dummies = sum(1 for t in threads if t.name.startswith("Dummy"))
    names = ",".join(sorted(set(ran_on))) or "-"
    return "dump=%d frames=%d enumerate=%d dummies=%d finalized=%d by=%s" % (
        dump, len(sys._current_frames()), len(threads), dummies, len(ran_on), names)


def main():
    gc.set_threshold(0)
    for _ in range(N):
        a, b = Finalized(), Finalized()
        a.other, b.other = b, a
    del a, b
    print("ready", flush=True)
    for _ in mainloop.lines():
        print(look(sys.argv[1]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
