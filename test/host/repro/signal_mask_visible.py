"""With the signal trigger on, the program finds the trigger signal blocked in its threads.

The library blocks its signal (SIGRTMIN+8, 42) in the loading thread before main, so every
thread inherits it. The program sees it in signal.pthread_sigmask() (and sigprocmask,
/proc/self/status SigBlk); as the signal has no name, Python returns it as a plain int where
the program's own signals come back as signal.Signals members.

CPython's test_signal (PendingSignalsTests.test_pthread_sigmask) checks that every member of
the returned mask is a signal.Signals and fails with "AssertionError: 42".
"""

import signal
import threading

import _repro

main_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
thread_mask = []
t = threading.Thread(target=lambda: thread_mask.extend(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
t.start()
t.join()
# The reproduction is started with nothing blocked (check-host.sh, a shell, subprocess).
if main_mask or thread_mask:
    unnamed = sorted(int(s) for s in set(main_mask) | set(thread_mask) if not isinstance(s, signal.Signals))
    _repro.bug(
        f"blocked in the main thread: {sorted(int(s) for s in main_mask)}, in a new thread: "
        f"{sorted(int(s) for s in thread_mask)}; not a signal.Signals member: {unnamed}"
    )
_repro.ok("nothing blocked in the main thread or a new thread")
