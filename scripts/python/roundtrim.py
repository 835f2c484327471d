"""Tell a preloaded libroundtrim.so about rounds, from inside the Python process it runs in.

    import roundtrim
    roundtrim.round()     # at the end of each round: counted, and every N rounds acted on
    roundtrim.trim()      # act now, whatever the count
    roundtrim.status()    # the process's status as a dict, as roundtrim(7) STATUS FILE has it

A round that acts (and every trim) runs the Python steps right here, in the calling thread, as
NVFlare's own cleanup does: a full collection exactly as gc.collect() runs it, enabled
collector or not, then torch.cuda.empty_cache() when ROUNDTRIM_CUDA_EMPTY_CACHE says so. The
library's worker then returns what was freed to the system, at once, while the program goes on.

Each call goes through the C API of roundtrim.h, found in this process: the library must have
been preloaded (LD_PRELOAD) when the process started. This module never loads it, as a library
loaded late would start a worker mid-run without its malloc wrappers in place.

Without the library each call does nothing and returns False (status(): None), and the first
such call in the process logs one warning on the "roundtrim" logger. With the library loaded but
inactive here (ROUNDTRIM_DISABLE, a program ROUNDTRIM_MATCH leaves out), the calls return the
same, without a warning: that is the configuration's choice. No call raises. See roundtrim(7), API.
"""

import ctypes
import json
import logging

# round() stays out of a star import, where it would hide the builtin round().
__all__ = ["trim", "status", "loaded"]

_NOT_LOADED = (
    "libroundtrim.so is not preloaded in this process: roundtrim.round(), trim() and status() "
    "do nothing (start the program with the library in LD_PRELOAD; see roundtrim(7), API)"
)

# The C API, resolved at the first call: an object with the functions, or False when the
# process does not carry the library.
_api = None
# One message to give, taken by the first call that finds no library: list.pop() is atomic under
# the GIL, so two threads cannot both take it (a lock could be held by another thread at a fork).
_warning = [_NOT_LOADED]


class _Api:
    def __init__(self, process, with_gil):
        # Through PyDLL the GIL stays held during the call: the steps it runs call into Python.
        self.round = with_gil.roundtrim_python_round
        self.round.restype = ctypes.c_int
        self.round.argtypes = []
        self.trim = with_gil.roundtrim_python_trim
        self.trim.restype = ctypes.c_int
        self.trim.argtypes = []
        self.status_json = process.roundtrim_status_json
        self.status_json.restype = ctypes.c_int
        self.status_json.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def _resolve():
    global _api
    if _api is None:
        try:
            # dlopen(NULL): the process's global scope, where preloaded objects are; nothing
            # is loaded. A missing symbol raises AttributeError.
            _api = _Api(ctypes.CDLL(None), ctypes.PyDLL(None))
        except (AttributeError, OSError):
            _api = False
    return _api


def _library():
    api = _resolve()
    if not api:
        try:
            logging.getLogger("roundtrim").warning(_warning.pop())
        except IndexError:
            pass
    return api


def loaded():
    """Whether this process carries the library (preloaded): True or False, never a warning."""
    return bool(_resolve())


def round():
    """Counts one round, as a FIFO "round" line would. When the round acts (every N rounds), runs
    the collection (and the CUDA step when configured) here, then has the library release.

    True when counted; False when the library is not loaded or is inactive in this process.
    """
    api = _library()
    return bool(api) and api.round() >= 0


def trim():
    """Acts now, whatever the count, as a FIFO "trim" line would: the collection (and the CUDA
    step when configured) here, then the library's release.

    True when done; False when the library is not loaded or is inactive in this process.
    """
    api = _library()
    return bool(api) and api.trim() >= 0


def status():
    """The status the library's worker last published, as a dict (roundtrim(7), STATUS FILE).

    None when the library is not loaded or is inactive in this process, and for the moment
    before its worker's first publication (just after start-up, or after a fork child's first
    call into the library).
    """
    api = _library()
    if not api:
        return None
    size = 4096
    while True:
        buf = ctypes.create_string_buffer(size)
        length = api.status_json(buf, size)
        if length <= 0:
            return None
        if length < size:
            break
        size = length + 1
    try:
        return json.loads(buf.value.decode("utf-8", "replace"))
    except ValueError:
        return None
