"""Shared by the reproductions: find the preloaded library, drive its rounds, read its status.

Every reproduction runs as plain `python3 FILE` (it must then print "ok" and exit 0) and under
the library (LD_PRELOAD=.../libroundtrim.so, any ROUNDTRIM_* settings): exit 0 when the host
sees nothing, 1 with a line starting "BUG:" when it does, 3 with a line starting "LIMIT:" when
what it sees is a documented limit of a setting that is off by default. They drive rounds themselves, through
the library's API or their children's FIFOs, so that no storm is needed around them.
"""

import ctypes
import json
import os
import sys
import time


def library():
    """The preloaded library's API (found through RTLD_DEFAULT), or None without it."""
    try:
        lib = ctypes.CDLL(None)
        lib.roundtrim_round
        lib.roundtrim_trim
    except (AttributeError, OSError):
        return None
    return lib


def fifo_of(pid):
    """The FIFO that the library of process pid holds open, or None: in the descriptor table of
    its worker thread (named roundtrim), or in the process's where the kernel refused the worker
    one of its own."""
    tables = [f"/proc/{pid}/fd"]
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read() == "roundtrim\n":
                    tables.insert(0, f"/proc/{pid}/task/{tid}/fd")
    except OSError:
        pass
    for table in tables:
        try:
            fds = os.listdir(table)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{table}/{fd}")
            except OSError:
                continue
            if target.endswith(f"/{pid}.fifo"):
                return target
    return None


def fifo_dir():
    """The directory of this process's FIFO (its children's FIFOs go there too), or None."""
    fifo = fifo_of(os.getpid())
    return os.path.dirname(fifo) if fifo else None


def status(pid=None, directory=None):
    """The status file of pid (default: this process) as a dict, or None."""
    pid = pid or os.getpid()
    directory = directory or fifo_dir()
    if not directory:
        return None
    try:
        with open(os.path.join(directory, f"{pid}.status")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def actions():
    st = status()
    return st["actions"] if st else 0


def wait_actions(at_least, timeout=10.0):
    """Waits until this process's library has acted at least that often; False on timeout."""
    deadline = time.monotonic() + timeout
    while actions() < at_least:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def send_line(directory, pid, line):
    """Writes one FIFO line to process pid without blocking; False when nobody reads it."""
    try:
        fd = os.open(os.path.join(directory, f"{pid}.fifo"), os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        os.write(fd, line.encode() + b"\n")
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def storm(interval=0.002):
    """Starts a daemon thread that asks the library for a round (every fourth time a trim)
    until the process ends. Returns False, and starts nothing, without the library."""
    import threading

    lib = library()
    if lib is None:
        return False

    def run():
        n = 0
        while True:
            (lib.roundtrim_trim if n % 4 == 3 else lib.roundtrim_round)()
            n += 1
            time.sleep(interval)

    threading.Thread(target=run, daemon=True, name="repro-storm").start()
    return True


def bug(message):
    print(f"BUG: {message}", flush=True)
    sys.exit(1)


def limit(message):
    """What the host sees is a limit roundtrim(7) documents, of a setting that is off by default
    (exit 3: reported, not a failure)."""
    print(f"LIMIT: {message}", flush=True)
    sys.exit(3)


def ok(message):
    print(f"ok: {message}", flush=True)
    sys.exit(0)
