"""subinterp_trim: a thread that a subinterpreter started calls roundtrim.trim() (a mod_wsgi or
plugin host's code), and the subinterpreter is then destroyed; the program goes on as an FL client.

Then makes 100 unreachable reference cycles after gc.disable(); the finalizer that finds all gone
writes "collected 100 by=NAME" (NAME: threading's name for the thread it runs on). Waits for the
library's thread (librarythread), prints "ready" and waits in a read of stdin (one C call) until
a line comes, then prints "woke atexits=N" (N: the callbacks in the main interpreter's threading
exit calls). EOF ends it. Uses CPython 3.11's private _xxsubinterpreters."""
import os
import sys
import threading

import _xxsubinterpreters as interpreters

import cycles
import librarythread

sub = interpreters.create(isolated=False)
interpreters.run_string(sub, (
    "import sys, threading\n"
    "sys.path.insert(0, %r)\n"
    "import roundtrim\n"
    "t = threading.Thread(target=roundtrim.trim)\n"
    "t.start()\n"
    "t.join()\n") % os.environ["ROUNDTRIM_PYDIR"])
interpreters.destroy(sub)

cycles.make(100)
librarythread.await_it()
print("ready", flush=True)
sys.stdin.buffer.readline()
print("woke atexits=%d" % len(threading._threading_atexits), flush=True)
sys.stdin.buffer.readline()
