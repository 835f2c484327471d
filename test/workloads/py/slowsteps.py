"""slowsteps: garbage whose collection keeps the library's thread out on a round's steps for a
while, for the tests of calls a program makes meanwhile (newuser.py, setns_busy.py).

make(seconds) sets the collector's threshold to 0 (only an explicit full collection frees what
it makes, the round's) and leaves one unreachable reference cycle whose finalizer writes
"in-steps" to stdout, sleeps `seconds` (letting the GIL go) and writes "fin-done"."""
import gc
import os
import time


class _Slow:
    def __init__(self, seconds):
        self.seconds = seconds
        self.self = self

    def __del__(self):
        os.write(1, b"in-steps\n")
        time.sleep(self.seconds)
        os.write(1, b"fin-done\n")


def make(seconds):
    gc.set_threshold(0)
    _Slow(seconds)
