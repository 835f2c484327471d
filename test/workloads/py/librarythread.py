"""librarythread: for a test whose program must sit in a C call only once the library's Python
thread is there. The library starts that thread from a call the main thread runs between
bytecodes, once its worker has seen the interpreter up: a program that blocks right after its
start may block before, and its first round's steps then wait for the main thread.

await_it() waits in bytecode until the process has PY_AWAIT_TASKS tasks (its own, the worker and
the Python thread), when that is set in the environment; else it returns at once.

Imports threading, as the programs it stands for do: the library's thread takes the steps only
once the program has imported it (a site's .pth file may have, or not)."""
import os
import threading  # noqa: F401
import time


def await_it():
    want = os.environ.get("PY_AWAIT_TASKS")
    if not want:
        return
    while len(os.listdir("/proc/self/task")) != int(want):
        time.sleep(0.005)
