"""fork_cuda: a program that uses CUDA (the stand-in torch of WAITING_TORCH, its stand-in driver
loaded) forks a worker, as a DataLoader with the fork start method does; torch marks CUDA
uninitialised in the child.

Waits for the library's thread (librarythread), prints "ready" and waits in a read of stdin (the
parent's rounds come meanwhile); at the line it forks. The child waits for a library thread of its
own, prints "child PID" and waits for SIGUSR1 (sigwait, one C call), then exits 0; the parent
waits for it and prints "done STATUS". EOF ends the parent."""
import os
import signal
import sys

import librarythread

sys.path.insert(0, os.environ["WAITING_TORCH"])
import torch  # noqa: E402,F401

librarythread.await_it()
print("ready", flush=True)
sys.stdin.buffer.readline()
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
pid = os.fork()
if pid == 0:
    librarythread.await_it()
    print("child %d" % os.getpid(), flush=True)
    signal.sigwait([signal.SIGUSR1])
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("done %d" % status, flush=True)
sys.stdin.buffer.readline()
