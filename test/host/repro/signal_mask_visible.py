"""A documented limit of the signal trigger, which is off by default (roundtrim(7), LIMITS).

With the signal trigger on, the program finds the trigger signal blocked in its threads,
and pending whenever one is on its way to the library.

The library blocks its signal (SIGRTMIN+8, 42) in the loading thread before main, so every
thread inherits it. The program sees it in signal.pthread_sigmask() (and sigprocmask,
/proc/self/status SigBlk); as the signal has no name, Python returns it as a plain int where
the program's own signals come back as signal.Signals members.

A signal sent to the process stays pending, blocked, until the library's worker reads it from
its signalfd: signal.sigpending() (sigpending(2), SigPnd/ShdPnd) shows it meanwhile.

CPython's test_signal checks that every member of the returned mask is a signal.Signals
(PendingSignalsTests.test_pthread_sigmask fails with "AssertionError: 42") and that
sigpending() returns exactly the signal the test blocked and raised (test_sigpending fails
under a signal storm).
"""

import os
import signal
import threading
import time

import _repro

main_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
thread_mask = []
t = threading.Thread(
    target=lambda: thread_mask.extend(signal.pthread_sigmask(signal.SIG_BLOCK, []))
)
t.start()
t.join()
problems = []
# The reproduction is started with nothing blocked (check-host.sh, a shell, subprocess).
if main_mask or thread_mask:
    unnamed = sorted(
        int(s) for s in set(main_mask) | set(thread_mask) if not isinstance(s, signal.Signals)
    )
    problems.append(
        f"blocked in the main thread: {sorted(int(s) for s in main_mask)}, in a new thread: "
        f"{sorted(int(s) for s in thread_mask)}; not a signal.Signals member: {unnamed}"
    )

# Rounds by signal, as a sender does: the pending set must stay empty for the program.
st = _repro.status()
if st and st.get("signal"):
    sig = st["signal"]
    stop = threading.Event()

    def send():
        while not stop.is_set():
            os.kill(os.getpid(), sig)
            time.sleep(0.0005)

    sender = threading.Thread(target=send)
    sender.start()
    seen = 0
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        if signal.sigpending():
            seen += 1
    stop.set()
    sender.join()
    if seen:
        problems.append(f"signal.sigpending() was not empty {seen} times while signal {sig} was sent")
if problems:
    # roundtrim(7), LIMITS: the signal trigger (off by default) blocks its signal everywhere.
    _repro.limit("; ".join(problems))
_repro.ok("nothing blocked in the main thread or a new thread, nothing pending")
