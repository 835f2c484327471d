"""waiting MODE: the main thread waits in one C call with the collector disabled, as an FL client
waits for its next model.

Makes N unreachable reference cycles after gc.disable() (cycles.make: only a full collection frees
them), each with a weakref.finalize callback; the callback that finds all N gone writes "collected N
by=NAME" to stdout, NAME being threading.current_thread().name where it runs (a Dummy thread for a
thread Python does not know). Prints "ready", then waits until it is woken: MODE "sleep",
time.sleep() ended by SIGUSR2; "event", threading.Event().wait() set by a thread that reads a line
of stdin; "read", a read of stdin by the main thread itself. Woken, it prints "woke next=T " (T: the
name threading gives the program's next unnamed thread, numbered from one counter) and what a
program sees of threads, "dump=D frames=F enumerate=E dummies=M active=A": D the thread headers of a
faulthandler dump of all threads (written to DUMP_PATH, the second argument), F
len(sys._current_frames()), E len(threading.enumerate()), M the Dummy threads in it and A
threading.active_count(), with " atexits=X" where WAITING_ATEXITS is set (X the callbacks in
threading's exit calls, the library's exit wait among them once hooked). Then it answers each
further line of stdin the same way, without "woke ", waiting in bytecode (mainloop). EOF ends it.
With WAITING_TORCH set to a directory, it first imports torch from there (a stand-in), as a program
that uses CUDA. Before "ready" it waits for the library's thread where PY_AWAIT_TASKS says so
(librarythread)."""
import faulthandler
import os
import signal
import sys
import threading
import time

import cycles
import librarythread
import mainloop

if os.environ.get("WAITING_TORCH"):
    sys.path.insert(0, os.environ["WAITING_TORCH"])
    import torch  # noqa: F401

N = 100


class Woken(Exception):
    pass


def look(dump_path):
    with open(dump_path, "w+") as f:
        faulthandler.dump_traceback(file=f, all_threads=True)
        f.seek(0)
        dump = sum(1 for line in f if "hread 0x" in line)
    threads = threading.enumerate()
    dummies = sum(1 for t in threads if t.name.startswith("Dummy"))
    seen = "dump=%d frames=%d enumerate=%d dummies=%d active=%d" % (
        dump, len(sys._current_frames()), len(threads), dummies, threading.active_count())
    if os.environ.get("WAITING_ATEXITS"):
        seen += " atexits=%d" % len(threading._threading_atexits)
    return seen


def wake(signum, frame):
    raise Woken()


def wait(mode):
    if mode == "sleep":
        signal.signal(signal.SIGUSR2, wake)
        try:
            time.sleep(3600)
        except Woken:
            pass
    elif mode == "event":
        woken = threading.Event()

        def reader():
            sys.stdin.buffer.readline()
            woken.set()

        threading.Thread(target=reader, daemon=True).start()
        print("ready", flush=True)
        woken.wait()
        return
    else:
        sys.stdin.buffer.readline()


def main():
    mode, dump_path = sys.argv[1], sys.argv[2]
    cycles.make(N)
    librarythread.await_it()
    if mode != "event":
        print("ready", flush=True)
    wait(mode)
    print("woke next=%s %s" % (threading.Thread().name, look(dump_path)), flush=True)
    for _ in mainloop.lines():
        print(look(dump_path), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
