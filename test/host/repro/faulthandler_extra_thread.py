"""After the first action round, faulthandler's dumps show a thread the program never
started.

The library's Python thread (roundtrim-py) keeps its Python thread state between rounds, so
faulthandler.dump_traceback(all_threads=True), dump_traceback_later(), register() and the
fatal-error handler list it as "Thread 0x... <no Python frame>" next to the program's own.

CPython's test_faulthandler (test_dump_traceback_threads, test_dump_traceback_later*,
test_enable_fd, test_fatal_error*, test_sigsegv, test_sigbus, test_sigill, test_sigfpe,
test_stack_overflow, test_gil_released, test_register_threads, test_gc ...) match the whole
dump and fail.
"""

import faulthandler
import tempfile

import _repro

lib = _repro.library()
if lib is not None:
    lib.roundtrim_trim()
    if not _repro.wait_actions(1):
        _repro.bug("inconclusive: the library never acted")
with tempfile.TemporaryFile("w+") as f:
    faulthandler.dump_traceback(f, all_threads=True)
    f.seek(0)
    dump = f.read()
threads = [line for line in dump.splitlines() if "hread 0x" in line]
if len(threads) != 1:
    _repro.bug(f"faulthandler lists {len(threads)} threads in a one-thread program: {dump!r}")
_repro.ok("faulthandler lists one thread")
